#!/usr/bin/env bash
# The GPU check, one prepared script for a GPU node (about 8 minutes on an H200):
#
#   bash benchmarks/gpu_check.sh OUT [WHEELS]
#
# installs the harness into a venv (GPU_CHECK_VENV, default OUT/.venv) that sees the node's own
# torch (the node's python may itself be a venv, so its site-packages are added by a .pth file
# rather than --system-site-packages; packages the node lacks, e.g. jsonschema, fastjsonschema,
# archspec and mpich for mpiexec, come from the wheel folder WHEELS if given, else from PyPI), then
# writes under OUT: harness info (info.txt), GEMM TFLOP/s through torch for fp32, tf32 and bf16
# against the h200-sxm profile (gemm.json), and a capture of the node (OUT/capture, `harness
# capture`: the roofline, suites/gpu-node.toml's cases on the cuda backend, then suite all on the
# node's CPUs; GPU_CHECK_SUITES overrides the suites, GPU_CHECK_CAPTURE_S stops the capture with
# SIGINT after that many seconds, its records so far kept and its manifest saying so). The capture
# folder is what gallery/ keeps; energy_check.txt says, per case with energy, how far its zeus phase
# windows' joules are from its repeats'. On a machine without an NVIDIA GPU it exits at once with status 2.
set -euo pipefail
OUT=${1:?usage: gpu_check.sh OUT [WHEELS]}
WHEELS=${2:-}
if ! compgen -G "/dev/nvidia[0-9]*" > /dev/null && ! command -v nvidia-smi > /dev/null; then
  echo "gpu_check.sh: no NVIDIA GPU here (no /dev/nvidia*, no nvidia-smi): run it on a GPU node" >&2
  exit 2
fi
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
mkdir -p "$OUT"
t0=$SECONDS
step() { echo "== $1 (at $((SECONDS - t0)) s)"; }

step "venv with the node's torch"
VENV=${GPU_CHECK_VENV:-$OUT/.venv}
"$PY" -m venv "$VENV"
VPY="$VENV/bin/python"
# The node's own packages (torch, numpy, ...) stay visible after the venv's own ones.
"$PY" -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' \
  > "$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/node-site.pth"
missing=$("$VPY" - <<'PY'
import importlib.util
need = {"jsonschema": "jsonschema", "fastjsonschema": "fastjsonschema", "archspec": "archspec", "pluggy": "pluggy", "rich": "rich",
        "pandas": "pandas", "psutil": "psutil", "cpuinfo": "py-cpuinfo", "threadpoolctl": "threadpoolctl",
        "scipy": "scipy", "sklearn": "scikit-learn", "matplotlib": "matplotlib", "pynvml": "nvidia-ml-py",
        "zeus": "zeus<0.17", "numba": "numba", "pyarrow": "pyarrow", "ruptures": "ruptures", "asv": "asv",
        "mlperf_logging": "mlperf-logging<5"}
print(" ".join(pkg for mod, pkg in need.items() if importlib.util.find_spec(mod) is None))
PY
)
# mpiexec must sit beside the venv's python (the harness looks there): mpich and an mpi4py that
# finds its library, from the wheels when given.
if [ -n "$WHEELS" ] && compgen -G "$WHEELS/mpich-*.whl" > /dev/null; then
  "$VPY" -m pip install -q --no-index --no-deps --ignore-installed --find-links "$WHEELS" mpich mpi4py
fi
if [ -n "$missing" ]; then
  if [ -n "$WHEELS" ]; then
    "$VPY" -m pip install -q --no-index --find-links "$WHEELS" $missing
  else
    "$VPY" -m pip install -q $missing
  fi
fi
"$VPY" -m pip install -q --no-deps --no-build-isolation -e "$HERE"
H="$VENV/bin/harness"

step "harness info"
"$H" info --json > "$OUT/info.json"
"$H" info > "$OUT/info.txt" || true
head -30 "$OUT/info.txt"

step "GEMM through torch (fp32, tf32, bf16)"
timeout 120 "$VPY" "$HERE/benchmarks/gpu_gemm.py" --profile h200-sxm --out "$OUT/gemm.json" || echo "gemm failed: $?"

step "capture: the roofline, then ${GPU_CHECK_SUITES:-gpu-node all}"
suites=()
for s in ${GPU_CHECK_SUITES:-gpu-node all}; do suites+=(--suite "$s"); done
limit=()
if [ -n "${GPU_CHECK_CAPTURE_S:-}" ]; then limit=(timeout -s INT "$GPU_CHECK_CAPTURE_S"); fi
"${limit[@]}" "$H" capture "$OUT/capture" "${suites[@]}" --timeout 300 \
  --note "benchmarks/gpu_check.sh; source ${GPU_CHECK_SOURCE:-unstated}" || echo "capture exit $?"
if [ -f "$OUT/gemm.json" ]; then cp "$OUT/gemm.json" "$OUT/capture/gpu_gemm.json"; fi
"$H" show "$OUT/capture/results" || true

step "energy: each GPU case's phases against its repeats (zeus windows, the phases should sum within 5 %)"
"$VPY" - "$OUT/capture/results/results.jsonl" <<'PY' | tee "$OUT/energy_check.txt" || true
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    e = (r.get("resources") or {}).get("energy") or {}
    if not e.get("joules_per_repeat"):
        continue
    sums = [sum(v[i] for v in e.get("phases_j", {}).values()) for i in range(len(e["joules_per_repeat"]))]
    worst = max(abs(s - j) / j for s, j in zip(sums, e["joules_per_repeat"]) if j) if sums else None
    print(f"{r['case_id'][:70]}: {e['median_j']:.4g} J a repeat, phases {sorted(e.get('phases_j', {}))}, "
          f"largest phase-sum gap {worst:.2%}" if worst is not None else f"{r['case_id'][:70]}: no phases")
PY
step "done"
