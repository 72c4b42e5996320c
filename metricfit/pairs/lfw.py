"""LFW View 2 protocols: the 10 predefined folds of pairs, and unrestricted training pairs."""

import numpy as np

from .generation import unrestricted_pairs
from .protocols import FoldRotation, PredefinedPairFolds

__all__ = ["lfw_view2_splitter", "lfw_unrestricted_training_pairs"]


def lfw_view2_splitter(data_home=None, n_train_folds=None):
    """The CV splitter of the LFW View 2 folds, over the 6000 pairs of ``pairs_view2``.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Data folder; see :func:`metricfit.datasets.get_data_home`.
    n_train_folds : int, default=None
        None gives the 10-fold protocol (:class:`~metricfit.pairs.PredefinedPairFolds`: train
        on 9 folds, test on 1); an int gives the rotation of seed 002 III.A
        (:class:`~metricfit.pairs.FoldRotation`; 8 for train 8 / validate 1 / test 1).

    Returns
    -------
    cv : PredefinedPairFolds or FoldRotation
        Indexes the pairs in file order, as ``metricfit.datasets.lfw_view2_pairs()``.

    Raises
    ------
    FileNotFoundError
        If the LFW npz file is missing.
    """
    from ..datasets import lfw_view2_pairs

    fold = lfw_view2_pairs(data_home)[2]
    if n_train_folds is None:
        return PredefinedPairFolds(fold)
    return FoldRotation(fold, n_train_folds=n_train_folds)


def lfw_unrestricted_training_pairs(train_folds, n_similar, n_dissimilar=None,
                                    data_home=None, random_state=None):
    """Unrestricted LFW training pairs: pairs among all images of the people of ``train_folds``.

    The unrestricted setting of seed 004 (5.2.2): training pairs are generated from the
    identities of all images of the training folds' people (View 2 ``people.txt`` folds),
    while the test pairs stay the fixed View 2 pairs. The people of other folds are never
    used, so no training identity occurs in the pairs of a held-out fold.

    Parameters
    ----------
    train_folds : int or iterable of int
        View 2 folds (0..9) whose people may be used.
    n_similar : int or 'all'
        Number of similar pairs (capped); ``'all'`` takes every within-person pair.
    n_dissimilar : int, default=None
        Number of dissimilar pairs (capped); None draws as many as the similar pairs.
    data_home : str or path-like, default=None
        Data folder; see :func:`metricfit.datasets.get_data_home`.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    index_pairs : ndarray of shape (n_pairs, 2), int64
        Row indices into ``load_lfw().images``, similar pairs first.
    y : ndarray of shape (n_pairs,), int8
        +1 = same person, -1 = different.
    """
    from ..datasets import LFW_NPZ, _check_folds, _load_npz

    data = _load_npz(LFW_NPZ, data_home, ("person", "people_fold_view2"))
    allowed = np.isin(data.people_fold_view2[data.person], _check_folds(train_folds))
    return unrestricted_pairs(data.person, allowed, n_similar, n_dissimilar,
                              random_state=random_state)
