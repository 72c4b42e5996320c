r"""Verification against a Gaussian model of the claimed subject (seed 000, section 4.1).

Each subject c is modelled by the mean ``mu_c`` and covariance ``S_c`` of the embeddings of
its first images (the *model* images). A claim "image x is subject c" gets

.. math::

    p_{genuine} = \mathcal N(G(x);\, \mu_c, \Sigma_c), \qquad
    p_{impostor}(c) = \operatorname{mean}_{x' \text{ impostor for } c}\ p_{genuine}(x'),
    \qquad
    \operatorname{Prob}(genuine) = \frac{p_{genuine}}{p_{genuine} + p_{impostor}}.

Five images in 50 dimensions give a covariance of rank at most 4, so the model uses the
shrunk estimate ``Sigma = (1 - alpha) S + alpha (tr S / k) I`` (``alpha = shrinkage``), which is
positive definite for any alpha in (0, 1].

As in the paper, ``p_impostor`` is the mean density of the impostor claims *being evaluated*
against c (a transductive constant per subject). Everything runs in log space:
``log Prob/(1 - Prob) = log p_genuine - log p_impostor`` is returned as the score, since the
probability itself rounds to exactly 1.0 beyond a log-odds of ~37 and would tie claims that
the log-odds still order. Thresholding Prob at every value and thresholding the log-odds at
every value give the same false-accept / false-reject curve.
"""

import numpy as np
from scipy.special import expit, logsumexp

from ..pairs.checks import rescaled_together

__all__ = ["fit_gaussian", "gaussian_log_density", "gaussian_claims"]


def fit_gaussian(Z, shrinkage=0.5):
    """Mean and shrunk covariance of the rows of Z (n, k); ``shrinkage`` in (0, 1]."""
    Z = np.asarray(Z, dtype=np.float64)
    if not 0 < shrinkage <= 1:
        raise ValueError(f"shrinkage must be in (0, 1], got {shrinkage}.")
    mean = Z.mean(axis=0)  # (k,)
    centred = Z - mean
    S = centred.T @ centred / max(Z.shape[0] - 1, 1)  # (k, k)
    scale = max(np.trace(S) / S.shape[0], np.finfo(np.float64).tiny)
    return mean, (1 - shrinkage) * S + shrinkage * scale * np.eye(S.shape[0])


def gaussian_log_density(Z, mean, cov):
    """``log N(z; mean, cov)`` for each row of Z (n, k), via the Cholesky factor of cov."""
    L = np.linalg.cholesky(cov)
    centred = np.asarray(Z, dtype=np.float64) - mean  # (n, k)
    white = np.linalg.solve(L, centred.T)  # (k, n)
    k = mean.size
    log_det = 2 * np.log(np.diag(L)).sum()
    return -0.5 * (np.einsum("ij,ij->j", white, white) + log_det + k * np.log(2 * np.pi))


def gaussian_claims(Z, subjects, is_model, shrinkage=0.5):
    """Score every claim "probe image x is subject c" against the Gaussian model of c.

    Probes for subject c: its own non-model images (genuine claims) and *all* images of the
    other subjects (impostor claims).

    Parameters
    ----------
    Z : ndarray of shape (n_images, k)
        Embeddings.
    subjects : ndarray of shape (n_images,)
    is_model : ndarray of bool, shape (n_images,)
        The images each subject's model is built from.
    shrinkage : float in (0, 1], default=0.5

    Returns
    -------
    claims : dict of ndarrays of shape (n_claims,)
        ``score`` (log-odds of genuine), ``prob`` (Prob(genuine)), ``genuine`` (bool),
        ``claimed`` (the subject) and ``probe`` (row index into Z).
    """
    subjects, is_model = np.asarray(subjects), np.asarray(is_model, dtype=bool)
    # the log-odds do not depend on a common scale of Z: beyond ~1e+-77 a power of two
    # (exact) rescales it, so the covariances neither overflow nor underflow
    (Z,) = rescaled_together(Z)
    parts = []
    for c in np.unique(subjects):
        mean, cov = fit_gaussian(Z[(subjects == c) & is_model], shrinkage)
        probe = np.flatnonzero((subjects != c) | ~is_model)
        log_p = gaussian_log_density(Z[probe], mean, cov)
        genuine = subjects[probe] == c
        if genuine.all():
            raise ValueError(f"subject {c!r} has no impostor claims to estimate p_impostor.")
        log_p_impostor = logsumexp(log_p[~genuine]) - np.log((~genuine).sum())
        parts.append((log_p - log_p_impostor, genuine, np.full(probe.size, c), probe))
    score, genuine, claimed, probe = (np.concatenate(p) for p in zip(*parts, strict=True))
    return {"score": score, "prob": expit(score), "genuine": genuine, "claimed": claimed,
            "probe": probe}
