"""What does the harness cost tf_cnn? The same model, per-rank batch and steps timed in a bare Keras
``model.fit`` loop and through ``harness run``, in one run; prints both images/s and their ratio
(harness / bare; the target is >= 0.97).

The bare loop is what a user would write: ``model.compile(SGD(momentum=0.9), sparse categorical
cross-entropy from logits)`` and ``model.fit`` on one constant synthetic batch (tf_cnn_benchmarks'
synthetic mode), the first step (tracing) excluded, each step timed by a callback; images/s is
the batch over the median step time. The harness side is ``harness run --workload tf_cnn`` with
the same model, batch, steps, threads and oneDNN setting, 1 rank; its images/s is the median over
repeats. Both run in fresh processes, alternating for ``--rounds`` rounds (this machine's noise
swings a single pair by +-15 %); the ratio printed is the median of the rounds' ratios.

    python benchmarks/tf_cnn_overhead.py                                  # resnet50, batch 8, 3 steps
    python benchmarks/tf_cnn_overhead.py --model mini --batch 32 --steps 20 --image-size 64
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

from harness_plugins.tf_cnn.mathpath import MATH, VARIABLES


def bare(model: str, batch: int, steps: int, repeats: int, image_size: int, threads: int) -> None:
    """In a fresh process: the bare Keras loop; prints its images/s as JSON."""
    import time

    import tensorflow as tf

    from harness_plugins.tf_cnn.data import synthetic_batch
    from harness_plugins.tf_cnn.model import NATIVE_SIZE, build

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    size = image_size or NATIVE_SIZE[model]
    classes = 10 if model == "mini" else 1000
    net = build(model, size, classes, 32, 0)
    net.compile(optimizer=tf.keras.optimizers.SGD(0.01, momentum=0.9),
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = synthetic_batch(batch, size, classes, 0)
    data = tf.data.Dataset.from_tensors((x, y)).repeat()
    step_s: list[float] = []

    class Clock(tf.keras.callbacks.Callback):
        def on_train_batch_begin(self, b, logs=None):
            self.t0 = time.perf_counter()

        def on_train_batch_end(self, b, logs=None):
            step_s.append(time.perf_counter() - self.t0)

    net.fit(data, steps_per_epoch=1 + steps * repeats, epochs=1, verbose=0, callbacks=[Clock()])
    print(json.dumps({"images_per_s": batch / statistics.median(step_s[1:])}))


def harness_side(model: str, batch: int, steps: int, repeats: int, image_size: int, threads: int,
                 math: str) -> float:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "harness", "run", "--workload", "tf_cnn", "--ranks", "1",
               "--threads", str(threads), "--repeats", str(repeats), "--warmup", "0", "--out", out,
               "--param", f"model={model}", "--param", f"batch={batch}", "--param", f"steps={steps}",
               "--param", f"image_size={image_size}", "--param", f"math={math}"]
        if model == "mini":
            cmd += ["--param", "classes=10"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"harness run failed ({proc.returncode}):\n{proc.stdout[-800:]}{proc.stderr[-800:]}")
        rec = json.loads((pathlib.Path(out) / "results.jsonl").read_text().splitlines()[-1])
        return statistics.median(rec["metric_samples"]["images_per_s"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--image-size", type=int, default=0, help="0: the model's native size")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--math", choices=MATH, default="onednn")
    ap.add_argument("--rounds", type=int, default=2, help="alternating bare/harness pairs")
    ap.add_argument("--bare", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    env = dict(os.environ, **VARIABLES[args.math], TF_CPP_MIN_LOG_LEVEL="2")
    if args.bare:
        bare(args.model, args.batch, args.steps, args.repeats, args.image_size, args.threads)
        return 0
    if min(args.batch, args.steps, args.repeats, args.threads, args.rounds) < 1:
        ap.error("--batch, --steps, --repeats, --threads and --rounds must be >= 1")
    ratios = []
    for i in range(args.rounds):
        bare_rate, harness_rate = _pair(args, env)
        ratios.append(harness_rate / bare_rate)
        print(f"round {i + 1}: bare Keras fit {bare_rate:.3f} images/s, harness {harness_rate:.3f} images/s, "
              f"ratio {ratios[-1]:.3f}", flush=True)
    ratio = statistics.median(ratios)
    print(f"{args.model}, batch {args.batch}, {args.steps} steps x {args.repeats}, {args.threads} threads, "
          f"math {args.math}: median ratio harness/bare {ratio:.3f} over {args.rounds} round(s) "
          f"(target >= 0.97{'' if ratio >= 0.97 else ': MISSED'})")
    return 0


def _pair(args: argparse.Namespace, env: dict[str, str]) -> tuple[float, float]:
    """(bare images/s, harness images/s), one fresh process each."""
    cmd = [sys.executable, __file__, "--bare", "--model", args.model, "--batch", str(args.batch),
           "--steps", str(args.steps), "--repeats", str(args.repeats), "--image-size", str(args.image_size),
           "--threads", str(args.threads), "--math", args.math]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"bare Keras run failed ({proc.returncode}):\n{proc.stderr[-800:]}")
    bare_rate = json.loads(proc.stdout.strip().splitlines()[-1])["images_per_s"]
    harness_rate = harness_side(args.model, args.batch, args.steps, args.repeats, args.image_size,
                                args.threads, args.math)
    return bare_rate, harness_rate


if __name__ == "__main__":
    sys.exit(main())
