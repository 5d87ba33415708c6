"""``harness list``: what the plugins provide, where each thing comes from, and what is broken."""
from __future__ import annotations

import argparse

from rich.table import Table

from harness.commands.common import console, profiles, registry, table
from harness.plan import read_suite
from harness.errors import UsageError
from harness.plugin_guard import available, guarded

KINDS = ("workloads", "claims", "backends", "suites", "profiles")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list workloads, backends, suites, profiles and plugin problems")
    p.add_argument("kind", nargs="?", choices=KINDS + ("all",), default="all")
    p.set_defaults(func=main)


def _workloads() -> Table:
    reg = registry()
    t = table("workloads", "name", "source", "paper", "frameworks", "sizes", "params")
    for name, w in sorted(reg.workloads.items()):
        params = ", ".join(f"{k}:{p.describe()}" for k, p in w.params.items())
        t.add_row(name, reg.source("workload", name), w.paper, ",".join(w.frameworks),
                  ",".join(w.sizes), params)
    return t


def _claims() -> Table:
    reg = registry()
    t = table("claims (each should fail under its control: `harness controls` checks)",
               "workload", "claim", "paper value", "applies when", "source", "control")
    for name, w in sorted(reg.workloads.items()):
        for c in w.claims:
            when = ", ".join(f"{k} {op} {v}" for k, (op, v) in (c.when or {}).items())
            if c.premise is not None:
                when = "; ".join(filter(None, (when, f"premise: {c.premise.text}")))
            text = c.text + {"proportion": " (share of replicates)", "bounded": f" (bounded to {list(c.bounds or ())})"
                             }.get(c.kind, "")
            control = "no control declared"
            if c.control is not None:
                spec = ", ".join(f"{k}={v}" for k, v in c.control.params.items())
                control = f"{c.control.kind}: {spec}: {c.control.why}"
                if c.control.baseline is not None:
                    control += " (baseline: " + ", ".join(f"{k}={v}" for k, v in c.control.baseline.items()) + ")"
            t.add_row(name, text, "" if c.paper_value is None else str(c.paper_value), when, c.source, control)
    return t


def _backends() -> Table:
    reg = registry()
    t = table("backends", "name", "source", "available", "drives", "reason")
    for name, b in sorted(reg.backends.items()):
        ok, why = available(b)
        t.add_row(name, reg.source("backend", name), "yes" if ok else "no",
                  ",".join(guarded(b.frameworks)[0] or ()), why)
    return t


def _suites() -> Table:
    t = table("suites", "name", "path", "description")
    for d in registry().suite_dirs:
        for path in sorted(d.glob("*.toml")):
            try:
                desc = read_suite(path).get("description", "")
            except UsageError as exc:
                desc = f"BROKEN: {exc}"
            t.add_row(path.stem, str(path), desc)
    return t


def _profiles() -> tuple[Table, list]:
    found, problems = profiles()
    t = table("hardware profiles", "name", "path", "description")
    for name, p in sorted(found.items()):
        t.add_row(name, str(p.path), p.description)
    return t, problems


def main(args: argparse.Namespace) -> int:
    kinds = KINDS if args.kind == "all" else (args.kind,)
    problems = list(registry().problems)
    for kind in kinds:
        if kind == "profiles":
            table, profile_problems = _profiles()
            problems += profile_problems
        else:
            table = {"workloads": _workloads, "claims": _claims, "backends": _backends, "suites": _suites}[kind]()
        console.print(table)
    if problems:
        t = Table(title="plugin problems (these are not usable; everything else is)",
                  title_justify="left", title_style="bold red")
        t.add_column("source", overflow="fold")
        t.add_column("reason", overflow="fold")
        for p in problems:
            t.add_row(p.source, p.reason)
        console.print(t)
    return 0
