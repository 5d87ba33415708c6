"""Pegasos hinge-loss SGD kernels, exactly the update of the reference (PSGDSVMC).

Per sample j with step eta and regulariser lambda:
    margin < 1:  w = (1 - eta*lambda) w + eta y_j x_j      else: w = (1 - eta*lambda) w
The samples between two synchronisations depend on each other (the margin uses the current
w), so they cannot be turned into one matrix product. The parallel algorithm's whole epoch is
compiled (:func:`parallel_epoch`): the model averaging is an ``MPI_Allreduce`` called from the
compiled loop through numba-mpi, so a sample costs the same whatever msf is, and what msf changes
is the communication alone (a Python call per block made compute 17x dearer at msf=1 than at 64).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, fastmath=False, inline="always")
def pegasos_step(x: np.ndarray, y: np.ndarray, w: np.ndarray, j: int, eta: float, shrink: float,
                 radius: float, project: bool) -> None:
    """One Pegasos update of w in place by row j: shrink, add eta y_j x_j where the margin is
    below 1, and (``project``) project onto the ball of ``radius``. Inlined into both loops."""
    d = w.shape[0]
    margin = 0.0
    for k in range(d):
        margin += w[k] * x[j, k]
    margin *= y[j]
    if margin < 1.0:
        for k in range(d):
            w[k] = shrink * w[k] + eta * y[j] * x[j, k]
    else:
        for k in range(d):
            w[k] = shrink * w[k]
    if project:
        norm = 0.0
        for k in range(d):
            norm += w[k] * w[k]
        norm = np.sqrt(norm)
        if norm > radius:
            for k in range(d):
                w[k] *= radius / norm


@njit(cache=True, fastmath=False)
def pegasos_block(x: np.ndarray, y: np.ndarray, w: np.ndarray, start: int, stop: int,
                  eta: float, lam: float, t0: int = 0) -> None:
    """Apply the sequential Pegasos update to rows [start, stop) of x, in place on w.

    ``t0 == 0``: the reference's schedule, one ``eta`` for the whole block (per epoch).
    ``t0 > 0``: the original Pegasos schedule, eta = 1/(lambda t) with t = t0, t0+1, ...
    counting the samples this rank has processed, with Pegasos's projection of w onto the ball
    of radius 1/sqrt(lambda) after each step (it holds the optimum, and keeps the first, huge
    steps from blowing up an average of models).
    """
    shrink = 1.0 - eta * lam
    radius = 1.0 / np.sqrt(lam)
    for j in range(start, stop):
        if t0 > 0:
            eta = 1.0 / (lam * (t0 + j - start))
            shrink = 1.0 - eta * lam
        pegasos_step(x, y, w, j, eta, shrink, radius, t0 > 0)


def cost(w: np.ndarray, x_last: np.ndarray, y_last: float, lam: float) -> float:
    """The reference's epoch cost: regulariser plus the hinge loss of the last sample only."""
    return 0.5 * lam * float(w @ w) + max(0.0, 1.0 - y_last * float(w @ x_last))


def objective(w: np.ndarray, x: np.ndarray, y: np.ndarray, lam: float) -> float:
    """The primal SVM objective Pegasos minimises: lambda/2 |w|^2 + mean hinge loss over the rows."""
    return 0.5 * lam * float(w @ w) + float(np.maximum(0.0, 1.0 - y * (x @ w)).mean())


def block_sequential_epoch(x: np.ndarray, y: np.ndarray, w: np.ndarray, block: int,
                           eta: float, lam: float, t0: int = 0) -> np.ndarray:
    """The reference's block-sequential comparator: each sample of a block updates the same
    starting w and the block's result is the mean of those updated w (vectorised with numpy).
    With ``t0 > 0`` the step follows the Pegasos schedule, one step per block."""
    shrink = 1.0 - eta * lam
    for start in range(0, len(y) - block + 1, block):
        if t0 > 0:
            eta = 1.0 / (lam * (t0 + start // block))
            shrink = 1.0 - eta * lam
        xb, yb = x[start:start + block], y[start:start + block]
        active = (yb * (xb @ w)) < 1.0
        w = shrink * w + eta * (yb[active, None] * xb[active]).sum(axis=0) / block
    return w


def accuracy(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    pred = np.where(x @ w >= 0.0, 1.0, -1.0)
    return float((pred == y).mean())


def sequential_train(x: np.ndarray, y: np.ndarray, w0: np.ndarray, epochs: int, lam: float,
                     schedule: str) -> np.ndarray:
    """Plain sequential Pegasos over all rows for a fixed number of epochs, same schedule."""
    w = w0.copy()
    for epoch in range(1, epochs + 1):
        t0 = (epoch - 1) * len(y) + 1 if schedule == "pegasos" else 0
        pegasos_block(x, y, w, 0, len(y), 1.0 / (lam * epoch), lam, t0)
    return w


# What an epoch of the parallel algorithm communicates (the ``comm`` param): the algorithm, and
# the two ablations of its mechanism.
COMM_MODES = {
    "mpi": 0,         # the algorithm: one Allreduce (the model average) every msf samples
    "free": 1,        # communication made free: no Allreduce in the epoch (train.py averages once, untimed)
    "per_sample": 2,  # msf=1's traffic at any msf: an Allreduce after every sample, the average taken every msf
}
_parallel_epoch = None


def parallel_epoch(x: np.ndarray, y: np.ndarray, w: np.ndarray, buf: np.ndarray, n_local: int, msf: int,
                   eta: float, lam: float, t_epoch: int, nranks: int, comm: str,
                   tally: np.ndarray) -> None:
    """One epoch of the parallel algorithm over this rank's rows, compiled as a whole: Pegasos
    blocks of ``msf`` samples, each followed by the model average over the ranks (``comm``: see
    :data:`COMM_MODES`). ``tally`` ([calls, bytes, seconds]) is added the Allreduce calls made,
    each timed with ``MPI_Wtime`` together with the average it feeds (the whole synchronisation),
    for the harness's communication profile."""
    global _parallel_epoch
    if _parallel_epoch is None:
        _parallel_epoch = _build_parallel_epoch()
    _parallel_epoch(x, y, w, buf, n_local, msf, eta, lam, t_epoch, nranks, COMM_MODES[comm], tally)


def _build_parallel_epoch():
    """Compiled on first use (about 2 s; numba-mpi's MPI handles keep it out of numba's cache),
    after MPI is up: numba_mpi binds the MPI library that mpi4py loaded."""
    import numba_mpi

    sum_op = numba_mpi.Operator.SUM

    @njit(fastmath=False)
    def _sync(w, buf, tally, nranks, average):  # noqa: ANN001, ANN202
        """One Allreduce of the model and, with ``average``, the average taken: the model
        synchronisation, timed as communication as a whole."""
        t0 = numba_mpi.wtime()
        numba_mpi.allreduce(w, buf, sum_op)
        if average:
            for k in range(w.shape[0]):
                w[k] = buf[k] / nranks
        tally[2] += numba_mpi.wtime() - t0
        tally[0] += 1.0
        tally[1] += w.nbytes

    @njit(fastmath=False)
    def epoch(x, y, w, buf, n_local, msf, eta, lam, t_epoch, nranks, mode, tally):  # noqa: ANN001, ANN202
        # One loop over the samples whatever msf is, the update inlined: a sample costs the same
        # at msf=1 as at 64; only the synchronisations after some of them differ.
        radius = 1.0 / np.sqrt(lam)
        shrink = 1.0 - eta * lam
        for j in range(n_local):
            if t_epoch > 0:
                eta = 1.0 / (lam * (t_epoch + j))
                shrink = 1.0 - eta * lam
            pegasos_step(x, y, w, j, eta, shrink, radius, t_epoch > 0)
            if mode == 1:
                continue
            block_end = (j + 1) % msf == 0 or j == n_local - 1
            if block_end:
                _sync(w, buf, tally, nranks, True)
            elif mode == 2:
                _sync(w, buf, tally, nranks, False)   # msf=1's traffic: this sum is not used

    return epoch
