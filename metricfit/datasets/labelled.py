"""Labelled images or vectors of the user's: the ``metricfit verify --data PATH.npz`` format."""

from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from .._files import read_npz_file

__all__ = ["LABELLED_NPZ", "load_labelled_npz"]

LABELLED_NPZ = "'images' (n, H, W) or 'X' (n, d), and 'labels' (n,)"


def load_labelled_npz(path):
    """Images (n, H, W) or vectors (n, d) and their labels from the ``.npz`` at ``path`` (keys
    ``images`` or ``X``, and ``labels``), as a Bunch; the ``metricfit verify --data PATH.npz``
    format.

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    ValueError
        Naming the file: not a readable .npz, a missing key, or arrays of the wrong kind,
        shape or length, or with NaN / infinity.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: --data PATH.npz needs an existing file.")
    arrays = read_npz_file(path, what=f"a labelled .npz holding {LABELLED_NPZ}")
    images, labels = arrays.get("images", arrays.get("X")), arrays.get("labels")
    if images is None or labels is None:
        raise ValueError(f"{path} must hold {LABELLED_NPZ}; found keys {sorted(arrays)}.")
    if (images.ndim not in (2, 3) or images.dtype.kind not in "biuf" or labels.ndim != 1
            or len(labels) != len(images) or len(labels) == 0):
        raise ValueError(f"{path}: need numeric images (n, H, W) or X (n, d) and labels (n,), "
                         f"n >= 1; got {images.dtype} {images.shape} and labels "
                         f"{labels.shape}.")
    if labels.dtype.kind not in "biufUS":
        raise ValueError(f"{path}: labels must be numbers or strings, got dtype "
                         f"{labels.dtype}.")
    for name, array in (("images / X", images), ("labels", labels)):
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise ValueError(f"{path}: the {name} hold NaN or infinity.")
    return Bunch(images=images, labels=labels)
