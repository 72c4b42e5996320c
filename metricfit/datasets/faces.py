"""The face data sets of the data folder: LFW (deep-funneled, 62x47 grayscale) with its
View 1 / View 2 protocol arrays, the AT&T / ORL faces and the Yale faces; the LFW View 2
pairs, splitter and unrestricted training pairs.
"""

from numbers import Integral
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from ..pairs import FoldRotation, PredefinedPairFolds, unrestricted_pairs
from .home import _load_npz
from .lfw_files import lfw_pairs_to_indices, read_lfw_pairs

__all__ = ["LFW_NPZ", "LFW_KEYS", "load_lfw", "load_att_faces", "load_yale_faces",
           "lfw_view2_pairs", "load_lfw_view2", "lfw_view2_splitter",
           "lfw_unrestricted_training_pairs"]

LFW_NPZ = Path("lfw", "lfw_deepfunneled_gray_62x47.npz")

LFW_KEYS = ("images", "person", "image_number", "names", "people_fold_view2", "pairs_view2",
            "pairs_view2_label", "pairs_view2_fold")


def _check_faces(data, path):
    """``images`` (n, H, W) numeric and ``labels`` (n,) of a face npz, else ValueError."""
    images, labels = data.images, data.labels
    if images.ndim != 3 or images.dtype.kind not in "biuf" or labels.shape != images.shape[:1]:
        raise ValueError(f"{path}: need numeric images (n, H, W) and labels (n,); got images "
                         f"{images.dtype} {images.shape} and labels {labels.shape}.")
    return data


def load_lfw(data_home=None):
    """Load LFW (deep-funneled, 62x47 grayscale) and its View 1 / View 2 protocol arrays.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Data folder; see :func:`get_data_home`.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``images`` uint8 (13233, 62, 47); ``person`` int32 index into ``names``;
        ``image_number`` int16 (1-based); ``names`` str (5749,), sorted; ``people_fold_view2``
        int8 (5749,); ``people_devtrain``, ``people_devtest`` int32 person indices;
        ``pairs_view2`` int32 (6000, 2) image indices, ``pairs_view2_label`` int8 (1 same,
        0 different), ``pairs_view2_fold`` int8 0..9; ``pairs_devtrain`` (2200, 2) and
        ``pairs_devtest`` (1000, 2) with their ``*_label``; ``data_dir``, the ``lfw/`` folder.

    Raises
    ------
    FileNotFoundError
        If the npz file is missing; the message says where it looked.
    ValueError
        Naming the file: not a readable .npz, a missing array, or a wrong shape.
    """
    return _load_npz(LFW_NPZ, data_home, required=LFW_KEYS)


def load_att_faces(data_home=None):
    """Load the AT&T / ORL Database of Faces (40 subjects x 10 images).

    Parameters
    ----------
    data_home : str or path-like, default=None
        Data folder; see :func:`get_data_home`.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``images`` uint8 (400, 112, 92); ``labels`` int64 (400,), subject 0..39;
        ``image_index`` int64 (400,), file number 1..10; ``data_dir``, the ``att_faces/`` folder.

    Raises
    ------
    FileNotFoundError
        If the npz file is missing; the message says where it looked.
    ValueError
        Naming the file: not a readable .npz, a missing array, or a wrong shape.
    """
    relpath = Path("att_faces", "att_faces.npz")
    data = _load_npz(relpath, data_home, required=("images", "labels"))
    return _check_faces(data, data.data_dir / relpath.name)


def load_yale_faces(data_home=None):
    """Load the Yale Face Database (15 subjects, 164 images; subject 0 lacks 'centerlight').

    Parameters
    ----------
    data_home : str or path-like, default=None
        Data folder; see :func:`get_data_home`.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``images`` uint8 (164, 243, 320); ``labels`` int64 (164,), subject 0..14;
        ``condition`` str (164,), e.g. 'happy'; ``data_dir``, the ``yale_faces/`` folder.

    Raises
    ------
    FileNotFoundError
        If the npz file is missing; the message says where it looked.
    ValueError
        Naming the file: not a readable .npz, a missing array, or a wrong shape.
    """
    relpath = Path("yale_faces", "yale_faces.npz")
    data = _load_npz(relpath, data_home, required=("images", "labels"))
    return _check_faces(data, data.data_dir / relpath.name)


def lfw_view2_pairs(data_home=None, folds=None):
    """LFW View 2 pairs as image indices with {-1, +1} labels.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Data folder; see :func:`get_data_home`.
    folds : int or iterable of int, default=None
        Folds (0..9) to keep; None keeps all 10.

    Returns
    -------
    pairs_index : ndarray of int64, shape (n_pairs, 2)
        Row indices into ``load_lfw().images``.
    y : ndarray of int8, shape (n_pairs,)
        +1 = same person, -1 = different.
    fold : ndarray of int8, shape (n_pairs,)
        Fold of each pair.
    """
    keys = ("pairs_view2", "pairs_view2_label", "pairs_view2_fold")
    data = _load_npz(LFW_NPZ, data_home, keys)
    keep = slice(None) if folds is None else np.isin(data.pairs_view2_fold, _check_folds(folds))
    y = np.where(data.pairs_view2_label[keep] == 1, 1, -1).astype(np.int8)
    return data.pairs_view2[keep].astype(np.int64), y, data.pairs_view2_fold[keep]


def _check_folds(folds, n_folds=10):
    """``folds`` (an int or iterable of ints in [0, n_folds)) as an int64 array."""
    folds = [folds] if isinstance(folds, Integral) else list(folds)
    if not all(isinstance(k, Integral) and not isinstance(k, bool) and 0 <= k < n_folds
               for k in folds):
        raise ValueError(f"folds must be integers in [0, {n_folds - 1}], got {folds}")
    return np.asarray(folds, dtype=np.int64)


def load_lfw_view2(data_home=None):
    """LFW, its View 2 pairs checked against ``lfw/pairs.txt``, and the people's folds.

    Returns a Bunch: ``images``, ``labels`` (person), ``pairs`` (6000, 2) int64, ``y`` in
    {-1, +1}, ``pair_fold`` and ``image_fold`` (the View 2 fold of each image's person).
    """
    lfw = load_lfw(data_home)
    path = lfw.data_dir / "pairs.txt"
    if not path.is_file():
        raise FileNotFoundError(f"lfw/pairs.txt not found: looked for {path}. Point the "
                                "METRICFIT_DATA environment variable (or --data-home) at the "
                                "data folder holding lfw/.")
    parsed = read_lfw_pairs(path)  # ValueError naming file and line if malformed
    try:
        index = lfw_pairs_to_indices(parsed, lfw.names, lfw.person, lfw.image_number)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    found = np.column_stack([index, parsed.label, parsed.fold])
    expected = np.column_stack([lfw.pairs_view2, lfw.pairs_view2_label, lfw.pairs_view2_fold])
    differ = np.flatnonzero((found != expected).any(axis=1)) if found.shape == expected.shape \
        else [min(len(found), len(expected))]
    if len(differ):
        raise ValueError(f"{path} does not match the View 2 pairs of the LFW npz: pair "
                         f"{differ[0] + 1} differs (of {len(found)}, npz {len(expected)}).")
    return Bunch(images=lfw.images, labels=lfw.person, pairs=lfw.pairs_view2.astype(np.int64),
                 y=np.where(lfw.pairs_view2_label == 1, 1, -1), pair_fold=lfw.pairs_view2_fold,
                 image_fold=lfw.people_fold_view2[lfw.person])


def lfw_view2_splitter(data_home=None, n_train_folds=None):
    """The CV splitter of the LFW View 2 folds, over the 6000 pairs of ``pairs_view2``.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Data folder; see :func:`get_data_home`.
    n_train_folds : int, default=None
        None gives the 10-fold protocol (:class:`~metricfit.pairs.PredefinedPairFolds`: train
        on 9 folds, test on 1); an int gives the rotation of seed 002 III.A
        (:class:`~metricfit.pairs.FoldRotation`; 8 for train 8 / validate 1 / test 1).

    Returns
    -------
    cv : PredefinedPairFolds or FoldRotation
        Indexes the pairs in file order, as ``metricfit.datasets.lfw_view2_pairs()``.

    Raises
    ------
    FileNotFoundError
        If the LFW npz file is missing.
    """
    fold = lfw_view2_pairs(data_home)[2]
    if n_train_folds is None:
        return PredefinedPairFolds(fold)
    return FoldRotation(fold, n_train_folds=n_train_folds)


def lfw_unrestricted_training_pairs(train_folds, n_similar, n_dissimilar=None,
                                    data_home=None, random_state=None):
    """Unrestricted LFW training pairs: pairs among all images of the people of ``train_folds``.

    The unrestricted setting of seed 004 (5.2.2): training pairs are generated from the
    identities of all images of the training folds' people (View 2 ``people.txt`` folds),
    while the test pairs stay the fixed View 2 pairs. The people of other folds are never
    used, so no training identity occurs in the pairs of a held-out fold.

    Parameters
    ----------
    train_folds : int or iterable of int
        View 2 folds (0..9) whose people may be used.
    n_similar : int or 'all'
        Number of similar pairs (capped); ``'all'`` takes every within-person pair.
    n_dissimilar : int, default=None
        Number of dissimilar pairs (capped); None draws as many as the similar pairs.
    data_home : str or path-like, default=None
        Data folder; see :func:`get_data_home`.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    index_pairs : ndarray of shape (n_pairs, 2), int64
        Row indices into ``load_lfw().images``, similar pairs first.
    y : ndarray of shape (n_pairs,), int8
        +1 = same person, -1 = different.
    """
    data = _load_npz(LFW_NPZ, data_home, ("person", "people_fold_view2"))
    allowed = np.isin(data.people_fold_view2[data.person], _check_folds(train_folds))
    return unrestricted_pairs(data.person, allowed, n_similar, n_dissimilar,
                              random_state=random_state)
