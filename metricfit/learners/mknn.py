"""MkNN: the marginalised k-nearest-neighbour pair classifier (Guillaumin et al. 2009; seed 001,
section 3, eq. 5)."""

from numbers import Integral

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_is_fitted

from .._validation import Interval, validate_params
from ..metrics import calibrate_threshold
from ..pairs import check_pairs, check_points
from ..pairs.checks import SAFE_EXPONENT, check_identity_labels, largest_magnitude, scale_exponent
from ..pairs.tags import score_kind
from ._base import PairLearnerMixin, calibration_pairs

MAX_CALIBRATION_POINTS = 3000  # sample_pairs enumerates every i < j pair of its points


class MkNN(PairLearnerMixin, BaseEstimator):
    """Marginalised kNN: the probability that two points share an identity, from the labels
    of their k nearest neighbours among labelled training points (seed 001, section 3).

    With ``n_c^i`` the number of the k neighbours of ``x_i`` of identity c, each point gets
    the kNN class posterior ``p(c | x_i) = n_c^i / k``, and a pair is scored by the
    probability that both are assigned the same identity (eq. 5)::

        p(y_i = y_j | x_i, x_j) = sum_c p(c | x_i) p(c | x_j) = k^-2 sum_c n_c^i n_c^j

    equivalently, the share of positive pairs among the k x k pairs formed by one neighbour
    of each side. Unseen identities are fine: only the neighbours' labels are compared.

    ``fit`` takes labelled *points* (the unrestricted setting of seed 001). Neighbours are
    Euclidean in ``metric.transform(X)`` space; for a metric that scores by the cosine
    (``score_kind(metric) == 'cosine'``, e.g. TSML, CSML;
    :func:`metricfit.learners.score_kind`) the embeddings are L2-normalised first, so that
    the Euclidean ranking is the cosine ranking.

    Parameters
    ----------
    n_neighbors : int, default=10
        k, at most ``n_samples - 1`` (a training point is not its own neighbour when the
        threshold is calibrated).
    metric : fitted metricfit learner, Pipeline ending in one, or None, default=None
        The base metric defining the neighbours (None: Euclidean on the inputs); it declares
        its score kind (a TypeError otherwise). It must be fitted already and is used as
        given, never cloned or refitted (``metric_`` is the same object).
        :func:`sklearn.base.clone` clones an estimator parameter into an unfitted one: wrap
        it in :class:`sklearn.frozen.FrozenEstimator` for ``clone``, ``cross_val_score`` or
        ``GridSearchCV``.
    preprocessor : array-like of shape (n_points, n_features), default=None
        Points that :meth:`pair_score`, :meth:`predict` and :meth:`calibrate_threshold`
        may take pairs of as an (n_pairs, 2) integer array of row indices (``fit`` takes
        labelled points either way).

    Attributes
    ----------
    metric_ : estimator or None
        The base metric (the object passed as ``metric``).
    embedding_ : ndarray of shape (n_samples, k)
        The training points in the neighbour space (normalised for a cosine metric), times
        ``2**-scale_exponent_``.
    scale_exponent_ : int
        0, unless the training embeddings reach beyond ~1e+-77: then e with their largest
        absolute entry times ``2**-e`` in [0.5, 1), so that squared distances neither overflow
        nor underflow (an exact rescaling: the neighbours, hence the scores, are the same).
    neighbors_ : sklearn.neighbors.NearestNeighbors
        Fitted on ``embedding_``.
    identities_ : ndarray of shape (n_identities,)
        The distinct training labels; ``identity_codes_`` (n_samples,) indexes them.
    threshold_ : float
        Threshold on :meth:`pair_score`, calibrated for accuracy at fit on up to 2000
        similar and 2000 dissimilar pairs of training points (drawn with a fixed seed by
        :func:`metricfit.pairs.sample_pairs` among at most 3000 points), each scored
        *leave-one-out*: a training point does not count itself among its neighbours.
        :meth:`calibrate_threshold` recalibrates on other labelled pairs.
    classes_ : ndarray of shape (2,)
        [-1, 1] after ``fit`` (which sees identities, not pair labels); the coding of the
        pair labels last given to :meth:`calibrate_threshold` ({0, 1}, {False, True}) after it.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import MkNN
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat(np.arange(10), 5)
    >>> X = 10 * rng.normal(size=(10, 3))[y] + rng.normal(size=(50, 3))
    >>> est = MkNN(n_neighbors=4).fit(X, y)
    >>> pairs = np.stack([X[[0, 0]], X[[1, 10]]], axis=1)  # same identity, then not
    >>> est.predict_proba(pairs)[:, 1]
    array([0.75, 0.  ])
    >>> est.predict(pairs)
    array([ 1, -1])

    References
    ----------
    - Guillaumin, Verbeek and Schmid, "Is that you? Metric Learning Approaches for Face
      Identification", ICCV 2009 (seed 001).
    """

    _pair_input = "points"
    _parameter_constraints = {"n_neighbors": [Interval(Integral, 1, None)],
                              "preprocessor": ["array-like", None]}

    def __init__(self, n_neighbors=10, metric=None, preprocessor=None):
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.preprocessor = preprocessor

    def fit(self, X, y):
        """Index labelled training points and calibrate ``threshold_`` (leave-one-out).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Identity labels (any values; at least two identities, one of them with two
            samples or more).

        Returns
        -------
        self
        """
        validate_params(self)
        X = check_points(X)
        y = check_identity_labels(y, "y", n_samples=X.shape[0])
        if self.n_neighbors > X.shape[0] - 1:
            raise ValueError(f"n_neighbors={self.n_neighbors} must be <= n_samples - 1 = "
                             f"{X.shape[0] - 1}.")
        self.metric_ = self._check_metric()
        self.n_features_in_ = X.shape[1]
        self.identities_, self.identity_codes_ = np.unique(y, return_inverse=True)
        E = np.asarray(self.transform(X))
        self.scale_exponent_ = scale_exponent(largest_magnitude(E))
        self.embedding_ = self._neighbour_space(E)
        self.neighbors_ = NearestNeighbors(n_neighbors=self.n_neighbors).fit(self.embedding_)
        self.classes_ = np.array([-1, 1])
        index_pairs, s = calibration_pairs(self.identity_codes_, replace=False,
                                           max_points=MAX_CALIBRATION_POINTS, what="MkNN")
        self.threshold_ = float(calibrate_threshold(s, self._loo_pair_score(index_pairs)))
        return self

    def _check_metric(self):
        metric = self.metric
        if metric is None:
            return None
        if not (hasattr(metric, "transform") and hasattr(metric, "fit")):
            raise ValueError(f"metric must be None or a fitted metricfit learner with a "
                             f"transform method, got {metric!r}.")
        try:
            check_is_fitted(metric)
        except NotFittedError as exc:
            raise ValueError(f"metric {type(metric).__name__} is not fitted: MkNN uses the "
                             "metric as given (never fits it); fit it first.") from exc
        score_kind(metric)  # declared, or a TypeError now rather than at the first score
        return metric

    def _cosine_metric(self):
        """Whether the base metric scores by the cosine (its neighbours: unit embeddings)."""
        return self.metric_ is not None and score_kind(self.metric_) == "cosine"

    def _neighbour_space(self, E):
        """Embeddings as searched: rescaled by ``2**-scale_exponent_`` (exact; the ranking of
        neighbours is scale-invariant, and squared distances of embeddings beyond ~1e+-77
        would overflow or underflow), then L2-normalised rows for a cosine metric (zero rows
        kept)."""
        E = np.asarray(E)
        e = getattr(self, "scale_exponent_", 0)
        if e:
            E = np.ldexp(E, -e).astype(E.dtype, copy=False)
        if not self._cosine_metric():
            return E
        norms = np.linalg.norm(E, axis=-1, keepdims=True)
        return np.divide(E, norms, out=np.zeros_like(E), where=norms > 0)

    def _searched(self, E):
        """The neighbour space of query embeddings, or a ValueError when they lie so far
        beyond the training points' scale that their squared distances overflow."""
        E = self._neighbour_space(E)
        top = largest_magnitude(E)
        if top > 2.0 ** SAFE_EXPONENT:
            raise ValueError(
                f"pairs lie at up to {top:.3g} x the scale of the training points (their "
                f"embeddings, rescaled by 2**-{getattr(self, 'scale_exponent_', 0)}): their "
                "squared distances to them overflow. Rescale the pairs like the training "
                "points.")
        return E

    def _probability(self, idx_a, idx_b):
        """Eq. 5 from (n, k) neighbour indices of each side: row-wise dot of the two sparse
        (n, n_identities) neighbour-label count matrices, over k^2."""
        n, k = idx_a.shape
        rows, ones = np.repeat(np.arange(n), k), np.ones(n * k)
        shape = (n, self.identities_.size)
        counts = [sparse.coo_array((ones, (rows, self.identity_codes_[idx].ravel())),
                                   shape=shape).tocsr() for idx in (idx_a, idx_b)]
        return np.asarray(counts[0].multiply(counts[1]).sum(axis=1)).ravel() / k ** 2

    def _loo_pair_score(self, index_pairs):
        """Eq. 5 for pairs of *training* points (indices, (n, 2)), each point's neighbours
        taken among the other training points (leave-one-out)."""
        points = np.unique(index_pairs)
        k = self.n_neighbors
        idx = self.neighbors_.kneighbors(self.embedding_[points], n_neighbors=k + 1,
                                         return_distance=False)  # (m, k + 1)
        drop = idx == points[:, None]
        drop[~drop.any(axis=1), -1] = True  # self not listed (tied duplicates): drop the last
        loo = idx[~drop].reshape(points.size, k)
        where = np.searchsorted(points, index_pairs)
        return self._probability(loo[where[:, 0]], loo[where[:, 1]])

    def _check_pairs(self, pairs, reject_zero=True):
        check_is_fitted(self)
        return super()._check_pairs(pairs, reject_zero=reject_zero and self._cosine_metric())

    def _score_embedded(self, a, b):
        """Eq. 5 for embedded points a, b (n, k): neighbours of each among the training set."""
        idx_a, idx_b = (self.neighbors_.kneighbors(self._searched(e),
                                                   return_distance=False) for e in (a, b))
        return self._probability(idx_a, idx_b)

    def pair_score(self, pairs):
        """p of eq. 5 for each pair, in [0, 1] (multiples of 1 / k^2; higher = more similar).

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2)
            Vector pairs, or integer index pairs into ``preprocessor``.

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
        """
        return super().pair_score(pairs)

    def __metricfit_tags__(self):
        tags = super().__metricfit_tags__()
        tags.score_kind = "probability"
        return tags

    def predict_proba(self, pairs):
        """``[[1 - p, p]]`` per pair with p of eq. 5 (:meth:`pair_score`); columns follow
        ``classes_``. Returns an array of shape (n_pairs, 2)."""
        p = self.pair_score(pairs)
        return np.column_stack([1 - p, p])

    def transform(self, X):
        """The base metric's transform of points (n, d) or pairs (n, 2, d) (identity when
        ``metric`` is None); the neighbour space before any normalisation."""
        check_is_fitted(self, "identity_codes_")
        if np.ndim(X) == 3:
            X = check_pairs(X, n_features=self.n_features_in_)
            return self.transform(X.reshape(-1, X.shape[2])).reshape(X.shape[0], 2, -1)
        X = check_points(X, n_features=self.n_features_in_)
        return X if self.metric_ is None else np.asarray(self.metric_.transform(X))
