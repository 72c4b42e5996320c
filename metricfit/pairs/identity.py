"""Identity-disjoint folds of samples, and identity-disjoint cross-validation over pairs.

:func:`identity_folds` assigns whole identities to folds (for :func:`~metricfit.pairs.
fold_pairs`); :class:`IdentityDisjointPairSplit` splits arbitrary labelled pairs so that no
identity of a test pair occurs in the training pairs, from the identities of both sides.
"""

from numbers import Integral

import numpy as np
from sklearn.model_selection import BaseCrossValidator
from sklearn.utils import check_random_state

from ._index_pairs import IndexPairs, read_rows
from .generation import _as_1d
from .protocols import _n_pairs

__all__ = ["identity_folds", "IdentityDisjointPairSplit", "index_components", "distinct_rows"]


def _check_n_folds(n_folds, what="n_folds"):
    if isinstance(n_folds, (bool, np.bool_)) or not isinstance(n_folds, Integral) or n_folds < 2:
        raise ValueError(f"{what} must be an integer >= 2, got {n_folds!r}.")
    return int(n_folds)


def identity_folds(identities, n_folds=10, random_state=None):
    """Assign whole identities to folds, balancing the number of samples per fold.

    Identities are taken largest first (ties in random order) and each goes to the fold with
    the fewest samples so far; fold numbers are then shuffled. The folds are identity-disjoint,
    and fold sizes differ by at most the largest identity's number of samples.

    Parameters
    ----------
    identities : array-like of shape (n_samples,)
        Identity label of each sample.
    n_folds : int, default=10
        Number of folds, at least 2 and at most the number of identities.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    fold : ndarray of shape (n_samples,), int64
        Fold (0..n_folds-1) of each sample; every fold is non-empty.

    Raises
    ------
    ValueError
        If ``n_folds < 2``, ``identities`` is not 1-D, or there are fewer identities than folds.
    """
    n_folds = _check_n_folds(n_folds)
    identities = _as_1d(identities, "identities")
    _, inverse, sizes = np.unique(identities, return_inverse=True, return_counts=True)
    if sizes.size < n_folds:
        raise ValueError(f"cannot split {sizes.size} identities into {n_folds} folds.")
    rng = check_random_state(random_state)
    order = rng.permutation(sizes.size)
    order = order[np.argsort(-sizes[order], kind="stable")]
    load = np.zeros(n_folds, dtype=np.int64)
    fold_of = np.empty(sizes.size, dtype=np.int64)
    for identity in order:
        fold = int(np.argmin(load))
        fold_of[identity] = fold
        load[fold] += sizes[identity]
    return rng.permutation(n_folds)[fold_of[inverse.reshape(-1)]]


class IdentityDisjointPairSplit(BaseCrossValidator):
    """K-fold cross-validation over pairs with identity-disjoint training and test pairs.

    The identities of the pair sides (``groups``) are assigned to ``n_splits`` folds by
    :func:`identity_folds` (balancing the number of pair sides per fold). In split k, the
    test pairs are those with *both* identities in fold k, the training pairs those with
    *no* identity in fold k. The other pairs, which have one side in fold k and the other
    side elsewhere, are left out of both; and a pair whose sides lie in two different folds
    is never a test pair. Since a similar pair has one identity, similar pairs are never left
    out, while a dissimilar pair is a test pair only when both its identities fall in the same
    fold: test folds hold mostly similar pairs unless the pairs were generated within folds.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2.
    random_state : int, RandomState instance or None, default=None
        Seeds the assignment of identities to folds; pass an int for the same splits on
        every call of :meth:`split`.

    Examples
    --------
    >>> import numpy as np
    >>> groups = np.array([[0, 0], [1, 1], [2, 2], [3, 3], [0, 1], [2, 3]])
    >>> cv = IdentityDisjointPairSplit(n_splits=2, random_state=0)
    >>> for train, test in cv.split(np.zeros((6, 2)), groups=groups):
    ...     assert not set(groups[train].ravel()) & set(groups[test].ravel())
    >>> cv.get_n_splits()
    2
    """

    __metadata_request__split = {"groups": True}

    def __init__(self, n_splits=5, random_state=None):
        self.n_splits = _check_n_folds(n_splits, "n_splits")
        self.random_state = random_state

    def split(self, X, y=None, groups=None):
        """Generate (train, test) pair indices with no identity in common.

        Parameters
        ----------
        X : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2)
            The pairs; only their number is used.
        y : object
            Ignored, for API compatibility.
        groups : array-like of shape (n_pairs, 2)
            Identities of the two sides of each pair.

        Yields
        ------
        train, test : ndarray of int64
            Pairs with no identity in fold k; pairs with both identities in fold k.

        Raises
        ------
        ValueError
            If ``groups`` is missing or not of shape (n_pairs, 2), there are fewer identities
            than splits, or a split would have no training or no test pair.
        """
        n_pairs = _n_pairs(X)
        if groups is None:
            raise ValueError("groups, the (n_pairs, 2) identities of the pair sides, is required.")
        groups = np.asarray(groups)
        if groups.ndim != 2 or groups.shape != (n_pairs, 2):
            raise ValueError(f"groups must have shape (n_pairs, 2) = ({n_pairs}, 2): the "
                             f"identities of both sides of each pair; got shape {groups.shape}.")
        side_fold = identity_folds(groups.reshape(-1), self.n_splits, self.random_state)
        side_fold = side_fold.reshape(n_pairs, 2)
        for k in range(self.n_splits):
            inside = side_fold == k
            train = np.flatnonzero(~inside.any(axis=1)).astype(np.int64)
            test = np.flatnonzero(inside.all(axis=1)).astype(np.int64)
            if train.size == 0 or test.size == 0:
                raise ValueError(f"split {k} has {train.size} training and {test.size} test "
                                 "pairs: use fewer splits or more pairs within identities.")
            yield train, test

    def get_n_splits(self, X=None, y=None, groups=None):
        """The number of splits, ``n_splits``.

        Parameters
        ----------
        X, y, groups : object
            Ignored, for API compatibility.

        Returns
        -------
        n_splits : int
        """
        return self.n_splits


# -- Identity classes from labelled pairs (PLDA, LDA) ---------------------------------------

def similar_pair_classes(pairs, s, singletons=False, components=False):
    """Points and class codes from labelled pairs, for estimators fitted on classes (PLDA).

    Vector pairs: each similar pair is a class of two points. :class:`IndexPairs`: the
    classes are the connected components of the graph of similar pairs over the points
    (a point in several similar pairs is one point of one class). ``singletons``: the
    points of the dissimilar pairs are added, each a class of its own (vector pairs) or,
    for index pairs, as components of their own unless a similar pair links them.
    ``components``: vector pairs are taken as index pairs into their distinct rows (equal
    vectors are one image, as in :class:`~metricfit.experiments.methods.IdentitiesFromPairs`),
    hence classes as for index pairs.

    Parameters
    ----------
    pairs : ndarray of shape (n_pairs, 2, d) or IndexPairs, validated
    s : ndarray of shape (n_pairs,), in {-1, +1}, with at least one similar pair
    singletons : bool, default=False
    components : bool, default=False
        Vector pairs only (index pairs always give components).

    Returns
    -------
    points : ndarray of shape (n_samples, d)
    codes : ndarray of shape (n_samples,), int
    """
    if isinstance(pairs, IndexPairs):
        return _index_pair_classes(pairs, s, singletons)
    if components:
        return _index_pair_classes(IndexPairs(*distinct_rows(pairs)), s, singletons)
    similar = pairs[s == 1]
    points = [similar.reshape(-1, pairs.shape[2])]
    codes = [np.repeat(np.arange(similar.shape[0]), 2)]
    if singletons:
        other = pairs[s != 1].reshape(-1, pairs.shape[2])
        points.append(other)
        codes.append(similar.shape[0] + np.arange(other.shape[0]))
    return np.concatenate(points), np.concatenate(codes)


def distinct_rows(pairs):
    """Vector pairs (n, 2, d) as index pairs into their distinct rows: ``(points, index)``
    with ``points[index] == pairs`` (equal vectors are one point, one image)."""
    points, inverse = np.unique(pairs.reshape(-1, pairs.shape[2]), axis=0,
                                return_inverse=True)
    return points, inverse.reshape(-1, 2)


def index_components(index, n_points):
    """The connected component of each of ``n_points`` points in the graph whose edges are
    the index pairs ``index`` (m, 2): points linked by a chain of pairs share one code."""
    from scipy.sparse import coo_array
    from scipy.sparse.csgraph import connected_components

    index = np.asarray(index).reshape(-1, 2)
    graph = coo_array((np.ones(index.shape[0]), (index[:, 0], index[:, 1])),
                      shape=(n_points, n_points))
    return connected_components(graph, directed=False)[1]


def _index_pair_classes(pairs, s, singletons):
    index = np.asarray(pairs.index)
    similar = index[s == 1]
    used = np.unique(index if singletons else similar)
    codes = index_components(np.searchsorted(used, similar), used.size)
    return np.asarray(read_rows(pairs.points, used, pairs.points.dtype)), codes
