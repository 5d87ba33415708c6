"""``harness export-reframe DIR``: the selected cases as a ReFrame test library, with site
configurations for this machine and for a Slurm partition (see :mod:`harness.export.reframe`)."""
from __future__ import annotations

import argparse
import pathlib

from harness.output.atomic import write_atomic
from harness.check import TOLERANCE
from harness.commands.options import load_reference
from harness.commands.common import console, registry, warn_problems
from harness.errors import UsageError
from harness.launch.slurm import script_text_problem
from harness.export.reframe import (LOCAL_CONFIG, SLURM_CONFIG, TESTS_NAME, case_entries, config_text, local_config,
                                    slurm_config, tests_text, usable_cpus)
from harness.request import RunRequest
from harness.workload import SIZES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export-reframe", help="write the cases as a ReFrame test library (+ site configs for here and Slurm)",
        description=f"Write DIR/{TESTS_NAME}: one run-only ReFrame test per selected case (parameterised: "
                    "reframe -n / -t pick cases), whose job runs `harness run` for that case; sanity: the "
                    "record's status is ok; performance: median seconds per repeat and the workload's "
                    "throughput, with references from --reference (a capture of this machine kind). Also "
                    f"DIR/{LOCAL_CONFIG} (this machine) and DIR/{SLURM_CONFIG} (a Slurm partition). Then: "
                    f"reframe -C DIR/{LOCAL_CONFIG} -c DIR/{TESTS_NAME} -r --exec-policy=serial")
    p.add_argument("dir", metavar="DIR", help="folder to write into (created; its three files are replaced)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--suite", help="suite whose cases become tests (default: smoke)")
    what.add_argument("--workload", help="workload name(s) separated by commas, instead of a suite")
    p.add_argument("--size", choices=SIZES, help="problem size (default: the suite's or workload's)")
    p.add_argument("--backend", help="backend(s) to request, as `harness run --backend`")
    p.add_argument("--ranks", help="MPI ranks, e.g. 2 or 1,2 (default: the suite's)")
    p.add_argument("--threads", help="threads per rank (default: the suite's; 1 under MPI, all CPUs otherwise)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=V[,V2]", help="set or sweep a param")
    p.add_argument("--repeats", type=int, help="measured repeats per case (default: the suite's)")
    p.add_argument("--warmup", type=int, help="warmup repeats per case (default: the suite's)")
    p.add_argument("--timeout", type=float, help="seconds before a case is killed (default 900)")
    p.add_argument("--reference", metavar="CAPTURE",
                   help="a capture (or results folder) of this machine kind: each case's ReFrame reference is "
                        "its median seconds and throughput there, for the same workload version")
    p.add_argument("--tolerance", type=float, default=TOLERANCE,
                   help=f"slower than the reference that still passes, added to the reference's own interval "
                        f"(default {TOLERANCE:g}, {100 * TOLERANCE:.0f} %%)")
    p.add_argument("--system", default="*",
                   help="the ReFrame system (or system:partition) the references apply to (default '*': any)")
    p.add_argument("--partition", default="debug", help=f"the Slurm partition in {SLURM_CONFIG} (default debug)")
    p.add_argument("--nodes", type=int,
                   help="nodes per case in a Slurm partition: the job asks for ranks / nodes tasks a node and "
                        "the harness spreads its srun steps over them (default: Slurm's choice)")
    p.add_argument("--slurm-scheduler", choices=("slurm", "squeue"), default="slurm",
                   help=f"ReFrame's scheduler in {SLURM_CONFIG}: slurm (asks sacct: needs Slurm accounting) or "
                        "squeue (for clusters without accounting)")
    p.add_argument("--launcher-arg", action="append", default=[], metavar="ARG",
                   help="extra srun option for the cases' steps in a Slurm allocation, e.g. "
                        "--launcher-arg=--mpi=pmi2; repeatable")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if not 0 <= args.tolerance < 10:
        raise UsageError(f"--tolerance {args.tolerance}: give a fraction such as 0.1 (10 %)")
    for a in args.launcher_arg:
        problem = script_text_problem("--launcher-arg", a)
        if problem:
            raise UsageError(problem)
    if not args.partition.replace("-", "").replace("_", "").isalnum():
        raise UsageError(f"--partition {args.partition!r}: give a Slurm partition name (letters, digits, - and _)")
    if args.nodes is not None and args.nodes < 1:
        raise UsageError(f"--nodes {args.nodes}: must be >= 1")
    suite = args.suite or (None if args.workload else "smoke")
    request = RunRequest(suite=suite, workload=args.workload, size=args.size, backend=args.backend,
                         ranks=args.ranks, threads=args.threads, param=tuple(args.param), repeats=args.repeats,
                         warmup=args.warmup, timeout=args.timeout)
    reg = registry()
    warn_problems(reg.problems)
    cases = request.cases(reg)
    reference = None if args.reference is None else load_reference(args.reference)
    entries = case_entries(cases, reg, reference, args.tolerance)
    out = pathlib.Path(args.dir)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{args.dir}: is a file; give a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{args.dir}: cannot create it ({exc.strerror}); give a writable place") from None
    what = f"suite {suite}" if suite else f"workload(s) {args.workload}"
    with_ref = sum(e["reference"] is not None for e in entries)
    note = (f"References from {args.reference} (tolerance {args.tolerance:g} on top of its interval) for "
            f"{with_ref} of {len(entries)} case(s); the others say why in their 'no_reference'."
            if reference is not None else "No references: performance is logged, not judged.")
    write_atomic(out / TESTS_NAME, tests_text(entries, what, note, args.system, args.launcher_arg, args.nodes))
    write_atomic(out / LOCAL_CONFIG, config_text(LOCAL_CONFIG, "this machine, the local scheduler",
                                                 local_config(usable_cpus())))
    write_atomic(out / SLURM_CONFIG, config_text(SLURM_CONFIG, f"Slurm partition {args.partition}",
                                                 slurm_config(args.partition, [".*"], [], args.slurm_scheduler)))
    console.print(f"{len(entries)} ReFrame test(s) in {out / TESTS_NAME} ({note}); run: reframe -C "
                  f"{out / LOCAL_CONFIG} -c {out / TESTS_NAME} -r --exec-policy=serial", markup=False, soft_wrap=True)
    for e in entries:
        if reference is not None and e["reference"] is None:
            console.print(f"  {e['name']}: no reference: {e['no_reference']}", markup=False, soft_wrap=True)
    return 0
