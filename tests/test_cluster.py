"""A real Slurm cluster on this machine (tests/cluster/cluster-up.sh: munge, slurmctld, one
slurmd per network namespace n1, n2 joined by veth pairs to a bridge), and the harness on it:
`harness submit --wait` through the real sbatch, a case across two nodes whose MPI traffic is
counted on the link, a link shaped to 1 Gbit/s and 100 us whose latency and bandwidth the
cnn_scaling validation recovers, psgd_svm's msf claims on that link, and a job cancelled mid-case
or past its time limit. Skipped, with the reason, where the cluster cannot start (not root, no `ip netns`, Slurm not installed: `apt-get install slurm-wlm munge`)."""
from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import subprocess
import time

import pytest

from conftest import read_jsonl

HERE = pathlib.Path(__file__).parent / "cluster"
# MPICH across the namespace nodes: Slurm's PMI-2 wires the ranks, libfabric's tcp provider
# carries them. Not UCX: its default shared memory crosses the namespaces of one host and moves
# nothing over the link, and with UCX_TLS=tcp,self its long worker addresses garble Slurm's PMI-2
# exchange now and then ("mpi/pmi2: value not properly terminated", then MPI_Init fails: 2 of 9
# jobs here); with ofi 13 of 13 ran.
MPI_ENV = {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp"}
pytestmark = [pytest.mark.slow, pytest.mark.mpi]


def _installed(tool: str) -> bool:
    """On PATH, or in /usr/sbin (which a non-login root shell may not have on PATH)."""
    return bool(shutil.which(tool)) or pathlib.Path(f"/usr/sbin/{tool}").exists()


def _unavailable() -> str:
    if os.geteuid() != 0:
        return "needs root (network namespaces, slurmd)"
    missing = [t for t in ("slurmctld", "slurmd", "sbatch", "srun", "munged", "ip", "nsenter") if not _installed(t)]
    if missing:
        return f"missing {', '.join(missing)}: apt-get install slurm-wlm munge iproute2"
    probe = subprocess.run(["ip", "netns", "add", "harness-probe"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"ip netns does not work here: {probe.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", "harness-probe"], capture_output=True)
    if subprocess.run(["ip", "link", "show", "br-slurm"], capture_output=True).returncode == 0:
        return "a br-slurm bridge already exists (another cluster is up)"
    return ""


def _veth_bytes(node: str = "n1") -> int:
    stats = pathlib.Path(f"/sys/class/net/veth-{node}/statistics")
    return int((stats / "tx_bytes").read_text()) + int((stats / "rx_bytes").read_text())


def wait_for_case_start(out: pathlib.Path, seconds: float = 120) -> None:
    """Until the submitted job's first case has written its spec (the case is running)."""
    end, work = time.monotonic() + seconds, out / ".work"
    while not (work.exists() and any(work.rglob("spec.json"))):
        assert time.monotonic() < end, "the job never started its case"
        time.sleep(0.5)


def wait_for_records(out: pathlib.Path, seconds: float, after: str) -> list[dict]:
    """The records of OUT once there is one, waiting at most ``seconds`` ``after`` an event."""
    end, results = time.monotonic() + seconds, out / "results.jsonl"
    while not (results.exists() and results.read_text().strip()):
        assert time.monotonic() < end, f"no record {seconds} s after {after}"
        time.sleep(0.5)
    return read_jsonl(results)


@contextlib.contextmanager
def slurm_cluster(nodes: int, cpus: int = 1, slurmd_timeout_s: int = 30):
    """N namespace nodes of ``cpus`` CPUs each (at most the host's) up for the block, and
    everything they made removed after it; a node silent for ``slurmd_timeout_s`` is marked DOWN."""
    why = _unavailable()
    if why:
        pytest.skip(why)
    t0 = time.monotonic()
    env = dict(os.environ, N=str(nodes), CPUS=str(min(cpus, os.cpu_count() or 1)),
               SLURMD_TIMEOUT=str(slurmd_timeout_s))
    up = subprocess.run(["bash", str(HERE / "cluster-up.sh")], env=env,
                        capture_output=True, text=True, timeout=180)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        idle = subprocess.run(["sinfo", "-h", "-t", "idle", "-o", "%D"], capture_output=True, text=True).stdout.strip()
        assert idle == str(nodes), f"nodes not idle: {idle!r}\n{up.stdout}{up.stderr}"
        print(f"cluster of {nodes} up in {time.monotonic() - t0:.1f} s")
        yield
    finally:
        subprocess.run(["bash", str(HERE / "cluster-down.sh")], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def cluster():
    """Two nodes of two CPUs: the one-CPU job that sleeps into its time limit leaves room for the
    two-node jobs (one rank a node) of the other tests, which run meanwhile."""
    with slurm_cluster(2, cpus=2):
        yield


@pytest.fixture(scope="module", autouse=True)
def job_past_its_time_limit(cluster, harness_cli, tmp_path_factory):
    """Submitted as the module starts, so that Slurm's one-minute limit (its smallest) runs out
    while the other tests run; the test at the end of the module reads what it left."""
    out = tmp_path_factory.mktemp("time-limit") / "out"
    proc = harness_cli.popen("submit", "--workload", "fault_slow", "--param", "seconds=300", "--repeats", "1",
                             "--warmup", "0", "--threads", "1", "--time", "1", "--wait", "--out", str(out))
    yield proc, out
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


def test_submit_waits_for_a_two_node_job_whose_traffic_crosses_the_link(cluster, harness_cli, tmp_path) -> None:
    out = tmp_path / "out"
    before = _veth_bytes()
    r = harness_cli("submit", "--workload", "psgd_svm,dpmm", "--size", "smoke", "--ranks", "2", "--threads", "1",
                    "--nodes", "2", "--repeats", "3", "--launcher-arg=--mpi=pmi2", "--time", "10", "--wait",
                    "--out", str(out), env=MPI_ENV, timeout=600)
    moved = _veth_bytes() - before
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ended with exit status 0: 2 ok" in r.stdout
    records = read_jsonl(out / "results.jsonl")
    assert [rec["workload"]["name"] for rec in records] == ["psgd_svm", "dpmm"]
    for rec in records:
        assert rec["status"] == "ok", rec["reason"]
        assert rec["resources"]["hosts"] == ["n1", "n2"]          # one rank per node
        places = {p["host"]: p for p in rec["resources"]["placement"]}
        assert places["n1"]["addresses"] == ["10.250.0.11"] and places["n2"]["addresses"] == ["10.250.0.12"]
        job = rec["resources"]["slurm_job_id"]
        assert all(p["slurm"]["SLURM_JOB_ID"] == job for p in places.values())
        assert {p["slurm"]["SLURM_NODEID"] for p in places.values()} == {"0", "1"}
        assert all(p["pmi"] == "Slurm's pmi2 (srun --mpi)" for p in places.values())
        assert rec["launch"]["launcher"] == "srun" and "MPICH" in rec["software"]["mpi_library"]
    allreduce = sum(rec["comm"]["ops"]["Allreduce"]["bytes"] for rec in records)
    assert moved >= allreduce > 0, f"veth-n1 moved {moved} bytes, the records' Allreduce {allreduce}"


def test_a_job_cancelled_mid_case_leaves_a_record_with_the_reason(cluster, harness_cli, tmp_path) -> None:
    out = tmp_path / "out"
    r = harness_cli("submit", "--workload", "fault_slow", "--param", "seconds=120", "--repeats", "1", "--warmup",
                    "0", "--threads", "1", "--time", "10", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    job = r.stdout.split("submitted job ", 1)[1].split(":", 1)[0]
    wait_for_case_start(out)
    time.sleep(3)
    subprocess.run(["scancel", job], check=True)
    (rec,) = wait_for_records(out, 60, "scancel")
    assert rec["status"] == "failed" and rec["reason"].startswith("interrupted by SIGTERM"), rec["reason"]
    assert rec["resources"]["slurm_job_id"] == job



@contextlib.contextmanager
def shaped_link(rate: str, delay_us: str):
    """Every node's egress shaped by tests/cluster/shape-link.sh (tbf RATE, NFQUEUE delay) for the block."""
    if not _installed("iptables"):
        pytest.skip("no iptables: apt-get install iptables libnetfilter-queue-dev")
    env = dict(os.environ, RATE=rate, DELAY_US=delay_us)
    on = subprocess.run(["bash", str(HERE / "shape-link.sh")], env=env, capture_output=True, text=True, timeout=60)
    try:
        if on.returncode != 0 and "netfilter_queue" in on.stderr:
            pytest.skip(f"cannot build nfqdelay: apt-get install libnetfilter-queue-dev ({on.stderr.strip()[-200:]})")
        assert on.returncode == 0, on.stdout + on.stderr
        yield on.stdout
    finally:
        subprocess.run(["bash", str(HERE / "shape-link.sh"), "off"], capture_output=True, timeout=60)


def _validation(harness_cli, out: pathlib.Path) -> dict:
    r = harness_cli("submit", "--workload", "cnn_scaling", "--size", "smoke", "--param", "mode=validate",
                    "--param", "sweep_max_kib=2048", "--ranks", "2", "--threads", "1", "--nodes", "2",
                    "--repeats", "1", "--warmup", "0", "--launcher-arg=--mpi=pmi2", "--time", "10", "--wait",
                    "--out", str(out), env=MPI_ENV, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    (rec,) = read_jsonl(out / "results.jsonl")
    assert rec["status"] == "ok" and rec["resources"]["hosts"] == ["n1", "n2"], rec["reason"]
    return rec


# tbf meters whole Ethernet frames: 1514 bytes on the wire carry 1448 bytes of TCP payload.
FRAME_OVERHEAD = 1514 / 1448


def test_the_validation_recovers_a_shaped_links_latency_and_bandwidth(cluster, harness_cli, tmp_path) -> None:
    """cnn_scaling's validation across the two nodes: on the plain link; with every node's link
    shaped to 1 Gbit/s (tbf); with the NFQUEUE delay path added at 0 us; and at 100 us each way. Its
    ping-pong fit must find the configured bandwidth (beta within 25 % of 8 ns/B of frame, from the
    tbf run) and latency (alpha within 25 % of 100 us: the 100 us run less the 0 us one, which
    removes the delay path's own cost of about 20 us a packet). The plain link, the control, fails
    the bandwidth check, and the 0 us run the latency check."""
    plain = _validation(harness_cli, tmp_path / "plain")["metrics"]
    with shaped_link("1gbit", "none"):
        rate_rec = _validation(harness_cli, tmp_path / "rate")
    with shaped_link("1gbit", "0"):
        zero = _validation(harness_cli, tmp_path / "zero")["metrics"]
    with shaped_link("1gbit", "100") as shaping:
        both_rec = _validation(harness_cli, tmp_path / "both")
    rate, both = rate_rec["metrics"], both_rec["metrics"]
    configured_beta = 8.0 * FRAME_OVERHEAD                      # ns per payload byte at 1 Gbit/s
    added = both["link_alpha_us"] - zero["link_alpha_us"]
    print(shaping)
    runs = {"plain": plain, "tbf": rate, "tbf+nfq 0": zero, "tbf+nfq 100": both}
    for name, m in runs.items():
        print(f"{name:12s} link alpha {m['link_alpha_us']:7.1f} us  beta {m['link_beta_ns_per_byte']:6.2f} ns/B"
              f"  allreduce alpha {m['alpha_us']:7.1f} us")
    print(f"delay added {added:.1f} us (configured 100; {both['link_alpha_us'] - plain['link_alpha_us']:.1f} "
          f"over the plain link); tbf beta {rate['link_beta_ns_per_byte']:.2f} ns/B (configured {configured_beta:.2f})")
    # The controls: the plain link is far from the configured bandwidth, the 0 us path far from 100 us.
    assert abs(plain["link_beta_ns_per_byte"] / configured_beta - 1) > 0.25
    assert zero["link_alpha_us"] - plain["link_alpha_us"] < 75
    assert abs(rate["link_beta_ns_per_byte"] / configured_beta - 1) < 0.25
    assert abs(added / 100 - 1) < 0.25
    # The shaping is in the record, per rank: the tbf on the node's link and the NFQUEUE that delays it.
    for place in both_rec["resources"]["placement"]:
        (eth0,) = [link for link in place["links"] if link["iface"] == "eth0"]
        assert "tbf" in eth0["qdisc"] and "rate 1Gbit" in eth0["qdisc"]
        assert place["nfqueues"] and place["nfqueues"][0]["packets"] > 0
    assert all(not p["nfqueues"] for p in rate_rec["resources"]["placement"])
    # The efficiency claims are evaluated on the shaped link too (their verdicts are not the point
    # here: one repeat leaves them inconclusive).
    judged = {c["metric"]: (c["status"], c["measured"]) for c in both_rec["claims"]}
    print(f"claims on the shaped link: {judged}")
    assert all(judged[m][1] is not None and judged[m][0] != "not_evaluated"
               for m in ("roofline_efficiency_error_max", "allreduce_residual_max"))


def _msf_sweep(harness_cli, out: pathlib.Path) -> dict[int, dict]:
    r = harness_cli("submit", "--workload", "psgd_svm", "--size", "smoke", "--param", "msf=1,64", "--ranks", "2",
                    "--threads", "1", "--nodes", "2", "--repeats", "3", "--launcher-arg=--mpi=pmi2", "--time", "10",
                    "--until-decided", "--max-repeats", "12", "--budget", "4m", "--wait", "--out", str(out), env=MPI_ENV, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return {rec["params"]["msf"]: rec for rec in read_jsonl(out / "results.jsonl")}


def test_psgd_svm_msf_claims_hold_with_a_real_network_cost(cluster, harness_cli, tmp_path) -> None:
    """psgd_svm across two nodes at msf 1 and 64, on a link shaped to 1 Gbit/s and 100 us: every
    Allreduce costs at least the link's latency, communication is most of msf=1's time, and the
    paper's claims (comm-time reduction, training speed-up vs msf=1) are judged and hold. (The
    claims' own controls, msf equal to the baseline's, are tested elsewhere; the same sweep on the
    plain link, which asserted nothing, was dropped to keep CI short.)"""
    with shaped_link("1gbit", "100"):
        shaped = _msf_sweep(harness_cli, tmp_path / "shaped")
    assert all(rec["status"] == "ok" for rec in shaped.values())
    one = shaped[1]
    per_call_us = 1e6 * one["comm"]["ops"]["Allreduce"]["seconds_max"] / (one["comm"]["ops"]["Allreduce"]["calls"] / 2)
    print(f"msf=1 Allreduce on the shaped link: {per_call_us:.0f} us a call; speed-up msf=64 vs 1: "
          f"{one['metrics']['train_s'] / shaped[64]['metrics']['train_s']:.1f}x")
    assert per_call_us >= 100
    assert one["metrics"]["comm_s"] / one["metrics"]["train_s"] > 0.8
    # decided pass: the whole Fieller interval clears each threshold (3 repeats a side, more in rounds
    # while a claim is inconclusive: one repeat disturbed by other load on this VM can open the interval)
    judged = {c["metric"]: c["status"] for c in shaped[64]["claims"] if "size" not in (c["when"] or {})}
    assert judged["comm_s"] == "pass" and judged["train_s"] == "pass", shaped[64]["claims"]


def test_reframe_runs_a_two_node_case_through_the_slurm_partition(cluster, harness_cli, tmp_path) -> None:
    """The ReFrame library `harness export-reframe` writes, run by ReFrame with its Slurm site
    configuration (squeue: this cluster keeps no accounting): the job asks for the case's ranks as
    tasks, the harness inside runs them as srun steps on both nodes, the perflog carries its figures."""
    from test_reframe import REFRAME, reframe

    if REFRAME is None:
        pytest.skip("reframe-hpc is not installed (pip install 'hpml-harness[reframe]')")
    lib = tmp_path / "lib"
    r = harness_cli("export-reframe", str(lib), "--workload", "psgd_svm", "--size", "smoke", "--ranks", "2",
                    "--threads", "1", "--repeats", "3", "--param", "msf=64", "--launcher-arg=--mpi=pmi2",
                    "--nodes", "2", "--slurm-scheduler", "squeue")
    assert r.returncode == 0, r.stdout + r.stderr
    run = reframe(lib, "reframe_slurm.py", tmp_path / "rfm", env=MPI_ENV)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (log,) = (tmp_path / "rfm" / "perflogs").rglob("HarnessCase.log")
    header, line = log.read_text().splitlines()[:2]
    fields = dict(zip(header.split("|"), line.split("|")))
    assert fields["result"] == "pass" and fields["num_tasks"] == "2" and float(fields["median_s_value"]) > 0
    assert fields["system"] == "slurm" and fields["partition"] == "debug" and fields["jobid"]
    (rec,) = read_jsonl(next((tmp_path / "rfm").rglob("results.jsonl")))
    assert rec["status"] == "ok" and rec["launch"]["launcher"] == "srun" and len(rec["resources"]["hosts"]) == 2


def test_a_job_past_its_time_limit_leaves_a_record_with_the_reason(job_past_its_time_limit) -> None:
    """Slurm ends the job at --time 1 (one minute) with SIGTERM, then SIGKILL after KillWait (5 s):
    the case running then is recorded as interrupted, and the harness reports nothing else wrong.
    (Last in the module: the job was submitted when the module started.)"""
    proc, out = job_past_its_time_limit
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 1, stdout + stderr                  # the job failed: its case did
    (rec,) = read_jsonl(out / "results.jsonl")
    assert rec["status"] == "failed" and rec["reason"].startswith("interrupted by SIGTERM"), rec["reason"]
    assert 55 < rec["duration_s"] < 150
    log = next(out.glob("slurm-*.out")).read_text()
    assert "DUE TO TIME LIMIT" in log or "time limit" in log.lower(), log[-2000:]
