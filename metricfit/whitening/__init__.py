"""Whitening transformers: whitened PCA (WPCA) and within-class covariance normalisation (WCCN).

The pre-processing of the face-verification pipeline of seed 002 (section III.C-D): WPCA reduces
descriptors to a few hundred whitened dimensions, WCCN normalises the within-class covariance
(or initialises a metric learner). Both take points (n_samples, n_features) or pairs
(n_pairs, 2, n_features); float32/float64 are kept (output dtype = input dtype), other numbers
become float64. Decompositions run in float64 through LAPACK (``scipy.linalg``).

Torch, CuPy or array_api_strict input with array-API dispatch on
(:func:`metricfit.array_api_dispatch`) is fitted and transformed in its namespace and on its
device (:mod:`metricfit.whitening.array_api`). Threads: the O(n d min(n, d)) work is BLAS
GEMMs and LAPACK decompositions (multi-threaded by BLAS under :func:`metricfit.threads`); of
the O(n d) rest, the elementwise centring and WCCN's class sums and deviations run on the
package's threads over fixed blocks (:func:`metricfit.parallel.map_blocks`: row for row the
same arithmetic, so bit-identical on any thread count); the column means stay serial (a
blocked sum would round differently). ``benchmarks/bench_wpca.py --split`` measures the share.
"""

from numbers import Integral, Real

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import Interval, PointOutputMixin, validate_params
from ..pairs import check_pair_labels
from ..pairs.checks import (
    check_identity_labels,
    check_representable,
    check_transformer_input,
    largest_magnitude,
    scale_exponent,
)
from ..pairs.index import IndexPairs, check_pair_input, pair_differences
from ..parallel import map_blocks
from .array_api import _ILL_CONDITIONED, _rank_rtol, fit_wccn, fit_wpca, namespace, transform_fitted

__all__ = ["WPCA", "WCCN"]

def _fix_signs(V):
    """Flip each column of ``V`` so that its largest-magnitude entry is positive."""
    rows = np.argmax(np.abs(V), axis=0)
    return V * np.where(V[rows, np.arange(V.shape[1])] < 0, -1.0, 1.0)


def _whitening_rows(lam, V, lam_max, reg, advice, rtol, exponent=0):
    r"""Rows :math:`\mathrm{diag}(\lambda + r)^{-1/2} V^T` of a whitening matrix.

    Eigenvalues at or below ``rtol * lam_max`` (:func:`_rank_rtol`: beyond the data's
    numerical rank) count as zero; with ``reg == 0`` they raise ``ValueError(advice)``
    instead of dividing by (almost) zero. ``lam`` may be of data rescaled by ``2**-exponent``
    (:func:`metricfit.pairs.checks.scale_exponent`): the rows are then those of the data
    itself, ``r`` in its units (where ``r`` in the rescaled units overflows, ``lam`` is
    negligible beside it).
    """
    lam = np.maximum(lam, 0.0)  # round-off can make a zero eigenvalue slightly negative
    tiny = lam <= rtol * max(lam_max, 0.0)
    if reg == 0 and tiny.any():
        raise ValueError(
            f"{int(tiny.sum())} eigenvalue(s) of the covariance are ~0 (<= {rtol:.3g} x the "
            f"largest, {lam_max:.3g}: beyond the data's numerical rank): whitening would "
            f"divide by zero. {advice}"
        )
    with np.errstate(over="ignore", under="ignore"):
        reg_scaled = np.ldexp(float(reg), -2 * exponent)
        if np.isinf(reg_scaled):
            return (_fix_signs(V) / np.sqrt(reg)).T
        return np.ldexp((_fix_signs(V) / np.sqrt(lam + reg_scaled)).T, -exponent)


def _project(X, components, mean=None):
    """Map the last axis of points or pairs through ``components``, keeping X's dtype."""
    flat = X.reshape(-1, X.shape[-1])
    if mean is not None:
        flat = flat - mean.astype(X.dtype, copy=False)
    Z = flat @ components.astype(X.dtype, copy=False).T
    return Z.reshape(X.shape[:-1] + (components.shape[0],))


class _Whitener(PointOutputMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                BaseEstimator):
    """Shared parameters, validation and tags of :class:`WPCA` and :class:`WCCN`."""

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None), None],
        "reg": [Interval(Real, 0, None)],
    }

    def __init__(self, n_components=None, reg=0.0):
        self.n_components = n_components
        self.reg = reg

    @property
    def _n_features_out(self):
        """Number of output features: ``get_feature_names_out`` gives 'wpca0', 'wpca1', ..."""
        return self.n_components_

    def _check_n_components(self, limit, what):
        if self.n_components is not None and self.n_components > limit:
            raise ValueError(f"n_components={self.n_components} must be <= {what}={limit}.")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


def _top_eigenpairs(Xc, k, solver="auto"):
    """The k largest eigenpairs of the covariance ``Xc^T Xc / (n - 1)`` of centred data.

    ``solver="eigh"`` (the "auto" choice when n >= d) hands the d x d covariance to
    ``scipy.linalg.eigh`` restricted to the top k (``subset_by_index``). ``"gram"`` (the
    "auto" choice when n < d, as for high-dimensional face descriptors) does the same on the
    n x n Gram matrix ``Xc Xc^T = U S^2 U^T``: the covariance's eigenvectors are
    ``V = Xc^T U S^{-1}`` with eigenvalues ``s^2 / (n - 1)``; one GEMM and a partial
    eigendecomposition, about 6x faster than ``"svd"``, the thin SVD ``Xc = U S V^T``.
    Returns eigenvalues (descending) and eigenvectors (d, k).
    """
    n, d = Xc.shape
    if solver == "auto":
        solver = "eigh" if n >= d else "gram"
    if solver == "svd":
        _, s, Vt = linalg.svd(Xc, full_matrices=False, overwrite_a=True)
        return s[:k] ** 2 / (n - 1), Vt[:k].T
    gram = solver == "gram"
    C = Xc @ Xc.T if gram else Xc.T @ Xc
    m = C.shape[0]
    lam, V = linalg.eigh(C, subset_by_index=[m - k, m - 1], overwrite_a=True)
    lam, V = lam[::-1], V[:, ::-1]
    if gram:  # V holds U; rows of Xc^T U are s_j v_j
        V = Xc.T @ V
        V /= np.fmax(np.linalg.norm(V, axis=0), np.finfo(V.dtype).tiny)
    return lam / (n - 1), V


class WPCA(_Whitener):
    r"""Whitened principal component analysis (seed 002, section III.C).

    With the sample mean :math:`\mu` and covariance
    :math:`\Sigma = \frac{1}{n-1}\sum_i (x_i-\mu)(x_i-\mu)^T = V \Lambda V^T`, the k leading
    eigenpairs give :math:`W = (\Lambda_k + rI)^{-1/2} V_k^T` and :math:`z = W (x - \mu)`.
    With ``reg=0`` the training data is mapped to zero mean and identity covariance, so large
    (illumination, pose) directions no longer dominate the small discriminative ones.

    Parameters
    ----------
    n_components : int, default=None
        Number k of leading components kept. None keeps ``min(n_samples - 1, n_features)``,
        the largest rank centred data can have. More than ``min(n_samples, n_features)`` is an
        error.
    reg : float, default=0.0
        Added to every eigenvalue before the inverse square root. With 0, a kept eigenvalue
        that is ~0 (beyond the data's numerical rank: a singular value <= the largest x
        max(n_samples, n_features) x eps, as ``numpy.linalg.matrix_rank``) raises
        ``ValueError``.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
    components_ : ndarray of shape (n_components, n_features)
        Rows :math:`v_j^T / \sqrt{\lambda_j + r}`, by decreasing variance; each row's
        largest-magnitude entry is positive.
    explained_variance_ : ndarray of shape (n_components,)
        The eigenvalues :math:`\lambda_j` (unregularised).
    n_components_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in,)
        The column names, when fitted on a DataFrame with string column names.

    Notes
    -----
    ``fit`` accepts points (n, d) or pairs (n, 2, d); pairs are fitted on their 2n vectors
    and ``y`` is ignored. With n >= d the covariance is eigendecomposed
    (``scipy.linalg.eigh`` with ``subset_by_index``), else its n x n Gram matrix is: both
    cost about O(n d min(n, d)).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import WPCA
    >>> X = np.random.RandomState(0).randn(50, 5)
    >>> Z = WPCA(n_components=3).fit_transform(X)
    >>> Z.shape, np.allclose(np.cov(Z, rowvar=False), np.eye(3))
    ((50, 3), True)

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """

    def fit(self, X, y=None):
        """Fit on points (n_samples, n_features) or pairs (n_pairs, 2, n_features).

        Returns
        -------
        self : WPCA
        """
        validate_params(self)
        xp, dispatched = namespace(X, names=["X"])
        if dispatched:
            return fit_wpca(self, X, xp)
        X = check_transformer_input(self, X, reset=True)
        X = X.reshape(-1, X.shape[-1])
        n, d = X.shape
        if n < 2:
            raise ValueError(f"WPCA needs at least 2 samples for a covariance, got {n} sample.")
        self._check_n_components(min(n, d), "min(n_samples, n_features)")
        k = self.n_components or min(n - 1, d)
        largest = largest_magnitude(X)
        e = scale_exponent(largest)  # 0 (bit-identical) unless |X| is beyond ~1e+-77
        Xc, mean = _centred(X, e)
        lam, V = _top_eigenpairs(Xc, k)
        if lam[-1] < _ILL_CONDITIONED * lam[0]:  # badly scaled or rank-deficient: exact SVD
            lam, V = _top_eigenpairs(Xc, k, solver="svd")
        advice = "Lower n_components (the data has rank < n_components) or set reg > 0."
        components = _whitening_rows(lam, V, lam[0], self.reg, advice, _rank_rtol(n, d), e)
        self.explained_variance_ = check_representable(
            np.maximum(lam, 0.0), X.dtype, "its variances (explained_variance_)", largest,
            exponent=2 * e)
        self.components_ = check_representable(
            components, X.dtype, "the whitening rows (components_)", largest)
        self.mean_ = np.ldexp(mean, e).astype(X.dtype)
        self.n_components_ = k
        return self

    def transform(self, X):
        """Whiten points (n, d) -> (n, k) or pairs (n, 2, d) -> (n, 2, k).

        Computes :math:`(X - \\mu) W^T` with the input's dtype.
        """
        check_is_fitted(self)
        if (Z := transform_fitted(self, X, "mean_")) is not None:
            return Z
        Z = _project(check_transformer_input(self, X, reset=False), self.components_, self.mean_)
        return self._wrap_output(Z, X)


#: Fixed work units of the O(n d) steps: rows per block, classes per block.
_ROWS, _CLASSES = 1024, 128


def _centred(X, e):
    """(X - mean, mean) in float64 of X rescaled by ``2**-e``: a fresh array, centred in
    place (for e = 0 the mean is X's own float64 mean, bit for bit as before)."""
    if e:
        Xc = np.ldexp(X.astype(np.float64), -e)
        mean = Xc.mean(axis=0)
    else:
        mean = X.mean(axis=0, dtype=np.float64)
        Xc = np.empty(X.shape)
    source = Xc if e else X

    def centre(rows):  # elementwise: the same bits on any number of threads
        Xc[rows] = source[rows] - mean

    map_blocks(centre, X.shape[0], _ROWS)
    return Xc, mean


def _class_deviations(X, y):
    r"""Rows :math:`z` with :math:`\sum z z^T` = eq. (12) for points ``X`` and class labels ``y``.

    Row j of class i is :math:`(x_{ij} - \mu_i) / \sqrt{t\, m_i}`; classes with one sample are
    dropped (they carry no within-class information) and do not count in t.
    """
    y = check_identity_labels(y, "y", n_samples=X.shape[0])
    _, inv, counts = np.unique(y, return_inverse=True, return_counts=True)
    keep = counts[inv] >= 2
    if not keep.any():
        raise ValueError(
            "WCCN needs at least one class with 2 or more samples (singleton classes carry no "
            f"within-class information); got {X.shape[0]} sample(s) in {counts.size} class(es)."
        )
    _, inv, counts = np.unique(inv[keep], return_inverse=True, return_counts=True)
    X = X[keep]
    order = np.argsort(inv, kind="stable")
    ends = np.cumsum(counts)
    starts = ends - counts

    def class_sums(classes):  # a block of classes: their rows are contiguous in `order`
        rows = order[starts[classes.start]:ends[classes.stop - 1]]
        return np.add.reduceat(X[rows], starts[classes] - starts[classes.start], axis=0)

    means = np.concatenate(map_blocks(class_sums, counts.size, _CLASSES)) / counts[:, None]
    scale = np.sqrt(counts.size * counts[inv])
    Z = np.empty(X.shape)

    def deviations(rows):
        Z[rows] = (X[rows] - means[inv[rows]]) / scale[rows, None]

    map_blocks(deviations, X.shape[0], _ROWS)
    return Z


def _difference_scatter(pairs, e):
    """``(sum (x - y)(x - y)^T, largest |x - y|)`` over the pairs, the differences rescaled
    by ``2**-e``, accumulated 8192 pairs at a time (vector or index pairs)."""
    d = pairs.shape[2]
    scatter, largest = np.zeros((d, d)), 0.0  # (d, d)
    for delta in pair_differences(pairs, dtype=np.float64):  # (m, d)
        largest = max(largest, largest_magnitude(delta))
        if e:
            delta = np.ldexp(delta, -e)
        with np.errstate(over="ignore", invalid="ignore"):  # a first pass (e = 0) beyond
            scatter += delta.T @ delta  # ~1e+-77 is redone rescaled
    return scatter, largest


def _pair_deviations(P, y):
    r"""Rows :math:`(x - y) / (2\sqrt{t})` over the t similar pairs, each a 2-member class.

    For a class {x, y}: :math:`\mu = (x+y)/2` and
    :math:`\frac12[(x-\mu)(x-\mu)^T + (y-\mu)(y-\mu)^T] = (x-y)(x-y)^T/4`.
    """
    s = check_pair_labels(y, P.shape[0], require_both=False)
    similar = P[s == 1]
    if similar.shape[0] == 0:
        raise ValueError(
            "WCCN on pairs needs at least one similar pair (label +1 or 1): each similar pair "
            "is a class of its own and dissimilar pairs are ignored."
        )
    return (similar[:, 0] - similar[:, 1]) / (2.0 * np.sqrt(similar.shape[0]))


class WCCN(_Whitener):
    r"""Within-class covariance normalisation (seed 002, section III.D, eq. 12-13).

    The within-class covariance over the t classes (eq. 12),

    .. math:: C = \frac{1}{t}\sum_{i=1}^{t} \frac{1}{m_i}\sum_{j=1}^{m_i}
              (x_{ij}-\mu_i)(x_{ij}-\mu_i)^T = V \mathrm{diag}(\lambda) V^T,

    is normalised by :math:`W = \mathrm{diag}(\lambda + r)^{-1/2} V^T`, so that
    :math:`W^T W = C^{-1}` and :math:`W C W^T = I` (for r = 0): the within-class scatter of
    :math:`z = W x` is isotropic with unit variance.

    .. note:: Eq. 13 of seed 002 prints :math:`W = \mathrm{diag}(\lambda_1..\lambda_k) V^T`,
       which scales by the variances instead of normalising them (:math:`W C W^T =
       \mathrm{diag}(\lambda^3)`). This class implements the inverse square root, the
       normalisation of Hatch & Stolcke (2006) and Barkan et al. (ICCV 2013) cited there.

    Parameters
    ----------
    n_components : int, default=None
        None keeps all n_features directions, as the paper does. An int k < n_features keeps
        the k directions of *smallest* within-class variance: after WPCA the total covariance
        is I = between + within, so along an eigenvector of C the between- to within-class
        variance ratio is about :math:`(1 - \lambda)/\lambda`; the smallest :math:`\lambda`
        are the most discriminative directions.
    reg : float, default=0.0
        Added to every eigenvalue of C. With 0, a singular C (beyond the numerical rank of the
        within-class deviations, as for WPCA; the
        largest, e.g. fewer within-class samples than features) raises ``ValueError``.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        :math:`W`, rows ordered by increasing within-class variance; each row's
        largest-magnitude entry is positive.
    eigenvalues_ : ndarray of shape (n_components,)
        The within-class variances :math:`\lambda` of the kept directions (increasing).
    n_components_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in,)
        The column names, when fitted on a DataFrame with string column names.

    Notes
    -----
    ``fit(X, y)`` takes points (n, d) with class labels y (any hashable values); classes with
    a single sample are ignored. ``fit(pairs, y)`` takes pairs (n, 2, d) with pair labels
    (+1/-1 or 1/0, 1 = similar); each similar pair is a class of its own (seed 002, III.D)
    and dissimilar pairs are ignored. ``transform`` does not centre: the downstream score is
    the cosine :math:`\cos(Wx, Wy)`.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import WCCN
    >>> rng = np.random.RandomState(0)
    >>> X, labels = rng.randn(60, 4), np.repeat(np.arange(12), 5)   # 12 classes of 5
    >>> wccn = WCCN().fit(X, labels)
    >>> W = wccn.components_
    >>> deviations = X - np.array([X[labels == c].mean(0) for c in labels])
    >>> C = deviations.T @ deviations / len(X)        # eq. 12 (equal class sizes)
    >>> np.allclose(W @ C @ W.T, np.eye(4))           # the within-class scatter becomes I
    True

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """

    def fit(self, X, y=None):
        """Fit on points with class labels, or on pairs with pair labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_pairs, 2, n_features), or IndexPairs
            Points, vector pairs, or :class:`~metricfit.pairs.IndexPairs` (index pairs into
            their points, as :meth:`fit_index_pairs`).
        y : array-like of shape (n_samples,) or (n_pairs,)
            Class labels of the points, or pair labels (1 = similar).

        Returns
        -------
        self : WCCN
        """
        if isinstance(X, IndexPairs):
            return self.fit_index_pairs(X.points, X.index, y)
        validate_params(self)
        xp, dispatched = namespace(X, names=["X"])
        if dispatched:
            return fit_wccn(self, X, y, xp)
        if y is None:
            raise ValueError("WCCN requires y to be passed, but the target y is None.")
        X = check_transformer_input(self, X, reset=True)
        d = X.shape[-1]
        self._check_n_components(d, "n_features")
        largest = largest_magnitude(X)
        e = scale_exponent(largest)  # 0 (bit-identical) unless |X| is beyond ~1e+-77
        X64 = np.ldexp(X.astype(np.float64), -e) if e else X.astype(np.float64)
        Z = _class_deviations(X64, y) if X.ndim == 2 else _pair_deviations(X64, y)
        return self._fit_scatter(Z.T @ Z, X.dtype, Z, e, largest)

    def fit_index_pairs(self, points, index, y):
        """Fit on index pairs into ``points``: ``fit(pairs, y)`` for the pairs
        ``(points[index[:, 0]], points[index[:, 1]])``, each similar pair a class.

        The scatter ``sum (x - y)(x - y)^T / (4 t)`` over the t similar pairs is accumulated
        from the differences of 8192 similar pairs at a time (the only gather of pair
        vectors: O(8192 d) memory), so no (n_pairs, 2, d) array is formed.

        Parameters
        ----------
        points : array-like of shape (n_points, n_features)
            In memory, a memmap or a Dask array.
        index : array-like of shape (n_pairs, 2), integer
        y : array-like of shape (n_pairs,), pair labels (1 = similar)

        Returns
        -------
        self : WCCN
        """
        validate_params(self)
        pairs = check_pair_input(index, points)
        s = check_pair_labels(y, len(pairs), require_both=False)
        similar = np.flatnonzero(s == 1)
        if similar.size == 0:
            raise ValueError("WCCN on pairs needs at least one similar pair (label +1 or 1).")
        self.n_features_in_ = d = pairs.shape[2]
        self._check_n_components(d, "n_features")
        scatter, largest = _difference_scatter(pairs[similar], 0)
        e = scale_exponent(largest)
        if e:  # differences beyond ~1e+-77: a second pass, rescaled by 2**-e
            scatter, _ = _difference_scatter(pairs[similar], e)
        return self._fit_scatter(scatter / (4.0 * similar.size), pairs.dtype, None, e,
                                 largest, name="points")

    def _fit_scatter(self, scatter, dtype, Z=None, e=0, largest=0.0, name="X"):
        """Eigendecompose the within-class scatter (d, d) of eq. 12 (``Z^T Z`` when the
        deviations Z are given: then badly conditioned scatters are taken from Z's SVD, exact
        to eps relative to the largest); set the attributes. The scatter may be of data
        rescaled by ``2**-e`` (the attributes are in the data's units; ``largest`` is its
        largest |entry|, ``name`` the argument named when they cannot be stored)."""
        d = scatter.shape[0]
        lam, V = linalg.eigh(scatter, overwrite_a=True, check_finite=False)  # ascending
        if Z is not None and lam[0] < _ILL_CONDITIONED * lam[-1]:
            _, sv, Vt = linalg.svd(Z, full_matrices=True)
            sv = np.concatenate([sv, np.zeros(d - sv.size)])  # fewer rows than features
            lam, V = sv[::-1] ** 2, Vt[::-1].T
        k = self.n_components or d
        n = d if Z is None else Z.shape[0]
        advice = "Use more within-class samples (sum of m_i - 1 >= n_features), or set reg > 0."
        components = _whitening_rows(lam[:k], V[:, :k], lam[-1], self.reg, advice,
                                     _rank_rtol(n, d), e)
        self.eigenvalues_ = check_representable(
            np.maximum(lam[:k], 0.0), dtype, "its within-class variances (eigenvalues_)",
            largest, name, exponent=2 * e)
        self.components_ = check_representable(
            components, dtype, "the normalising rows (components_)", largest, name)
        self.n_components_ = k
        return self

    def transform(self, X):
        """Map points (n, d) -> (n, k) or pairs (n, 2, d) -> (n, 2, k) as :math:`X W^T`."""
        check_is_fitted(self)
        if (Z := transform_fitted(self, X)) is not None:
            return Z
        Z = _project(check_transformer_input(self, X, reset=False), self.components_)
        return self._wrap_output(Z, X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
