"""Index pairs: pairs given as rows of an (n_pairs, 2) integer array into a points array.

With many pairs over few points (the unrestricted setting: every pair of 36,572 i-vectors,
seed 004 section 5.2.2), an (n_pairs, 2, d) array repeats each point in every pair it is
part of. Index pairs keep the points once, as an (n_points, d) array given to a learner as
its ``preprocessor`` (metric-learn's convention), and the pairs as ``index[i] = (p, q)``:
pair i is ``(points[p], points[q])``.

The points may live in memory, in a :class:`numpy.memmap` (or any array whose row slices
convert to NumPy, e.g. an h5py or zarr dataset), or in a Dask array. Nothing here ever
loads more than a block of rows of a non-NumPy point store at once: :func:`row_blocks`
gives the blocks, :func:`read_rows` reads one.

The three passes
----------------
An objective over index pairs (:mod:`metricfit.losses._index`) is evaluated in three passes:
``embed`` each block of points (e.g. ``P = X A^T``), a ``pair_block`` over each chunk of
pairs that gathers rows of the embeddings and scatter-adds per-pair gradients onto an
(n_points, width) array R, and ``back`` each block of R with its points (``R^T X``).
:class:`SerialPasses` runs them here; :func:`metricfit.pairs.passes.make_passes` picks the
Dask map-reduce (:mod:`metricfit.pairs._dask`) when the points or the index are Dask arrays.

:class:`IndexPairs` and the helpers that read no block of points live in
:mod:`metricfit.pairs._index_pairs`, :func:`similar_pair_classes` in
:mod:`metricfit.pairs.identity`; every name stays importable from here.
"""

import numpy as np

from ._index_pairs import (  # noqa: F401
    IndexChunk,
    IndexPairs,
    NormalisedRows,
    _streamed,
    check_chunk_size,
    gradient_rows,
    is_dask,
    is_index_pairs,
    largest_entry,
    map_pair_vectors,
    normalised_points,
    pair_blocks,
    pair_columns,
    pairs_as_given,
    read_rows,
    scatter_add_rows,
    scatter_by_points,
    scatter_sides,
)
from .checks import FLOAT_DTYPES, check_pair_labels, check_pairs, check_points, float_dtype
from .identity import similar_pair_classes  # noqa: F401

# Public: the index-pair container and its validation. The passes, kernels and block
# helpers below stay importable from here but are internals.
__all__ = ["IndexPairs", "check_pair_input", "check_point_store", "check_index_pairs"]

POINT_BLOCK_BYTES = 32 * 2**20  # rows of a point store read per block (~32 MB)
CHUNK_SIZE = 8192  # pairs per chunk of every pass over pairs (vector or index; losses, mappings)
KEPT_CHUNK_PAIRS = 1 << 23  # in-memory index pairs up to which SerialPasses keeps IndexChunks


def row_blocks(n_rows, n_cols, itemsize, max_bytes=None):
    """Slices of at most ``max_bytes`` (default ``POINT_BLOCK_BYTES``) of rows of an
    (n_rows, n_cols) array."""
    max_bytes = POINT_BLOCK_BYTES if max_bytes is None else max_bytes
    step = max(1, int(max_bytes) // max(1, n_cols * itemsize))
    return [slice(start, min(start + step, n_rows)) for start in range(0, n_rows, step)]


def check_point_store(X, *, n_features=None, what="preprocessor"):
    """Validate the points of index pairs; return them without loading a streamed store.

    In-memory arrays go through :func:`check_points` (float32/float64 kept, other numbers
    become float64). A memmap or other streamed store must already hold float32 or float64
    (converting it would load it) and is checked for NaN/inf block by block. A Dask array is
    checked lazily in one pass. Returns the points (the same object for a streamed store).
    """
    if X is None:
        raise ValueError(f"index pairs (n_pairs, 2) need the points: set {what} to an "
                         "(n_points, n_features) array.")
    if is_dask(X) or _streamed(X):
        _check_store_meta(X, n_features, what)
        _check_store_finite(X, what)
        return X
    return check_points(X, n_features=n_features, what=what)


def _check_store_meta(X, n_features, what):
    kind = type(X).__name__
    if len(X.shape) != 2 or 0 in X.shape:
        raise ValueError(f"{what} must be a non-empty 2-D array of shape (n_points, "
                         f"n_features), got a {kind} of shape {tuple(X.shape)}.")
    if np.dtype(X.dtype) not in FLOAT_DTYPES:
        raise ValueError(f"{what} is a {kind} of dtype {np.dtype(X.dtype)}: out-of-core points "
                         "must be float32 or float64 (converting would load them all); write "
                         "them to disk as float32 or float64.")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{what} has {X.shape[1]} features, but the estimator was fitted with "
                         f"{n_features} features.")


def _check_store_finite(X, what):
    if is_dask(X):
        finite = bool(_dask_all_finite(X))
    else:
        finite = all(np.isfinite(X[rows]).all()
                     for rows in row_blocks(X.shape[0], X.shape[1], X.dtype.itemsize))
    if not finite:
        raise ValueError(f"{what} contains NaN or infinity: remove or impute non-finite values "
                         "first.")


def _dask_all_finite(X):
    import dask.array as da

    return da.isfinite(X).all().compute()


def check_index_pairs(index, n_points, what="pairs"):
    """Validate index pairs into ``n_points`` points; return them (never copied).

    Parameters
    ----------
    index : array-like of shape (n_pairs, 2), integer dtype
        ``index[i] = (p, q)``: pair i is ``(points[p], points[q])``. A NumPy array (any
        integer dtype: int32 halves the memory of int64), a memmap or a Dask array.
    n_points : int

    Raises
    ------
    ValueError
        On a non-integer dtype (floats are refused, even with integral values), a shape other
        than (n_pairs, 2), no pairs, or an index outside ``[0, n_points)``.
    """
    if not (is_dask(index) or _streamed(index)):
        index = np.asarray(index)
    dtype = np.dtype(index.dtype)
    if dtype.kind not in "iu":
        raise ValueError(f"index {what} must hold integers (row numbers of the points), got "
                         f"dtype {dtype}.")
    if len(index.shape) != 2 or index.shape[1] != 2 or index.shape[0] == 0:
        raise ValueError(f"index {what} must have shape (n_pairs, 2) with n_pairs >= 1, got "
                         f"{tuple(index.shape)}.")
    low, high = _index_range(index)
    if low < 0 or high >= n_points:
        bad = low if low < 0 else high
        raise ValueError(f"index {what} has an index {bad} out of range: the points have "
                         f"{n_points} rows (valid indices 0 .. {n_points - 1}).")
    return index


def _index_range(index):
    if is_dask(index):
        import dask

        return (int(v) for v in dask.compute(index.min(), index.max()))
    low, high = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    for rows in row_blocks(index.shape[0], 2, index.dtype.itemsize):
        block = np.asarray(index[rows])
        low, high = min(low, int(block.min())), max(high, int(block.max()))
    return low, high


def check_index_pair_data(points, index, s, validated=False):
    """Validate points (n_points, d), index pairs (n_pairs, 2) and labels; return
    ``(points, index, s)`` with s in the points' float dtype (float32 kept, else float64).

    Neither the points nor the index are copied when they already have a valid dtype.
    ``validated=True`` (checked at the estimator's edge): only s is converted.
    """
    if validated:
        return points, index, np.asarray(s).astype(float_dtype(points.dtype))
    points = check_point_store(points, what="points")
    index = check_index_pairs(index, points.shape[0])
    s = check_pair_labels(s, index.shape[0], require_both=False).astype(float_dtype(points.dtype))
    return points, index, s


def _point_blocks(points):
    """Row blocks of the points: one block for an in-memory array, ~32 MB blocks otherwise."""
    n, d = points.shape
    if type(points) is np.ndarray:
        return [slice(0, n)]
    return row_blocks(n, d, np.dtype(points.dtype).itemsize)


class SerialPasses:
    """The three passes in this process: points block by block, pairs chunk by chunk.

    Parameters
    ----------
    points : (n_points, d) array, memmap or streamed store
    index : (n_pairs, 2) integer array (or memmap)
    s : (n_pairs,) labels in the data dtype
    dtype : the data dtype
    chunk_size : int
        Pairs per chunk of pass 2.

    Examples
    --------
    Half the squared distance of each pair under ``A``: at ``A = I`` the sum is 44 and the
    gradient (pass 3, ``R^T X``) is ``sum_i delta_i delta_i^T``:

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
    >>> from metricfit.pairs.index import SerialPasses
    >>> passes = SerialPasses(points, index, s, np.float64, chunk_size=2)
    >>> totals, G = passes.run(np.eye(2), embed, half_sq, (), width=2)
    >>> totals, G
    (array([44.]), array([[44., 44.],
           [44., 44.]]))
    >>> D = points[index[:, 0]] - points[index[:, 1]]
    >>> bool(np.allclose(G, D.T @ D))
    True

    A mini-batch runs on the points its pairs use:

    >>> batch = passes.subset([1])
    >>> batch.points.tolist(), batch.index.tolist()
    ([[4.0, 5.0], [6.0, 7.0]], [[0, 1]])
    """

    def __init__(self, points, index, s, dtype, chunk_size=CHUNK_SIZE):
        self.points, self.index, self.labels, self.dtype = points, index, s, np.dtype(dtype)
        self.chunk_size = check_chunk_size(chunk_size)
        self.blocks = _point_blocks(points)
        self._chunks = None

    def __getstate__(self):
        return {**self.__dict__, "_chunks": None}  # what the chunks derive is made again

    def run(self, theta, embed, pair_block, args, width, back=None):
        """``(totals, G)``: the sums ``pair_block`` returns over all chunks and the sum over
        the blocks of ``back(R_block, X_block, theta)`` (default ``R^T X``)."""
        back = gradient_rows if back is None else back
        E = self._embed(theta, embed)  # pass 1
        R = np.zeros((self.points.shape[0], width), dtype=self.dtype)  # (n_points, width)
        totals = 0.0
        for pairs, index in self._pair_chunks():  # pass 2, index (m, 2)
            totals = np.add(totals, pair_block(E, index, self.labels[pairs], R, *args))
        G = 0.0
        for rows in self.blocks:  # pass 3
            G = G + back(R[rows], read_rows(self.points, rows, self.dtype), theta)
        return totals, G

    def _pair_chunks(self):
        """``(pairs, index)`` a chunk: in memory, up to :data:`KEPT_CHUNK_PAIRS` pairs, an
        :class:`IndexChunk` made at the first run and kept (what pass 2 derives from the
        pairs alone, e.g. the sort of their sides, is made once: 16 bytes a pair for the
        chunk's copy, 16 more for the sort); else the pairs read again at every run."""
        blocks = pair_blocks(self.index.shape[0], self.chunk_size)
        if type(self.index) is not np.ndarray or self.index.shape[0] > KEPT_CHUNK_PAIRS:
            return ((pairs, np.asarray(self.index[pairs])) for pairs in blocks)
        if self._chunks is None:
            self._chunks = [(pairs, IndexChunk(self.index[pairs])) for pairs in blocks]
        return self._chunks

    def _embed(self, theta, embed):
        """``embed`` of every point (n_points, e), block by block (no copy for one block)."""
        if len(self.blocks) == 1:
            return embed(read_rows(self.points, self.blocks[0], self.dtype), theta)
        E = None
        for rows in self.blocks:
            E_block = embed(read_rows(self.points, rows, self.dtype), theta)
            if E is None:
                E = np.empty((self.points.shape[0], E_block.shape[1]), dtype=E_block.dtype)
            E[rows] = E_block
        return E

    def subset(self, indices):
        """The passes over the pairs ``indices`` only, on the points they use."""
        index = np.asarray(self.index[indices])  # (b, 2)
        used, local = np.unique(index, return_inverse=True)
        points = read_rows(self.points, used, self.dtype)  # (n_used, d)
        labels = np.asarray(self.labels[indices])
        return SerialPasses(points, local.reshape(-1, 2), labels, self.dtype, self.chunk_size)


def _dtype_kind(X):
    return np.dtype(X.dtype).kind if hasattr(X, "dtype") else np.asarray(X).dtype.kind


def check_pair_input(pairs, preprocessor=None, *, n_features=None, reject_zero=False):
    """The one entry of learners' pairs: vector pairs or index pairs, validated.

    3-D ``pairs`` (n_pairs, 2, d) go through :func:`check_pairs`. 2-D integer ``pairs``
    (n_pairs, 2) are index pairs into ``preprocessor`` (n_points, d), the points: returned
    as :class:`IndexPairs`, nothing gathered. With a preprocessor, 2-D pairs of any other
    dtype are refused; without one, 2-D non-integer pairs get :func:`check_pairs`' message.
    """
    if not is_index_pairs(pairs) or (preprocessor is None and _dtype_kind(pairs) not in "iu"):
        return check_pairs(pairs, n_features=n_features, reject_zero=reject_zero)
    points = check_point_store(preprocessor, n_features=n_features)
    index = check_index_pairs(pairs, points.shape[0])
    if reject_zero:
        check_nonzero_points(points, index)
    return IndexPairs(points, index)


def check_nonzero_points(points, index, what="preprocessor"):
    """Raise if a pair uses an all-zero point (its cosine is undefined)."""
    n, d = points.shape
    zero = np.concatenate([~np.any(read_rows(points, rows, points.dtype) != 0, axis=1)
                           for rows in row_blocks(n, d, np.dtype(points.dtype).itemsize)])
    if not zero.any():
        return
    for pairs in pair_blocks(index.shape[0], POINT_BLOCK_BYTES // 16):
        used = zero[np.asarray(index[pairs])]
        if used.any():
            first = int(np.asarray(index[pairs])[used][0])
            raise ValueError(f"{what} contains all-zero point(s) used by the pairs (first: row "
                             f"{first}): the cosine similarity of a zero vector is undefined.")


def pair_differences(pairs, chunk_size=CHUNK_SIZE, dtype=None):
    """Yield ``x_i - y_i`` (m, d) chunk by chunk, for vector pairs or :class:`IndexPairs`.

    For index pairs this is the one place where pair vectors are gathered: ``chunk_size``
    pairs at a time, so memory stays O(chunk_size d).
    """
    dtype = pairs.dtype if dtype is None else dtype
    for rows in pair_blocks(len(pairs), chunk_size):
        if isinstance(pairs, IndexPairs):
            index = np.asarray(pairs.index[rows])  # (m, 2)
            yield (read_rows(pairs.points, index[:, 0], dtype)
                   - read_rows(pairs.points, index[:, 1], dtype))
        else:
            yield np.asarray(pairs[rows, 0], dtype=dtype) - pairs[rows, 1]


# -- What the learners do to pairs of either kind (the one place that asks which kind) ----


def embed_points(transform, points):
    """``transform`` of every point (n_points, k), a block of rows at a time."""
    n, d = points.shape
    blocks = row_blocks(n, d, np.dtype(points.dtype).itemsize)
    if type(points) is np.ndarray:
        blocks = [slice(0, n)]  # in memory: one product, no concatenation
    embedded = [np.asarray(transform(read_rows(points, rows, points.dtype))) for rows in blocks]
    return embedded[0] if len(embedded) == 1 else np.concatenate(embedded)


def score_index_pairs(transform, score, pairs, chunk_size=CHUNK_SIZE):
    """``score(E[p_i], E[q_i])`` for :class:`IndexPairs`, with ``E = transform(points)``.

    The points are embedded once (only those the pairs use when there are fewer pairs than
    points); pairs are gathered ``chunk_size`` at a time, so memory is O(n_points k).
    """
    points, index = pairs.points, pairs.index
    if is_dask(index):
        index = np.asarray(index)  # one compute, not one per chunk
    if 2 * index.shape[0] < points.shape[0]:
        used, local = np.unique(np.asarray(index), return_inverse=True)
        points, index = read_rows(points, used, points.dtype), local.reshape(-1, 2)
    E = embed_points(transform, points)  # (n_points, k)
    scores = [score(E[np.asarray(index[rows, 0])], E[np.asarray(index[rows, 1])])
              for rows in pair_blocks(index.shape[0], chunk_size)]
    return np.concatenate(scores)


def score_pairs(transform, score, pairs, chunk_size=CHUNK_SIZE):
    """``score(f(x_i), f(y_i))`` (n_pairs,) for vector pairs or :class:`IndexPairs`.

    Parameters
    ----------
    transform : callable
        The map f: points (m, d) -> (m, k) and vector pairs (n, 2, d) -> (n, 2, k).
    score : callable
        ``score(a, b)`` of two (m, k) embeddings -> (m,).
    pairs : ndarray of shape (n_pairs, 2, d) or IndexPairs
        Validated. Vector pairs are mapped in one call; index pairs through
        :func:`score_index_pairs` (the points embedded once, pairs gathered in chunks).
    """
    if isinstance(pairs, IndexPairs):
        return score_index_pairs(transform, score, pairs, chunk_size)
    embedded = transform(pairs)  # (n, 2, k)
    return score(embedded[:, 0], embedded[:, 1])
