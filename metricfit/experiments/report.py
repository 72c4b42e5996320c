"""Reports of runs: mean and SEM per method, averaged curves, the printed table, JSON records.

A run is a list (per experiment) of lists of
:class:`~metricfit.experiments.evaluation.Result`, the same methods in each experiment.
"""

from dataclasses import fields

import numpy as np

from ..metrics import fa_fr_curve, roc_curve
from .evaluation import Result

__all__ = ["summarise", "mean_curves", "format_table", "as_records", "experiment_numbers"]


def summarise(experiments):
    """Mean and standard error of the mean over experiments, per method, in method order."""
    rows = []
    for column in zip(*experiments, strict=True):
        row = {"method": column[0].method, "n_experiments": len(column)}
        for key in ("accuracy", "maxda", "eer", "min_dcf", "cllr_raw", "cllr", "act_dcf"):
            values = np.array([getattr(r, key) for r in column])
            sem = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
            row[key], row[key + "_sem"] = float(values.mean()), float(sem)
        row["lams"] = [r.lam for r in column]
        if any(r.n_components is not None for r in column):
            row["n_components"] = [r.n_components for r in column]
            row["normalize"] = [r.normalize for r in column]
        if any(r.descriptor is not None for r in column):
            row["descriptors"] = [r.descriptor for r in column]
        rows.append(row)
    return rows


def mean_curves(experiments, n_points=101):
    """Per method, curves averaged over the experiments (vertical averaging on a grid of
    ``n_points`` in [0, 1]): the ROC (``tar``: best true-accept rate at false-accept rate <=
    ``grid``) and the FA / FR rates (``fa``, ``fr``) at the threshold rejecting the share
    ``grid`` of the test pairs (a scale-free threshold axis: methods' scores differ in scale).
    Returns ``{"grid": [...], "methods": {name: {"tar", "fa", "fr": [...]}}}``."""
    grid = np.linspace(0.0, 1.0, n_points)
    curves = {}
    for column in zip(*experiments, strict=True):
        tar, fa, fr = [], [], []
        for r in column:
            far, tpr, _ = roc_curve(r.y, r.scores)
            tar.append(tpr[np.searchsorted(far, grid, side="right") - 1])
            thresholds, far, frr = fa_fr_curve(r.y, r.scores)
            rejected = np.searchsorted(np.sort(r.scores), thresholds) / r.scores.size
            at = np.searchsorted(rejected, grid, side="right") - 1
            fa.append(far[at])
            fr.append(frr[at])
        curves[column[0].method] = {key: np.mean(v, axis=0).tolist()
                                    for key, v in (("tar", tar), ("fa", fa), ("fr", fr))}
    return {"grid": grid.tolist(), "methods": curves}


def format_table(rows, calibrated=False, prior=0.01):
    """A plain-text table of :func:`summarise` rows, percentages with +- SEM, then minDCF at
    P_target ``prior`` (the run's: the title says it) and Cllr: of the raw scores, or
    (``calibrated``) of the scores calibrated on the validation fold, with their actDCF."""
    width = max([11] + [len(row["method"]) for row in rows])
    dcf = f"minDCF({prior:g})"
    extra = ((("min_dcf", dcf), ("cllr", "Cllr cal"), ("act_dcf", "actDCF cal"))
             if calibrated else (("min_dcf", dcf), ("cllr_raw", "Cllr")))
    lines = [f"{'method':<{width}} {'accuracy %':>15} {'maxDA %':>15} {'EER %':>15} "
             + " ".join(f"{title:>15}" for _, title in extra)]
    for row in rows:
        cells = [f"{100 * row[k]:6.2f} +- {100 * row[k + '_sem']:4.2f}"
                 for k in ("accuracy", "maxda", "eer")]
        cells += [f"{row.get(k, np.nan):6.3f} +- {row.get(k + '_sem', np.nan):5.3f}"
                  for k, _ in extra]
        lines.append(f"{row['method']:<{width}} " + " ".join(f"{c:>15}" for c in cells))
    return "\n".join(lines)


def experiment_numbers(experiments, numbers=None):
    """The number of each experiment: ``numbers`` (checked: one per experiment), or 0, 1, ...
    (the position)."""
    numbers = list(range(len(experiments))) if numbers is None else list(numbers)
    if len(numbers) != len(experiments):
        raise ValueError(f"{len(numbers)} experiment numbers for {len(experiments)} "
                         "experiments.")
    return numbers


def as_records(experiments, numbers=None):
    """Every Result as a dict (without scores and model), with its experiment number (JSON):
    its entry in ``numbers`` (default 0, 1, ...: the position)."""
    keys = [f.name for f in fields(Result) if f.metadata.get("json", True)]
    return [dict({k: getattr(r, k) for k in keys}, experiment=e)
            for e, results in zip(experiment_numbers(experiments, numbers), experiments,
                                  strict=True)
            for r in results]
