"""A configurable 3D U-Net (Cicek et al. 2016 shape): two 3x3x3 conv+BN+ReLU per level, max-pool
down, transposed conv up, skip connections by concatenation, a 1x1x1 conv to one logit per voxel."""
from __future__ import annotations


def build(depth: int, base: int, seed: int):
    import torch
    from torch import nn

    torch.manual_seed(seed)

    def block(cin: int, cout: int) -> nn.Module:
        return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1), nn.BatchNorm3d(cout), nn.ReLU(inplace=True),
                             nn.Conv3d(cout, cout, 3, padding=1), nn.BatchNorm3d(cout), nn.ReLU(inplace=True))

    class UNet3D(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            chans = [base * 2**i for i in range(depth + 1)]
            self.down = nn.ModuleList([block(1 if i == 0 else chans[i - 1], chans[i]) for i in range(depth)])
            self.bottom = block(chans[depth - 1], chans[depth])
            self.up = nn.ModuleList([nn.ConvTranspose3d(chans[i + 1], chans[i], 2, stride=2)
                                     for i in reversed(range(depth))])
            self.merge = nn.ModuleList([block(2 * chans[i], chans[i]) for i in reversed(range(depth))])
            self.head = nn.Conv3d(chans[0], 1, 1)

        def forward(self, x):
            skips = []
            for down in self.down:
                x = down(x)
                skips.append(x)
                x = nn.functional.max_pool3d(x, 2)
            x = self.bottom(x)
            for up, merge, skip in zip(self.up, self.merge, reversed(skips)):
                x = merge(torch.cat([up(x), skip], dim=1))
            return self.head(x)

    return UNet3D()


def dice_bce_loss(logits, target):
    """BCE with logits plus soft Dice (1 - 2|P.T| / (|P| + |T|)), averaged over the batch."""
    import torch

    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
    p = torch.sigmoid(logits)
    inter = (p * target).sum(dim=(1, 2, 3, 4))
    dice = 1 - (2 * inter + 1) / (p.sum(dim=(1, 2, 3, 4)) + target.sum(dim=(1, 2, 3, 4)) + 1)
    return bce + dice.mean()


def dice_per_box(pred, truth):
    """Dice of every box of boolean masks (numpy; 1.0 where both masks are empty)."""
    import numpy as np

    axes = tuple(range(1, pred.ndim))
    sizes = pred.sum(axis=axes) + truth.sum(axis=axes)
    return np.where(sizes > 0, 2 * (pred & truth).sum(axis=axes) / np.maximum(sizes, 1), 1.0)


def dice_iou(pred, truth) -> tuple[float, float]:
    """Mean Dice and IoU over boxes of boolean masks (numpy)."""
    import numpy as np

    axes = tuple(range(1, pred.ndim))
    union = (pred | truth).sum(axis=axes)
    iou = np.where(union > 0, (pred & truth).sum(axis=axes) / np.maximum(union, 1), 1.0)
    return float(dice_per_box(pred, truth).mean()), float(iou.mean())
