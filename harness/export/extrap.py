"""Sweeps as Extra-P experiments, and Extra-P's models of them.

A *family* is the records of one workload, work version, machine, size, backend and launch that
differ only in the swept parameter ``x`` (ranks, threads, or a numeric param). Each family is
written as Extra-P JSON Lines (``{"params": {x: value}, "callpath": ..., "metric": ...,
"value": [repetitions]}``): the case's seconds per measured repeat (callpath = the workload), each
phase's seconds per repeat below it (``workload->phase``, one figure per record), and the profiled
communication bytes per repeat. Extra-P itself (the ``extrap`` command of the ``extrap`` package,
in an environment of its own: it pins numpy below 2) fits them; nothing here fits a model by hand.
A model's formula comes back in Python syntax and is evaluated for a prediction by a small
arithmetic evaluator (numbers, the parameter, + - * / **, log2), never by ``eval``.
"""
from __future__ import annotations

import ast
import json
import math
import operator
import os
import pathlib
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.errors import UsageError
from harness.judging.verdicts import as_number
from harness.results.record import Record

# Extra-P's guidance: at least 5 points per parameter, 5 repetitions each
MIN_POINTS = 5
MIN_REPETITIONS = 5
PRINT_FORMAT = "{callpath}\t{metric}\t{model:python}\t{smape}\t{ar2}"
LAUNCH_AXES = ("ranks", "threads")


@dataclass
class Family:
    """The records of one sweep over ``x``: everything else the same."""

    x: str
    workload: str
    machine: str
    fixed: dict[str, Any]
    points: dict[float, list[Record]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        rest = ", ".join(f"{k}={v}" for k, v in sorted(self.fixed.items()))
        return f"{self.workload} on {self.machine}" + (f" ({rest})" if rest else "")

    def lines(self) -> Iterable[dict[str, Any]]:
        """The Extra-P JSON Lines of this family."""
        for value, records in sorted(self.points.items()):
            params = {safe_param_name(self.x): value}
            for rec in records:
                yield {"params": params, "callpath": self.workload, "metric": "time", "value": list(rec.samples)}
                for phase, stats in sorted(rec.phases.items()):
                    yield {"params": params, "callpath": f"{self.workload}->{phase}", "metric": "time",
                           "value": [stats.max_s]}
                per_repeat = (rec.comm.per_repeat or {}) if rec.comm is not None else {}
                if isinstance(per_repeat.get("bytes"), (int, float)) and per_repeat["bytes"] > 0:
                    yield {"params": params, "callpath": self.workload, "metric": "comm_bytes",
                           "value": [float(per_repeat["bytes"])]}

    def repetitions(self) -> int:
        """The fewest measured repeats behind one point."""
        return min(sum(len(r.samples) for r in recs) for recs in self.points.values())


def x_value(record: Record, x: str) -> float | None:
    """The swept value of ``record``: its ranks or threads, or a numeric param (a one-element list
    counts as its element); None where the record has no number there."""
    if x in LAUNCH_AXES:
        return float(getattr(record.launch, x))
    value = record.params.get(x)
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return as_number(value)


def families(records: Iterable[Record], x: str) -> list[Family]:
    """The sweeps over ``x`` among ok, non-emulated records with samples, each family keyed by
    everything but ``x``; families with fewer than two values of ``x`` are no sweep and left out."""
    found: dict[tuple[Any, ...], Family] = {}
    for rec in records:
        if not rec.ok or rec.emulated or not rec.samples:
            continue
        value = x_value(rec, x)
        if value is None:
            continue
        params = {k: v for k, v in rec.params.items() if k != x}
        launch = {k: getattr(rec.launch, k) for k in LAUNCH_AXES if k != x}
        fixed = {"size": rec.size, "backend": rec.backend.label, **launch}
        key = (rec.workload.name, rec.work_version, rec.machine_key, json.dumps(fixed, sort_keys=True),
               json.dumps(params, sort_keys=True, default=str))
        family = found.setdefault(key, Family(x, rec.workload.name, rec.machine, fixed))
        family.points.setdefault(value, []).append(rec)
    return [f for f in found.values() if len(f.points) >= 2]


def write_jsonl(family: Family, path: pathlib.Path) -> None:
    from harness.output.atomic import write_atomic

    text = "".join(json.dumps(line, allow_nan=False) + "\n" for line in family.lines())
    write_atomic(path, lambda f: f.write(text.encode()))


def find_extrap(given: str | None) -> str:
    """The ``extrap`` command: ``--extrap``, else ``$HARNESS_EXTRAP``, else on PATH."""
    candidate = given or os.environ.get("HARNESS_EXTRAP") or shutil.which("extrap")
    if not candidate or not (shutil.which(candidate) or pathlib.Path(candidate).is_file()):
        raise UsageError("harness model fits with Extra-P's `extrap` command, which is not here: install it in "
                         "an environment of its own (it pins numpy<2), e.g. `pipx install extrap` or "
                         "`python3 -m venv ~/extrap && ~/extrap/bin/pip install extrap`, then put it on PATH or "
                         "give --extrap ~/extrap/bin/extrap (docs/analysis.md)")
    return candidate


@dataclass
class Model:
    callpath: str
    metric: str
    formula: str
    smape: float
    ar2: float


def fit(extrap: str, path: pathlib.Path, timeout: float = 300.0) -> list[Model]:
    """Extra-P's model of every callpath and metric in the JSON Lines file ``path`` (median of
    the repetitions; negative exponents allowed, as strong scaling needs)."""
    cmd = [extrap, "--json", str(path), "--measure", "median", "--options", "allow_negative_exponents=True",
           "--disable-progress", "--print", PRINT_FORMAT]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"--extrap {extrap}: could not run it ({exc}); give the extrap command of an Extra-P "
                         "installation") from None
    if proc.returncode != 0:
        raise UsageError(f"extrap failed on {path} (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    models = []
    for line in proc.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) != 5:
            continue
        try:
            models.append(Model(parts[0], parts[1], parts[2], float(parts[3]), float(parts[4])))
        except ValueError:
            continue
    if not models:
        raise UsageError(f"extrap printed no model for {path}: {proc.stdout.strip()[-300:]} {proc.stderr.strip()[-300:]}")
    return models


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow}
_FUNCTIONS = {"log2": math.log2}


def evaluate(formula: str, name: str, value: float) -> float:
    """``formula`` (Extra-P's Python syntax: numbers, the parameter ``name``, + - * / **, log2)
    at ``name = value``; anything else is refused."""
    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id == name:
            return value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return -walk(node.operand) if isinstance(node.op, ast.USub) else walk(node.operand)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS
                and len(node.args) == 1 and not node.keywords):
            return _FUNCTIONS[node.func.id](walk(node.args[0]))
        raise ValueError(f"not a model formula: {ast.unparse(node)!r}")
    return walk(ast.parse(formula, mode="eval"))


def safe_param_name(x: str) -> str:
    """Extra-P's parameter name for ``x`` (a Python identifier: the formula is read back)."""
    name = re.sub(r"\W", "_", x)
    return name if name and not name[0].isdigit() else f"p_{name}"
