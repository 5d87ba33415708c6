"""harness/request.py: the typed run request, checked once, planned and written back as options."""
from __future__ import annotations

import argparse
import pathlib

import pytest

from harness.commands.common import UsageParser
from harness.commands.options import request_from_args
from harness.commands.run import register
from harness.errors import UsageError
from harness.launch.launcher import Launcher
from harness.registry import build_registry
from harness.request import RunRequest, check_protocol_limits, decision_budget


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = UsageParser(prog="harness")
    register(parser.add_subparsers(dest="verb", parser_class=UsageParser))
    return parser.parse_args(["run", *argv])


def test_a_request_written_back_as_options_parses_to_the_same_request(tmp_path) -> None:
    request = RunRequest(workload="gauge,probe", backend="openblas", size="smoke", ranks="1,2", threads="1",
                         param=("x=1,2", "y=a"), repeats=3, warmup=0, timeout=60.0, out=str(tmp_path / "r"),
                         machine_name="node-7", correction="bh", confidence=0.9, resume=True,
                         until_decided=True, max_repeats=12, budget="90s", junit=str(tmp_path / "j.xml"),
                         launcher=Launcher("srun", 2, ("--mpi=pmi2",)))
    again = request_from_args(_parse(request.argv()))
    assert again == request.replace(out=str((tmp_path / "r").resolve()), junit=str((tmp_path / "j.xml").resolve()))
    assert request.argv()[:2] == ["--workload", "gauge,probe"]
    assert "--launcher" in request.argv() and "--launcher-arg=--mpi=pmi2" in request.argv()


def test_a_request_plans_its_cases_and_gives_a_fresh_budget_each_time() -> None:
    reg = build_registry()
    cases = RunRequest(workload="roofline", size="smoke", ranks="1", repeats=2).cases(reg)
    assert cases and {c.workload for c in cases} == {"roofline"} and {c.repeats for c in cases} == {2}
    request = RunRequest(suite="smoke", max_repeats=8, budget="2m", confidence=0.9)
    first = request.decision_budget()
    first.spent_s = 100.0
    assert request.decision_budget().spent_s == 0.0 and first.seconds == 120.0 and first.max_repeats == 8


@pytest.mark.parametrize(("fields", "message"), [
    ({"suite": "smoke", "workload": "gauge"}, "either --suite or --workload"),
    ({}, "either --suite or --workload"),
    ({"workload": " , "}, "at least one workload"),
    ({"workload": "gauge", "repeats": 0}, "--repeats 0"),
    ({"workload": "gauge", "timeout": float("nan")}, "--timeout nan"),
    ({"workload": "gauge", "max_repeats": 0}, "--max-repeats 0"),
    ({"workload": "gauge", "budget": "soon"}, "--budget 'soon'"),
    ({"workload": "gauge", "correction": "sidak"}, "--correction 'sidak'"),
    ({"workload": "gauge", "launcher": Launcher("mpiexec", nodes=2)}, "only apply to --launcher srun"),
    ({"workload": "gauge", "launcher": Launcher("srun", nodes=0)}, "--nodes 0"),
])
def test_bad_input_is_refused_when_the_request_is_made(fields: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace("'", ".")):
        RunRequest(**fields)


def test_the_shared_checks_name_the_option() -> None:
    with pytest.raises(UsageError, match="--warmup -1"):
        check_protocol_limits(repeats=3, warmup=-1)
    check_protocol_limits(repeats=None, timeout=None)
    assert decision_budget(20, None, 0.95).seconds > 0


def test_a_selection_without_cases_is_bad_input() -> None:
    with pytest.raises(UsageError):
        RunRequest(workload="no_such_workload_here").cases(build_registry())
    assert pathlib.Path(RunRequest(workload="gauge").out) == pathlib.Path("results")
