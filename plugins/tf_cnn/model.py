"""A mini-AlexNet in Keras (4 convolutions + 2 dense layers), the kind of CNN the paper trained
with TensorFlow; every layer's GEMM-like work runs in oneDNN or Eigen, whichever TF uses."""
from __future__ import annotations


def mini_alexnet(size: int, classes: int, width: int, seed: int):
    import tensorflow as tf

    init = tf.keras.initializers.GlorotUniform(seed=seed)
    layers = tf.keras.layers
    return tf.keras.Sequential([
        layers.Input((size, size, 3)),
        layers.Conv2D(width, 5, strides=2, padding="same", activation="relu", kernel_initializer=init),
        layers.MaxPooling2D(2),
        layers.Conv2D(2 * width, 3, padding="same", activation="relu", kernel_initializer=init),
        layers.MaxPooling2D(2),
        layers.Conv2D(4 * width, 3, padding="same", activation="relu", kernel_initializer=init),
        layers.Conv2D(4 * width, 3, padding="same", activation="relu", kernel_initializer=init),
        layers.GlobalAveragePooling2D(),
        layers.Dense(8 * width, activation="relu", kernel_initializer=init),
        layers.Dense(classes, kernel_initializer=init),
    ])
