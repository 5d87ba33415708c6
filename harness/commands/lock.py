"""``harness lock``: decide, per workload, whether a change to its code changed the measured work.

A workload's records are compared by its declared protocol version (harness.work_identity); the
lock file keeps every source hash each version has had, so that a plugin edit is a deliberate
decision: a new protocol (bump ``protocol_version``, then lock) or the same work (lock with
``--same-work``: a claim, a control, a docstring). ``--check`` lists what is undecided.
"""
from __future__ import annotations

import argparse

from harness.commands.common import console, registry
from harness.errors import UsageError, did_you_mean
from harness.software import git_info
from harness.work_identity import lock_state, relock


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lock", help="record whether a plugin edit changed the measured work (versions.lock)",
                       description="Without WORKLOAD (or with --check): each workload's protocol version and "
                                   "whether its current code is locked; exit 1 when one is not. With WORKLOAD "
                                   "--reason: lock its current code under its declared protocol_version, as "
                                   "a new protocol (after bumping protocol_version) or, with --same-work, as the "
                                   "same work as before (records stay comparable).")
    p.add_argument("workloads", nargs="*", metavar="WORKLOAD", help="workloads to lock (default: check all)")
    p.add_argument("--check", action="store_true", help="only check; exit 1 when a workload's code is not locked")
    p.add_argument("--same-work", action="store_true",
                   help="the edit did not change the measured work (claims, controls, docs, recorded extras)")
    p.add_argument("--reason", help="why (kept in the lock file beside the hash); required to lock")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    reg = registry()
    unknown = [w for w in args.workloads if w not in reg.workloads]
    if unknown:
        raise did_you_mean("workload", unknown[0], reg.workloads)
    if args.workloads and not args.check:
        if not args.reason or not args.reason.strip():
            raise UsageError("--reason: say why the work did or did not change (it is kept in the lock file)")
        git = git_info() or {}
        commit = str(git.get("commit") or "")[:12]
        for name in args.workloads:
            try:
                path, entry = relock(reg.workload(name), args.same_work, args.reason.strip(), commit)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            console.print(f"{name}: {entry.source_hash} locked as protocol {entry.protocol_version!r} in {path} "
                            f"({entry.reason})", markup=False, highlight=False)
        return 0
    states = [lock_state(reg.workload(n)) for n in (args.workloads or sorted(reg.workloads))]
    for s in states:
        line = (f"{s.workload}: protocol {s.protocol_version!r}, code {s.source_hash} "
                + ("locked" if s.ok and s.protocol_version else
                   "no protocol_version: every edit is another version" if not s.protocol_version else "NOT LOCKED"))
        console.print(line, markup=False, highlight=False)
    problems = [s.problem() for s in states if not s.ok]
    for text in problems:
        console.print(text, markup=False, highlight=False)
    return 1 if problems else 0
