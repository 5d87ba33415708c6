"""Backends prove which library ran: real libraries, a deliberately wrong one, unavailable ones."""
import json
import pathlib

import pytest

from conftest import read_jsonl
from harness.registry import build_registry

REG = build_registry()


def _available(name: str) -> bool:
    return REG.backend(name).available()[0]


def test_unavailable_backends_say_why_here() -> None:
    import platform
    if platform.machine() != "aarch64":
        ok, why = REG.backend("armpl").available()
        assert not ok and "ARMPL_DIR" in why and "aarch64" in why
    if not pathlib.Path("/dev/nvidia0").exists():
        ok, why = REG.backend("cuda").available()
        assert not ok and "GPU" in why


def test_mkl_cannot_drive_numpy_but_openblas_can() -> None:
    assert "numpy" in REG.backend("openblas").frameworks()
    why = REG.backend("mkl").can_drive(("numpy", "mpi"))
    assert why is not None and "cannot drive numpy" in why


@pytest.mark.slow
def test_roofline_backends_side_by_side_then_info_shows_the_ceilings(harness_cli, tmp_path) -> None:
    backends = ["openblas", "mkl", "blis"]
    r = harness_cli("run", "--workload", "roofline", "--size", "smoke", "--backend", ",".join(backends),
                    "--threads", "1", "--repeats", "3", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    records = read_jsonl(tmp_path / "results.jsonl")
    assert [rec["backend"]["requested"] for rec in records] == backends  # one file, side by side
    ran = {}
    for backend, rec in zip(backends, records):
        if not _available(backend):
            assert rec["status"] == "skipped" and "not available" in rec["reason"]
            continue
        assert rec["status"] == "ok" and rec["backend"]["verified"] is True
        binding = rec["backend"]["evidence"]["blas_binding"]
        assert backend in pathlib.Path(binding["gemm_owner"]["file"]).name
        assert binding["version"]
        assert rec["metrics"]["peak_gflops_fp64"] > 0 and rec["metrics"]["triad_gbs"] > 0
        assert rec["metrics"]["binding"].startswith("cblas:")
        assert rec["claims"][0]["passed"] is True  # the GEMM is correct
        assert rec["environment"]["OMP_NUM_THREADS"] == "1"
        ran[backend] = rec
    info = harness_cli("info", "--results", str(tmp_path), "--json")
    assert info.returncode == 0, info.stderr
    ceilings = {c["backend"]: c for c in json.loads(info.stdout)["measured_ceilings"]}
    assert set(ceilings) == set(ran)
    for backend, rec in ran.items():
        assert ceilings[backend]["threads"] == 1
        assert ceilings[backend]["ceilings"]["peak_gflops_fp64"] == round(rec["metrics"]["peak_gflops_fp64"], 2)
        assert ceilings[backend]["units"]["triad_gbs"] == "GB/s" and ceilings[backend]["workload"] == "roofline"
    table = harness_cli("info", "--results", str(tmp_path))
    assert "measured ceilings on this machine" in table.stdout
    assert all(str(round(rec["metrics"]["triad_gbs"], 2)) in table.stdout for rec in ran.values())


@pytest.mark.slow
def test_mkl_pointed_at_another_library_fails_with_evidence(harness_cli, tmp_path) -> None:
    blis = REG.backend("blis").library_path()
    if blis is None:
        pytest.skip("needs BLIS as the wrong library")
    r = harness_cli("run", "--workload", "roofline", "--size", "smoke", "--backend", "mkl",
                    "--repeats", "1", "--out", str(tmp_path), env={"HARNESS_MKL_LIBRARY": str(blis)})
    assert r.returncode == 1, r.stdout + r.stderr
    rec = read_jsonl(tmp_path / "results.jsonl")[0]
    assert rec["status"] == "failed" and rec["backend"]["verified"] is False
    assert "not in a mkl library" in rec["reason"]
    assert rec["backend"]["evidence"]["blas_binding"]["gemm_owner"]["file"] == str(blis)


def test_suite_all_with_armpl_skips_everything_exit_2(harness_cli, tmp_path) -> None:
    if _available("armpl"):
        pytest.skip("ArmPL is available here")
    r = harness_cli("run", "--suite", "all", "--backend", "armpl", "--out", str(tmp_path))
    assert r.returncode == 2
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("harness: error:")]
    assert len(errors) == 1 and "ARMPL_DIR" in errors[0]
    records = read_jsonl(tmp_path / "results.jsonl")
    assert records and all(rec["status"] == "skipped" for rec in records)


def test_flexiblas_switch_and_silent_fallback(monkeypatch) -> None:
    """With numpy on FlexiBLAS, a backend drives numpy by FLEXIBLAS=NAME, and a FlexiBLAS that
    runs something else (its silent NETLIB fallback) fails verification."""
    from harness_plugins.backends import library
    from harness_plugins.backends.blis import BlisBackend

    pool = {"internal_api": "flexiblas", "user_api": "blas", "filepath": "/usr/lib/libflexiblas.so.3",
            "available_backends": ["NETLIB", "BLIS", "OPENBLAS"], "loaded_backends": ["NETLIB"],
            "current_backend": "NETLIB"}
    library.flexiblas_pool.cache_clear()
    monkeypatch.setattr(library, "flexiblas_pool", lambda: pool)
    monkeypatch.setattr(library.evidence, "common", lambda: {"threadpool_info": [pool]})
    blis = BlisBackend()
    assert blis.flexiblas_name() == "BLIS"
    assert blis.environment(1) == {"FLEXIBLAS": "BLIS"}
    assert "numpy" in blis.frameworks()
    monkeypatch.setenv("FLEXIBLAS", "BLIS")
    v = blis.verify()
    assert not v.ok and "NETLIB" in v.reason and "silently" in v.reason
    pool["current_backend"] = "BLIS"
    assert blis.verify().ok
