"""Scale-safe operations on rows of vectors, shared by every room (the ground floor): unit
length and unit largest entry, computed so that neither huge (~1e200) nor subnormal rows
overflow or underflow on the way to a representable result."""

import numpy as np

__all__ = ["l2_normalize", "unit_scale_rows", "unit_rows"]


def l2_normalize(X):
    """Scale each row (the last axis) of X to unit Euclidean length; zero rows stay zero.

    The input normalisation of seed 004 section 4.1 / Algorithm 1. Rows are first divided by
    their largest absolute entry, so neither huge nor subnormal rows overflow or underflow.
    Float32 is kept, anything else becomes float64; X is not modified.

    References
    ----------
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """
    X = np.asarray(X)
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    X = X.astype(dtype, copy=False)
    if X.ndim == 0 or X.size == 0:
        return X.copy()
    scale = np.max(np.abs(X), axis=-1, keepdims=True)
    Y = np.divide(X, scale, out=np.zeros_like(X), where=scale > 0)
    norms = np.linalg.norm(Y, axis=-1, keepdims=True)  # >= 1 where the row is non-zero
    Y /= np.where(norms > 0, norms, 1)
    return Y


def unit_scale_rows(P):
    """Rows divided by their largest magnitude (zero rows stay zero): entries in [-1, 1], so
    the products of a cosine neither overflow nor underflow whatever the rows' scale."""
    P = np.asarray(P)
    top = np.max(np.abs(P), axis=1, keepdims=True)
    return np.divide(P, top, out=np.zeros_like(P), where=top > 0)


def unit_rows(P):
    """Rows scaled to unit L2 norm (zero rows stay zero), for rows of any finite scale: each
    row is first scaled to a largest entry of 1 (:func:`unit_scale_rows`), so the norm
    neither overflows (entries near 1e200) nor underflows (near 1e-200)."""
    return l2_normalize(np.asarray(P, dtype=np.float64))
