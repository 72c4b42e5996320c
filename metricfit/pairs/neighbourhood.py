r"""Pairs from a neighbourhood graph (DrLIM; seed 003, "Dimensionality Reduction by Learning an
Invariant Mapping").

Seed 003 trains a siamese mapping without labels: "outputs corresponding to input samples that
are neighbors in the neighborhood graph should be nearby; outputs for input samples that are
not neighbors should be far away from each other". :func:`neighbourhood_pairs` builds those
pairs: each point and its ``n_neighbors`` nearest neighbours (Euclidean k-NN graph,
symmetrised, each unordered pair once) are similar; dissimilar pairs are drawn uniformly among
the pairs that are not edges of the graph. Pairs come back as index pairs into X, so a learner
takes X once as its ``preprocessor``; the learned mapping then embeds new points, which
Isomap or LLE cannot do.
"""

from numbers import Integral

import numpy as np
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state

from .checks import check_points

__all__ = ["neighbourhood_pairs"]


def _check_int(value, what, low, high=None):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral) or value < low or (
            high is not None and value > high):
        bound = f">= {low}" + ("" if high is None else f" and <= {high}")
        raise ValueError(f"{what} must be an integer {bound}, got {value!r}.")
    return int(value)


def neighbourhood_pairs(X, n_neighbors=5, n_dissimilar=None, random_state=None):
    """Similar pairs from the k-NN graph of X, dissimilar pairs sampled from the rest.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite points (at least 3).
    n_neighbors : int, default=5
        k of the k-NN graph, ``1 <= k <= n_samples - 2`` (something must be left to be
        dissimilar).
    n_dissimilar : int, default=None
        Dissimilar pairs to draw (without repetition); None: as many as there are similar
        pairs (capped at the number of non-neighbour pairs).
    random_state : int, RandomState or None, default=None

    Returns
    -------
    index : ndarray of shape (n_pairs, 2), int64
        Rows of X; similar pairs first, ``index[:, 0] < index[:, 1]``.
    y : ndarray of shape (n_pairs,), int
        +1 neighbours (similar), -1 non-neighbours (dissimilar).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(20.0).reshape(10, 2)
    >>> index, y = neighbourhood_pairs(X, n_neighbors=1, random_state=0)
    >>> index[y == 1].tolist()[:3], int((y == -1).sum())
    ([[0, 1], [1, 2], [2, 3]], 9)
    """
    X = check_points(X)
    n = X.shape[0]
    if n < 3:
        raise ValueError(f"X needs at least 3 points for neighbours and non-neighbours, got {n}.")
    k = _check_int(n_neighbors, "n_neighbors", 1, n - 2)
    rng = check_random_state(random_state)
    neighbours = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X, return_distance=False)
    rows = np.repeat(np.arange(n), k)
    cols = np.concatenate([row[row != i][:k] for i, row in enumerate(neighbours)])
    similar = np.unique(np.sort(np.stack([rows, cols], axis=1), axis=1), axis=0)  # (m, 2)
    edge = set(map(tuple, similar.tolist()))
    available = n * (n - 1) // 2 - len(edge)
    count = len(edge) if n_dissimilar is None else _check_int(n_dissimilar, "n_dissimilar", 0)
    if n_dissimilar is None:
        count = min(count, available)
    elif count > available:
        raise ValueError(f"n_dissimilar={count} exceeds the {available} non-neighbour pairs.")
    dissimilar = _draw_non_edges(n, count, edge, rng)
    index = np.concatenate([similar, dissimilar]).astype(np.int64)
    y = np.r_[np.ones(len(similar), dtype=int), -np.ones(len(dissimilar), dtype=int)]
    return index, y


def _draw_non_edges(n, count, edge, rng):
    """``count`` distinct unordered pairs (i < j) of range(n) outside ``edge``."""
    chosen = set()
    while len(chosen) < count:
        size = 2 * (count - len(chosen)) + 16
        i, j = rng.randint(0, n, size), rng.randint(0, n, size)
        for a, b in zip(np.minimum(i, j).tolist(), np.maximum(i, j).tolist(), strict=True):
            if a != b and (a, b) not in edge and (a, b) not in chosen:
                chosen.add((a, b))
                if len(chosen) == count:
                    break
    return np.array(sorted(chosen), dtype=np.int64).reshape(-1, 2)
