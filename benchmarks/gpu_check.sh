#!/usr/bin/env bash
# The GPU check of issue 15, one prepared script for a GPU node (under 8 minutes on an H200):
#
#   bash benchmarks/gpu_check.sh OUT [WHEELS]
#
# installs the harness into a venv that sees the node's own torch (the node's python may itself
# be a venv, so its site-packages are added by a .pth file rather than --system-site-packages;
# packages the node lacks, e.g. jsonschema, archspec and mpich for mpiexec, come from the wheel
# folder WHEELS if given, else from PyPI), then writes under OUT: harness info (info.json,
# info.txt), GEMM TFLOP/s through torch for fp32, tf32 and bf16 against the h200-sxm profile
# (gemm.json), records of bragg_unet and kfac at size small with --backend cuda
# (results.jsonl: times, energy per case), and the node's CPU side: psgd_svm, dpmm, cnn_scaling
# and roofline at size small on 1, 2, 4 and 8 ranks, suites/cpu-side.toml (cpu/results.jsonl;
# skipped when GPU_CHECK_CPU=0). On a machine without an NVIDIA GPU it exits at once with status 2.
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
"$PY" -m venv "$OUT/.venv"
VPY="$OUT/.venv/bin/python"
# The node's own packages (torch, numpy, ...) stay visible after the venv's own ones.
"$PY" -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' \
  > "$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/node-site.pth"
missing=$("$VPY" - <<'PY'
import importlib.util
need = {"jsonschema": "jsonschema", "archspec": "archspec", "pluggy": "pluggy", "rich": "rich",
        "pandas": "pandas", "psutil": "psutil", "cpuinfo": "py-cpuinfo", "threadpoolctl": "threadpoolctl",
        "scipy": "scipy", "sklearn": "scikit-learn", "matplotlib": "matplotlib", "pynvml": "nvidia-ml-py"}
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
H="$OUT/.venv/bin/harness"

step "harness info"
"$H" info --json > "$OUT/info.json"
"$H" info > "$OUT/info.txt" || true
head -30 "$OUT/info.txt"

step "GEMM through torch (fp32, tf32, bf16)"
timeout 120 "$VPY" "$HERE/benchmarks/gpu_gemm.py" --profile h200-sxm --out "$OUT/gemm.json" || echo "gemm failed: $?"

step "bragg_unet and kfac at size small on cuda"
"$H" run --workload bragg_unet,kfac --size small --backend cuda --timeout 200 --out "$OUT" || echo "run exit $?"
"$H" show "$OUT" || true

if [ "${GPU_CHECK_CPU:-1}" != 0 ]; then
  step "the node's CPU side: suites/cpu-side.toml (psgd_svm, dpmm, cnn_scaling, roofline at small, 1-8 ranks)"
  "$H" run --suite "$HERE/suites/cpu-side.toml" --timeout 120 --out "$OUT/cpu" || echo "cpu run exit $?"
fi
step "done"
