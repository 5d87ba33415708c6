"""A hostile user's campaign against ``harness``: random kills and signals mid-run, and bad inputs
through every entry point, and the red team of issue 24 (plugins that exit, hang or flood at
import, malformed workloads, metric values no reader could read, FIFOs and devices where results
belong, controls under signals). Prints the counts (kills, bad inputs, probes, tracebacks, wrong
exit codes, hangs, torn, lost or unreadable records, duplicates, leftover processes) and exits 1
if any count that must be zero is not.

    .venv/bin/python benchmarks/robustness_campaign.py --kills 30 --seed 1

It installs the test plugins (tests/fixtures/testplugin: sleeping, orphan-making and failing
workloads) into a temporary folder and works only in temporary folders. Random moments come from
``--seed``, so a campaign can be repeated.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import tempfile
import time

from harness.launch.process_guard import descendants
from harness.results.store import parse_line

ROOT = pathlib.Path(__file__).resolve().parent.parent
HARNESS = pathlib.Path(sys.executable).with_name("harness")
SIGNALS = [signal.SIGKILL, signal.SIGKILL, signal.SIGHUP, signal.SIGTERM, signal.SIGINT]


def _alive(pid: int) -> bool:
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3] != b"Z"


class Campaign:
    def __init__(self, plugins: pathlib.Path, work: pathlib.Path) -> None:
        self.env = dict(os.environ, PYTHONPATH=str(plugins))
        self.work = work
        self.counts = {"kills and signals": 0, "bad inputs": 0, "tracebacks": 0, "unexpected exit codes": 0,
                       "torn or unreadable lines": 0, "duplicate records after --resume": 0,
                       "lost records": 0, "processes alive 2 s after the harness": 0, "injected lines": 0,
                       "red-team probes": 0, "hangs": 0, "floods": 0, "lost or unreadable records": 0,
                       "passes without evidence": 0, "non-strict JSON": 0}
        self.failures: list[str] = []

    def harness(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        # In the campaign's own folder: a relative hostile --out must not land in the caller's folder.
        return subprocess.run([str(HARNESS), *args], env=self.env, text=True, capture_output=True, timeout=timeout,
                              cwd=self.work)

    def _bad(self, what: str, count: str) -> None:
        self.counts[count] += 1
        self.failures.append(what)

    # -- kills ------------------------------------------------------------------------------
    def kill_once(self, i: int, rng: random.Random) -> None:
        out = self.work / f"kill{i}"
        seconds = rng.choice([0.3, 1.0, 3.0])
        if rng.random() < 0.5:   # one rank: a case that leaves a child in its own session and a daemon
            args = ["run", "--workload", "fault_orphans,fault_slow", "--param", f"seconds={seconds}"]
        else:                    # two ranks under mpiexec and its proxies. (Not fault_orphans: under mpiexec
            # a daemon holding the rank's stdout keeps mpiexec waiting until the case's timeout.)
            args = ["run", "--workload", "fault_slow", "--param", f"seconds={seconds}", "--param", "tag=0,1",
                    "--ranks", "2"]
        args += ["--repeats", "2", "--warmup", "0", "--timeout", "120", "--out", str(out)]
        proc = subprocess.Popen([str(HARNESS), *args], env=self.env, text=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, cwd=self.work,
                                # SIGINT as a terminal delivers it, even when this script runs in the background
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        end = time.monotonic() + rng.uniform(0.1, 6.0)
        seen: set[int] = set()
        while time.monotonic() < end and proc.poll() is None:
            seen |= set(descendants(proc.pid))
            time.sleep(0.02)
        sig = rng.choice(SIGNALS)
        seen |= set(descendants(proc.pid))
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass
        self.counts["kills and signals"] += 1
        _, err = proc.communicate(timeout=60)
        time.sleep(2.0)
        left = [p for p in seen if _alive(p)]
        if left:
            self._bad(f"kill {i} ({sig.name}): {len(left)} processes alive 2 s later",
                      "processes alive 2 s after the harness")
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        if "Traceback" in err:
            self._bad(f"kill {i} ({sig.name}): traceback\n{err[-800:]}", "tracebacks")
        before = self._check_lines(out / "results.jsonl", f"kill {i}")
        r = self.harness(*args, "--resume")
        if "Traceback" in r.stderr:
            self._bad(f"resume {i}: traceback\n{r.stderr[-800:]}", "tracebacks")
        after = self._check_lines(out / "results.jsonl", f"resume {i}")
        ok_ids = [rec["case_id"] for rec in after if rec.get("status") == "ok"]
        if len(ok_ids) != len(set(ok_ids)):
            self._bad(f"resume {i}: duplicate ok records", "duplicate records after --resume")
        if len(after) < len(before) or r.returncode != 0:
            self._bad(f"resume {i}: exit {r.returncode}, {len(before)} records before, {len(after)} after",
                      "lost records")

    def _check_lines(self, path: pathlib.Path, what: str) -> list[dict]:
        if not path.exists():
            return []
        recs = []
        for n, line in enumerate(path.read_text().splitlines(), 1):
            try:
                recs.append(json.loads(line))
            except ValueError:
                self._bad(f"{what}: {path}:{n} unreadable", "torn or unreadable lines")
        return recs

    # -- bad inputs -------------------------------------------------------------------------
    def bad_inputs(self) -> None:
        w = self.work / "bad"
        w.mkdir()
        out = str(w / "out")
        run = ["run", "--workload", "fault_slow", "--repeats", "1", "--warmup", "0"]
        cases: list[list[str]] = []
        for v in ["nan", "inf", "-inf", "1e309", "0", "-1", "1e-9", "abc", ""]:
            cases.append([*run, f"--timeout={v}", "--out", out])
        for flag in ["--ranks", "--threads", "--repeats", "--warmup"]:
            for v in ["-1", "0", "1e9", "99999999999", "x", "nan", ""]:
                cases.append([*run, f"{flag}={v}", "--out", out])
        for v in ["seconds=nan", "seconds=inf", "seconds=-1", "seconds=0.1,0.1", "seconds=", "nope=1",
                  "seconds=1e309", "tag=1.5", "tag=99999999999999999999999", "=", "seconds"]:
            cases.append([*run, "--param", v, "--out", out])
        for v in ["", "/proc/x", "/dev/null", "\x01", "a\nb"]:
            cases.append([*run, "--out", v])
        cases.append(["run", "--workload", "cnn_scaling", "--size", "smoke", "--param", "latency_us=0,nan,1",
                      "--out", out])
        cases.append(["run", "--workload", "no_such", "--out", out])
        cases.append(["run", "--suite", "no_such", "--out", out])
        cases.append(["run", "--workload", "fault_slow", "--backend", "no_such", "--out", out])
        suites = ["workload = 5", 'workload = ["fault_slow", 7]', 'workload = "fault_slow"\nbackend = 5',
                  'workload = "fault_slow"\nsize = ["smoke"]', 'workload = "fault_slow"\ntimeout = "abc"',
                  'workload = "fault_slow"\ntimeout = nan', 'workload = "fault_slow"\ntimeout = -1',
                  'workload = "fault_slow"\n[params]\nseconds = nan', "[[[", "workload = \"fault_slow\"\nx = 1"]
        for n, body in enumerate(suites):
            path = w / f"suite{n}.toml"
            path.write_text(body)
            cases.append(["run", "--suite", str(path), "--out", out])
        (w / "latin1.toml").write_bytes("workload = \"caf\xe9\"".encode("latin-1"))
        cases.append(["run", "--suite", str(w / "latin1.toml"), "--out", out])
        injected = "touch /tmp/pwned-campaign"
        for flag in ["--job-name", "--partition", "--account", "--sbatch-arg", "--launcher-arg"]:
            for v in [f"x\n{injected}", f"x\r{injected}", "../../x", f"x;{injected}", "$(id)"]:
                cases.append(["submit", "--workload", "fault_slow", f"{flag}={v}", "--dry-run", "--out", out])
        cases.append(["submit", "--workload", "fault_slow", "--dry-run", "--out", f"{out}\n{injected}"])
        hostile = self._hostile_results(w / "h")
        for args in (["show", hostile], ["report", hostile, "--out", str(w / "r.md")],
                     ["report", hostile, "--out", str(w / "r.html")], ["report", hostile, "--out", str(w / "r.csv")],
                     ["compare", hostile, hostile], ["show", str(w / "missing")], ["compare", hostile, str(w)],
                     ["list", "workloads"], ["info"]):
            cases.append(list(args))
        for args in cases:
            self.counts["bad inputs"] += 1
            try:
                r = self.harness(*args, timeout=120)
            except subprocess.TimeoutExpired:
                self._bad(f"{args}: hung for 120 s", "unexpected exit codes")
                continue
            if "Traceback" in r.stderr or "Traceback" in r.stdout:
                self._bad(f"{args}: traceback\n{r.stderr[-600:]}", "tracebacks")
            if r.returncode not in (0, 1, 2):
                self._bad(f"{args}: exit {r.returncode}", "unexpected exit codes")
        for script in (pathlib.Path(out) / "slurm").glob("*"):
            if any(line.strip() == injected or line.strip().startswith("touch ") for line in
                   script.read_text(errors="replace").splitlines()):
                self._bad(f"{script}: injected line", "injected lines")
        for report in w.glob("r.*"):
            text = report.read_text(errors="replace")
            if ("<script>" in text and report.suffix != ".csv") or ",=HYPER" in text:
                self._bad(f"{report}: markup or formula passed through", "injected lines")

    # -- red team (issue 24): hostile plugins, hostile values, odd files --------------------
    def _probe(self, args: list[str], ok_codes: tuple[int, ...], env: dict[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess[str] | None:
        self.counts["red-team probes"] += 1
        try:
            r = subprocess.run([str(HARNESS), *args], env=dict(self.env, **(env or {})), text=True,
                               capture_output=True, timeout=timeout, cwd=self.work)
        except subprocess.TimeoutExpired:
            self._bad(f"{args}: hung for {timeout:g} s", "hangs")
            return None
        if "Traceback" in r.stdout or "Traceback" in r.stderr.split("plugin problem")[0]:
            self._bad(f"{args}: traceback\n{r.stderr[-600:]}", "tracebacks")
        if r.returncode not in ok_codes:
            self._bad(f"{args}: exit {r.returncode}, expected {ok_codes}: {r.stderr[-300:]}", "unexpected exit codes")
        if len(r.stdout) + len(r.stderr) > 2**20:
            self._bad(f"{args}: {len(r.stdout) + len(r.stderr)} characters of output", "floods")
        return r

    def _readable(self, out: pathlib.Path, expect: int) -> None:
        """Every line the harness wrote in ``out`` reads back as a record."""
        lines = [ln for ln in (out / "results.jsonl").read_text().splitlines() if ln.strip()] \
            if (out / "results.jsonl").is_file() else []
        readable = 0
        for line in lines:
            record, _ = parse_line(line)
            readable += record is not None
        if readable != expect or len(lines) != expect:
            self._bad(f"{out}: {readable} readable of {len(lines)} lines, expected {expect}", "lost or unreadable records")

    def evidence(self) -> None:
        """Issue 55: no check passes, or exits 0, without evidence, and every --json is strict JSON."""
        w = self.work / "evidence"
        case = ["--workload", "fault_slow", "--param", "seconds=0.01", "--repeats", "4", "--warmup", "0"]
        for run in ("ref", "ref", "one"):
            self._probe(["run", *case, "--out", str(w / run)], (0,))
        ref = [json.loads(ln) for ln in (w / "ref" / "results.jsonl").read_text().splitlines() if ln.strip()]
        one = w / "one"

        def folder(name: str, records: list[dict]) -> pathlib.Path:
            (w / name).mkdir(parents=True, exist_ok=True)
            (w / name / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
            return w / name

        n = len(ref[0]["samples"])
        bad = {"infinite": [dict(ref[0], samples=[float("inf")] * n)],
               "huge": [dict(ref[0], samples=[1.7e308] * n)]}
        for name, records in bad.items():     # a reference of no evidence is refused
            r = self._probe(["check", "--reference", str(folder(name, records)), str(one)], (2,))
            if r is not None and r.returncode == 0:
                self._bad(f"check against a {name} reference exited 0", "passes without evidence")
        checks = {}
        for name, records in {"once": ref[:1], "ten times": ref[:1] * 10, "mixed": ref[:1] + bad["infinite"]}.items():
            out = w / f"check-{name}.json"
            self._probe(["check", "--reference", str(folder(name, records)), str(one), "--json", str(out)], (0, 1))
            checks[name] = self._strict(out.read_text(), f"check --json ({name})") if out.exists() else None
        if checks["once"] and checks["ten times"] and checks["once"][0]["status"] != checks["ten times"][0]["status"]:
            self._bad("one run written ten times judged otherwise than once", "passes without evidence")
        if checks["mixed"] and checks["mixed"][0]["reference_runs"] != [ref[0]["run_id"]]:
            self._bad("an Infinity run was pooled", "passes without evidence")
        for args in (["compare", str(w / "ref"), str(one), "--json"], ["history", str(w / "ref"), "--json"]):
            r = self._probe(args, (0, 1))
            if r is not None:
                self._strict(r.stdout, " ".join(args[:1] + ["--json"]))

    def _strict(self, text: str, what: str):
        def refuse(constant: str):
            raise ValueError(constant)
        try:
            return json.loads(text, parse_constant=refuse)
        except ValueError as exc:
            self._bad(f"{what}: not strict JSON ({str(exc)[:80]})", "non-strict JSON")
            return None

    def red_team(self) -> None:
        sys.path.insert(0, str(ROOT / "tests"))
        from fixtures.hostile_plugins import AT_IMPORT, MALFORMED, SLOW_CONTROL, VALUES, make_plugin

        w = self.work / "red"
        quick = ["--workload", "fault_slow", "--param", "seconds=0.01", "--repeats", "1", "--warmup", "0"]
        for name, source in {**AT_IMPORT, "malformed": MALFORMED}.items():
            site = w / "sites" / name
            make_plugin(site, name, source)
            env = {"PYTHONPATH": f"{site}{os.pathsep}{self.env['PYTHONPATH']}", "HARNESS_PLUGIN_IMPORT_TIMEOUT": "3"}
            out = w / f"plugin-{name}"
            self._probe(["run", *quick, "--out", str(out)], (0,), env)
            self._readable(out, 1)
            self._probe(["list"], (0,), env)
        site = w / "sites" / "values"
        make_plugin(site, "values_plugin", VALUES)
        make_plugin(site, "slow_control_plugin", SLOW_CONTROL)
        env = {"PYTHONPATH": f"{site}{os.pathsep}{self.env['PYTHONPATH']}"}
        out = w / "values"
        kinds = ["big", "string", "bool", "list", "nan", "keys", "surrogate", "huge_reason", "huge_metric"]
        for kind in kinds:
            self._probe(["run", "--workload", "values", "--param", f"kind={kind}", "--repeats", "1", "--warmup", "0",
                         "--out", str(out)], (0, 1), env, timeout=300)
        self._readable(out, len(kinds))
        self._probe(["show", str(out)], (0,), env)
        self._probe(["report", str(out), "--out", str(w / "values.parquet")], (0,), env)
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.counts["red-team probes"] += 1
            cout = w / f"controls-{sig.name}"
            proc = subprocess.Popen([str(HARNESS), "controls", "--workload", "slow_control", "--out", str(cout)],
                                    env=dict(self.env, **env), text=True, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, cwd=self.work,
                                    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (cout / "results.jsonl").exists():
                time.sleep(0.2)
            time.sleep(3)
            proc.send_signal(sig)
            try:
                _, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                self._bad(f"controls under {sig.name}: hung", "hangs")
                continue
            if proc.returncode != 128 + sig or "Traceback" in err:
                self._bad(f"controls under {sig.name}: exit {proc.returncode}\n{err[-400:]}", "unexpected exit codes")
            self._readable(cout, 1)
        odd = w / "odd"
        for name, make in (("fifo", lambda p: os.mkfifo(p)), ("full", lambda p: p.symlink_to("/dev/full")),
                           ("null", lambda p: p.symlink_to("/dev/null")), ("dir", lambda p: p.mkdir())):
            folder = odd / name
            folder.mkdir(parents=True)
            make(folder / "results.jsonl")
            self._probe(["run", *quick, "--out", str(folder)], (2,), timeout=60)
            for args in (["show", str(folder)], ["report", str(folder)], ["compare", str(folder), str(folder)]):
                self._probe(args, (2,), timeout=60)
        values = ",".join(f"{0.001 * (i + 1):.3f}" for i in range(200))
        threads = ",".join(str(i + 1) for i in range(60))
        self._probe(["run", "--workload", "fault_slow", "--param", f"seconds={values}", "--threads", threads,
                     "--dry-run"], (2,), timeout=60)

    def _hostile_results(self, folder: pathlib.Path) -> str:
        folder.mkdir()
        r = self.harness("run", "--workload", "fault_slow", "--param", "seconds=0.01", "--repeats", "1",
                         "--warmup", "0", "--out", str(folder))
        rec = json.loads((folder / "results.jsonl").read_text().splitlines()[0])
        lines = []
        for text in ["/data/[/]x[bold]y", "$\\foo{$", "<script>alert(1)</script>", "=HYPERLINK(\"http://x\")",
                     "25:50:100", "\x1b[31mred", "\u202eevil"]:
            lines.append(json.dumps(dict(rec, id=os.urandom(8).hex(), case_id=text, reason=text,
                                         params={"seconds": text})))
        lines.append(json.dumps(dict(rec, id="nan", samples=[float("nan"), 1.0])))
        lines.append(json.dumps(dict(rec, id="ci", stats=dict(rec["stats"], ci95=[None, None]))))
        lines += ["[" * 100000, "9" * 5000, "{" * 70 + "}" * 70, "garbage", "\x00\x01", '{"schema_version": 99}']
        (folder / "results.jsonl").write_text("\n".join(lines) + "\n")
        assert r.returncode == 0
        return str(folder)


# The output-boundary family (issue 44): what each breach string of tests/fixtures/output_family.py counts as.
BREACH_KINDS = {"raw escapes": ("raw ",), "broken Markdown": ("table row", "injected heading", "raw HTML", "image to",
                                                            "link_open to"),
                "live CSV formulas": ("live formula",), "tracebacks": ("traceback",),
                "writes outside the target": ("outside",), "other failures": ("",)}


def output_family(plugins: pathlib.Path, work: pathlib.Path) -> dict[str, int]:
    """Every payload alone, through every reader verb and output kind, a run of a plugin that
    returns it as a metric name and raises it as a message (terminal and JUnit), and a capture into
    a folder with a planted link: the counts of probes, payloads and each kind of breach."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fixtures.hostile_plugins import loud_plugin, make_plugin
    from fixtures.output_family import (PAYLOADS, junit_breaches, probes, run_probe, terminal_breaches,
                                        write_results)

    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(plugins))
    site = work / "site"
    make_plugin(site, "loud_plugin", loud_plugin(list(PAYLOADS.values())))
    run_env = dict(env, PYTHONPATH=f"{site}{os.pathsep}{plugins}")

    def harness(*args: str, environment: dict[str, str] = env) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(HARNESS), *args], env=environment, text=True, capture_output=True, timeout=600,
                              cwd=work)

    counts = {"payloads": len(PAYLOADS), "probes": 0, **{k: 0 for k in BREACH_KINDS}}
    found: list[str] = []

    def count(what: str, breaches: list[str]) -> None:
        counts["probes"] += 1
        for b in breaches:
            kind = next(k for k, starts in BREACH_KINDS.items() if any(s in b for s in starts))
            counts[kind] += 1
            found.append(f"{what}: {b}")

    for i, (name, payload) in enumerate(PAYLOADS.items()):
        a, b, out = work / f"p{i}" / "a", work / f"p{i}" / "b", work / f"p{i}"
        write_results(a, [payload], "a")
        write_results(b, [payload], "b")
        for verb, kind, args, check in probes(a, b, out):
            count(f"{name} / {verb} -> {kind}", run_probe(harness, args, check))
        junit = out / "junit.xml"
        r = harness("run", "--workload", "loud", "--param", f"which={i}", "--param", "fail=0,1", "--repeats", "1",
                    "--warmup", "0", "--out", str(out / "run"), "--junit", str(junit), environment=run_env)
        breaches = terminal_breaches(r.stdout + r.stderr) + (["traceback"] if "Traceback" in r.stderr else [])
        count(f"{name} / run -> terminal", breaches)
        count(f"{name} / run -> junit", junit_breaches(junit.read_text()) if junit.is_file() else ["junit not written"])
        r = harness("submit", "--dry-run", "--workload", "loud", "--out", str(out / "sub%j"), environment=run_env)
        count(f"{name} / submit -> slurm", [] if f"--output={out}/sub%%j/" in r.stdout else ["% reached Slurm"])
    for entry in ("results", "README.txt", "manifest.json"):
        cap, elsewhere = work / f"cap-{entry}", work / f"elsewhere-{entry}"
        cap.mkdir()
        elsewhere.mkdir()
        if entry != "manifest.json":
            (cap / "manifest.json").write_text('{"machine": "x", "machine_key": "m-000000000000"}')
        (cap / entry).symlink_to(elsewhere if entry == "results" else elsewhere / "f")
        r = harness("capture", str(cap), "--suite", "smoke")
        count(f"capture with a linked {entry}", ([f"wrote outside the target: {list(elsewhere.iterdir())}"]
                                                 if any(elsewhere.iterdir()) else [])
              + (["traceback"] if "Traceback" in r.stderr else []))
    for f in found:
        print("BREACH:", f)
    return counts


def write_doc_figures(doc: pathlib.Path, counts: dict[str, int], command: str) -> None:
    """The family's counts into ``doc`` between its markers (the only figures of the page)."""
    start, end = "<!-- output-family:start -->", "<!-- output-family:end -->"
    text = doc.read_text()
    if start not in text or end not in text:
        raise SystemExit(f"{doc}: no {start} ... {end} markers to write the figures between")
    rows = "\n".join(f"| {k} | {v} |" for k, v in counts.items())
    block = (f"{start}\n<!-- Generated by `{command}`; do not edit by hand. -->\n\n| | count |\n|---|---|\n"
             f"{rows}\n{end}")
    doc.write_text(text[:text.index(start)] + block + text[text.index(end) + len(end):])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=20, help="random kills/signals of a running harness (default 20)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--family", choices=["all", "output"], default="all",
                    help="output: only the output-boundary family (every verb x output kind x payload)")
    ap.add_argument("--doc", type=pathlib.Path, help="write the output family's counts into this page (docs/robustness.md)")
    args = ap.parse_args()
    if not HARNESS.exists():
        sys.exit(f"no harness command next to {sys.executable}: install the project into this venv first")
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="harness-campaign-") as tmp:
        plugins, work = pathlib.Path(tmp) / "plugins", pathlib.Path(tmp) / "work"
        work.mkdir()
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                        "--target", str(plugins), str(ROOT / "tests" / "fixtures" / "testplugin")],
                       check=True, capture_output=True)
        t0 = time.monotonic()
        family = output_family(plugins, work / "output-family")
        for name, n in family.items():
            print(f"{'output family: ' + name:42s} {n}")
        if args.doc:
            write_doc_figures(args.doc, family, "python benchmarks/robustness_campaign.py --family output --doc "
                                                f"{args.doc}")
        breached = sum(family[k] for k in BREACH_KINDS)
        if args.family == "output":
            return 1 if breached else 0
        c = Campaign(plugins, work)
        c.bad_inputs()
        c.red_team()
        c.evidence()
        for i in range(args.kills):
            c.kill_once(i, rng)
            print(f"\rkill {i + 1}/{args.kills}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    for name, n in c.counts.items():
        print(f"{name:42s} {n}")
    print(f"{'minutes':42s} {(time.monotonic() - t0) / 60:.1f}")
    for f in c.failures:
        print("FAIL:", f)
    return 1 if c.failures or breached else 0


if __name__ == "__main__":
    sys.exit(main())
