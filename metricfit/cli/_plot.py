"""The ``metricfit verify --plot`` figure: ROC, DET and FA/FR curves (matplotlib, lazily)."""

import numpy as np


def _plot(path, curves, rows, title):
    from matplotlib.figure import Figure  # Agg canvas for PNG, no pyplot state

    fig = Figure(figsize=(18, 5))
    roc, det, fafr = fig.subplots(1, 3)
    _plot_det(det, curves)
    grid, eer = curves["grid"], {row["method"]: row["eer"] for row in rows}
    for name, curve in curves["methods"].items():
        (line,) = roc.plot(grid, curve["tar"], label=f"{name} (EER {100 * eer[name]:.1f} %)")
        fafr.plot(grid, curve["fr"], color=line.get_color(), label=name)
        fafr.plot(grid, curve["fa"], color=line.get_color(), linestyle="--")
    roc.plot([0, 1], [0, 1], ":", color="grey")
    roc.set(xlabel="false accept rate", ylabel="true accept rate",
            title="ROC (test pairs, mean over experiments)")
    fafr.set(xlabel="share of test pairs rejected (threshold as a score quantile)",
             ylabel="rate", title="FR (solid) and FA (dashed) rates, mean over experiments")
    for axes in (roc, det, fafr):
        axes.legend(fontsize="small")
    fig.suptitle(title, fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _plot_det(axes, curves):
    """The mean ROC of each method (vertically averaged) on DET normal-deviate axes."""
    from scipy.stats import norm

    from ..metrics import DET_TICKS

    grid = np.asarray(curves["grid"])
    eps = 1e-3
    for name, curve in curves["methods"].items():
        fnmr = 1 - np.asarray(curve["tar"])
        axes.plot(norm.ppf(np.clip(grid, eps, 1 - eps)), norm.ppf(np.clip(fnmr, eps, 1 - eps)),
                  label=name)
    ticks = norm.ppf(DET_TICKS)
    labels = [f"{100 * t:g}" for t in DET_TICKS]
    axes.set_xticks(ticks, labels)
    axes.set_yticks(ticks, labels)
    axes.set(xlim=(ticks[0], ticks[-1]), ylim=(ticks[0], ticks[-1]),
             xlabel="false match rate (%)", ylabel="false non-match rate (%)",
             title="DET (mean ROC on normal-deviate axes)")
