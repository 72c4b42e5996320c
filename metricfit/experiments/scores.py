"""Score files of runs: the one module that writes and reads them.

A *run score file* is an ``.npz`` archive of 1-D arrays named
``SOURCE/METHOD/EXPERIMENT/FIELD``: ``SOURCE`` the features the run used (e.g. ``lbp``),
``METHOD`` a method of the run, ``EXPERIMENT`` the experiment's number, ``FIELD`` one of
:data:`SCORE_FIELDS` (validation scores and labels, test scores and labels, labels in
{-1, +1}). ``metricfit verify --scores`` writes one (:func:`save_scores`),
``metricfit fuse`` reads several (:func:`load_scores`) and fuses their columns; files of
disjoint experiments of one protocol join into one (:func:`merge_score_files`).

The back-end's plain-text trial lists and ``enrol test score`` files
(:mod:`metricfit.backend.trials`) are the format for exchanging one set of trials with other
tools; a run score file keeps what they cannot: the validation and test folds of every
experiment of a run, so that a fusion is fitted on validation scores only.
"""

import numpy as np

from .._files import read_npz_file
from ..pairs import check_pair_labels
from .report import experiment_numbers

__all__ = ["SCORES_FILE", "SCORE_FIELDS", "save_scores", "load_scores", "write_score_columns",
           "merge_score_files"]

SCORES_FILE = "a scores file of `metricfit verify --scores`"
SCORE_FIELDS = ("val_scores", "val_y", "scores", "y")


def save_scores(path, experiments, source, numbers=None):
    """Write the validation and test scores of every Result to ``path`` (.npz), so that runs on
    different descriptors can be fused later (:func:`~metricfit.experiments.fusion.fuse_saved`).
    Keys are ``'{source}/{method}/{experiment}/{val_scores|val_y|scores|y}'``, ``experiment``
    the experiment's number in ``numbers`` (default 0, 1, ...)."""
    columns = {}
    for e, results in zip(experiment_numbers(experiments, numbers), experiments, strict=True):
        for r in results:
            cells = {key: getattr(r, key) for key in SCORE_FIELDS}
            columns.setdefault((source, r.method), []).append(dict(cells, experiment=e))
    write_score_columns(path, columns)


def write_score_columns(path, columns):
    """Write ``columns`` (``{(source, method): [cells]}``, each cell a dict of the
    :data:`SCORE_FIELDS` arrays and its ``experiment`` number, as :func:`load_scores` returns
    them) to the run score file ``path``."""
    arrays = {}
    for (source, method), cells in columns.items():
        for cell in cells:
            for key in SCORE_FIELDS:
                arrays[f"{source}/{method}/{cell['experiment']}/{key}"] = np.asarray(cell[key])
    np.savez_compressed(path, **arrays)


def load_scores(path):
    """``{(source, method): [ {val_scores, val_y, scores, y, experiment} per experiment ]}``
    from a file of :func:`save_scores`, experiments in increasing number.

    Raises FileNotFoundError if there is no such file, and ValueError naming the file if it is
    not such a scores file (not an .npz, damaged, foreign keys, missing fields) or its arrays
    are wrong (scores not 1-D finite numbers, labels not pair labels or not one per score)."""
    saved = read_npz_file(path, what=SCORES_FILE)
    table = {}
    for key, array in saved.items():
        parts = key.rsplit("/", 3)
        if len(parts) != 4 or not parts[2].isdigit() or parts[3] not in SCORE_FIELDS:
            raise ValueError(f"{path}: key {key!r} is not SOURCE/METHOD/EXPERIMENT/FIELD "
                             f"(FIELD in {sorted(SCORE_FIELDS)}): not {SCORES_FILE}.")
        source, method, e, name = parts
        table.setdefault((source, method), {}).setdefault(int(e), {})[name] = array
    if not table:
        raise ValueError(f"{path} holds no score columns.")
    for (source, method), by_experiment in table.items():
        for e, cells in by_experiment.items():
            _check_saved_cells(cells, path, f"{source}/{method}/{e}")
            cells["experiment"] = e
    return {column: [by_experiment[e] for e in sorted(by_experiment)]
            for column, by_experiment in table.items()}


def _check_saved_cells(cells, path, where):
    """One experiment's saved arrays: every field, scores 1-D finite, labels one per score."""
    missing = sorted(set(SCORE_FIELDS) - set(cells))
    if missing:
        raise ValueError(f"{path}: {where} lacks {missing}.")
    for scores, labels in (("val_scores", "val_y"), ("scores", "y")):
        values = cells[scores]
        if values.ndim != 1 or values.dtype.kind not in "biuf" or not np.isfinite(values).all():
            raise ValueError(f"{path}: {where}/{scores} must be 1-D finite numbers, got "
                             f"dtype {values.dtype} and shape {values.shape}.")
        check_pair_labels(cells[labels], values.shape[0], require_both=False,
                          what=f"{path}: {where}/{labels}")


def merge_score_files(out, paths, methods=None):
    """One run score file ``out`` of the columns of the run score files ``paths`` (of the
    methods in ``methods`` only, if given): runs on disjoint experiments of one protocol
    (``metricfit verify --experiments``). An experiment of a column in two files is an
    error (the runs overlap)."""
    columns = {}
    for path in paths:
        for column, cells in load_scores(path).items():
            if methods is not None and column[1] not in methods:
                continue
            have = {cell["experiment"] for cell in columns.get(column, [])}
            clash = sorted(have & {cell["experiment"] for cell in cells})
            if clash:
                raise ValueError(f"{'/'.join(column)}/{clash[0]} is in two files: the runs "
                                 "overlap.")
            columns.setdefault(column, []).extend(cells)
    write_score_columns(out, {column: sorted(cells, key=lambda c: c["experiment"])
                              for column, cells in columns.items()})
