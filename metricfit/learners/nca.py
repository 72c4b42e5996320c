"""NCA: Neighbourhood Components Analysis, linear or through a non-linear mapping (seed 003).

``fit`` takes labelled *points* (like :class:`metricfit.MkNN`) and reads like the method:
validate, start, minimise :func:`metricfit.losses.nca.objective` with L-BFGS, unpack, then
calibrate ``threshold_`` on training pairs. Pairs are scored through the shared pair API by
minus the squared distance of their embeddings.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin
from sklearn.decomposition import PCA
from sklearn.utils.validation import check_is_fitted

from .._validation import (
    Interval,
    PointOutputMixin,
    StrOptions,
    check_feature_names,
    validate_params,
)
from ..losses import nca
from ..mappings import make_mapping
from ..metrics import calibrate_threshold
from ..optim import minimize
from ..pairs import check_points, check_points_or_pairs
from ..pairs.checks import identity_codes, largest_magnitude, scale_exponent
from ._base import FittedMappingMixin, PairLearnerMixin, calibration_pairs, finite_scores
from ._solver import SolverMixin

NCA_MAPPINGS = ("linear", "mlp", "tanh")  # point mappings on feature vectors


def _identity_codes(y, n_samples):
    """Identity codes (n_samples,) int64 from labels of any values
    (:func:`metricfit.pairs.checks.identity_codes`, two identities at least); and one identity
    with two points (else NCA's objective is constant: no neighbour can share an identity)."""
    _, codes = identity_codes(y, "y", n_samples, min_identities=2)
    if np.bincount(codes).max() < 2:
        raise ValueError("NCA needs an identity with two points or more (every point of y "
                         "has its own identity: no neighbour can share it).")
    return codes.astype(np.int64)


def _check_scale(X):
    """ValueError naming X when its entries lie beyond ~1e+-77
    (:func:`metricfit.pairs.checks.scale_exponent`).

    NCA is not scale-invariant: its softmax compares squared distances of the start's
    embedding (identity, PCA or Glorot weights) with 1, so such data gives overflowing,
    underflowing or saturated distances and a fit that never leaves its start."""
    largest = largest_magnitude(X)
    if scale_exponent(largest):
        raise ValueError(f"X has entries up to {largest:.3g}: NCA's neighbour probabilities "
                         "exp(-|f(x_i) - f(x_j)|^2) over- or underflow at that scale. Rescale "
                         "X (e.g. StandardScaler) before fitting.")


class NCA(SolverMixin, PointOutputMixin, ClassNamePrefixFeaturesOutMixin, FittedMappingMixin,
          PairLearnerMixin, BaseEstimator):
    r"""Neighbourhood Components Analysis (Goldberger et al. 2004, seed 003): the mapping
    that maximises the expected number of points whose softmax-picked neighbour shares
    their identity.

    Point i picks j with :math:`p_{ij} = \exp(-\|f(x_i) - f(x_j)\|^2) / \sum_{l \ne i}
    \exp(-\|f(x_i) - f(x_l)\|^2)`; NCA minimises :math:`J = -\sum_i \sum_{j \in C_i}
    p_{ij}` (the gradient is derived in :mod:`metricfit.losses.nca`). ``mapping='linear'``
    is seed 003's linear NCA (``f(x) = A x``, scikit-learn's objective exactly);
    ``'mlp'`` (or ``'tanh'``) is the non-linear NCA of the slides (Salakhutdinov & Hinton
    2007, without the RBM pre-training). The cost and gradient work in blocks of rows:
    memory O(block_rows x n), never n x n.

    Pairs (also of identities never seen in training) are scored by
    ``-||f(x) - f(y)||^2`` (:meth:`pair_score`); ``predict`` compares with ``threshold_``.

    Parameters
    ----------
    n_components : int, default=None
        k, the embedding dimension (None: n_features). At most n_features for 'linear'.
    mapping : {'linear', 'mlp', 'tanh'}, default='linear'
        The map f (:mod:`metricfit.mappings`).
    n_hidden : int, default=None
        Hidden units of 'mlp' (None: n_components).
    init : {'auto', 'identity', 'pca'} or array, default='auto'
        Linear: 'auto' is 'pca' when k < d, else 'identity' (the first k rows of I);
        'pca' the top-k principal axes; an array of shape (k, d). Non-linear: 'auto' draws
        Glorot-uniform weights from ``random_state``; an array is a flat parameter vector.
    max_iter : int, default=50
        L-BFGS iterations (scikit-learn's default).
    tol : float, default=1e-5
        Gradient tolerance of L-BFGS-B.
    block_rows : int, default=None
        Rows per block of the cost and gradient (None: a ~32 MiB (b, n) buffer).
    random_state : None, int or RandomState, default=None
        Glorot start of a non-linear mapping, PCA's solver.
    verbose : int, default=0
        Print the cost at each iteration.
    callback : callable, default=None
        ``callback(params, n_iter)`` after each iteration (params: (k, d) matrix or flat
        vector).
    preprocessor : array-like of shape (n_points, n_features), default=None
        Points that the pair methods may take index pairs (n_pairs, 2) into.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        A (linear mapping only).
    params_ : ndarray of shape (n_params,)
        Flat parameters (non-linear mappings only).
    mapping_ : metricfit.mappings.Mapping
    objective_ : float
        J at the solution (minus the expected number of correctly picked neighbours).
    n_iter_ : int
    threshold_ : float
        On :meth:`pair_score`, calibrated for accuracy on 2000 similar and 2000
        dissimilar training pairs drawn with a fixed seed (with replacement).
    classes_ : ndarray, [-1, 1]
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import NCA
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat(np.arange(10), 5)
    >>> X = 3 * rng.normal(size=(10, 4))[y] + rng.normal(size=(50, 4))
    >>> est = NCA(n_components=2).fit(X, y)
    >>> est.transform(X).shape
    (50, 2)
    >>> pairs = np.stack([X[[0, 0]], X[[1, 10]]], axis=1)  # same identity, then not
    >>> est.predict(pairs)
    array([ 1, -1])

    References
    ----------
    - LeCun, "Learning Similarity Metrics", lecture slides (seed 003).
    """

    _pair_input = "points"
    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None), None],
        "mapping": [StrOptions(set(NCA_MAPPINGS))],
        "n_hidden": [Interval(Integral, 1, None), None],
        "init": [StrOptions({"auto", "identity", "pca"}), "array-like"],
        "max_iter": [Interval(Integral, 1, None)],
        "tol": [Interval(Real, 0, None)],
        "block_rows": [Interval(Integral, 1, None), None],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0, None), "boolean"],
        "callback": [callable, None],
        "preprocessor": ["array-like", None],
    }

    def __init__(self, n_components=None, *, mapping="linear", n_hidden=None, init="auto",
                 max_iter=50, tol=1e-5, block_rows=None, random_state=None, verbose=0,
                 callback=None, preprocessor=None):
        self.n_components = n_components
        self.mapping = mapping
        self.n_hidden = n_hidden
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.block_rows = block_rows
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback
        self.preprocessor = preprocessor

    def fit(self, X, y):
        """Learn the mapping from points with identity labels; calibrate ``threshold_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            float32 is kept (the cost and gradient are then computed in float32).
        y : array-like of shape (n_samples,)
            Identity labels (any values; two identities at least, one with two points).

        Returns
        -------
        self
        """
        validate_params(self)
        given, X = X, check_points(X)
        check_feature_names(self, given, reset=True)
        _check_scale(X)
        codes = _identity_codes(y, X.shape[0])
        self.n_features_in_ = X.shape[1]
        mapping = make_mapping(self.mapping, self.n_features_in_, self.n_components,
                               self.n_hidden)
        theta0 = self._initial_params(mapping, X)
        objective = nca.objective(mapping, X, codes, self.block_rows)
        result = minimize(objective, theta0, solver="lbfgs", max_iter=self.max_iter,
                          tol=self.tol, callback=self._on_iteration(mapping.as_attribute))
        self._warn_if_failed(result, solver="lbfgs")
        self._unpack(mapping, result.x.astype(X.dtype))
        self.objective_, self.n_iter_ = float(result.fun), int(result.nit)
        self.classes_ = np.array([-1, 1])
        self._calibrate(X, codes)
        return self

    def _calibrate(self, X, codes):
        """``threshold_`` on 2000 similar and 2000 dissimilar training pairs (a fixed seed),
        each point of the pairs embedded once (no (n_pairs, 2, d) copy of the points)."""
        pairs, s = calibration_pairs(codes, what="NCA")
        used, local = np.unique(pairs, return_inverse=True)
        local = local.reshape(pairs.shape)
        Z = self._map(X[used])  # (n_used, k)
        with np.errstate(over="ignore", invalid="ignore"):  # reported by finite_scores
            scores = self._score_embedded(Z[local[:, 0]], Z[local[:, 1]])
        self.threshold_ = float(calibrate_threshold(s, finite_scores(scores, X[used])))

    def _initial_params(self, mapping, X):
        init = self.init
        if not isinstance(init, str):
            return self._array_init(mapping).astype(X.dtype)
        if not mapping.is_matrix:
            if init != "auto":
                raise ValueError(f"init={init!r} needs mapping='linear'; use 'auto' or an array.")
            return mapping.init(self.random_state).astype(X.dtype)
        if init == "auto":
            init = "pca" if mapping.n_components < mapping.n_features else "identity"
        if init == "pca":
            pca = PCA(n_components=mapping.n_components, random_state=self.random_state)
            return pca.fit(X).components_.ravel().astype(X.dtype)
        return mapping.init().astype(X.dtype)

    def _array_init(self, mapping):
        theta = np.asarray(self.init, dtype=np.float64)
        expected = np.shape(mapping.as_attribute(np.zeros(mapping.n_params)))
        if theta.shape != expected:
            raise ValueError(f"init must have shape {expected} for mapping={self.mapping!r}, "
                             f"got {theta.shape}.")
        if not np.isfinite(theta).all():
            raise ValueError("init contains NaN or infinity.")
        return theta.ravel()

    def _check_pairs(self, pairs, reject_zero=False):
        """Zero vectors are fine: pairs are scored by a distance."""
        return super()._check_pairs(pairs, reject_zero=False)

    def transform(self, X):
        """Map points (n, d) -> (n, k) or pairs (n, 2, d) -> (n, 2, k).

        Points give a DataFrame with columns ``get_feature_names_out()`` ('nca0', ...) under
        ``set_output(transform='pandas' | 'polars')``; pairs stay an ndarray.
        """
        Z = self._embed(X)
        check_feature_names(self, X, reset=False)
        return self._wrap_output(Z, X)

    def _embed(self, X):
        check_is_fitted(self)
        return self._map(check_points_or_pairs(X, n_features=self.n_features_in_))

    @property
    def _n_features_out(self):
        """k, the embedding dimension: ``get_feature_names_out`` gives 'nca0', 'nca1', ..."""
        return self.mapping_.n_components

    def __metricfit_tags__(self):
        tags = super().__metricfit_tags__()
        tags.score_kind = "distance"  # minus the squared distance of the embeddings
        return tags
