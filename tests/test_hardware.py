import pathlib

from harness.hardware.fingerprint import count_sockets, fingerprint, read_caches
from harness.hardware.profiles import load_profiles, match_profile


def _fake_cpu(root: pathlib.Path) -> pathlib.Path:
    for cpu, pkg in (("cpu0", "0"), ("cpu1", "1")):
        topo = root / cpu / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text(pkg + "\n")
    for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (2, "Unified", "1024K"), (3, "Unified", "32768K")]):
        d = root / "cpu0" / "cache" / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
        (d / "shared_cpu_list").write_text("0-1\n")
    return root


def test_caches_and_sockets_from_sysfs(tmp_path) -> None:
    root = _fake_cpu(tmp_path)
    caches = read_caches(root / "cpu0")
    assert [c["size_bytes"] for c in caches] == [48 * 1024, 1024 * 1024, 32 * 1024 * 1024]
    assert count_sockets(root) == 2


def test_fingerprint_of_this_machine() -> None:
    fp = fingerprint()
    assert fp["arch"] and fp["cpu"]["logical_cpus"] >= 1 and fp["memory_bytes"] > 0
    assert fp is fingerprint()  # computed once per process


def test_profile_matching(tmp_path) -> None:
    head = 'description = "d"\nkind = "cpu-node"\n'
    (tmp_path / "a.toml").write_text(f'name = "skx"\n{head}[match]\narch = "x86_64"\nmodel_regex = "Platinum 8160"\n')
    (tmp_path / "b.toml").write_text(f'name = "any-x86"\n{head}[match]\narch = "x86_64"\n')
    (tmp_path / "c.toml").write_text('name = "broken"\n[match\n')
    (tmp_path / "d.toml").write_text(f'name = "badpeak"\n{head}[match]\narch = "x86_64"\n[peak]\nfp64_gflops = -1\n')
    profiles, problems = load_profiles([tmp_path])
    assert set(profiles) == {"skx", "any-x86"}
    assert {pathlib.Path(p.source).name for p in problems} == {"c.toml", "d.toml"}
    assert any("profile schema" in p.reason for p in problems)
    skx = {"arch": "x86_64", "cpu": {"model": "Intel(R) Xeon(R) Platinum 8160 CPU @ 2.10GHz", "flags": []}}
    assert match_profile(skx, profiles)["name"] == "skx"
    other = {"arch": "x86_64", "cpu": {"model": "AMD EPYC", "flags": []}}
    assert match_profile(other, profiles)["name"] == "any-x86"
    arm = {"arch": "aarch64", "cpu": {"model": "ThunderX2", "flags": []}}
    unmatched = match_profile(arm, profiles)
    assert unmatched["name"] is None and "ThunderX2" in unmatched["reason"]


def test_shipped_profiles_validate_and_paper_nodes_match() -> None:
    from harness.registry import build_registry

    profiles, problems = load_profiles(build_registry().profile_dirs)
    assert problems == []
    assert {"skylake-8160", "thunderx2-cn9980", "power9-cte", "v100-sxm2", "a100-sxm4", "h100-sxm5",
            "h200-sxm", "sapphirerapids-8480", "zen4-epyc-9654", "zen5-epyc-9755", "grace-superchip"} <= set(profiles)
    nodes = {
        "skylake-8160": {"arch": "x86_64", "cpu": {"model": "Intel(R) Xeon(R) Platinum 8160 CPU @ 2.10GHz", "flags": []}},
        "thunderx2-cn9980": {"arch": "aarch64", "cpu": {"model": "Cavium ThunderX2(R) CPU CN9980 v2.2 @ 2.20GHz", "flags": []}},
        "power9-cte": {"arch": "ppc64le", "cpu": {"model": "POWER9, altivec supported", "flags": []}},
        "h200-sxm": {"arch": "x86_64", "cpu": {"model": "AMD EPYC", "flags": []}, "gpus": [{"name": "NVIDIA H200"}]},
    }
    for name, fp in nodes.items():
        assert match_profile(fp, profiles)["name"] == name
    for p in profiles.values():
        if "peak" in p.data and "cpu" in p.data and p.data["cpu"].get("fp64_flops_per_cycle_per_core"):
            cpu = p.data["cpu"]
            derived = cpu["cores"] * cpu["frequency_ghz"] * cpu["fp64_flops_per_cycle_per_core"]
            assert abs(p.data["peak"]["fp64_gflops"] - derived) / derived < 0.02, p.name


def _sysfs(root, files: dict) -> None:
    for rel, text in files.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text + "\n")


def test_clock_tuning_is_read_and_warned_about(tmp_path) -> None:
    from harness.hardware.tuning import tuning

    _sysfs(tmp_path, {"cpu0/cpufreq/scaling_governor": "powersave", "cpu1/cpufreq/scaling_governor": "performance",
                      "cpu0/cpufreq/scaling_driver": "intel_pstate", "intel_pstate/no_turbo": "0",
                      "smt/control": "on", "isolated": "2-3"})
    t = tuning(tmp_path)
    assert t["governors"] == ["performance", "powersave"] and t["driver"] == "intel_pstate"
    assert t["boost"] is True and t["smt"] == "on" and t["isolated"] == "2-3"
    assert any("powersave" in w for w in t["warnings"]) and any("turbo" in w for w in t["warnings"])
    quiet = tmp_path / "tuned"
    _sysfs(quiet, {"cpu0/cpufreq/scaling_governor": "performance", "cpufreq/boost": "0"})
    assert tuning(quiet)["warnings"] == [] and tuning(quiet)["boost"] is False
    bare = tuning(tmp_path / "none")
    assert bare["governors"] == [] and bare["boost"] is None and "unknown" in bare["warnings"][0]
