"""DET curves (ISO/IEC 19795 names: false match and false non-match rates) and their plot
on normal-deviate axes."""

import numpy as np

from ..pairs.checks import check_labels_and_scores
from .rates import _array_api, equal_error_rate

__all__ = ["det_curve", "plot_det"]


def det_curve(y_true, scores):
    """DET curve ``(fmr, fnmr, thresholds)`` (:func:`sklearn.metrics.det_curve`, pos_label
    +1); plot it on normal-deviate axes with :func:`plot_det` (``scipy.stats.norm.ppf``).
    Torch, CuPy or array_api_strict input with dispatch on: computed in its namespace, the
    arrays on its device (:mod:`metricfit.metrics._xp`)."""
    if (done := _array_api("det_curve", y_true, scores)) is not None:
        return done
    from sklearn.metrics import det_curve as sklearn_det_curve

    s, scores = check_labels_and_scores(y_true, scores)
    return sklearn_det_curve(s, scores, pos_label=1)


DET_TICKS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4)


def plot_det(curves, ax=None):
    """Draw DET curves on normal-deviate axes (matplotlib, imported here only).

    Parameters
    ----------
    curves : dict name -> (y_true, scores)
    ax : matplotlib Axes or None (a new Figure's)

    Returns
    -------
    ax
    """
    from scipy.stats import norm

    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(5, 5)).subplots()
    eps = 1e-4
    for name, (y, scores) in curves.items():
        fmr, fnmr, _ = det_curve(y, scores)
        eer = equal_error_rate(y, scores)[0]
        ax.plot(norm.ppf(np.clip(fmr, eps, 1 - eps)), norm.ppf(np.clip(fnmr, eps, 1 - eps)),
                label=f"{name} (EER {100 * eer:.1f} %)")
    ticks = norm.ppf(DET_TICKS)
    labels = [f"{100 * t:g}" for t in DET_TICKS]
    ax.set_xticks(ticks, labels)
    ax.set_yticks(ticks, labels)
    ax.set(xlim=(ticks[0], ticks[-1]), ylim=(ticks[0], ticks[-1]),
           xlabel="false match rate (%)", ylabel="false non-match rate (%)", title="DET")
    ax.legend(fontsize="small")
    return ax
