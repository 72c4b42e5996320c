r"""Covariance: the Mahalanobis distance of the data's own covariance, ``M = Sigma^{-1}``.

The classical Mahalanobis distance (Mahalanobis 1936), metric-learn's ``Covariance``
baseline: with :math:`\Sigma = \frac{1}{n-1} \sum_i (x_i - \bar x)(x_i - \bar x)^T`,
:math:`d(x, y)^2 = (x - y)^T \Sigma^{+} (x - y)` (:math:`\Sigma^+` the pseudo-inverse, the
inverse when :math:`\Sigma` is invertible). ``components_`` is :math:`L` with :math:`L^T L =
\Sigma^+`: the whitening map.
"""

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from .._validation import validate_params
from ._base import PairLearnerMixin
from ._mahalanobis import MahalanobisMixin, components_from_metric, learned_dtype


class Covariance(MahalanobisMixin, PairLearnerMixin, BaseEstimator):
    r"""The inverse covariance of the training points as the metric (unsupervised).

    ``M = pinvh(cov(X))`` (scipy's symmetric pseudo-inverse: rank-deficient data gives the
    inverse on the data's span and 0 across it); ``components_ = L``, ``L^T L = M``.

    Parameters
    ----------
    preprocessor : array-like of shape (n_points, n_features), default=None
        Points that the pair methods may take index pairs (n_pairs, 2) into.

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
    threshold_ : float
        On :meth:`pair_score`, calibrated on training pairs when ``fit`` was given class
        labels y; otherwise set it with :meth:`calibrate_threshold` before ``predict``.
    classes_ : ndarray, [-1, 1]
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.learners import Covariance
    >>> X = np.random.default_rng(0).normal(size=(200, 2)) * [1.0, 10.0]
    >>> M = Covariance().fit(X).get_mahalanobis_matrix()
    >>> bool(np.allclose(M, np.linalg.inv(np.cov(X.T))))
    True
    """

    _pair_input = "points"
    _parameter_constraints = {"preprocessor": ["array-like", None]}

    def __init__(self, preprocessor=None):
        self.preprocessor = preprocessor

    def fit(self, X, y=None):
        """Learn ``M = cov(X)^+``; with class labels y, calibrate ``threshold_`` too.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), n_samples >= 2
        y : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        from scipy.linalg import pinvh

        validate_params(self)
        X = self._check_fit_points(X)
        if X.shape[0] < 2:
            raise ValueError(f"X has {X.shape[0]} sample: a covariance needs two at least.")
        cov = np.atleast_2d(np.cov(X.astype(np.float64), rowvar=False))
        self.components_ = components_from_metric(pinvh(cov), learned_dtype(X),
                                                  what="the inverse covariance")
        self.__dict__.pop("threshold_", None)
        self.classes_ = np.array([-1, 1])
        if y is not None:
            self._calibrate_on_labels(X, y)
        return self

    def decision_function(self, pairs):
        """``pair_score - threshold_``: positive means similar (needs ``threshold_``)."""
        if not hasattr(self, "threshold_") and hasattr(self, "components_"):
            raise NotFittedError("Covariance was fitted without labels: set threshold_ with "
                                 "calibrate_threshold(pairs, y) before decision_function or "
                                 "predict.")
        return super().decision_function(pairs)
