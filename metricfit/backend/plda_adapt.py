r"""Kaldi's unsupervised PLDA adaptation: a two-covariance model moved towards unlabelled
in-domain data (Kaldi ``ivector/plda.cc``, ``PldaUnsupervisedAdaptor::UpdatePlda``).

**Kaldi's steps.** A model ``(B, W, mu)`` (between- and within-class covariance, mean) and n
unlabelled adaptation points with mean ``m_a`` and covariance ``C_a = (1/n) sum_i (x_i -
m_a)(x_i - m_a)^T`` (the biased estimate, weights 1)::

    C   = C_a + mean_diff_scale (m_a - mu)(m_a - mu)^T,        mu_new = m_a.

With the PLDA basis ``(T, psi)`` of the model (``T W T^T = I``, ``T B T^T = diag(psi)``,
:func:`.plda.plda_basis`), ``T_mod = diag(1 / sqrt(1 + psi)) T`` takes the model's total
covariance ``S = B + W`` to I; there ``W' = diag(1 / (1 + psi))``, ``B' = diag(psi / (1 +
psi))``. Diagonalise the adaptation covariance there, ``T_mod C T_mod^T = P diag(s) P^T``
(P orthogonal), and rotate by ``P^T``: with ``A = P^T T_mod``::

    A S A^T = I,    A C A^T = diag(s),    W_p = A W A^T = P^T W' P,    B_p = A B A^T = P^T B' P.

In each direction i where the data vary more than the model allows (``s_i > 1``) the excess
is shared between the two covariances::

    W_p[i, i] += within_covar_scale  (s_i - 1),       B_p[i, i] += between_covar_scale (s_i - 1),

and the model goes back to the original space, ``W_new = A^-1 W_p A^-T``, ``B_new = A^-1 B_p
A^-T`` (Kaldi then re-diagonalises ``(B_new, W_new)``; :class:`metricfit.PLDA` does that
through :func:`.plda.plda_basis` as after ``fit``).

**A basis-free form (what this module computes).** The columns ``a_i`` of ``A^T`` solve the
generalised symmetric eigenproblem ``C a_i = s_i S a_i`` with ``a_i^T S a_i = 1``, and ``A^-1
= S A^T`` (from ``A S A^T = I``). Since only diagonal entries change::

    W_new = W + within_covar_scale  sum_{s_i > 1} (s_i - 1) g_i g_i^T,      g_i = S a_i,
    B_new = B + between_covar_scale sum_{s_i > 1} (s_i - 1) g_i g_i^T.

Because ``C = S A^T diag(s) A S = sum_i s_i g_i g_i^T`` and ``S = sum_i g_i g_i^T``, the sum
is the part of ``C - S`` where the adaptation data exceed the model, ``(C - S)_+``, taken in
the S-metric: the adapted total covariance is ``S + (within_covar_scale +
between_covar_scale) (C - S)_+``; with Kaldi's scales (0.3 + 0.7 = 1) it is, in the adapted
space, ``diag(max(s, 1))``. Directions where the data vary less than the model (``s_i <=
1``) are left alone (Kaldi's commented-out shrinking is not done).

No inverse and no choice of basis enter: one ``eigh(C, S)`` (S is positive definite when W
is), and the result does not depend on which whitening of S is used. Hence **affine
equivariance**: for ``x -> M x + c`` (M invertible), B, W, C, S go to ``M (.) M^T``, the
``s_i`` are unchanged, ``a_i -> M^-T a_i`` and ``g_i -> M g_i``, so ``(B_new, W_new,
mu_new)`` go to ``(M B_new M^T, M W_new M^T, M mu_new + c)``. (Equal ``s_i`` leave the
eigenvectors free within their eigenspace, but the sum over it is ``(s - 1)`` times the
S-orthogonal projector's image, which is basis-free.)
"""

import numpy as np
from scipy import linalg

from ..parallel import blas_threads
from .plda import SMALL_LAPACK

__all__ = ["adapt_two_covariance", "KALDI_ADAPT_SCALES"]

#: Kaldi's ``PldaUnsupervisedAdaptorConfig`` defaults: ``(mean_diff_scale,
#: within_covar_scale, between_covar_scale)``.
KALDI_ADAPT_SCALES = (1.0, 0.3, 0.7)


def _check_scales(scales):
    for name, value in scales.items():
        if not (np.isscalar(value) and np.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")


def _check_model(B, W, mean):
    B, W = np.asarray(B, dtype=np.float64), np.asarray(W, dtype=np.float64)
    mean = np.asarray(mean, dtype=np.float64)
    d = mean.shape[0] if mean.ndim == 1 else -1
    for name, C in (("B", B), ("W", W)):
        if C.shape != (d, d) or not np.all(np.isfinite(C)):
            raise ValueError(f"{name} must be a finite ({d}, {d}) matrix matching mean of "
                             f"shape ({d},), got shape {C.shape}.")
    if not np.all(np.isfinite(mean)):
        raise ValueError("mean contains NaN or infinity.")
    return B, W, mean


def _check_adaptation_points(X, d):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != d:
        raise ValueError(f"X (the adaptation points) must have shape (n_samples, {d}), got "
                         f"{X.shape}.")
    if X.shape[0] < 2:
        raise ValueError(f"X (the adaptation points) needs at least 2 points to give a "
                         f"covariance, got {X.shape[0]}.")
    if not np.all(np.isfinite(X)):
        raise ValueError("X (the adaptation points) contains NaN or infinity.")
    return X


def adaptation_covariance(X, mean, mean_diff_scale):
    """``(C, m_a)``: the biased covariance of X about its mean ``m_a``, plus
    ``mean_diff_scale (m_a - mean)(m_a - mean)^T`` (Kaldi's ``variance``)."""
    m_a = X.mean(axis=0)
    R = X - m_a
    diff = m_a - mean
    return R.T @ R / X.shape[0] + mean_diff_scale * np.outer(diff, diff), m_a


def adapt_two_covariance(B, W, mean, X, mean_diff_scale=1.0, within_covar_scale=0.3,
                         between_covar_scale=0.7):
    """Kaldi's unsupervised adaptation of a two-covariance PLDA model to unlabelled points.

    See the module docstring for Kaldi's steps and the basis-free form computed here.

    Parameters
    ----------
    B, W : array-like of shape (d, d)
        Between- and within-class covariances of the model (W positive definite).
    mean : array-like of shape (d,)
        The model's mean.
    X : array-like of shape (n_samples, d)
        Unlabelled adaptation points, n_samples >= 2.
    mean_diff_scale, within_covar_scale, between_covar_scale : float >= 0
        Kaldi's defaults 1.0, 0.3, 0.7.

    Returns
    -------
    B_new, W_new : ndarray of shape (d, d)
    mean_new : ndarray of shape (d,)
        The mean of X.

    Examples
    --------
    A model with S = B + W = I, and data with variance 3 along the first axis: the excess
    2 is split 0.3 / 0.7 between W and B; the second axis (variance 1) is unchanged:

    >>> import numpy as np
    >>> from metricfit.backend import adapt_two_covariance
    >>> B, W = np.diag([0.5, 0.5]), np.diag([0.5, 0.5])
    >>> X = np.array([[-3.0, -1], [-3, 1], [3, -1], [3, 1]]) / np.array([np.sqrt(3), 1])
    >>> B_new, W_new, mean_new = adapt_two_covariance(B, W, np.zeros(2), X)
    >>> np.round(np.diag(W_new), 3), np.round(np.diag(B_new), 3), mean_new
    (array([1.1, 0.5]), array([1.9, 0.5]), array([0., 0.]))
    """
    B, W, mean = _check_model(B, W, mean)
    X = _check_adaptation_points(X, mean.shape[0])
    _check_scales(dict(mean_diff_scale=mean_diff_scale, within_covar_scale=within_covar_scale,
                       between_covar_scale=between_covar_scale))
    C, m_a = adaptation_covariance(X, mean, mean_diff_scale)
    S = B + W
    with blas_threads(1 if S.shape[0] <= SMALL_LAPACK else None):
        s, vecs = linalg.eigh(C, S)  # vecs^T S vecs = I, vecs^T C vecs = diag(s)
    up = s > 1.0
    G = S @ vecs[:, up]  # g_i = S a_i
    excess = (G * (s[up] - 1.0)) @ G.T  # (C - S)_+ in the S-metric
    excess = 0.5 * (excess + excess.T)
    return B + between_covar_scale * excess, W + within_covar_scale * excess, m_a
