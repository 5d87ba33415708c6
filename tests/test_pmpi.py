"""The C-level MPI_Allreduce hook: built with the venv's mpicc, loaded into a fresh process."""
import json
import subprocess
import sys
import textwrap

import pytest

from harness.protocol.pmpi import build_hook

pytest.importorskip("mpi4py")

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from harness.protocol.pmpi import attach_hook, load_hook
    from harness.protocol.comm import ProfiledComm
    from harness.protocol.phases import PhaseClock
    path = sys.argv[1]
    if sys.argv[2] == "late":
        from mpi4py import MPI
    note = load_hook(path)
    from mpi4py import MPI
    hook, attach_note = attach_hook(path, MPI) if not note else (None, note)
    clock = PhaseClock()
    comm = ProfiledComm(MPI.COMM_SELF, clock, hook)
    x = np.arange(10.0); y = np.empty_like(x)
    with clock.phase("compute"):
        comm.Allreduce(x, y)
        comm.Allreduce(MPI.IN_PLACE, y)
        MPI.COMM_SELF.Allreduce(x[:3], y[:3])   # any communicator: counted by the hook
        comm.Barrier()
    phases = clock.take()
    prof = comm.profile()
    comm.reset()
    print(json.dumps({"profiler": comm.profiler, "note": attach_note, "prof": prof,
                      "phases": phases, "after_reset": comm.profile()}))
""")


def _child(path: str, order: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, path, order], capture_output=True, text=True,
                         timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def hook_path(tmp_path_factory) -> str:
    path, why = build_hook(tmp_path_factory.mktemp("pmpi"))
    if path is None:
        pytest.skip(f"the PMPI hook cannot be built here: {why}")
    return str(path)


@pytest.mark.mpi
def test_hook_counts_every_allreduce_in_c(hook_path) -> None:
    r = _child(hook_path, "early")
    assert r["profiler"] == "pmpi" and r["note"] == ""
    ar = r["prof"]["Allreduce"]
    assert ar["calls"] == 3 and ar["bytes"] == 80 + 80 + 24
    assert r["prof"]["Barrier"]["calls"] == 1   # the other ops keep the Python wrappers
    comm = r["phases"]["comm"]
    assert comm["count"] == 4
    assert comm["seconds"] == pytest.approx(ar["seconds"] + r["prof"]["Barrier"]["seconds"], rel=1e-6)
    assert r["phases"]["compute"]["seconds"] >= 0
    assert r["after_reset"] == {}


@pytest.mark.mpi
def test_hook_loaded_too_late_falls_back_and_says_why(hook_path) -> None:
    r = _child(hook_path, "late")
    assert r["profiler"] == "python"
    assert "imported before the PMPI hook" in r["note"]
    assert r["prof"]["Allreduce"]["calls"] == 2   # only the calls through the wrapper


def test_build_is_cached_and_can_be_turned_off(tmp_path, monkeypatch) -> None:
    first, why = build_hook(tmp_path)
    if first is None:
        pytest.skip(f"the PMPI hook cannot be built here: {why}")
    mtime = first.stat().st_mtime_ns
    again, _ = build_hook(tmp_path)
    assert again == first and again.stat().st_mtime_ns == mtime
    monkeypatch.setenv("HARNESS_PMPI", "0")
    assert build_hook(tmp_path) == (None, "HARNESS_PMPI=0")


@pytest.mark.mpi
def test_probe_proves_the_hook_once_and_rejects_a_broken_one(tmp_path, hook_path) -> None:
    from harness.protocol.pmpi import probe_hook, ready_hook

    path, why = ready_hook(tmp_path)
    assert path is not None and why == ""
    verdicts = list(path.parent.glob("probe-*.txt"))
    assert len(verdicts) == 1 and verdicts[0].read_text() == ""   # cached: the next run skips the probe
    assert ready_hook(tmp_path) == (path, "")
    broken = tmp_path / "libbroken.so"
    broken.write_bytes(b"not a shared library")
    why = probe_hook(broken)
    assert "does not work here" in why and "loading the PMPI hook failed" in why
