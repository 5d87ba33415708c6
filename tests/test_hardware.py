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
    (tmp_path / "a.toml").write_text('name = "skx"\n[match]\narch = "x86_64"\nmodel_regex = "Platinum 8160"\n')
    (tmp_path / "b.toml").write_text('name = "any-x86"\n[match]\narch = "x86_64"\n')
    (tmp_path / "c.toml").write_text('name = "broken"\n[match\n')
    profiles, problems = load_profiles([tmp_path])
    assert set(profiles) == {"skx", "any-x86"} and "c.toml" in problems[0].source
    skx = {"arch": "x86_64", "cpu": {"model": "Intel(R) Xeon(R) Platinum 8160 CPU @ 2.10GHz", "flags": []}}
    assert match_profile(skx, profiles)["name"] == "skx"
    other = {"arch": "x86_64", "cpu": {"model": "AMD EPYC", "flags": []}}
    assert match_profile(other, profiles)["name"] == "any-x86"
    arm = {"arch": "aarch64", "cpu": {"model": "ThunderX2", "flags": []}}
    unmatched = match_profile(arm, profiles)
    assert unmatched["name"] is None and "ThunderX2" in unmatched["reason"]
