"""The transformers before PLDA: length normalisation (centre, whiten, L2-normalise;
Garcia-Romero and Espy-Wilson 2011) and LDA. Both take points (n, d) or pairs (n, 2, d), so
they run in a :class:`~sklearn.pipeline.Pipeline` before :class:`metricfit.PLDA` on pairs.

Torch, CuPy or array_api_strict input with array-API dispatch on
(:func:`metricfit.array_api_dispatch`) is fitted and transformed in its namespace and on its
device, the fitted attributes arrays of that namespace (float64), with the helpers of
:mod:`metricfit.whitening.array_api`. LDA's generalised eigenproblem ``S_b v = lambda S_w v``
is reduced there as LAPACK's ``sygvd`` does, by the Cholesky factor ``S_w / n = L L^T``:
``eigh(L^-1 S_b L^-T) = U diag(lambda) U^T`` and ``V = L^-T U`` (``xp.linalg.cholesky``,
``solve``, ``eigh``); its rows equal the NumPy path's up to their signs (any eigensolver
may flip an eigenvector).
"""

import math
from numbers import Integral, Real

import numpy as np
from scipy import linalg
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    OneToOneFeatureMixin,
    TransformerMixin,
)
from sklearn.utils.validation import check_is_fitted

from .._array_api import device_of, to_numpy
from .._validation import Interval, PointOutputMixin, validate_params
from ..pairs import check_pair_labels
from ..pairs.checks import (
    SAFE_EXPONENT,
    check_representable,
    check_transformer_input,
    identity_codes,
    largest_magnitude,
    scale_exponent,
)
from ..pairs.identity import similar_pair_classes
from ..pairs.rows import l2_normalize
from ..whitening.array_api import (
    check_input,
    class_codes,
    namespace,
    rescaled,
    transform_fitted,
    unit_rows,
)
from ..whitening.array_api import class_means as xp_class_means
from .plda import class_means, offset_scatter

__all__ = ["LengthNormalizer", "LDA"]


def _rows(X):
    return X.reshape(-1, X.shape[-1])


def _unit_rows(Z):
    """Rows of Z scaled to unit length (zero rows stay 0); rows whose norm overflows or
    underflows (entries beyond ~1e+-77) through :func:`metricfit.pairs.rows.l2_normalize`,
    which divides by the largest entry first."""
    with np.errstate(over="ignore", under="ignore"):
        norms = np.linalg.norm(Z, axis=1, keepdims=True)
    plain = (np.isfinite(norms) & (norms > 2.0 ** -SAFE_EXPONENT)).ravel()
    out = np.divide(Z, norms, out=np.zeros_like(Z), where=plain[:, None])
    out[~plain] = l2_normalize(Z[~plain])
    return out


class LengthNormalizer(PointOutputMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Centre, optionally whiten, and scale every vector to unit length (the i-vector length
    normalisation of Garcia-Romero and Espy-Wilson, Interspeech 2011).

    ``z = W (x - mean) / ||W (x - mean)||``, W the inverse square root of the training
    covariance (``whiten=True``) or I. A vector equal to the mean maps to 0.

    Parameters
    ----------
    whiten : bool, default=True
    reg : float, default=1e-6
        Added, relative to the largest eigenvalue, to every eigenvalue before whitening.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
    whitening_ : ndarray of shape (n_features, n_features) or None
    n_features_in_ : int

    Examples
    --------
    Features on scales 1, 10 and 100: after whitening each direction weighs alike, and every
    vector has unit length; pairs keep their shape:

    >>> import numpy as np
    >>> from metricfit import LengthNormalizer
    >>> rng = np.random.default_rng(0)
    >>> X = 5 + rng.normal(size=(100, 3)) * [1, 10, 100]
    >>> Z = LengthNormalizer().fit(X).transform(X)
    >>> bool(np.allclose(np.linalg.norm(Z, axis=1), 1))
    True
    >>> np.round(Z.std(axis=0), 1)
    array([0.6, 0.6, 0.6])
    >>> np.round(LengthNormalizer(whiten=False).fit(X).transform(X).std(axis=0), 1)
    array([0. , 0.3, 1. ])
    >>> LengthNormalizer().fit(X).transform(np.stack([X[:50], X[50:]], axis=1)).shape
    (50, 2, 3)
    """

    _parameter_constraints = {"whiten": ["boolean"], "reg": [Interval(Real, 0, None)]}

    def __init__(self, whiten=True, reg=1e-6):
        self.whiten = whiten
        self.reg = reg

    def fit(self, X, y=None):
        """Fit the mean (and whitening) on points (n, d) or the 2n vectors of pairs."""
        validate_params(self)
        xp, dispatched = namespace(X, names=["X"])
        if dispatched:
            return _fit_length_xp(self, X, xp)
        P = _rows(check_transformer_input(self, X, reset=True)).astype(np.float64)
        if P.shape[0] < 2:
            raise ValueError(f"LengthNormalizer needs at least 2 vectors to fit, got "
                             f"n_samples = {P.shape[0]}.")
        largest = largest_magnitude(P)
        e = scale_exponent(largest)  # 0 (bit-identical) unless |X| is beyond ~1e+-77
        if e:
            P = np.ldexp(P, -e)  # exact; mean_ and whitening_ are scaled back below
        self.mean_ = np.ldexp(P.mean(axis=0), e)
        self.whitening_ = None
        if self.whiten:
            lam, V = linalg.eigh(np.cov(P, rowvar=False).reshape(P.shape[1], P.shape[1]))
            lam = np.maximum(lam, 0) + self.reg * max(lam.max(), np.finfo(float).tiny)
            self.whitening_ = check_representable((V / np.sqrt(lam)) @ V.T, np.float64,
                                                  "the whitening (whitening_)", largest,
                                                  exponent=-e)
        return self

    def transform(self, X):
        """Unit-length vectors, same shape and dtype as X."""
        check_is_fitted(self, "mean_")
        xp, dispatched = namespace(X, self.mean_, names=["X", "mean_"])
        if dispatched:
            X = check_input(self, X, xp, reset=False)
            Z = xp.reshape(X, (-1, X.shape[-1])) - xp.astype(self.mean_, X.dtype)
            if self.whitening_ is not None:
                Z = Z @ xp.astype(self.whitening_, X.dtype)
            return xp.reshape(unit_rows(xp, Z), X.shape)
        given, X = X, check_transformer_input(self, X, reset=False)
        Z = _rows(X) - self.mean_.astype(X.dtype)
        if self.whitening_ is not None:
            Z = Z @ self.whitening_.astype(X.dtype)
        return self._wrap_output(_unit_rows(Z).reshape(X.shape), given)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class LDA(PointOutputMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Linear discriminant analysis to ``n_components`` dimensions: the leading solutions of
    ``S_b v = lambda S_w v`` (between- and within-class scatter), rows scaled so that the
    within-class covariance is I.

    ``fit(X, labels)`` on points with identities, or ``fit(pairs, y)``: each similar pair a
    class of two (dissimilar pairs unused), as :class:`metricfit.PLDA`.

    Parameters
    ----------
    n_components : int or None, default=None
        None: ``min(n_classes - 1, n_features)``.
    reg : float, default=1e-6
        Relative ridge on the within-class scatter.

    Examples
    --------
    Three classes in 4-D give two discriminant directions, in which the within-class
    covariance is the identity:

    >>> import numpy as np
    >>> from metricfit import LDA
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat(np.arange(3), 20)
    >>> centres = np.array([[0, 0, 0, 0], [5, 0, 0, 0], [0, 5, 0, 0]])
    >>> X = centres[labels] + rng.normal(size=(60, 4))
    >>> Z = LDA().fit(X, labels).transform(X)
    >>> Z.shape
    (60, 2)
    >>> R = Z - np.array([Z[labels == c].mean(axis=0) for c in range(3)])[labels]
    >>> np.round(R.T @ R / len(Z), 4)
    array([[1., 0.],
           [0., 1.]])

    On pairs, each similar pair is a class of two (dissimilar pairs are unused):

    >>> from metricfit.pairs import sample_pairs
    >>> index, y = sample_pairs(labels, 20, 20, random_state=0)
    >>> LDA(n_components=1).fit(X[index], y).transform(X[index]).shape
    (40, 2, 1)
    """

    _parameter_constraints = {"n_components": [Interval(Integral, 1, None), None],
                              "reg": [Interval(Real, 0, None)]}

    def __init__(self, n_components=None, reg=1e-6):
        self.n_components = n_components
        self.reg = reg

    def fit(self, X, y):
        validate_params(self)
        xp, dispatched = namespace(X, names=["X"])
        if dispatched:
            return _fit_lda_xp(self, X, y, xp)
        X = check_transformer_input(self, X, reset=True)
        what = "y"
        if X.ndim == 3:  # each similar pair a class of two points
            X, y = similar_pair_classes(X, check_pair_labels(y, X.shape[0], require_both=False))
            what = "the similar pairs of y (one class each)"
        classes, codes = identity_codes(y, what, X.shape[0], min_identities=2)
        d = X.shape[1]
        k = self.n_components or min(classes.size - 1, d)
        if k > d:
            raise ValueError(f"n_components={k} must be <= n_features={d}.")
        largest = largest_magnitude(X)
        e = scale_exponent(largest)  # 0 (bit-identical) unless |X| is beyond ~1e+-77
        X64 = np.ldexp(X.astype(np.float64), -e) if e else X.astype(np.float64)
        counts, means = class_means(X64, codes, classes.size)  # the one home (with PLDA)
        mean = X64.mean(axis=0)
        within = offset_scatter(X64, codes, means)
        D = (means - mean) * np.sqrt(counts)[:, None]
        between = D.T @ D
        within += self.reg * np.trace(within) / d * np.eye(d)
        lam, V = linalg.eigh(between, within / X.shape[0])
        self.components_ = check_representable(  # V^T (S_w / n) V = I
            V[:, ::-1][:, :k].T, np.float64, "the discriminant rows (components_)", largest,
            exponent=-e)
        self.explained_variance_ = lam[::-1][:k]  # a ratio of variances: scale-free
        self.mean_ = np.ldexp(mean, e)
        return self

    def transform(self, X):
        check_is_fitted(self, "components_")
        if (Z := transform_fitted(self, X, "mean_")) is not None:
            return Z
        given, X = X, check_transformer_input(self, X, reset=False)
        Z = (_rows(X) - self.mean_.astype(X.dtype)) @ self.components_.T.astype(X.dtype)
        return self._wrap_output(Z.reshape(*X.shape[:-1], -1), given)

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


def _fit_length_xp(estimator, X, xp):
    """:meth:`LengthNormalizer.fit` in namespace ``xp`` (float64 attributes)."""
    X = check_input(estimator, X, xp, reset=True)
    P, e = rescaled(xp, xp.reshape(X, (-1, X.shape[-1])))
    n = P.shape[0]
    if n < 2:
        raise ValueError(f"LengthNormalizer needs at least 2 vectors to fit, got n_samples = {n}.")
    mean = xp.mean(P, axis=0)
    estimator.mean_ = mean * math.ldexp(1.0, e)
    estimator.whitening_ = None
    if estimator.whiten:
        centred = P - mean
        lam, V = xp.linalg.eigh(centred.T @ centred / (n - 1))
        floor = estimator.reg * max(float(xp.max(lam)), np.finfo(float).tiny)
        lam = xp.maximum(lam, 0.0) + floor
        estimator.whitening_ = ((V / xp.sqrt(lam)) @ V.T) * math.ldexp(1.0, -e)
    return estimator


def _fit_lda_xp(estimator, X, y, xp):
    """:meth:`LDA.fit` in namespace ``xp`` (module docstring: the Cholesky reduction)."""
    X = check_input(estimator, X, xp, reset=True)
    dev = device_of(X)
    if X.ndim == 3:  # each similar pair a class of two points
        s = check_pair_labels(y if isinstance(y, (list, tuple)) else to_numpy(y), X.shape[0],
                              require_both=False)
        similar = np.flatnonzero(s == 1)
        if similar.size < 2:
            raise ValueError(f"the similar pairs of y (one class each) hold {similar.size} "
                             "identities: at least 2 are needed.")
        X = xp.reshape(xp.take(X, xp.asarray(similar, device=dev), axis=0), (-1, X.shape[-1]))
        codes, counts = np.repeat(np.arange(similar.size), 2), np.full(similar.size, 2)
    else:
        codes, counts = class_codes(y, X.shape[0], "y", min_classes=2)
    n, d = X.shape
    k = estimator.n_components or min(counts.size - 1, d)
    if k > d:
        raise ValueError(f"n_components={k} must be <= n_features={d}.")
    X64, e = rescaled(xp, X)
    _, means = xp_class_means(xp, X64, codes, counts)
    mean = xp.mean(X64, axis=0)
    offsets = X64 - xp.take(means, xp.asarray(codes, device=dev), axis=0)
    within = offsets.T @ offsets
    D = (means - mean) * xp.asarray(np.sqrt(counts.astype(np.float64)), device=dev)[:, None]
    between = D.T @ D
    ridge = estimator.reg * float(xp.linalg.trace(within)) / d
    L = xp.linalg.cholesky((within + ridge * xp.eye(d, dtype=X64.dtype, device=dev)) / n)
    reduced = xp.linalg.solve(L, xp.linalg.solve(L, between).T)  # L^-1 S_b L^-T
    lam, U = xp.linalg.eigh((reduced + reduced.T) / 2)
    V = xp.linalg.solve(L.T, U)  # V^T (S_w / n) V = I
    estimator.components_ = xp.flip(V, axis=1)[:, :k].T * math.ldexp(1.0, -e)
    estimator.explained_variance_ = xp.flip(lam)[:k]
    estimator.mean_ = mean * math.ldexp(1.0, e)
    return estimator
