"""Face data sets (LFW, AT&T/ORL, Yale) and parsers for the official LFW protocol files.

The data live outside the repository in a *data folder* holding ``lfw/``, ``att_faces/`` and
``yale_faces/``, found by :func:`get_data_home`. The parsers read the formats of LFW's own
``README.txt`` (sections 3a, 3c, 3d); malformed files raise ``ValueError`` naming file and line.
"""

import os
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from ._files import read_npz_file, text_lines
from .pairs import FoldRotation, PredefinedPairFolds, unrestricted_pairs

__all__ = [
    "LFWPairs", "get_data_home", "read_lfw_pairs", "read_lfw_people", "lfw_pairs_to_indices",
    "load_lfw", "load_att_faces", "load_yale_faces", "lfw_view2_pairs", "load_lfw_view2",
    "load_labelled_npz", "lfw_view2_splitter", "lfw_unrestricted_training_pairs",
]

ENV_VAR = "METRICFIT_DATA"
LFW_NPZ = Path("lfw", "lfw_deepfunneled_gray_62x47.npz")


def get_data_home(data_home=None):
    """Return the data folder, the one holding ``lfw/``, ``att_faces/`` and ``yale_faces/``.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Explicit folder. If None: ``$METRICFIT_DATA`` when set and non-empty, else
        ``<repo root>/../shared/data``, the repo root being the parent of the package directory.

    Returns
    -------
    path : pathlib.Path
        The folder (its existence is not checked).
    """
    if data_home is None:
        default = Path(__file__).resolve().parents[1].parent / "shared" / "data"
        data_home = os.environ.get(ENV_VAR) or default
    return Path(data_home).expanduser()


@dataclass(frozen=True)
class LFWPairs:
    """Pairs parsed from an LFW pair file, in file order.

    Attributes
    ----------
    name1, name2 : ndarray of str, shape (n_pairs,)
        Person names (equal for matched pairs).
    number1, number2 : ndarray of int64, shape (n_pairs,)
        1-based image numbers (the ``NNNN`` of ``<Name>_NNNN.jpg``).
    label : ndarray of int8, shape (n_pairs,)
        1 = same person (matched), 0 = different (mismatched).
    fold : ndarray of int8, shape (n_pairs,)
        Fold 0..n_folds-1.
    n_folds, n_per_class : int
        Header values: folds, and matched (= mismatched) pairs per fold.

    Examples
    --------
    :func:`read_lfw_pairs` on a ``pairs.txt`` of 2 folds of 1 matched and 1 mismatched pair:

    >>> import os, tempfile
    >>> from metricfit.datasets import read_lfw_pairs
    >>> text = "2 1\\nAlice 1 2\\nAlice 1 Bob 3\\nCarol 2 4\\nBob 1 Dave 2\\n"
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "pairs.txt")
    ...     with open(path, "w") as f:
    ...         _ = f.write(text)
    ...     pairs = read_lfw_pairs(path)
    >>> len(pairs), pairs.n_folds, pairs.n_per_class
    (4, 2, 1)
    >>> pairs.name2.tolist(), pairs.number2.tolist()
    (['Alice', 'Bob', 'Carol', 'Dave'], [2, 3, 4, 2])
    >>> pairs.label.tolist(), pairs.fold.tolist()
    ([1, 0, 1, 0], [0, 0, 1, 1])
    """

    name1: np.ndarray
    number1: np.ndarray
    name2: np.ndarray
    number2: np.ndarray
    label: np.ndarray
    fold: np.ndarray
    n_folds: int
    n_per_class: int

    def __len__(self):
        return len(self.label)


def _error(path, lineno, message):
    return ValueError(f"{path}, line {lineno}: {message}")


def _read_records(path, what):
    """Non-blank lines of ``path`` as (1-based line number, whitespace-split fields); ``what``
    the file should hold, for the messages."""
    path = Path(path)
    records = [(i, line.split()) for i, line in text_lines(path, what) if line.strip()]
    if not records:
        raise ValueError(f"{path}, line 1: the file is empty")
    return path, records


def _ints(path, lineno, fields, minimum):
    """``fields`` as ints >= ``minimum``, else ValueError naming the line."""
    try:
        values = [int(field) for field in fields]
    except ValueError:
        raise _error(path, lineno, f"expected integers, got {' '.join(fields)!r}") from None
    if min(values) < minimum:
        raise _error(path, lineno, f"expected integers >= {minimum}, got {' '.join(fields)!r}")
    return values


def _pair_record(path, lineno, fields, matched):
    """(name1, n1, name2, n2) from a 'name n1 n2' (matched) or 'name1 n1 name2 n2' line."""
    n_fields, form = (3, "name n1 n2") if matched else (4, "name1 n1 name2 n2")
    if len(fields) != n_fields:
        kind = "matched" if matched else "mismatched"
        msg = f"a {kind} pair needs {n_fields} fields '{form}', got {len(fields)}"
        raise _error(path, lineno, msg)
    if matched:
        fields = [fields[0], fields[1], fields[0], fields[2]]
    n1, n2 = _ints(path, lineno, fields[1::2], 1)
    return fields[0], n1, fields[2], n2


def read_lfw_pairs(path):
    """Parse ``pairs.txt`` (View 2) or ``pairsDevTrain.txt`` / ``pairsDevTest.txt`` (View 1).

    ``pairs.txt`` starts with ``n_folds n_per_class`` (``10 300``); each fold then has
    ``n_per_class`` matched lines ``name n1 n2`` followed by as many mismatched lines
    ``name1 n1 name2 n2``. The View 1 files start with one count N and hold a single fold.

    Parameters
    ----------
    path : str or path-like
        The pair file.

    Returns
    -------
    pairs : LFWPairs
        The pairs in file order.

    Raises
    ------
    ValueError
        Empty file, malformed header or line, or line count not matching the header.
    """
    path, records = _read_records(path, "an LFW pair file (pairs.txt format)")
    lineno, header = records[0]
    if len(header) not in (1, 2):
        raise _error(path, lineno, f"header must be 'n_folds n_per_class' or 'N', got {header}")
    n_folds, n_per_class = ([1] if len(header) == 1 else []) + _ints(path, lineno, header, 1)
    block, body = 2 * n_per_class, records[1:]
    if len(body) != n_folds * block:
        msg = f"header announces {n_folds} x {block} pair lines but {len(body)} follow"
        raise _error(path, lineno, msg)
    rows = [_pair_record(path, i, f, k % block < n_per_class) for k, (i, f) in enumerate(body)]
    name1, number1, name2, number2 = zip(*rows)
    index = np.arange(len(rows))
    return LFWPairs(
        name1=np.array(name1, dtype=str), number1=np.array(number1, dtype=np.int64),
        name2=np.array(name2, dtype=str), number2=np.array(number2, dtype=np.int64),
        label=(index % block < n_per_class).astype(np.int8),
        fold=(index // block).astype(np.int8), n_folds=n_folds, n_per_class=n_per_class,
    )


def _people_block(path, records, start, count_lineno, count):
    """``count`` (name, n_images) tuples from ``records[start:]``."""
    block = records[start : start + count]
    if len(block) < count:
        raise _error(path, count_lineno, f"announces {count} people but {len(block)} follow")
    people = []
    for lineno, fields in block:
        if len(fields) != 2:
            raise _error(path, lineno, f"expected 2 fields 'name n_images', got {len(fields)}")
        people.append((fields[0], _ints(path, lineno, fields[1:], 1)[0]))
    return people


def _people_folds(path, records, n_folds):
    """The folds of ``people.txt`` and the position of the first record after them."""
    folds, pos = [], 1
    for _ in range(n_folds):
        if pos >= len(records):
            raise _error(path, records[0][0], f"announces {n_folds} folds, found {len(folds)}")
        lineno, fields = records[pos]
        if len(fields) != 1:
            raise _error(path, lineno, f"expected a fold's people count, got {fields}")
        n_people = _ints(path, lineno, fields, 0)[0]
        folds.append(_people_block(path, records, pos + 1, lineno, n_people))
        pos += 1 + n_people
    return folds, pos


def read_lfw_people(path):
    """Parse ``people.txt`` (View 2) or ``peopleDevTrain.txt`` / ``peopleDevTest.txt`` (View 1).

    ``people.txt`` starts with the number of folds; each fold is a count line N and N lines
    ``name n_images``. The View 1 files are one count N and N such lines (a single fold). The
    formats are told apart by the second line: a lone count, or a name line.

    Parameters
    ----------
    path : str or path-like
        The people file.

    Returns
    -------
    folds : list of list of (str, int)
        For each fold, its people as ``(name, n_images)`` in file order.

    Raises
    ------
    ValueError
        Empty file, malformed line, or counts not matching the lines.
    """
    path, records = _read_records(path, "an LFW people file (people.txt format)")
    lineno, header = records[0]
    if len(header) != 1:
        raise _error(path, lineno, f"header must be a single count, got {len(header)} fields")
    count = _ints(path, lineno, header, 0)[0]
    if len(records) > 1 and len(records[1][1]) == 1:  # people.txt: the header counts folds
        folds, pos = _people_folds(path, records, count)
    else:
        folds, pos = [_people_block(path, records, 1, lineno, count)], 1 + count
    if pos < len(records):
        raise _error(path, records[pos][0], "unexpected line after the announced people")
    return folds


def _positions(table, query):
    """Position in ``table`` of each element of ``query``, and whether it was found."""
    if len(table) == 0:
        return np.zeros(len(query), dtype=np.int64), np.zeros(len(query), dtype=bool)
    order = np.argsort(table, kind="stable")
    pos = np.minimum(np.searchsorted(table[order], query), len(table) - 1)
    return order[pos], table[order][pos] == query


def lfw_pairs_to_indices(parsed_pairs, names, person, image_number):
    """Map the ``(name, number)`` pairs of :func:`read_lfw_pairs` to image row indices.

    Parameters
    ----------
    parsed_pairs : LFWPairs
        Parsed pairs.
    names : array-like of str, shape (n_people,)
        Person names (npz ``names``).
    person, image_number : array-like of int, shape (n_images,)
        Index into ``names`` and 1-based image number of each image (npz arrays).

    Returns
    -------
    pairs_index : ndarray of int64, shape (n_pairs, 2)
        Row indices of the two images of each pair.

    Raises
    ------
    ValueError
        If a name is unknown or a person has no image with the given number.
    """
    names = np.asarray(names, dtype=str)
    number = np.asarray(image_number, dtype=np.int64)
    base = int(number.max(initial=0)) + 1
    keys = np.asarray(person, dtype=np.int64) * base + number
    columns = []
    for name, num in [(parsed_pairs.name1, parsed_pairs.number1),
                      (parsed_pairs.name2, parsed_pairs.number2)]:
        name, num = np.asarray(name, dtype=str), np.asarray(num, dtype=np.int64)
        who, found = _positions(names, name)
        if not found.all():
            raise ValueError(f"unknown person name {str(name[np.argmin(found)])!r}")
        row, found = _positions(keys, who * base + num)
        found &= (num >= 1) & (num < base)
        if not found.all():
            k = np.argmin(found)
            raise ValueError(f"unknown image number {num[k]} of person {str(name[k])!r}")
        columns.append(row)
    return np.stack(columns, axis=1).astype(np.int64)


LFW_KEYS = ("images", "person", "image_number", "names", "people_fold_view2", "pairs_view2",
            "pairs_view2_label", "pairs_view2_fold")


def _home_source(data_home):
    """Where the data folder came from, for the messages."""
    if data_home is not None:
        return "data_home= / --data-home"
    if os.environ.get(ENV_VAR):
        return f"${ENV_VAR}"
    return f"the default; ${ENV_VAR} is not set"


def _load_npz(relpath, data_home, keys=None, required=()):
    """Arrays of ``<data home>/<relpath>`` as a Bunch, plus ``data_dir`` (the file's folder);
    ``keys`` (read only those) or ``required`` (read all, these must be there)."""
    home = get_data_home(data_home)
    path = home / relpath
    if not path.is_file():
        state = "" if home.is_dir() else "; that folder does not exist"
        raise FileNotFoundError(
            f"{relpath} not found: looked for {path} in the data folder {home} (from "
            f"{_home_source(data_home)}){state}. Point the {ENV_VAR} environment variable (or "
            "--data-home / data_home=) at the data folder holding lfw/, att_faces/ and "
            "yale_faces/."
        )
    arrays = read_npz(path, keys)
    missing = [key for key in required if key not in arrays]
    if missing:
        raise ValueError(f"{path} lacks the arrays {missing}; it holds {sorted(arrays)}.")
    return Bunch(**arrays, data_dir=path.parent)


def _check_faces(data, path):
    """``images`` (n, H, W) numeric and ``labels`` (n,) of a face npz, else ValueError."""
    images, labels = data.images, data.labels
    if images.ndim != 3 or images.dtype.kind not in "biuf" or labels.shape != images.shape[:1]:
        raise ValueError(f"{path}: need numeric images (n, H, W) and labels (n,); got images "
                         f"{images.dtype} {images.shape} and labels {labels.shape}.")
    return data


def read_npz(path, keys=None):
    """The arrays of the ``.npz`` file ``path`` (those of ``keys``, if given) as a dict.

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    ValueError
        Naming the file: not a readable .npz (e.g. a text or .npy file, random bytes, a
        truncated archive), a missing key (with the keys it does hold), or an array stored as
        pickled objects.
    """
    return read_npz_file(path, keys)


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

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
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

    References
    ----------
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """
    data = _load_npz(LFW_NPZ, data_home, ("person", "people_fold_view2"))
    allowed = np.isin(data.people_fold_view2[data.person], _check_folds(train_folds))
    return unrestricted_pairs(data.person, allowed, n_similar, n_dissimilar,
                              random_state=random_state)
