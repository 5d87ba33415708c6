"""Synthetic ImageNet-like images, labelled so that a CNN can learn them (docs/workloads/tf_cnn.md).

Each of ``classes`` classes has a smooth random template (low-frequency noise upsampled to the
image size); an image is its class template plus white noise of std ``noise``, in NHWC float32
for TensorFlow. Train and test splits share the templates and differ in the images drawn.
Deterministic from ``seed``; nothing is downloaded.
"""
from __future__ import annotations

import numpy as np


def templates(classes: int, size: int, channels: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    coarse = rng.normal(0.0, 1.0, (classes, 8, 8, channels)).astype(np.float32)
    reps = -(-size // 8)
    return np.repeat(np.repeat(coarse, reps, axis=1), reps, axis=2)[:, :size, :size, :]


def images(n: int, classes: int, size: int, seed: int, split: int = 0, noise: float = 1.0,
           channels: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(x [n, size, size, channels] float32, y [n] int32). ``seed`` fixes the class templates
    (the same for train and test), ``split`` the images drawn from them."""
    rng = np.random.default_rng([seed, split])
    y = rng.integers(0, classes, n).astype(np.int32)
    x = templates(classes, size, channels, seed)[y] + rng.normal(0.0, noise, (n, size, size, channels)).astype(np.float32)
    return x.astype(np.float32), y


def synthetic_batch(batch: int, size: int, classes: int, seed: int):
    """One random ImageNet-shaped batch made on the device, as tf_cnn_benchmarks' synthetic mode:
    the same tensors feed every step, so no input pipeline is timed (uniform pixels, uniform labels;
    nothing to learn, only speed to measure)."""
    import tensorflow as tf

    gen = tf.random.Generator.from_seed(seed)
    return (gen.uniform((batch, size, size, 3), dtype=tf.float32),
            gen.uniform((batch,), 0, classes, dtype=tf.int32))
