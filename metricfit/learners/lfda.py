r"""LFDA: Local Fisher Discriminant Analysis (Sugiyama 2007), closed form.

Local scaling affinities within each class (eq. 4 with Zelnik-Manor and Perona's
:math:`\sigma_i`), the local within- and between-class scatter matrices (eqs. 9-12), and the
generalised eigenproblem :math:`S^{(lb)} \varphi = \lambda S^{(lw)} \varphi` (eq. 13). The
affinity is summed class by class in blocks of rows: memory O(b n_c), never n x n (nor
n_c x n_c for a large class).
"""

import warnings
from numbers import Integral

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator

from .._validation import Interval, StrOptions, user_stacklevel, validate_params
from ..pairs.checks import identity_codes
from ._base import PairLearnerMixin
from ._mahalanobis import MahalanobisMixin

BLOCK_BYTES = 2 ** 25  # a (b, n_c) block of affinities: about 32 MiB


def _blocks(n_rows, n_cols):
    step = max(1, BLOCK_BYTES // (8 * max(n_cols, 1)))
    return [slice(s, min(s + step, n_rows)) for s in range(0, n_rows, step)]


def _squared_distances(A, B, sq_A, sq_B):
    D = A @ B.T
    D *= -2
    D += sq_A[:, None]
    D += sq_B[None, :]
    return np.maximum(D, 0, out=D)


def local_scatter(X, codes, k):
    r"""The local within- and between-class scatter matrices (d, d) of eqs. 9-12.

    With the affinity :math:`A_{ij} = \exp(-\|x_i - x_j\|^2 / (\sigma_i \sigma_j))` between
    points of one class (:math:`\sigma_i` the distance of :math:`x_i` to its k-th nearest
    neighbour in its class; 0 affinity where :math:`\sigma_i \sigma_j = 0`, metric-learn's
    convention) and the weights (eqs. 11-12)

    .. math::

        W^{(lw)}_{ij} = A_{ij} / n_c, \qquad
        W^{(lb)}_{ij} = A_{ij} (1/n - 1/n_c) \ (\text{same class } c), \quad 1/n
        \ (\text{otherwise}),

    :math:`S = \frac{1}{2} \sum_{ij} W_{ij} (x_i - x_j)(x_i - x_j)^T`. For a symmetric W,
    :math:`\frac{1}{2} \sum_{ij} W_{ij} (x_i - x_j)(x_i - x_j)^T = X^T (\operatorname{diag}(W
    1) - W) X`. Per class, with :math:`G_c = X_c^T (\operatorname{diag}(A 1) - A) X_c`
    (summed over blocks of rows),

    .. math::

        S^{(lw)} = \sum_c G_c / n_c, \qquad
        S^{(lb)} = \underbrace{X^T (\operatorname{diag}(\tfrac{1}{n} \mathbf{1}_n\!\cdot\!n)
            - \tfrac{1}{n} \mathbf{1}\mathbf{1}^T) X}_{\text{all pairs at } 1/n}
            - \sum_c \Big[\tfrac{1}{n}\big(n_c X_c^T X_c - s_c s_c^T\big)
            - \big(\tfrac{1}{n} - \tfrac{1}{n_c}\big) G_c\Big]

    (:math:`s_c = X_c^T \mathbf{1}`): the between weights are 1/n on every pair, corrected
    on the within-class pairs, where ``1/n`` is replaced by ``A_ij (1/n - 1/n_c)``. The first
    term is :math:`n \Sigma` with the biased covariance Sigma (``X^T X - s s^T / n``).
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    s_all = X.sum(axis=0)
    S_b = X.T @ X - np.outer(s_all, s_all) / n  # all pairs at weight 1/n
    S_w = np.zeros((d, d))
    for c in np.unique(codes):
        Xc = X[codes == c]
        nc = Xc.shape[0]
        G = _class_affinity_scatter(Xc, k)
        s_c = Xc.sum(axis=0)
        S_w += G / nc
        S_b -= (nc * (Xc.T @ Xc) - np.outer(s_c, s_c)) / n  # within pairs at 1/n removed
        S_b += (1.0 / n - 1.0 / nc) * G  # ... replaced by A_ij (1/n - 1/n_c)
    return 0.5 * (S_w + S_w.T), 0.5 * (S_b + S_b.T)


def _class_affinity_scatter(Xc, k):
    """``G_c = X_c^T (diag(A 1) - A) X_c`` of one class's local-scaling affinity A, in blocks
    of rows (two passes: the k-th neighbour distances sigma, then A)."""
    nc, d = Xc.shape
    if nc < 2:
        return np.zeros((d, d))
    kk = min(k, nc - 1)
    sq = np.einsum("ij,ij->i", Xc, Xc)
    sigma = np.empty(nc)
    for rows in _blocks(nc, nc):
        D = _squared_distances(Xc[rows], Xc, sq[rows], sq)
        # the k-th nearest other point: the point itself is at distance 0, position 0
        sigma[rows] = np.sqrt(np.partition(D, kk, axis=1)[:, kk])
    degree = np.zeros(nc)
    AX = np.empty((nc, d))
    for rows in _blocks(nc, nc):
        D = _squared_distances(Xc[rows], Xc, sq[rows], sq)
        scale = sigma[rows, None] * sigma[None, :]
        with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
            A = np.exp(-D / scale)
        A[scale == 0] = 0.0
        degree[rows] = A.sum(axis=1)
        AX[rows] = A @ Xc
    return (Xc.T * degree) @ Xc - Xc.T @ AX


class LFDA(MahalanobisMixin, PairLearnerMixin, BaseEstimator):
    r"""Local Fisher Discriminant Analysis (Sugiyama 2007): Fisher's criterion on local
    scatter matrices, so that multimodal classes keep their modes apart-but-close.

    Solves :math:`S^{(lb)} \varphi = \lambda S^{(lw)} \varphi` (eq. 13) for the
    ``n_components`` largest :math:`\lambda` (:func:`local_scatter`: local-scaling
    affinities within classes, eqs. 9-12); ``components_`` holds the eigenvectors as rows,
    scaled by :math:`\sqrt{\lambda}` ('weighted', the paper's and metric-learn's default),
    orthonormalised ('orthonormalized') or as they come ('plain').

    Parameters
    ----------
    n_components : int, default=None
        Dimensions kept (None: n_features).
    k : int, default=None
        The neighbour whose distance is the local scale :math:`\sigma_i` (None:
        ``min(7, n_features - 1)``, metric-learn's default; the paper's k = 7).
    embedding_type : {'weighted', 'orthonormalized', 'plain'}, default='weighted'
    preprocessor : array-like of shape (n_points, n_features), default=None

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    eigenvalues_ : ndarray of shape (n_components,)
        The generalised eigenvalues kept, largest first.
    threshold_ : float
    classes_ : ndarray, [-1, 1]
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.learners import LFDA
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 30)
    >>> X = np.c_[2 * y + 0.3 * rng.normal(size=60), 3 * rng.normal(size=60)]
    >>> L = LFDA(n_components=1, k=5).fit(X, y).components_
    >>> bool(abs(L[0, 0]) > 10 * abs(L[0, 1]))  # the class axis
    True

    References
    ----------
    - M. Sugiyama, "Dimensionality Reduction of Multimodal Labeled Data by Local Fisher
      Discriminant Analysis", JMLR 8 (2007) 1027-1061.
    """

    _pair_input = "points"
    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None), None],
        "k": [Interval(Integral, 1, None), None],
        "embedding_type": [StrOptions({"weighted", "orthonormalized", "plain"})],
        "preprocessor": ["array-like", None],
    }

    def __init__(self, n_components=None, *, k=None, embedding_type="weighted",
                 preprocessor=None):
        self.n_components = n_components
        self.k = k
        self.embedding_type = embedding_type
        self.preprocessor = preprocessor

    def fit(self, X, y):
        """Solve LFDA's eigenproblem on points with class labels; calibrate ``threshold_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        validate_params(self)
        X = self._check_fit_points(X)
        _, codes = identity_codes(y, "y", X.shape[0], min_identities=2)
        n, d = X.shape
        dim = d if self.n_components is None else self.n_components
        if dim > d:
            raise ValueError(f"n_components={dim} must be at most n_features={d}.")
        k = min(7, max(d - 1, 1)) if self.k is None else self.k
        S_w, S_b = local_scatter(X, codes, k)
        vals, vecs = _generalised_eigh(S_b, S_w, dim)
        if self.embedding_type == "weighted":
            vecs = vecs * np.sqrt(np.clip(vals, 0, None))
        elif self.embedding_type == "orthonormalized":
            vecs, _ = np.linalg.qr(vecs)
        self.components_ = vecs.T.astype(X.dtype)
        self.eigenvalues_ = vals
        return self._calibrate_on_labels(X, codes.astype(np.int64))


def _generalised_eigh(S_b, S_w, dim):
    """The ``dim`` largest generalised eigenpairs of ``S_b v = lambda S_w v``, largest first.

    A singular (or numerically singular: condition number above 1e10) S_w gets a ridge of
    1e-10 of its largest eigenvalue, and a warning."""
    d = S_w.shape[0]
    w = np.linalg.eigvalsh(S_w)
    top = max(float(w[-1]), np.finfo(float).tiny)
    if w[0] <= 1e-10 * top:
        ridge = 1e-10 * top
        warnings.warn("LFDA: the local within-class scatter is singular (collinear features, "
                      f"or classes of one point); a ridge of {ridge:.3g} was added. Remove "
                      "collinear features (e.g. PCA) first.", UserWarning,
                      stacklevel=user_stacklevel())
        S_w = S_w + ridge * np.eye(d)
    vals, vecs = linalg.eigh(S_b, S_w, subset_by_index=(d - dim, d - 1))
    return vals[::-1], vecs[:, ::-1]
