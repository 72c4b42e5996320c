"""Tuples beyond pairs: triplets, quadruplets and chunks (metric-learn's weak supervision).

Conventions
-----------
triplets : (n_triplets, 3, n_features) or (n_triplets, 3) index triplets
    ``(a, p, n)``: "a is closer to p than to n", ``d(a, p) < d(a, n)``. No labels: the order
    is the supervision.
quadruplets : (n_quadruplets, 4, n_features) or (n_quadruplets, 4) index quadruplets
    ``(a, b, c, d)``: "``d(a, b) < d(c, d)``". No labels either.
chunks : (n_samples,) int
    RCA's chunklets: ``chunks[i] = c >= 0`` puts point i into chunklet c (points of one
    chunklet share a class, its label unknown); -1 leaves point i out of every chunklet.

Index tuples are integer rows into points held by a ``preprocessor`` (the same convention as
index pairs, :mod:`metricfit.pairs.index`): an (n_points, d) array, a float32/float64 memmap
(read in blocks) or a Dask array; :class:`IndexTuples` stands for the (n, width, d) array
they never form. A callable ``preprocessor`` (metric-learn's third form) receives a 1-D array
of the identifiers of one tuple position and returns their (m, d) vectors; its tuples are
gathered, :data:`TUPLE_CHUNK` at a time, into vector tuples.
"""

from numbers import Integral

import numpy as np
from sklearn.utils import check_random_state

from ._index_pairs import is_dask, pair_blocks, read_rows
from .checks import check_identity_labels, check_pairs
from .index import check_point_store, row_blocks

__all__ = ["IndexTuples", "check_tuples", "check_chunks", "sample_triplets",
           "sample_quadruplets", "sample_chunks", "TUPLE_NAMES"]

TUPLE_NAMES = {2: "pairs", 3: "triplets", 4: "quadruplets"}
TUPLE_CHUNK = 8192  # tuples gathered at a time (vectors of a callable preprocessor, distances)


class IndexTuples:
    """Index tuples into points, standing for the (n_tuples, width, d) array they never form.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.pairs.tuples import IndexTuples
    >>> t = IndexTuples(np.arange(8.0).reshape(4, 2), np.array([[0, 1, 2], [3, 2, 1]]))
    >>> t.shape, len(t), t.width
    ((2, 3, 2), 2, 3)
    >>> t.vectors(slice(1, 2)).tolist()
    [[[6.0, 7.0], [4.0, 5.0], [2.0, 3.0]]]
    """

    def __init__(self, points, index):
        self.points, self.index = points, index
        self.width = int(index.shape[1])
        self.shape = (int(index.shape[0]), self.width, int(points.shape[1]))
        self.dtype = np.dtype(points.dtype)

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, rows):
        return IndexTuples(self.points, np.asarray(self.index[rows]))

    def vectors(self, rows=slice(None), dtype=None):
        """The vector tuples ``rows`` (m, width, d), gathered from the points."""
        index = np.asarray(self.index[rows])
        flat = read_rows(self.points, index.ravel(), dtype or self.dtype)
        return flat.reshape(index.shape[0], self.width, -1)


def _tuple_name(width):
    return TUPLE_NAMES.get(width, f"{width}-tuples")


def check_tuples(tuples, width, preprocessor=None, *, y=None, n_features=None, dtype=None,
                 what=None):
    """Validate tuples of ``width`` points (pairs 2, triplets 3, quadruplets 4).

    Parameters
    ----------
    tuples : array-like of shape (n, width, n_features) or (n, width)
        Vector tuples, or index tuples into the points of ``preprocessor``.
    width : {2, 3, 4}
    preprocessor : array-like of shape (n_points, n_features), memmap, Dask array or callable
        The points of index tuples; a callable maps a 1-D array of identifiers to their
        (m, n_features) vectors.
    y : None
        Triplets and quadruplets carry no labels (the order is the supervision): a ValueError
        when given. Pairs have labels: use :func:`metricfit.pairs.check_pair_labels`.
    n_features : int, default=None
        The expected number of features (the fitted ``n_features_in_``).
    dtype : {np.float64, np.float32}, default=None
        None keeps float32/float64 and turns other numbers into float64.
    what : str, default=None
        The argument's name in messages (default: 'triplets', 'quadruplets', ...).

    Returns
    -------
    tuples : ndarray of shape (n, width, n_features), or :class:`IndexTuples`

    Raises
    ------
    ValueError
        Naming the argument: a tuple axis of another width, index tuples without points or
        with an index out of range, labels for triplets/quadruplets, NaN or infinity, no
        tuples, a feature-count mismatch.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.pairs.tuples import check_tuples
    >>> check_tuples(np.zeros((5, 3, 2)), 3).shape
    (5, 3, 2)
    >>> check_tuples(np.array([[0, 1, 2]]), 3, preprocessor=np.eye(3)).shape
    (1, 3, 3)
    >>> check_tuples(np.zeros((5, 2, 2)), 3)
    Traceback (most recent call last):
    ...
    ValueError: triplets must have the tuple axis (of length 3) at axis 1, got shape (5, 2, 2).
    """
    if width not in TUPLE_NAMES:
        raise ValueError(f"width must be 2, 3 or 4 (pairs, triplets, quadruplets), got {width!r}.")
    what = what or _tuple_name(width)
    if y is not None and width > 2:
        raise ValueError(f"y: {what} carry no labels (the order of each tuple is the "
                         f"supervision), got y of length {np.size(y)}. Drop y, or order the "
                         f"{what} so that the first distance is the smaller one.")
    if preprocessor is not None and callable(preprocessor) and not hasattr(preprocessor, "shape"):
        tuples = _gather_with_callable(tuples, width, preprocessor, what)
    elif np.ndim(tuples) == 2 and (preprocessor is not None or _integer(tuples)):
        return _check_index_tuples(tuples, width, preprocessor, n_features, what)
    if width == 2:
        return check_pairs(tuples, n_features=n_features, dtype=dtype, what=what)
    return _check_vector_tuples(tuples, width, n_features, dtype, what)


def _integer(tuples):
    dtype = tuples.dtype if hasattr(tuples, "dtype") else np.asarray(tuples).dtype
    return np.dtype(dtype).kind in "iu"


def _check_vector_tuples(tuples, width, n_features, dtype, what):
    # check_pairs' checks (numbers, finite, non-empty, features) on a width-2 view of the rows
    arr = np.asarray(tuples) if not hasattr(tuples, "ndim") else tuples
    if np.ndim(arr) != 3:
        raise ValueError(f"{what} must be a 3-D array of shape (n_{what}, {width}, n_features) "
                         f"or index {what} (n_{what}, {width}) with a preprocessor, got shape "
                         f"{np.shape(arr)}.")
    if np.shape(arr)[1] != width:
        raise ValueError(f"{what} must have the tuple axis (of length {width}) at axis 1, got "
                         f"shape {tuple(np.shape(arr))}.")
    n, _, d = np.shape(arr)
    if n == 0 or d == 0:
        raise ValueError(f"{what} is empty: got shape {tuple(np.shape(arr))}.")
    rows = np.reshape(arr, (n * width // 2, 2, d)) if (n * width) % 2 == 0 else None
    if rows is None:  # an odd number of vectors: check them with a repeated last one
        flat = np.reshape(arr, (n * width, d))
        rows = np.concatenate([flat, flat[-1:]]).reshape(-1, 2, d)
        checked = check_pairs(rows, n_features=n_features, dtype=dtype, what=what)
        return checked.reshape(-1, d)[: n * width].reshape(n, width, d)
    return check_pairs(rows, n_features=n_features, dtype=dtype, what=what).reshape(n, width, d)


def _check_index_tuples(tuples, width, preprocessor, n_features, what):
    if preprocessor is None:
        raise ValueError(f"index {what} (n_{what}, {width}) need the points: set preprocessor "
                         "to an (n_points, n_features) array.")
    points = check_point_store(preprocessor, n_features=n_features)
    index = tuples if (is_dask(tuples) or hasattr(tuples, "shape")) else np.asarray(tuples)
    kind = np.dtype(index.dtype).kind
    if kind not in "iu":
        raise ValueError(f"index {what} must hold integers (row numbers of the points), got "
                         f"dtype {np.dtype(index.dtype)}.")
    if len(index.shape) != 2 or index.shape[1] != width or index.shape[0] == 0:
        raise ValueError(f"index {what} must have shape (n_{what}, {width}) with n_{what} >= 1, "
                         f"got {tuple(index.shape)}.")
    n_points = points.shape[0]
    low, high = _index_range(index)
    if low < 0 or high >= n_points:
        bad = low if low < 0 else high
        raise ValueError(f"index {what} has an index {bad} out of range: the points have "
                         f"{n_points} rows (valid indices 0 .. {n_points - 1}).")
    return IndexTuples(points, index)


def _index_range(index):
    if is_dask(index):
        import dask

        return (int(v) for v in dask.compute(index.min(), index.max()))
    low, high = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    for rows in row_blocks(index.shape[0], index.shape[1], np.dtype(index.dtype).itemsize):
        block = np.asarray(index[rows])
        low, high = min(low, int(block.min())), max(high, int(block.max()))
    return low, high


def _gather_with_callable(tuples, width, preprocessor, what):
    ids = np.asarray(tuples)
    if ids.ndim != 2 or ids.shape[1] != width or ids.shape[0] == 0:
        raise ValueError(f"{what} given to a callable preprocessor must be (n_{what}, {width}) "
                         f"identifiers, got shape {ids.shape}.")
    blocks = []
    for rows in pair_blocks(ids.shape[0], TUPLE_CHUNK):
        columns = [np.asarray(preprocessor(ids[rows, j])) for j in range(width)]
        if any(c.ndim != 2 or c.shape[0] != ids[rows].shape[0] for c in columns):
            raise ValueError(f"preprocessor (a callable) must return one row (m, n_features) per "
                             f"identifier it is given; got shapes {[c.shape for c in columns]}.")
        blocks.append(np.stack(columns, axis=1))
    return np.concatenate(blocks)


def tuple_vectors(tuples, rows=slice(None), dtype=None):
    """Vector tuples ``rows`` (m, width, d) of validated tuples of either kind."""
    if isinstance(tuples, IndexTuples):
        return tuples.vectors(rows, dtype)
    block = tuples[rows]
    return block if dtype is None else np.asarray(block, dtype=dtype)


# -- generation from class labels ----------------------------------------------------------


def _check_n(n, what):
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise ValueError(f"{what} must be an integer >= 1, got {n!r}.")
    return int(n)


def _codes(y, what):
    labels = check_identity_labels(y, "y")
    _, codes = np.unique(labels, return_inverse=True)
    counts = np.bincount(codes)
    if counts.size < 2 or counts.max() < 2:
        raise ValueError(f"y: {what} need two classes at least, one of them with two points or "
                         f"more; got {counts.size} class(es), the largest of {counts.max()}.")
    return codes, counts


def _draw_similar(codes, counts, m, rng):
    """m (first, second) of the same class, first != second, with replacement, O(n + m)."""
    order = np.argsort(codes, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    first = order[rng.choice(np.flatnonzero(counts[codes[order]] >= 2), m)]
    c = codes[first]
    position = np.empty(codes.size, dtype=np.int64)
    position[order] = np.arange(codes.size) - starts[codes[order]]  # rank within class
    shift = rng.randint(1, counts[c])  # another member: a cyclic shift of 1 .. count - 1
    return first, order[starts[c] + (position[first] + shift) % counts[c]]


def _draw_other_class(codes, counts, anchors, rng):
    """One point of another class than each anchor's, uniformly among those points."""
    order = np.argsort(codes, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    c = codes[anchors]
    # a uniform rank among the n - count(c) points outside class c, skipping class c's block
    rank = (rng.random_sample(anchors.size) * (codes.size - counts[c])).astype(np.int64)
    rank = np.minimum(rank, codes.size - counts[c] - 1)
    rank = np.where(rank >= starts[c], rank + counts[c], rank)
    return order[rank]


def sample_triplets(y, n_triplets, random_state=None):
    """Draw index triplets ``(a, p, n)`` from class labels: p of a's class (not a), n of another.

    Drawn with replacement in O(n_samples + n_triplets): the anchor uniformly among the
    points whose class has two points or more, the positive uniformly among the other points
    of its class, the negative uniformly among the points of the other classes.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (numbers or strings).
    n_triplets : int
    random_state : None, int or RandomState

    Returns
    -------
    triplets : ndarray of shape (n_triplets, 3), int64
        Rows into the samples, to give with the samples as ``preprocessor``.

    Examples
    --------
    >>> from metricfit.pairs.tuples import sample_triplets
    >>> y = [0, 0, 1, 1, 2]
    >>> t = sample_triplets(y, 4, random_state=0)
    >>> t.shape, all(y[a] == y[p] != y[n] and a != p for a, p, n in t)
    ((4, 3), True)
    """
    n_triplets = _check_n(n_triplets, "n_triplets")
    codes, counts = _codes(y, "triplets")
    rng = check_random_state(random_state)
    a, p = _draw_similar(codes, counts, n_triplets, rng)
    return np.column_stack([a, p, _draw_other_class(codes, counts, a, rng)]).astype(np.int64)


def sample_quadruplets(y, n_quadruplets, random_state=None):
    """Draw index quadruplets ``(a, b, c, d)`` from class labels: (a, b) of one class, (c, d)
    of two classes, so that ``d(a, b) < d(c, d)`` is wanted (LSML_Supervised's constraints).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
    n_quadruplets : int
    random_state : None, int or RandomState

    Returns
    -------
    quadruplets : ndarray of shape (n_quadruplets, 4), int64

    Examples
    --------
    >>> from metricfit.pairs.tuples import sample_quadruplets
    >>> y = [0, 0, 1, 1, 2]
    >>> q = sample_quadruplets(y, 3, random_state=0)
    >>> all(y[a] == y[b] and y[c] != y[d] and a != b for a, b, c, d in q)
    True
    """
    n_quadruplets = _check_n(n_quadruplets, "n_quadruplets")
    codes, counts = _codes(y, "quadruplets")
    rng = check_random_state(random_state)
    a, b = _draw_similar(codes, counts, n_quadruplets, rng)
    c = rng.randint(0, codes.size, n_quadruplets)
    d = _draw_other_class(codes, counts, c, rng)
    return np.column_stack([a, b, c, d]).astype(np.int64)


def sample_chunks(y, n_chunks=100, chunk_size=2, random_state=None):
    """Chunklets from class labels (RCA_Supervised): ``n_chunks`` disjoint groups of
    ``chunk_size`` points of one class each, as a chunk label per point (-1: in none).

    Each chunklet picks a class uniformly among those with ``chunk_size`` unused points left,
    then that many of its unused points (metric-learn's ``Constraints.chunks``, up to the
    random draws).

    Returns
    -------
    chunks : ndarray of shape (n_samples,), int64

    Raises
    ------
    ValueError
        When the classes hold fewer than ``n_chunks`` disjoint chunklets.

    Examples
    --------
    >>> from metricfit.pairs.tuples import sample_chunks
    >>> sample_chunks([0, 0, 0, 1, 1, 2], n_chunks=2, chunk_size=2, random_state=0)
    array([-1,  0,  0,  1,  1, -1])
    """
    n_chunks = _check_n(n_chunks, "n_chunks")
    chunk_size = _check_n(chunk_size, "chunk_size")
    labels = check_identity_labels(y, "y")
    _, codes = np.unique(labels, return_inverse=True)
    rng = check_random_state(random_state)
    pools = [list(rng.permutation(np.flatnonzero(codes == c))) for c in range(codes.max() + 1)]
    available = sum(len(p) // chunk_size for p in pools)
    if available < n_chunks:
        raise ValueError(f"n_chunks={n_chunks} chunklets of chunk_size={chunk_size} cannot be "
                         f"drawn: the classes of y hold only {available} disjoint ones.")
    chunks = -np.ones(codes.size, dtype=np.int64)
    for chunk in range(n_chunks):
        open_ = [c for c, p in enumerate(pools) if len(p) >= chunk_size]
        c = open_[rng.randint(len(open_))]
        members, pools[c] = pools[c][:chunk_size], pools[c][chunk_size:]
        chunks[members] = chunk
    return chunks


def check_chunks(chunks, n_samples, what="chunks"):
    """Validate chunk labels (n_samples,): integers, -1 (no chunklet) or >= 0, and one
    chunklet of two points at least. Returns them as int64."""
    chunks = np.asarray(chunks)
    if chunks.ndim != 1 or chunks.shape[0] != n_samples:
        raise ValueError(f"{what} must be 1-D with one chunk label per sample ({n_samples}), "
                         f"got shape {chunks.shape}.")
    if chunks.dtype.kind not in "iu":
        if chunks.dtype.kind == "f" and np.isfinite(chunks).all() and np.all(chunks == np.round(
                chunks)):
            chunks = chunks.astype(np.int64)
        else:
            raise ValueError(f"{what} must hold integer chunk labels (-1: no chunklet), got "
                             f"dtype {chunks.dtype}.")
    chunks = chunks.astype(np.int64)
    if np.any(chunks < -1):
        raise ValueError(f"{what} holds {int(chunks.min())}: chunk labels are -1 (no chunklet) "
                         "or >= 0.")
    sizes = np.bincount(chunks[chunks >= 0]) if np.any(chunks >= 0) else np.zeros(0, int)
    if sizes.size == 0 or sizes.max() < 2:
        raise ValueError(f"{what}: at least one chunklet of two points or more is needed, got "
                         f"{int(np.sum(sizes > 0))} chunklet(s), none with two points.")
    return chunks

