r"""RCA: Relevant Components Analysis (Bar-Hillel, Hertz, Shental and Weinshall 2005), closed
form, from chunklets (groups of points known to share a class, the class unknown).

With the chunklets :math:`H_j` (:math:`n_j` points, mean :math:`m_j`) holding N points in
all, the within-chunklet covariance (the paper's eq. 2, Algorithm 1 step 2)

.. math:: \hat C = \frac{1}{N} \sum_j \sum_{x \in H_j} (x - m_j)(x - m_j)^T

is whitened: :math:`W = \hat C^{-1/2}` (step 3), the Mahalanobis metric :math:`M = \hat
C^{-1}`. With ``n_components < n_features``, Fisher's criterion first keeps the directions
of least within-chunklet to total variance (step 1, the generalised eigenproblem
:math:`\hat C a = \lambda S_T a`, smallest :math:`\lambda`), then whitens :math:`\hat C`
within them.
"""

from numbers import Integral

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator

from .._validation import Interval, validate_params
from ..pairs.tuples import check_chunks, sample_chunks
from ._base import PairLearnerMixin
from ._mahalanobis import MahalanobisMixin

RANK_RTOL = 1e-10  # eigenvalues below rtol * largest count as 0 (a singular C)


def chunklet_covariance(X, chunks):
    """The within-chunklet covariance C (d, d), divided by the number of chunked points, and
    that number; points with chunk -1 are left out."""
    X = np.asarray(X, dtype=np.float64)
    inside = chunks >= 0
    Xc, labels = X[inside], chunks[inside]
    _, codes = np.unique(labels, return_inverse=True)
    counts = np.bincount(codes)
    means = np.zeros((counts.size, X.shape[1]))
    np.add.at(means, codes, Xc)
    means /= counts[:, None]
    centred = Xc - means[codes]
    return centred.T @ centred / Xc.shape[0], Xc


def inverse_sqrt(C):
    """``C^{-1/2}`` of a symmetric PSD C on its range (eigenvalues below ``RANK_RTOL`` times
    the largest are dropped: the pseudo-inverse square root)."""
    w, V = np.linalg.eigh(0.5 * (C + C.T))
    keep = w > RANK_RTOL * max(w.max(), np.finfo(float).tiny)
    return (V[:, keep] / np.sqrt(w[keep])) @ V[:, keep].T


class RCA(MahalanobisMixin, PairLearnerMixin, BaseEstimator):
    r"""Relevant Components Analysis from chunklets: whitening by the within-chunklet
    covariance, :math:`M = \hat C^{-1}` (Bar-Hillel et al. 2005, Algorithm 1).

    ``fit(X, chunks)``: ``chunks[i] = c >= 0`` puts point i in chunklet c, -1 in none
    (:func:`metricfit.pairs.sample_chunks` draws them from labels; :class:`RCA_Supervised`
    does it for you).

    Parameters
    ----------
    n_components : int, default=None
        None: all n_features (``components_ = C^{-1/2}``); fewer: the Fisher step first.
    preprocessor : array-like of shape (n_points, n_features), default=None

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    threshold_ : float
        On :meth:`pair_score`, calibrated on pairs of chunked points: pairs within a
        chunklet similar, pairs of two chunklets dissimilar (the chunklets' own supervision;
        chunklets drawn from one class each are mostly of different classes).
    classes_ : ndarray, [-1, 1]
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.learners import RCA
    >>> from metricfit.pairs import sample_chunks
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1, 2], 20)
    >>> X = np.c_[3 * y + rng.normal(size=60), 0.1 * rng.normal(size=60)]
    >>> chunks = sample_chunks(y, n_chunks=15, chunk_size=3, random_state=0)
    >>> M = RCA().fit(X, chunks).get_mahalanobis_matrix()
    >>> bool(M[1, 1] > 10 * M[0, 0])  # within-chunklet noise is whitened away
    True

    References
    ----------
    - A. Bar-Hillel, T. Hertz, N. Shental and D. Weinshall, "Learning a Mahalanobis Metric
      from Equivalence Constraints", JMLR 6 (2005) 937-965.
    """

    _pair_input = "points"
    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None), None],
        "preprocessor": ["array-like", None],
    }

    def __init__(self, n_components=None, *, preprocessor=None):
        self.n_components = n_components
        self.preprocessor = preprocessor

    def fit(self, X, chunks):
        """Learn the whitening of the within-chunklet covariance.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        chunks : array-like of shape (n_samples,), int
            Chunklet of each point, -1 for none (one chunklet of two points at least).

        Returns
        -------
        self
        """
        validate_params(self)
        X = self._check_fit_points(X)
        chunks = check_chunks(chunks, X.shape[0])
        self._fit_chunks(X, chunks)
        inside = np.flatnonzero(chunks >= 0)
        return self._calibrate_on_labels(X[inside], np.unique(chunks[inside],
                                                               return_inverse=True)[1])

    def _fit_chunks(self, X, chunks):
        d = X.shape[1]
        dim = d if self.n_components is None else self.n_components
        if dim > d:
            raise ValueError(f"n_components={dim} must be at most n_features={d}.")
        C, Xc = chunklet_covariance(X, chunks)
        if dim < d:  # step 1: Fisher's directions of least within / total variance
            total = np.atleast_2d(np.cov(Xc, rowvar=False))
            total += 1e-10 * max(np.trace(total) / d, np.finfo(float).tiny) * np.eye(d)
            _, A = linalg.eigh(C, total, subset_by_index=(0, dim - 1))  # (d, dim)
            L = inverse_sqrt(A.T @ C @ A) @ A.T
        else:
            L = inverse_sqrt(C)
        self.components_ = L.astype(X.dtype)


class RCA_Supervised(RCA):
    """RCA from class labels: ``n_chunks`` chunklets of ``chunk_size`` points drawn from the
    classes (:func:`metricfit.pairs.sample_chunks`), then :class:`RCA`; ``threshold_`` is
    calibrated on the labels.

    Parameters
    ----------
    n_components : int, default=None
    n_chunks : int, default=100
    chunk_size : int, default=2
    random_state : None, int or RandomState, default=None
        The draw of the chunklets.
    preprocessor : array-like, default=None

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.learners import RCA_Supervised
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1, 2], 20)
    >>> X = np.c_[3 * y + rng.normal(size=60), 0.1 * rng.normal(size=60)]
    >>> est = RCA_Supervised(n_chunks=20, random_state=0).fit(X, y)
    >>> est.components_.shape
    (2, 2)
    """

    _parameter_constraints = {
        **RCA._parameter_constraints,
        "n_chunks": [Interval(Integral, 1, None)],
        "chunk_size": [Interval(Integral, 2, None)],
        "random_state": ["random_state"],
    }

    def __init__(self, n_components=None, *, n_chunks=100, chunk_size=2, random_state=None,
                 preprocessor=None):
        super().__init__(n_components, preprocessor=preprocessor)
        self.n_chunks = n_chunks
        self.chunk_size = chunk_size
        self.random_state = random_state

    def fit(self, X, y):
        """Draw chunklets from the class labels y, learn RCA, calibrate ``threshold_`` on y.

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
        chunks = sample_chunks(y, self.n_chunks, self.chunk_size, self.random_state)
        self._fit_chunks(X, chunks)
        return self._calibrate_on_labels(X, y)
