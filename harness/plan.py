"""From a suite (or one workload) and the command-line options to the list of cases.

A suite is a TOML file with ``description`` and ``[[case]]`` tables. Each case table names
``workload`` ("*" for every registered workload, a name, or a list) and optionally
``size``, ``backend``, ``ranks``, ``threads``, ``repeats``, ``launches`` (the repeats run in
each of this many separate worker launches), ``warmup``, ``timeout``, ``until_decided`` (true: more repeats while its claims are inconclusive, as ``--until-decided``)
and a ``[case.params]`` table; list values are swept (cartesian product).
"""
from __future__ import annotations

import itertools
import json
import math
import os
import pathlib
import tomllib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.judging.baseline_rule import CaseKey, is_baseline, is_baseline_for, is_baseline_of_any
from harness.envvars import positive_int
from harness.errors import UsageError, did_you_mean
from harness.registry import Registry

if TYPE_CHECKING:
    from harness.workload import Workload

CASE_KEYS = {"workload", "size", "backend", "ranks", "threads", "repeats", "launches", "warmup", "timeout",
             "params", "until_decided"}
SUITE_KEYS = {"description", "case"}
DEFAULT_REPEATS = 5
DEFAULT_WARMUP = 1
DEFAULT_TIMEOUT_S = 900.0
# Bounds of the resource and protocol values, from the command line or a suite: beyond them a
# value is a typo (or an attack on the machine), not a plan.
LIMITS = {"ranks": (1, 65536), "threads": (1, 4096), "repeats": (1, 100000), "launches": (1, 1000),
          "warmup": (0, 10000),
          "timeout": (1.0, 30 * 86400.0)}


def case_label(workload: str, size: str, swept: dict[str, Any], backend: str | None, ranks: int,
               threads: int) -> str:
    """``roofline[smoke]{n=512} mkl r1t2``: a case in a line, with only the params set explicitly
    (progress lines, work folders, and the series of ``harness history``)."""
    extra = ",".join(f"{k}={v}" for k, v in swept.items())
    return f"{workload}[{size}]" + (f"{{{extra}}}" if extra else "") + f" {backend or 'default'} r{ranks}t{threads}"


@dataclass
class Case:
    """One run of one workload: everything that decides its numbers."""

    workload: str
    size: str
    params: dict[str, Any]
    backend: str | None
    ranks: int
    threads: int
    repeats: int
    warmup: int
    timeout: float
    swept: dict[str, Any] = field(default_factory=dict)
    until_decided: bool = False    # the suite asks for more repeats while its claims are inconclusive
    first_repeat: int = 0          # ctx.repeat of the first measured repeat (a later launch or round)
    launches: int = 1              # separate worker launches, each running `repeats` measured repeats

    @property
    def key(self) -> CaseKey:
        """The case as the baseline rule names it (a stored record gives the same key)."""
        return CaseKey(self.workload, self.size, self.params, self.backend, self.ranks, self.threads)

    @property
    def case_id(self) -> str:
        """Stable identity used by ``--resume``: every resolved param, backend, ranks, threads."""
        params = json.dumps(self.params, sort_keys=True, separators=(",", ":"))
        return f"{self.workload}[{self.size}]{params}@{self.backend or 'default'}/r{self.ranks}t{self.threads}"

    @property
    def label(self) -> str:
        """Short name for progress lines: only what was set explicitly."""
        return case_label(self.workload, self.size, self.swept, self.backend, self.ranks, self.threads)


@dataclass
class Overrides:
    """What the command line says; None means 'take the suite's or the default value'."""

    size: str | None = None
    backends: list[str] | None = None
    ranks: list[int] | None = None
    threads: list[int] | None = None
    repeats: int | None = None
    launches: int | None = None
    warmup: int | None = None
    timeout: float | None = None
    params: dict[str, list[str]] = field(default_factory=dict)


def parse_param_options(options: list[str]) -> dict[str, list[str]]:
    """``["msf=1,16", "dataset=x"]`` -> ``{"msf": ["1", "16"], "dataset": ["x"]}``."""
    parsed: dict[str, list[str]] = {}
    for opt in options:
        key, sep, value = opt.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"--param {opt!r}: expected NAME=VALUE[,VALUE2...]")
        parsed[key.strip()] = [v for v in value.split(",") if v.strip()]
    return parsed


def find_suite(name: str, registry: Registry) -> pathlib.Path:
    """A suite by name (from the registered suite folders) or by path to a TOML file."""
    path = pathlib.Path(name)
    if path.suffix == ".toml" or os.sep in name:
        if not path.is_file():
            raise UsageError(f"suite file {name!r} does not exist")
        return path
    known = {p.stem: p for d in registry.suite_dirs for p in sorted(d.glob("*.toml"))}
    if name not in known:
        raise did_you_mean("suite", name, known)
    return known[name]


def read_suite(path: pathlib.Path) -> dict[str, Any]:
    """Parse and check a suite file; every problem names the file and what to fix."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"suite {path}: malformed TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"suite {path}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") from None
    except OSError as exc:
        raise UsageError(f"suite {path}: cannot read: {exc.strerror}") from None
    unknown = set(data) - SUITE_KEYS
    if unknown:
        raise UsageError(f"suite {path}: unknown top-level keys {sorted(unknown)} (allowed: {sorted(SUITE_KEYS)})")
    cases = data.get("case")
    if not isinstance(cases, list) or not cases or not all(isinstance(c, dict) for c in cases):
        raise UsageError(f"suite {path}: needs at least one [[case]] table")
    for i, c in enumerate(cases, 1):
        bad = set(c) - CASE_KEYS
        if bad:
            raise UsageError(f"suite {path}: case {i} has unknown keys {sorted(bad)} (allowed: {sorted(CASE_KEYS)})")
        if "workload" not in c:
            raise UsageError(f"suite {path}: case {i} has no 'workload' (a name, a list, or \"*\")")
        for key, value in c.items():
            problem = _suite_value_problem(key, value)
            if problem:
                raise UsageError(f"suite {path}: case {i}: {key} = {_short(value)}: {problem}")
    return data


def within_limits(name: str, value: Any) -> bool:
    """Whether ``value`` is an acceptable ``name`` (a key of LIMITS): an integer for the counts,
    a finite number for the timeout, inside the bounds."""
    lo, hi = LIMITS[name]
    kinds = (int, float) if name == "timeout" else (int,)
    return isinstance(value, kinds) and not isinstance(value, bool) and math.isfinite(value) and lo <= value <= hi


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _suite_value_problem(key: str, value: Any) -> str:
    """What is wrong with one key of a suite's case table ('' when nothing)."""
    names = value if isinstance(value, list) else [value]
    if key in ("workload", "backend"):
        if not names or not all(isinstance(n, str) and n.strip() for n in names):
            return f"expected a {key} name or a list of names (strings)"
    elif key == "size":
        from harness.workload import SIZES
        if value not in SIZES:
            return f"expected one of {', '.join(SIZES)}"
    elif key in ("ranks", "threads"):
        if not names or not all(within_limits(key, n) for n in names):
            return "expected an integer or a list of integers between {} and {}".format(*LIMITS[key])
    elif key in ("repeats", "launches", "warmup"):
        if not within_limits(key, value):
            return "expected an integer between {} and {}".format(*LIMITS[key])
    elif key == "until_decided":
        if not isinstance(value, bool):
            return "expected true or false"
    elif key == "timeout":
        if not within_limits(key, value):
            return "expected seconds, a finite number between {:g} and {:g}".format(*LIMITS[key])
    elif key == "params":
        if not isinstance(value, dict):
            return "expected a table ([case.params])"
        for name, v in value.items():
            items = v if isinstance(v, list) else [v]
            if not items or not all(isinstance(x, (str, int, float, bool)) for x in items):
                return f"param {name!r}: expected a value or a list of values (string, number, true/false)"
            if any(isinstance(x, float) and not math.isfinite(x) for x in items):
                return f"param {name!r}: expected finite numbers (no nan or inf)"
    return ""


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _positive_int(value: Any, what: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UsageError(f"{what}={value!r}: expected an integer >= {minimum}")
    return value


def default_threads(ranks: int) -> int:
    """One thread per rank under MPI; all usable CPUs for a single process."""
    if ranks > 1:
        return 1
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


DEFAULT_MAX_CASES = 10_000


def max_cases() -> int:
    """The most cases one plan may have (HARNESS_MAX_CASES, default 10,000): a sweep of two
    1,000-value params would otherwise plan a million cases for minutes."""
    return positive_int("HARNESS_MAX_CASES", DEFAULT_MAX_CASES)


def expand(entries: list[dict[str, Any]], registry: Registry, cli: Overrides) -> list[Case]:
    """Turn case tables plus command-line overrides into validated cases."""
    cases: list[Case] = []
    used_cli_params: set[str] = set()
    planned = 0
    for entry in entries:
        names = sorted(registry.workloads) if entry["workload"] == "*" else _as_list(entry["workload"])
        for name in names:
            workload = registry.workload(name)
            size = cli.size or entry.get("size") or workload.default_size
            backends = cli.backends or _as_list(entry.get("backend"))
            for backend in backends:
                if backend is not None:
                    registry.backend(backend)
            ranks_list = cli.ranks or _as_list(entry.get("ranks", workload.default_ranks))
            sweep: dict[str, list[Any]] = {k: _as_list(v) for k, v in entry.get("params", {}).items()}
            for key, values in cli.params.items():
                if key in workload.params:
                    sweep[key] = [workload.params[key].parse(v, key) for v in values]
                    used_cli_params.add(key)
            for key, values in sweep.items():
                if key not in workload.params:
                    raise did_you_mean(f"param of workload {name!r}:", key, workload.params)
                if len({json.dumps(v, sort_keys=True) for v in values}) < len(values):
                    raise UsageError(f"param {key} of workload {name!r} lists a value twice ({values}): "
                                     "two cases with one identity; list each value once")
            keys = list(sweep)
            threads_list = cli.threads or _as_list(entry.get("threads", 0))
            planned += math.prod(len(v) for v in sweep.values()) * len(backends) * len(ranks_list) * len(threads_list)
            if planned > max_cases():
                raise UsageError(f"the sweep makes {planned:,} case(s) or more (at workload {name!r}), over the "
                                 f"limit of {max_cases():,}: sweep fewer values, or raise the limit with "
                                 "HARNESS_MAX_CASES=N if you mean it")
            for backend, ranks, threads in itertools.product(
                    backends, ranks_list, threads_list):
                ranks = _positive_int(ranks, "ranks")
                threads = _positive_int(threads or default_threads(ranks), "threads")
                for combo in itertools.product(*(sweep[k] for k in keys)):
                    swept = dict(zip(keys, combo))
                    params = workload.resolve_params(size, swept)
                    check_params(workload, params)
                    cases.append(Case(
                        workload=name, size=size, params=params, backend=backend, ranks=ranks,
                        threads=threads,
                        repeats=_positive_int(cli.repeats or entry.get("repeats", workload.protocol_default(
                            size, "repeats") or DEFAULT_REPEATS), "repeats"),
                        warmup=_positive_int(cli.warmup if cli.warmup is not None else entry.get(
                            "warmup", DEFAULT_WARMUP if workload.protocol_default(size, "warmup") is None
                            else workload.protocol_default(size, "warmup")), "warmup", 0),
                        timeout=float(cli.timeout or entry.get("timeout", DEFAULT_TIMEOUT_S)),
                        launches=_positive_int(cli.launches or entry.get("launches", workload.protocol_default(
                            size, "launches")), "launches"),
                        swept={k: params[k] for k in keys}, until_decided=bool(entry.get("until_decided", False))))
    unused = set(cli.params) - used_cli_params
    if unused:
        raise UsageError(f"--param {', '.join(sorted(unused))}: no selected workload has such a param "
                         "(see `harness list workloads`)")
    return ceilings_first(baselines_first(cases, registry), registry)


def ceilings_first(cases: list[Case], registry: Registry) -> list[Case]:
    """The cases in their order, except that those of workloads measuring a GFLOP/s ceiling
    (``Workload.ceilings``, the roofline) come first: the other cases' counted phases are placed
    against the ceiling this run measured (harness.hardware.placement)."""
    def measures_ceiling(case: Case) -> bool:
        return "GFLOP/s" in registry.workload(case.workload).ceilings.values()
    return sorted(cases, key=lambda c: not measures_ceiling(c))   # stable: the rest keep their order


def check_params(workload: Any, params: dict[str, Any]) -> None:
    """The workload's own check of its params: its UsageError is the user's to fix (exit 2);
    anything else it raises is a bug of its plugin, named as one."""
    from harness.plugin_guard import describe, guarded

    _, exc = guarded(lambda: workload.check_params(params))
    if isinstance(exc, UsageError):
        raise exc
    if exc is not None:
        raise UsageError(f"workload {workload.name!r}: check_params() raised {describe(exc)}: a bug in its "
                         f"plugin ({workload.__class__.__module__}); leave it out of the run") from None


# Relative claims: which cases are baselines, and the order that runs them before the cases
# judged against them.

def _judged_against(case: Case, other: Case, workload: Workload) -> bool:
    """True when ``other`` is the baseline of a relative claim that applies to ``case``."""
    params = case.key.judged_params
    return any(claim.relative_to is not None and not claim.applies(params)
               and not is_baseline(claim.relative_to, params)
               and is_baseline_for(other.key, case.key, claim.relative_to, claim.cores)
               for claim in workload.claims)


def _dependencies_first(cases: list[Case], workload: Workload) -> list[Case]:
    """``cases`` in their order, except that a case comes after the cases it is judged against
    (a baseline can itself have a relative claim on another baseline)."""
    todo, out = list(cases), []
    while todo:
        ready = next((c for c in todo if not any(_judged_against(c, o, workload) for o in todo if o is not c)),
                     todo[0])   # a cycle cannot be ordered: keep the listed order
        todo.remove(ready)
        out.append(ready)
    return out


def interleaving_groups(cases: list[Case], registry: Registry) -> dict[str, list[Case]]:
    """{case_id: its group} for the cases whose launches run interleaved: cases of one workload
    with the same number of launches (> 1) joined by a relative claim (one is the other's
    baseline), each group in plan order. A timing ratio between arms run minutes apart carries the
    machine's drift between them; launched A B A B ..., both arms see it alike."""
    multi = [c for c in cases if c.launches > 1]
    parent = {c.case_id: c.case_id for c in multi}

    def root(i: str) -> str:
        while parent[i] != i:
            i = parent[i]
        return i

    for i, a in enumerate(multi):
        workload = registry.workload(a.workload)
        for b in multi[i + 1:]:
            if (b.workload == a.workload and b.launches == a.launches and b.case_id != a.case_id
                    and (_judged_against(a, b, workload) or _judged_against(b, a, workload))):
                parent[root(b.case_id)] = root(a.case_id)
    groups: dict[str, list[Case]] = {}
    for c in multi:
        groups.setdefault(root(c.case_id), []).append(c)
    return {c.case_id: members for members in groups.values() if len(members) > 1 for c in members}


def baselines_first(cases: list[Case], registry: Registry) -> list[Case]:
    """The cases in their order, except that the baselines of a workload's relative claims move
    up to where that workload's first case stands (each after the baselines it is itself judged
    against), so the other cases' claims are evaluated in the same run whatever order a sweep
    lists its values in."""
    baselines: dict[str, list[Case]] = {}
    flags = [is_baseline_of_any(c.key, registry.workload(c.workload).claims) for c in cases]
    for c, flag in zip(cases, flags):
        if flag:
            baselines.setdefault(c.workload, []).append(c)
    out: list[Case] = []
    seen: set[str] = set()
    for c, flag in zip(cases, flags):
        if c.workload not in seen:
            seen.add(c.workload)
            out.extend(_dependencies_first(baselines.get(c.workload, []), registry.workload(c.workload)))
        if not flag:
            out.append(c)
    return out
