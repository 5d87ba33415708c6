"""Slurm: ``srun`` job steps inside an allocation, and the ``sbatch`` script that makes one.

The harness never schedules anything itself: ``harness submit`` writes one batch script
that runs ``harness run ... --launcher srun`` inside the allocation Slurm grants, and
hands it to ``sbatch``.
"""
from __future__ import annotations

import os
import pathlib
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field

# Slurm's --time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
_TIME = re.compile(r"^(\d+-\d{1,2}(:\d{1,2}){0,2}|\d+(:\d{1,2}){0,2})$")


# What the harness renders into #SBATCH lines: names Slurm accepts, no whitespace, no control
# characters (a newline would start a shell line of its own in the batch script).
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
_NAMES = re.compile(r"^[A-Za-z0-9._+-]{1,64}(,[A-Za-z0-9._+-]{1,64})*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def script_text_problem(option: str, value: str, kind: str = "text") -> str:
    """Why ``value`` of ``option`` cannot go into a batch script ('' when it can). ``kind``:
    "name" (a job name), "names" (a partition or account, comma-separated), "path" (no
    whitespace), or "text" (anything without control characters)."""
    if _CONTROL.search(value):
        return f"{option} {value!r}: control characters (a newline, a tab, ...) cannot go into a batch script"
    if kind == "name" and not _NAME.match(value):
        return (f"{option} {value!r}: use letters, digits and . _ + - (at most 64, starting with a letter "
                "or digit)")
    if kind == "names" and not _NAMES.match(value):
        return f"{option} {value!r}: use names of letters, digits and . _ + -, separated by commas"
    if kind == "path" and re.search(r"\s", value):
        return f"{option} {value!r}: a path with whitespace cannot go into an #SBATCH line; choose another"
    return ""


def in_allocation() -> bool:
    """True inside a Slurm job (batch script, salloc shell)."""
    return bool(os.environ.get("SLURM_JOB_ID"))


def find_srun() -> pathlib.Path | None:
    found = shutil.which("srun")
    return pathlib.Path(found) if found else None


def find_sbatch() -> pathlib.Path | None:
    found = shutil.which("sbatch")
    return pathlib.Path(found) if found else None


def valid_time(text: str) -> bool:
    return bool(_TIME.match(text))


def srun_command(srun: pathlib.Path, ranks: int, threads: int, nodes: int | None,
                 extra: list[str], argv: list[str]) -> list[str]:
    """One job step: R tasks of T CPUs each; a failing rank ends the step."""
    cmd = [str(srun), f"--ntasks={ranks}", f"--cpus-per-task={threads}", "--kill-on-bad-exit=1"]
    if nodes:
        cmd.append(f"--nodes={min(nodes, ranks)}")
    return cmd + extra + argv


@dataclass
class BatchJob:
    """What the batch script asks Slurm for: the largest case decides tasks and CPUs."""

    nodes: int
    ntasks: int
    cpus_per_task: int
    time: str
    job_name: str
    output: pathlib.Path
    partition: str | None = None
    account: str | None = None
    extra: list[str] = field(default_factory=list)   # further raw sbatch options

    def directives(self) -> list[str]:
        opts = [f"--job-name={self.job_name}", f"--nodes={self.nodes}", f"--ntasks={self.ntasks}",
                f"--cpus-per-task={self.cpus_per_task}", f"--time={self.time}",
                f"--output={self.output}"]
        if self.partition:
            opts.append(f"--partition={self.partition}")
        if self.account:
            opts.append(f"--account={self.account}")
        return [f"#SBATCH {o}" for o in opts + self.extra]


def render_batch_script(job: BatchJob, command: list[str], workdir: pathlib.Path, header: str) -> str:
    """A bash script with the job's directives that runs ``command`` in ``workdir``."""
    lines = ["#!/bin/bash", *(f"# {h}" if h else "#" for h in header.splitlines()), *job.directives(),
             "set -euo pipefail", f"cd {shlex.quote(str(workdir))}",
             "exec " + " ".join(shlex.quote(c) for c in command), ""]
    return "\n".join(lines)


def submit(script: pathlib.Path, sbatch: pathlib.Path) -> tuple[bool, str]:
    """(True, job id) or (False, sbatch's error)."""
    try:
        proc = subprocess.run([str(sbatch), "--parsable", str(script)], capture_output=True,
                              text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    if proc.returncode != 0:
        return False, (proc.stderr or proc.stdout).strip() or f"sbatch exited with {proc.returncode}"
    return True, proc.stdout.strip().split(";")[0]


POLL_S = 1.0    # how often a waiting submit asks Slurm about its job
ENDED = ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL",
         "DEADLINE", "REVOKED", "SPECIAL_EXIT")


def submit_and_wait(script: pathlib.Path, sbatch: pathlib.Path,
                    poll_s: float = POLL_S) -> tuple[str | None, int, str]:
    """Submit and wait for the job's end: (job id or None, the job's exit status, messages).

    Not ``sbatch --wait``: it asks at growing intervals (2 s, then 8 s, then 32 s), so a 12 s job
    was seen ended at 42 s and a 45 s one at 74 s. This asks ``scontrol show job`` every
    ``poll_s`` (Slurm keeps an ended job there for MinJobAge, 300 s by default). Without
    scontrol, sbatch --wait it is; its own status is the job's (Slurm documents it so)."""
    if shutil.which("scontrol") is None:
        proc = subprocess.run([str(sbatch), "--parsable", "--wait", str(script)], capture_output=True,
                              text=True)
        first = proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else ""
        job = first.split(";")[0] if first.split(";")[0].isdigit() else None
        return job, proc.returncode, (proc.stderr or "").strip()
    ok, answer = submit(script, sbatch)
    if not ok:
        return None, 1, answer
    missed = 0
    while True:
        time.sleep(poll_s)
        info = (_scontrol_records("job", answer) or [{}])[0]
        state = info.get("JobState", "")
        if state in ENDED:
            return answer, _exit_status(info.get("ExitCode", ""), state), ""
        missed = missed + 1 if not state else 0
        if missed * poll_s > 120:     # two minutes without an answer: Slurm lost it, or scontrol cannot reach it
            return answer, 1, (f"job {answer}: scontrol has not known it for {missed * poll_s:.0f} s; "
                               "see squeue or sacct")


def _exit_status(code: str, state: str) -> int:
    """The job's status from scontrol's ExitCode 'status:signal' (a signal as 128 + it); a job that
    did not complete is never 0."""
    status, _, signal_number = code.partition(":")
    value = int(status) if status.isdigit() else 1
    if value == 0 and signal_number.isdigit() and int(signal_number):
        value = 128 + int(signal_number)
    return value if value or state == "COMPLETED" else 1


def _scontrol_records(*args: str) -> list[dict[str, str]]:
    """`scontrol show ... -o` as one dict of Key=Value per line ([] without scontrol or on error)."""
    scontrol = shutil.which("scontrol")
    if scontrol is None:
        return []
    try:
        out = subprocess.run([scontrol, "show", *args, "-o"], capture_output=True, text=True, timeout=3)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:
        return []
    return [_key_values(line) for line in out.stdout.splitlines() if line.strip()]


_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=")


def _key_values(line: str) -> dict[str, str]:
    """One `scontrol -o` line; values may hold spaces (Reason=Not responding [slurm@...])."""
    keys = list(_KEY.finditer(line))
    return {m.group(1): line[m.end():nxt.start() if nxt else len(line)].strip()
            for m, nxt in zip(keys, keys[1:] + [None])}


def allocation_note() -> str:
    """What Slurm says of this job and its nodes, for a case interrupted inside an allocation: the
    SIGTERM that stops a case looks the same for scancel, a time limit and a dead node ('' outside
    Slurm, or when scontrol cannot tell)."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return ""
    jobs = _scontrol_records("job", job)
    if not jobs:
        return ""
    info = jobs[0]
    note = f"Slurm job {job}: {info.get('JobState', '?')}"
    if info.get("Reason", "None") != "None":
        note += f", reason {info['Reason']}"
    failed = []
    # The allocation's nodes as the job started: a failed node leaves the job's own NodeList.
    for node in _scontrol_records("node", os.environ.get("SLURM_JOB_NODELIST") or info.get("NodeList", "")):
        state = node.get("State", "")
        if any(word in state for word in ("DOWN", "FAIL", "NOT_RESPONDING", "*")):
            failed.append(f"{node.get('NodeName', '?')} {state}" + (f" ({node['Reason']})" if node.get("Reason") else ""))
    return note + (f"; node {', '.join(failed)}" if failed else "")
