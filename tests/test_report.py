"""harness report / compare on real results files, and the HTML in headless Chromium."""
import copy
import json
import pathlib
import shutil
import subprocess

import pytest

from conftest import read_jsonl
from harness.report.compare import compare
from harness.results.frame import load_frame
from harness.results.record import Record
from harness.results.store import append_record

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def two_runs(harness_cli, tmp_path_factory):
    """The same workload with 1 and 2 threads, in two results files (as from two machines)."""
    base = tmp_path_factory.mktemp("runs")
    for threads in ("1", "2"):
        r = harness_cli("run", "--workload", "probe", "--threads", threads, "--repeats", "5",
                        "--param", "sleep_ms=2", "--out", str(base / f"t{threads}"))
        assert r.returncode == 0, r.stderr
    return base / "t1" / "results.jsonl", base / "t2" / "results.jsonl"


def _md_rows(text: str, workload: str) -> list[list[str]]:
    section = text.split(f"## {workload}\n", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ")][1:]
    return [[c.strip() for c in ln.strip("|").split(" | ")] for ln in lines]


def test_markdown_numbers_match_the_records(harness_cli, two_runs) -> None:
    r = harness_cli("report", *map(str, two_runs))
    assert r.returncode == 0, r.stderr
    rows = _md_rows(r.stdout, "probe")
    records = [read_jsonl(p)[0] for p in two_runs]
    assert len(rows) == 2
    for rec in records:
        threads = f"1x{rec['launch']['threads']}"
        row = next(row for row in rows if row[5] == threads)
        assert row[7] == f"{rec['stats']['median']:.4g}"
        lo, hi = rec["stats"]["ci95"]
        assert row[8] == f"[{lo:.4g}, {hi:.4g}]"
        assert row[11] == f"{rec['comm']['total']['fraction_max']:.3f}"
        assert row[13] == "" or " J" in row[13]           # energy: empty where not measurable (this VM)
        assert row[14] == "1 pass, 1 fail, 1 not evaluated"
    assert "## Reproduction summary: paper claims" in r.stdout and "FAIL" in r.stdout


def test_html_is_self_contained_and_escaped(harness_cli, two_runs, tmp_path) -> None:
    hostile = copy.deepcopy(read_jsonl(two_runs[0])[0])
    hostile["reason"] = "<script>alert('x')</script>"
    hostile["id"] = "f" * 32
    extra = tmp_path / "hostile.jsonl"
    append_record(extra, Record.from_json(hostile))
    out = tmp_path / "report.html"
    r = harness_cli("report", *map(str, two_runs), str(extra), "--out", str(out))
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert page.count("data:image/png;base64,") >= 2
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "http://" not in page and "https://" not in page


def test_comm_counted_by_the_python_wrapper_is_marked(harness_cli, two_runs, tmp_path) -> None:
    records = [read_jsonl(p)[0] for p in two_runs]
    assert {rec["protocol"]["allreduce_profiler"] for rec in records} <= {"pmpi", "python"}
    wrapped = copy.deepcopy(records[1])
    wrapped["protocol"].update(allreduce_profiler="python", allreduce_profiler_note="HARNESS_PMPI=0")
    mixed = tmp_path / "mixed.jsonl"
    append_record(mixed, Record.from_json(dict(records[0], protocol=dict(records[0]["protocol"],
                                                                          allreduce_profiler="pmpi"))))
    append_record(mixed, Record.from_json(wrapped))
    r = harness_cli("report", str(mixed))
    assert r.returncode == 0, r.stderr
    rows = {row[5]: row for row in _md_rows(r.stdout, "probe")}
    assert rows[f"1x{wrapped['launch']['threads']}"][11].endswith(" (py)")
    assert not rows[f"1x{records[0]['launch']['threads']}"][11].endswith(" (py)")
    assert "counted by the Python wrapper" in r.stdout


def test_corrupt_line_in_the_middle_is_named_and_skipped(harness_cli, two_runs, tmp_path) -> None:
    lines = two_runs[0].read_text().splitlines() + two_runs[1].read_text().splitlines()
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(lines[0] + "\n{not json\n" + lines[1] + "\n")
    r = harness_cli("report", str(mixed))
    assert r.returncode == 0
    assert f"{mixed}:2:" in r.stderr.replace("\n", "")
    assert len(_md_rows(r.stdout, "probe")) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text("garbage\n")
    r = harness_cli("report", str(bad))
    assert r.returncode == 2 and "no readable records" in r.stderr


def test_csv_and_parquet(harness_cli, two_runs, tmp_path) -> None:
    import pandas as pd

    assert harness_cli("report", *map(str, two_runs), "--out", str(tmp_path / "r.csv")).returncode == 0
    csv = pd.read_csv(tmp_path / "r.csv")
    assert len(csv) == 2 and "metric.answer" in csv.columns and set(csv.threads) == {1, 2}
    pytest.importorskip("pyarrow")
    assert harness_cli("report", *map(str, two_runs), "--out", str(tmp_path / "r.parquet")).returncode == 0
    assert len(pd.read_parquet(tmp_path / "r.parquet")) == 2
    r = harness_cli("report", str(two_runs[0]), "--out", str(tmp_path / "r.docx"))
    assert r.returncode == 2 and "--format" in r.stderr


def test_jsonl_kind_is_one_strict_json_object_per_record_like_the_csv(harness_cli, two_runs, tmp_path) -> None:
    """The kind docs/architecture.md adds as its example: one module plus one row in KINDS."""
    import pandas as pd

    def strict(text: str):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))

    assert harness_cli("report", *map(str, two_runs), "--out", str(tmp_path / "r.jsonl")).returncode == 0
    rows = [strict(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    streamed = harness_cli("report", *map(str, two_runs), "--format", "jsonl")
    assert [strict(line) for line in streamed.stdout.splitlines()] == rows
    assert harness_cli("report", *map(str, two_runs), "--out", str(tmp_path / "r.csv")).returncode == 0
    csv = pd.read_csv(tmp_path / "r.csv")
    assert len(rows) == len(csv) == 2 and set(rows[0]) == set(csv.columns)
    assert [r["metric.answer"] for r in rows] == list(csv["metric.answer"])
    assert "jsonl: one JSON object per record" in harness_cli("report", "--help").stdout


def test_compare_verdicts_and_exit_status(harness_cli, two_runs, tmp_path) -> None:
    r = harness_cli("compare", *map(str, two_runs))
    assert r.returncode in (0, 1) and "verdicts:" in r.stdout
    # A candidate twice as slow on every sample is a significant regression: exit 1. The samples are
    # set, not measured: on a shared machine one slow outlier among 5 measured samples can overlap the
    # doubled ones enough that Mann-Whitney (5 vs 5) no longer reaches p < 0.05 (CI saw it once).
    steady = copy.deepcopy(read_jsonl(two_runs[0])[0])
    steady["samples"] = [0.0100, 0.0101, 0.0099, 0.0102, 0.0098]
    steady["stats"] = dict(steady["stats"], median=0.0100)
    slow = copy.deepcopy(steady)
    slow["samples"] = [2 * s for s in steady["samples"]]
    slow["stats"] = dict(steady["stats"], median=0.0200)
    steady_file, slow_file = tmp_path / "steady.jsonl", tmp_path / "slow.jsonl"
    append_record(steady_file, Record.from_json(steady))
    append_record(slow_file, Record.from_json(slow))
    r = harness_cli("compare", str(steady_file), str(slow_file))
    assert r.returncode == 1 and "slower" in r.stdout
    base, _ = load_frame([steady_file])
    cand, _ = load_frame([slow_file])
    (result,) = compare(base, cand)
    assert result.ratio == pytest.approx(2.0) and result.p_value < 0.05
    # The control: the same samples on both sides are no change, and exit 0.
    r = harness_cli("compare", str(steady_file), str(steady_file))
    assert r.returncode == 0 and "no significant change" in r.stdout
    r = harness_cli("compare", str(slow_file), str(steady_file), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)[0]["verdict"] == "faster"


def test_emulated_timings_are_marked_and_never_a_verdict(harness_cli, two_runs, tmp_path) -> None:
    """A record made under qemu-user keeps its results and claims, but its time is marked in the
    report and `compare` refuses a faster/slower verdict on it (even at twice the time)."""
    emu = copy.deepcopy(read_jsonl(two_runs[0])[0])
    emu["hardware"]["emulation"] = {"emulated": True, "evidence": "runs as aarch64, cpuinfo describes x86_64"}
    emu["samples"] = [2 * s for s in emu["samples"]]
    emu["stats"] = dict(emu["stats"], median=2 * emu["stats"]["median"])
    emu_file = tmp_path / "emu.jsonl"
    append_record(emu_file, Record.from_json(emu))
    r = harness_cli("report", str(two_runs[0]), str(emu_file))
    assert r.returncode == 0, r.stderr
    rows = _md_rows(r.stdout, "probe")
    assert sum(row[7].endswith("(emulated)") for row in rows) == 1
    assert any(row[2].endswith("[emulated]") for row in rows) and "binary translation" in r.stdout
    c = harness_cli("compare", str(two_runs[0]), str(emu_file), "--json")
    assert c.returncode == 0, c.stdout + c.stderr           # not "slower", so no CI failure
    assert json.loads(c.stdout)[0]["verdict"].startswith("not comparable: emulated")


@pytest.mark.slow
def test_html_renders_in_headless_chromium(harness_cli, two_runs, tmp_path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    out = tmp_path / "report.html"
    assert harness_cli("report", *map(str, two_runs), "--out", str(out)).returncode == 0
    shot = tmp_path / "report.png"
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
                        "--window-size=1400,2000", f"--screenshot={shot}", out.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 20_000, r.stderr[-2000:]
    console = [ln for ln in r.stderr.splitlines() if "CONSOLE" in ln]
    assert console == []


def test_reproduction_summary_leaves_out_claims_that_do_not_apply() -> None:
    import pandas as pd

    from harness.report.tables import claim_rows

    claims = [{"metric": "t", "comparison": ">", "threshold": 1.0, "measured": 2.0, "status": "pass",
               "has_control": True},
              {"metric": "u", "comparison": ">", "threshold": 1.0, "measured": None, "status": "not_applicable",
               "reason": "applies only when x == 1 (here x=2)"},
              {"metric": "v", "comparison": ">", "threshold": 1.0, "measured": None, "status": "not_evaluated",
               "reason": "metric 'v' was not reported by this case"}]
    df = pd.DataFrame([{"workload": "w", "params": "{}", "machine": "m", "backend": "default", "status": "ok",
                        "control": "", "claims": claims, "ranks": 1, "threads": 1},
                       {"workload": "w", "params": "{}", "machine": "m", "backend": "default", "status": "ok",
                        "control": "control", "claims": claims, "ranks": 1, "threads": 1}])
    rows = claim_rows(df)   # the second row is a control case: never in the reproduction summary
    assert [row[1] for row in rows] == ["t > 1", "v > 1"]
    assert rows[0][4] == "pass"
    assert rows[1][4].startswith("not evaluated: metric 'v'") and rows[1][4].endswith("(no control declared)")


def test_the_cascade_plot_of_performance_portability_is_drawn_whole_and_named_in_chromium(harness_cli, tmp_path) -> None:
    """The html report of the gallery's machines draws each shared workload's PP as a cascade
    (efficiency per machine, most efficient first; PP of the machines so far): every text of the
    figure lies inside it, each line's last point is the PP the table gives, and Chromium renders
    the page with the figure and its numbered legend naming every machine in full."""
    import re

    from harness.report.machines import portability
    from harness.report.plots import cascade_axes, cascade_figure

    machines = [ROOT / "gallery" / "amd-epyc-zen4-2c", ROOT / "gallery" / "intel-xeon-amx-2c"]
    df, _ = load_frame(machines, frozenset({"samples", "claims"}))
    entries = [e for e in portability(df) if e.get("efficiency")]
    assert len(entries) >= 2
    fig, legend = cascade_axes(entries)
    fig.canvas.draw()
    box = fig.bbox
    for text in fig.findobj(lambda a: hasattr(a, "get_text") and a.get_text() and a.get_visible()):
        extent = text.get_window_extent()
        assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1 and box.y0 - 1 <= extent.y0 and extent.y1 <= box.y1 + 1, text.get_text()
    for e, line in zip(entries, [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "-"]):
        assert line.get_ydata()[-1] == pytest.approx(e["pp_app"]), e["workload"]
    assert legend == [f"{i}: {m}" for i, m in enumerate(dict.fromkeys(m for e in entries for m in e["efficiency"]), 1)]
    assert cascade_figure([]) == [] and cascade_figure([dict(entries[0], efficiency={"a": 1.0})]) == []

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    html = tmp_path / "r.html"
    assert harness_cli("report", *map(str, machines), "--out", str(html)).returncode == 0
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", html.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    figure = re.search(r'<figure><img alt="performance portability: cascade per workload" src="data:image/png;base64,'
                       r'[A-Za-z0-9+/=]{1000,}">(.*?)</figure>', r.stdout, re.S)
    assert figure, "no cascade figure in the rendered page"
    items = re.findall(r"<li>(.*?)</li>", figure.group(1), re.S)
    assert items == legend


def test_the_headline_matrix_and_show_count_verdicts_after_the_correction(harness_cli, tmp_path) -> None:
    """Issue 54: the report's headline and its claims-per-machine matrix, and `harness show`,
    count each run's verdicts after Holm by default (as judged beside them); --correction none
    gives the verdicts as judged."""
    import re

    from harness.judging.claims import ClaimVerdict
    from harness.judging.multiplicity import corrected_statuses

    capture = ROOT / "gallery" / "intel-xeon-amx-2c"
    records = [r for r in read_jsonl(capture / "results" / "results.jsonl") if r["status"] == "ok" and not r["control"]]
    judged = [ClaimVerdict.from_json(c) for r in records for c in r["claims"]]
    after = [s for s in corrected_statuses(judged, "holm") if s != "not_applicable"]
    as_judged = [c.status for c in judged if c.status != "not_applicable"]
    assert after.count("pass") <= as_judged.count("pass")   # a correction only ever takes decisions away

    md = tmp_path / "r.md"
    assert harness_cli("report", str(capture), "--out", str(md)).returncode == 0
    head = next(line for line in md.read_text().splitlines() if line.startswith("## Reproduction summary"))
    assert f"after Holm (family-wise), each run's claims one family: {after.count('pass')} pass" in head
    assert f"as judged: {as_judged.count('pass')} pass" in head
    plain = tmp_path / "plain.md"
    assert harness_cli("report", str(capture), "--correction", "none", "--out", str(plain)).returncode == 0
    head = next(line for line in plain.read_text().splitlines() if line.startswith("## Reproduction summary"))
    assert head.startswith(f"## Reproduction summary: paper claims ({as_judged.count('pass')} pass") and "Holm" not in head

    shown = harness_cli("show", str(capture), env={"COLUMNS": "400"})
    assert shown.returncode == 0 and "claims (after Holm)" in " ".join(shown.stdout.split())
    lines = shown.stdout.splitlines()
    header = next(line for line in lines if "after Holm" in line).split("┃")
    at = next(i for i, cell in enumerate(header) if "after Holm" in cell)
    cells = [line.split("│")[at] for line in lines if line.startswith("│")]
    after_counts = [cell.split("(as judged")[0] for cell in cells]
    assert sum(int(m) for cell in after_counts for m in re.findall(r"(\d+) pass", cell)) == after.count("pass")
