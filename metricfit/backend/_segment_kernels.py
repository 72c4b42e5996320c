"""numba kernels of the class statistics: a counting sort of the rows by class and the class
sums over sorted segments (pure, ``nogil``: :func:`metricfit.parallel.map_blocks` runs them on
fixed blocks of classes; every class sum is computed by one thread in row order, so the sums do
not depend on the thread count). Plain-NumPy twins: ``tests/_reference.py``."""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def counting_order(codes, bounds):  # pragma: no cover (compiled)
    """The rows sorted by class code, in row order within a class (a stable counting sort);
    ``bounds`` (C + 1,) are the class offsets (``bounds[c]`` = rows of classes < c)."""
    n = codes.shape[0]
    cursor = bounds[:-1].copy()
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        c = codes[i]
        order[cursor[c]] = i
        cursor[c] += 1
    return order


@njit(cache=True, nogil=True)
def segment_sums(X, order, bounds, first, last, out):  # pragma: no cover (compiled)
    """``out[c - first] = sum of X[order[bounds[c]:bounds[c + 1]]]`` for classes
    ``first <= c < last``, accumulated in X's dtype in row order (as a sparse one-hot
    product does, bit for bit)."""
    d = X.shape[1]
    for c in range(first, last):
        row = out[c - first]
        for k in range(d):
            row[k] = 0.0
        for idx in range(bounds[c], bounds[c + 1]):
            x = X[order[idx]]
            for k in range(d):
                row[k] += x[k]
