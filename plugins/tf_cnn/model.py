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


# The tf_cnn_benchmarks family (the models the paper trained), at their native input sizes.
NATIVE_SIZE = {"mini": 64, "alexnet": 224, "resnet50": 224, "vgg16": 224, "inception3": 299}
MODELS = tuple(NATIVE_SIZE)


def alexnet(size: int, classes: int, seed: int):
    """AlexNet as tf_cnn_benchmarks defines it (one tower, no LRN): conv 64 11x11/4, pool, conv 192
    5x5, pool, conv 384, 384, 256 3x3, pool, two fully connected 4096 with dropout, logits."""
    import tensorflow as tf

    init = tf.keras.initializers.GlorotUniform(seed=seed)
    layers = tf.keras.layers
    conv = lambda f, k, s=1: layers.Conv2D(f, k, strides=s, padding="same", activation="relu",  # noqa: E731
                                          kernel_initializer=init)
    return tf.keras.Sequential([
        layers.Input((size, size, 3)),
        conv(64, 11, 4), layers.MaxPooling2D(3, 2),
        conv(192, 5), layers.MaxPooling2D(3, 2),
        conv(384, 3), conv(384, 3), conv(256, 3), layers.MaxPooling2D(3, 2),
        layers.Flatten(),
        layers.Dense(4096, activation="relu", kernel_initializer=init), layers.Dropout(0.5, seed=seed),
        layers.Dense(4096, activation="relu", kernel_initializer=init), layers.Dropout(0.5, seed=seed),
        layers.Dense(classes, kernel_initializer=init),
    ])


def build(name: str, size: int, classes: int, width: int, seed: int):
    """The named model with random weights (``weights=None``: nothing is downloaded), logits out."""
    import tensorflow as tf

    if name == "mini":
        return mini_alexnet(size, classes, width, seed)
    if name == "alexnet":
        return alexnet(size, classes, seed)
    apps = {"resnet50": tf.keras.applications.ResNet50, "vgg16": tf.keras.applications.VGG16,
            "inception3": tf.keras.applications.InceptionV3}
    tf.keras.utils.set_random_seed(seed)
    return apps[name](weights=None, input_shape=(size, size, 3), classes=classes, classifier_activation=None)


def forward_flops_per_image(model) -> float:
    """Floating-point operations of one image's forward pass, counted per layer (a multiply-add is
    2): a convolution 2 x output height x width x kernel height x width x input channels (per group)
    x output channels, a depthwise one the same with the depth multiplier for output channels, a
    dense layer 2 x inputs x units per row it is applied to. Pooling, normalisation, activations and
    the loss count 0: what GEMM-like kernels (oneDNN, Eigen) run, the part a GEMM ceiling speaks of.
    Models nested in the model (keras.applications' blocks are flat) are counted through."""
    import numpy as np
    import tensorflow as tf

    layers = tf.keras.layers
    total = 0.0
    for layer in model.layers:
        if isinstance(layer, tf.keras.Model):
            total += forward_flops_per_image(layer)
            continue
        kernel = getattr(layer, "kernel", None)
        if kernel is None:
            continue
        out = tuple(layer.output.shape[1:])
        if isinstance(layer, layers.DepthwiseConv2D):
            kh, kw, cin, mult = kernel.shape
            total += 2.0 * out[0] * out[1] * kh * kw * cin * mult
        elif isinstance(layer, layers.Conv2D):
            kh, kw, cin_per_group, cout = kernel.shape
            total += 2.0 * out[0] * out[1] * kh * kw * cin_per_group * cout
        elif isinstance(layer, layers.Dense):
            rows = float(np.prod(out[:-1])) if len(out) > 1 else 1.0
            total += 2.0 * rows * kernel.shape[0] * kernel.shape[1]
    return total


# A training step's operations per forward: the forward, the gradient of every layer's input and of
# its weights (each as many as the forward): the usual 3x of CNN training counts.
TRAINING_FLOPS_PER_FORWARD = 3.0
