"""Scale-safe pair scores on embeddings, shared by every loss's ``pair_score`` and the
learners' base: a cosine does not depend on scale and a distance must not overflow on the way
to a representable result, so rows are scaled before their products are formed."""

import numpy as np

from ..pairs.rows import unit_rows, unit_scale_rows  # noqa: F401 (their home)


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
