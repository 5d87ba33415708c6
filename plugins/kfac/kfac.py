"""K-FAC natural-gradient preconditioning for the Linear layers of a torch model
(Martens & Grosse 2015; the large-batch form of Osawa et al. 2019, arXiv:1811.12019).

Per layer, with the input augmented by a 1 for the bias: A = E[a a^T] over the batch and
G = E[g g^T] over the per-sample gradients of the loss with respect to the layer's output
(the empirical Fisher: g from the labels' loss; for the true Fisher the caller runs one extra
backward pass with labels sampled from the model's softmax while ``capture`` is set, and the
update's backward pass with ``capture`` off). Both are running averages with decay ``decay``;
every ``inv_every`` steps they are inverted with factored Tikhonov damping,
(A + pi sqrt(gamma) I)^-1 and (G + sqrt(gamma)/pi I)^-1, pi = sqrt((tr A / dim A) / (tr G / dim G)),
each multiplied by its damping term (pi sqrt(gamma), sqrt(gamma)/pi). That scale makes the damping
mean what it says: as gamma grows both inverses tend to the identity and the step is SGD's at the
same learning rate; as gamma shrinks the step is gamma times the undamped natural gradient, whose
scale the learning rate and KL clipping absorb. ``isotropic`` replaces each factor by its mean
eigenvalue times the identity before the inversion (tr A / dim A I, likewise G): the same code,
damping, KL clipping and scale of the curvature, its directions removed (the ablation of the
claim that natural-gradient training generalises worse: each layer's step is then a scaled SGD
step).
The preconditioned gradient G^-1 grad(W|b) A^-1 is rescaled by KL clipping (kappa) before the
momentum SGD step, as the large-batch K-FAC implementations do.

Distributed: each rank computes A and G on its slice of the global batch; the caller averages
them over ranks together with the gradients (one Allreduce), so every rank preconditions with
the same factors and the replicas stay identical.
"""
from __future__ import annotations

from typing import Any


class KFAC:
    def __init__(self, model, damping: float = 1e-3, decay: float = 0.95, inv_every: int = 5,
                 kl_clip: float = 1e-3, isotropic: bool = False) -> None:
        import torch

        self.layers = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
        self.damping, self.decay, self.inv_every, self.kl_clip = damping, decay, inv_every, kl_clip
        self.isotropic = isotropic
        self._a: dict[Any, Any] = {}
        self._g: dict[Any, Any] = {}
        self.A: dict[Any, Any] = {}
        self.G: dict[Any, Any] = {}
        self.A_inv: dict[Any, Any] = {}
        self.G_inv: dict[Any, Any] = {}
        self.steps = 0
        self.capture = True   # whether a backward pass records the output gradients g
        self.g_scale = 1.0    # the factor the caller put on the mean loss of this backward pass
        for layer in self.layers:
            layer.register_forward_hook(self._save_input)

    def _save_input(self, layer, inputs, output) -> None:
        """Keep the layer's input, and catch the gradient of its output on the way back."""
        if layer.training and output.requires_grad:
            self._a.setdefault(layer, []).append(inputs[0].detach())
            output.register_hook(lambda grad, layer=layer: self._keep_g(layer, grad))

    def _keep_g(self, layer, grad) -> None:
        if self.capture:   # per-sample gradients of the loss, whatever mean and scale the caller used
            self._g.setdefault(layer, []).append(grad.detach() * (len(grad) / self.g_scale))

    def batch_factors(self) -> list[Any]:
        """This batch's [A_l, G_l] for every layer, over every forward/backward since the last call
        (one per slice of the batch), which it then forgets."""
        import torch

        out = []
        for layer in self.layers:
            a = torch.cat(self._a.pop(layer))
            a = torch.cat([a, torch.ones(len(a), 1, dtype=a.dtype, device=a.device)], dim=1)
            g = torch.cat(self._g.pop(layer))
            out += [a.T @ a / len(a), g.T @ g / len(g)]
        return out

    def update(self, factors: list[Any]) -> None:
        """Fold this step's (rank-averaged) factors into the running averages; invert when due."""
        import torch

        for i, layer in enumerate(self.layers):
            new_a, new_g = factors[2 * i], factors[2 * i + 1]
            if layer not in self.A:
                self.A[layer], self.G[layer] = new_a.clone(), new_g.clone()
            else:
                self.A[layer].mul_(self.decay).add_(new_a, alpha=1 - self.decay)
                self.G[layer].mul_(self.decay).add_(new_g, alpha=1 - self.decay)
        if self.steps % self.inv_every == 0:
            root = self.damping ** 0.5
            for layer in self.layers:
                A, G = self.A[layer], self.G[layer]
                if self.isotropic:   # the factors' scale kept, their directions removed
                    A = torch.eye(A.shape[0], dtype=A.dtype, device=A.device) * (torch.trace(A) / A.shape[0])
                    G = torch.eye(G.shape[0], dtype=G.dtype, device=G.device) * (torch.trace(G) / G.shape[0])
                pi = ((torch.trace(A) / A.shape[0]) / (torch.trace(G) / G.shape[0]).clamp_min(1e-12)).clamp_min(1e-12) ** 0.5
                da, dg = pi * root, root / pi
                self.A_inv[layer] = da * torch.linalg.inv(A + da * torch.eye(A.shape[0], dtype=A.dtype, device=A.device))
                self.G_inv[layer] = dg * torch.linalg.inv(G + dg * torch.eye(G.shape[0], dtype=G.dtype, device=G.device))
        self.steps += 1

    def precondition(self, lr: float) -> None:
        """Replace every Linear layer's .grad by its KL-clipped natural gradient."""
        import torch

        pre, vg = [], 0.0
        for layer in self.layers:
            grad = torch.cat([layer.weight.grad, layer.bias.grad[:, None]], dim=1)
            nat = self.G_inv[layer] @ grad @ self.A_inv[layer]
            vg += float((nat * grad).sum()) * lr * lr
            pre.append(nat)
        nu = min(1.0, (self.kl_clip / vg) ** 0.5) if vg > 0 else 1.0
        for layer, nat in zip(self.layers, pre):
            layer.weight.grad.copy_(nat[:, :-1] * nu)
            layer.bias.grad.copy_(nat[:, -1] * nu)
