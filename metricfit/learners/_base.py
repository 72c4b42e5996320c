"""Shared base of the pair learners: the pair API (transform, pair_score, thresholds,
decision_function, predict, score) and the linear fit (validate, build the objective,
optimise, unpack) that TSML and CSML share.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .. import metrics
from .._validation import Interval, StrOptions, validate_params
from ..optim import SOLVERS, minimize
from ..pairs import check_pair_labels, check_pairs, check_points
from ..whitening import WCCN


def cosine_rows(P1, P2):
    """Row-wise cosine similarity of (n, k) arrays; 0 where an embedding is zero."""
    dots = np.einsum("ij,ij->i", P1, P2)
    norms = np.linalg.norm(P1, axis=1) * np.linalg.norm(P2, axis=1)
    out = np.zeros_like(dots)
    np.divide(dots, norms, out=out, where=norms > 0)
    return out


class PairLearnerMixin(ClassifierMixin, TransformerMixin):
    """The pair API every learner shares, built on ``transform`` and ``threshold_``.

    ``pair_score`` is higher-is-more-similar; ``decision_function = pair_score - threshold_``;
    ``predict`` gives +1 (similar) where the decision is >= 0, else -1.
    """

    def _check_pairs(self, pairs):
        check_is_fitted(self)
        return check_pairs(pairs, n_features=self.n_features_in_, reject_zero=True)

    def pair_score(self, pairs):
        """Cosine similarity of each pair in the learned space (higher = more similar).

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)

        Returns
        -------
        scores : ndarray of shape (n_pairs,), in [-1, 1]
        """
        embedded = self.transform(self._check_pairs(pairs))  # (n, 2, k)
        return cosine_rows(embedded[:, 0], embedded[:, 1])

    def decision_function(self, pairs):
        """``pair_score(pairs) - threshold_``: positive means similar."""
        return self.pair_score(pairs) - self.threshold_

    def predict(self, pairs):
        """+1 (similar) where ``pair_score >= threshold_``, else -1."""
        return np.where(self.decision_function(pairs) >= 0, 1, -1)

    def score(self, pairs, y, sample_weight=None):
        """Accuracy of :meth:`predict` at ``threshold_`` (y in {-1, +1} or {0, 1})."""
        s = check_pair_labels(y, len(pairs), require_both=False)
        correct = self.predict(pairs) == s
        return float(np.average(correct, weights=sample_weight))

    def calibrate_threshold(self, pairs, y, strategy="accuracy"):
        """Set ``threshold_`` (in score units) from labelled pairs.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)
        y : array-like of shape (n_pairs,), both classes present
        strategy : {'accuracy', 'eer'}, default='accuracy'
            'accuracy' maximises the decision accuracy on these pairs (maxDA, seed 004
            eq. 14); 'eer' puts the threshold where false accepts equal false rejects.

        Returns
        -------
        self
        """
        s = check_pair_labels(y, len(pairs), require_both=True)
        self.threshold_ = float(metrics.calibrate_threshold(s, self.pair_score(pairs), strategy))
        return self


def identity_rows(k, d):
    """The first k rows of the d x d identity (k <= d)."""
    return np.eye(k, d)


class LinearPairLearner(PairLearnerMixin, BaseEstimator):
    """Base of the linear learners ``x -> A x`` scored by the cosine in the learned space.

    Subclasses set ``_loss``, a module of :mod:`metricfit.losses` with ``objective``.
    """

    _loss = None

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None), None],
        "init": [StrOptions({"identity", "wccn"}), "array-like"],
        "lam": [Interval(Real, 0, None)],
        "similar_only": ["boolean"],
        "solver": [StrOptions(set(SOLVERS))],
        "max_iter": [Interval(Integral, 1, None)],
        "tol": [Interval(Real, 0, None)],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0, None), "boolean"],
        "warm_start": ["boolean"],
        "callback": [callable, None],
    }

    def __init__(
        self,
        n_components=None,
        *,
        init="identity",
        lam=1e-3,
        similar_only=False,
        solver="lbfgs",
        max_iter=200,
        tol=1e-5,
        random_state=None,
        verbose=0,
        warm_start=False,
        callback=None,
    ):
        self.n_components = n_components
        self.init = init
        self.lam = lam
        self.similar_only = similar_only
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.callback = callback

    def fit(self, pairs, y):
        """Learn ``components_`` from labelled pairs, then calibrate ``threshold_`` on them.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)
        y : array-like of shape (n_pairs,)
            +1 similar, -1 dissimilar ({0, 1} accepted, 1 = similar). Both classes are
            needed (the threshold is calibrated on all pairs, also when ``similar_only``).

        Returns
        -------
        self
        """
        validate_params(self)
        pairs = check_pairs(pairs, reject_zero=True)
        s = check_pair_labels(y, pairs.shape[0], require_both=True)
        self.n_features_in_ = pairs.shape[2]
        A0 = self._initial_components(pairs, s)
        start = self.components_ if self.warm_start and hasattr(self, "components_") else A0
        train = s == 1 if self.similar_only else slice(None)
        objective = self._loss.objective(
            pairs[train, 0], pairs[train, 1], s[train], lam=self.lam, A0=A0
        )
        result = minimize(
            objective,
            start,
            solver=self.solver,
            max_iter=self.max_iter,
            tol=self.tol,
            callback=self._on_iteration(A0.shape),
            random_state=self.random_state,
        )
        self._warn_if_not_converged(result)
        self.components_ = result.x.reshape(A0.shape).astype(pairs.dtype)
        self.n_iter_ = int(result.nit)
        self.classes_ = np.array([-1, 1])
        return self.calibrate_threshold(pairs, s)

    def _initial_components(self, pairs, s):
        """A0, the start and regularisation target: identity rows, WCCN or an array."""
        d = pairs.shape[2]
        k = d if self.n_components is None else self.n_components
        if k > d:
            raise ValueError(f"n_components={k} must be <= n_features={d}.")
        if isinstance(self.init, str) and self.init == "identity":
            return identity_rows(k, d).astype(pairs.dtype)
        if isinstance(self.init, str):  # 'wccn': each similar pair a class (seed 002 III.D)
            return WCCN(n_components=k).fit(pairs, s).components_.astype(pairs.dtype)
        A0 = np.asarray(self.init, dtype=pairs.dtype)
        if A0.shape != (k, d):
            raise ValueError(f"init must have shape (n_components, n_features) = {(k, d)}, "
                             f"got {A0.shape}.")
        if not np.isfinite(A0).all():
            raise ValueError("init contains NaN or infinity.")
        return A0

    def _on_iteration(self, shape):
        if not (self.verbose or self.callback):
            return None

        def report(x, J, n_iter):
            if self.verbose:
                print(f"[{type(self).__name__}] iteration {n_iter:4d}  cost {J:.6f}")
            if self.callback is not None:
                self.callback(x.reshape(shape), n_iter)

        return report

    def _warn_if_not_converged(self, result):
        if not result.success:
            warnings.warn(
                f"[{type(self).__name__}] {self.solver} did not converge after {result.nit} "
                f"iterations: {result.message}. Increase max_iter or tol.",
                ConvergenceWarning,
            )

    def transform(self, X):
        """Map points (n, d) -> (n, k) or pairs (n, 2, d) -> (n, 2, k) by ``x -> A x``."""
        check_is_fitted(self)
        X = np.asarray(X)
        if X.ndim == 3:
            X = check_pairs(X, n_features=self.n_features_in_)
        else:
            X = check_points(X, n_features=self.n_features_in_)
        return X @ self.components_.T
