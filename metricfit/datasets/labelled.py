"""Labelled images or vectors of the user's: the ``metricfit verify --data PATH.npz`` format."""

from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from .._files import read_npz_file

__all__ = ["LABELLED_NPZ", "load_labelled_npz"]

LABELLED_NPZ = "'images' (n, H, W) or 'X' (n, d), and 'labels' (n,)"
PAIR_KEYS = ("pairs", "pair_labels", "pair_folds")
"""Optional entries of a labelled .npz: the user's own pairs, ``pairs`` (m, 2) row indices,
``pair_labels`` (m,) (+1 / 1 / True same identity; -1 / 0 / False different) and
``pair_folds`` (m,) integer folds (3 or more: the protocol's fold rotation)."""


def load_labelled_npz(path):
    """Images (n, H, W) or vectors (n, d) and their labels from the ``.npz`` at ``path`` (keys
    ``images`` or ``X``, and ``labels``), as a Bunch; the ``metricfit verify --data PATH.npz``
    format (``embeddings`` is read as ``X``). Optional: ``ids`` (n,) (the Bunch's ``ids``,
    else None) and the user's own pairs (:data:`PAIR_KEYS`; the Bunch's ``pairs`` is
    ``(index_pairs, y in {-1, +1}, fold)``, else None).

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
    images = arrays.get("images", arrays.get("X", arrays.get("embeddings")))
    labels = arrays.get("labels")
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
    ids = arrays.get("ids")
    if ids is not None and (ids.ndim != 1 or len(ids) != len(images)
                            or ids.dtype.kind not in "iuUS"):
        raise ValueError(f"{path}: 'ids' must be 1-D strings or integers, one per row "
                         f"({len(images)}), got {ids.dtype} {ids.shape}.")
    return Bunch(images=images, labels=labels,
                 ids=None if ids is None else np.asarray(ids.astype(str)),
                 pairs=_stored_pairs(path, arrays, len(images)))


def _stored_pairs(path, arrays, n):
    """``(index_pairs, y, fold)`` of the :data:`PAIR_KEYS` entries, or None without them."""
    present = [key for key in PAIR_KEYS if key in arrays]
    if not present:
        return None
    if len(present) != len(PAIR_KEYS):
        missing = sorted(set(PAIR_KEYS) - set(present))
        raise ValueError(f"{path}: pairs of your own need {', '.join(PAIR_KEYS)}; "
                         f"{', '.join(missing)} missing.")
    index, y, fold = (arrays[key] for key in PAIR_KEYS)
    if index.dtype.kind not in "iu" or index.ndim != 2 or index.shape[1] != 2 \
            or index.shape[0] == 0:
        raise ValueError(f"{path}: 'pairs' must be integer row indices (m, 2), m >= 1, got "
                         f"{index.dtype} {index.shape}.")
    outside = index[(index < 0) | (index >= n)]
    if outside.size:
        raise ValueError(f"{path}: 'pairs' holds row {int(outside[0])}, outside 0 .. {n - 1}.")
    for key, values in (("pair_labels", y), ("pair_folds", fold)):
        if values.ndim != 1 or values.shape[0] != index.shape[0] or values.dtype.kind not in "biu":
            raise ValueError(f"{path}: {key!r} must be 1-D integers (booleans for labels), one "
                             f"per pair ({index.shape[0]}), got {values.dtype} {values.shape}.")
    if not set(np.unique(y).tolist()) <= {-1, 0, 1}:
        raise ValueError(f"{path}: 'pair_labels' must be +1 / 1 (same) and -1 / 0 "
                         f"(different), got values {np.unique(y)[:5].tolist()}.")
    return (index.astype(np.int64), np.where(y.astype(np.int64) == 1, 1, -1).astype(np.int8),
            fold.astype(np.int64))
