"""Reading the package's input files, with one error naming the file for whatever is wrong.

A missing file stays ``FileNotFoundError`` (naming the path). Anything else wrong with a file
is one ``ValueError`` naming the file and what is wrong: a directory, an unreadable file, bytes
that are not UTF-8 text or are binary (naming the line), not an ``.npz`` archive, a truncated
or damaged archive, missing entries, or entries stored as pickled Python objects (which are
never loaded).
"""

import codecs
import zipfile
import zlib

import numpy as np

__all__ = ["text_lines", "read_npz_file"]

_ZIP_STARTS = (b"PK\x03\x04", b"PK\x05\x06")  # a zip's first member, or an empty zip
_NPY_START = b"\x93NUMPY"
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError)


def _open(path):
    """``path`` opened for reading bytes: a missing file is FileNotFoundError, any other
    failure a ValueError naming the file."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise ValueError(f"{path} is a directory, not a file.") from None
    except OSError as error:
        raise ValueError(f"{path} cannot be read: {error.strerror or error}.") from None


def _decode(path, number, raw, what):
    """Line ``number`` of ``path`` as text: ValueError naming the line unless UTF-8 text."""
    if number == 1 and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}, line {number}: not UTF-8 text (byte "
                         f"0x{raw[error.start]:02x} at byte {error.start + 1} of the line); "
                         f"expected {what}.") from None
    if "\x00" in text:
        raise ValueError(f"{path}, line {number}: binary data (a NUL byte), not text; "
                         f"expected {what}.")
    return text


def text_lines(path, what):
    """Yield ``(line number, text)`` for each line of the UTF-8 text file ``path``.

    Parameters
    ----------
    path : str or path-like
    what : str
        What the file should hold, for the messages (e.g. ``"a trial list"``).

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    ValueError
        Naming the file (and the line): a directory, unreadable, not UTF-8 text or binary.
    """
    with _open(path) as f:
        for number, raw in enumerate(f, 1):
            yield number, _decode(path, number, raw, what)


def _check_npz_start(path, what):
    """ValueError naming ``path`` unless it starts like a zip archive (as .npz files do)."""
    with _open(path) as f:
        head = f.read(8)
    if not head:
        raise ValueError(f"{path} is not {what}: the file is empty (0 bytes).")
    if head.startswith(_NPY_START):
        raise ValueError(f"{path} is a single .npy array, not an .npz archive of named arrays "
                         f"({what}).")
    if not head.startswith(_ZIP_STARTS):
        raise ValueError(f"{path} is not {what}: it is not a zip archive as numpy.savez "
                         f"writes; its first bytes are {head!r}.")


def _entry(npz, path, key):
    """The array ``key`` of the open archive: ValueError naming file and key if unreadable."""
    try:
        return npz[key]
    except _DAMAGED as error:
        if "allow_pickle" in str(error) or "pickle" in str(error):
            raise ValueError(f"{path}, key {key!r}: holds pickled Python objects, which "
                             "metricfit never loads; store numeric or string arrays.") from None
        raise ValueError(f"{path}, key {key!r}: damaged or truncated ({error}).") from None


def read_npz_file(path, keys=None, what="an .npz file"):
    """The arrays of the ``.npz`` file ``path`` (those of ``keys``, if given) as a dict.

    Parameters
    ----------
    path : str or path-like
    keys : sequence of str, default=None
        The entries to read, each required; None reads every entry.
    what : str
        What the file should be, for the messages.

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    ValueError
        Naming the file: a directory, empty, not an .npz archive (text, random bytes, a
        single .npy), truncated or damaged, a missing key (with the keys it does hold), or an
        entry of pickled objects.
    """
    _check_npz_start(path, what)
    try:
        npz = np.load(path, allow_pickle=False)
    except _DAMAGED as error:
        raise ValueError(f"{path} is not {what}: a damaged or truncated .npz archive "
                         f"({error}).") from None
    with npz:
        missing = [key for key in (keys or []) if key not in npz.files]
        if missing:
            raise ValueError(f"{path}: key {missing[0]!r} not found; the file holds keys "
                             f"{sorted(npz.files)} (expected {what}).")
        return {key: _entry(npz, path, key) for key in (npz.files if keys is None else keys)}
