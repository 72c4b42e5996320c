r"""The shared base of Mahalanobis learners (LMNN, ITML, MMC, SDML, LSML, SCML, RCA, LFDA,
MLKR, Covariance): a learned linear map L, ``components_`` (k, d), and its metric
:math:`M = L^T L`, so that

.. math:: d_M(x, y)^2 = (x - y)^T M (x - y) = \|L x - L y\|^2 .

:class:`MahalanobisMixin` gives what metric-learn's users call (``components_``,
:meth:`~MahalanobisMixin.transform`, :meth:`~MahalanobisMixin.get_mahalanobis_matrix`,
:meth:`~MahalanobisMixin.get_metric`, :meth:`~MahalanobisMixin.pair_distance`) on top of
metricfit's pair API (:class:`~metricfit.learners._base.PairLearnerMixin`): ``pair_score``
is minus the *squared* distance (the declared score kind 'distance', which the back-end and
the applications' fast paths rely on), ``threshold_`` and ``predict`` on pairs.
``pair_distance`` answers the distance itself, as metric-learn does (``squared=True``: its
square, as LDML and DDML answer).

:class:`TripletsMixin` and :class:`QuadrupletsMixin` are metric-learn's prediction semantics
on tuples (:mod:`metricfit.pairs.tuples`): on a triplet (a, p, n) ``decision_function =
d(a, n) - d(a, p)``, ``predict`` +1 where it is > 0 ("a is closer to p than to n"), else -1
(metric-learn gives 0 on a tie), ``score`` the share predicted +1 (the accuracy, every tuple
being ordered as wanted); on a quadruplet (a, b, c, d) ``d(c, d) - d(a, b)``.

:func:`components_from_metric` turns a learned PSD M into L; :func:`learned_dtype` is the
float rule (float32 data gives float32 ``components_``, anything else float64).

A learner composes, most specific first::

    class LMNN(MahalanobisMixin, PairLearnerMixin, BaseEstimator)            # labelled points
    class LSML(MahalanobisMixin, QuadrupletsMixin, TransformerMixin, BaseEstimator)
"""

import warnings

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._validation import check_feature_names, user_stacklevel
from ..metrics import calibrate_threshold
from ..pairs import check_points
from ..pairs.checks import check_pairs, float_dtype, identity_codes
from ..pairs.index import check_pair_input, embed_points, score_pairs
from ..pairs.tags import PairTags
from ..pairs.tuples import TUPLE_CHUNK, IndexTuples, check_tuples, tuple_vectors
from ._base import calibration_pairs, finite_scores

__all__ = ["MahalanobisMixin", "TripletsMixin", "QuadrupletsMixin", "components_from_metric",
           "learned_dtype", "initial_components", "NEGATIVE_EIGENVALUE_RTOL", "INIT_OPTIONS"]

NEGATIVE_EIGENVALUE_RTOL = 1e-6  # an eigenvalue below -rtol * max|eigenvalue| is "negative"


def learned_dtype(X):
    """The dtype of a learned map for data X: float32 for float32 data, else float64
    (:func:`metricfit.pairs.checks.float_dtype`)."""
    return float_dtype(X)


def components_from_metric(M, dtype=np.float64, n_components=None, *, strict=True,
                           what="the learned metric"):
    """L with ``L^T L = M`` for a symmetric PSD M (d, d): rows ``sqrt(w_i) v_i^T`` of the
    eigendecomposition ``M = V diag(w) V^T``, largest eigenvalue first.

    Tiny negative eigenvalues (round-off, above ``-NEGATIVE_EIGENVALUE_RTOL * max|w|``) are
    clipped to 0. Larger ones are a ValueError when ``strict`` (M should be PSD by the
    method's construction), else clipped with a ``UserWarning`` (L then gives M's PSD part).

    Parameters
    ----------
    M : array-like of shape (d, d)
        Symmetrised as ``(M + M^T) / 2`` first.
    dtype : dtype, default=np.float64
    n_components : int, default=None
        Keep the top-k rows (the k largest eigenvalues): a rank-k metric. None: all d.
    strict : bool, default=True
    what : str
        The metric's name in messages.

    Returns
    -------
    L : ndarray of shape (n_components, d), dtype

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.learners._mahalanobis import components_from_metric
    >>> M = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> L = components_from_metric(M)
    >>> bool(np.allclose(L.T @ L, M)), L.shape
    (True, (2, 2))
    """
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{what} must be a square (d, d) matrix, got shape {M.shape}.")
    if not np.isfinite(M).all():
        raise ValueError(f"{what} contains NaN or infinity: the fit diverged; rescale the data.")
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    w, V = w[::-1], V[:, ::-1]  # largest first
    scale = max(float(np.abs(w).max()), np.finfo(np.float64).tiny)
    if w[-1] < -NEGATIVE_EIGENVALUE_RTOL * scale:
        message = (f"{what} has negative eigenvalues (smallest {w[-1]:.3g}, largest {w[0]:.3g}): "
                   "it is not positive semi-definite")
        if strict:
            raise ValueError(message + ".")
        warnings.warn(message + "; components_ give its PSD part only.", UserWarning,
                      stacklevel=user_stacklevel())
    k = M.shape[0] if n_components is None else int(n_components)
    return (np.sqrt(np.clip(w[:k], 0, None))[:, None] * V[:, :k].T).astype(dtype)


# The starting map of the learners that optimise L (LMNN, MLKR): metric-learn's init choices.
INIT_OPTIONS = {"auto", "identity", "pca", "lda", "random"}


def initial_components(init, X, n_components, y=None, random_state=None):
    """L0 of shape (n_components, n_features) in X's dtype.

    'auto' is metric-learn's rule: 'lda' when labels are given and ``n_components <=
    min(n_features, n_classes - 1)``, else 'pca' when ``n_components < min(n_features,
    n_samples)``, else 'identity' (the first n_components rows of I). 'random': standard
    normal entries. An array must have shape (n_components, n_features), finite values.
    """
    n, d = X.shape
    if not isinstance(init, str):
        L0 = np.asarray(init, dtype=np.float64)
        if L0.shape != (n_components, d) or not np.isfinite(L0).all():
            raise ValueError(f"init must have shape (n_components, n_features) = "
                             f"({n_components}, {d}) and finite values, got shape {L0.shape}.")
        return L0.astype(X.dtype)
    n_classes = np.unique(y).size if y is not None else 0
    if init == "auto":
        if y is not None and n_components <= min(d, n_classes - 1):
            init = "lda"
        elif n_components < min(d, n):
            init = "pca"
        else:
            init = "identity"
    if init == "identity":
        return np.eye(n_components, d, dtype=X.dtype)
    if init == "random":
        return check_random_state(random_state).standard_normal((n_components, d)).astype(X.dtype)
    if init == "pca":
        from sklearn.decomposition import PCA

        if n_components > min(n, d):
            raise ValueError(f"init='pca' needs n_components <= min(n_samples, n_features) = "
                             f"{min(n, d)}, got {n_components}.")
        pca = PCA(n_components=n_components, whiten=False, random_state=random_state)
        return pca.fit(X.astype(np.float64)).components_.astype(X.dtype)
    if y is None:
        raise ValueError("init='lda' needs class labels.")
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    if n_components > min(d, n_classes - 1):
        raise ValueError(f"init='lda' needs n_components <= min(n_features, n_classes - 1) = "
                         f"{min(d, n_classes - 1)}, got {n_components}.")
    lda = LinearDiscriminantAnalysis(n_components=n_components, solver="eigen", shrinkage=None)
    lda.fit(X.astype(np.float64), y)
    return lda.scalings_.T[:n_components].astype(X.dtype)


def _minus_squared_distance(a, b):
    delta = a - b
    return -np.einsum("ij,ij->i", delta, delta)


class MahalanobisMixin:
    """``components_`` L (k, d), ``transform`` ``x -> L x``, ``get_mahalanobis_matrix``
    ``M = L^T L``, ``get_metric``, ``pair_distance``; pair scores ``-|L x - L y|^2``.

    A learner sets ``components_`` (in :func:`learned_dtype` of its data) and
    ``n_features_in_`` in ``fit``; learners fitted on labelled points then call
    :meth:`_calibrate_on_labels` for ``threshold_`` (as NCA).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.learners import Covariance  # a MahalanobisMixin learner
    >>> est = Covariance().fit(np.random.default_rng(0).normal(size=(100, 2)) * [1.0, 3.0])
    >>> L, M = est.components_, est.get_mahalanobis_matrix()
    >>> bool(np.allclose(M, L.T @ L))
    True
    >>> pairs = np.array([[[0.0, 0.0], [0.0, 3.0]]])
    >>> bool(np.allclose(est.pair_distance(pairs) ** 2, -est.pair_score(pairs)))
    True
    """

    _preserves_dtype = ("float64", "float32")

    def _check_fit_points(self, X):
        """``fit``'s points (n, d) validated, feature names recorded, ``n_features_in_`` set."""
        given, X = X, check_points(X)
        check_feature_names(self, given, reset=True)
        self.n_features_in_ = X.shape[1]
        return X

    def _calibrate_on_labels(self, X, y, what=None):
        """``threshold_`` on 2000 similar and 2000 dissimilar training pairs (labels y, a fixed
        seed) and ``classes_ = [-1, 1]``; ``y`` identity labels or their integer codes."""
        codes = y if np.asarray(y).dtype.kind in "iu" and np.min(y) >= 0 else None
        if codes is None:
            _, codes = identity_codes(y, "y", X.shape[0])
        pairs, s = calibration_pairs(np.asarray(codes, dtype=np.int64),
                                     what=what or type(self).__name__)
        used, local = np.unique(pairs, return_inverse=True)  # embed each point once
        Z = X[used] @ self.components_.T.astype(X.dtype, copy=False)
        local = local.reshape(pairs.shape)
        scores = _minus_squared_distance(Z[local[:, 0]], Z[local[:, 1]])  # = pair_score
        self.threshold_ = float(calibrate_threshold(s, finite_scores(scores, X[used])))
        self.classes_ = np.array([-1, 1])
        return self

    def get_mahalanobis_matrix(self):
        """M = L^T L (n_features, n_features), in the dtype of ``components_``."""
        check_is_fitted(self, "components_")
        return self.components_.T @ self.components_

    def get_metric(self):
        """A function ``metric(u, v, squared=False)`` of two 1-D vectors: the learned
        distance ``sqrt((u - v)^T M (u - v))`` (its square with ``squared=True``), for
        scikit-learn's ``metric=`` parameters (KNeighborsClassifier, DBSCAN, ...).

        Examples
        --------
        >>> import numpy as np
        >>> from metricfit.learners import Covariance
        >>> est = Covariance().fit(np.random.default_rng(0).normal(size=(50, 3)))
        >>> metric = est.get_metric()
        >>> u, v = np.zeros(3), np.ones(3)
        >>> bool(np.isclose(metric(u, v) ** 2, (u - v) @ est.get_mahalanobis_matrix() @ (u - v)))
        True
        """
        check_is_fitted(self, "components_")
        L = np.array(self.components_, dtype=np.float64)
        d = L.shape[1]

        def metric(u, v, squared=False):
            u, v = (np.asarray(a, dtype=np.float64).ravel() for a in (u, v))
            if u.shape != (d,) or v.shape != (d,):
                raise ValueError(f"u and v must be 1-D vectors of {d} features, got shapes "
                                 f"{u.shape} and {v.shape}.")
            delta = L @ (u - v)
            sq = float(delta @ delta)
            return sq if squared else float(np.sqrt(sq))

        return metric

    def transform(self, X):
        """``L x``: points (n, d) -> (n, k), or vector pairs / tuples (n, w, d) -> (n, w, k);
        in the data's float dtype (float32 kept)."""
        check_is_fitted(self, "components_")
        X = np.asarray(X) if not hasattr(X, "ndim") else X
        if np.ndim(X) == 3:
            X = check_pairs(X, n_features=self.n_features_in_, what="X") if np.shape(X)[1] == 2 \
                else check_tuples(X, np.shape(X)[1], n_features=self.n_features_in_, what="X")
        else:
            check_feature_names(self, X, reset=False)
            X = check_points(X, n_features=self.n_features_in_)
        return X @ self.components_.T.astype(X.dtype, copy=False)

    def _embed(self, X):
        return MahalanobisMixin.transform(self, X)

    def pair_distance(self, pairs, squared=False):
        """The learned distance of each pair, ``sqrt((x - y)^T M (x - y))`` (metric-learn's
        ``pair_distance``); ``squared=True``: ``(x - y)^T M (x - y)``, i.e. ``-pair_score``.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2)
            Vector pairs, or index pairs into ``preprocessor``.
        squared : bool, default=False

        Returns
        -------
        distances : ndarray of shape (n_pairs,)
        """
        sq = np.maximum(-self.pair_score(pairs), 0)
        return sq if squared else np.sqrt(sq)

    def pair_score(self, pairs):
        """Minus the squared learned distance, ``-|L x - L y|^2`` (higher = more similar;
        the score kind 'distance'), shape (n_pairs,).

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2)
            Vector pairs, or index pairs into ``preprocessor``.
        """
        check_is_fitted(self, "components_")
        pairs = check_pair_input(pairs, getattr(self, "preprocessor", None),
                                 n_features=self.n_features_in_)
        with np.errstate(over="ignore", invalid="ignore"):  # reported by finite_scores
            scores = score_pairs(self._embed, _minus_squared_distance, pairs)
        return finite_scores(scores, pairs)

    def __metricfit_tags__(self):
        parent = getattr(super(), "__metricfit_tags__", None)
        tags = parent() if parent is not None else PairTags()
        tags.score_kind = "distance"  # minus the squared Mahalanobis distance
        return tags

    # -- distances within tuples ------------------------------------------------------------

    def _tuple_distances(self, tuples, width, positions):
        """``d(t[i], t[j])`` (n,) for each ``(i, j)`` of ``positions``, as an (n, len) array,
        for tuples of ``width`` validated here (vector or index tuples into
        ``preprocessor``); chunk by chunk, index tuples embedding their points once."""
        check_is_fitted(self, "components_")
        tuples = check_tuples(tuples, width, getattr(self, "preprocessor", None),
                              n_features=self.n_features_in_)
        L = self.components_
        out = np.empty((len(tuples), len(positions)), dtype=np.float64)
        if isinstance(tuples, IndexTuples) and len(tuples) * width >= tuples.points.shape[0]:
            E = embed_points(lambda B: B @ L.T.astype(B.dtype), tuples.points)  # blockwise
            starts = range(0, len(tuples), TUPLE_CHUNK)
            for start in starts:
                index = np.asarray(tuples.index[start:start + TUPLE_CHUNK])
                for col, (i, j) in enumerate(positions):
                    delta = E[index[:, i]] - E[index[:, j]]
                    out[start:start + len(index), col] = np.einsum("ij,ij->i", delta, delta)
        else:
            for start in range(0, len(tuples), TUPLE_CHUNK):
                rows = slice(start, min(start + TUPLE_CHUNK, len(tuples)))
                Z = tuple_vectors(tuples, rows) @ L.T.astype(tuples.dtype)  # (m, w, k)
                for col, (i, j) in enumerate(positions):
                    delta = Z[:, i] - Z[:, j]
                    out[rows, col] = np.einsum("ij,ij->i", delta, delta)
        with np.errstate(invalid="ignore"):
            return finite_scores(np.sqrt(out), tuples, what=f"{type(self).__name__}'s tuples")


class _TupleClassifier:
    """metric-learn's classifiers of ordered tuples: +1 when the first distance is smaller."""

    _width = None
    _positions = None  # ((i, j) of the wanted-smaller distance, (k, l) of the larger)

    def decision_function(self, tuples):
        """The larger-wanted distance minus the smaller-wanted one (> 0: correctly ordered)."""
        D = self._tuple_distances(tuples, self._width, self._positions)
        return D[:, 1] - D[:, 0]

    def predict(self, tuples):
        """+1 where the tuple is ordered as wanted (``decision_function > 0``), else -1."""
        return np.where(self.decision_function(tuples) > 0, 1, -1)

    def score(self, tuples, y=None):
        """The accuracy on tuples ordered as wanted: the share that :meth:`predict` +1."""
        if y is not None:
            check_tuples(tuples, self._width, getattr(self, "preprocessor", None), y=y)
        return float(np.mean(self.predict(tuples) == 1))


class TripletsMixin(_TupleClassifier):
    """Triplets (a, p, n): ``decision_function = d(a, n) - d(a, p)``; ``predict`` +1 when
    ``d(a, p) < d(a, n)``; ``score`` the accuracy (metric-learn's ``_TripletsClassifierMixin``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> from metricfit.learners._mahalanobis import MahalanobisMixin, TripletsMixin
    >>> class Euclidean(MahalanobisMixin, TripletsMixin, BaseEstimator):
    ...     def fit(self, X):
    ...         self.components_, self.n_features_in_ = np.eye(2), 2
    ...         return self
    >>> triplets = np.array([[[0, 0], [1, 0], [3, 0]], [[0, 0], [3, 0], [1, 0]]])
    >>> est = Euclidean().fit(None)
    >>> est.decision_function(triplets), est.predict(triplets), est.score(triplets)
    (array([ 2., -2.]), array([ 1, -1]), 0.5)
    """

    _width = 3
    _positions = ((0, 1), (0, 2))


class QuadrupletsMixin(_TupleClassifier):
    """Quadruplets (a, b, c, d): ``decision_function = d(c, d) - d(a, b)``; ``predict`` +1 when
    ``d(a, b) < d(c, d)``; ``score`` the accuracy (metric-learn's
    ``_QuadrupletsClassifierMixin``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> from metricfit.learners._mahalanobis import MahalanobisMixin, QuadrupletsMixin
    >>> class Euclidean(MahalanobisMixin, QuadrupletsMixin, BaseEstimator):
    ...     def fit(self, X):
    ...         self.components_, self.n_features_in_ = np.eye(1), 1
    ...         return self
    >>> est = Euclidean().fit(None)
    >>> est.predict(np.array([[[0], [1], [0], [5]], [[0], [4], [0], [2]]]))
    array([ 1, -1])
    """

    _width = 4
    _positions = ((0, 1), (2, 3))
