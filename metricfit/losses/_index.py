r"""Index pairs: the cost and gradient of a pair loss when the pairs index a points array.

Why the algebra changes, not only the memory
--------------------------------------------
For pairs ``(x_{p_i}, x_{q_i})`` of rows of the points ``X`` (n_points, d), the linear map
``a_i = A x_{p_i}``, ``b_i = A x_{q_i}`` only ever needs the embeddings of the *points*,
``P = X A^T`` (n_points, k): ``a_i = P[p_i]``, ``b_i = P[q_i]``. The gradient

.. math::

    \frac{\partial}{\partial A}\sum_i J_i
        = \sum_i \frac{\partial J_i}{\partial a_i} x_{p_i}^T
               + \frac{\partial J_i}{\partial b_i} x_{q_i}^T
        = R^T X, \qquad
    R_p = \sum_{i: p_i = p} \frac{\partial J_i}{\partial a_i}
        + \sum_{i: q_i = p} \frac{\partial J_i}{\partial b_i}

scatters the per-pair gradients back onto the points (R is n_points x k) before *one* GEMM
with X. One evaluation is three passes:

1. points: ``P = X A^T``, block of rows by block of rows (GEMM);
2. pairs, in chunks: the costs and the few scalars of each pair's gradients (norms,
   weights) from the rows ``P[p], P[q]``, then ``dJ/da, dJ/db`` recomputed from them and
   scatter-added onto ``R``, point by point (the 3-D path's kernel, split in two passes that
   read P in place);
3. points: ``G = R^T X``, block by block (GEMM).

That is O(n_points k d + n_pairs k) per evaluation instead of the O(n_pairs k d) of pairs of
vectors: with many pairs over few points (the unrestricted setting) the pairs only cost their
O(k) loss. Temporaries are O(chunk_size k) for the pairs plus P and R (n_points x k); the
points are read a block of rows at a time (a memmap is never loaded whole).

The passes are generic: ``embed(X_block, theta)`` (pass 1), ``pair_block(E, index, s, R,
*args)`` (pass 2) and ``R^T X`` (pass 3). LDML (:mod:`metricfit.losses.ldml`) plugs in
``E = [X M, X]`` and its weights kernel. :class:`metricfit.pairs.index.SerialPasses` runs
them in this process, :class:`metricfit.pairs._dask.DaskPasses` as a map-reduce on a Dask
scheduler.
"""

import numpy as np
from numba import njit

from ..pairs.index import (
    check_index_pair_data,
    pair_columns,
    scatter_by_points,
    scatter_sides,
)
from ..pairs.passes import make_passes
from ._linear import CHUNK_SIZE, PreparedObjective
from ._rows import grouped_sum, row_block, run_rows

__all__ = ["IndexPairObjective", "project_rows", "linear_pair_block"]

PAIR_BLOCK = 64  # pairs per partial cost sum of pass 2 (the order the serial kernel summed in)


def project_rows(X_block, A):
    """Pass 1 of a linear map: the embeddings ``X_block A^T`` (m, k) of a block of points."""
    return X_block @ A.T


@njit(cache=True, nogil=True)
def _gather_rows(E, first, second, G1, G2, lo, hi):  # pragma: no cover (compiled)
    """``G1[i] = E[first[i]]``, ``G2[i] = E[second[i]]`` for the pairs lo..hi-1."""
    k = E.shape[1]
    for i in range(lo, hi):
        p, q = first[i], second[i]
        for j in range(k):
            G1[i, j] = E[p, j]
            G2[i, j] = E[q, j]


def linear_pair_block(E, index, s, R, kernel, *kernel_args):
    """Pass 2 of a linear map over one chunk of index pairs; returns ``(sum_i J_i,)``.

    With the kernel's :class:`metricfit.losses._rows.IndexRows` (TSML, CSML and DDML have
    them), two passes that read the rows of E where they are: the pairs' costs and scalars
    (norms, weights) on fixed blocks of pairs, then the scatter-add of the per-pair gradients
    onto R, recomputed from E and the scalars, by ranges of points
    (:func:`metricfit.pairs.index.scatter_by_points`). Both run on every core; no (m, k)
    buffer is written, so neither pass leaves the cache for a buffer the size of the pairs.

    Without them, the loss's rows kernel (the kernel of the 3-D path) runs on gathered
    copies of ``a_i = E[p_i]``, ``b_i = E[q_i]``, overwritten with dJ_i/da_i, dJ_i/db_i and
    scatter-added onto the rows p_i, q_i of R, in blocks that stay in cache, on one thread.

    Either way every row of R gets the same additions in the same order and the costs are
    summed in pair order, by blocks of :data:`PAIR_BLOCK` pairs as the serial kernel did: the
    result is the same bit for bit on any number of threads, and on both paths.
    """
    first, second = pair_columns(index)
    m = first.shape[0]
    out = np.empty(m)  # (m,) J_i
    extra = kernel.extra + tuple(kernel_args)
    passes = kernel.index
    if passes is None:
        _gathered_pair_block(E, first, second, s, R, kernel.rows, extra, out)
        return (grouped_sum(out, PAIR_BLOCK),)
    W = np.empty((m, passes.width))  # (m, width) the scalars of each pair's gradients
    run_rows(passes.pair_rows, m, 2 * E.shape[1], E, first, second, s, *extra, out, W,
             driver=passes.pair_driver)
    scatter_by_points(passes.side_rows, first, second, R.shape[0], E, first, second, s, W, R,
                      driver=passes.side_driver, chunk=index)
    return (grouped_sum(out, PAIR_BLOCK),)


def _gathered_pair_block(E, first, second, s, R, rows, extra, out):
    """Pass 2 by a rows kernel on gathered rows: gather, kernel, scatter-add, block after
    block of pairs (the blocks stay in cache), on one thread."""
    m, k = first.shape[0], E.shape[1]
    block = 2 * row_block(k)
    G1, G2 = (np.empty((min(m, block), k), dtype=E.dtype) for _ in range(2))  # (block, k)
    order = np.arange(2 * G1.shape[0])
    for lo in range(0, m, block):
        hi = min(lo + block, m)
        p, q, g1, g2 = first[lo:hi], second[lo:hi], G1[:hi - lo], G2[:hi - lo]
        _gather_rows(E, p, q, g1, g2, 0, hi - lo)
        rows(g1, g2, s[lo:hi], *extra, out[lo:hi], 0, hi - lo)
        scatter_sides(R, p, q, g1, g2, order, 0, 2 * (hi - lo))


class IndexPairObjective(PreparedObjective):
    """``f(A) -> (J, G)`` of a linear pair loss over index pairs into a points array.

    The same cost and gradient as the loss's prepared objective on the pairs of vectors
    ``(points[index[:, 0]], points[index[:, 1]])`` (a test ties them to 1e-12), computed by
    the three passes of this module: no (n_pairs, 2, d) array is made.

    Parameters
    ----------
    points : array-like of shape (n_points, d)
        In memory, a memmap (read in blocks of rows) or a Dask array (map-reduce).
    index : array-like of shape (n_pairs, 2), integer
    s : array-like of shape (n_pairs,)
    kernel : metricfit.losses._rows.PairKernel
        The loss's fused embedding kernel ``kernel(P1, P2, s) -> sum_i J_i``, overwriting P1,
        P2 with dJ_i/da_i, dJ_i/db_i; its rows kernel runs on the gathered pairs.
    kernel_args : tuple, default=()
        Extra scalars of the rows kernel, after the kernel's own.
    lam, A0, chunk_size
        As :class:`metricfit.losses._linear.PreparedObjective`.

    Notes
    -----
    Batch protocol: ``batch(A, indices)`` runs the same passes on the pairs ``indices`` and
    only the points they use, so a mini-batch costs O(batch k d), not O(n_points k d).

    Examples
    --------
    The losses' ``index_objective`` builds one (here TSML's); it equals the objective on the
    gathered pairs of vectors:

    >>> import numpy as np
    >>> from metricfit.losses import tsml
    >>> rng = np.random.default_rng(0)
    >>> points = rng.normal(size=(6, 4))
    >>> index = np.array([[0, 1], [2, 3], [4, 5], [0, 5], [1, 2], [3, 4]])
    >>> s = np.array([1, 1, 1, -1, -1, -1])
    >>> f = tsml.index_objective(points, index, s, lam=0.1)
    >>> type(f).__name__
    'IndexPairObjective'
    >>> vectors = tsml.objective(points[index[:, 0]], points[index[:, 1]], s, lam=0.1)
    >>> A = rng.normal(size=(2, 4))
    >>> (J, G), (J_vec, G_vec) = f(A), vectors(A)
    >>> bool(np.isclose(J, J_vec) and np.allclose(G, G_vec))
    True
    >>> bool(np.allclose(f.batch(A, [1, 4])[1], vectors.batch(A, [1, 4])[1]))
    True
    """

    def __init__(self, points, index, s, kernel, kernel_args=(), lam=0.0, A0=None,
                 chunk_size=CHUNK_SIZE, validated=False):
        points, index, s = check_index_pair_data(points, index, s, validated)
        dtype = s.dtype
        self._init_common(index.shape[0], points.shape[1], dtype, s, lam, A0, chunk_size)
        self._embedding_kernel, self.kernel_args = kernel, tuple(kernel_args)
        self.passes = make_passes(points, index, s, dtype, self.chunk_size)

    def _data_cost_grad(self, A, passes=None):
        passes = self.passes if passes is None else passes
        totals, G = passes.run(A, project_rows, linear_pair_block,
                               (self._embedding_kernel, *self.kernel_args), A.shape[0])
        return totals[0], G

    def batch(self, A, indices):
        passes = self.passes.subset(np.asarray(indices))
        return self._evaluate(A, lambda A: self._data_cost_grad(A, passes),
                              passes.index.shape[0])
