"""Index pairs as the learners hold them: :class:`IndexPairs`, and what needs no block of a
point store read (the kind of pairs, row selection, the scatter-add of pass 2, a row-wise map
of the points). Every name is importable from :mod:`metricfit.pairs.index`, which adds the
validation of point stores and the passes over blocks of rows and chunks of pairs.
"""

from numbers import Integral

import numpy as np
from numba import njit

from ..parallel import get_threads, launch, map_blocks

__all__ = ["IndexPairs"]


def is_dask(X):
    """True for a Dask collection (checked by module name: Dask is never imported here)."""
    return type(X).__module__.split(".")[0] == "dask"


def is_index_pairs(pairs):
    """True when ``pairs`` is 2-D (index pairs), False for 3-D vector pairs."""
    return np.ndim(pairs) == 2


def _streamed(X):
    """A point store read block by block (memmap, h5py/zarr dataset, ...), never loaded."""
    if isinstance(X, np.memmap):
        return True
    return (not isinstance(X, (np.ndarray, list, tuple)) and hasattr(X, "shape")
            and hasattr(X, "dtype") and hasattr(X, "__getitem__"))


def read_rows(X, rows, dtype):
    """Rows ``X[rows]`` (a slice or indices) as a C-contiguous NumPy array of ``dtype``."""
    return np.ascontiguousarray(X[rows], dtype=dtype)


def pair_blocks(n_pairs, chunk_size):
    """Slices of ``chunk_size`` pairs."""
    return [slice(start, min(start + chunk_size, n_pairs))
            for start in range(0, n_pairs, int(chunk_size))]


def check_chunk_size(chunk_size):
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, Integral) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}.")
    return int(chunk_size)


@njit(cache=True)
def scatter_add_rows(R, rows, D, weight):  # pragma: no cover (compiled)
    """``R[rows[i]] += weight * D[i]`` for every i, rows repeated or not (serial, in order)."""
    m, k = D.shape
    for i in range(m):
        r = rows[i]
        for j in range(k):
            R[r, j] += weight * D[i, j]


@njit(cache=True, nogil=True)
def _sides_by_range(first, second, size, n_ranges):  # pragma: no cover (compiled)
    """A counting sort of the 2m sides (2i: point first[i], 2i + 1: point second[i]) by the
    range of ``size`` points their point falls in, each range's sides kept in (pair, side)
    order; returns (starts (n_ranges + 1,), order (2m,)): the sides of range r are
    ``order[starts[r]:starts[r + 1]]``."""
    m = first.shape[0]
    starts = np.zeros(n_ranges + 1, dtype=np.int64)
    for i in range(m):
        starts[first[i] // size + 1] += 1
        starts[second[i] // size + 1] += 1
    for r in range(n_ranges):
        starts[r + 1] += starts[r]
    fill = starts[:-1].copy()
    order = np.empty(2 * m, dtype=np.int64)
    for i in range(m):
        r = first[i] // size
        order[fill[r]] = 2 * i
        fill[r] += 1
        r = second[i] // size
        order[fill[r]] = 2 * i + 1
        fill[r] += 1
    return starts, order


def point_ranges(n_points, n_sides):
    """``(size, n_ranges)``: ranges of ``size`` consecutive points, about as many ranges as
    sides (one point a range while there are fewer points than sides), so that the sort of
    :func:`_sides_by_range` costs O(sides), not O(points), and a range's sides mostly share
    their point."""
    size = -(-int(n_points) // max(1, min(int(n_points), int(n_sides))))
    return size, -(-int(n_points) // size)


@njit(cache=True, nogil=True)
def scatter_sides(R, first, second, G1, G2, order, lo, hi):  # pragma: no cover (compiled)
    """``R[first[i]] += G1[i]`` (side 2i) and ``R[second[i]] += G2[i]`` (side 2i + 1) for the
    sides ``order[lo:hi]``, in that order."""
    k = R.shape[1]
    for t in range(lo, hi):
        e = order[t]
        i = e // 2
        if e % 2 == 0:
            p = first[i]
            for j in range(k):
                R[p, j] += G1[i, j]
        else:
            q = second[i]
            for j in range(k):
                R[q, j] += G2[i, j]


def sorted_sides(first, second, n_points, n_threads):
    """``(order, cuts)``: the 2m sides sorted (stably) by ranges of points
    (:func:`_sides_by_range`, :func:`point_ranges`), and cut at range boundaries into
    ``n_threads`` runs holding about as many sides each (``cuts``, n_threads + 1)."""
    m = first.shape[0]
    starts, order = _sides_by_range(first, second, *point_ranges(n_points, 2 * m))
    return order, _runs(starts, 2 * m, n_threads)


def _runs(starts, n_sides, n_threads):
    ranges = np.searchsorted(starts, np.arange(1, n_threads) * (n_sides / n_threads))
    return np.concatenate([[0], starts[ranges], [n_sides]])  # side runs, at range boundaries


def scatter_by_points(kernel, first, second, n_points, *args, driver=None, chunk=None):
    """Run a scatter-add ``kernel(*args, order, lo, hi)`` over the 2m sides of the pairs
    (``order[t]`` = 2i for point first[i], 2i + 1 for second[i]) on every core, with a result
    that does not depend on the thread count.

    On one thread: one call over the sides in (pair, side) order, or sorted as below where
    ``chunk`` keeps the sort (the same bits; on 8,192 float64 pairs over 2,000 points TSML /
    CSML / DDML's scatter took 2.04 / 3.04 / 2.94 ms sorted against 2.26 / 3.54 / 3.81 ms in
    pair order, float32 the same either way). Else the sides are sorted (stably) by ranges
    of points, as many ranges as sides at most (one point a range while the points are
    fewer: :func:`point_ranges`), and the ranges are cut into one run a thread
    holding about as many sides each; a task adds the sides of its run, range after range.
    No two tasks write the same row, and each row still receives its additions in (pair,
    side) order, so the sums are the same bit for bit as on one thread (where the cut falls
    does not matter). Range after range, a row of R stays in cache while its sides are added.
    The caller holds BLAS back if GEMMs could run meanwhile. ``driver(*args, order, cuts)``,
    the kernel's numba ``parallel=True`` twin (``kernel(*args, order, cuts[t], cuts[t + 1])``
    for each run t), runs the runs on numba's threads where
    :func:`metricfit.parallel.kernel_threads` allows; else the package pool does.
    ``chunk``, the :class:`IndexChunk` of these pairs, keeps the sort from one call to the
    next (it depends on the pairs alone).
    """
    m, n_threads = first.shape[0], get_threads()
    kept = isinstance(chunk, IndexChunk) and chunk._sorted is not None and m >= 64  # not a view
    if n_threads <= 1 or m < 64:
        order = chunk.sorted_sides(n_points, 1)[0] if kept else np.arange(2 * m)
        kernel(*args, order, 0, 2 * m)
        return
    order, cuts = (chunk.sorted_sides(n_points, n_threads) if kept
                   else sorted_sides(first, second, n_points, n_threads))
    if not launch(driver, n_threads, *args, order, cuts):
        map_blocks(lambda b: kernel(*args, order, cuts[b.start], cuts[b.stop]), n_threads, 1)


class IndexChunk(np.ndarray):
    """A chunk of index pairs (m, 2) that keeps what pass 2 derives from the pairs alone,
    so that an objective derives it once instead of at every evaluation:
    :meth:`columns` (contiguous, no copy) and :meth:`sorted_sides` (the order in which
    :func:`scatter_by_points` adds the sides, and its runs for each thread count).

    A read-only view of its own C-ordered (2, m) int64 copy of the pairs: the pairs cannot
    change under what was derived from them. Views and results of it keep nothing derived.
    The sort is serial: on 8,192 pairs over 2,000 points it took 0.07 ms warm and 0.17-0.18
    ms right after the pairs' kernel, plus 0.06 ms of Python around it, where the whole pass
    took 2.6 ms at 2 threads.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.pairs.index import IndexChunk
    >>> chunk = IndexChunk(np.array([[0, 1], [2, 0], [1, 1]]))
    >>> chunk.tolist(), [c.tolist() for c in chunk.columns()]
    ([[0, 1], [2, 0], [1, 1]], [[0, 2, 1], [1, 0, 1]])
    >>> order, cuts = chunk.sorted_sides(n_points=3, n_threads=2)
    >>> order.tolist()  # point 0's sides, point 1's, point 2's
    [0, 3, 1, 4, 5, 2]
    >>> cuts.tolist()  # two runs, cut between points: points 0 and 1, point 2
    [0, 5, 6]
    >>> chunk.sorted_sides(3, 2)[0] is order  # made once
    True
    """

    def __new__(cls, index):
        columns = np.array(np.asarray(index).T, dtype=np.int64, order="C")  # (2, m), a copy
        chunk = columns.T.view(cls)
        chunk.flags.writeable = False
        chunk._columns, chunk._sorted = columns, {}
        return chunk

    def __array_finalize__(self, obj):
        self._columns = self._sorted = None

    def columns(self):
        """``(first, second)``: the pairs' two columns, contiguous and writeable int64 (numba
        compiles its kernels once for them, read-only arrays being another type)."""
        if self._columns is None:  # a view of a chunk
            return pair_columns(np.asarray(self))
        return self._columns[0], self._columns[1]

    def sorted_sides(self, n_points, n_threads):
        """:func:`sorted_sides` of the pairs, the sort made once for ``n_points``."""
        first, second = self.columns()
        if self._sorted is None:
            return sorted_sides(first, second, n_points, n_threads)
        if n_points not in self._sorted:
            self._sorted[n_points] = (_sides_by_range(
                first, second, *point_ranges(n_points, 2 * first.shape[0])), {})
        (starts, order), runs = self._sorted[n_points]
        if n_threads not in runs:
            runs[n_threads] = _runs(starts, 2 * first.shape[0], n_threads)
        return order, runs[n_threads]


def pair_columns(index):
    """``(first, second)``: the columns of (m, 2) index pairs as contiguous arrays (views of
    an :class:`IndexChunk`'s own columns, else copies)."""
    if isinstance(index, IndexChunk):
        return index.columns()
    return np.ascontiguousarray(index[:, 0]), np.ascontiguousarray(index[:, 1])


def normalised_points(points, normalise):
    """The points with rows mapped by ``normalise`` (a row-wise map that keeps the width,
    e.g. L2 normalisation): a copy in memory, per block for a streamed store
    (:class:`NormalisedRows`) or per chunk for a Dask array, never loading either."""
    if is_dask(points):
        return points.rechunk({1: -1}).map_blocks(normalise, dtype=points.dtype)
    if type(points) is np.ndarray:
        return normalise(points)
    return NormalisedRows(points, normalise)


class NormalisedRows:
    """A read-only view of a point store whose rows come out L2-normalised.

    ``normalize=True`` for points that must not be loaded: each block read is normalised
    (:func:`metricfit.mappings.l2_normalize` semantics, passed in as ``normalise``).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.mappings import l2_normalize
    >>> from metricfit.pairs.index import NormalisedRows
    >>> rows = NormalisedRows(np.array([[3.0, 4.0], [0.0, 2.0], [0.0, 0.0]]), l2_normalize)
    >>> rows.shape, len(rows)
    ((3, 2), 3)
    >>> rows[0:2]  # normalised as read; a zero row stays zero
    array([[0.6, 0.8],
           [0. , 1. ]])
    >>> rows[[2]]
    array([[0., 0.]])
    """

    def __init__(self, X, normalise):
        self.X, self.normalise = X, normalise
        self.shape, self.dtype = tuple(X.shape), np.dtype(X.dtype)

    def __getitem__(self, rows):
        return self.normalise(np.asarray(self.X[rows]))

    def __len__(self):
        return self.shape[0]


def gradient_rows(R_block, X_block, theta=None):
    """Pass 3 of a linear map for a block of points: ``R_block^T X_block`` (width, d)."""
    return R_block.T @ X_block


class IndexPairs:
    """Index pairs into points, standing for the (n_pairs, 2, d) array they never form.

    Quacks like that array where the learners need it: ``shape``, ``dtype``, ``len`` and row
    selection ``pairs[rows]`` (a mask or indices; an all-true mask returns ``self``, so
    nothing is copied when every pair is used).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.pairs.index import IndexPairs
    >>> pairs = IndexPairs(np.arange(8.0).reshape(4, 2), np.array([[0, 1], [2, 3], [0, 3]]))
    >>> pairs.shape, len(pairs), pairs.dtype  # as an (n_pairs, 2, d) array would have
    ((3, 2, 2), 3, dtype('float64'))
    >>> pairs[[0, 2]].index.tolist(), pairs[np.ones(3, dtype=bool)] is pairs
    ([[0, 1], [0, 3]], True)
    """

    def __init__(self, points, index):
        self.points, self.index = points, index
        self.shape = (index.shape[0], 2, points.shape[1])
        self.dtype = np.dtype(points.dtype)

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, rows):
        rows = np.asarray(rows)
        if rows.dtype == bool and rows.all():
            return self
        return IndexPairs(self.points, np.asarray(self.index[rows]))

    def with_points(self, points):
        """The same pairs into other points (e.g. normalised ones)."""
        return IndexPairs(points, self.index)


def map_pair_vectors(f, pairs):
    """Apply the row-wise map ``f`` ((m, d) -> (m, d)) to every vector of ``pairs``.

    Vector pairs (n, 2, d), or points (n, d): ``f`` of the flattened rows, same shape back.
    :class:`IndexPairs`: the same pairs into the mapped points (:func:`normalised_points`:
    block by block for a streamed store, per chunk for a Dask array, never loaded).
    """
    if isinstance(pairs, IndexPairs):
        return pairs.with_points(normalised_points(pairs.points, f))
    return f(pairs.reshape(-1, pairs.shape[-1])).reshape(pairs.shape)


def pairs_as_given(pairs):
    """The pairs as the estimators' public methods take them: the (n_pairs, 2) index of
    :class:`IndexPairs` (into the estimator's ``preprocessor``), vector pairs unchanged."""
    return pairs.index if isinstance(pairs, IndexPairs) else pairs


def largest_entry(pairs, points=None):
    """The largest |entry| of the vectors of ``pairs`` (for error messages), NaN if the
    input is not numeric: vector pairs, :class:`IndexPairs`, or raw (n_pairs, 2) index
    pairs into ``points``."""
    if isinstance(pairs, IndexPairs):
        data = pairs.points
    elif points is not None and np.ndim(pairs) == 2:  # index pairs as given: rows of points
        data = points
    else:
        data = pairs
    try:
        return float(np.max(np.abs(np.asarray(data, dtype=np.float64))))
    except (TypeError, ValueError):
        return float("nan")
