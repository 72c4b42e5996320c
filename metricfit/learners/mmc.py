"""MMC: Mahalanobis Metric for Clustering (Xing, Ng, Jordan and Russell, NIPS 2002), on pairs
and on labelled points, full or diagonal; L-BFGS on the hand-derived gradient of
:mod:`metricfit.losses.mmc` (the shared solver)."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from .._validation import Interval, StrOptions, validate_params
from ..losses import mmc as mmc_loss
from ..optim import minimize
from ..pairs import check_pair_labels
from ..pairs.index import check_pair_input, pairs_as_given
from ._base import PairLearnerMixin
from ._mahalanobis import MahalanobisMixin, components_from_metric, learned_dtype
from .itml import pair_difference_matrix, supervised_pairs


class _MMCBase(MahalanobisMixin, PairLearnerMixin, BaseEstimator):
    _parameter_constraints = {
        "max_iter": [Interval(Integral, 1, None)],
        "tol": [Interval(Real, 0, None)],
        "init": [StrOptions({"identity", "random"}), "array-like"],
        "diagonal": ["boolean"],
        "verbose": ["boolean", Interval(Integral, 0, None)],
        "random_state": ["random_state"],
    }

    def _fit_differences(self, V, s, dtype):
        who = type(self).__name__
        # J is invariant under scaling the data: fit on data scaled by 2**-e (exact), then
        # L (for sum_S d_A = 1 in the scaled units) is scaled back by 2**-e
        e = int(np.frexp(np.abs(V).max())[1]) if V.size and np.abs(V).max() > 0 else 0
        V = np.ldexp(V, -e)
        similar, dissimilar = V[s == 1], V[s == -1]
        d = V.shape[1]
        objective = mmc_loss.MMCObjective(similar, dissimilar, self.diagonal)
        theta0 = self._start(d)

        def report(theta, J, n_iter):
            print(f"[{who}] iteration {n_iter:4d}  J {J:.6f}")

        result = minimize(objective, theta0, max_iter=self.max_iter, tol=self.tol,
                          callback=report if self.verbose else None)
        A = mmc_loss.metric_from_params(result.x, d, self.diagonal)
        Q = mmc_loss.sum_similar_distances(A, similar)
        if not (np.isfinite(A).all() and Q > 0):
            raise ValueError(f"{who}: the fit gave a degenerate metric (every similar pair at "
                             "distance 0); rescale the data or give other pairs.")
        self.n_iter_ = int(result.nit)
        L = components_from_metric(A / Q, np.float64, what="MMC's metric")
        self.components_ = np.ldexp(L, -e).astype(dtype)
        return self

    def _start(self, d):
        if isinstance(self.init, str):
            if self.init == "identity":
                L0 = np.eye(d)
            else:
                L0 = check_random_state(self.random_state).normal(size=(d, d)) + np.eye(d)
        else:
            A0 = np.asarray(self.init, dtype=np.float64)
            if A0.shape != (d, d) or not np.isfinite(A0).all():
                raise ValueError(f"init must have shape (n_features, n_features) = ({d}, {d}) "
                                 f"and finite values, got shape {A0.shape}.")
            L0 = components_from_metric(A0, what="init")
        return np.sqrt(np.clip(np.diag(L0.T @ L0), 0, None)) if self.diagonal else L0.ravel()


class MMC(_MMCBase):
    """Mahalanobis Metric for Clustering on labelled pairs (Xing et al. 2002).

    Maximises the sum of the dissimilar pairs' (unsquared) distances under ``sum of the
    similar pairs' squared distances <= 1`` over PSD matrices A (or diagonal A). The problem
    is minimised in its scale-free form ``-log sum_D sqrt(d_A) + 1/2 log sum_S d_A`` over
    ``A = L^T L`` (or ``diag(l)^2``) by L-BFGS with the hand-derived gradient
    (:mod:`metricfit.losses.mmc`), then scaled so that ``sum_S d_A = 1``; instead of the
    paper's alternating projections (an eigendecomposition each).

    Parameters
    ----------
    max_iter : int, default=100
        L-BFGS iterations at most.
    tol : float, default=1e-5
        L-BFGS's gradient tolerance.
    init : {'identity', 'random'} or array of shape (d, d), default='identity'
        The start A0.
    diagonal : bool, default=False
        Learn a diagonal A (feature weights).
    verbose : bool, default=False
    preprocessor : array-like of shape (n_points, d), default=None
        The points of index pairs.
    random_state : int, RandomState or None, default=None
        Seeds init='random'.

    Attributes
    ----------
    components_ : ndarray of shape (d, d)
    threshold_ : float
    classes_ : ndarray of shape (2,)
    n_iter_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import MMC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2, 5))
    >>> X[:20, 1] = X[:20, 0] + 0.1 * rng.normal(size=(20, 5))
    >>> y = np.r_[np.ones(20), -np.ones(20)]
    >>> MMC().fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    - Xing, Ng, Jordan and Russell, "Distance Metric Learning, with Application to Clustering
      with Side-Information", NIPS 2002.
    """

    _parameter_constraints = {**_MMCBase._parameter_constraints,
                              "preprocessor": ["array-like", None]}

    def __init__(self, max_iter=100, tol=1e-5, init="identity", diagonal=False, verbose=False,
                 preprocessor=None, random_state=None):
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.diagonal = diagonal
        self.verbose = verbose
        self.preprocessor = preprocessor
        self.random_state = random_state

    def fit(self, pairs, y):
        """Learn A from labelled pairs, then calibrate ``threshold_`` on them.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2)
        y : array-like of shape (n_pairs,), +1 similar / -1 dissimilar ({0, 1} accepted)

        Returns
        -------
        self
        """
        validate_params(self)
        pairs = check_pair_input(pairs, self.preprocessor)
        s = check_pair_labels(y, pairs.shape[0], require_both=True)
        self.n_features_in_ = pairs.shape[2]
        self._fit_differences(pair_difference_matrix(pairs), s, learned_dtype(pairs.dtype))
        return self.calibrate_threshold(pairs_as_given(pairs), s)._adopt_coding(y)


class MMC_Supervised(_MMCBase):  # noqa: N801 - metric-learn's name
    """MMC from class labels: ``n_constraints`` similar and as many dissimilar pairs drawn
    from the labels, then :class:`MMC`.

    Parameters
    ----------
    max_iter, tol, init, diagonal, verbose : as :class:`MMC`
    n_constraints : int or None, default=None
        None: ``20 * n_classes**2`` (metric-learn's).
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    components_, n_iter_, n_features_in_ : as :class:`MMC`
    threshold_ : float
        Calibrated on 2000 similar and 2000 dissimilar training pairs (a fixed seed).
    classes_ : ndarray ``[-1, 1]``

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from metricfit import MMC_Supervised
    >>> X, y = load_iris(return_X_y=True)
    >>> MMC_Supervised(diagonal=True, random_state=0).fit(X, y).transform(X).shape
    (150, 4)
    """

    _pair_input = "points"
    _parameter_constraints = {**_MMCBase._parameter_constraints,
                              "n_constraints": [Interval(Integral, 1, None), None]}

    def __init__(self, max_iter=100, tol=1e-5, n_constraints=None, init="identity",
                 diagonal=False, verbose=False, random_state=None):
        self.max_iter = max_iter
        self.tol = tol
        self.n_constraints = n_constraints
        self.init = init
        self.diagonal = diagonal
        self.verbose = verbose
        self.random_state = random_state

    def fit(self, X, y):
        """Draw labelled pairs from (X, y), learn A, calibrate ``threshold_``.

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
        index, s, codes, V = supervised_pairs(X, y, self.n_constraints, self.random_state,
                                              type(self).__name__)
        self._fit_differences(V, s, learned_dtype(X.dtype))
        return self._calibrate_on_labels(X, codes)
