"""Data-parallel training steps: gradients from a compiled tf.function, averaged over ranks with
one profiled Allreduce per step (``ctx.comm``), then the same SGD step on every rank."""
from __future__ import annotations

import time
import zlib
from typing import Any

import numpy as np


def weights_checksum(model) -> int:
    return zlib.crc32(b"".join(w.numpy().tobytes() for w in model.trainable_weights))


class Trainer:
    """Compiled gradient and update functions for one model, and a flat buffer for the Allreduce."""

    def __init__(self, model, lr: float) -> None:
        import tensorflow as tf

        self.model = model
        self.opt = tf.keras.optimizers.SGD(learning_rate=lr, momentum=0.9)
        self.loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.shapes = [tuple(w.shape) for w in model.trainable_weights]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.flat = np.empty(sum(self.sizes), dtype=np.float32)
        self.total = np.empty_like(self.flat)

        @tf.function(reduce_retracing=True)
        def grads(x, y):
            with tf.GradientTape() as tape:
                loss = self.loss_fn(y, model(x, training=True))
            return loss, tape.gradient(loss, model.trainable_weights)

        @tf.function(reduce_retracing=True)
        def apply(gs):
            self.opt.apply_gradients(zip(gs, model.trainable_weights))

        @tf.function(reduce_retracing=True)
        def fused(x, y):   # one rank: gradients and update in one graph, as Keras' own train step
            with tf.GradientTape() as tape:
                loss = self.loss_fn(y, model(x, training=True))
            self.opt.apply_gradients(zip(tape.gradient(loss, model.trainable_weights), model.trainable_weights))
            return loss

        @tf.function(reduce_retracing=True)
        def predict(x):
            return tf.argmax(model(x, training=False), axis=1, output_type=tf.int32)

        self._grads, self._apply, self._fused, self.predict = grads, apply, fused, predict

    def step(self, ctx, x: np.ndarray, y: np.ndarray) -> float:
        """One data-parallel step on this rank's slice; returns the local loss. On one rank the
        step is one compiled function (phase forward_backward holds the optimizer too)."""
        import tensorflow as tf

        if ctx.nranks == 1:
            with ctx.phase("forward_backward"):
                return float(self._fused(x, y))
        with ctx.phase("forward_backward"):
            loss, gs = self._grads(x, y)
            if ctx.nranks > 1:
                i = 0
                for g, n in zip(gs, self.sizes):
                    self.flat[i:i + n] = g.numpy().ravel()
                    i += n
        if ctx.nranks > 1:
            ctx.comm.Allreduce(self.flat, self.total)
            self.total /= ctx.nranks
            gs, i = [], 0
            for shape, n in zip(self.shapes, self.sizes):
                gs.append(tf.constant(self.total[i:i + n].reshape(shape)))
                i += n
        with ctx.phase("optimizer"):
            self._apply(gs)
        return float(loss)


def sampled_batches(ctx, x: np.ndarray, y: np.ndarray, per_rank: int, seed: list[int]):
    """This rank's slice of random global batches of ``per_rank * ranks`` images (the same global
    batches on every rank)."""
    rng = np.random.default_rng(seed)

    def next_batch():
        idx = rng.choice(len(x), size=per_rank * ctx.nranks, replace=False)
        mine = np.sort(idx[ctx.rank * per_rank:(ctx.rank + 1) * per_rank])
        return x[mine], y[mine]
    return next_batch


def train(ctx, trainer: Trainer, next_batch, steps: int, per_rank: int) -> dict[str, Any]:
    """``steps`` data-parallel steps on this rank's batches of ``per_rank`` images (weak scaling:
    the global batch grows with the ranks, as Horovod-style training runs)."""
    losses, agree = [], True
    t0 = time.perf_counter()
    for _ in range(steps):
        losses.append(trainer.step(ctx, *next_batch()))
    seconds = time.perf_counter() - t0
    if ctx.nranks > 1:
        sums = ctx.comm.raw.allgather(weights_checksum(trainer.model))  # evaluation only, unprofiled
        agree = len(set(sums)) == 1
    window = max(1, steps // 4)  # batch losses are noisy: compare the first and last quarter
    return {"train_s": seconds, "images_per_s": steps * per_rank * ctx.nranks / seconds,
            "images_per_s_per_rank": steps * per_rank / seconds,
            "loss_first": float(np.mean(losses[:window])), "loss_last": float(np.mean(losses[-window:])),
            "replicas_identical": agree}
