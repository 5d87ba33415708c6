"""The registry keeps working plugins usable and reports the broken ones with a reason."""
import types

from harness import Backend, Workload, hookimpl
from harness.registry import build_registry


class Good(Workload):
    name = "good"

    def run(self, ctx):
        return {}


class NoRun(Workload):
    name = "norun"


class GoodBackend(Backend):
    name = "gb"


def _plugin(**hooks):
    mod = types.SimpleNamespace()
    for name, fn in hooks.items():
        setattr(mod, name, hookimpl(fn))
    return mod


def test_good_plugin_and_sources() -> None:
    reg = build_registry([("pkg:good", _plugin(harness_workloads=lambda: [Good],
                                               harness_backends=lambda: [GoodBackend()]))],
                         entry_points=False)
    assert set(reg.workloads) == {"good"} and set(reg.backends) == {"gb"}
    assert reg.source("workload", "good") == "pkg:good"
    assert reg.problems == []


def test_broken_plugins_are_reported_and_others_survive() -> None:
    def raises():
        raise RuntimeError("boom")

    reg = build_registry([
        ("pkg:good", _plugin(harness_workloads=lambda: [Good()])),
        ("pkg:raises", _plugin(harness_workloads=raises)),
        ("pkg:notlist", _plugin(harness_workloads=lambda: Good())),
        ("pkg:wrongtype", _plugin(harness_workloads=lambda: ["text"], harness_backends=lambda: [1])),
        ("pkg:norun", _plugin(harness_workloads=lambda: [NoRun()])),
        ("pkg:dup", _plugin(harness_workloads=lambda: [Good()])),
        ("pkg:baddir", _plugin(harness_suite_dirs=lambda: ["/no/such/folder"])),
    ], entry_points=False)
    assert set(reg.workloads) == {"good"}
    assert reg.source("workload", "good") == "pkg:good"  # first registered wins
    reasons = {p.source: p.reason for p in reg.problems}
    assert "raised RuntimeError('boom')" in reasons["pkg:raises"]
    assert "must return a list" in reasons["pkg:notlist"]
    assert "expected a harness" in reasons["pkg:wrongtype"]
    assert "does not implement run" in reasons["pkg:norun"]
    assert "duplicate workload name 'good'" in reasons["pkg:dup"]
    assert "existing folder" in reasons["pkg:baddir"]


def test_builtin_catalog_comes_through_entry_points() -> None:
    reg = build_registry()
    names = {p.stem for d in reg.suite_dirs for p in d.glob("*.toml")}
    assert {"all", "smoke"} <= names
    assert reg.source("workload", "nope") == "?"


def test_did_you_mean() -> None:
    reg = build_registry([("pkg:good", _plugin(harness_workloads=lambda: [Good()]))], entry_points=False)
    try:
        reg.workload("godo")
    except Exception as exc:
        assert "did you mean 'good'" in str(exc)
    else:
        raise AssertionError("unknown name accepted")


def test_run_finished_gives_a_workload_plugin_only_its_own_records(tmp_path) -> None:
    from conftest import make_record
    from harness import Workload, hookimpl
    from harness.registry import build_registry
    from harness.results.record import WorkloadInfo

    seen: dict[str, list[str]] = {}

    class Mine(Workload):
        name = "mine"

        def run(self, ctx):
            return {}

    class WorkloadPlugin:
        @hookimpl
        def harness_workloads(self):
            return [Mine()]

        @hookimpl
        def harness_run_finished(self, records, out_dir):
            seen["workload plugin"] = [r["workload"]["name"] for r in records]

    class Exporter:
        @hookimpl
        def harness_run_finished(self, records, out_dir):
            seen["exporter"] = [r["workload"]["name"] for r in records]

    reg = build_registry(extra_plugins=[("wp", WorkloadPlugin()), ("ex", Exporter())], entry_points=False)
    records = [make_record(workload=WorkloadInfo("mine", "wp")), make_record(workload=WorkloadInfo("other", "x"))]
    assert reg.notify_run_finished([r.to_json() for r in records], tmp_path) == []
    assert seen == {"workload plugin": ["mine"], "exporter": ["mine", "other"]}


def test_every_builtin_workload_declares_its_throughput() -> None:
    from harness.registry import build_registry

    reg = build_registry()
    builtin = [w for n, w in reg.workloads.items() if reg.source("workload", n).startswith("hpml-harness:")]
    assert len(builtin) == 8
    assert all(w.throughput and w.throughput[0] and w.throughput[1] for w in builtin), \
        [w.name for w in builtin if not w.throughput]
    assert reg.workload("bragg_unet").throughput[0] == "train_boxes_per_s"


def test_a_malformed_variation_is_a_plugin_problem_not_a_crash() -> None:
    from harness.workload import checked_workload
    from harness.workload import Workload

    class Odd(Workload):
        name = "odd"
        variation = {"x": "sometimes"}

        def run(self, ctx):
            return {}

    obj, why = checked_workload(Odd())
    assert obj is None and "variation must map metric names" in why
    Odd.variation = {"x": "seeds"}
    assert checked_workload(Odd())[0] is not None


def test_a_misspelled_hook_is_the_plugins_problem_with_the_closest_name() -> None:
    """`harness_workload` (no s) would load, provide nothing and say nothing (issue 41)."""
    reg = build_registry([("pkg:typo", _plugin(harness_workload=lambda: [Good])),
                          ("pkg:good", _plugin(harness_workloads=lambda: [Good]))], entry_points=False)
    assert set(reg.workloads) == {"good"}
    (problem,) = reg.problems
    assert problem.source == "pkg:typo"
    assert problem.reason == "unknown hook 'harness_workload', so it provides nothing: did you mean 'harness_workloads'?"
    far = build_registry([("pkg:far", _plugin(setup_everything=lambda: None))], entry_points=False)
    assert far.problems[0].reason.startswith("unknown hook 'setup_everything', so it provides nothing: the hooks are ")


def test_contract_messages_name_the_fix() -> None:
    """A plugin author reads what to change, not only what is wrong (issue 41)."""
    from harness import Param
    from harness.workload import checked_workload

    class OnlySmoke(Good):
        sizes = {"smoke": {}}

    class Tiny(Good):
        sizes = {"smoke": {}, "tiny": {}, "small": {}}

    class Stray(Good):
        params = {"n": Param(int, default=1)}
        sizes = {"smoke": {}, "small": {"m": 2}}

    assert checked_workload(OnlySmoke)[1] == ("workload 'good' default_size 'small' is not in its sizes ['smoke']: "
                                              "add a 'small' size or set default_size to one of them")
    assert checked_workload(Tiny)[1].endswith("sizes are named smoke, small, paper (suites and --size use those "
                                              "names); rename them")
    assert checked_workload(Stray)[1].endswith("sets undeclared params ['m']: declare them in params or drop them "
                                               "from the size")
