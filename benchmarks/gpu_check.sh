#!/usr/bin/env bash
# The GPU check of issue 15, one prepared script for a GPU node (under 8 minutes on an H200):
#
#   bash benchmarks/gpu_check.sh OUT [WHEELS]
#
# installs the harness into a venv that sees the node's own torch (--system-site-packages,
# --no-deps; packages the node lacks, e.g. jsonschema and archspec, from the wheel folder WHEELS
# if given, else from PyPI), then writes under OUT: harness info (info.json), GEMM TFLOP/s
# through torch for fp32, tf32 and bf16 against the h200-sxm profile (gemm.json), and records of
# bragg_unet and kfac at size small with --backend cuda (results.jsonl: times, energy per case).
# On a machine without an NVIDIA GPU it exits at once with status 2 and says why.
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
"$PY" -m venv --system-site-packages "$OUT/.venv"
VPY="$OUT/.venv/bin/python"
missing=$("$VPY" - <<'PY'
import importlib.util
need = {"jsonschema": "jsonschema", "archspec": "archspec", "pluggy": "pluggy", "rich": "rich",
        "pandas": "pandas", "psutil": "psutil", "cpuinfo": "py-cpuinfo", "threadpoolctl": "threadpoolctl",
        "scipy": "scipy", "sklearn": "scikit-learn", "matplotlib": "matplotlib", "pynvml": "nvidia-ml-py"}
print(" ".join(pkg for mod, pkg in need.items() if importlib.util.find_spec(mod) is None))
PY
)
if [ -n "$missing" ]; then
  if [ -n "$WHEELS" ]; then
    "$VPY" -m pip install -q --no-index --find-links "$WHEELS" $missing
  else
    "$VPY" -m pip install -q $missing
  fi
fi
"$VPY" -m pip install -q --no-deps --no-build-isolation -e "$HERE"
H="$OUT/.venv/bin/harness"

step "harness info"
"$H" info --json > "$OUT/info.json"
"$H" info | head -25

step "GEMM through torch (fp32, tf32, bf16)"
timeout 120 "$VPY" "$HERE/benchmarks/gpu_gemm.py" --profile h200-sxm --out "$OUT/gemm.json" || echo "gemm failed: $?"

step "bragg_unet and kfac at size small on cuda"
"$H" run --workload bragg_unet,kfac --size small --backend cuda --timeout 200 --out "$OUT" || echo "run exit $?"
"$H" show "$OUT" || true
step "done"
