"""What a run is asked to do, parsed and checked once: the typed request every command that runs
cases takes.

``harness run`` builds a :class:`RunRequest` from its command line; ``harness capture`` builds
one per suite and calls the same function; ``harness submit`` plans with it and writes it into
its batch script (:meth:`RunRequest.argv`, the one place a request becomes a command line
again). Checking happens when the request is made, so bad input fails before anything runs,
whichever command asked.
"""
from __future__ import annotations

import dataclasses
import pathlib
from dataclasses import dataclass, field
from typing import Any

from harness.errors import UsageError
from harness.launch.launcher import Launcher
from harness.launch.slurm import script_text_problem
from harness.judging.multiplicity import CORRECTIONS, DEFAULT_CORRECTION
from harness.params import parse_int_list
from harness.plan import LIMITS, Case, Overrides, expand, find_suite, parse_param_options, read_suite, within_limits
from harness.registry import Registry
from harness.judging.until_decided import DEFAULT_BUDGET_S, DEFAULT_MAX_REPEATS, Budget, parse_duration
from harness.judging.intervals import DEFAULT_CONFIDENCE


def not_utf8(text: str) -> bool:
    """True when ``text`` came from bytes that are not UTF-8 (Python keeps them as lone surrogates)."""
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def check_protocol_limits(**values: float | int | None) -> None:
    """``repeats``, ``launches``, ``warmup``, ``timeout`` (those given) inside LIMITS; the error
    names the option (shared with ``harness controls``)."""
    for name, value in values.items():
        if value is not None and not within_limits(name, value):
            raise UsageError("--{} {}: must be a finite number between {:g} and {:g}".format(name, value, *LIMITS[name]))


def decision_budget(max_repeats: int, budget: str | None, confidence: float) -> Budget:
    """``--max-repeats`` and ``--budget`` checked, as a fresh :class:`~harness.judging.until_decided.Budget`."""
    lo, hi = LIMITS["repeats"]
    if not lo <= max_repeats <= hi:
        raise UsageError(f"--max-repeats {max_repeats}: must be between {lo} and {hi}")
    seconds = parse_duration(budget) if budget is not None else DEFAULT_BUDGET_S
    return Budget(max_repeats=max_repeats, seconds=seconds, confidence=confidence)


def _int_list(text: str | None, option: str) -> list[int] | None:
    lo, hi = LIMITS[option.removeprefix("--")]
    return None if text is None else parse_int_list(text, option, lo, hi)


@dataclass(frozen=True)
class RunRequest:
    """The cases to run (a suite, or workloads with overrides) and how: protocol, output,
    launcher, judging. Text fields hold what the user typed (``ranks="1,2"``), so the request can
    be written back as a command line; :meth:`cases` resolves them."""

    suite: str | None = None
    workload: str | None = None            # one name or several separated by commas
    backend: str | None = None             # ditto
    size: str | None = None
    ranks: str | None = None
    threads: str | None = None
    param: tuple[str, ...] = ()            # NAME=V[,V2], as --param
    repeats: int | None = None
    launches: int | None = None
    warmup: int | None = None
    timeout: float | None = None
    out: str = "results"                   # the results folder, as given
    machine_name: str | None = None
    correction: str = DEFAULT_CORRECTION
    confidence: float = DEFAULT_CONFIDENCE
    resume: bool = False
    oversubscribe: bool = False
    junit: str | None = None               # a JUnit file to write at the end
    until_decided: bool = False
    max_repeats: int = DEFAULT_MAX_REPEATS
    budget: str | None = None              # a duration as --budget takes it
    launcher: Launcher = field(default_factory=Launcher)
    dry_run: bool = False

    def __post_init__(self) -> None:
        if (self.suite is None) == (self.workload is None):
            raise UsageError("give either --suite or --workload (one of them)")
        if self.correction not in CORRECTIONS:
            raise UsageError(f"--correction {self.correction!r}: choose one of {', '.join(CORRECTIONS)}")
        if self.workload is not None and not [n for n in self.workload.split(",") if n.strip()]:
            raise UsageError("--workload: give at least one workload name")
        for option, value in (("--out", self.out), ("--machine-name", self.machine_name)):
            if value is not None and not_utf8(value):
                raise UsageError(f"{option} {value.encode('utf-8', 'surrogateescape')!r}: holds bytes that are not "
                                 "UTF-8, which no record can store; give a name in UTF-8")
        for a in self.launcher.extra_args:
            problem = script_text_problem("--launcher-arg", a)
            if problem:
                raise UsageError(problem)
        problem = self.launcher.usage_problem()   # whether it can start here is the run's question
        if problem:
            raise UsageError(problem)
        check_protocol_limits(repeats=self.repeats, launches=self.launches, warmup=self.warmup, timeout=self.timeout)
        self.decision_budget()

    def replace(self, **changes: Any) -> RunRequest:
        """This request with some fields changed (checked again)."""
        return dataclasses.replace(self, **changes)

    def decision_budget(self) -> Budget:
        """A fresh budget for ``--until-decided`` rounds (one per run: it counts the seconds spent)."""
        return decision_budget(self.max_repeats, self.budget, self.confidence)

    def overrides(self) -> Overrides:
        backends = None
        if self.backend is not None:
            backends = [b.strip() for b in self.backend.split(",")]
            if not all(backends):
                raise UsageError(f"--backend {self.backend!r}: an empty name; give names separated by commas "
                                 "(see `harness list backends`)")
        return Overrides(size=self.size, backends=backends, ranks=_int_list(self.ranks, "--ranks"),
                         threads=_int_list(self.threads, "--threads"), repeats=self.repeats,
                         launches=self.launches, warmup=self.warmup, timeout=self.timeout,
                         params=parse_param_options(list(self.param)))

    def entries(self, reg: Registry) -> list[dict[str, Any]]:
        """The case tables: the suite's, or one naming the workloads."""
        if self.suite is not None:
            return read_suite(find_suite(self.suite, reg))["case"]
        return [{"workload": [n.strip() for n in (self.workload or "").split(",") if n.strip()]}]

    def cases(self, reg: Registry) -> list[Case]:
        """Every case the request selects, fully resolved; bad input raises UsageError."""
        cases = expand(self.entries(reg), reg, self.overrides())
        if not cases:
            raise UsageError("the selection has no cases (is any workload registered? `harness list`)")
        return cases

    def argv(self) -> list[str]:
        """The request as ``harness run`` options again, paths made absolute (for a batch script,
        which runs on another node in another folder)."""
        out = ["--suite", self.suite] if self.suite is not None else ["--workload", str(self.workload)]
        for name in ("backend", "size", "ranks", "threads", "repeats", "launches", "warmup", "timeout"):
            value = getattr(self, name)
            if value is not None:
                out += [f"--{name}", str(value)]
        for param in self.param:
            out += ["--param", param]
        out += ["--out", str(pathlib.Path(self.out).resolve())]
        if self.machine_name:
            out += ["--machine-name", self.machine_name]
        if self.resume:
            out.append("--resume")
        if self.oversubscribe:
            out.append("--oversubscribe")
        if self.launcher.kind != "mpiexec":
            out += ["--launcher", self.launcher.kind]
        if self.launcher.nodes is not None:
            out += ["--nodes", str(self.launcher.nodes)]
        out += [f"--launcher-arg={a}" for a in self.launcher.extra_args]
        out += ["--confidence", str(self.confidence), "--correction", self.correction]
        if self.until_decided:
            out += ["--until-decided", "--max-repeats", str(self.max_repeats)]
        if self.budget is not None:
            out += ["--budget", str(self.budget)]
        if self.junit is not None:
            out += ["--junit", str(pathlib.Path(self.junit).resolve())]
        return out
