"""The baseline: cosine similarity of the input vectors, with the pair API."""

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..pairs import check_pair_labels, check_pairs, check_points
from ..pairs.index import check_pair_input, pairs_as_given
from ._base import PairLearnerMixin


class CosineSimilarity(PairLearnerMixin, BaseEstimator):
    """Score pairs by the cosine of their vectors (seed 002 eq. 1): nothing to learn but the
    threshold. The baseline of seed 002 Table I, and the scorer to put after a transformer
    (``make_pipeline(WPCA(), WCCN(), CosineSimilarity())``).

    Parameters
    ----------
    preprocessor : array-like of shape (n_points, n_features), default=None
        The points of index pairs: with it, pairs may also be given as an (n_pairs, 2)
        integer array of row indices into it (see :class:`metricfit.TSML`).

    Attributes
    ----------
    threshold_ : float
        Calibrated for accuracy on the pairs given to ``fit``.
    classes_ : ndarray of shape (2,)
        The coding of ``y`` ({-1, +1}, {0, 1} or {False, True}); ``predict`` answers in it.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.learners import CosineSimilarity
    >>> pairs = np.array([[[1.0, 0.0], [1.0, 0.1]], [[1.0, 0.0], [-1.0, 0.2]]])
    >>> CosineSimilarity().fit(pairs, [1, -1]).predict(pairs)
    array([ 1, -1])

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """

    def __init__(self, preprocessor=None):
        self.preprocessor = preprocessor

    def fit(self, pairs, y):
        """Calibrate ``threshold_`` on labelled pairs (both classes needed): vector pairs or
        index pairs into ``preprocessor``."""
        pairs = check_pair_input(pairs, self.preprocessor, reject_zero=True)
        s = check_pair_labels(y, pairs.shape[0], require_both=True)
        self.n_features_in_ = pairs.shape[2]
        return self.calibrate_threshold(pairs_as_given(pairs), s)._adopt_coding(y)

    def transform(self, X):
        """The identity on validated points (n, d) or pairs (n, 2, d)."""
        check_is_fitted(self)
        if np.ndim(X) == 3:
            return check_pairs(X, n_features=self.n_features_in_)
        return check_points(X, n_features=self.n_features_in_)

    def __metricfit_tags__(self):
        tags = super().__metricfit_tags__()
        tags.score_kind = "cosine"
        return tags
