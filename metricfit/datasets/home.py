"""The data folder and the loading of its ``.npz`` files, with messages that say where they
looked."""

import os
from pathlib import Path

from sklearn.utils import Bunch

from .._files import read_npz_file

__all__ = ["ENV_VAR", "get_data_home", "read_npz"]

ENV_VAR = "METRICFIT_DATA"


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
        default = Path(__file__).resolve().parents[2].parent / "shared" / "data"
        data_home = os.environ.get(ENV_VAR) or default
    return Path(data_home).expanduser()


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
