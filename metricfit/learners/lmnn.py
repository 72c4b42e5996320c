"""LMNN: Large Margin Nearest Neighbor metric learning (Weinberger and Saul 2009).

``fit`` reads like the method: validate, pick k target neighbours per point (same class,
nearest in the input space), start L, minimise :func:`metricfit.losses.lmnn.cost_grad` (pull
plus the impostor hinge, its active-set gradient derived there) with L-BFGS on L, then
calibrate ``threshold_`` on training pairs. The impostor search is a blocked scan of (b, n)
Gram blocks at every evaluation: memory O(b n + n k), never n x n.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn import config_context
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import NearestNeighbors

from .._validation import Interval, StrOptions, user_stacklevel, validate_params
from ..losses import lmnn as lmnn_loss
from ..optim import minimize
from ..pairs.checks import identity_codes
from ._base import PairLearnerMixin
from ._mahalanobis import INIT_OPTIONS, MahalanobisMixin, initial_components
from ._solver import SolverMixin

STALL_WINDOW = 10  # iterations over which J must fall by convergence_tol (relative)
NEIGHBOUR_MEMORY_MB = 32  # scikit-learn's working memory for the target-neighbour search


def target_neighbors(X, codes, n_neighbors):
    """The ``n_neighbors`` nearest points of the same class of each point (n, k), Euclidean in
    the input space; -1 where a class has fewer than k + 1 points (its points get n_c - 1).

    scikit-learn's brute search runs in chunks of ``NEIGHBOUR_MEMORY_MB``: never n x n."""
    targets = -np.ones((X.shape[0], n_neighbors), dtype=np.int64)
    for c in np.unique(codes):
        members = np.flatnonzero(codes == c)
        k = min(n_neighbors, members.size - 1)
        if k < 1:
            continue
        with config_context(working_memory=NEIGHBOUR_MEMORY_MB):
            nn = NearestNeighbors(n_neighbors=k).fit(X[members])
            neighbors = nn.kneighbors(return_distance=False)  # the point itself excluded
        targets[members, :k] = members[neighbors]
    return targets


class LMNN(SolverMixin, MahalanobisMixin, PairLearnerMixin, BaseEstimator):
    r"""Large Margin Nearest Neighbor (Weinberger and Saul 2009): a linear map L that pulls
    each point's k target neighbours (same class) close and pushes every point of another
    class ("impostor") out of a unit margin beyond them:

    .. math::

        J(L) = \frac{1}{n}\Big[\mu \sum_{i, j \in T_i} d_{ij} + (1 - \mu) \sum_{i, j \in T_i}
            \sum_{l: y_l \ne y_i} [1 + d_{ij} - d_{il}]_+\Big], \quad
            d_{ij} = \|L (x_i - x_j)\|^2

    (:mod:`metricfit.losses.lmnn`: the paper's eq. 14 on L, with its active-set gradient),
    minimised with L-BFGS on L. Pairs are scored by minus the squared learned distance.

    Parameters
    ----------
    n_neighbors : int, default=3
        k, the target neighbours per point (metric-learn's ``n_neighbors``). A class of
        ``n_c <= k`` points gives its points ``n_c - 1``.
    regularization : float in [0, 1], default=0.5
        mu, the weight of the pull term; ``1 - mu`` weighs the push (hinge) term
        (metric-learn's ``regularization``).
    n_components : int, default=None
        Rows of L (None: n_features).
    init : {'auto', 'identity', 'pca', 'lda', 'random'} or array, default='auto'
        L0 (metric-learn's choices; 'auto': LDA, PCA or identity by its rule,
        :func:`metricfit.learners._mahalanobis.initial_components`).
    max_iter : int, default=1000
        L-BFGS iterations (metric-learn's ``max_iter``).
    tol : float, default=1e-5
        L-BFGS's gradient tolerance (J is a mean over points).
    convergence_tol : float, default=1e-3
        Stop once J fell by less than this share over the last 10 iterations
        (metric-learn's ``convergence_tol`` is per gradient step); 0 never stops early.
    block_rows : int, default=None
        Anchors per block of the impostor scan (None: a ~32 MiB (b, n) buffer).
    random_state : None, int or RandomState, default=None
        For init='random' and PCA's solver.
    verbose : int, default=0
        Print the cost at each iteration.
    callback : callable, default=None
        ``callback(L, n_iter)`` after each iteration.
    preprocessor : array-like of shape (n_points, n_features), default=None
        Points that the pair methods may take index pairs (n_pairs, 2) into.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        L, in the training data's dtype (float32 kept).
    objective_ : float
    n_iter_ : int
    n_active_ : int
        Active impostor triples (i, j, l) at the solution.
    threshold_ : float
        On :meth:`pair_score`, calibrated for accuracy on 2000 similar and 2000 dissimilar
        training pairs (fixed seed).
    classes_ : ndarray, [-1, 1]
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.learners import LMNN
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1, 2], 20)
    >>> X = np.c_[y + 0.3 * rng.normal(size=60), 5 * rng.normal(size=60)]  # noise axis
    >>> est = LMNN().fit(X, y)
    >>> M = est.get_mahalanobis_matrix()
    >>> bool(M[0, 0] > 10 * M[1, 1])  # the class axis weighs more than the noise axis
    True

    References
    ----------
    - K. Q. Weinberger and L. K. Saul, "Distance Metric Learning for Large Margin Nearest
      Neighbor Classification", JMLR 10 (2009) 207-244.
    """

    _pair_input = "points"
    _parameter_constraints = {
        "n_neighbors": [Interval(Integral, 1, None)],
        "regularization": [Interval(Real, 0, 1)],
        "n_components": [Interval(Integral, 1, None), None],
        "init": [StrOptions(INIT_OPTIONS), "array-like"],
        "max_iter": [Interval(Integral, 1, None)],
        "tol": [Interval(Real, 0, None)],
        "convergence_tol": [Interval(Real, 0, None)],
        "block_rows": [Interval(Integral, 1, None), None],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0, None), "boolean"],
        "callback": [callable, None],
        "preprocessor": ["array-like", None],
    }

    def __init__(self, n_neighbors=3, *, regularization=0.5, n_components=None, init="auto",
                 max_iter=1000, tol=1e-5, convergence_tol=1e-3, block_rows=None,
                 random_state=None, verbose=0, callback=None, preprocessor=None):
        self.n_neighbors = n_neighbors
        self.regularization = regularization
        self.n_components = n_components
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.convergence_tol = convergence_tol
        self.block_rows = block_rows
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback
        self.preprocessor = preprocessor

    def fit(self, X, y):
        """Learn L from points with class labels; calibrate ``threshold_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            float32 is kept (the cost and gradient are then computed in float32).
        y : array-like of shape (n_samples,)
            Class labels (two classes at least, one with two points).

        Returns
        -------
        self
        """
        validate_params(self)
        X = self._check_fit_points(X)
        _, codes = identity_codes(y, "y", X.shape[0], min_identities=2)
        codes = codes.astype(np.int64)
        if np.bincount(codes).max() < 2:
            raise ValueError("y: LMNN needs a class with two points or more (target "
                             "neighbours share a class).")
        d = X.shape[1]
        k = d if self.n_components is None else self.n_components
        if k > d:
            raise ValueError(f"n_components={k} must be at most n_features={d}.")
        targets = target_neighbors(X, codes, self.n_neighbors)
        L0 = initial_components(self.init, X, k, codes, self.random_state)
        f = lmnn_loss.objective(X, codes, targets, k, self.regularization, self.block_rows)
        result = minimize(f, L0, solver="lbfgs", max_iter=self.max_iter, tol=self.tol,
                          callback=self._stopping(self._on_iteration(
                              lambda t: t.reshape(k, d))))
        self.converged_ = result.status != 1
        if result.nit >= self.max_iter:
            warnings.warn(f"[LMNN] L-BFGS stopped at max_iter={self.max_iter}: {result.message}."
                          " Increase max_iter.", ConvergenceWarning, stacklevel=user_stacklevel())
        self.components_ = result.x.reshape(k, d).astype(X.dtype)
        self.objective_, self.n_iter_ = float(result.fun), int(result.nit)
        self.n_active_ = lmnn_loss.cost_grad_embedded(
            X @ self.components_.T, codes, targets, self.regularization, self.block_rows)[2]
        return self._calibrate_on_labels(X, codes)

    def _stopping(self, report):
        """The solver's callback: ``report`` (verbose, callback), then a ``StopIteration``
        once J fell by less than ``convergence_tol`` (relative) over ``STALL_WINDOW``
        iterations: the hinge's kinks make L-BFGS crawl long after the 3-NN geometry
        settled (metric-learn stops on the same relative change, per gradient step)."""
        history = []

        def callback(theta, J, n_iter):
            if report is not None:
                report(theta, J, n_iter)
            history.append(float(J))
            if len(history) > STALL_WINDOW:
                before = history[-1 - STALL_WINDOW]
                if before - history[-1] <= self.convergence_tol * max(abs(history[-1]), 1e-12):
                    raise StopIteration

        return callback
