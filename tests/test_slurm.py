"""Slurm and launch commands: dry runs, `--launcher srun` and `harness submit`.

There is no Slurm here, so ``srun`` and ``sbatch`` are small stand-ins on PATH that log
their arguments: the fake srun starts the step with the venv's mpiexec (as a real srun
starts tasks), the fake sbatch only records the script. The batch script it receives is
then run for real, so the whole path from `harness submit` to records is exercised.
"""
import os
import pathlib
import stat
import subprocess
import sys

import pytest

from conftest import read_jsonl
from harness.launch.slurm import valid_time

FAKE_SRUN = """#!/bin/bash
echo "$@" >> "$FAKE_LOG"
n=1
while [[ "$1" == -* ]]; do
  case "$1" in --ntasks=*) n="${1#--ntasks=}";; esac
  shift
done
exec "$MPIEXEC" -n "$n" "$@"
"""
FAKE_SBATCH = """#!/bin/bash
echo "$@" >> "$FAKE_LOG"
cp "${@: -1}" "$FAKE_DIR/submitted.sbatch"
echo "4242;cluster"
"""


@pytest.fixture
def fake_slurm(tmp_path) -> dict[str, str]:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    for name, body in (("srun", FAKE_SRUN), ("sbatch", FAKE_SBATCH)):
        f = bin_dir / name
        f.write_text(body)
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_LOG": str(tmp_path / "fake.log"),
            "FAKE_DIR": str(tmp_path), "MPIEXEC": str(pathlib.Path(sys.executable).with_name("mpiexec"))}


def test_dry_run_prints_commands_and_writes_nothing(harness_cli, tmp_path) -> None:
    out = tmp_path / "never"
    r = harness_cli("run", "--workload", "probe", "--ranks", "1,2", "--out", str(out), "--dry-run")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "2 case(s)" in lines[0]
    assert any(line.strip().endswith("-m harness.worker SPEC.json") and "mpiexec -n 2" in line for line in lines)
    assert not out.exists()


def test_srun_outside_an_allocation_is_bad_input(harness_cli, tmp_path, fake_slurm) -> None:
    r = harness_cli("run", "--workload", "probe", "--launcher", "srun", "--out", str(tmp_path / "o"),
                    env={**fake_slurm, "SLURM_JOB_ID": ""})
    assert r.returncode == 2 and "SLURM_JOB_ID is unset" in r.stderr
    r = harness_cli("run", "--workload", "probe", "--nodes", "2", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "only apply to --launcher srun" in r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.mpi
def test_srun_launches_each_case_as_a_step(harness_cli, tmp_path, fake_slurm) -> None:
    env = {**fake_slurm, "SLURM_JOB_ID": "77"}
    out = tmp_path / "res"
    r = harness_cli("run", "--workload", "probe", "--ranks", "1,2", "--repeats", "3", "--out", str(out),
                    "--launcher", "srun", "--launcher-arg=--mpi=pmi2", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    records = read_jsonl(out / "results.jsonl")
    assert [rec["status"] for rec in records] == ["ok", "ok"]
    for rec in records:
        cmd = rec["launch"]["command"]
        assert rec["launch"]["launcher"] == "srun" and cmd[0].endswith("/srun")
        assert f"--ntasks={rec['launch']['ranks']}" in cmd and "--mpi=pmi2" in cmd
        assert f"--cpus-per-task={rec['launch']['threads']}" in cmd
    two = records[1]
    assert two["comm"]["ranks"] == 2 and two["comm"]["total"]["calls"] > 0
    log = pathlib.Path(fake_slurm["FAKE_LOG"]).read_text().splitlines()
    assert len(log) == 2 and all("--kill-on-bad-exit=1" in line for line in log)


@pytest.mark.mpi
def test_submit_writes_a_batch_script_that_runs(harness_cli, tmp_path, fake_slurm) -> None:
    out = tmp_path / "res"
    r = harness_cli("submit", "--workload", "probe", "--ranks", "1,2", "--repeats", "3", "--out", str(out),
                    "--time", "0:30:00", "--partition", "debug", "--sbatch-arg=--exclusive",
                    "--launcher-arg=--mpi=pmi2", env=fake_slurm)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "submitted job 4242" in r.stdout
    script = (tmp_path / "submitted.sbatch").read_text()
    for directive in ("--nodes=1", "--ntasks=2", "--time=0:30:00", "--partition=debug", "--exclusive",
                      f"--output={out}/slurm-%j.out"):
        assert f"#SBATCH {directive}\n" in script
    assert "--launcher srun" in script and "--launcher-arg=--mpi=pmi2" in script
    assert list((out / "slurm").glob("*.sbatch"))
    # Slurm would now run the script inside the allocation: do that.
    job = subprocess.run(["bash", str(tmp_path / "submitted.sbatch")], text=True, capture_output=True,
                         env=harness_cli.env({**fake_slurm, "SLURM_JOB_ID": "4242"}), timeout=300)
    assert job.returncode == 0, job.stdout + job.stderr
    records = read_jsonl(out / "results.jsonl")
    assert [(rec["launch"]["launcher"], rec["launch"]["ranks"], rec["status"]) for rec in records] == [
        ("srun", 1, "ok"), ("srun", 2, "ok")]


def test_submit_bad_input_is_exit_2(harness_cli, tmp_path, fake_slurm) -> None:
    base = ["submit", "--workload", "probe", "--out", str(tmp_path / "o")]
    r = harness_cli(*base, "--time", "soon", env=fake_slurm)
    assert r.returncode == 2 and "--time 'soon'" in r.stderr
    r = harness_cli(*base, "--nodes", "3", env=fake_slurm)
    assert r.returncode == 2 and "largest case has 1 rank" in r.stderr
    (tmp_path / "empty").mkdir()
    r = harness_cli(*base, env={"PATH": str(tmp_path / "empty")})     # no sbatch (Slurm may be installed here)
    assert r.returncode == 2 and "sbatch is not on PATH" in r.stderr
    assert not (tmp_path / "o").exists()
    r = harness_cli(*base, "--dry-run")
    assert r.returncode == 0 and r.stdout.startswith("#!/bin/bash\n") and "#SBATCH --ntasks=1" in r.stdout


@pytest.mark.parametrize("text,ok", [("30", True), ("1:30:00", True), ("2-12", True), ("1-0:30:00", True),
                                     ("soon", False), ("1:2:3:4", False), ("", False)])
def test_slurm_time_formats(text, ok) -> None:
    assert valid_time(text) is ok


@pytest.mark.parametrize("option,value", [
    ("--job-name", "x\ntouch /tmp/pwned"), ("--job-name", "../../x"), ("--job-name", "a b"),
    ("--partition", "p\ntouch /tmp/pwned"), ("--account", "a;touch /tmp/pwned"),
    ("--sbatch-arg", "--comment=x\ntouch /tmp/pwned"), ("--launcher-arg", "--mpi=pmi2\ntouch /tmp/pwned"),
    ("--out", "/tmp/o\ntouch /tmp/pwned"), ("--out", "/tmp/with space")])
def test_nothing_injects_into_the_batch_script(harness_cli, tmp_path, option, value) -> None:
    args = ["submit", "--workload", "probe", "--dry-run"]
    args += [option, value] if option == "--out" else [option + "=" + value, "--out", str(tmp_path / "o")]
    r = harness_cli(*args)
    assert r.returncode == 2 and option in r.stderr and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "touch /tmp/pwned" not in r.stdout


def test_every_line_of_a_batch_script_is_a_directive_a_comment_or_ours(harness_cli, tmp_path) -> None:
    r = harness_cli("submit", "--workload", "probe", "--dry-run", "--job-name", "bench.v2", "--partition",
                    "cpu,gpu", "--sbatch-arg=--exclusive", "--out", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(ln.startswith(("#", "set -euo pipefail", "cd ", "exec ")) for ln in lines), lines


def test_an_interrupted_case_says_what_slurm_saw(tmp_path, monkeypatch) -> None:
    """A stand-in scontrol: the job is COMPLETING and n2 is down, n1 fine; the note names n2 only,
    and with its reason (which holds spaces). Outside an allocation there is no note."""
    from harness.launch.slurm import allocation_note

    scontrol = tmp_path / "scontrol"
    scontrol.write_text(
        "#!/bin/sh\n"
        'if [ "$2" = job ]; then echo "JobId=7 JobName=h JobState=COMPLETING Reason=None NodeList=n1"; exit 0; fi\n'
        'echo "NodeName=n1 Arch=x86_64 State=IDLE ThreadsPerCore=1 Reason= Comment=(null)"\n'
        'echo "NodeName=n2 Arch=x86_64 State=DOWN+NOT_RESPONDING ThreadsPerCore=1 Reason=Not responding [root@t] Comment=(null)"\n')
    scontrol.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert allocation_note() == ""
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[1-2]")
    assert allocation_note() == "Slurm job 7: COMPLETING; node n2 DOWN+NOT_RESPONDING (Not responding [root@t])"
