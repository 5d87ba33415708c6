"""The work digest: what names the work a record measured (harness.work_identity)."""
from harness import Param, Workload
from harness.work_identity import work_of


class Gauge(Workload):
    name = "gauge_digest"
    params = {"n": Param(int, default=4),
              "switch": Param(str, default="off", choices=("off", "on"), added_later=True)}


class GaugeBefore(Workload):
    """The same workload before ``switch`` was added."""
    name = "gauge_digest"
    params = {"n": Param(int, default=4)}


def test_a_param_added_later_names_new_work_only_away_from_its_default() -> None:
    now, before = Gauge(), GaugeBefore()
    at_default = work_of(now, now.resolve_params("small", {}))["digest"]
    assert at_default == work_of(before, before.resolve_params("small", {}))["digest"]
    assert work_of(now, now.resolve_params("small", {"switch": "on"}))["digest"] != at_default
    assert work_of(now, now.resolve_params("small", {"n": 5}))["digest"] != at_default
