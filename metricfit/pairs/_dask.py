"""The three passes over index pairs as a map-reduce on a Dask scheduler (``metricfit[dask]``).

When the points or the index pairs of an objective are Dask arrays, :func:`metricfit.pairs.
passes.make_passes` returns :class:`DaskPasses`: each evaluation is one Dask graph, computed
on the scheduler in use (threads, processes or a ``dask.distributed`` cluster, whichever
``dask.compute`` picks: inside ``with Client(...)`` the gradient runs on its workers)::

    X blocks --embed--> E blocks --concatenate--> E
    (index, s) chunks --pair_block(E, .)--> (totals_c, R_c)  --tree sum--> (totals, R)
    (R rows of block b, X block b) --back--> G_b              --tree sum--> G

The sums run in a fixed tree, so the result does not depend on which worker finishes first
(a fit on a cluster equals the in-memory fit to round-off). The points, index and labels
are persisted once per objective; a lost worker's tasks and data are recomputed by Dask from
their lineage, so a fit survives a worker dying mid-evaluation.

Dask is imported here only, and this module only when an objective meets a Dask array.
"""

import numpy as np

try:
    import dask
    import dask.array as da
except ImportError as exc:  # pragma: no cover (the core never needs Dask)
    raise ImportError("Dask arrays as points or index pairs need the optional dependency: "
                      "pip install 'metricfit[dask]'") from exc

from .index import (
    POINT_BLOCK_BYTES,
    SerialPasses,
    check_chunk_size,
    gradient_rows,
    is_dask,
    pair_blocks,
)

__all__ = ["DaskPasses", "PAIRS_PER_TASK"]

PAIRS_PER_TASK = 1_000_000  # index pairs per pass-2 task, when the index is not a Dask array
TREE_WIDTH = 2  # partial results per reduction task: each holds an (n_points, k) R


def _as_dask(X, rows_per_chunk, dtype=None):
    """X as a Dask array chunked along rows only (whole rows in every chunk)."""
    X = X if is_dask(X) else da.from_array(X, chunks=(rows_per_chunk, -1))
    X = X.rechunk({1: -1})
    return X if dtype is None else X.astype(dtype)


def _pair_part(E, index, s, width, pair_block, args, chunk_size):
    """Pass 2 over one task's pairs: ``(totals, R)`` with R (n_points, width) of its own."""
    R = np.zeros((E.shape[0], width), dtype=s.dtype)
    totals = 0.0
    for rows in pair_blocks(index.shape[0], chunk_size):
        totals = np.add(totals, pair_block(E, np.asarray(index[rows]), s[rows], R, *args))
    return totals, R


def _sum(*parts):
    """Sum of arrays or of (totals, R) tuples, in the order given."""
    if isinstance(parts[0], tuple):
        return tuple(_sum(*column) for column in zip(*parts, strict=True))
    total = parts[0].copy() if isinstance(parts[0], np.ndarray) else parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def _tree_sum(parts):
    """A fixed tree of delayed sums (deterministic, whatever the scheduling)."""
    while len(parts) > 1:
        parts = [dask.delayed(_sum, pure=True)(*parts[start:start + TREE_WIDTH])
                 for start in range(0, len(parts), TREE_WIDTH)]
    return parts[0]


class DaskPasses:
    """The passes of :class:`metricfit.pairs.index.SerialPasses` as one Dask graph per call.

    Parameters
    ----------
    points : Dask or NumPy array (n_points, d)
        Chunked along rows (columns are merged); a NumPy array or memmap is wrapped in
        ~32 MB blocks of rows.
    index : Dask or NumPy array (n_pairs, 2)
        One pass-2 task per chunk (``PAIRS_PER_TASK`` pairs for a NumPy index).
    s : NumPy array (n_pairs,), labels in the data dtype
    dtype : the data dtype
    chunk_size : int
        Pairs per pair_block call inside a task (bounds its temporaries).

    Examples
    --------
    The passes of the :class:`~metricfit.pairs.index.SerialPasses` example, with the points
    in two Dask chunks, on the synchronous scheduler: the same sums.

    >>> import numpy as np
    >>> points = np.arange(8.0).reshape(4, 2)
    >>> index = np.array([[0, 1], [2, 3], [0, 3]])  # 3 pairs over 4 points
    >>> s = np.array([1.0, 1.0, -1.0])
    >>> def embed(X_block, A):  # pass 1: the linear map
    ...     return X_block @ A.T
    >>> def half_sq(E, index, s, R):  # pass 2: J_i = |a_i - b_i|^2 / 2
    ...     diff = E[index[:, 0]] - E[index[:, 1]]
    ...     np.add.at(R, index[:, 0], diff)  # dJ_i/da_i onto point p_i
    ...     np.add.at(R, index[:, 1], -diff)  # dJ_i/db_i onto point q_i
    ...     return (0.5 * np.sum(diff ** 2),)
    >>> import dask
    >>> import dask.array as da
    >>> from metricfit.pairs._dask import DaskPasses
    >>> with dask.config.set(scheduler="synchronous"):
    ...     passes = DaskPasses(da.from_array(points, chunks=(2, 2)), index, s, np.float64, 2)
    ...     totals, G = passes.run(np.eye(2), embed, half_sq, (), width=2)
    >>> passes.points.chunks, totals, G
    (((2, 2), (2,)), array([44.]), array([[44., 44.],
           [44., 44.]]))
    """

    def __init__(self, points, index, s, dtype, chunk_size):
        self.dtype, self.chunk_size = np.dtype(dtype), check_chunk_size(chunk_size)
        rows = max(1, POINT_BLOCK_BYTES // (points.shape[1] * self.dtype.itemsize))
        points = _as_dask(points, rows, self.dtype)
        index = _as_dask(index, PAIRS_PER_TASK)
        labels = da.from_array(np.asarray(s), chunks=(index.chunks[0],))
        self.points, self.index, self.labels = dask.persist(points, index, labels)
        self._starts = np.cumsum((0,) + self.points.chunks[0])
        self._x_blocks = list(self.points.to_delayed().ravel())
        self._pair_chunks = list(zip(self.index.to_delayed().ravel(),
                                     self.labels.to_delayed().ravel(), strict=True))

    def run(self, theta, embed, pair_block, args, width, back=None):
        """``(totals, G)`` as :meth:`SerialPasses.run`, computed on the Dask scheduler."""
        back = gradient_rows if back is None else back
        theta = dask.delayed(theta, pure=True)
        E = dask.delayed(np.concatenate, pure=True)(
            [dask.delayed(embed, pure=True)(X, theta) for X in self._x_blocks])
        parts = [dask.delayed(_pair_part, pure=True)(E, index, s, width, pair_block, args,
                                                     self.chunk_size)
                 for index, s in self._pair_chunks]
        reduced = _tree_sum(parts)  # (totals, R)
        blocks = [dask.delayed(back, pure=True)(reduced[1][start:stop], X, theta)
                  for start, stop, X in zip(self._starts[:-1], self._starts[1:],
                                            self._x_blocks, strict=True)]
        return dask.compute(reduced[0], _tree_sum(blocks))

    def subset(self, indices):
        """Serial passes over the pairs ``indices`` (a mini-batch), gathered from Dask."""
        indices = np.asarray(indices)
        index = np.asarray(self.index[indices])  # (b, 2)
        used, local = np.unique(index, return_inverse=True)
        points = np.asarray(self.points[used])  # (n_used, d)
        labels = np.asarray(self.labels[indices])
        return SerialPasses(points, local.reshape(-1, 2), labels, self.dtype, self.chunk_size)
