"""Versioned, pickle-free persistence of fitted estimators: arrays and JSON in one ``.npz``.

:func:`save_estimator` writes a ``format`` entry ``"metricfit.<Class>/<version>"``, the
metricfit version, the constructor parameters as JSON (``params_json``) and what the estimator
says it learned; :func:`load_estimator` reads it back with ``allow_pickle=False`` and checks
every entry, so that a damaged or foreign file is a ValueError naming the file and the entry,
never a stray exception from deep inside.

An estimator joins by declaring, beside :func:`persistable` (which registers its class by
name):

- ``_save_version`` (int): the layout it writes now; :func:`load_estimator` reads every
  version up to it and refuses newer ones (from a newer metricfit) with a clear error;
- ``_saved_entries`` (tuple of str): the entries a file must hold besides ``params_json``;
- ``_fitted_entries(self) -> dict``: name -> array (a name ending in ``_json`` holds a dict,
  written as a JSON string);
- ``_restore_fitted(self, saved)``: set the fitted attributes from ``saved``, a
  :class:`SavedEntries` whose readers check type, shape and finiteness.

A missing file is FileNotFoundError; a file that is not an ``.npz`` is ValueError
(:func:`metricfit._files.read_npz_file`).
"""

import json
from numbers import Integral

import numpy as np

from .._files import read_npz_file
from .._validation import validate_params
from .._version import __version__

__all__ = ["save_estimator", "load_estimator", "persistable", "SavedEntries"]

_PERSISTABLE = {}  # class name -> class, filled by @persistable


def persistable(cls):
    """Class decorator: :func:`load_estimator` finds ``cls`` by its name in a file's format."""
    _PERSISTABLE[cls.__name__] = cls
    return cls


def _format_name(cls):
    return f"metricfit.{cls.__name__}"


def save_estimator(est, path):
    """Write the fitted ``est`` to ``path`` (an ``.npz`` of arrays and JSON strings).

    A ``random_state`` that is not an int or None, and ``callback``, are saved as None: a
    generator or a function is not data.
    """
    params = est.get_params()
    if not isinstance(params.get("random_state"), (Integral, type(None))):
        params["random_state"] = None
    if "callback" in params:
        params["callback"] = None
    entries = {name: np.array(json.dumps(value)) if name.endswith("_json") else value
               for name, value in est._fitted_entries().items()}
    np.savez(path, format=np.array(f"{_format_name(type(est))}/{est._save_version}"),
             metricfit_version=np.array(__version__),
             params_json=np.array(json.dumps(params)), **entries)


def load_estimator(path, cls=None):
    """The fitted estimator :func:`save_estimator` wrote to ``path``.

    Parameters
    ----------
    path : str or path-like
    cls : class, default=None
        The estimator class the file must hold; None: the class its format names (one
        registered with :func:`persistable`).

    Returns
    -------
    estimator
    """
    what = (f"a {_format_name(cls)} file from {cls.__name__}.save" if cls is not None
            else "a saved metricfit estimator")
    f = read_npz_file(path, what=what)
    cls = cls or _registered_class(f, path)
    version = _check_format(cls, f, path)
    est = cls(**_saved_params(cls, f, path))
    est._restore_fitted(SavedEntries(f, path, version))
    return est


def _registered_class(f, path):
    fmt = str(f["format"]) if "format" in f else ""
    name = fmt.partition("/")[0].partition(".")[2]
    if not fmt.startswith("metricfit.") or name not in _PERSISTABLE:
        raise ValueError(f"{path} is not a saved metricfit estimator (format entry {fmt!r}).")
    return _PERSISTABLE[name]


def _check_format(cls, f, path):
    """The version of the ``format`` entry (``"metricfit.<Class>/<version>"``), checked, and
    the presence of the entries that version holds."""
    fmt, name, latest = str(f["format"]) if "format" in f else "", _format_name(cls), \
        cls._save_version
    found, _, version = fmt.partition("/")
    if found != name:
        raise ValueError(f"{path} is not a {name} file from {cls.__name__}.save "
                         f"(format entry {fmt!r}).")
    if not version.isdigit() or int(version) < 1:
        raise ValueError(f"{path}: unknown {name} format version {version!r}; this "
                         f"metricfit ({__version__}) reads versions 1 to {latest}.")
    if int(version) > latest:
        written_by = str(f["metricfit_version"]) if "metricfit_version" in f else "?"
        raise ValueError(f"{path} was saved in {name} format version {version} (by "
                         f"metricfit {written_by}); this metricfit ({__version__}) reads "
                         f"versions 1 to {latest}: upgrade metricfit to load it.")
    missing = set(("params_json",) + tuple(cls._saved_entries)) - set(f)
    if missing:
        raise ValueError(f"{path} lacks the entries {sorted(missing)} of format version "
                         f"{version}.")
    return int(version)


def _saved_params(cls, f, path):
    """The constructor parameters of ``params_json``: known names, valid values."""
    params = SavedEntries(f, path).json("params_json")
    unknown = sorted(set(params) - set(cls().get_params()))
    if unknown:
        raise ValueError(f"{path}: entry 'params_json' names unknown parameters {unknown}.")
    params = {k: _tuples(v) for k, v in params.items()}
    try:
        validate_params(cls(**params))
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: entry 'params_json': {error}") from None
    return params


def _tuples(value):
    """JSON lists back to the tuples they were saved from (nested too)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


class SavedEntries:
    """Checked readers of the entries of a saved file; every error is a ValueError naming the
    file and the entry.

    Parameters
    ----------
    f : mapping of str to ndarray
        The file's arrays.
    path : str or path-like
        For the messages.
    version : int, default=None
        The file's format version.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.learners.persistence import SavedEntries
    >>> saved = SavedEntries({"n": np.array(3.0), "info_json": np.array('{"a": 1}')}, "f.npz")
    >>> saved.number("n"), saved.json("info_json")
    (3.0, {'a': 1})
    """

    def __init__(self, f, path, version=None):
        self.f, self.path, self.version = f, path, version

    def __contains__(self, key):
        return key in self.f

    def json(self, key):
        """The JSON object (a dict) in the string entry ``key``."""
        entry = self.f[key]
        if entry.shape != () or entry.dtype.kind != "U":
            raise ValueError(f"{self.path}: entry {key!r} must be one JSON string, got an array "
                             f"of dtype {entry.dtype} and shape {entry.shape}.")
        try:
            value = json.loads(str(entry))
        except ValueError as error:  # json.JSONDecodeError
            raise ValueError(f"{self.path}: entry {key!r} is not valid JSON ({error}).") from None
        if not isinstance(value, dict):
            raise ValueError(f"{self.path}: entry {key!r} must hold a JSON object, got "
                             f"{type(value).__name__}.")
        return value

    def array(self, key, shape):
        """The numeric entry ``key`` of shape ``shape``."""
        entry = self.f[key]
        if entry.shape != shape or entry.dtype.kind not in "biuf":
            raise ValueError(f"{self.path}: entry {key!r} must be numeric of shape {shape}, got "
                             f"dtype {entry.dtype} and shape {entry.shape}.")
        return entry

    def number(self, key, finite=True):
        """The number in the entry ``key`` (finite, or with ``finite=False`` not NaN)."""
        value = float(self.array(key, ()))
        if np.isnan(value) or (finite and not np.isfinite(value)):
            raise ValueError(f"{self.path}: entry {key!r} must be a finite number, got {value}.")
        return value

    def floats(self, key, size, what):
        """A flat vector of ``size`` finite floats (``what`` says why that size)."""
        values = self.f[key]
        if values.dtype.kind != "f" or values.shape != (size,):
            raise ValueError(f"{self.path}: entry {key!r} must be {size} floats ({what}), got "
                             f"dtype {values.dtype} and shape {values.shape}.")
        if not np.isfinite(values).all():
            raise ValueError(f"{self.path}: entry {key!r} holds NaN or infinity.")
        return values

    def fail(self, key, message):
        """A ValueError about the entry ``key``."""
        return ValueError(f"{self.path}: entry {key!r} {message}")
