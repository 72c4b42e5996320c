"""MLKR: Metric Learning for Kernel Regression (Weinberger and Tesauro 2007).

``fit`` takes points with *real* targets: validate, start A, minimise the leave-one-out
kernel-regression error (:mod:`metricfit.losses.mlkr`, gradient derived there) with L-BFGS
on A. Rows are processed in blocks: memory O(b n), never n x n.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from .._validation import Interval, StrOptions, validate_params
from ..losses import mlkr as mlkr_loss
from ..optim import minimize
from ._base import PairLearnerMixin
from ._mahalanobis import MahalanobisMixin, initial_components
from ._solver import SolverMixin


class MLKR(SolverMixin, MahalanobisMixin, PairLearnerMixin, BaseEstimator):
    r"""Metric Learning for Kernel Regression (Weinberger and Tesauro 2007): the linear map
    A whose Gaussian-kernel leave-one-out regression best predicts real targets,

    .. math::

        J(A) = \sum_i (\hat y_i - y_i)^2, \quad \hat y_i = \frac{\sum_{j \ne i} y_j
            e^{-\|A (x_i - x_j)\|^2}}{\sum_{j \ne i} e^{-\|A (x_i - x_j)\|^2}}

    (eqs. 2-3), minimised with L-BFGS on A. Pairs are scored by minus the squared learned
    distance.

    Parameters
    ----------
    n_components : int, default=None
        Rows of A (None: n_features).
    init : {'auto', 'identity', 'pca', 'random'} or array, default='auto'
        A0; 'auto' is 'pca' when n_components < min(n_features, n_samples), else 'identity'
        (metric-learn's rule without labels).
    max_iter : int, default=1000
        L-BFGS iterations (metric-learn's default).
    tol : float, default=1e-5
        L-BFGS's gradient tolerance.
    block_rows : int, default=None
        Rows per block (None: a ~32 MiB (b, n) buffer).
    random_state : None, int or RandomState, default=None
    verbose : int, default=0
    callback : callable, default=None
        ``callback(A, n_iter)`` after each iteration.
    preprocessor : array-like of shape (n_points, n_features), default=None
        Points that the pair methods may take index pairs (n_pairs, 2) into.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    objective_ : float
    n_iter_ : int
    threshold_ : float
        On :meth:`pair_score`. Set by ``fit`` only when the targets repeat (class-like
        targets: pairs of equal targets are "similar"), calibrated as for LMNN; otherwise
        set it with :meth:`calibrate_threshold` before ``predict``.
    classes_ : ndarray, [-1, 1]
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.learners import MLKR
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 3))
    >>> y = np.sin(2 * X[:, 0])  # only the first feature matters
    >>> M = MLKR().fit(X, y).get_mahalanobis_matrix()
    >>> bool(M[0, 0] > 10 * max(M[1, 1], M[2, 2]))
    True

    References
    ----------
    - K. Q. Weinberger and G. Tesauro, "Metric Learning for Kernel Regression", AISTATS 2007.
    """

    _pair_input = "points"
    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None), None],
        "init": [StrOptions({"auto", "identity", "pca", "random"}), "array-like"],
        "max_iter": [Interval(Integral, 1, None)],
        "tol": [Interval(Real, 0, None)],
        "block_rows": [Interval(Integral, 1, None), None],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0, None), "boolean"],
        "callback": [callable, None],
        "preprocessor": ["array-like", None],
    }

    def __init__(self, n_components=None, *, init="auto", max_iter=1000, tol=1e-5,
                 block_rows=None, random_state=None, verbose=0, callback=None,
                 preprocessor=None):
        self.n_components = n_components
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.block_rows = block_rows
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback
        self.preprocessor = preprocessor

    def fit(self, X, y):
        """Learn A from points with real targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), n_samples >= 2
            float32 is kept.
        y : array-like of shape (n_samples,)
            Real (finite) targets.

        Returns
        -------
        self
        """
        validate_params(self)
        X = self._check_fit_points(X)
        y = _check_targets(y, X.shape[0])
        d = X.shape[1]
        k = d if self.n_components is None else self.n_components
        if k > d:
            raise ValueError(f"n_components={k} must be at most n_features={d}.")
        A0 = initial_components(self.init, X, k, None, self.random_state)
        f = mlkr_loss.objective(X, y.astype(X.dtype), k, self.block_rows)
        result = minimize(f, A0, solver="lbfgs", max_iter=self.max_iter, tol=self.tol,
                          callback=self._on_iteration(lambda t: t.reshape(k, d)))
        if result.nit >= self.max_iter:  # a line search ending is L-BFGS's usual stop here
            self._warn_if_failed(result, solver="lbfgs")
        self.components_ = result.x.reshape(k, d).astype(X.dtype)
        self.objective_, self.n_iter_ = float(result.fun), int(result.nit)
        self.__dict__.pop("threshold_", None)
        self.classes_ = np.array([-1, 1])
        _, counts = np.unique(y, return_counts=True)
        if counts.size >= 2 and counts.max() >= 2:  # class-like targets
            self._calibrate_on_labels(X, y)
        return self

    def decision_function(self, pairs):
        """``pair_score - threshold_``: positive means similar (needs ``threshold_``)."""
        if not hasattr(self, "threshold_") and hasattr(self, "components_"):
            raise NotFittedError("MLKR's targets did not repeat: set threshold_ with "
                                 "calibrate_threshold(pairs, y) before decision_function or "
                                 "predict.")
        return super().decision_function(pairs)


def _check_targets(y, n_samples):
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_samples:
        raise ValueError(f"y must be 1-D with one real target per sample ({n_samples}), got "
                         f"shape {y.shape}.")
    if y.dtype.kind not in "biuf":
        raise ValueError(f"y must hold real targets, got dtype {y.dtype}.")
    y = y.astype(np.float64)
    if not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinity: every sample needs a finite target.")
    return y
