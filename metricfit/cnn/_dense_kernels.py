r"""numba kernel of the fully connected layer's large forward product (C5 on a batch), cut
into fixed units that threads run side by side.

``Y = X W^T + b`` (X (n, d_in), W (d_out, d_in)) by blocks ``Y[I, J] = X[I] W[J]^T + b[J]`` of
:data:`ROWS` images by :data:`BLOCK_OUT` outputs, unit ``u`` = block ``(u // n_col, u %
n_col)`` with ``n_col = ceil(d_out / BLOCK_OUT)``. Each unit is one BLAS product on one
thread, called from compiled code (numba's ``np.dot``: SciPy's BLAS, whose thread count
:func:`.threads.blas_single_threaded` holds at one). The units depend on the sizes only and no
sum is split between them, so a result is the same bits on any number of threads.

Why these units rather than NumPy's matmul by column blocks of all 128 images (as before):
on the 2-core machine C5's forward product (128 images, 1125 -> 250) took 0.80 instead of
1.01 ms on one thread in float32, 1.49 instead of 1.95 in float64, and about 20% less on two
(``benchmarks/dense_units.py``; docs/results/timing.md). They are 64 units instead of 8, so
that 16 threads have work. From :data:`.threads.DRIVER_MIN_THREADS` threads they run on a
numba driver (:func:`._drivers.dense_forward_spans`). On 2 threads driver and pool were level
(``METRICFIT_KERNEL_THREADS=numba`` against the pool: 0.562 / 0.561 ms in float32).

The backward products stay NumPy's by blocks on the pool (:func:`.layers.dense_backward`): as
units of numba's ``np.dot`` (rows of dW, rows of dX) they took 2.5 ms a training step on one
thread against NumPy's 1.8 (small row blocks of dX repack all of W in each product).
"""

import numpy as np
from numba import njit

ROWS = 16  # images per unit of the forward product
BLOCK_OUT = 32  # output features per unit of the forward product

__all__ = ["ROWS", "BLOCK_OUT", "forward_unit_count", "dense_forward_units"]


def forward_unit_count(n, d_out):
    """Units of :func:`dense_forward_units` for a batch of ``n`` and ``d_out`` outputs."""
    return -(-n // ROWS) * -(-d_out // BLOCK_OUT)


@njit(cache=True, nogil=True)
def dense_forward_units(X, W, b, Y, u0, u1):  # pragma: no cover (compiled)
    """Units ``u0 .. u1 - 1`` of ``Y = X W^T + b``: ``Y[I, J] = X[I] W[J]^T + b[J]`` (all
    C-contiguous, one dtype)."""
    n, d_out = Y.shape
    n_col = -(-d_out // BLOCK_OUT)
    for u in range(u0, u1):
        i0 = (u // n_col) * ROWS
        j0 = (u % n_col) * BLOCK_OUT
        i1 = min(n, i0 + ROWS)
        j1 = min(d_out, j0 + BLOCK_OUT)
        part = np.dot(X[i0:i1], W[j0:j1].T)  # (i1 - i0, j1 - j0)
        for i in range(i1 - i0):
            for j in range(j1 - j0):
                Y[i0 + i, j0 + j] = part[i, j] + b[j0 + j]
