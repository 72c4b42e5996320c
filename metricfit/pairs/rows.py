"""Scale-safe operations on rows of vectors, shared by every room (the ground floor): unit
length and unit largest entry, and the row-wise pair scores built on them (cosine, squared and
plain Euclidean distance), computed so that neither huge (~1e200) nor subnormal rows overflow
or underflow on the way to a representable result."""

import numpy as np

from .checks import float_dtype

__all__ = ["l2_normalize", "unit_scale_rows", "unit_rows", "cosine_rows", "squared_distances",
           "l2_distances"]


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
    X = X.astype(float_dtype(X), copy=False)
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


def cosine_rows(P1, P2):
    """Row-wise cosine similarity of (n, k) arrays; 0 where an embedding is zero.

    The rows are scaled to a largest entry of 1 first (a cosine does not depend on scale),
    so rows anywhere in the float range give the same cosine as rows of unit size.
    """
    P1, P2 = unit_scale_rows(P1), unit_scale_rows(P2)
    dots = np.einsum("ij,ij->i", P1, P2)
    norms = np.linalg.norm(P1, axis=1) * np.linalg.norm(P2, axis=1)
    out = np.zeros_like(dots)
    np.divide(dots, norms, out=out, where=norms > 0)
    return np.clip(out, -1.0, 1.0)


def squared_distances(a, b):
    """Row-wise ``|a_i - b_i|^2`` of (n, k) arrays, computed as ``m^2 |(a - b) / m|^2`` with
    ``m`` the row's largest ``|a - b|`` entry: no intermediate overflow; ``inf`` only where
    the distance itself is beyond the float range (the learners report that as an error)."""
    diff = np.subtract(a, b)
    top = np.max(np.abs(diff), axis=1)
    unit = np.divide(diff, top[:, None], out=np.zeros_like(diff), where=top[:, None] > 0)
    with np.errstate(over="ignore"):
        return top * top * np.einsum("ij,ij->i", unit, unit)


def l2_distances(a, b):
    """Row-wise ``|a_i - b_i|`` without intermediate overflow (``m |(a - b) / m|``)."""
    diff = np.subtract(a, b)
    top = np.max(np.abs(diff), axis=1)
    unit = np.divide(diff, top[:, None], out=np.zeros_like(diff), where=top[:, None] > 0)
    return top * np.sqrt(np.einsum("ij,ij->i", unit, unit))
