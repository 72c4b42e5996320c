"""Cross-validation splitters over pairs with fixed folds: LFW View 2 and seed 002's rotation.

The samples of these splitters are *pairs*: ``X`` is ``(n_pairs, 2, n_features)`` vectors or
``(n_pairs, 2)`` index pairs, ``y`` the pair labels; ``pair_fold`` gives each pair's fold. Both
are scikit-learn cross-validators (``cv=`` of ``GridSearchCV`` and ``cross_validate``). With
identity-disjoint folds (LFW View 2, or :func:`~metricfit.pairs.fold_pairs` on
:func:`~metricfit.pairs.identity_folds`) the test pairs of a split never share an identity
with its training pairs.
"""

from numbers import Integral

import numpy as np
from sklearn.model_selection import BaseCrossValidator

from .generation import _as_1d

__all__ = ["PredefinedPairFolds", "FoldRotation", "ValidationSplit"]


def _n_pairs(X):
    """The number of pairs in ``X`` (an array or a sequence)."""
    return X.shape[0] if hasattr(X, "shape") else len(X)


class _PairFolds(BaseCrossValidator):
    """Shared base: a fixed fold for each pair, at least two distinct folds."""

    def __init__(self, pair_fold):
        self.pair_fold = _as_1d(pair_fold, "pair_fold")
        self.unique_folds = np.unique(self.pair_fold)
        if self.unique_folds.size < 2:
            raise ValueError(
                f"pair_fold must hold at least 2 distinct folds, got {self.unique_folds.size}."
            )

    def _check_X(self, X):
        if X is not None and _n_pairs(X) != self.pair_fold.shape[0]:
            raise ValueError(f"X has {_n_pairs(X)} pairs but pair_fold has "
                             f"{self.pair_fold.shape[0]} entries.")

    def _pairs_of(self, folds):
        """Indices (int64) of the pairs whose fold is in ``folds``."""
        return np.flatnonzero(np.isin(self.pair_fold, folds)).astype(np.int64)

    def get_n_splits(self, X=None, y=None, groups=None):
        """The number of splits: the number of distinct folds.

        Parameters
        ----------
        X, y, groups : object
            Ignored, for API compatibility.

        Returns
        -------
        n_splits : int
        """
        return int(self.unique_folds.size)


class PredefinedPairFolds(_PairFolds):
    """Predefined folds of pairs: split k tests on fold k and trains on all the other folds.

    The pair counterpart of :class:`sklearn.model_selection.PredefinedSplit`, for the 10-fold
    protocol of LFW View 2 (restricted setting). With identity-disjoint folds no identity of a
    test pair occurs in the training pairs.

    Parameters
    ----------
    pair_fold : array-like of shape (n_pairs,)
        The fold of each pair (e.g. ``pairs_view2_fold``); at least 2 distinct values.

    Attributes
    ----------
    unique_folds : ndarray
        The distinct folds, in split order.

    Examples
    --------
    >>> cv = PredefinedPairFolds([0, 0, 1, 1, 2, 2])
    >>> [test.tolist() for _, test in cv.split()]
    [[0, 1], [2, 3], [4, 5]]
    """

    def split(self, X=None, y=None, groups=None):
        """Generate (train, test) pair indices, one split per fold.

        Parameters
        ----------
        X : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2), default=None
            The pairs; only their number is checked.
        y, groups : object
            Ignored, for API compatibility.

        Yields
        ------
        train : ndarray of int64
            The pairs of all the other folds.
        test : ndarray of int64
            The pairs of fold k.
        """
        self._check_X(X)
        for fold in self.unique_folds:
            yield self._pairs_of(self.unique_folds[self.unique_folds != fold]), \
                self._pairs_of([fold])


class FoldRotation(_PairFolds):
    """The fold rotation of seed 002 III.A: train on consecutive folds, validate, test.

    With ``n`` folds (in sorted order), split ``e`` trains on folds ``e, ..., e +
    n_train_folds - 1``, validates on the folds after them and tests on fold ``e + n - 1``
    (all mod ``n``). For LFW View 2 (10 folds, ``n_train_folds=8``) experiment e trains on
    folds e..e+7, validates on e+8 and tests on e+9: the
    rotation :func:`metricfit.experiments.verification.run_folds` runs.

    :meth:`split` yields (train, test) and leaves the validation pairs out, so the splitter
    works as ``cv=`` of ``cross_validate`` and ``GridSearchCV``. To choose hyperparameters
    on the validation fold, as the seed does, run one search per split with
    :meth:`validation_cv`::

        for e, (train, val, test) in enumerate(rotation.split_with_validation()):
            subset, inner_cv = rotation.validation_cv(e)
            search = GridSearchCV(TSML(), {"lam": lams}, cv=inner_cv, refit=False)
            search.fit(pairs[subset], y[subset])      # fit on train, score on val
            model = TSML(**search.best_params_).fit(pairs[train], y[train])
            test_accuracy = model.score(pairs[test], y[test])

    (``refit=True`` would refit the best model on training and validation pairs together;
    ``PredefinedSplit(np.r_[-np.ones(train.size), np.zeros(val.size)])`` is the same inner CV.)

    Parameters
    ----------
    pair_fold : array-like of shape (n_pairs,)
        The fold of each pair; at least 2 distinct values.
    n_train_folds : int, default=8
        Training folds per split, in ``[1, n_folds - 1]``; the ``n_folds - 1 -
        n_train_folds`` folds between training and test folds are the validation folds.

    Attributes
    ----------
    unique_folds : ndarray
        The distinct folds, in sorted order.

    Examples
    --------
    Four folds of two pairs each, two training folds per split:

    >>> import numpy as np
    >>> cv = FoldRotation(np.repeat([0, 1, 2, 3], 2), n_train_folds=2)
    >>> cv.rotation(3)  # train on folds 3 and 0, validate on 1, test on 2
    ([3, 0], [1], 2)
    >>> for train, validation, test in cv.split_with_validation():
    ...     print(train, validation, test)
    [0 1 2 3] [4 5] [6 7]
    [2 3 4 5] [6 7] [0 1]
    [4 5 6 7] [0 1] [2 3]
    [0 1 6 7] [2 3] [4 5]
    >>> [(train.size, test.size) for train, test in cv.split()]  # no validation pairs
    [(4, 2), (4, 2), (4, 2), (4, 2)]

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """

    def __init__(self, pair_fold, n_train_folds=8):
        super().__init__(pair_fold)
        self.n_train_folds = n_train_folds
        n_folds = self.unique_folds.size
        if (isinstance(n_train_folds, (bool, np.bool_)) or not isinstance(n_train_folds, Integral)
                or not 1 <= n_train_folds <= n_folds - 1):
            raise ValueError(f"n_train_folds must be an integer in [1, {n_folds - 1}] for "
                             f"{n_folds} folds, got {n_train_folds!r}.")

    def rotation(self, e):
        """The folds of split ``e``.

        Parameters
        ----------
        e : int
            Split number, in ``[0, n_folds)``.

        Returns
        -------
        train_folds : list
            The ``n_train_folds`` training folds.
        validation_folds : list
            The validation folds (one for 10 folds and ``n_train_folds=8``; none for
            ``n_train_folds = n_folds - 1``).
        test_fold : object
            The test fold.
        """
        folds, n = self.unique_folds.tolist(), self.unique_folds.size
        if not isinstance(e, Integral) or not 0 <= e < n:
            raise ValueError(f"split number must be in [0, {n - 1}], got {e!r}.")
        rotated = [folds[(e + j) % n] for j in range(n)]
        k = self.n_train_folds
        return rotated[:k], rotated[k:n - 1], rotated[n - 1]

    def validation_indices(self, e):
        """Indices (int64) of the validation pairs of split ``e``."""
        return self._pairs_of(self.rotation(e)[1])

    def split_with_validation(self, X=None, y=None, groups=None):
        """Generate (train, validation, test) pair indices, one triple per fold.

        Parameters
        ----------
        X : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2), default=None
            The pairs; only their number is checked.
        y, groups : object
            Ignored, for API compatibility.

        Yields
        ------
        train, validation, test : ndarray of int64
        """
        self._check_X(X)
        for e in range(self.unique_folds.size):
            train_folds, validation_folds, test_fold = self.rotation(e)
            yield (self._pairs_of(train_folds), self._pairs_of(validation_folds),
                   self._pairs_of([test_fold]))

    def split(self, X=None, y=None, groups=None):
        """Generate (train, test) pair indices; the validation pairs are in neither.

        Parameters
        ----------
        X : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2), default=None
            The pairs; only their number is checked.
        y, groups : object
            Ignored, for API compatibility.

        Yields
        ------
        train, test : ndarray of int64
        """
        for train, _, test in self.split_with_validation(X):
            yield train, test

    def validation_cv(self, e):
        """An inner CV for ``GridSearchCV`` that trains on split ``e``'s training pairs and
        scores on its validation pairs.

        Parameters
        ----------
        e : int
            Split number.

        Returns
        -------
        subset : ndarray of int64
            Training then validation pair indices: fit the search on ``X[subset]``.
        inner_cv : list of one (train, validation) tuple
            Positions within ``subset``, for ``cv=``.
        """
        train, _, _ = self.rotation(e)
        train, validation = self._pairs_of(train), self.validation_indices(e)
        if validation.size == 0:
            raise ValueError("no validation fold: use n_train_folds <= n_folds - 2.")
        positions = np.arange(train.size + validation.size)
        return np.concatenate([train, validation]), [(positions[:train.size],
                                                      positions[train.size:])]


class ValidationSplit(BaseCrossValidator):
    """One split: train on the pairs not marked, score on the marked (validation) pairs.

    The pair counterpart of :class:`sklearn.model_selection.PredefinedSplit` with a single
    validation fold, for selecting hyper-parameters (lambda, the threshold) with
    ``GridSearchCV(..., cv=ValidationSplit(is_validation))`` on the training pairs followed by
    the validation pairs of one experiment (seed 002 III.A, III.E).

    Parameters
    ----------
    is_validation : array-like of bool, shape (n_pairs,)
        True for a validation pair; both kinds must occur.

    Examples
    --------
    >>> cv = ValidationSplit([False, False, True])
    >>> [(train.tolist(), val.tolist()) for train, val in cv.split()]
    [([0, 1], [2])]

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """

    def __init__(self, is_validation):
        mask = _as_1d(is_validation, "is_validation")
        if mask.dtype != bool:
            raise ValueError(f"is_validation must be boolean, got dtype {mask.dtype}.")
        if mask.all() or not mask.any():
            raise ValueError("is_validation must mark some pairs, and not all of them.")
        self.is_validation = mask

    def get_n_splits(self, X=None, y=None, groups=None):
        """1: one (train, validation) split."""
        return 1

    def split(self, X=None, y=None, groups=None):
        """Yield the (train, validation) pair indices (int64).

        Parameters
        ----------
        X : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2), default=None
            The pairs; only their number is checked.
        y, groups : object
            Ignored, for API compatibility.
        """
        if X is not None and _n_pairs(X) != self.is_validation.shape[0]:
            raise ValueError(f"X has {_n_pairs(X)} pairs but is_validation has "
                             f"{self.is_validation.shape[0]} entries.")
        yield (np.flatnonzero(~self.is_validation).astype(np.int64),
               np.flatnonzero(self.is_validation).astype(np.int64))

