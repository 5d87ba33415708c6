"""asv discovers the registry-built benchmarks (every workload), runs one of them and publishes a page
listing every workload (running all of them took 3 minutes of CI for no more evidence)."""
import ast
import json
import pathlib
import shutil
import subprocess
import sys

import pytest

from harness.registry import build_registry

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_asv_quick_run_and_publish() -> None:
    asv = pathlib.Path(sys.executable).parent / "asv"
    if not asv.exists() or shutil.which("git") is None:
        pytest.skip("asv or git missing")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout with a commit")
    run = lambda *a: subprocess.run([str(asv), *a], cwd=ROOT, capture_output=True, text=True, timeout=900)  # noqa: E731
    assert run("machine", "--yes").returncode == 0
    r = run("run", "--python=same", "--quick", f"--set-commit-hash={head.stdout.strip()}",
            "--bench", r"time_smoke\('roofline'\)")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (result,) = (ROOT / ".asv" / "results").glob(f"*/{head.stdout.strip()[:8]}-*.json")
    timed = json.loads(result.read_text())["results"]["bench_workloads.TimeSmoke.time_smoke"]
    names = [ast.literal_eval(n) for n in timed[1][0]]     # asv keeps the params as reprs
    assert timed[0][names.index("roofline")] > 0
    assert run("publish").returncode == 0
    index = json.loads((ROOT / ".asv" / "html" / "index.json").read_text())
    params = json.dumps(index["benchmarks"]["bench_workloads.TimeSmoke.time_smoke"]["params"])
    for name in build_registry().workloads:
        assert name in params
