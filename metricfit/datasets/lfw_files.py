"""Parsers of the official LFW protocol files, in the formats of LFW's own ``README.txt``
(sections 3a, 3c, 3d): pair files (``pairs.txt``, ``pairsDevTrain.txt``...), people files
(``people.txt``...) and the mapping of parsed pairs to image rows. Malformed files raise
``ValueError`` naming file and line.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._files import text_lines

__all__ = ["LFWPairs", "read_lfw_pairs", "read_lfw_people", "lfw_pairs_to_indices"]


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
    name1, number1, name2, number2 = zip(*rows, strict=True)
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
