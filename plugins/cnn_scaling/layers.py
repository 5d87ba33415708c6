"""Layer tables of well-known CNNs, computed from their architecture definitions.

Each convolution is modelled as im2col + GEMM (Castello et al.; PyDTNN's performance model):
for a layer with Cin->Cout channels, kernel kh x kw, output Ho x Wo and per-node batch B,

    forward           C[Cout, B*Ho*Wo]       = W[Cout, Cin*kh*kw] @ Xcol[Cin*kh*kw, B*Ho*Wo]
    backward-data     dXcol[Cin*kh*kw, B*Ho*Wo] = W^T @ dY   (then col2im)
    backward-weights  dW[Cout, Cin*kh*kw]    = dY @ Xcol^T

A fully connected layer is the same with kh = kw = Ho = Wo = 1. Pooling, activation and
normalisation layers carry no GEMM; they count for the output shape only. FLOP counts here
are multiply-adds x 2; "MACs" = FLOPs / 2 is what CNN papers usually call FLOPs.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Layer:
    name: str
    cin: int
    cout: int
    kh: int
    kw: int
    ho: int
    wo: int
    groups: int = 1
    bias: bool = True
    bn: bool = False

    @property
    def params(self) -> int:
        weights = self.cout * (self.cin // self.groups) * self.kh * self.kw
        return weights + (self.cout if self.bias else 0) + (2 * self.cout if self.bn else 0)

    def gemms(self, batch: int) -> dict[str, tuple[int, int, int]]:
        """(m, n, k) of the three GEMMs of this layer for ``batch`` images (per group x groups)."""
        kk = (self.cin // self.groups) * self.kh * self.kw
        cols = batch * self.ho * self.wo
        cout = self.cout // self.groups
        return {"forward": (cout, cols, kk), "backward_data": (kk, cols, cout),
                "backward_weights": (cout, kk, cols)}

    def forward_macs(self, batch: int = 1) -> int:
        m, n, k = self.gemms(batch)["forward"]
        return m * n * k * self.groups


class _Builder:
    """Tracks the feature-map shape while layers are appended, like a framework's forward pass."""

    def __init__(self, channels: int, size: int) -> None:
        self.c, self.h, self.w = channels, size, size
        self.layers: list[Layer] = []

    def conv(self, name: str, cout: int, k: int, stride: int = 1, pad: int = 0, groups: int = 1,
             bias: bool = True, bn: bool = False, cin: int | None = None, h: int | None = None) -> None:
        cin = self.c if cin is None else cin
        h = self.h if h is None else h
        ho = (h + 2 * pad - k) // stride + 1
        self.layers.append(Layer(name, cin, cout, k, k, ho, ho, groups, bias, bn))
        self.c, self.h, self.w = cout, ho, ho

    def pool(self, k: int, stride: int, pad: int = 0, ceil: bool = False) -> None:
        span = self.h + 2 * pad - k
        self.h = self.w = (-(-span // stride) if ceil else span // stride) + 1

    def global_pool(self) -> None:
        self.h = self.w = 1

    def fc(self, name: str, out: int) -> None:
        self.layers.append(Layer(name, self.c * self.h * self.w, out, 1, 1, 1, 1))
        self.c, self.h, self.w = out, 1, 1


def alexnet() -> list[Layer]:
    """AlexNet as torchvision defines it (single tower, 224x224 input)."""
    b = _Builder(3, 224)
    b.conv("conv1", 64, 11, 4, 2); b.pool(3, 2)
    b.conv("conv2", 192, 5, 1, 2); b.pool(3, 2)
    b.conv("conv3", 384, 3, 1, 1)
    b.conv("conv4", 256, 3, 1, 1)
    b.conv("conv5", 256, 3, 1, 1); b.pool(3, 2)
    b.h = b.w = 6  # adaptive average pool to 6x6
    b.fc("fc6", 4096); b.fc("fc7", 4096); b.fc("fc8", 1000)
    return b.layers


def vgg16() -> list[Layer]:
    b = _Builder(3, 224)
    for block, (n, c) in enumerate([(2, 64), (2, 128), (3, 256), (3, 512), (3, 512)], 1):
        for i in range(1, n + 1):
            b.conv(f"conv{block}_{i}", c, 3, 1, 1)
        b.pool(2, 2)
    b.fc("fc6", 4096); b.fc("fc7", 4096); b.fc("fc8", 1000)
    return b.layers


def resnet50() -> list[Layer]:
    """ResNet-50 v1.5 (stride in the 3x3 conv, as torchvision), batch-norm after every conv."""
    b = _Builder(3, 224)
    b.conv("conv1", 64, 7, 2, 3, bias=False, bn=True); b.pool(3, 2, 1)
    for stage, (blocks, width, stride) in enumerate([(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)], 2):
        for i in range(blocks):
            s = stride if i == 0 else 1
            cin, h = b.c, b.h
            b.conv(f"res{stage}.{i}.a", width, 1, 1, 0, bias=False, bn=True)
            b.conv(f"res{stage}.{i}.b", width, 3, s, 1, bias=False, bn=True)
            b.conv(f"res{stage}.{i}.c", 4 * width, 1, 1, 0, bias=False, bn=True)
            if i == 0:
                out_c, out_h = b.c, b.h
                b.conv(f"res{stage}.{i}.down", 4 * width, 1, s, 0, bias=False, bn=True, cin=cin, h=h)
                b.c, b.h, b.w = out_c, out_h, out_h
    b.global_pool()
    b.fc("fc", 1000)
    return b.layers


def googlenet() -> list[Layer]:
    """GoogLeNet / Inception-v1 as in Szegedy et al. 2015 (Table 1: 5x5 branches, no aux heads)."""
    b = _Builder(3, 224)
    b.conv("conv1", 64, 7, 2, 3); b.pool(3, 2, ceil=True)
    b.conv("conv2_reduce", 64, 1)
    b.conv("conv2", 192, 3, 1, 1); b.pool(3, 2, ceil=True)
    table = [("3a", 64, 96, 128, 16, 32, 32), ("3b", 128, 128, 192, 32, 96, 64), "pool",
             ("4a", 192, 96, 208, 16, 48, 64), ("4b", 160, 112, 224, 24, 64, 64),
             ("4c", 128, 128, 256, 24, 64, 64), ("4d", 112, 144, 288, 32, 64, 64),
             ("4e", 256, 160, 320, 32, 128, 128), "pool",
             ("5a", 256, 160, 320, 32, 128, 128), ("5b", 384, 192, 384, 48, 128, 128)]
    for row in table:
        if row == "pool":
            b.pool(3, 2, ceil=True)
            continue
        name, c1, r3, c3, r5, c5, pp = row
        cin, h = b.c, b.h
        for branch in ((f"{name}.1x1", c1, 1), (f"{name}.3x3_reduce", r3, 1), (f"{name}.3x3", c3, 3),
                       (f"{name}.5x5_reduce", r5, 1), (f"{name}.5x5", c5, 5), (f"{name}.pool_proj", pp, 1)):
            label, cout, k = branch
            src = {"3x3": r3, "5x5": r5}.get(label.split(".")[1], cin)
            b.conv(label, cout, k, 1, k // 2, cin=src, h=h)
        b.c, b.h, b.w = c1 + c3 + c5 + pp, h, h
    b.global_pool()
    b.fc("fc", 1000)
    return b.layers


def small_cnn() -> list[Layer]:
    """The CNN this machine trains for validation (see train.py): 32x32x3 input, 10 classes."""
    b = _Builder(3, 32)
    b.conv("conv1", 32, 3, 1, 1); b.pool(2, 2)
    b.conv("conv2", 64, 3, 1, 1); b.pool(2, 2)
    b.fc("fc1", 128); b.fc("fc2", 10)
    return b.layers


NETWORKS = {"alexnet": alexnet, "vgg16": vgg16, "resnet50": resnet50, "googlenet": googlenet,
            "small_cnn": small_cnn}


def totals(layers: list[Layer]) -> dict[str, float]:
    return {"params": sum(l.params for l in layers),
            "forward_macs": sum(l.forward_macs(1) for l in layers)}
