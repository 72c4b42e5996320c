"""Validation of image stacks (n_images, H, W) and image pairs (n_pairs, 2, H, W): the check
every estimator taking images shares (the descriptors, :class:`~metricfit.SiameseCNN`)."""

import numpy as np

from ..pairs import check_pairs, check_points
from ..pairs.checks import check_dtype_range

__all__ = ["check_images"]


def check_images(X, what="X", dtype=np.float64):
    """Validate images or pairs of images; return a C-contiguous float64 array.

    Parameters
    ----------
    X : array-like of shape (n_images, H, W) or (n_pairs, 2, H, W)
        Real numbers (any integer, boolean or float dtype).
    what : str, default="X"
        Name used in error messages.

    Returns
    -------
    X : ndarray, float64 (or ``dtype``), same shape

    Raises
    ------
    ValueError
        On another number of dimensions (the message names both accepted shapes), a pair axis
        of length other than 2, an empty array, non-numeric data, NaN or infinity.
    """
    try:
        X = np.asarray(X)
    except Exception as exc:  # ragged nested lists
        raise ValueError(f"{what} could not be converted to a numeric array: {exc}") from exc
    if X.ndim not in (3, 4):
        raise ValueError(
            f"{what} must be images of shape (n_images, height, width) or pairs of images of "
            f"shape (n_pairs, 2, height, width), got an array of shape {X.shape}."
        )
    if X.ndim == 4 and X.shape[1] != 2:
        raise ValueError(
            f"{what} (pairs of images) must have the pair axis (of length 2) at axis 1, got "
            f"shape {X.shape}."
        )
    if 0 in X.shape:
        raise ValueError(f"{what} is empty: got shape {X.shape}.")
    n = X.shape[0]
    if X.ndim == 3:
        flat = check_points(X.reshape(n, -1), dtype=np.float64, what=what)
    else:
        flat = check_pairs(X.reshape(n, 2, -1), dtype=np.float64, what=what)
    check_dtype_range(flat, dtype, what)
    return flat.reshape(X.shape).astype(dtype, copy=False)
