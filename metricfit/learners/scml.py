"""SCML: Sparse Compositional Metric Learning (Shi, Bellet and Sha, AAAI 2014), on triplets and
on labelled points; the regularised dual averaging kernel is in :mod:`metricfit.losses.scml`.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.cluster import KMeans
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state

from .._validation import Interval, StrOptions, user_stacklevel, validate_params
from ..losses import scml as scml_kernels
from ..pairs.checks import identity_codes
from ..pairs.tuples import IndexTuples, check_tuples, tuple_vectors
from ._base import PairLearnerMixin
from ._mahalanobis import MahalanobisMixin, TripletsMixin, components_from_metric, learned_dtype
from .itml import check_scale

PROJECTION_BUDGET = 256 * 2 ** 20  # bytes of float64 projections X B^T kept as float64


def projections(X, basis, block=4096):
    """``X B^T`` (n_points, K): float64, or float32 filled a block of rows at a time when
    float64 would pass :data:`PROJECTION_BUDGET` (20,000 points x 8,000 bases: 0.64 GB
    instead of 1.28 GB; the kernel sums in float64)."""
    if X.shape[0] * basis.shape[0] * 8 <= PROJECTION_BUDGET:
        return X @ basis.T
    P = np.empty((X.shape[0], basis.shape[0]), dtype=np.float32)
    for start in range(0, X.shape[0], block):
        P[start:start + block] = X[start:start + block] @ basis.T
    return P


class _SCMLBase(BaseEstimator):
    _parameter_constraints = {
        "beta": [Interval(Real, 0, None)],
        "n_basis": [Interval(Integral, 1, None), None],
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None)],
        "output_iter": [Interval(Integral, 1, None)],
        "batch_size": [Interval(Integral, 1, None)],
        "verbose": ["boolean", Interval(Integral, 0, None)],
        "random_state": ["random_state"],
    }

    def _fit_triplets(self, X, triplets, basis, rng, dtype):
        """Dual averaging over the triplets (rows of X (n, d)) on the bases (K, d)."""
        who = type(self).__name__
        if self.output_iter > self.max_iter:
            raise ValueError(f"output_iter={self.output_iter} must be <= max_iter="
                             f"{self.max_iter}.")
        P = projections(X, basis)
        batches = rng.randint(0, triplets.shape[0], size=(self.max_iter, self.batch_size))
        w, best = scml_kernels.dual_averaging(P, triplets, batches, self.beta, self.gamma,
                                              self.output_iter)
        if self.verbose:
            print(f"[{who}] best objective {best:.6f}, {int(np.sum(w > 0))} active bases")
        self.n_iter_ = self.max_iter
        active = w > 0
        d = X.shape[1]
        if not active.any():
            warnings.warn(f"[{who}] no basis got a positive weight: the metric is zero. Lower "
                          "beta or give more triplets.", UserWarning, stacklevel=user_stacklevel())
            self.components_ = np.zeros((1, d), dtype=dtype)
        elif active.sum() < d:  # a low-rank metric: L = diag(sqrt(w)) B on the active bases
            self.components_ = (np.sqrt(w[active])[:, None] * basis[active]).astype(dtype)
        else:
            B = basis[active]
            self.components_ = components_from_metric((B.T * w[active]) @ B, dtype,
                                                      what="SCML's metric")
        return self

    def _bases_given(self, d):
        basis = np.asarray(self.basis, dtype=np.float64)
        if basis.ndim != 2 or basis.shape[1] != d or not np.isfinite(basis).all():
            raise ValueError(f"basis must be an array of shape (n_basis, n_features={d}) of "
                             f"finite values, got shape {basis.shape}.")
        return basis


class SCML(MahalanobisMixin, TripletsMixin, TransformerMixin, _SCMLBase):
    """Sparse Compositional Metric Learning on triplets (Shi, Bellet and Sha 2014).

    ``M = sum_k w_k b_k b_k^T`` over rank-one bases b_k with sparse non-negative weights,
    learned by regularised dual averaging on the triplets' hinge with an L1 penalty
    (:mod:`metricfit.losses.scml`). A triplet (a, p, n) asks ``d(a, p) < d(a, n)``.

    Parameters
    ----------
    beta : float, default=1e-5
        The L1 weight.
    basis : 'triplet_diffs' or array of shape (n_basis, d), default='triplet_diffs'
        The bases: eigenvectors of positive eigenvalue of sums of triplet difference outer
        products, or given rows.
    n_basis : int or None, default=None
        None: ``80 * n_features`` (metric-learn's).
    gamma : float, default=5e-3
        The dual averaging's step scale.
    max_iter : int, default=10000
    output_iter : int, default=500
        Iterations between evaluations of the full objective (the best w is kept).
    batch_size : int, default=10
    verbose : bool, default=False
    preprocessor : array-like of shape (n_points, d), default=None
        The points of index triplets (n, 3).
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    components_ : ndarray of shape (k, d)
        k < d when fewer than d bases are active (a low-rank metric).
    n_iter_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import SCML
    >>> rng = np.random.default_rng(0)
    >>> T = rng.normal(size=(200, 3, 4))
    >>> T[:, 1] = T[:, 0] + 0.2 * rng.normal(size=(200, 4))
    >>> SCML(n_basis=40, max_iter=2000, random_state=0).fit(T).score(T) > 0.9
    True

    References
    ----------
    - Shi, Bellet and Sha, "Sparse Compositional Metric Learning", AAAI 2014.
    """

    _parameter_constraints = {**_SCMLBase._parameter_constraints,
                              "basis": [StrOptions({"triplet_diffs"}), "array-like"],
                              "preprocessor": ["array-like", callable, None]}

    def __init__(self, beta=1e-5, basis="triplet_diffs", n_basis=None, gamma=5e-3,
                 max_iter=10000, output_iter=500, batch_size=10, verbose=False,
                 preprocessor=None, random_state=None):
        self.beta = beta
        self.basis = basis
        self.n_basis = n_basis
        self.gamma = gamma
        self.max_iter = max_iter
        self.output_iter = output_iter
        self.batch_size = batch_size
        self.verbose = verbose
        self.preprocessor = preprocessor
        self.random_state = random_state

    def fit(self, triplets, y=None):
        """Learn M from triplets (a, p, n) meaning ``d(a, p) < d(a, n)``.

        Parameters
        ----------
        triplets : array-like of shape (n, 3, n_features) or (n, 3)
            Vector triplets, or index triplets into ``preprocessor``.
        y : None
            Triplets carry no labels (scikit-learn's signature): labels are a ValueError.

        Returns
        -------
        self
        """
        validate_params(self)
        triplets = check_tuples(triplets, 3, self.preprocessor, y=y)
        d = self.n_features_in_ = triplets.shape[2]
        if isinstance(triplets, IndexTuples):
            X = np.asarray(triplets.points, dtype=np.float64)
            index = np.asarray(triplets.index, dtype=np.int64)
        else:
            flat = tuple_vectors(triplets, dtype=np.float64).reshape(-1, d)
            X, inverse = np.unique(flat, axis=0, return_inverse=True)
            index = inverse.reshape(-1, 3).astype(np.int64)
        check_scale(float(np.abs(X).max()), type(self).__name__)
        rng = check_random_state(self.random_state)
        if isinstance(self.basis, str):
            basis = scml_kernels.triplet_diff_bases(X, index, self.n_basis or 80 * d, rng)
        else:
            basis = self._bases_given(d)
        return self._fit_triplets(X, index, basis, rng, learned_dtype(triplets.dtype))


def knn_triplets(X, codes, k_genuine, k_impostor):
    """Triplets (i, g, m) for each point i, each of its ``k_genuine`` nearest same-class
    neighbours g and each of its ``k_impostor`` nearest other-class points m (metric-learn's
    ``generate_knntriplets``); (n * k_genuine * k_impostor, 3) int64. Neighbour searches by
    scikit-learn (blocked, never n x n)."""
    rows = []
    for c in np.unique(codes):
        inside, outside = np.flatnonzero(codes == c), np.flatnonzero(codes != c)
        kg, ki = min(k_genuine, inside.size - 1), min(k_impostor, outside.size)
        if kg < 1 or ki < 1:
            continue
        genuine = NearestNeighbors(n_neighbors=kg + 1).fit(X[inside]).kneighbors(
            X[inside], return_distance=False)
        genuine = inside[genuine[:, 1:]]  # drop each point itself
        impostor = outside[NearestNeighbors(n_neighbors=ki).fit(X[outside]).kneighbors(
            X[inside], return_distance=False)]
        a = np.repeat(inside, kg * ki)
        g = np.repeat(genuine, ki, axis=1).ravel()
        m = np.tile(impostor, (1, kg)).ravel()
        rows.append(np.column_stack([a, g, m]))
    if not rows:
        raise ValueError("y: SCML_Supervised needs a class with two points or more and "
                         "another class, to form triplets.")
    return np.concatenate(rows).astype(np.int64)


def lda_scalings(X, y, tol=1e-4):
    """scikit-learn's ``LinearDiscriminantAnalysis(solver='svd').scalings_`` of (X, y), the
    same two SVDs without the estimator's overhead (SCML's 'lda' bases fit hundreds of local
    LDAs): whiten by the within-class scatter, then the directions of the class means."""
    classes, y = np.unique(y, return_inverse=True)
    n, k = X.shape[0], classes.size
    counts = np.bincount(y)
    means = np.zeros((k, X.shape[1]))
    np.add.at(means, y, X)
    means /= counts[:, None]
    centred = X - means[y]
    std = centred.std(axis=0)
    std[std == 0] = 1.0
    _, S, Vt = np.linalg.svd(np.sqrt(1.0 / n) * (centred / std), full_matrices=False)
    rank = int(np.sum(S > tol))
    scalings = (Vt[:rank] / std).T / S[:rank]
    xbar = (counts / n) @ means
    fac = 1.0 if k == 1 else 1.0 / (k - 1)
    between = (np.sqrt(n * (counts / n) * fac) * (means - xbar).T).T @ scalings
    _, S, Vt = np.linalg.svd(between, full_matrices=False)
    rank = int(np.sum(S > tol * S[0])) if S.size else 0
    return scalings @ Vt.T[:, :rank]


def lda_bases(X, codes, n_basis, rng, n_init=1):
    """metric-learn's 'lda' bases: LDA directions of the neighbourhoods of k-means centres,
    at two scales (10 and 20 neighbours per class; 20 and 50 above 50 features), normalised
    to unit rows; ``n_basis`` rows (K, d). The centres only place the neighbourhoods: one
    k-means++ start (metric-learn runs 10, which took most of its fit time on breast
    cancer's 300 centres)."""
    n_class = int(codes.max()) + 1
    counts = np.bincount(codes)
    num_eig = min(n_class - 1, X.shape[1])
    n_clusters = int(np.ceil(n_basis / (2 * num_eig)))
    if n_basis >= X.shape[0] * 2 * num_eig:
        raise ValueError(f"n_basis={n_basis} is too large for 'lda' bases of {X.shape[0]} points"
                         f": at most {X.shape[0] * 2 * num_eig - 1}.")
    centres = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=rng.randint(2 ** 31 - 1),
                     algorithm="elkan").fit(X).cluster_centers_
    scales = (20, 50) if X.shape[1] > 50 else (10, 20)
    neighbours = [[] for _ in scales]
    for c in range(n_class):
        members = np.flatnonzero(codes == c)
        k_max = min(counts[c], scales[1])
        near = members[NearestNeighbors(n_neighbors=k_max).fit(X[members]).kneighbors(
            centres, return_distance=False)]
        for s, k in enumerate(scales):
            neighbours[s].append(near[:, :min(counts[c], k)])
    rows = []
    for s in range(len(scales)):
        index = np.concatenate(neighbours[s], axis=1)  # (n_clusters, m)
        for c in range(n_clusters):
            scalings = lda_scalings(X[index[c]], codes[index[c]]).T[:num_eig]
            norms = np.linalg.norm(scalings, axis=1, keepdims=True)
            rows.append(scalings / np.where(norms > 0, norms, 1))
    return np.concatenate(rows)[:n_basis]


class SCML_Supervised(MahalanobisMixin, PairLearnerMixin, _SCMLBase):  # noqa: N801
    """SCML from class labels: triplets from each point's ``k_genuine`` nearest same-class
    neighbours and ``k_impostor`` nearest other-class points, bases from local LDA
    (``basis='lda'``), then :class:`SCML`'s dual averaging; pairs scored by the pair API.

    Parameters
    ----------
    k_genuine : int, default=3
    k_impostor : int, default=10
    beta, gamma, max_iter, output_iter, batch_size, verbose : as :class:`SCML`
    basis : {'lda', 'triplet_diffs'} or array of shape (n_basis, d), default='lda'
    n_basis : int or None, default=None
        None: ``min(20 d, 2 n (n_classes - 1) - 1)`` for 'lda' (metric-learn's), ``80 d``
        for 'triplet_diffs'.
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    components_, n_iter_, n_features_in_ : as :class:`SCML`
    threshold_ : float
        Calibrated on 2000 similar and 2000 dissimilar training pairs (a fixed seed).
    classes_ : ndarray ``[-1, 1]``

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from metricfit import SCML_Supervised
    >>> X, y = load_iris(return_X_y=True)
    >>> SCML_Supervised(max_iter=1000, random_state=0).fit(X, y).transform(X).shape[0]
    150
    """

    _pair_input = "points"
    _parameter_constraints = {**_SCMLBase._parameter_constraints,
                              "k_genuine": [Interval(Integral, 1, None)],
                              "k_impostor": [Interval(Integral, 1, None)],
                              "basis": [StrOptions({"lda", "triplet_diffs"}), "array-like"]}

    def __init__(self, k_genuine=3, k_impostor=10, beta=1e-5, basis="lda", n_basis=None,
                 gamma=5e-3, max_iter=10000, output_iter=500, batch_size=10, verbose=False,
                 random_state=None):
        self.k_genuine = k_genuine
        self.k_impostor = k_impostor
        self.beta = beta
        self.basis = basis
        self.n_basis = n_basis
        self.gamma = gamma
        self.max_iter = max_iter
        self.output_iter = output_iter
        self.batch_size = batch_size
        self.verbose = verbose
        self.random_state = random_state

    def fit(self, X, y):
        """Form kNN triplets and bases from (X, y), learn M, calibrate ``threshold_``.

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
        _, codes = identity_codes(y, "y", X.shape[0], min_identities=2)
        X64 = np.asarray(X, dtype=np.float64)
        check_scale(float(np.abs(X64).max()), type(self).__name__)
        rng = check_random_state(self.random_state)
        d = X.shape[1]
        triplets = knn_triplets(X64, codes, self.k_genuine, self.k_impostor)
        if isinstance(self.basis, str) and self.basis == "lda":
            num_eig = min(int(codes.max()), d)
            n_basis = self.n_basis or min(20 * d, X.shape[0] * 2 * num_eig - 1)
            basis = lda_bases(X64, codes, n_basis, rng)
        elif isinstance(self.basis, str):
            basis = scml_kernels.triplet_diff_bases(X64, triplets, self.n_basis or 80 * d, rng)
        else:
            basis = self._bases_given(d)
        self._fit_triplets(X64, triplets, basis, rng, learned_dtype(X.dtype))
        return self._calibrate_on_labels(X, codes)
