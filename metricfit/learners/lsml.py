"""LSML: Least Squared-residual Metric Learning (Liu, Sun, Liu and Metaxas, ICDM 2012), on
quadruplets and on labelled points; L-BFGS on the hand-derived gradient of
:mod:`metricfit.losses.lsml` (the shared solver)."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._validation import Interval, StrOptions, user_stacklevel, validate_params
from ..losses.lsml import LSMLObjective
from ..optim import minimize
from ..pairs.tuples import check_tuples, sample_quadruplets, tuple_vectors
from ._base import PairLearnerMixin
from ._mahalanobis import (
    MahalanobisMixin,
    QuadrupletsMixin,
    components_from_metric,
    learned_dtype,
)
from .itml import PRIOR_OPTIONS, check_scale, prior_metric


class _LSMLBase(BaseEstimator):
    _parameter_constraints = {
        "tol": [Interval(Real, 0, None)],
        "max_iter": [Interval(Integral, 1, None)],
        "prior": [StrOptions(PRIOR_OPTIONS), "array-like"],
        "verbose": ["boolean", Interval(Integral, 0, None)],
        "random_state": ["random_state"],
    }

    def _fit_quadruplets(self, ab, cd, weights, points_cov, dtype):
        who = type(self).__name__
        d = ab.shape[1]
        check_scale(max(float(np.abs(ab).max()), float(np.abs(cd).max())), who)
        if weights is None:
            w = np.ones(ab.shape[0])
        else:
            w = np.asarray(weights, dtype=np.float64).ravel()
            if w.shape != (ab.shape[0],) or not np.isfinite(w).all() or w.min() < 0 \
                    or w.sum() <= 0:
                raise ValueError(f"weights must be {ab.shape[0]} finite non-negative numbers, "
                                 f"not all zero (one per quadruplet), got shape {w.shape}.")
        M0, prior_inv = prior_metric(self.prior, d, points_cov,
                                     check_random_state(self.random_state), who, inverse=True)
        objective = LSMLObjective(ab, cd, w / w.sum(), prior_inv)
        L0 = components_from_metric(M0, what="prior")

        def report(theta, J, n_iter):
            print(f"[{who}] iteration {n_iter:4d}  F {J:.6f}")

        result = minimize(objective, L0.ravel(), max_iter=self.max_iter, tol=self.tol,
                          callback=report if self.verbose else None)
        if not result.success and result.nit >= self.max_iter:
            warnings.warn(f"[{who}] L-BFGS did not converge after {result.nit} iterations; "
                          "increase max_iter or tol.", ConvergenceWarning,
                          stacklevel=user_stacklevel())
        L = result.x.reshape(d, d)
        if not np.isfinite(L).all():
            raise ValueError(f"{who}: the fit diverged; rescale the data.")
        self.n_iter_ = int(result.nit)
        self.components_ = components_from_metric(L.T @ L, dtype, what="LSML's metric")
        return self


def _quadruplet_differences(quadruplets):
    """(a - b, c - d), each (n, d) float64, of validated vector or index quadruplets."""
    Q = tuple_vectors(quadruplets, dtype=np.float64)
    return Q[:, 0] - Q[:, 1], Q[:, 2] - Q[:, 3]


class LSML(MahalanobisMixin, QuadrupletsMixin, TransformerMixin, _LSMLBase):
    """Metric learning from relative comparisons by minimising squared residuals (LSML).

    Each quadruplet (a, b, c, d) asks for ``d_M(a, b) < d_M(c, d)``; LSML minimises the
    weighted squared violations of the (unsquared) distances plus the LogDet divergence to a
    prior (see :mod:`metricfit.losses.lsml`), by L-BFGS over L with ``M = L^T L``.

    Parameters
    ----------
    tol : float, default=1e-3
        L-BFGS's gradient tolerance.
    max_iter : int, default=1000
    prior : {'identity', 'covariance', 'random'} or array of shape (d, d), default='identity'
    verbose : bool, default=False
    preprocessor : array-like of shape (n_points, d), default=None
        The points of index quadruplets (n, 4).
    random_state : int, RandomState or None, default=None
        Seeds prior='random'.

    Attributes
    ----------
    components_ : ndarray of shape (d, d)
    n_iter_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import LSML
    >>> rng = np.random.default_rng(0)
    >>> Q = rng.normal(size=(60, 4, 3))
    >>> Q[:, 1] = Q[:, 0] + 0.1 * rng.normal(size=(60, 3))
    >>> LSML().fit(Q).score(Q)
    1.0

    References
    ----------
    - Liu, Sun, Liu and Metaxas, "Metric Learning from Relative Comparisons by Minimizing
      Squared Residual", ICDM 2012.
    """

    _parameter_constraints = {**_LSMLBase._parameter_constraints,
                              "preprocessor": ["array-like", callable, None]}

    def __init__(self, tol=1e-3, max_iter=1000, prior="identity", verbose=False,
                 preprocessor=None, random_state=None):
        self.tol = tol
        self.max_iter = max_iter
        self.prior = prior
        self.verbose = verbose
        self.preprocessor = preprocessor
        self.random_state = random_state

    def fit(self, quadruplets, weights=None):
        """Learn M from quadruplets (a, b, c, d) meaning ``d(a, b) < d(c, d)``.

        Parameters
        ----------
        quadruplets : array-like of shape (n, 4, n_features) or (n, 4)
            Vector quadruplets, or index quadruplets into ``preprocessor``.
        weights : array-like of shape (n,), default=None
            Non-negative weights (normalised to sum 1); None: equal.

        Returns
        -------
        self
        """
        validate_params(self)
        quadruplets = check_tuples(quadruplets, 4, self.preprocessor)
        self.n_features_in_ = quadruplets.shape[2]
        ab, cd = _quadruplet_differences(quadruplets)

        def points_cov():
            return np.cov(tuple_vectors(quadruplets, dtype=np.float64).reshape(
                -1, self.n_features_in_), rowvar=False)

        return self._fit_quadruplets(ab, cd, weights, points_cov,
                                     learned_dtype(quadruplets.dtype))


class LSML_Supervised(MahalanobisMixin, PairLearnerMixin, _LSMLBase):  # noqa: N801 - metric-learn's name
    """LSML from class labels: ``n_constraints`` quadruplets (a, b of one class; c, d of
    two classes) drawn from the labels (:func:`metricfit.pairs.tuples.sample_quadruplets`),
    then :class:`LSML`; pairs are scored through the pair API.

    Parameters
    ----------
    tol, max_iter, prior, verbose : as :class:`LSML`
    n_constraints : int or None, default=None
        None: ``20 * n_classes**2`` (metric-learn's).
    weights : array-like of shape (n_constraints,), default=None
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    components_, n_iter_, n_features_in_ : as :class:`LSML`
    threshold_ : float
        Calibrated on 2000 similar and 2000 dissimilar training pairs (a fixed seed).
    classes_ : ndarray ``[-1, 1]``

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from metricfit import LSML_Supervised
    >>> X, y = load_iris(return_X_y=True)
    >>> LSML_Supervised(random_state=0).fit(X, y).transform(X).shape
    (150, 4)
    """

    _pair_input = "points"
    _parameter_constraints = {**_LSMLBase._parameter_constraints,
                              "n_constraints": [Interval(Integral, 1, None), None],
                              "weights": ["array-like", None]}

    def __init__(self, tol=1e-3, max_iter=1000, prior="identity", n_constraints=None,
                 weights=None, verbose=False, random_state=None):
        self.tol = tol
        self.max_iter = max_iter
        self.prior = prior
        self.n_constraints = n_constraints
        self.weights = weights
        self.verbose = verbose
        self.random_state = random_state

    def fit(self, X, y):
        """Draw quadruplets from (X, y), learn M, calibrate ``threshold_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), class labels

        Returns
        -------
        self
        """
        validate_params(self)
        X = self._check_fit_points(X)
        n_classes = np.unique(np.asarray(y)).size
        q = sample_quadruplets(y, self.n_constraints or 20 * n_classes ** 2,
                               random_state=check_random_state(self.random_state))
        X64 = np.asarray(X, dtype=np.float64)
        self._fit_quadruplets(X64[q[:, 0]] - X64[q[:, 1]], X64[q[:, 2]] - X64[q[:, 3]],
                              self.weights, lambda: np.cov(X64, rowvar=False),
                              learned_dtype(X.dtype))
        return self._calibrate_on_labels(X, y)
