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
2. pairs, in chunks: gather ``P[p], P[q]``, the loss's fused kernel turns them into
   ``dJ/da, dJ/db`` in place (the same kernel the 3-D path uses), scatter-add onto ``R``;
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

from ..pairs.index import check_index_pair_data
from ..pairs.passes import make_passes
from ._linear import CHUNK_SIZE, PreparedObjective

__all__ = ["IndexPairObjective", "project_rows", "linear_pair_block"]

PAIR_BLOCK = 64  # pairs gathered at a time into the cache-resident buffers of pass 2


def project_rows(X_block, A):
    """Pass 1 of a linear map: the embeddings ``X_block A^T`` (m, k) of a block of points."""
    return X_block @ A.T


@njit(cache=False)  # takes the loss kernel as an argument: numba types it by address
def _gather_loss_scatter(kernel, E, first, second, s, R, *kernel_args):  # pragma: no cover
    """For blocks of PAIR_BLOCK pairs: gather ``E[p_i]``, ``E[q_i]`` into two small buffers,
    let ``kernel`` overwrite them with dJ_i/da_i, dJ_i/db_i, scatter-add them onto R[p_i],
    R[q_i]. The buffers stay in cache, so each pair costs two row reads of E and two
    read-modify-writes of R. Serial and in order: the sums are deterministic."""
    m, k = first.shape[0], E.shape[1]
    size = min(PAIR_BLOCK, m)
    buf1 = np.empty((size, k), dtype=E.dtype)
    buf2 = np.empty((size, k), dtype=E.dtype)
    total = 0.0
    for start in range(0, m, size):
        b = min(size, m - start)
        for i in range(b):
            p, q = first[start + i], second[start + i]
            for j in range(k):
                buf1[i, j] = E[p, j]
                buf2[i, j] = E[q, j]
        total += kernel(buf1[:b], buf2[:b], s[start:start + b], *kernel_args)
        for i in range(b):
            p, q = first[start + i], second[start + i]
            for j in range(k):
                R[p, j] += buf1[i, j]
                R[q, j] += buf2[i, j]
    return total


def linear_pair_block(E, index, s, R, kernel, *kernel_args):
    """Pass 2 of a linear map over one chunk of index pairs; returns ``(sum_i J_i,)``.

    Gathers ``a_i = E[p_i]``, ``b_i = E[q_i]``, lets the loss's fused ``kernel(a, b, s,
    *kernel_args)`` overwrite them with dJ_i/da_i, dJ_i/db_i (the kernel of the 3-D path),
    and scatter-adds those onto the rows p_i, q_i of R (n_points, k).
    """
    first, second = np.ascontiguousarray(index[:, 0]), np.ascontiguousarray(index[:, 1])
    return (_gather_loss_scatter(kernel, E, first, second, s, R, *kernel_args),)


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
    kernel : callable
        The loss's fused embedding kernel ``kernel(P1, P2, s, *kernel_args) -> sum_i J_i``,
        overwriting P1, P2 with dJ_i/da_i, dJ_i/db_i.
    kernel_args : tuple, default=()
        Extra scalars of the kernel (DDML's T and tau).
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
