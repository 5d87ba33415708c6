"""harness/plan.py in-process: suite tables x command line = cases, baselines first."""
from __future__ import annotations

import pytest

from harness.errors import UsageError
from harness.plan import Overrides, expand, parse_param_options, read_suite, within_limits
from harness.registry import build_registry

REG = build_registry()


def test_a_sweep_runs_the_baseline_first_whatever_order_it_is_listed_in() -> None:
    cases = expand([{"workload": "psgd_svm"}], REG,
                   Overrides(size="smoke", ranks=[2], params=parse_param_options(["msf=64,1"])))
    assert [c.params["msf"] for c in cases] == [1, 64]
    assert all(c.swept == {"msf": c.params["msf"]} and c.size == "smoke" and c.ranks == 2 for c in cases)


def test_the_command_line_overrides_the_table_and_the_defaults_fill_the_rest() -> None:
    (case,) = expand([{"workload": "roofline", "repeats": 7, "size": "small"}], REG,
                     Overrides(size="smoke", ranks=[1], threads=[1], warmup=0))
    assert (case.size, case.repeats, case.warmup, case.ranks, case.threads) == ("smoke", 7, 0, 1, 1)


@pytest.mark.parametrize(("entries", "overrides", "message"), [
    ([{"workload": "psgd_svm"}], Overrides(params={"msf": ["1", "1"]}), "lists a value twice"),
    ([{"workload": "psgd_svm"}], Overrides(params={"msff": ["1"]}), "no selected workload has such a param"),
    ([{"workload": "psgd_svm", "params": {"msff": [1]}}], Overrides(), "msf"),
    ([{"workload": "no_such"}], Overrides(), "unknown workload"),
])
def test_bad_selections_name_what_to_fix(entries, overrides, message) -> None:
    with pytest.raises(UsageError, match=message):
        expand(entries, REG, overrides)


def test_param_options_and_limits() -> None:
    assert parse_param_options(["msf=1,16", "dataset=x"]) == {"msf": ["1", "16"], "dataset": ["x"]}
    with pytest.raises(UsageError, match="NAME=VALUE"):
        parse_param_options(["msf"])
    assert within_limits("repeats", 3) and not within_limits("repeats", 0) and not within_limits("repeats", True)
    assert within_limits("timeout", 1.5) and not within_limits("timeout", float("inf"))


def test_a_suite_file_is_checked_with_the_file_named(tmp_path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('[[case]]\nworkload = "roofline"\nsize = "smoke"\n')
    assert read_suite(good)["case"] == [{"workload": "roofline", "size": "smoke"}]
    for name, text, message in [("bad.toml", "[[case]\n", "malformed TOML"),
                                ("keys.toml", '[[case]]\nworkload = "x"\nsizes = 1\n', "unknown keys"),
                                ("empty.toml", 'title = "x"\n', "unknown top-level keys|at least one")]:
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(UsageError, match=f"suite {path}: .*({message})"):
            read_suite(path)


def test_a_sizes_protocol_sets_launches_and_joined_arms_are_interleaved() -> None:
    """psgd_svm's timing claims at small come from 3 launches of 2 repeats, its msf case's launches
    interleaved with msf=1's; smoke (CI) keeps one launch; the command line still wins."""
    from harness.plan import interleaving_groups

    small = expand([{"workload": "psgd_svm"}], REG, Overrides(params=parse_param_options(["msf=64,1"])))
    assert [(c.repeats, c.launches) for c in small] == [(2, 3), (2, 3)]
    groups = interleaving_groups(small, REG)
    assert [c.params["msf"] for c in groups[small[1].case_id]] == [1, 64]
    smoke = expand([{"workload": "psgd_svm"}], REG, Overrides(size="smoke", params=parse_param_options(["msf=64,1"])))
    assert [c.launches for c in smoke] == [1, 1] and interleaving_groups(smoke, REG) == {}
    (one,) = expand([{"workload": "psgd_svm"}], REG, Overrides(launches=1, repeats=4))
    assert (one.repeats, one.launches) == (4, 1)


def test_a_size_protocol_naming_no_size_or_key_breaks_only_its_workload() -> None:
    from harness import Workload
    from harness.workload import checked_workload

    class Odd(Workload):
        name = "odd"
        size_protocol = {"huge": {"launches": 3}}

        def run(self, ctx):
            return {}

    workload, why = checked_workload(Odd)
    assert workload is None and "size_protocol" in why
    Odd.size_protocol = {"small": {"launches": 0}}
    assert "size_protocol" in checked_workload(Odd)[1]
    Odd.size_protocol = {"small": {"launches": 2, "repeats": 3}}
    workload, why = checked_workload(Odd)
    assert why == "" and workload.protocol_default("small", "launches") == 2
    assert workload.protocol_default("smoke", "launches") == 1 and workload.protocol_default("smoke", "repeats") is None
