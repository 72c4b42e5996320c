"""WPCA and WCCN on an array-API namespace (torch, CuPy, array_api_strict), and the helpers
the closed-form transformers of :mod:`metricfit.backend.lda` share with them.

:class:`~metricfit.whitening.WPCA` and :class:`~metricfit.whitening.WCCN` come here when
``fit`` gets such an array with dispatch on (:func:`metricfit.array_api_dispatch`); NumPy input
never does. The algebra is the NumPy path's (the docstrings of the estimators), in the input's
namespace and on its device, in float64 (float32 where the device has none): the covariance or
Gram matrix by ``@`` and ``xp.linalg.eigh`` (full, then the top k kept: the array API has no
``subset_by_index``), ``xp.linalg.svd`` for badly conditioned data, the same sign convention
(each row's largest-magnitude entry positive) and the same rank checks. The fitted attributes
are arrays of the input's namespace, on its device, in its dtype; ``transform`` then takes
arrays of that namespace only (another namespace is a ValueError naming both).

Class labels are small and are coded on the host (``numpy.unique``); the class sums are
cumulative sums over the rows sorted by class (the array API has no scatter-add), taken after
centring on the global mean so that the differences of the cumulative sums lose little.
"""

import math

import numpy as np

from .._array_api import device_of, get_namespace, to_numpy
from ..pairs import check_pair_labels
from ..pairs.checks import check_identity_labels, scale_exponent

__all__ = []

#: Below this ratio to the largest eigenvalue, eigenvalues of a covariance formed as
#: X^T X are round-off (its condition is that of X squared): they are recomputed from the
#: singular values of X itself, exact to eps relative to the largest.
_ILL_CONDITIONED = 1e-8


def _rank_rtol(n, d):
    """The relative cut-off on eigenvalues matching the data's numerical rank: a singular
    value <= s_max * max(n, d) * eps is zero (``numpy.linalg.matrix_rank``, scikit-learn's
    PCA), i.e. an eigenvalue (s^2) <= lam_max * (max(n, d) * eps)^2."""
    return (max(n, d) * np.finfo(np.float64).eps) ** 2


def float_dtype(xp):
    """float64 where the namespace has it (float32 for devices without, such as MPS)."""
    return getattr(xp, "float64", None) or xp.float32


def check_input(estimator, X, xp, reset):
    """Points (n, d) or pairs (n, 2, d) of namespace ``xp``: real, finite, non-empty, with
    ``n_features_in_`` recorded (``reset``) or checked. Float32 / float64 are kept, other
    numbers become float64. The NumPy path's errors (:func:`metricfit.pairs.checks.
    check_transformer_input`), in short."""
    name = type(estimator).__name__
    if xp.isdtype(X.dtype, "complex floating"):
        raise ValueError("Complex data not supported: X must hold real numbers.")
    if X.ndim not in (2, 3) or (X.ndim == 3 and X.shape[1] != 2):
        raise ValueError("X must be points of shape (n_samples, n_features) or pairs of shape "
                         f"(n_pairs, 2, n_features), got an array of shape {tuple(X.shape)}.")
    if X.shape[0] == 0 or X.shape[-1] == 0:
        raise ValueError(f"Found array with 0 samples or features (shape={tuple(X.shape)}).")
    if not xp.isdtype(X.dtype, "real floating"):
        X = xp.astype(X, float_dtype(xp))
    if not bool(xp.all(xp.isfinite(X))):
        raise ValueError("X contains NaN or infinity: every entry must be finite.")
    if reset:
        estimator.n_features_in_ = int(X.shape[-1])
    elif X.shape[-1] != estimator.n_features_in_:
        raise ValueError(f"X has {X.shape[-1]} features, but {name} is expecting "
                         f"{estimator.n_features_in_} features as input.")
    return X


def namespace(*arrays, names):
    """:func:`metricfit._array_api.get_namespace`, with objects that are no arrays of any
    namespace (DataFrames, lists) left to the NumPy path."""
    try:
        return get_namespace(*arrays, names=names)
    except TypeError:
        return np, False


def transform_fitted(estimator, X, mean=None, attribute="components_"):
    """``transform`` (``X W^T``, after subtracting the fitted ``mean`` attribute if named) in
    the namespace of X and the fitted ``attribute`` when they are array-API arrays with
    dispatch on; None for NumPy (the caller's NumPy path). Another namespace for X than the
    fitted one is a ValueError naming both."""
    xp, dispatched = namespace(X, getattr(estimator, attribute), names=["X", attribute])
    if not dispatched:
        return None
    X = check_input(estimator, X, xp, reset=False)
    return project(xp, X, getattr(estimator, attribute),
                   None if mean is None else getattr(estimator, mean))


def rescaled(xp, X):
    """``(X64 * 2**-e, e)``: X in float64, rescaled by a power of two (exact) when its
    largest |entry| is beyond ``2**+-256`` (:func:`metricfit.pairs.checks.scale_exponent`),
    so that products of it neither overflow nor underflow."""
    X = xp.astype(X, float_dtype(xp))
    e = scale_exponent(float(xp.max(xp.abs(X))))
    return (X * math.ldexp(1.0, -e) if e else X), e


def fix_signs(xp, V):
    """Columns of V flipped so that the largest-magnitude entry of each is positive (the
    NumPy path's convention; on an exact tie of +m and -m, +m wins)."""
    keep = xp.max(V, axis=0) >= -xp.min(V, axis=0)
    return V * (2.0 * xp.astype(keep, V.dtype) - 1.0)


def unit_rows(xp, Z):
    """Rows scaled to unit length, zero rows kept 0; each row is divided by its largest
    |entry| first, so that the norm neither overflows nor underflows."""
    largest = xp.max(xp.abs(Z), axis=1, keepdims=True)
    safe = xp.where(largest > 0, largest, 1.0)
    Z = Z / safe
    norms = xp.linalg.vector_norm(Z, axis=1, keepdims=True)
    return Z / xp.where(norms > 0, norms, 1.0)


def project(xp, X, components, mean=None):
    """The last axis of points or pairs through ``components`` (k, d), in X's dtype."""
    flat = xp.reshape(X, (-1, X.shape[-1]))
    if mean is not None:
        flat = flat - xp.astype(mean, X.dtype)
    Z = flat @ xp.astype(components, X.dtype).T
    return xp.reshape(Z, tuple(X.shape[:-1]) + (components.shape[0],))


def class_codes(y, n, name="y", min_classes=1):
    """``(codes, counts)`` on the host of class labels of any namespace (a copy of the
    labels, never of the data): ``numpy.unique``'s inverse and counts."""
    y = check_identity_labels(y if isinstance(y, (list, tuple)) else to_numpy(y), name,
                              n_samples=n)
    classes, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    if classes.size < min_classes:
        raise ValueError(f"{name} holds {classes.size} class(es): at least {min_classes} are "
                         "needed.")
    return codes.reshape(-1), counts


def class_means(xp, X, codes, counts):
    """``(order, means)``: the host order sorting the rows by class, and the class means
    (C, d) in ``xp``, from cumulative sums of the centred rows in that order (module
    docstring)."""
    dev = device_of(X)
    order = np.argsort(codes, kind="stable")
    ends = np.cumsum(counts)
    centre = xp.mean(X, axis=0)
    sorted_rows = xp.take(X, xp.asarray(order, device=dev), axis=0) - centre
    cumulative = xp.concat([xp.zeros((1, X.shape[1]), dtype=X.dtype, device=dev),
                            xp.cumulative_sum(sorted_rows, axis=0)])
    last = xp.take(cumulative, xp.asarray(ends, device=dev), axis=0)
    first = xp.take(cumulative, xp.asarray(ends - counts, device=dev), axis=0)
    sizes = xp.asarray(counts.astype(np.float64), dtype=X.dtype, device=dev)
    return order, (last - first) / sizes[:, None] + centre


def _wccn_deviations(xp, X, y):
    """The rows Z with Z^T Z the within-class covariance of eq. 12 (points with class labels,
    or pairs with pair labels: each similar pair a class), as the NumPy path's
    ``_class_deviations`` / ``_pair_deviations``."""
    dev = device_of(X)
    if X.ndim == 3:
        s = check_pair_labels(y if isinstance(y, (list, tuple)) else to_numpy(y), X.shape[0],
                              require_both=False)
        similar = np.flatnonzero(s == 1)
        if similar.size == 0:
            raise ValueError("WCCN on pairs needs at least one similar pair (label +1 or 1): "
                             "each similar pair is a class of its own and dissimilar pairs "
                             "are ignored.")
        P = xp.take(X, xp.asarray(similar, device=dev), axis=0)
        return (P[:, 0, :] - P[:, 1, :]) / (2.0 * math.sqrt(similar.size))
    codes, counts = class_codes(y, X.shape[0])
    keep = counts[codes] >= 2
    if not keep.any():
        raise ValueError("WCCN needs at least one class with 2 or more samples (singleton "
                         f"classes carry no within-class information); got {X.shape[0]} "
                         f"sample(s) in {counts.size} class(es).")
    rows = np.flatnonzero(keep)
    X = xp.take(X, xp.asarray(rows, device=dev), axis=0)
    _, codes, counts = np.unique(codes[rows], return_inverse=True, return_counts=True)
    order, means = class_means(xp, X, codes, counts)
    codes = codes[order]
    sorted_rows = xp.take(X, xp.asarray(order, device=dev), axis=0)
    weights = np.sqrt(counts.size * counts[codes].astype(np.float64))
    return ((sorted_rows - xp.take(means, xp.asarray(codes, device=dev), axis=0))
            / xp.asarray(weights, dtype=X.dtype, device=dev)[:, None])


def _rows(xp, lam, V, lam_max, reg, advice, rtol, e):
    """:func:`metricfit.whitening._whitening_rows` in ``xp`` (rows of data rescaled by
    ``2**-e``, returned in the data's units)."""
    lam = xp.maximum(lam, 0.0)
    tiny = lam <= float(rtol) * max(float(lam_max), 0.0)
    if reg == 0 and bool(xp.any(tiny)):
        raise ValueError(
            f"{int(xp.sum(xp.astype(tiny, xp.int64)))} eigenvalue(s) of the covariance are ~0 "
            f"(<= {rtol:.3g} x the largest, {lam_max:.3g}: beyond the data's numerical rank): "
            f"whitening would divide by zero. {advice}")
    scaled_reg = math.ldexp(float(reg), -2 * e) if e else float(reg)
    return (fix_signs(xp, V) / xp.sqrt(lam + scaled_reg)).T * math.ldexp(1.0, -e)


def fit_wpca(estimator, X, xp):
    """WPCA's ``fit`` in ``xp`` (:class:`metricfit.whitening.WPCA`): the covariance
    (n >= d) or the Gram matrix (n < d) eigendecomposed, the thin SVD when badly
    conditioned."""
    X = check_input(estimator, X, xp, reset=True)
    dtype = X.dtype
    X = xp.reshape(X, (-1, X.shape[-1]))
    n, d = X.shape
    if n < 2:
        raise ValueError(f"WPCA needs at least 2 samples for a covariance, got {n} sample.")
    estimator._check_n_components(min(n, d), "min(n_samples, n_features)")
    k = estimator.n_components or min(n - 1, d)
    X, e = rescaled(xp, X)
    mean = xp.mean(X, axis=0)
    Xc = X - mean
    gram = n < d
    lam, V = xp.linalg.eigh(Xc @ Xc.T if gram else Xc.T @ Xc)  # ascending
    lam, V = xp.flip(lam[-k:]), xp.flip(V[:, -k:], axis=1)
    if gram:  # V holds U; the columns of Xc^T U are s_j v_j
        V = Xc.T @ V
        V = V / xp.maximum(xp.linalg.vector_norm(V, axis=0), 1e-300)
    lam = lam / (n - 1)
    if float(lam[-1]) < _ILL_CONDITIONED * float(lam[0]):
        _, s, Vt = xp.linalg.svd(Xc, full_matrices=False)
        lam, V = s[:k] ** 2 / (n - 1), Vt[:k, :].T
    advice = "Lower n_components (the data has rank < n_components) or set reg > 0."
    components = _rows(xp, lam, V, float(lam[0]), estimator.reg, advice, _rank_rtol(n, d), e)
    estimator.explained_variance_ = xp.astype(xp.maximum(lam, 0.0) * math.ldexp(1.0, 2 * e),
                                              dtype)
    estimator.components_ = xp.astype(components, dtype)
    estimator.mean_ = xp.astype(mean * math.ldexp(1.0, e), dtype)
    estimator.n_components_ = k
    return estimator


def fit_wccn(estimator, X, y, xp):
    """WCCN's ``fit`` in ``xp`` (:class:`metricfit.whitening.WCCN`): eq. 12's scatter
    ``Z^T Z`` eigendecomposed; the SVD of Z when badly conditioned and Z has at least
    n_features rows (else the eigendecomposition is kept)."""
    if y is None:
        raise ValueError("WCCN requires y to be passed, but the target y is None.")
    X = check_input(estimator, X, xp, reset=True)
    dtype, d = X.dtype, X.shape[-1]
    estimator._check_n_components(d, "n_features")
    X, e = rescaled(xp, X)
    Z = _wccn_deviations(xp, X, y)
    lam, V = xp.linalg.eigh(Z.T @ Z)  # ascending
    if float(lam[0]) < _ILL_CONDITIONED * float(lam[-1]) and Z.shape[0] >= d:
        _, sv, Vt = xp.linalg.svd(Z, full_matrices=False)
        lam, V = xp.flip(sv) ** 2, xp.flip(Vt, axis=0).T
    k = estimator.n_components or d
    advice = "Use more within-class samples (sum of m_i - 1 >= n_features), or set reg > 0."
    components = _rows(xp, lam[:k], V[:, :k], float(lam[-1]), estimator.reg, advice,
                       _rank_rtol(Z.shape[0], d), e)
    estimator.eigenvalues_ = xp.astype(xp.maximum(lam[:k], 0.0) * math.ldexp(1.0, 2 * e),
                                       dtype)
    estimator.components_ = xp.astype(components, dtype)
    estimator.n_components_ = k
    return estimator
