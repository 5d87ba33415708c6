"""The paper's image-patch application, small: learn a DPMM on 8x8 patches of a noisy image and
denoise the image with it.

Image: scikit-learn's bundled ``china.jpg`` (no download), grey levels in [0, 1], a centred
square crop of ``image_size`` pixels; noise N(0, noise_sigma^2), seeded. Each patch's mean (DC)
is removed before clustering, as is usual for patch priors. With the final model, a patch y in
cluster k is estimated by the Wiener filter mu_k + C_k (C_k + s^2 I)^-1 (y - mu_k), where C_k =
Sigma_k - s^2 I (projected to PSD) is the clean covariance; overlapping estimates are averaged.
PSNR of the noisy and the denoised image against the clean one are reported.
"""
from __future__ import annotations

from typing import Any

import numpy as np

PATCH = 8


def load_image(size: int) -> np.ndarray:
    from sklearn.datasets import load_sample_image

    rgb = load_sample_image("china.jpg").astype(float) / 255.0
    grey = rgb @ np.array([0.299, 0.587, 0.114])
    h, w = grey.shape
    top, left = (h - size) // 2, (w - size) // 2
    return grey[top:top + size, left:left + size]


def to_patches(img: np.ndarray) -> np.ndarray:
    from numpy.lib.stride_tricks import sliding_window_view

    return sliding_window_view(img, (PATCH, PATCH)).reshape(-1, PATCH * PATCH).copy()


def from_patches(patches: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros((size, size))
    weight = np.zeros((size, size))
    n = size - PATCH + 1
    for idx, patch in enumerate(patches):
        i, j = divmod(idx, n)
        out[i:i + PATCH, j:j + PATCH] += patch.reshape(PATCH, PATCH)
        weight[i:i + PATCH, j:j + PATCH] += 1
    return out / weight


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    return float(10 * np.log10(1.0 / np.mean((a - b) ** 2)))


def setup_patches(ctx) -> None:
    p = ctx.params
    clean = load_image(p["image_size"])
    noisy = clean + np.random.default_rng(p["seed"]).normal(0.0, p["noise_sigma"], clean.shape)
    patches = to_patches(noisy)
    dc = patches.mean(axis=1, keepdims=True)
    rows = np.array_split(np.arange(len(patches)), ctx.nranks)[ctx.rank]
    ctx.state.update(clean=clean, noisy=noisy, x=patches[rows] - dc[rows], dc=dc[rows])


def wiener(x: np.ndarray, z: np.ndarray, model: dict[str, Any], sigma: float) -> np.ndarray:
    out = np.empty_like(x)
    d = x.shape[1]
    for k, (mu, cov) in enumerate(model["theta"]):
        idx = z == k
        if not idx.any():
            continue
        vals, vecs = np.linalg.eigh(cov - sigma**2 * np.eye(d))
        clean_cov = (vecs * np.clip(vals, 0, None)) @ vecs.T
        gain = clean_cov @ np.linalg.inv(clean_cov + sigma**2 * np.eye(d))
        out[idx] = mu + (x[idx] - mu) @ gain.T
    return out


def denoise_run(ctx) -> dict[str, Any]:
    from harness_plugins.dpmm.chain import run_chain

    p, st = ctx.params, ctx.state
    result = run_chain(ctx, st["x"], p, None, evaluate_nmi=False)
    with ctx.phase("denoise"):
        estimate = wiener(st["x"], result["z"], result["model"], p["noise_sigma"]) + st["dc"]
        gathered = ctx.comm.raw.gather(estimate, root=0)  # evaluation output, unprofiled
        # The zero-structure baseline: one Gaussian over all patches (K=1), the same Wiener filter.
        x = st["x"]
        count = ctx.comm.raw.allreduce(len(x))
        mean = ctx.comm.raw.allreduce(x.sum(axis=0)) / count
        cov = ctx.comm.raw.allreduce((x - mean).T @ (x - mean)) / count
        single = wiener(x, np.zeros(len(x), dtype=int), {"theta": [(mean, cov)]}, p["noise_sigma"]) + st["dc"]
        gathered_k1 = ctx.comm.raw.gather(single, root=0)
    metrics = dict(result["metrics"])
    if ctx.is_root:
        size = p["image_size"]
        restored = np.clip(from_patches(np.concatenate(gathered), size), 0, 1)
        restored_k1 = np.clip(from_patches(np.concatenate(gathered_k1), size), 0, 1)
        metrics.update(psnr_single_gaussian=psnr(st["clean"], restored_k1),
                       gain_over_single_gaussian_db=psnr(st["clean"], restored) - psnr(st["clean"], restored_k1))
        metrics.update(psnr_noisy=psnr(st["clean"], st["noisy"]), psnr_denoised=psnr(st["clean"], restored),
                       psnr_gain_db=psnr(st["clean"], restored) - psnr(st["clean"], st["noisy"]),
                       patches=int(len(np.concatenate(gathered))), image="sklearn china.jpg (grey crop)")
        _figure(ctx, st["clean"], st["noisy"], restored)
    return metrics


def _figure(ctx, clean: np.ndarray, noisy: np.ndarray, restored: np.ndarray) -> None:
    from harness import pyplot, save_figure

    plt = pyplot()

    fig, axes = plt.subplots(1, 3, figsize=(10, 3.6))
    for ax, img, title in zip(axes, (clean, noisy, restored), ("clean", "noisy", "DPMM denoised")):
        ax.imshow(img, cmap="gray", vmin=0, vmax=1)
        ax.set_title(title)
        ax.axis("off")
    save_figure(fig, ctx.artifact_dir / "dpmm_denoise.png", dpi=100)
