r"""SDML: Sparse Determinant Metric Learning (Qi, Tang, Zha, Chua and Zhang, ICML 2009), on
pairs and on labelled points.

SDML's problem (eq. 8 of the paper) is

.. math::

    \min_{M \succ 0} \operatorname{tr}(M P) - \log\det M + \lambda \|M\|_{1,\text{off}},
    \qquad P = M_0^{-1} + \eta \sum_i y_i\, \delta_i \delta_i^T,

(:math:`\delta_i` a pair's difference, :math:`y_i = +1` similar, -1 dissimilar,
:math:`\eta` = ``balance_param``, :math:`\lambda` = ``sparsity_param``): the graphical lasso
with P in the place of the empirical covariance. It is solved by scikit-learn's public
:func:`sklearn.covariance.graphical_lasso`, whose precision is M. As in metric-learn, a P
with negative eigenvalues (too many or too far dissimilar pairs) is shifted to PSD (its
smallest eigenvalue moved up) with a ``ConvergenceWarning``: the graphical lasso needs a
positive definite input. metric-learn moves it to 1e-10 and passes the shifted P as the start
``cov_init`` (which scikit-learn >= 1.5 no longer takes); here the shifted P is the input, and
its smallest eigenvalue is raised to ``1e-3`` times its eigenvalue spread (then ``1e-2``,
``1e-1`` if scikit-learn's solver still reports a "too ill-conditioned" system;
:data:`CONDITION_FLOORS`): at 1e-10 the solver fails on such inputs, and the metric's scale
along that direction is set by the shift alone.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.covariance import graphical_lasso
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._validation import Interval, StrOptions, user_stacklevel, validate_params
from ..pairs import check_pair_labels
from ..pairs.index import check_pair_input, pairs_as_given
from ..pairs.tuples import check_tuples
from ._base import PairLearnerMixin
from ._mahalanobis import MahalanobisMixin, components_from_metric, learned_dtype
from .itml import (
    PRIOR_OPTIONS,
    check_scale,
    pair_difference_matrix,
    prior_metric,
    supervised_pairs,
    tuple_points_cov,
)

# P's smallest eigenvalue after the shift, relative to its spread: tried in turn until the
# graphical lasso succeeds (condition numbers 1000, 100, 10 at most)
CONDITION_FLOORS = (1e-3, 1e-2, 1e-1)


class _SDMLBase(MahalanobisMixin, PairLearnerMixin, BaseEstimator):
    _parameter_constraints = {
        "balance_param": [Interval(Real, 0, None)],
        "sparsity_param": [Interval(Real, 0, None)],
        "prior": [StrOptions(PRIOR_OPTIONS), "array-like"],
        "max_iter": [Interval(Integral, 1, None)],
        "verbose": ["boolean", Interval(Integral, 0, None)],
        "random_state": ["random_state"],
    }

    def _fit_differences(self, V, s, points_cov, dtype):
        who = type(self).__name__
        d = V.shape[1]
        if d < 2:
            raise ValueError(f"{who} needs at least 2 features (the graphical lasso), got {d}.")
        check_scale(float(np.abs(V).max()) if V.size else 0.0, who)
        _, prior_inv = prior_metric(self.prior, d, points_cov,
                                    check_random_state(self.random_state), who, inverse=True)
        P = prior_inv + self.balance_param * ((V * s[:, None]).T @ V)
        w, U = np.linalg.eigh(0.5 * (P + P.T))
        if w[0] < 0:
            warnings.warn(f"[{who}] the graphical lasso's input P = M0^-1 + balance_param * "
                          f"sum y d d^T has negative eigenvalues (smallest {w[0]:.3g}); it is "
                          "shifted to positive definite. Lower balance_param or use "
                          "prior='identity'.", ConvergenceWarning, stacklevel=user_stacklevel())
        spread = w[-1] - min(w[0], 0.0)
        for relative in CONDITION_FLOORS:
            floor = relative * spread
            shifted = w - w[0] + floor if w[0] < floor else w
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    _, M = graphical_lasso((U * shifted) @ U.T, alpha=self.sparsity_param,
                                           max_iter=self.max_iter, verbose=bool(self.verbose))
                break
            except FloatingPointError as error:
                failure = error
        else:
            raise ValueError(f"{who}: the graphical lasso failed ({failure}); rescale the data, "
                             "lower balance_param or raise sparsity_param.")
        if not np.isfinite(M).all():
            raise ValueError(f"{who}: the graphical lasso gave a non-finite metric; rescale "
                             "the data or lower balance_param.")
        self.components_ = components_from_metric(M, dtype, strict=False, what="SDML's metric")
        return self


class SDML(_SDMLBase):
    """Sparse Determinant Metric Learning on labelled pairs (Qi et al. 2009).

    The graphical lasso of ``P = M0^-1 + balance_param * sum_i y_i d_i d_i^T`` (see the
    module): a sparse precision M close to the prior, that shrinks similar pairs' directions
    and stretches dissimilar ones'.

    Parameters
    ----------
    balance_param : float, default=0.5
        eta, the weight of the pairs' term.
    sparsity_param : float, default=0.01
        lambda, the off-diagonal L1 weight (graphical lasso's ``alpha``).
    prior : {'identity', 'covariance', 'random'} or array of shape (d, d), default='identity'
    max_iter : int, default=100
        The graphical lasso's iterations at most.
    verbose : bool, default=False
    preprocessor : array-like of shape (n_points, d), default=None
        The points of index pairs.
    random_state : int, RandomState or None, default=None
        Seeds prior='random'.

    Attributes
    ----------
    components_ : ndarray of shape (d, d)
    threshold_ : float
    classes_ : ndarray of shape (2,)
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import SDML
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2, 5))
    >>> X[:20, 1] = X[:20, 0] + 0.1 * rng.normal(size=(20, 5))
    >>> y = np.r_[np.ones(20), -np.ones(20)]
    >>> SDML(balance_param=0.01).fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    - Qi, Tang, Zha, Chua and Zhang, "An Efficient Sparse Metric Learning in High-Dimensional
      Space via l1-Penalized Log-Determinant Regularization", ICML 2009.
    """

    _parameter_constraints = {**_SDMLBase._parameter_constraints,
                              "preprocessor": ["array-like", None]}

    def __init__(self, balance_param=0.5, sparsity_param=0.01, prior="identity", max_iter=100,
                 verbose=False, preprocessor=None, random_state=None):
        self.balance_param = balance_param
        self.sparsity_param = sparsity_param
        self.prior = prior
        self.max_iter = max_iter
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
        ends = check_tuples(pairs_as_given(pairs), 2, self.preprocessor)
        self._fit_differences(pair_difference_matrix(pairs), s,
                              lambda: tuple_points_cov(ends), learned_dtype(pairs.dtype))
        return self.calibrate_threshold(pairs_as_given(pairs), s)._adopt_coding(y)


class SDML_Supervised(_SDMLBase):  # noqa: N801 - metric-learn's name
    """SDML from class labels: ``n_constraints`` similar and as many dissimilar pairs drawn
    from the labels, then :class:`SDML`.

    Parameters
    ----------
    balance_param, sparsity_param, prior, max_iter, verbose : as :class:`SDML`
    n_constraints : int or None, default=None
        None: ``20 * n_classes**2`` (metric-learn's).
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    components_, n_features_in_ : as :class:`SDML`
    threshold_ : float
        Calibrated on 2000 similar and 2000 dissimilar training pairs (a fixed seed).
    classes_ : ndarray ``[-1, 1]``

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from metricfit import SDML_Supervised
    >>> X, y = load_iris(return_X_y=True)
    >>> SDML_Supervised(balance_param=1e-3, random_state=0).fit(X, y).transform(X).shape
    (150, 4)
    """

    _pair_input = "points"
    _parameter_constraints = {**_SDMLBase._parameter_constraints,
                              "n_constraints": [Interval(Integral, 1, None), None]}

    def __init__(self, balance_param=0.5, sparsity_param=0.01, prior="identity", max_iter=100,
                 n_constraints=None, verbose=False, random_state=None):
        self.balance_param = balance_param
        self.sparsity_param = sparsity_param
        self.prior = prior
        self.max_iter = max_iter
        self.n_constraints = n_constraints
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
        self._fit_differences(V, s, lambda: np.cov(np.asarray(X, dtype=np.float64),
                                                   rowvar=False), learned_dtype(X.dtype))
        return self._calibrate_on_labels(X, codes)
