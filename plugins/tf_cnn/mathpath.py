"""Which math library TensorFlow's kernels really call, for one of tf_cnn's ``math`` settings.

``TF_ENABLE_ONEDNN_OPTS=0`` alone does not leave oneDNN: x86 TensorFlow's Eigen contractions still
call oneDNN's sgemm (the "custom contraction kernel", on by default), so the Eigen arm of the
library comparison needs ``TENSORFLOW_USE_CUSTOM_CONTRACTION_KERNEL=0`` too. The proof is oneDNN's
own verbose log: a child process with the case's variables and ``ONEDNN_VERBOSE=1`` runs one
training step of the mini CNN and a MatMul, and every primitive oneDNN executed is counted by kind
(the timed process never runs verbose: printing would slow it).
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

MATH = ("onednn", "eigen_onednn_gemm", "eigen")

# math -> the variables TensorFlow reads when it loads
VARIABLES = {
    "onednn": {"TF_ENABLE_ONEDNN_OPTS": "1", "TENSORFLOW_USE_CUSTOM_CONTRACTION_KERNEL": "1"},
    "eigen_onednn_gemm": {"TF_ENABLE_ONEDNN_OPTS": "0", "TENSORFLOW_USE_CUSTOM_CONTRACTION_KERNEL": "1"},
    "eigen": {"TF_ENABLE_ONEDNN_OPTS": "0", "TENSORFLOW_USE_CUSTOM_CONTRACTION_KERNEL": "0"},
}
ALIAS = {"on": "onednn", "off": "eigen_onednn_gemm"}   # the former onednn=on|off

_STEP = """
import tensorflow as tf
from harness_plugins.tf_cnn.model import build
tf.config.threading.set_intra_op_parallelism_threads(1)
model = build("mini", 32, 10, 8, 0)
x, y = tf.random.normal((4, 32, 32, 3), seed=0), tf.constant([0, 1, 2, 3])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
with tf.GradientTape() as tape:
    loss = loss_fn(y, model(x, training=True))
tape.gradient(loss, model.trainable_weights)
tf.matmul(tf.random.normal((64, 64)), tf.random.normal((64, 64)))
print("tf_cnn-probe-done", flush=True)
"""


def primitives(math: str, timeout_s: float = 180.0) -> dict[str, int]:
    """oneDNN primitives executed by kind (``{}``: none) in one training step under ``math``."""
    return probe_result(start_probe(math), timeout_s)


def start_probe(math: str) -> subprocess.Popen[str]:
    """The probe's child, started: the caller loads TensorFlow meanwhile (on another core, each
    import takes ~6 s) and takes the answer with :func:`probe_result` before it measures anything."""
    env = dict(os.environ, **VARIABLES[math], ONEDNN_VERBOSE="1", TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.Popen([sys.executable, "-c", _STEP], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def probe_result(proc: subprocess.Popen[str], timeout_s: float = 180.0) -> dict[str, int]:
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RuntimeError(f"the oneDNN verbose probe did not finish within {timeout_s:g} s") from None
    if "tf_cnn-probe-done" not in stdout:
        tail = (stderr or stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the oneDNN verbose probe failed (exit {proc.returncode}): {tail[0][:200]}")
    return dict(count_executions(stdout))


def count_executions(log: str) -> collections.Counter[str]:
    """Executed primitives by kind in a oneDNN verbose log (``onednn_verbose,...,exec,cpu,KIND,...``)."""
    kinds: collections.Counter[str] = collections.Counter()
    for line in log.splitlines():
        if not line.startswith("onednn_verbose,"):
            continue
        fields = line.split(",")
        if "exec" in fields:
            i = fields.index("exec")
            if i + 2 < len(fields):
                kinds[fields[i + 2]] += 1
    return kinds


if __name__ == "__main__":
    print(json.dumps({m: primitives(m) for m in (sys.argv[1:] or MATH)}, indent=1))
