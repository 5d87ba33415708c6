"""The fingerprint and profile match of real machines, from their real ``/proc/cpuinfo`` files
(tests/fixtures/cpuinfo, from archspec's test data; see the NOTICE there) and a sysfs cache tree
built here from each vendor's documented cache sizes (labelled: not read from those machines)."""
from __future__ import annotations

import pathlib

import pytest

from harness.hardware.fingerprint import describe_cpu
from harness.hardware.profiles import load_profiles, match_profile

pytest.importorskip("archspec")

CPUINFO = pathlib.Path(__file__).parent / "fixtures" / "cpuinfo"
KIB, MIB = 1024, 1024 * 1024

# (L1d, L1i, L2 per core, L3 as the cores share it or None), from vendor documentation:
DOCUMENTED_CACHES = {
    "linux-centos7-thunderx2": (32 * KIB, 32 * KIB, 256 * KIB, 32 * MIB),        # Marvell CN99xx brief
    "linux-rhel8-power9": (32 * KIB, 32 * KIB, 512 * KIB, 10 * MIB),             # IBM POWER9 (per core pair)
    "linux-rhel7-skylake_avx512": (32 * KIB, 32 * KIB, 1 * MIB, 19712 * KIB),    # Intel ark, Gold 6132
    "linux-centos7-cascadelake": (32 * KIB, 32 * KIB, 1 * MIB, 36608 * KIB),     # Intel ark, Platinum 8260M
    "linux-rocky8-a64fx": (64 * KIB, 64 * KIB, 8 * MIB, None),                   # Fujitsu A64FX (L2 per CMG)
    "linux-rhel9-neoverse_v2": (64 * KIB, 64 * KIB, 1 * MIB, 114 * MIB),         # NVIDIA Grace datasheet
    "linux-ubuntu20.04-zen3": (32 * KIB, 32 * KIB, 512 * KIB, 32 * MIB),         # AMD, Ryzen 9 5950X (per CCD)
    "linux-rocky8.5-zen4": (32 * KIB, 32 * KIB, 1 * MIB, 32 * MIB),              # AMD, EPYC 9654 (per CCD)
    "linux-rocky9-zen5": (48 * KIB, 32 * KIB, 1 * MIB, 32 * MIB),                # AMD, Ryzen 9 9950X (per CCD)
    "linux-unknown-power10": (32 * KIB, 48 * KIB, 2 * MIB, 8 * MIB),             # IBM Power10 (per core)
    "linux-unknown-sapphirerapids": (48 * KIB, 32 * KIB, 2 * MIB, 105 * MIB),    # Intel ark, Platinum 8480+
}

# file -> (archspec name, flags that must be listed, flags that must not, profile, how it matched)
EXPECTED = {
    "linux-centos7-thunderx2": ("thunderx2", {"asimd", "asimdrdm"}, {"sve", "avx"}, "thunderx2-cn9980", "microarchitecture"),
    "linux-rhel8-power9": ("power9le", {"altivec", "vsx"}, {"asimd", "avx"}, "power9-cte", "model"),
    "linux-rhel7-skylake_avx512": ("skylake_avx512", {"avx512f", "avx2", "fma"}, {"avx512_bf16", "amx_tile"},
                                   "skylake-8160", "microarchitecture"),
    "linux-centos7-cascadelake": ("cascadelake", {"avx512f", "avx512_vnni"}, {"amx_tile"}, "skylake-8160", "family"),
    "linux-rocky8-a64fx": ("a64fx", {"sve", "asimd"}, {"sve2"}, None, None),
    "linux-rhel9-neoverse_v2": ("neoverse_v2", {"sve", "sve2", "asimd"}, {"avx"}, "grace-superchip", "microarchitecture"),
    "linux-ubuntu20.04-zen3": ("zen3", {"avx2", "fma"}, {"avx512f"}, None, None),
    "linux-rocky8.5-zen4": ("zen4", {"avx512f", "avx512_bf16"}, {"amx_tile"}, "zen4-epyc-9654", "model"),
    "linux-rocky9-zen5": ("zen5", {"avx512f", "avx512_vp2intersect"}, {"amx_tile"}, "zen5-epyc-9755", "microarchitecture"),
    "linux-unknown-power10": ("power10le", {"altivec", "vsx"}, set(), "power9-cte", "family"),
    "linux-unknown-sapphirerapids": ("sapphirerapids", {"avx512f", "amx_tile", "amx_bf16"}, set(),
                                     "sapphirerapids-8480", "model"),
}


def machine_root(tmp_path: pathlib.Path, name: str) -> pathlib.Path:
    """A root folder holding the machine's real cpuinfo and a sysfs cache tree of its documented sizes."""
    root = tmp_path / name
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "cpuinfo").write_text((CPUINFO / name).read_text())
    l1d, l1i, l2, l3 = DOCUMENTED_CACHES[name]
    levels = [(1, "Data", l1d), (1, "Instruction", l1i), (2, "Unified", l2)] + ([(3, "Unified", l3)] if l3 else [])
    cpu0 = root / "sys" / "devices" / "system" / "cpu" / "cpu0"
    for i, (level, kind, size) in enumerate(levels):
        d = cpu0 / "cache" / f"index{i}"
        d.mkdir(parents=True)
        for field, value in (("level", level), ("type", kind), ("size", f"{size // KIB}K"),
                             ("coherency_line_size", 256 if "a64fx" in name else 128 if "power" in name else 64),
                             ("shared_cpu_list", "0")):
            (d / field).write_text(f"{value}\n")
    (cpu0 / "topology").mkdir()
    (cpu0 / "topology" / "physical_package_id").write_text("0\n")
    return root


@pytest.fixture(scope="module")
def shipped_profiles():
    from harness.registry import build_registry

    profiles, problems = load_profiles(build_registry().profile_dirs)
    assert problems == []
    return profiles


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_cpu_descriptions_give_microarchitecture_flags_and_profile(tmp_path, name, shipped_profiles) -> None:
    uarch, must, must_not, profile, by = EXPECTED[name]
    fp = describe_cpu(machine_root(tmp_path, name))
    cpu = fp["cpu"]
    assert cpu["microarch"]["name"] == uarch, cpu["microarch"]
    assert must <= set(cpu["flags"]), cpu["flags"]
    assert not (must_not & set(cpu["flags"])), cpu["flags"]
    assert fp["emulation"]["emulated"] is False
    sizes = [c["size_bytes"] for c in cpu["caches"]]
    assert sizes == [s for s in DOCUMENTED_CACHES[name] if s], sizes
    assert cpu["sockets"] == 1
    match = match_profile(fp, shipped_profiles)
    assert (match["name"], match["match_by"]) == (profile, by), match
    if by == "family":
        assert match["distance"] >= 1 and "matched by family" in match["reason"]
    if profile is None:
        assert uarch in match["reason"]


def test_an_arm_cpu_without_a_model_name_is_named_by_vendor_and_microarchitecture(tmp_path) -> None:
    fp = describe_cpu(machine_root(tmp_path, "linux-centos7-thunderx2"))
    assert fp["arch"] == "aarch64" and fp["cpu"]["vendor"] == "Cavium"
    assert fp["cpu"]["model"].startswith("Cavium thunderx2") and fp["cpu"]["model_reported"] is False


def test_a_cpu_description_of_another_architecture_is_marked_emulated(tmp_path, shipped_profiles) -> None:
    """qemu-user: a ppc64le interpreter reading the x86 host's /proc/cpuinfo."""
    fp = describe_cpu(machine_root(tmp_path, "linux-ubuntu20.04-zen3"), interpreter_arch="ppc64le")
    assert fp["emulation"]["emulated"] is True
    assert "ppc64le" in fp["emulation"]["evidence"] and "x86_64" in fp["emulation"]["evidence"]
    assert fp["emulation"]["host_cpu"]["microarch"] == "zen3"           # the host, kept as evidence
    assert fp["cpu"]["microarch"]["name"] == "ppc64le" and fp["cpu"]["flags"] == []   # not the host's
    assert "binary translation" in fp["cpu"]["model"]
    assert match_profile(fp, shipped_profiles)["name"] is None    # not matched to the host's x86 profile
    native = describe_cpu(machine_root(tmp_path / "n", "linux-rhel8-power9"), interpreter_arch="ppc64le")
    assert native["emulation"]["emulated"] is False                # the control: same arch, not emulated


def test_this_machine_is_not_emulated_and_has_a_microarchitecture() -> None:
    fp = describe_cpu()
    assert fp["emulation"]["emulated"] is False
    assert fp["cpu"]["microarch"]["name"]


def test_the_model_regex_decides_only_where_archspec_names_no_microarchitecture(shipped_profiles) -> None:
    vm = {"arch": "x86_64", "cpu": {"model": "Intel(R) Xeon(R) Platinum 8160 CPU @ 2.10GHz", "flags": [],
                                    "microarch": {"name": "x86_64_v4", "generic": True, "ancestors": []}}}
    assert match_profile(vm, shipped_profiles)["match_by"] == "model name"
    other_core = dict(vm, cpu=dict(vm["cpu"], microarch={"name": "zen3", "generic": False, "ancestors": ["zen2"]}))
    assert match_profile(other_core, shipped_profiles)["name"] is None   # archspec outranks the model string
