"""LDML: Logistic Discriminant based Metric Learning (Guillaumin et al. 2009; seed 001, 2.3)."""

import warnings
from numbers import Real

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import Interval, StrOptions, user_stacklevel, validate_params
from ..losses import ldml as ldml_loss
from ..losses.ldml import metric_distances
from ..objective import make_metric_objective
from ..optim import minimize
from ..optim.projected import ScaledObjective, minimize_projected, project_diagonal, project_psd
from ..pairs import check_pair_labels, check_pairs, check_points
from ..pairs.index import check_pair_input, pair_differences, pairs_as_given
from ._base import PairLearnerMixin, finite_scores
from ._solver import SOLVER_CONSTRAINTS, SolverMixin
from ._xp import (
    device_namespace,
    fit_ldml_on_device,
    ldml_distance_on_device,
    ldml_transform_on_device,
    logistic_columns,
    scores_namespace,
)

NEGATIVE_EIGENVALUE_RTOL = 1e-6  # an eigenvalue below -rtol * max|eigenvalue| is "negative"
PROJECTIONS = {"psd": project_psd, "diagonal": project_diagonal}


class LDML(SolverMixin, PairLearnerMixin, BaseEstimator):
    """Logistic Discriminant based Metric Learning: a Mahalanobis metric and bias from pairs.

    Models the probability that a pair is similar as ``p = sigma(b - d_M(x, y))``, ``d_M(x, y)
    = (x - y)^T M (x - y)`` (seed 001 eqs. 1-2), and minimises ``J(M, b) = -1/n L + lam/2
    ||M||_F^2``, L the log-likelihood of eq. 3 (gradient eq. 4, sign corrected in
    :mod:`metricfit.losses.ldml`). The solvers work on M' with ``M = S M' S``, ``S = diag(1 /
    rms(x - y))`` over the training pairs: a preconditioner (same minimiser, same sets).

    M is free by default (as in seed 001's experiments); the scores use M itself. A
    ``constraint`` keeps M in a convex set by Bertsekas' projected gradient (seed 001 ref. [3],
    :func:`metricfit.optim.projected.minimize_projected`); ``solver`` and SGD options are unused.

    Threads: LDML's fused kernels and BLAS run on ``metricfit.get_threads()``
    threads (a :func:`metricfit.threads` block, :func:`metricfit.set_threads` or
    ``METRICFIT_NUM_THREADS``); the kernels give the same bits on any number of them (BLAS
    may round differently at another thread count).

    Parameters
    ----------
    lam : float, default=1e-3
        lambda, the weight of the ridge ``1/2 ||M||_F^2`` (b is not regularised).
    constraint : {None, 'psd', 'diagonal'}, default=None
        None: M free; 'psd': symmetric positive semi-definite (projection: symmetrise, clip
        negative eigenvalues); 'diagonal': diagonal (projection: zero the off-diagonal).
    init : {'identity', 'zeros'} or array of shape (d, d), default='identity'
        M0, the start (projected onto the constraint set, if any). The bias starts at
        ``b0 = median_i d_M0(x_i, y_i)`` over the training pairs, so p starts near 0.5.
    solver : {'lbfgs', 'sgd'}, default='lbfgs'
        Unconstrained solver: L-BFGS on all pairs, or momentum SGD with early stopping on a
        held-out validation split (as the siamese learners). Ignored with a constraint.
    max_iter : int, default=None
        None: 200 (L-BFGS), 20000 (SGD steps), 2000 (projected gradient).
    tol : float, default=1e-5
        L-BFGS: largest gradient component; projected: ``||theta - P(theta - g)||`` (in M').
    learning_rate, momentum, batch_size, validation_fraction : default=1e-3, 0.9, 32, 0.1
        SGD step size, momentum, pairs per step (half similar), share of pairs held out.
    validation_interval, n_iter_no_change, random_state : default=100, 20, None
        SGD steps between validation checks, checks without improvement before stopping,
        seed of the batches and of the validation split (as for :class:`metricfit.TSML`).
    verbose : int, default=0
        Print the cost at each iteration (check, for SGD) when > 0.
    warm_start : bool, default=False
        Start from the previous fit's ``metric_`` and ``bias_`` (projected, with a constraint).
    callback : callable, default=None
        ``callback(M, b, n_iter)`` after each iteration (check, for SGD).
    preprocessor : array-like of shape (n_points, n_features), default=None
        The points of index pairs: ``fit``, ``pair_score``, ``pair_distance``,
        ``predict_proba``, ``predict``, ``score`` and ``calibrate_threshold`` then also take
        pairs as an (n_pairs, 2) integer array of row indices into it. The fit is the same
        as on the (n_pairs, 2, d) pairs, in O(n_points d^2 + n_pairs d) per iteration instead
        of O(n_pairs d^2) (:class:`metricfit.losses.ldml.LDMLIndexObjective`). NumPy array,
        float32/float64 memmap (read in blocks) or Dask array (map-reduce).

    Attributes
    ----------
    metric_ : ndarray of shape (d, d)
        The learned M (not necessarily symmetric or PSD without a constraint).
    bias_ : float
        The learned b (eq. 2).
    components_ : ndarray of shape (d, d)
        L with ``L^T L`` = the PSD part of ``(M + M^T) / 2``; :meth:`transform` maps x to
        ``L x``. A ``UserWarning`` at fit says when M had significantly negative eigenvalues,
        so that the embedding reproduces the PSD part of M only.
    threshold_ : float
        Threshold on :meth:`pair_score`, calibrated for accuracy on the training pairs. The
        model's own rule ``p >= 0.5`` is threshold 0 (``pair_score`` is the logit of p).
    n_iter_ : int
    classes_ : ndarray of shape (2,)
        The coding of the pair labels given to ``fit`` ({-1, +1}, {0, 1} or {False, True});
        ``predict`` answers in it.
    n_features_in_ : int

    Notes
    -----
    Why LDML is not a preset of :class:`~metricfit.learners.Siamese` (issue 11 asked for it,
    and it shares the solver mixin, the solver options and the convergence reporting):

    - M is free by default, as in seed 001's experiments ("we did not constrain M, as we
      only use the probabilities of eq. 2"). An indefinite M is no siamese mapping: there
      is no f with ``d_M(x, y) = |f(x) - f(y)|^2``. Only its PSD part has one (``L x``,
      :meth:`transform`); parametrising by L instead of M would make the convex problem of
      eq. 3 non-convex and change every fit.
    - Written as a siamese pair, f(x) = ``[x M, x]`` with a bilinear "loss" and the bias b
      appended to theta, the generic composition would compute ``x M - y M`` where the
      fit computes ``(x - y) M`` (other round-off), and nearly every step of Siamese's fit
      would be overridden: the ridge is on M only and towards 0 (Siamese's pulls all of
      theta towards its start), the solvers work on a rescaled M' (the preconditioner
      above), ``b0`` is the median distance of the training pairs, ``constraint`` needs a
      third solver (projected gradient, its own iteration default), and the fitted
      attributes (``metric_``, ``bias_``, ``components_`` from an eigendecomposition),
      :meth:`pair_score` (the logit ``b - d_M``), :meth:`predict_proba` and the callback
      ``(M, b, n_iter)`` are LDML's own. A preset that overrides all of that would be one
      in name only.

    So ``fit`` has the siamese learners' shape instead: validate, build the objective
    (:func:`metricfit.objective.make_metric_objective`, vector or index pairs), minimise
    (the solver mixin), unpack.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import LDML
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2, 5))
    >>> X[:20, 1] = X[:20, 0] + 0.1 * rng.normal(size=(20, 5))
    >>> y = np.r_[np.ones(20), -np.ones(20)]
    >>> LDML(constraint="psd").fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    - Guillaumin, Verbeek and Schmid, "Is that you? Metric Learning Approaches for Face
      Identification", ICCV 2009 (seed 001).
    """

    _parameter_constraints = {
        **SOLVER_CONSTRAINTS,
        "lam": [Interval(Real, 0, None)],
        "preprocessor": ["array-like", None],
        "constraint": [StrOptions(set(PROJECTIONS)), None],
        "init": [StrOptions({"identity", "zeros"}), "array-like"],
    }

    def __init__(self, lam=1e-3, *, constraint=None, init="identity", solver="lbfgs",
                 max_iter=None, tol=1e-5, learning_rate=1e-3, momentum=0.9, batch_size=32,
                 validation_fraction=0.1, validation_interval=100, n_iter_no_change=20,
                 random_state=None, verbose=0, warm_start=False, callback=None,
                 preprocessor=None):
        self.lam = lam
        self.constraint = constraint
        self.init = init
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

    def fit(self, pairs, y):
        """Learn M and b from labelled pairs, then calibrate ``threshold_`` on them.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2)
            Vector pairs, or integer index pairs into the points of ``preprocessor``.
        y : array-like of shape (n_pairs,), +1 similar, -1 dissimilar ({0, 1} accepted)

        Returns
        -------
        self
        """
        validate_params(self)
        xp = device_namespace(self, pairs, y)  # None: NumPy, the numba path
        if xp is not None:
            return fit_ldml_on_device(self, xp, pairs, y)
        pairs = check_pair_input(pairs, self.preprocessor)
        s = check_pair_labels(y, pairs.shape[0], require_both=True)
        d = self.n_features_in_ = pairs.shape[2]
        solver = "projected" if self.constraint else self.solver
        train, validation = self._split(s, solver)
        objective, rms = self._objective(pairs[train], s[train])
        theta0 = self._start(pairs[train], d) / objective.scale
        result = self._solve(solver, objective, theta0, pairs, s, validation, rms)
        self._warn_if_failed(result, solver)
        self._unpack(result.x * objective.scale, pairs.dtype)
        self.n_iter_ = int(result.nit)
        return self.calibrate_threshold(pairs_as_given(pairs), s)._adopt_coding(y)

    def _objective(self, pairs, s):
        """``(f, rms)``: the objective of the training pairs (vector or index pairs, chosen by
        :func:`metricfit.objective.make_metric_objective`), preconditioned: the solvers work
        on M' with ``M = S M' S``, ``S = diag(1 / rms(x - y))`` (same minimiser, same sets)."""
        rms = _difference_rms(pairs)
        scale = 1 / np.where(rms > 0, rms, 1)
        return ScaledObjective(make_metric_objective(pairs, s, self.lam),
                               np.append(np.outer(scale, scale).ravel(), 1.0)), rms

    def _solve(self, solver, objective, theta0, pairs, s, validation, rms):
        try:
            return self._minimize(solver, objective, theta0, pairs, s, validation)
        except ValueError as error:  # the solver stepped to non-finite (M, b)
            raise ValueError(f"LDML: the fit diverged on pairs whose differences have rms "
                             f"{rms.min():.3g} to {rms.max():.3g} per feature: rescale the pairs "
                             f"(e.g. to unit rms) and fit again ({error})") from None

    def _unpack(self, theta, dtype):
        """``metric_``, ``bias_`` and ``components_`` (L, ``L^T L`` = the PSD part of
        ``(M + M^T) / 2``) from ``theta = [M, b]``; warn if M has negative eigenvalues."""
        M, b = ldml_loss.unpack(theta, self.n_features_in_)
        self.metric_, self.bias_ = M.astype(dtype), float(b)
        w, V = np.linalg.eigh(0.5 * (M + M.T))
        self.components_ = (np.sqrt(np.clip(w, 0, None))[:, None] * V.T).astype(dtype)
        if w[0] < -NEGATIVE_EIGENVALUE_RTOL * max(np.abs(w).max(), np.finfo(float).tiny):
            warnings.warn(f"[LDML] metric_ has negative eigenvalues ({w[0]:.3g}; largest "
                          f"{w[-1]:.3g}): transform and components_ give its PSD part only "
                          "(pair_score uses metric_). Use constraint='psd' to embed it exactly.",
                          UserWarning, stacklevel=user_stacklevel())

    def _start(self, pairs, d, distances=metric_distances):
        """theta0 = [M0, b0]: the previous fit (warm start) or init with b0 = median d_M0
        (``distances(M0, pairs)``: on the host, or of device pairs)."""
        if self.warm_start and getattr(self, "metric_", np.empty(0)).shape == (d, d):
            return ldml_loss.pack(self.metric_.astype(np.float64), self.bias_)
        if isinstance(self.init, str):
            M0 = np.eye(d) if self.init == "identity" else np.zeros((d, d))
        else:
            M0 = np.asarray(self.init, dtype=np.float64)
            if M0.shape != (d, d) or not np.isfinite(M0).all():
                raise ValueError(f"init must have shape (n_features, n_features) = ({d}, {d}) "
                                 f"and finite values, got shape {M0.shape}.")
        if self.constraint:
            M0 = PROJECTIONS[self.constraint](M0)
        return ldml_loss.pack(M0, np.median(distances(M0, pairs)))

    def _minimize(self, solver, objective, theta0, pairs, s, validation):
        d = self.n_features_in_

        def public(theta):  # (M, b) in the caller's scale
            return ldml_loss.unpack(theta * objective.scale, d)

        def scorer(rows):
            held_out = pairs[rows]

            def scores(theta):
                M, b = public(theta)
                return b - metric_distances(M, held_out)
            return scores

        options = self._solver_options(public, scorer, s, None, validation, solver)
        if solver == "projected":
            def project(theta, project_M=PROJECTIONS[self.constraint]):  # M' only, not b
                return np.append(project_M(theta[:-1].reshape(d, d)).ravel(), theta[-1])

            return minimize_projected(objective, theta0, project, **options)
        return minimize(objective, theta0, solver=solver, **options)

    def pair_distance(self, pairs):
        """``d_M(x, y) = (x - y)^T M (x - y)`` with the learned M (eq. 1), shape (n_pairs,);
        vector pairs or index pairs into ``preprocessor``."""
        check_is_fitted(self)
        xp = device_namespace(self, pairs)
        if xp is not None:  # the input's namespace and device
            return ldml_distance_on_device(self, xp, pairs)
        pairs = self._check_pairs(pairs, reject_zero=False)  # checks fitted first
        with np.errstate(over="ignore", invalid="ignore"):  # reported by finite_scores
            return finite_scores(metric_distances(self.metric_, pairs), pairs)

    def pair_score(self, pairs):
        """``b - d_M(x, y)``, the logit of p (eq. 2): higher = more similar, shape (n_pairs,)."""
        return -self.pair_distance(pairs) + self.bias_  # checks fitted first

    def __metricfit_tags__(self):
        tags = super().__metricfit_tags__()
        tags.score_kind = "distance"  # b - d_M: minus a squared distance, plus a constant
        return tags

    def predict_proba(self, pairs):
        """``[[1 - p, p]]`` per pair, ``p = sigma(b - d_M)`` (eq. 2); columns follow ``classes_``
        ([-1, 1]). Returns an array of shape (n_pairs, 2)."""
        u = self.pair_score(pairs)
        if scores_namespace(u) is not None:  # array-API input: its namespace and device
            return logistic_columns(u)
        return np.column_stack([expit(-u), expit(u)])

    def transform(self, X):
        """``L x`` for points (n, d) -> (n, d) or pairs (n, 2, d) -> (n, 2, d), with
        ``components_`` L (``|L x - L y|^2 = d_M(x, y)`` for a PSD M)."""
        check_is_fitted(self)
        xp = device_namespace(self, X, names=("X", "y"), with_points=False)
        if xp is not None:  # the input's namespace and device
            return ldml_transform_on_device(self, xp, X)
        check = check_pairs if np.ndim(X) == 3 else check_points
        X = check(X, n_features=self.n_features_in_)
        return X @ self.components_.T.astype(X.dtype)


def _difference_rms(pairs):
    """Root mean square of ``x - y`` per feature (d,), over vector or index pairs."""
    total = 0.0
    for delta in pair_differences(pairs, dtype=np.float64):  # (m, d)
        total = total + np.einsum("ij,ij->j", delta, delta)
    return np.sqrt(total / len(pairs))
