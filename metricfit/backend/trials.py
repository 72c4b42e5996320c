"""Trial lists and score files in the common plain-text formats (Kaldi, BOSARIS, VoxCeleb
tools), so that metricfit scores can be evaluated by other tools and the other way round.

- trial list: one trial per line, ``enrol test label`` (whitespace-separated). The label of
  a target trial is ``target``, ``tgt`` or ``1``; of a non-target trial ``nontarget``,
  ``non``, ``impostor`` or ``0``; words in any case (``TARGET``, ``NonTarget``).
  :func:`write_trials` writes ``target`` / ``nontarget`` and takes these words or
  {-1, +1}, {0, 1} and booleans;
- score file: ``enrol test score`` per line.

In both, blank lines and lines whose first field starts with ``#`` (comments) are skipped.

Ids are strings naming an enrolment model and a test segment; :func:`score_trials` maps them
to vectors (or sets of vectors) and scores every trial with a learner.
"""

import numpy as np

from .._files import text_lines
from ..pairs import check_pair_labels
from .enrolment import score_sets

__all__ = ["read_trials", "read_trial_list", "write_trials", "read_scores", "write_scores",
           "score_trials"]

_TARGET = {"target": 1, "1": 1, "tgt": 1, "nontarget": -1, "0": -1, "non": -1, "impostor": -1}


def _lines(path, what):
    """(line number, fields) of the non-blank, non-comment lines of the text file ``path``."""
    for number, line in text_lines(path, what):
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            yield number, fields


def read_trials(path):
    """``(enrol_ids, test_ids, y)``: string arrays and labels in {-1, +1} (+1 target).

    Examples
    --------
    >>> import os, tempfile
    >>> from metricfit.backend import read_trials
    >>> lines = ["# enrol test label", "spk1 utt1 target", "spk1 utt2 nontarget",
    ...          "spk2 utt3 1", "spk2 utt1 IMPOSTOR"]
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "trials.txt")
    ...     with open(path, "w") as f:
    ...         _ = f.write("\\n".join(lines) + "\\n")
    ...     enrol, test, y = read_trials(path)
    >>> enrol.tolist(), test.tolist(), y.tolist()
    (['spk1', 'spk1', 'spk2', 'spk2'], ['utt1', 'utt2', 'utt3', 'utt1'], [1, -1, 1, -1])
    """
    enrol, test, y = [], [], []
    for number, fields in _lines(path, "a trial list ('enrol test target|nontarget' lines)"):
        if len(fields) != 3 or fields[2].lower() not in _TARGET:
            raise ValueError(f"{path}, line {number}: expected 'enrol test target|nontarget', "
                             f"got {' '.join(fields)!r}.")
        enrol.append(fields[0])
        test.append(fields[1])
        y.append(_TARGET[fields[2].lower()])
    if not y:
        raise ValueError(f"{path} holds no trials.")
    return np.array(enrol), np.array(test), np.array(y, dtype=np.int8)


def read_trial_list(path):
    """``(enrol_ids, test_ids, y)`` of a trial list to score: ``enrol test`` lines (a key
    without labels; ``y`` is then None) or ``enrol test target|nontarget`` lines (as
    :func:`read_trials`); one form for the whole file.

    Raises
    ------
    ValueError
        Naming the file and the line: not 2 or 3 fields, a line of the other form than the
        first trial's, or an unknown label; an empty list.

    Examples
    --------
    >>> import os, tempfile
    >>> from metricfit.backend import read_trial_list
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "trials.txt")
    ...     with open(path, "w") as f:
    ...         _ = f.write("spk1 utt1\\nspk2 utt1\\n")
    ...     enrol, test, y = read_trial_list(path)
    >>> enrol.tolist(), test.tolist(), y
    (['spk1', 'spk2'], ['utt1', 'utt1'], None)
    """
    enrol, test, y, first = [], [], [], None
    for number, fields in _lines(path, "a trial list ('enrol test [target|nontarget]' lines)"):
        if first is None and len(fields) in (2, 3):
            first = (number, len(fields))
        if first is None or len(fields) != first[1]:
            form = "'enrol test'" if first and first[1] == 2 else \
                "'enrol test target|nontarget'" if first else "'enrol test [target|nontarget]'"
            where = f" as on line {first[0]}" if first else ""
            raise ValueError(f"{path}, line {number}: expected {form}{where}, got "
                             f"{' '.join(fields)!r}.")
        if len(fields) == 3:
            if fields[2].lower() not in _TARGET:
                raise ValueError(f"{path}, line {number}: unknown trial label {fields[2]!r}; "
                                 f"expected one of {sorted(_TARGET)} (any case).")
            y.append(_TARGET[fields[2].lower()])
        enrol.append(fields[0])
        test.append(fields[1])
    if not enrol:
        raise ValueError(f"{path} holds no trials.")
    return np.array(enrol), np.array(test), np.array(y, dtype=np.int8) if y else None


def _check_ids(ids, what):
    """Ids as strings that survive the round trip through a file: non-empty, no whitespace,
    not starting with '#' (a comment); else ValueError naming ``what`` and the first bad id."""
    ids = [str(i) for i in ids]
    for k, text in enumerate(ids):
        if not text or text.startswith("#") or len(text.split()) != 1 or text.strip() != text:
            raise ValueError(f"{what}[{k}] = {text!r}: ids must be non-empty, without "
                             "whitespace and not start with '#', to be read back.")
    return ids


def _trial_labels(y, n_trials):
    """``y`` as {-1, +1} (int8): {-1, +1}, {0, 1}, booleans (:func:`check_pair_labels`) or
    the words of :func:`read_trials` (``target`` / ``nontarget``..., any case)."""
    y = np.asarray(y)
    if y.dtype.kind == "O" and not any(isinstance(v, (str, bytes)) for v in y.ravel().tolist()):
        y = np.asarray(y.tolist())  # numbers or booleans in an object array: their own dtype
    if y.dtype.kind not in "OUS":
        return check_pair_labels(y, n_trials, require_both=False, what="y")
    if y.ndim != 1 or y.shape[0] != n_trials:
        raise ValueError(f"y must be 1-D with one label per trial ({n_trials}), got shape "
                         f"{y.shape}.")
    words = [str(label).lower() for label in y.tolist()]
    bad = sorted(set(words) - _TARGET.keys())
    if bad:
        raise ValueError(f"y: trial labels must be +1/-1, 1/0, booleans or the words "
                         f"{sorted(_TARGET)} (any case), got {bad[:5]}.")
    return np.array([_TARGET[w] for w in words], dtype=np.int8)


def write_trials(path, enrol_ids, test_ids, y):
    """Write ``enrol test target|nontarget`` lines.

    ``y``: {-1, +1} or {0, 1} or booleans (+1 / 1 / True target), or the words
    :func:`read_trials` reads (``target`` / ``nontarget``, any case). Other labels, and ids
    that would not be read back (empty, with whitespace, starting with '#'), raise
    ValueError before anything is written.

    Examples
    --------
    >>> import os, tempfile
    >>> from metricfit.backend import read_trials, write_trials
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "trials.txt")
    ...     write_trials(path, ["spk1", "spk1", "spk2"], ["utt1", "utt2", "utt3"], [1, 0, 1])
    ...     with open(path) as f:
    ...         print(f.read(), end="")
    ...     write_trials(path, ["spk1", "spk2"], ["utt1", "utt3"], ["TGT", "impostor"])
    ...     print(read_trials(path)[2])
    spk1 utt1 target
    spk1 utt2 nontarget
    spk2 utt3 target
    [ 1 -1]
    """
    if not len(enrol_ids) == len(test_ids) == len(y):
        raise ValueError("enrol_ids, test_ids and y must have the same length.")
    enrol_ids, test_ids = _check_ids(enrol_ids, "enrol_ids"), _check_ids(test_ids, "test_ids")
    s = _trial_labels(y, len(enrol_ids))
    with open(path, "w") as f:
        for e, t, label in zip(enrol_ids, test_ids, s, strict=True):
            f.write(f"{e} {t} {'target' if label == 1 else 'nontarget'}\n")


def write_scores(path, enrol_ids, test_ids, scores):
    """Write ``enrol test score`` lines (scores with full float64 precision).

    Examples
    --------
    >>> import os, tempfile
    >>> from metricfit.backend import read_scores, write_scores
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "scores.txt")
    ...     write_scores(path, ["spk1", "spk2"], ["utt1", "utt3"], [0.5, 1 / 3])
    ...     with open(path) as f:
    ...         print(f.read(), end="")
    ...     scores = read_scores(path)[2]
    spk1 utt1 0.5
    spk2 utt3 0.3333333333333333
    >>> bool(scores[1] == 1 / 3)  # read back to the last bit
    True
    """
    scores = np.asarray(scores, dtype=np.float64)
    if not len(enrol_ids) == len(test_ids) == scores.size:
        raise ValueError("enrol_ids, test_ids and scores must have the same length.")
    if not np.isfinite(scores).all():
        raise ValueError("scores contain NaN or infinity.")
    enrol_ids, test_ids = _check_ids(enrol_ids, "enrol_ids"), _check_ids(test_ids, "test_ids")
    with open(path, "w") as f:
        for e, t, score in zip(enrol_ids, test_ids, scores, strict=True):
            f.write(f"{e} {t} {float(score)!r}\n")


def read_scores(path):
    """``(enrol_ids, test_ids, scores)`` from ``enrol test score`` lines.

    Examples
    --------
    >>> import os, tempfile
    >>> from metricfit.backend import read_scores
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "scores.txt")
    ...     with open(path, "w") as f:
    ...         _ = f.write("spk1 utt1 2.5\\nspk2 utt3 -1e-3\\n")
    ...     enrol, test, scores = read_scores(path)
    >>> enrol.tolist(), test.tolist(), scores.tolist()
    (['spk1', 'spk2'], ['utt1', 'utt3'], [2.5, -0.001])
    """
    enrol, test, scores = [], [], []
    for number, fields in _lines(path, "a score file ('enrol test score' lines)"):
        try:
            value = float(fields[2]) if len(fields) == 3 else None
        except ValueError:
            value = None
        if value is None or not np.isfinite(value):
            raise ValueError(f"{path}, line {number}: expected 'enrol test score' with a finite "
                             f"score, got {' '.join(fields)!r}.")
        enrol.append(fields[0])
        test.append(fields[1])
        scores.append(value)
    if not scores:
        raise ValueError(f"{path} holds no scores.")
    return np.array(enrol), np.array(test), np.array(scores)


def score_trials(learner, enrol_ids, test_ids, enrolments, segments, method=None):
    """Score trials given by ids: ``enrolments[id]`` the vectors (n, d) enrolling a model,
    ``segments[id]`` the test vector(s); N-vs-M by :func:`score_sets`.

    Parameters
    ----------
    learner : fitted learner or Pipeline ending in one
        As :func:`score_sets` takes it.
    enrol_ids, test_ids : sequence of str of length n_trials
        The ids of each trial, e.g. the first two arrays of :func:`read_trials`.
    enrolments : dict
        Enrolment id -> array-like of shape (n_i, d): the vectors enrolling that model (a
        1-D row is one vector).
    segments : dict
        Test id -> array-like of shape (d,) or (m_j, d): the test vector, or the set of them.
    method : str or None, default=None
        One of :data:`metricfit.backend.enrolment.METHODS`; None: 'plda' for a PLDA
        learner, else 'mean-embedding' (see :func:`score_sets`).

    Returns
    -------
    scores : ndarray of shape (n_trials,)
        The score of each trial, higher = more likely a target.

    Raises
    ------
    ValueError
        When an id is missing from its dictionary (naming the first ones), and as
        :func:`score_sets` raises. Ids are compared as strings.

    Examples
    --------
    A cosine scorer; ``spk1`` enrolled from two vectors, ``utt3`` a set of two:

    >>> import numpy as np
    >>> from metricfit.backend import score_trials
    >>> from metricfit.learners import CosineSimilarity
    >>> pairs = np.array([[[1.0, 0.0], [1.0, 0.1]], [[1.0, 0.0], [-1.0, 0.2]]])
    >>> learner = CosineSimilarity().fit(pairs, [1, -1])
    >>> enrolments = {"spk1": [[1.0, 0.0], [1.0, 0.2]], "spk2": [[0.0, 1.0]]}
    >>> segments = {"utt1": [1.0, 0.1], "utt2": [-1.0, 0.5], "utt3": [[0.1, 1.0], [0.0, 2.0]]}
    >>> enrol, test = ["spk1", "spk1", "spk2", "spk2"], ["utt1", "utt2", "utt3", "utt1"]
    >>> np.round(score_trials(learner, enrol, test, enrolments, segments), 3)
    array([ 1.   , -0.846,  0.999,  0.1  ])
    >>> np.round(score_trials(learner, enrol, test, enrolments, segments, "max-score"), 3)
    array([ 0.995, -0.789,  1.   ,  0.1  ])
    """
    for ids, table, what in ((enrol_ids, enrolments, "enrolment"), (test_ids, segments, "test")):
        unknown = sorted({str(i) for i in ids} - {str(k) for k in table})
        if unknown:
            more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
            raise ValueError(f"the trial list names unknown {what} id(s) "
                             f"{', '.join(unknown[:3])}{more}.")
    enrolments = {str(k): v for k, v in enrolments.items()}
    segments = {str(k): v for k, v in segments.items()}
    return score_sets(learner, [enrolments[str(e)] for e in enrol_ids],
                      [segments[str(t)] for t in test_ids], method)
