"""``harness submit``: one Slurm batch job that runs ``harness run`` inside its allocation.

The cases are planned here first, so bad input fails on the login node (exit 2) and the
job asks for what the largest case needs: tasks = its ranks, CPUs per task = its threads.
Inside the job every case is an ``srun`` step (``harness run --launcher srun``).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import pathlib
import sys

from harness import __version__
from harness.export import junit
from harness.commands.common import console, err_console, registry, warn_problems
from harness.commands.options import add_case_options, request_from_args
from harness.launch.launcher import Launcher
from harness.output.atomic import write_atomic
from harness.errors import UsageError
from harness.output.safe_text import slurm_filename
from harness.launch.slurm import (BatchJob, find_sbatch, render_batch_script, script_text_problem, submit,
                                  submit_and_wait, valid_time)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="run a suite as one Slurm batch job (sbatch)",
                       description="Write a Slurm batch script that runs `harness run ... --launcher "
                                   "srun` for the selected cases and submit it with sbatch.")
    add_case_options(p)
    p.add_argument("--nodes", type=int, default=1, help="nodes to allocate (default 1)")
    p.add_argument("--time", default="01:00:00", help="wall-clock limit, Slurm format (default 01:00:00)")
    p.add_argument("--partition", help="Slurm partition")
    p.add_argument("--account", help="Slurm account to charge")
    p.add_argument("--job-name", default="harness", help="Slurm job name (default: harness)")
    p.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                   help="extra sbatch option for the script, e.g. --sbatch-arg=--exclusive; repeatable")
    p.add_argument("--dry-run", action="store_true", help="print the batch script; write and submit nothing")
    p.add_argument("--wait", action="store_true",
                   help="wait until the job has ended (asking scontrol every second), then report its exit "
                        "status and its "
                        "records; exit status as `harness run`'s (0 ok, 1 a case failed, 2 nothing ran)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if args.nodes < 1:
        raise UsageError(f"--nodes {args.nodes}: must be >= 1")
    if not valid_time(args.time):
        raise UsageError(f"--time {args.time!r}: use a Slurm time such as 30, 1:30:00 or 1-12:00:00")
    checks = [("--job-name", args.job_name, "name"), ("--partition", args.partition, "names"),
              ("--account", args.account, "names"), ("--out", str(pathlib.Path(args.out).resolve()), "path"),
              *([("--junit", str(pathlib.Path(args.junit).resolve()), "path")] if args.junit else []),
              *(("--sbatch-arg", a, "text") for a in args.sbatch_arg),
              *(("--launcher-arg", a, "text") for a in args.launcher_arg)]
    for option, value, kind in checks:
        problem = value is not None and script_text_problem(option, value, kind)
        if problem:
            raise UsageError(problem)
    for a in args.sbatch_arg:
        if not a.startswith("-"):
            raise UsageError(f"--sbatch-arg {a!r}: give an sbatch option such as --exclusive "
                             "(write --sbatch-arg=--opt=value)")
    junit.check_target(args.junit)      # written by the job: on a folder the compute nodes share
    # inside the job every case is an srun step of the allocation
    request = request_from_args(args, Launcher("srun", args.nodes if args.nodes > 1 else None,
                                               tuple(args.launcher_arg)))
    reg = registry()
    warn_problems(reg.problems)
    cases = request.cases(reg)
    ntasks = max(c.ranks for c in cases)
    if args.nodes > ntasks:
        raise UsageError(f"--nodes {args.nodes}: the largest case has {ntasks} rank(s); "
                         "ask for fewer nodes or more --ranks")
    out = pathlib.Path(args.out).resolve()
    job = BatchJob(nodes=args.nodes, ntasks=ntasks, cpus_per_task=max(c.threads for c in cases),
                   time=args.time, job_name=args.job_name,
                   output=pathlib.Path(slurm_filename(out)) / "slurm-%j.out",
                   partition=args.partition, account=args.account, extra=list(args.sbatch_arg))
    command = [sys.executable, "-m", "harness", "run", *request.argv()]
    header = (f"Written by `harness submit` (hpml-harness {__version__}) on "
              f"{_dt.datetime.now().isoformat(timespec='seconds')}:\n{len(cases)} case(s), each an srun "
              "step of this allocation; records in\n" + str(out / "results.jsonl"))
    script = render_batch_script(job, command, pathlib.Path.cwd(), header)
    if args.dry_run:
        sys.stdout.write(script)
        return 0
    if args.threads is None and any(c.ranks == 1 for c in cases):
        err_console.print(f"note: --threads not given: one-rank cases use every CPU of the node they run "
                          f"on (here {max(c.threads for c in cases)}); give --threads if compute nodes "
                          "differ from this one", markup=False)
    sbatch = find_sbatch()
    if sbatch is None:
        raise UsageError("sbatch is not on PATH: run `harness submit` on a Slurm login node, "
                         "or use --dry-run to print the script")
    try:
        try:
            (out / "slurm").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--out {out}: cannot create {out / 'slurm'} ({exc.strerror}); "
                             "choose a writable folder") from None
        path = out / "slurm" / f"{args.job_name}-{_dt.datetime.now().strftime('%Y%m%dT%H%M%S%f')}.sbatch"
        assert path.resolve().parent == (out / "slurm").resolve(), "job names are checked above"
        write_atomic(path, script)
    except OSError as exc:
        raise UsageError(f"--out {args.out}: cannot write the batch script there ({exc.strerror})") from None
    if args.wait:
        return _submit_and_wait(path, sbatch, out, len(cases))
    ok, answer = submit(path, sbatch)
    if not ok:
        print(f"harness: error: sbatch refused {path}: {answer}", file=sys.stderr)
        return 1
    console.print(f"submitted job {answer}: {len(cases)} case(s), {job.nodes} node(s) x {job.ntasks} "
                  f"task(s) x {job.cpus_per_task} CPU(s); script {path}; log {out}/slurm-{answer}.out; "
                  f"records {out}/results.jsonl", soft_wrap=True, highlight=False)
    return 0


def _submit_and_wait(path: pathlib.Path, sbatch: pathlib.Path, out: pathlib.Path, n_cases: int) -> int:
    """Submit, wait for the end of the job, and say what it left: its exit status and the
    records that carry its job id (no squeue or sacct needed)."""
    from harness.results.store import read_records

    err_console.print(f"waiting for the job ({n_cases} case(s); script {path}) ...", markup=False)
    job, status, messages = submit_and_wait(path, sbatch)
    if job is None:
        print(f"harness: error: sbatch refused {path}: {messages or f'exit {status}'}", file=sys.stderr)
        return 1
    records = []
    if (out / "results.jsonl").exists():
        records = [r for r in read_records(out / "results.jsonl")[0] if r.resources.get("slurm_job_id") == job]
    counts: dict[str, int] = {}
    for r in records:
        counts[r.status] = counts.get(r.status, 0) + 1
    tally = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no records with its job id"
    console.print(f"job {job} ended with exit status {status}: {tally}; log {out}/slurm-{job}.out; "
                  f"records {out}/results.jsonl", soft_wrap=True, highlight=False)
    if messages:
        err_console.print(messages, markup=False)
    return status if status in (0, 1, 2) else 1
