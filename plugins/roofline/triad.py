"""The STREAM triad, compiled and parallel over numba's threads."""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def triad(a: np.ndarray, b: np.ndarray, c: np.ndarray, scalar: float) -> None:
    for i in prange(a.shape[0]):
        a[i] = b[i] + scalar * c[i]
