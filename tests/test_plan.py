import pathlib

import pytest

from harness import Backend, Claim, Param, Workload, hookimpl
from harness.errors import UsageError
from harness.plan import Overrides, expand, parse_param_options, read_suite
from harness.registry import build_registry


class Sweep(Workload):
    name = "sweep"
    params = {"msf": Param(int, default=1, minimum=1), "data": Param(str, default="x")}
    sizes = {"smoke": {"msf": 2}, "small": {}, "paper": {}}

    def run(self, ctx):
        return {}


class Lib(Backend):
    def __init__(self, name: str) -> None:
        self.name = name

    def available(self):
        return True, ""


class Plugin:
    @hookimpl
    def harness_workloads(self):
        return [Sweep()]

    @hookimpl
    def harness_backends(self):
        return [Lib("liba"), Lib("libb")]


@pytest.fixture
def reg():
    return build_registry([("t:sweep", Plugin())], entry_points=False)


def write(tmp_path: pathlib.Path, text: str) -> pathlib.Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def test_suite_sweep_expands_to_the_product(tmp_path, reg) -> None:
    suite = read_suite(write(tmp_path, '[[case]]\nworkload = "*"\nranks = [1, 2]\nparams = { msf = [1, 4, 16] }\n'))
    cases = expand(suite["case"], reg, Overrides())
    assert len(cases) == 6
    assert {(c.ranks, c.params["msf"]) for c in cases} == {(r, m) for r in (1, 2) for m in (1, 4, 16)}
    assert all(c.threads == 1 for c in cases if c.ranks == 2)
    assert len({c.case_id for c in cases}) == 6


def test_cli_overrides_win(tmp_path, reg) -> None:
    suite = read_suite(write(tmp_path, '[[case]]\nworkload = "sweep"\nsize = "smoke"\n'))
    cases = expand(suite["case"], reg, Overrides(params=parse_param_options(["msf=3,5"]), repeats=7))
    assert [c.params["msf"] for c in cases] == [3, 5]
    assert all(c.repeats == 7 and c.size == "smoke" for c in cases)


def test_backends_sweep_like_ranks(tmp_path, reg) -> None:
    suite = read_suite(write(tmp_path, '[[case]]\nworkload = "sweep"\nbackend = ["liba", "libb"]\nranks = [1, 2]\n'))
    cases = expand(suite["case"], reg, Overrides())
    assert [(c.backend, c.ranks) for c in cases] == [("liba", 1), ("liba", 2), ("libb", 1), ("libb", 2)]
    cases = expand(suite["case"], reg, Overrides(backends=["libb"]))
    assert {c.backend for c in cases} == {"libb"} and len(cases) == 2
    assert len({c.case_id for c in expand(suite["case"], reg, Overrides())}) == 4


@pytest.mark.parametrize("text, message", [
    ("[[case]\nworkload='x'", "malformed TOML"),
    ("description = 'no cases'", "at least one"),
    ("[[case]]\nsize='smoke'", "no 'workload'"),
    ("[[case]]\nworkload='sweep'\nrank=2", "unknown keys \\['rank'\\]"),
    ("colour = 1\n[[case]]\nworkload='sweep'", "unknown top-level"),
])
def test_malformed_suites(tmp_path, text, message) -> None:
    with pytest.raises(UsageError, match=message):
        read_suite(write(tmp_path, text))


def test_bad_names_and_values(tmp_path, reg) -> None:
    with pytest.raises(UsageError, match="did you mean 'sweep'"):
        expand([{"workload": "sweeep"}], reg, Overrides())
    with pytest.raises(UsageError, match="below the minimum"):
        expand([{"workload": "sweep"}], reg, Overrides(params={"msf": ["0"]}))
    with pytest.raises(UsageError, match="expected int"):
        expand([{"workload": "sweep", "params": {"msf": "many"}}], reg, Overrides())
    with pytest.raises(UsageError, match="no selected workload has such a param"):
        expand([{"workload": "sweep"}], reg, Overrides(params={"nope": ["1"]}))
    with pytest.raises(UsageError, match="unknown backend"):
        expand([{"workload": "sweep"}], reg, Overrides(backends=["mkl"]))
    with pytest.raises(UsageError, match="NAME=VALUE"):
        parse_param_options(["msf"])


class Relative(Sweep):
    name = "relative"
    claims = [Claim("t", ">", 1.0, relative_to={"msf": 1}, transform="speedup")]


def test_baselines_of_relative_claims_run_first() -> None:
    class Both:
        @hookimpl
        def harness_workloads(self):
            return [Sweep(), Relative()]

    reg = build_registry([("t:both", Both())], entry_points=False)
    entries = [{"workload": "sweep", "params": {"msf": [8]}},
               {"workload": ["relative", "sweep"], "params": {"msf": [4, 1, 16]}}]
    cases = expand(entries, reg, Overrides())
    # relative's baseline (msf=1) moves up to relative's first case; everything else keeps its place
    assert [(c.workload, c.params["msf"]) for c in cases] == [
        ("sweep", 8), ("relative", 1), ("relative", 4), ("relative", 16), ("sweep", 4), ("sweep", 1), ("sweep", 16)]
