"""The siamese learner: a mapping x pair loss x optimizer (ARCHITECTURE.md, seed 004 Fig. 1).

``fit`` reads like the method: validate, choose the start and the regulariser's target, build
the objective, optimise, unpack. A linear mapping with a loss that has a prepared objective
(TSML's ``U = X1 + s X2`` and Gram sums, DDML's ``x - y``) takes that fast path; any other
mapping goes through the generic composition :class:`metricfit.mappings.MappedObjective`
(a test ties the two).
"""

import functools
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._validation import Interval, StrOptions, validate_params
from ..mappings import MAPPINGS, MappedObjective, l2_normalise
from ..mappings.objective import IndexMappedObjective
from ..optim import SOLVERS, minimize
from ..pairs import check_pair_labels, check_pairs, check_points
from ..pairs.index import IndexPairs, check_pair_input, normalised_points
from ..whitening import WCCN
from ._base import PairLearnerMixin, score_index_pairs, validation_accuracy, validation_split

DEFAULT_MAX_ITER = {"lbfgs": 200, "sgd": 20000}
N_TRAIN_SCORE_PAIRS = 2000  # training pairs scored at each SGD check, for the learning curve


def _rows(pairs, mask):
    """``pairs[mask]``, without a copy when every pair is kept."""
    return pairs if mask.all() else pairs[mask]


class SiameseLearner(PairLearnerMixin, BaseEstimator):
    """Base of the learners built on one mapping, one pair loss and one optimizer.

    Subclasses set ``_loss`` (a module of :mod:`metricfit.losses`), ``_score_kind``
    ('cosine' or 'distance') and, for losses with hyper-parameters, ``_loss_params()``.
    """

    _loss = None

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None), None],
        "mapping": [StrOptions(set(MAPPINGS))],
        "n_hidden": [Interval(Integral, 1, None), None],
        "normalize": ["boolean"],
        "init": [StrOptions({"auto", "identity", "wccn"}), "array-like"],
        "lam": [Interval(Real, 0, None)],
        "similar_only": ["boolean"],
        "solver": [StrOptions(set(SOLVERS))],
        "max_iter": [Interval(Integral, 1, None), None],
        "tol": [Interval(Real, 0, None)],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "batch_size": [Interval(Integral, 1, None)],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "validation_interval": [Interval(Integral, 1, None)],
        "n_iter_no_change": [Interval(Integral, 1, None), None],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0, None), "boolean"],
        "warm_start": ["boolean"],
        "callback": [callable, None],
        "preprocessor": ["array-like", None],
    }

    def __init__(
        self,
        n_components=None,
        *,
        mapping="linear",
        n_hidden=None,
        normalize=False,
        init="auto",
        lam=1e-3,
        similar_only=False,
        solver="lbfgs",
        max_iter=None,
        tol=1e-5,
        learning_rate=1e-3,
        momentum=0.9,
        batch_size=32,
        validation_fraction=0.1,
        validation_interval=100,
        n_iter_no_change=20,
        random_state=None,
        verbose=0,
        warm_start=False,
        callback=None,
        preprocessor=None,
    ):
        self.n_components = n_components
        self.mapping = mapping
        self.n_hidden = n_hidden
        self.normalize = normalize
        self.init = init
        self.lam = lam
        self.similar_only = similar_only
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.batch_size = batch_size
        self.validation_fraction = validation_fraction
        self.validation_interval = validation_interval
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.callback = callback
        self.preprocessor = preprocessor

    def _loss_params(self):
        return {}

    # -- fit: validate, start, objective, optimise, unpack ---------------------------------

    def fit(self, pairs, y):
        """Learn the mapping from labelled pairs, then calibrate ``threshold_`` on them.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2)
            Vector pairs, or integer index pairs into the points of ``preprocessor`` (the
            same fit, without the (n_pairs, 2, n_features) array).
        y : array-like of shape (n_pairs,)
            +1 similar, -1 dissimilar ({0, 1} accepted, 1 = similar). Both classes are
            needed (the threshold is calibrated on all pairs, also when ``similar_only``).

        Returns
        -------
        self
        """
        validate_params(self)
        pairs = check_pair_input(pairs, self.preprocessor,
                                 reject_zero=self._score_kind == "cosine" or self.normalize)
        s = check_pair_labels(y, pairs.shape[0], require_both=True)
        self.n_features_in_ = pairs.shape[2]
        inputs = self._normalised(pairs)
        train, validation = self._split(s)
        mapping = self._make_mapping()
        theta0, reference = self._initial_params(mapping, _rows(inputs, train), s[train],
                                                 pairs.dtype)
        start = self._theta() if self._warm(mapping) else theta0
        fitted = train & (s == 1) if self.similar_only else train
        objective = self._objective(mapping, _rows(inputs, fitted), s[fitted], reference)
        result = minimize(objective, start, solver=self.solver,
                          **self._solver_options(mapping, inputs, s, train, validation))
        self._warn_if_failed(result)
        self._unpack(mapping, result.x.astype(pairs.dtype))
        self.n_iter_ = int(result.nit)
        self.curves_ = getattr(result, "curves", None)
        return self.calibrate_threshold(getattr(pairs, "index", pairs), s)._adopt_coding(y)

    def _warm(self, mapping):
        """Warm start only from a previous fit of the same mapping and sizes."""
        return self.warm_start and repr(getattr(self, "mapping_", None)) == repr(mapping)

    def _normalised(self, X):
        if not self.normalize:
            return X
        if isinstance(X, IndexPairs):
            return X.with_points(normalised_points(X.points, l2_normalise))
        return l2_normalise(X.reshape(-1, X.shape[-1])).reshape(X.shape)

    def _split(self, s):
        """Boolean masks (train, validation): SGD holds out a stratified validation set for
        early stopping (seed 004 Algorithm 1); L-BFGS trains on all pairs."""
        if self.solver != "sgd":
            return np.ones(s.shape[0], dtype=bool), None
        train = validation_split(s, self.validation_fraction, self.random_state)
        return train, ~train

    def _make_mapping(self):
        d = self.n_features_in_
        k = d if self.n_components is None else self.n_components
        if self.mapping == "linear" and k > d:
            raise ValueError(f"n_components={k} must be <= n_features={d}.")
        if self.mapping == "mlp":
            return MAPPINGS["mlp"](d, self.n_hidden or k, k)
        return MAPPINGS[self.mapping](d, k)

    def _initial_params(self, mapping, pairs, s, dtype):
        """(start, regulariser target). Linear: A0 = identity rows, WCCN or an array, both
        start and target (seed 002 eq. 9). Non-linear: Glorot-uniform start (seed 004
        eq. 13) and target 0 (weight decay)."""
        init = self.init
        if isinstance(init, str) and init == "auto":
            init = "identity" if self.mapping == "linear" else "glorot"
        if isinstance(init, str) and init in ("identity", "wccn") and self.mapping != "linear":
            raise ValueError(f"init={init!r} needs mapping='linear'; use 'auto' or an array.")
        if isinstance(init, str) and init == "glorot":
            theta0 = mapping.init(self.random_state)
            return theta0.astype(dtype), np.zeros_like(theta0, dtype=dtype)
        if isinstance(init, str) and init == "identity":
            theta0 = mapping.init()
        elif isinstance(init, str):  # 'wccn': each similar pair a class (seed 002 III.D)
            wccn = WCCN(n_components=mapping.n_components)
            try:
                wccn = (wccn.fit_index_pairs(pairs.points, pairs.index, s)
                        if isinstance(pairs, IndexPairs) else wccn.fit(pairs, s))
            except ValueError:  # WCCN's advice names WCCN's parameters, not this learner's
                raise ValueError(
                    f"init='wccn': the within-class covariance of the {int(np.sum(s == 1))} "
                    f"similar pairs is singular in {mapping.n_features} features. Use "
                    "init='identity', more similar pairs, or fewer features (e.g. WPCA "
                    "first).") from None
            theta0 = wccn.components_.ravel()
        else:
            theta0 = self._array_init(mapping)
        theta0 = theta0.astype(dtype)
        return theta0, theta0

    def _array_init(self, mapping):
        A0 = np.asarray(self.init, dtype=np.float64)
        if self.mapping == "linear":
            expected = (mapping.n_components, mapping.n_features)
            if A0.shape != expected:
                raise ValueError(f"init must have shape (n_components, n_features) = {expected}, "
                                 f"got {A0.shape}.")
        elif A0.shape != (mapping.n_params,):
            raise ValueError(f"init must be a flat parameter vector of length {mapping.n_params} "
                             f"for mapping={self.mapping!r}, got shape {A0.shape}.")
        if not np.isfinite(A0).all():
            raise ValueError("init contains NaN or infinity.")
        return A0.ravel()

    def _objective(self, mapping, pairs, s, reference):
        """The loss's prepared objective (linear) or the mapped composition, over vector
        pairs or, without gathering them, over index pairs."""
        index = isinstance(pairs, IndexPairs)
        data = (pairs.points, pairs.index) if index else (pairs[:, 0], pairs[:, 1])
        if self.mapping == "linear":
            A0 = reference.reshape(mapping.n_components, mapping.n_features)
            prepare = self._loss.index_objective if index else self._loss.objective
            return prepare(*data, s, lam=self.lam, A0=A0, **self._loss_params())
        loss = functools.partial(self._loss.embedding_cost_grad, **self._loss_params())
        Objective = IndexMappedObjective if index else MappedObjective
        return Objective(loss, mapping, *data, s, lam=self.lam, theta0=reference)

    def _solver_options(self, mapping, inputs, s, train, validation):
        options = {"max_iter": self.max_iter or DEFAULT_MAX_ITER[self.solver],
                   "callback": self._on_iteration(), "random_state": self.random_state}
        if self.solver == "lbfgs":
            return dict(options, tol=self.tol)
        rng = np.random.RandomState(0)
        train_rows = np.flatnonzero(train)
        if train_rows.size > N_TRAIN_SCORE_PAIRS:
            train_rows = np.sort(rng.choice(train_rows, N_TRAIN_SCORE_PAIRS, replace=False))

        def accuracy_on(rows):
            pairs, labels = inputs[rows], s[rows]  # copied once, scored at every check
            return lambda theta: validation_accuracy(
                labels, self._embedded_scores(mapping, theta, pairs))

        return dict(options, learning_rate=self.learning_rate, momentum=self.momentum,
                    batch_size=self.batch_size, validation=accuracy_on(validation),
                    train_score=accuracy_on(train_rows), check_every=self.validation_interval,
                    n_iter_no_change=self.n_iter_no_change)

    def _on_iteration(self):
        if not (self.verbose or self.callback):
            return None

        def report(theta, J, n_iter):
            if self.verbose:
                print(f"[{type(self).__name__}] iteration {n_iter:6d}  cost {J:.6f}")
            if self.callback is not None:
                self.callback(self._public_params(theta), n_iter)

        return report

    def _public_params(self, theta):
        if self.mapping == "linear":
            return theta.reshape(-1, self.n_features_in_)
        return theta

    def _warn_if_failed(self, result):
        if result.success or (self.solver == "sgd" and result.status == 1):
            return  # SGD at max_iter still returns its best validation model
        warnings.warn(f"[{type(self).__name__}] {self.solver} did not converge after "
                      f"{result.nit} iterations: {result.message}. Increase max_iter or tol.",
                      ConvergenceWarning)

    def _unpack(self, mapping, theta):
        self.mapping_ = mapping
        if self.mapping == "linear":
            self.components_ = theta.reshape(mapping.n_components, mapping.n_features)
            self.__dict__.pop("params_", None)
        else:
            self.params_ = theta
            self.__dict__.pop("components_", None)

    def _theta(self):
        return self.components_.ravel() if self.mapping == "linear" else self.params_

    # -- the learned map and scores --------------------------------------------------------

    def transform(self, X):
        """Map points (n, d) -> (n, k) or pairs (n, 2, d) -> (n, 2, k) through the mapping."""
        check_is_fitted(self)
        X = np.asarray(X)
        if X.ndim == 3:
            X = check_pairs(X, n_features=self.n_features_in_)
        else:
            X = check_points(X, n_features=self.n_features_in_)
        flat = self._normalised(X).reshape(-1, X.shape[-1])
        return self.mapping_.transform(self._theta(), flat).reshape(*X.shape[:-1], -1)

    def _embedded_scores(self, mapping, theta, pairs):
        if isinstance(pairs, IndexPairs):
            return score_index_pairs(functools.partial(mapping.transform, theta),
                                     self._score_embedded, pairs)
        flat = mapping.transform(theta, pairs.reshape(-1, pairs.shape[-1]))
        embedded = flat.reshape(pairs.shape[0], 2, -1)
        return self._score_embedded(embedded[:, 0], embedded[:, 1])
