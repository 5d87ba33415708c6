"""The harness's cases as a ReFrame test library, for sites that accept and watch nodes with ReFrame.

``harness export-reframe DIR`` writes ``DIR/harness_cases.py``: one run-only ReFrame test,
parameterised over the selected cases (so ReFrame's ``-n``/``-t`` filters pick cases), whose job
runs ``harness run`` for its one case with ``--out`` in the stage folder. Sanity: the record's
status is ``ok``. Performance variables: the median seconds per repeat and the workload's
throughput, read from the record; with a reference (a capture of this machine kind), each case's
ReFrame reference is the capture's median with bounds from its interval and the tolerance, for
the case of the same workload version only. Ranks and threads become ``num_tasks`` and
``num_cpus_per_task``; the harness starts the ranks itself (mpiexec locally, srun steps in a
Slurm allocation), so ReFrame's own launcher is ``local``. Beside it, two site configurations:
this machine (``reframe_local.py``, scheduler local) and a Slurm partition
(``reframe_slurm.py``). ReFrame itself is not needed to write them (the ``reframe`` extra
installs it to run them).
"""
from __future__ import annotations

import datetime as _dt
import math
import os
import statistics
import sys
from dataclasses import dataclass
from typing import Any

from harness import __version__
from harness.output import strict_json
from harness.check import Reference, widened
from harness.plan import Case
from harness.registry import Registry
from harness.work_identity import current_work_version
from harness.judging.intervals import DEFAULT_CONFIDENCE

TESTS_NAME = "harness_cases.py"
LOCAL_CONFIG = "reframe_local.py"
SLURM_CONFIG = "reframe_slurm.py"


def param_text(value: Any) -> str:
    """A param's value as ``--param NAME=VALUE`` takes it (lists as ``1:2:4``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ":".join(param_text(v) for v in value)
    return str(value)


def test_name(case: Case) -> str:
    """A name ReFrame can filter on (``-n``): workload, size, swept params, backend, ranks x threads."""
    swept = "_".join(f"{k}-{param_text(v)}" for k, v in case.swept.items())
    text = "_".join(x for x in (case.workload, case.size, swept, case.backend or "", f"r{case.ranks}t{case.threads}") if x)
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in text)


@dataclass
class ReferenceValues:
    """What a ReFrame reference tuple is made of, for one case."""

    median_s: float
    upper: float                 # fraction above the median that still passes
    throughput: float | None
    runs: int


def reference_values(reference: Reference, case: Case, version: str, metric: str | None,
                     tolerance: float) -> tuple[ReferenceValues | None, str]:
    """The capture's figures for ``case`` at workload ``version``: the median of its runs' pooled
    seconds per repeat, the upper bound as the tolerance plus the capture's own spread (its 95 %
    interval of the median, widened by how its runs differ: :func:`harness.check.widened`), the
    throughput's median over all repeats; or (None, why)."""
    runs = reference.runs_of(case.key, version)
    if not runs:
        return None, reference.missing(case.key, version)
    pooled = sorted(s for r in runs for s in r.samples)
    median = statistics.median(pooled)
    within = max([r.stats.ci95[1] / r.stats.median - 1.0 for r in runs if r.stats and r.stats.median] or [0.0])
    # and how the capture's runs differ from one another (a new run differs by that much too)
    _, _, high = widened(1.0, 1.0 / (1.0 + max(within, 1e-9)), 1.0 + max(within, 1e-9),
                         [statistics.median(r.samples) for r in runs], DEFAULT_CONFIDENCE)
    spread = high - 1.0
    figures = [float(v) for r in runs for v in (r.metric_samples.get(metric) or []) if isinstance(v, (int, float))] \
        if metric else []
    throughput = statistics.median(figures) if figures else None
    return ReferenceValues(median, round(max(0.0, spread) + tolerance, 4),
                           throughput if throughput is not None and math.isfinite(throughput) else None,
                           len(runs)), ""


def case_entries(cases: list[Case], registry: Registry, reference: Reference | None,
                 tolerance: float) -> list[dict[str, Any]]:
    """Per case what the generated test needs: its command line parts, resources and reference."""
    out = []
    for case in cases:
        workload = registry.workload(case.workload)
        version = current_work_version(workload)
        metric, unit = tuple(workload.throughput[:2]) if workload.throughput else (None, None)
        entry: dict[str, Any] = {
            "name": test_name(case), "workload": case.workload, "size": case.size,
            "params": [f"{k}={param_text(v)}" for k, v in case.swept.items()], "backend": case.backend,
            "ranks": case.ranks, "threads": case.threads, "repeats": case.repeats, "warmup": case.warmup,
            "timeout": case.timeout, "version": version, "throughput": [metric, unit] if metric else None,
            "reference": None, "no_reference": "no reference given"}
        if reference is not None:
            values, why = reference_values(reference, case, version, metric, tolerance)
            entry["no_reference"] = why
            if values is not None:
                upper = values.upper
                entry["reference"] = {"median_s": [values.median_s, None, upper, "s"]}
                if values.throughput is not None:
                    # throughput is 1/time: a time (1 + upper) times the reference's is (1 - 1/(1 + upper)) lower
                    entry["reference"]["throughput"] = [values.throughput, -round(1 - 1 / (1 + upper), 4), None, unit]
                entry["no_reference"] = ""
        out.append(entry)
    return out


TESTS_TEMPLATE = '''\
"""hpml-harness cases as ReFrame tests: written by `harness export-reframe` (hpml-harness {version})
on {date}; what was exported and where the references come from: EXPORTED and REFERENCE_NOTE below.

One run-only test per case ({count}), named workload_size_params_backend_rRtT (-n filters them, -t by
workload or size). Its job runs `harness run` for that case with --out in the stage folder; sanity:
the record's status is ok; performance: median_s (seconds per repeat) and the workload's
throughput, read from the record (a metric's median over the measured repeats).
Run:  reframe -C {local_config} -c {tests} -r --exec-policy=serial
"""
import json
import os
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_after, run_before, sanity_function

# Every value below is a JSON text read by json.loads: data, never code (paths, params and
# options may hold any character; issue 55).
EXPORTED = json.loads({exported})          # what was exported
REFERENCE_NOTE = json.loads({reference_note})
PYTHON = json.loads({python})          # the interpreter of the venv that has hpml-harness
REFERENCE_SYSTEM = json.loads({system})       # the ReFrame system:partition the references apply to
LAUNCHER_ARGS = json.loads({launcher_args})    # extra srun options for the cases' steps in a Slurm allocation
NODES = json.loads({nodes})    # nodes per case in a Slurm partition (None: Slurm's choice)
CASES = json.loads({cases})


def last_record(path):
    """The last record of a results file (the case's, with its figures)."""
    with open(path) as f:
        lines = [line for line in f if line.strip()]
    return json.loads(lines[-1])


@sn.deferrable
def harness_status(path):
    return last_record(path)["status"]


@sn.deferrable
def harness_figure(path, name):
    """median_s: the median seconds per repeat; a metric: its median over the measured repeats."""
    record = last_record(path)
    if name == "median_s":
        return float(record["stats"]["median"])
    values = sorted(float(v) for v in record.get("metric_samples", {{}}).get(name) or [record["metrics"][name]])
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


@rfm.simple_test
class HarnessCase(rfm.RunOnlyRegressionTest):
    case = parameter(CASES, fmt=lambda c: c["name"])
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    executable = shlex.quote(PYTHON)
    maintainers = ["hpml-harness"]
    keep_files = ["results/results.jsonl"]     # the case's record, kept in ReFrame's output folder

    @run_after("init")
    def set_resources(self):
        self.num_tasks = self.case["ranks"]
        if NODES and self.case["ranks"] % NODES == 0 and self.case["ranks"] >= NODES:
            self.num_tasks_per_node = self.case["ranks"] // NODES
        self.num_cpus_per_task = self.case["threads"]
        self.tags = {{self.case["workload"], self.case["size"], "hpml-harness"}}
        self.descr = "hpml-harness " + self.case["name"] + " (workload version " + self.case["version"] + ")"
        if self.case["reference"]:
            self.reference = {{REFERENCE_SYSTEM: {{k: tuple(v) for k, v in self.case["reference"].items()}}}}

    @run_before("run")
    def set_command(self):
        self.job.launcher = getlauncher("local")()   # harness run starts the case's ranks itself
        in_slurm = self.current_partition.scheduler.registered_name in ("slurm", "squeue")
        opts = ["-m", "harness", "run", "--workload", self.case["workload"], "--size", self.case["size"],
                "--ranks", str(self.case["ranks"]), "--threads", str(self.case["threads"]),
                "--repeats", str(self.case["repeats"]), "--warmup", str(self.case["warmup"]),
                "--timeout", str(self.case["timeout"]), "--out", "results",
                "--launcher", "srun" if in_slurm else "mpiexec"]
        if in_slurm:
            opts += ["--launcher-arg=" + a for a in LAUNCHER_ARGS]
            if self.num_tasks_per_node:
                opts += ["--nodes", str(self.case["ranks"] // self.num_tasks_per_node)]
        if self.case["backend"]:
            opts += ["--backend", self.case["backend"]]
        for p in self.case["params"]:
            opts += ["--param", p]
        # ReFrame joins the command into its job script as it is: each word is quoted for the shell
        self.executable_opts = [shlex.quote(o) for o in opts]

    @sanity_function
    def record_is_ok(self):
        return sn.assert_eq(harness_status(os.path.join(self.stagedir, "results", "results.jsonl")), "ok")

    @run_before("performance")
    def set_perf_variables(self):
        path = os.path.join(self.stagedir, "results", "results.jsonl")
        self.perf_variables = {{"median_s": sn.make_performance_function(harness_figure(path, "median_s"), "s")}}
        if self.case["throughput"]:
            metric, unit = self.case["throughput"]
            self.perf_variables["throughput"] = sn.make_performance_function(harness_figure(path, metric), unit)
'''

CONFIG_TEMPLATE = '''\
"""A ReFrame site configuration written by `harness export-reframe` (hpml-harness {version}); what it
describes: DESCRIBES below. Use: reframe -C {name} -c {tests} -r --exec-policy=serial"""
import json

DESCRIBES = json.loads({what})
site_configuration = json.loads({config})
'''


def tests_text(entries: list[dict[str, Any]], what: str, reference_note: str, system: str,
               launcher_args: list[str], nodes: int | None = None) -> str:
    return TESTS_TEMPLATE.format(
        version=__version__, date=_dt.datetime.now().isoformat(timespec="seconds"),
        count=len(entries), local_config=LOCAL_CONFIG, tests=TESTS_NAME,
        exported=literal(what), reference_note=literal(reference_note), python=literal(sys.executable),
        system=literal(system), launcher_args=literal(list(launcher_args)), nodes=literal(nodes),
        cases=literal(entries, indent=1))


def literal(value: Any, indent: int | None = None) -> str:
    """``value`` as a Python string literal of its strict JSON (non-finite numbers become null):
    what a generated file holds is data that json.loads reads back, never code."""
    text = strict_json.dumps(value, indent=indent, ensure_ascii=True)
    return repr(text) if indent is None else "(\n" + "\n".join(repr(line + "\n") for line in text.splitlines()) + ")"


def local_config(cpus: int) -> dict[str, Any]:
    """This machine: one partition, the local scheduler, one job at a time (timings)."""
    return {"systems": [{"name": "local", "descr": "this machine (hpml-harness export)", "hostnames": [".*"],
                         "partitions": [{"name": "default", "scheduler": "local", "launcher": "local",
                                         "environs": ["harness"], "max_jobs": 1,
                                         "processor": {"num_cpus": cpus}}]}],
            "environments": [{"name": "harness", "cc": "cc", "cxx": "", "ftn": ""}]}


def slurm_config(partition: str, hostnames: list[str], extra: list[str], scheduler: str = "slurm") -> dict[str, Any]:
    """A Slurm partition: jobs through sbatch, one at a time; each case's ranks are srun steps
    (``scheduler`` squeue where Slurm keeps no accounting for sacct)."""
    return {"systems": [{"name": "slurm", "descr": "a Slurm partition (hpml-harness export)",
                         "hostnames": hostnames,
                         "partitions": [{"name": partition, "scheduler": scheduler, "launcher": "local",
                                         "access": [f"--partition={partition}", *extra],
                                         "environs": ["harness"], "max_jobs": 1}]}],
            "environments": [{"name": "harness", "cc": "cc", "cxx": "", "ftn": ""}]}


def config_text(name: str, what: str, config: dict[str, Any]) -> str:
    return CONFIG_TEMPLATE.format(version=__version__, what=literal(what), name=name, tests=TESTS_NAME,
                                  config=literal(config, indent=1))


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

