"""Class statistics of labelled points: counts, class means, the within-class (offset) scatter;
the one home of the statistics of PLDA (:mod:`.plda`) and :class:`~metricfit.backend.LDA`.

Both passes run on :func:`metricfit.get_threads` threads over fixed work units whose partial
results are combined in a fixed order, so they are the same bit for bit on any thread count:
the class sums over fixed blocks of classes (a numba kernel over the rows sorted by class), the
scatter over fixed blocks of ``SCATTER_ROWS`` rows (one GEMM of the offsets each, BLAS held to
one thread per block while the blocks run side by side), summed in block order.
"""

import numpy as np

from ..parallel import blas_threads, get_threads, map_blocks
from ._segment_kernels import counting_order, segment_sums

__all__ = ["class_statistics", "class_means", "offset_scatter", "SCATTER_ROWS"]

#: Rows per work unit of the offset scatter (a (8192, d) GEMM keeps one core busy).
SCATTER_ROWS = 8192
CLASS_BLOCK = 1024  # classes per work unit of the class sums


def class_statistics(X, codes, n_classes=None):
    """Counts (C,), centred class means (C, d), the mean mu (d,) and the offset scatter
    ``S_off`` (d, d) of points X (n, d) with class codes in 0..C-1.

    mu is the unweighted mean of the class means (Kaldi). Means and scatter are float64;
    the class sums are accumulated in X's dtype, the scatter is a GEMM of the offsets in X's
    dtype per block of rows.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.backend.plda import class_statistics
    >>> X = np.array([[0.0, 0.0], [2.0, 0.0], [10.0, 4.0], [12.0, 4.0]])
    >>> counts, means, mu, scatter = class_statistics(X, np.array([0, 0, 1, 1]))
    >>> counts, mu
    (array([2., 2.]), array([6., 2.]))
    >>> means
    array([[-5., -2.],
           [ 5.,  2.]])
    >>> scatter
    array([[4., 0.],
           [0., 0.]])
    """
    counts, means = class_means(X, codes, n_classes)
    scatter = offset_scatter(X, codes, means)
    mu = means.mean(axis=0)
    return counts, means - mu, mu, scatter


def class_means(X, codes, n_classes=None):
    """Counts (C,) and class means (C, d), both float64, of points X (n, d) with class codes
    in 0..C-1. The sums run over the rows sorted by class (a counting sort), in X's dtype and
    row order within a class: the sums of a sparse one-hot product, bit for bit.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.backend.plda import class_means
    >>> counts, means = class_means(np.array([[0.0, 1.0], [2.0, 3.0], [5.0, 5.0]]),
    ...                             np.array([0, 0, 1]))
    >>> counts.tolist(), means.tolist()
    ([2.0, 1.0], [[1.0, 2.0], [5.0, 5.0]])
    """
    X = np.ascontiguousarray(X)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    C = int(codes.max()) + 1 if n_classes is None else n_classes
    counts = np.bincount(codes, minlength=C)
    bounds = np.zeros(C + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    order = counting_order(codes, bounds)

    def sums(classes):
        out = np.empty((classes.stop - classes.start, X.shape[1]), dtype=X.dtype)
        segment_sums(X, order, bounds, classes.start, classes.stop, out)
        return out

    parts = map_blocks(sums, C, CLASS_BLOCK)
    total = np.concatenate(parts) if parts else np.empty((0, X.shape[1]), X.dtype)
    counts = counts.astype(np.float64)
    return counts, np.asarray(total, dtype=np.float64) / counts[:, None]


def offset_scatter(X, codes, means):
    """The within-class scatter ``sum_i (x_i - m_c(i))(x_i - m_c(i))^T`` (d, d), float64: one
    GEMM of the offsets in X's dtype per block of ``SCATTER_ROWS`` rows, summed in block order."""
    means_x = means.astype(X.dtype)

    def block(rows):
        offsets = X[rows] - means_x[codes[rows]]
        return offsets.T @ offsets

    n_blocks = -(-X.shape[0] // SCATTER_ROWS)
    with blas_threads(1 if min(get_threads(), n_blocks) > 1 else None):
        parts = map_blocks(block, X.shape[0], SCATTER_ROWS)
    scatter = np.zeros((X.shape[1], X.shape[1]))
    for part in parts:
        scatter += part
    return scatter
