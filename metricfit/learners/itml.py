"""ITML: Information-Theoretic Metric Learning (Davis et al., ICML 2007), on pairs and on
labelled points; and the helpers the pair learners of metric-learn's catalogue share (ITML,
MMC, SDML): the pairs' differences, the prior metric, the scale check, the labelled pairs
drawn from class labels.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from .._validation import Interval, StrOptions, validate_params
from ..losses import itml as itml_kernels
from ..pairs import check_pair_labels
from ..pairs.checks import identity_codes, scale_exponent
from ..pairs.index import check_pair_input, pair_differences, pairs_as_given
from ..pairs.tuples import check_tuples, tuple_vectors
from ._base import PairLearnerMixin, draw_pairs_with_replacement
from ._mahalanobis import MahalanobisMixin, components_from_metric, learned_dtype

__all__ = ["ITML", "ITML_Supervised", "pair_difference_matrix", "prior_metric",
           "check_scale", "supervised_pairs", "endpoint_differences",
           "tuple_points_cov"]

PRIOR_OPTIONS = {"identity", "covariance", "random"}


def check_scale(largest, who):
    """ValueError (saying to rescale) when data entries reach beyond ~2**+-256: the
    catalogue's methods are not written for squared distances near the float range."""
    if scale_exponent(largest):
        raise ValueError(f"{who}: the data have entries up to {largest:.3g}; squared distances "
                         "at that scale leave the float range. Rescale the data (e.g. "
                         "StandardScaler) before fitting.")


def pair_difference_matrix(pairs):
    """``x - y`` of every validated pair (vector or index pairs), (n_pairs, d) float64."""
    return np.concatenate(list(pair_differences(pairs, dtype=np.float64)))


def endpoint_differences(tuples, rng, n=10000, max_rows=5000):
    """Differences of ``n`` random pairs of end points of validated ``tuples`` (vector or
    index tuples, :func:`metricfit.pairs.tuples.check_tuples`), drawn among the end points of
    up to ``max_rows`` random tuples (for ITML's bounds)."""
    rows = np.sort(rng.choice(len(tuples), size=min(len(tuples), max_rows), replace=False))
    points = tuple_vectors(tuples, rows, dtype=np.float64).reshape(-1, tuples.shape[2])
    i, j = rng.randint(0, points.shape[0], size=(2, n))
    keep = i != j
    return points[i[keep]] - points[j[keep]]


def tuple_points_cov(tuples, e=0):
    """The covariance of the end points of validated ``tuples``, scaled by ``2**-e``."""
    points = tuple_vectors(tuples, dtype=np.float64).reshape(-1, tuples.shape[2])
    return np.cov(np.ldexp(points, -e), rowvar=False)


def prior_metric(prior, d, points_cov, rng, who, inverse=False):
    """The prior Mahalanobis matrix M0 (d, d) (and its inverse with ``inverse=True``):
    'identity'; 'covariance': the inverse of ``points_cov()`` (the data covariance, as
    metric-learn); 'random': a random SPD matrix; or a given SPD array."""
    if isinstance(prior, str):
        if prior == "identity":
            M0 = np.eye(d)
        elif prior == "covariance":
            C = np.atleast_2d(points_cov())
            w, V = np.linalg.eigh(C)
            if w[0] <= 1e-10 * max(w[-1], np.finfo(float).tiny):
                raise ValueError(f"{who}: prior='covariance' needs a non-singular data "
                                 "covariance; use prior='identity' or reduce the dimension.")
            M0 = (V / w) @ V.T
        else:
            A = rng.normal(size=(d, d))
            M0 = A @ A.T + d * np.eye(d) * 1e-3
    else:
        M0 = np.asarray(prior, dtype=np.float64)
        if M0.shape != (d, d) or not np.isfinite(M0).all():
            raise ValueError(f"prior must have shape (n_features, n_features) = ({d}, {d}) and "
                             f"finite values, got shape {M0.shape}.")
        M0 = 0.5 * (M0 + M0.T)
        if np.linalg.eigvalsh(M0)[0] <= 0:
            raise ValueError(f"prior must be symmetric positive definite for {who}.")
    return (M0, np.linalg.inv(M0)) if inverse else M0


def supervised_pairs(X, y, n_constraints, random_state, who):
    """``n_constraints`` similar and as many dissimilar index pairs drawn (with
    replacement, O(n + n_constraints)) from class labels, their labels, the codes and the
    pairs' differences ``V`` (float64); None: metric-learn's default ``20 * n_classes**2``."""
    _, codes = identity_codes(y, "y", X.shape[0], min_identities=2)
    if np.bincount(codes).max() < 2:
        raise ValueError(f"y: {who} needs a class with two points or more to draw "
                         "similar pairs.")
    n = n_constraints or 20 * int(codes.max() + 1) ** 2
    index, s = draw_pairs_with_replacement(codes, n, check_random_state(random_state))
    V = np.asarray(X[index[:, 0]], dtype=np.float64) - X[index[:, 1]]
    return index, s, codes, V


class _ITMLBase(MahalanobisMixin, PairLearnerMixin, BaseEstimator):
    _parameter_constraints = {
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None)],
        "tol": [Interval(Real, 0, None)],
        "prior": [StrOptions(PRIOR_OPTIONS), "array-like"],
        "bounds": ["array-like", None],
        "verbose": ["boolean", Interval(Integral, 0, None)],
        "random_state": ["random_state"],
    }

    def _fit_differences(self, V, s, endpoints, points_cov, dtype):
        """Algorithm 1 on the differences V (n, d) with labels s; sets the fitted state.

        ``endpoints(rng)``: differences of random pairs of points (for the bounds);
        ``points_cov(e)``: the covariance of the points scaled by ``2**-e``.

        The sweeps run on data scaled by a power of two ``2**-e`` to unit entries (exact in
        binary: the same result, bit for bit, as for data that needs no scaling), with the
        problem mapped so that the metric is the one of the unscaled data: with a fixed
        prior (identity, random, an array) the same M solves the scaled problem once the
        squared-distance targets are scaled by ``4**-e``; with prior='covariance' (M0
        scales as 1 / c^2) M scales by ``4**e`` and the targets stay. So ``1 / p`` stays
        far from the float range at any data scale.
        """
        rng = check_random_state(self.random_state)
        d = V.shape[1]
        e = int(np.frexp(np.abs(V).max())[1]) if V.size and np.abs(V).max() > 0 else 0
        V = np.ldexp(V, -e)
        M0 = prior_metric(self.prior, d, lambda: points_cov(e), rng, type(self).__name__)
        shift = 0 if isinstance(self.prior, str) and self.prior == "covariance" else e
        if self.bounds is None:  # unsquared distances: scaled by 2**-shift once more
            bounds = np.ldexp(itml_kernels.distance_bounds_of(
                np.ldexp(endpoints(rng), -e), M0), -shift)
        else:
            bounds = np.asarray(self.bounds, dtype=np.float64).ravel()
            if bounds.size != 2 or not np.all(np.isfinite(bounds)) or bounds.min() < 0:
                raise ValueError(f"bounds must be two finite non-negative numbers (u, l), got "
                                 f"{self.bounds!r}.")
            bounds = np.ldexp(bounds, -2 * shift)
        bounds = np.where(bounds == 0, 1e-9, bounds)
        self.bounds_ = np.ldexp(bounds, 2 * shift)
        back = e - shift

        def report(M, n_iter):
            print(f"[{type(self).__name__}] sweep {n_iter}")

        M, self.n_iter_, self.converged_ = itml_kernels.fit_itml(
            V, s, M0, bounds, self.gamma, self.max_iter, self.tol,
            callback=report if self.verbose else None)
        try:
            L = components_from_metric(M, np.float64, what="ITML's metric")
        except ValueError as error:  # round-off in many rank-one updates: far-off data scale
            raise ValueError(f"{error} The Bregman projections lost positive definiteness to "
                             "round-off: rescale the data (e.g. StandardScaler), whose "
                             "distances the default bounds follow unsquared.") from None
        self.components_ = np.ldexp(L, -back).astype(dtype)
        return self


class ITML(_ITMLBase):
    """Information-Theoretic Metric Learning on labelled pairs (Davis et al. 2007).

    Learns the Mahalanobis matrix M nearest (in LogDet divergence) to a prior ``M0`` such that
    similar pairs have ``d_M <= u`` and dissimilar pairs ``d_M >= l``, with slack weighted by
    ``gamma``, by cyclic Bregman projections (Algorithm 1; the numba sweep and the update
    equations are in :mod:`metricfit.losses.itml`). No eigendecomposition, no gradient.

    Parameters
    ----------
    gamma : float, default=1.0
        Slack trade-off (larger: constraints nearer to hard).
    max_iter : int, default=1000
        Sweeps over the constraints at most.
    tol : float, default=1e-3
        Stop when the duals' relative change over a sweep is below it.
    prior : {'identity', 'covariance', 'random'} or array of shape (d, d), default='identity'
        M0 ('covariance': the inverse covariance of the pairs' points).
    bounds : array-like of 2 floats or None, default=None
        (u, l), the targets of the *squared* distances of similar and dissimilar pairs.
        None: the 5th and 95th percentiles of the (unsquared) prior distances of 10,000
        random pairs of the pairs' points, as metric-learn 0.7.0 sets them (from all
        points' distances there). The authors' code takes percentiles of the squared
        distances instead; on digits-30d (70/30 splits, seeds 0 and 1) that gave 95.6 and
        96.1 % 3-NN accuracy against 98.1 and 98.0 % with metric-learn's bounds.
    verbose : bool, default=False
    preprocessor : array-like of shape (n_points, d), default=None
        The points of index pairs (n_pairs, 2).
    random_state : int, RandomState or None, default=None
        Seeds the bounds' random pairs (and prior='random').

    Attributes
    ----------
    components_ : ndarray of shape (d, d)
        L with ``L^T L = M``.
    bounds_ : ndarray of shape (2,)
    threshold_ : float
        On :meth:`pair_score` (minus the squared distance), calibrated for accuracy on the
        training pairs.
    classes_ : ndarray of shape (2,)
    n_iter_ : int
    converged_ : bool
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import ITML
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2, 5))
    >>> X[:20, 1] = X[:20, 0] + 0.1 * rng.normal(size=(20, 5))
    >>> y = np.r_[np.ones(20), -np.ones(20)]
    >>> ITML(random_state=0).fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    - Davis, Kulis, Jain, Sra and Dhillon, "Information-Theoretic Metric Learning", ICML 2007.
    """

    _parameter_constraints = {**_ITMLBase._parameter_constraints,
                              "preprocessor": ["array-like", None]}

    def __init__(self, gamma=1.0, max_iter=1000, tol=1e-3, prior="identity", bounds=None,
                 verbose=False, preprocessor=None, random_state=None):
        self.gamma = gamma
        self.max_iter = max_iter
        self.tol = tol
        self.prior = prior
        self.bounds = bounds
        self.verbose = verbose
        self.preprocessor = preprocessor
        self.random_state = random_state

    def fit(self, pairs, y):
        """Learn M from labelled pairs, then calibrate ``threshold_`` on them.

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
        V = pair_difference_matrix(pairs)
        ends = check_tuples(pairs_as_given(pairs), 2, self.preprocessor)
        self._fit_differences(V, s, lambda rng: endpoint_differences(ends, rng),
                              lambda e: tuple_points_cov(ends, e), learned_dtype(pairs.dtype))
        return self.calibrate_threshold(pairs_as_given(pairs), s)._adopt_coding(y)


class ITML_Supervised(_ITMLBase):  # noqa: N801 - metric-learn's name
    """ITML from class labels: ``n_constraints`` similar and as many dissimilar pairs are
    drawn from the labels (with replacement), then :class:`ITML`'s Algorithm 1.

    Parameters
    ----------
    gamma, max_iter, tol, prior, bounds, verbose : as :class:`ITML`
    n_constraints : int or None, default=None
        Similar (and dissimilar) pairs drawn; None: ``20 * n_classes**2`` (metric-learn's).
    random_state : int, RandomState or None, default=None
        Seeds the pairs and the bounds.

    Attributes
    ----------
    components_, bounds_, n_iter_, converged_, n_features_in_ : as :class:`ITML`
    threshold_ : float
        Calibrated on 2000 similar and 2000 dissimilar training pairs (a fixed seed).
    classes_ : ndarray ``[-1, 1]``

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from metricfit import ITML_Supervised
    >>> X, y = load_iris(return_X_y=True)
    >>> ITML_Supervised(random_state=0).fit(X, y).transform(X).shape
    (150, 4)
    """

    _pair_input = "points"
    _parameter_constraints = {**_ITMLBase._parameter_constraints,
                              "n_constraints": [Interval(Integral, 1, None), None]}

    def __init__(self, gamma=1.0, max_iter=1000, tol=1e-3, n_constraints=None,
                 prior="identity", bounds=None, verbose=False, random_state=None):
        self.gamma = gamma
        self.max_iter = max_iter
        self.tol = tol
        self.n_constraints = n_constraints
        self.prior = prior
        self.bounds = bounds
        self.verbose = verbose
        self.random_state = random_state

    def fit(self, X, y):
        """Draw labelled pairs from (X, y), learn M, calibrate ``threshold_``.

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
        ends = X[index]  # the drawn pairs (n, 2, d): their end points give the bounds
        self._fit_differences(V, s, lambda rng: endpoint_differences(ends, rng),
                              lambda e: np.cov(np.ldexp(np.asarray(X, dtype=np.float64), -e),
                                               rowvar=False),
                              learned_dtype(X.dtype))
        return self._calibrate_on_labels(X, codes)
