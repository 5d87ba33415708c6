"""A machine is known, not guessed: its key and label from its own facts, its own peaks, and
reports that open with the machines and say how much faster each is."""
from __future__ import annotations

import csv
import json
import pathlib
import re

import pytest

from conftest import make_record, read_jsonl
from harness.hardware.fingerprint import describe_cpu
from harness.hardware.identity import identity, virtualisation
from harness.hardware.peaks import fraction_or_problem, machine_peaks
from harness.hardware.profiles import load_profiles, match_profile
from harness.results.record import upgrade
from harness.results.store import parse_record

ROOT = pathlib.Path(__file__).resolve().parent.parent
CPUINFO = ROOT / "tests" / "fixtures" / "cpuinfo"
GIB = 2**30


def fingerprint_of(tmp_path: pathlib.Path, cpuinfo: str, cpus: int, mhz: float, memory_gib: float) -> dict:
    """The fingerprint the harness would take on a machine with this cpuinfo (a root folder)."""
    root = tmp_path / cpuinfo
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "cpuinfo").write_text((CPUINFO / cpuinfo).read_text())
    fp = describe_cpu(root)
    fp["cpu"].update(usable_cpus=cpus, logical_cpus=cpus, max_mhz=mhz)
    return {**fp, "hostname": "vm", "memory_bytes": int(memory_gib * GIB), "gpus": []}


@pytest.fixture
def amx_vm(tmp_path) -> dict:
    """The issue's third machine: a KVM guest 'Intel(R) Xeon(R) Processor' with AMX, 2 vCPUs."""
    return fingerprint_of(tmp_path, "kvm-intel-xeon-amx-2vcpu", 2, 2600.0, 15.6)


def test_the_amx_vm_is_named_by_its_facts_not_after_the_skylake_profile_it_descends_from(amx_vm) -> None:
    me = identity(amx_vm)
    assert me["label"] == "Intel Xeon (icelake+AMX), 2 vCPU, VM"
    assert amx_vm["virtualisation"]["virtualised"] is True
    profiles, _ = load_profiles([ROOT / "hardware_profiles"])
    match = match_profile(amx_vm, profiles)
    assert match["name"] == "skylake-8160" and match["match_by"] == "family"   # archspec: icelake descends
    rec = make_record(hardware=amx_vm, profile=match)
    assert "skylake" not in rec.machine
    # its peak is derived from its own core and clock, not the 48-core node's per-core share
    peaks = machine_peaks(amx_vm, match, profiles["skylake-8160"].data, cores=2)
    assert peaks["source"] == "derived" and peaks["fp64_gflops"] == pytest.approx(2 * 2.6 * 32)
    assert "icelake+AMX" in peaks["how"]


def test_keys_follow_the_facts_not_hostnames_or_names(tmp_path, amx_vm) -> None:
    two = fingerprint_of(tmp_path, "linux-rocky8.5-zen4", 2, 2600.0, 23.54)
    sixteen = fingerprint_of(tmp_path, "linux-rocky8.5-zen4", 16, 2600.0, 23.54)
    other_host = dict(two, hostname="elsewhere")
    assert identity(two)["key"] != identity(sixteen)["key"]           # same CPU string, other cores
    assert identity(two)["key"] == identity(other_host)["key"]        # a hostname is not the machine
    assert identity(two, "my-node")["key"] == identity(two)["key"]    # a name is shown, not hashed
    assert identity(two, "my-node")["label"] == identity(two)["label"]
    slightly = fingerprint_of(tmp_path, "linux-rocky8.5-zen4", 2, 2600.0, 23.49)
    assert identity(slightly)["key"] == identity(two)["key"]          # a few reserved MiB: one machine
    assert identity(amx_vm)["key"] != identity(two)["key"]


def test_a_vm_that_hides_the_core_is_named_by_its_cpuid_family(tmp_path) -> None:
    """The AMD VM of the gallery: 'AMD EPYC', archspec only x86_64_v4; family 25 with AVX-512 is Zen 4."""
    fp = fingerprint_of(tmp_path, "linux-rocky8.5-zen4", 2, 2596.0, 23.54)
    fp["cpu"]["model"] = "AMD EPYC"
    fp["cpu"]["microarch"] = {"name": "x86_64_v4", "generic": True, "ancestors": ["x86_64_v3"]}
    me = identity(fp)
    assert me["core"] == "zen4" and "CPUID family 25" in me["core_from"]
    assert me["label"].startswith("AMD EPYC (zen4), 2 ")
    assert machine_peaks(fp, {}, {})["fp64_gflops"] == pytest.approx(2 * 2.596 * 16)


def test_virtualisation_reads_the_hypervisor_bit_and_says_when_it_cannot(tmp_path) -> None:
    assert virtualisation(tmp_path, "fpu sse hypervisor avx")["virtualised"] is True
    assert virtualisation(tmp_path, "fpu sse avx")["virtualised"] is False
    assert virtualisation(tmp_path / "nothing", "")["virtualised"] is None


def test_a_fraction_above_105_percent_is_never_a_fraction() -> None:
    assert fraction_or_problem(90.0, 100.0)[0] == pytest.approx(0.9)
    value, why = fraction_or_problem(172.0, 134.4, "profile peak")
    assert value is None and "1.28x" in why and "wrong" in why
    rec = make_record(workload=make_record().workload.__class__(
        "roofline", "t:roofline", throughput=__import__("harness.results.record", fromlist=["Throughput"]).Throughput(
            "peak_gflops_fp64", "GFLOP/s", "fraction_of_peak_fp64")),
        metrics={"peak_gflops_fp64": 172.0, "fraction_of_peak_fp64": 1.28},
        profile={"name": "skylake-8160", "match_by": "family"})
    assert rec.fraction_of_peak() is None and "not this machine's" in rec.peak_problem()


def test_version_3_records_upgrade_with_a_machine_and_no_workload_version() -> None:
    line = json.loads((ROOT / "gallery" / "nvidia-h200-xeon-icelake-16c" / "results" / "results.jsonl")
                      .read_text().splitlines()[0])
    assert line["schema_version"] == 3
    rec, problem = parse_record(line)
    assert problem == "" and rec is not None
    assert rec.identity["label"] == "Intel Xeon (icelake+AMX), 16 CPUs + 1x NVIDIA H200"
    assert rec.workload.version == "" and rec.work_version.startswith("unversioned@695a755095ea")
    assert upgrade(line)["machine"]["key"] == rec.machine_key


def _copy_capture(src: pathlib.Path, dst: pathlib.Path, edit) -> None:
    """A capture folder whose records ``edit`` changes (hardware, then the machine section made again)."""
    (dst / "results").mkdir(parents=True)
    lines = []
    for rec in read_jsonl(src / "results" / "results.jsonl"):
        edit(rec)
        if rec["schema_version"] >= 4:
            rec["machine"] = identity(rec["hardware"])
        lines.append(json.dumps(rec))
    (dst / "results" / "results.jsonl").write_text("\n".join(lines) + "\n")
    (dst / "manifest.json").write_text((src / "manifest.json").read_text())


def test_report_of_the_gallery_an_amx_vm_and_a_16_core_copy(harness_cli, tmp_path, amx_vm) -> None:
    """The issue's check, on constructed records: the AMD capture as an AMX VM (matched to
    skylake-8160 by family, its roofline judged at 128 % of that profile's share, as the first
    report did) and as a 16-core machine, beside the gallery: md, html and csv --by-machine."""
    amd = ROOT / "gallery" / "amd-epyc-zen4-2c"

    def as_amx(rec: dict) -> None:
        rec["hardware"] = dict(amx_vm)
        rec["profile"] = {"name": "skylake-8160", "path": "x", "score": 3, "match_by": "family", "distance": 3}
        if rec["workload"]["name"] == "roofline":
            rec["metrics"].pop("peak_source", None)
            rec["metrics"].pop("peak_problem", None)
            rec["metrics"]["fraction_of_peak_fp64"] = 1.28

    def as_16_cores(rec: dict) -> None:
        rec["hardware"]["cpu"].update(usable_cpus=16, logical_cpus=16, physical_cores=16)

    _copy_capture(amd, tmp_path / "amx", as_amx)
    _copy_capture(amd, tmp_path / "amd16", as_16_cores)
    gallery = sorted(p for p in (ROOT / "gallery").iterdir() if p.is_dir())
    inputs = [*map(str, gallery), str(tmp_path / "amx"), str(tmp_path / "amd16")]
    amx_key = identity(amx_vm)["key"]
    profiles = [p.stem for p in (ROOT / "hardware_profiles").glob("*.toml")]
    for fmt in ("md", "html"):
        out = tmp_path / f"r.{fmt}"
        proc = harness_cli("report", *inputs, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        text = out.read_text()
        assert "commits differ" not in text
        shown = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?)% of peak", text)]
        assert all(x <= 105 for x in shown), shown
        if fmt == "md":
            headings = re.findall(r"^## (.+)$", text, re.M)
            assert headings[0] == "Machines" and headings[1].startswith("Speed-up per workload"), headings[:3]
            machines = text.split("## Machines\n")[1].split("\n## ")[0]
            rows = [line for line in machines.splitlines() if line.startswith("| ") and "---" not in line][1:]
            names = [r.split("|")[1].strip() for r in rows]
            # every machine once; two VMs of one label (the gallery's real AMX VM and the copy) told apart by key
            assert len(names) == len(set(names)) == len(gallery) + 2, names
            assert not any(p in n for p in profiles for n in names), names    # never named after a profile
            assert any(re.match(r"AMD EPYC \(\w+\), 16 (vCPU, VM|CPUs)$", n) for n in names), names
            amx_row = next(r for r in rows if amx_key in r)
            amx_name = amx_row.split("|")[1].strip()
            assert amx_name.startswith("Intel Xeon (icelake+AMX), 2 vCPU, VM"), amx_name
            assert "family of skylake-8160" in amx_row and "derived" in amx_row
            # the roofline's case table: a % of peak cell of the AMX copy says why it is not given
            roof = text.split("\n## roofline\n")[1].split("\n## ")[0]
            header = next(line for line in roof.splitlines() if line.startswith("| params"))
            col = [c.strip() for c in header.strip("|").split("|")].index("% of peak")
            copied = [[c.strip() for c in line.strip("|").split("|")] for line in roof.splitlines()[2:] if amx_name in line]
            assert copied and all(cells[col].startswith("not given") for cells in copied), copied
            speed = text.split("## Speed-up per workload")[1].split("\n## ")[0]
            assert re.search(r"\| roofline \|.*x\d", speed)    # the copies match the capture, version and all
    out = tmp_path / "m.csv"
    assert harness_cli("report", *inputs, "--by-machine", "--out", str(out)).returncode == 0
    rows = list(csv.DictReader(out.open()))
    header = rows[0].keys()
    assert not any(p in h for p in profiles for h in header)
    for row in rows:
        for key, value in row.items():
            if key.endswith("| fraction_of_peak") and value:
                assert float(value) <= 1.05, (key, value)


def test_html_plot_labels_are_distinct_in_headless_chromium(harness_cli, tmp_path) -> None:
    """The speed-up figure numbers its cases and its caption names each in full: rendered by
    Chromium, no two labels are alike (the first report cut them to identical prefixes)."""
    import shutil
    import subprocess

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    amd = ROOT / "gallery" / "amd-epyc-zen4-2c"
    _copy_capture(amd, tmp_path / "amd16", lambda rec: rec["hardware"]["cpu"].update(usable_cpus=16, logical_cpus=16))
    html = tmp_path / "r.html"
    assert harness_cli("report", str(amd), str(tmp_path / "amd16"), "--out", str(html)).returncode == 0
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", html.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    legends = re.findall(r"<ol class=\"legend\">(.*?)</ol>", r.stdout, re.S)
    assert legends, "the speed-up figure has no legend"
    items = re.findall(r"<li>(.*?)</li>", legends[0], re.S)
    numbers = [i.split(":", 1)[0] for i in items]
    labels = [i.split(":", 1)[1].strip() for i in items]
    assert numbers == [f"case {n}" for n in range(1, len(items) + 1)]
    assert len(items) >= 5 and len(set(labels)) == len(labels), labels
