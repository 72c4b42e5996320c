"""A user's embeddings, identity maps and pair lists: the files of ``metricfit score`` and
``metricfit verify --data PATH.npz --pairs pairs.txt``.

Embeddings (one vector per id) come in three formats, told apart by the file's suffix:

- ``.npy``: a float array (n, d); its ids, one per line, in a text file (by default the
  ``.npy`` path with the suffix ``.ids``: ``train.npy`` -> ``train.ids``);
- ``.npz``: arrays ``X`` or ``embeddings`` (n, d), ``ids`` (n,) and optionally ``labels``
  (n,), the identity (or enrolment model) of each row; without ``ids`` the rows are named
  ``0``, ``1``, ...;
- anything else: a text table, one vector per line, ``id v1 v2 ... vd`` (whitespace
  separated; Kaldi's text archives ``id  [ v1 v2 ... ]`` read too); blank lines and lines
  starting with ``#`` are skipped.

Labels of ``.npy`` files and text tables come from an *id map*: ``id label`` per line (Kaldi's
``utt2spk``), read by :func:`read_id_map`. An LFW-style ``pairs.txt`` names images as ``name
number``; :func:`read_pairs_over_ids` resolves them to rows of the user's embeddings.

Every format error is a ``ValueError`` naming the file, the line (or the array) and what is
wrong; a missing file is ``FileNotFoundError``.
"""

from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from .._files import read_npz_file, text_lines
from .lfw_files import _read_records, read_lfw_pairs

__all__ = ["EMBEDDING_FORMATS", "load_embeddings", "read_id_map", "read_pairs_over_ids"]

EMBEDDING_FORMATS = ("PATH.npy (+ PATH.ids, one id per line), PATH.npz (X or embeddings, ids "
                     "[, labels]) or a text table ('id v1 ... vd' per line)")


def _existing(path, what):
    path = Path(path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: expected {what}.")
    return path


def _check_id(path, where, text):
    if not text or text.startswith("#") or len(text.split()) != 1:
        raise ValueError(f"{path}, {where}: id {text!r} must be non-empty, without whitespace "
                         "and not start with '#' (ids are the words of trial lists).")
    return text


def _unique_ids(path, ids, where=lambda k: f"row {k}"):
    seen = {}
    for k, i in enumerate(ids):
        if i in seen:
            raise ValueError(f"{path}, {where(k)}: id {i!r} repeats {where(seen[i])}; every "
                             "vector needs its own id.")
        seen[i] = k
    return np.asarray(ids, dtype=str)


def _check_matrix(path, X, what):
    if X.dtype.kind not in "biuf" or X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{path}: {what} must be a numeric array (n, d) with n, d >= 1, got "
                         f"{X.dtype} {X.shape}.")
    X = np.asarray(X, dtype=np.float64)
    if not np.isfinite(X).all():
        row = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
        raise ValueError(f"{path}: {what} row {row} holds NaN or infinity.")
    return X


def _read_ids_file(path, n):
    """The ids of a .npy's rows: one per line of the text file ``path``."""
    ids, lines = [], []
    for number, line in text_lines(path, "ids, one per line"):
        text = line.strip()
        if text:
            ids.append(_check_id(path, f"line {number}", text))
            lines.append(number)
    if len(ids) != n:
        raise ValueError(f"{path}: {len(ids)} ids for {n} rows of the embeddings.")
    return _unique_ids(path, ids, lambda k: f"line {lines[k]}")


def _load_npy(path, ids_path):
    try:
        X = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise ValueError(f"{path} is not a readable .npy array of embeddings ({error}).") \
            from None
    X = _check_matrix(path, X, "the embeddings")
    ids_path = Path(ids_path).expanduser() if ids_path is not None else path.with_suffix(".ids")
    if not ids_path.exists():
        raise FileNotFoundError(f"{ids_path} not found: the ids of the rows of {path}, one per "
                                "line (a .npy holds no ids).")
    return X, _read_ids_file(ids_path, X.shape[0]), None


def _load_npz(path):
    arrays = read_npz_file(path, what="embeddings: X or embeddings (n, d), ids (n,) "
                                      "[, labels (n,)]")
    X = arrays.get("X", arrays.get("embeddings"))
    if X is None:
        raise ValueError(f"{path}: no array 'X' or 'embeddings'; the file holds keys "
                         f"{sorted(arrays)}.")
    X = _check_matrix(path, X, "'X' / 'embeddings'")
    out = []
    for key in ("ids", "labels"):
        values = arrays.get(key)
        if values is None:
            out.append(None)
            continue
        if values.ndim != 1 or values.shape[0] != X.shape[0] or values.dtype.kind not in "biuUS":
            raise ValueError(f"{path}: {key!r} must be 1-D integers or strings, one per row "
                             f"({X.shape[0]}), got {values.dtype} {values.shape}.")
        values = np.asarray(values.astype(str))
        for k, text in enumerate(values):
            _check_id(path, f"{key}[{k}]", str(text))
        out.append(values)
    ids = np.arange(X.shape[0]).astype(str) if out[0] is None else \
        _unique_ids(path, out[0], lambda k: f"ids[{k}]")
    return X, ids, out[1]


def _load_table(path):
    ids, rows, lines = [], [], []
    for number, line in text_lines(path, "an embedding table ('id v1 ... vd' lines)"):
        fields = [f for f in line.split() if f not in ("[", "]")]
        if not fields or fields[0].startswith("#"):
            continue
        try:
            values = [float(v) for v in fields[1:]]
        except ValueError:
            bad = next(v for v in fields[1:] if not _is_float(v))
            raise ValueError(f"{path}, line {number}: {bad!r} is not a number; expected 'id "
                             "v1 ... vd'.") from None
        if not values:
            raise ValueError(f"{path}, line {number}: id {fields[0]!r} has no values; expected "
                             "'id v1 ... vd'.")
        if rows and len(values) != len(rows[0]):
            raise ValueError(f"{path}, line {number}: {len(values)} values, but line "
                             f"{lines[0]} has {len(rows[0])}.")
        if not np.isfinite(values).all():
            raise ValueError(f"{path}, line {number}: NaN or infinity among the values.")
        ids.append(_check_id(path, f"line {number}", fields[0]))
        rows.append(values)
        lines.append(number)
    if not rows:
        raise ValueError(f"{path} holds no embeddings ('id v1 ... vd' lines).")
    return np.array(rows), _unique_ids(path, ids, lambda k: f"line {lines[k]}"), None


def _is_float(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_id_map(path, what="an id map ('id label' per line)"):
    """``{id: label}`` from ``id label`` lines (Kaldi's ``utt2spk``); blank lines and lines
    starting with ``#`` skipped.

    Raises
    ------
    ValueError
        Naming the file and the line: not two fields, or an id given twice.

    Examples
    --------
    >>> import os, tempfile
    >>> from metricfit.datasets import read_id_map
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "utt2spk")
    ...     with open(path, "w") as f:
    ...         _ = f.write("utt1 spk1\\nutt2 spk1\\nutt3 spk2\\n")
    ...     read_id_map(path)
    {'utt1': 'spk1', 'utt2': 'spk1', 'utt3': 'spk2'}
    """
    path = _existing(path, what)
    out, where = {}, {}
    for number, line in text_lines(path, what):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != 2:
            raise ValueError(f"{path}, line {number}: expected 'id label', got {line.strip()!r}.")
        if fields[0] in out:
            raise ValueError(f"{path}, line {number}: id {fields[0]!r} already given on line "
                             f"{where[fields[0]]}.")
        out[fields[0]], where[fields[0]] = fields[1], number
    if not out:
        raise ValueError(f"{path} holds no 'id label' lines.")
    return out


def load_embeddings(path, ids=None, labels=None):
    """The embeddings at ``path`` (see the module's formats) as a Bunch ``X`` (n, d) float64,
    ``ids`` (n,) str and ``labels`` (n,) str or None.

    Parameters
    ----------
    path : str or path-like
        ``.npy``, ``.npz`` or a text table.
    ids : str or path-like, default=None
        A ``.npy``'s ids file (default: the path with suffix ``.ids``); not read otherwise.
    labels : str or path-like, default=None
        An id map (``id label`` lines, :func:`read_id_map`) giving each row's label; it
        overrides the labels of an ``.npz`` and must name every id.

    Raises
    ------
    FileNotFoundError, ValueError
        Naming the file and the line or array: see the module docstring.

    Examples
    --------
    >>> import os, tempfile
    >>> from metricfit.datasets import load_embeddings
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "test.txt")
    ...     with open(path, "w") as f:
    ...         _ = f.write("# id then values\\nutt1 0.5 1.0\\nutt2 [ -1 2e-1 ]\\n")
    ...     data = load_embeddings(path)
    >>> data.ids.tolist(), data.X.tolist(), data.labels
    (['utt1', 'utt2'], [[0.5, 1.0], [-1.0, 0.2]], None)
    """
    path = _existing(path, f"embeddings: {EMBEDDING_FORMATS}")
    if path.is_dir():
        raise ValueError(f"{path} is a directory; expected a file of embeddings "
                         f"({EMBEDDING_FORMATS}).")
    suffix = path.suffix.lower()
    X, row_ids, row_labels = (_load_npy(path, ids) if suffix == ".npy" else
                              _load_npz(path) if suffix == ".npz" else _load_table(path))
    if labels is not None:
        table = read_id_map(labels)
        missing = [str(i) for i in row_ids if i not in table]
        if missing:
            raise ValueError(f"{labels}: no label for id {missing[0]!r} of {path} "
                             f"({len(missing)} id(s) without one).")
        row_labels = np.array([table[i] for i in row_ids])
    return Bunch(X=X, ids=row_ids, labels=row_labels, path=str(path))


def _rows_by_name(ids, labels):
    """Two lookups of ``(name, number)``: LFW's file stem ``name_NNNN`` among the ids, and
    the number-th row (1-based, in file order) of the label ``name``."""
    stems = {str(i): k for k, i in enumerate(ids)}
    nth = {}
    if labels is not None:
        for k, label in enumerate(np.asarray(labels, dtype=str)):
            nth.setdefault(label, []).append(k)
    return stems, nth


def read_pairs_over_ids(path, ids, labels=None):
    """The pairs of an LFW-style ``pairs.txt`` (:func:`~metricfit.datasets.read_lfw_pairs`:
    a header ``n_folds n_per_class``, then per fold the same-identity lines ``name n1 n2`` and
    the different-identity lines ``name1 n1 name2 n2``) as rows of the user's embeddings.

    ``name n`` is the row whose id is ``name_NNNN`` (LFW's file stem, ``n`` on four digits),
    else, with ``labels``, the n-th row (counted from 1, in file order) labelled ``name``.

    Returns
    -------
    index_pairs : ndarray of shape (n_pairs, 2), int64
    y : ndarray of shape (n_pairs,), int8 in {-1, +1}
    fold : ndarray of shape (n_pairs,), int64

    Raises
    ------
    ValueError
        Naming the file and the line: the format (as :func:`read_lfw_pairs`), a name or
        number that matches no row, or a pair of one row with itself.

    Examples
    --------
    >>> import os, tempfile
    >>> from metricfit.datasets import read_pairs_over_ids
    >>> ids = ["Ann_0001", "Ann_0002", "Bob_0001", "Cid_0001", "Cid_0002", "Dan_0001"]
    >>> text = "2 1\\nAnn 1 2\\nAnn 1 Bob 1\\nCid 1 2\\nCid 2 Dan 1\\n"
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "pairs.txt")
    ...     with open(path, "w") as f:
    ...         _ = f.write(text)
    ...     index_pairs, y, fold = read_pairs_over_ids(path, ids)
    >>> index_pairs.tolist(), y.tolist(), fold.tolist()
    ([[0, 1], [0, 2], [3, 4], [4, 5]], [1, -1, 1, -1], [0, 0, 1, 1])
    """
    path = _existing(path, "an LFW-style pair file ('n_folds n_per_class' header)")
    parsed = read_lfw_pairs(path)
    _, records = _read_records(path, "an LFW-style pair file")
    lines = [number for number, _ in records[1:]]
    stems, nth = _rows_by_name(ids, labels)
    index = np.empty((len(parsed), 2), dtype=np.int64)
    for k in range(len(parsed)):
        for side, (name, number) in enumerate(((str(parsed.name1[k]), int(parsed.number1[k])),
                                               (str(parsed.name2[k]), int(parsed.number2[k])))):
            row = stems.get(f"{name}_{number:04d}")
            if row is None and name in nth and number <= len(nth[name]):
                row = nth[name][number - 1]
            if row is None:
                how = (f"no id {name}_{number:04d}" + ("" if labels is None else
                       f" and label {name!r} has {len(nth.get(name, []))} row(s)"))
                raise ValueError(f"{path}, line {lines[k]}: image {name} {number} is not among "
                                 f"the embeddings ({how}).")
            index[k, side] = row
        if index[k, 0] == index[k, 1]:
            raise ValueError(f"{path}, line {lines[k]}: a pair of row {index[k, 0]} with "
                             "itself.")
    y = np.where(parsed.label == 1, 1, -1).astype(np.int8)
    return index, y, parsed.fold.astype(np.int64)
