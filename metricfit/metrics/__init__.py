"""Verification metrics: pair labels and similarity scores in, numbers out.

Scores are "higher = more similar" and a pair is declared similar when ``score >= threshold``.
Labels are pair labels in {-1, +1} or {0, 1} (see :func:`metricfit.pairs.check_pair_labels`).
The false-accept rate (FAR) is the fraction of dissimilar (impostor) pairs declared similar;
the false-reject rate (FRR) is the fraction of similar (genuine) pairs declared dissimilar.

Every threshold splits the sorted distinct scores ``u[0] < ... < u[m-1]`` at a *cut*
``c in 0..m``: the scores ``u[:c]`` are rejected and ``u[c:]`` accepted. All the metrics
below are computed exactly on these ``m + 1`` cuts in O(n log n), so tied scores always get
the same decision.

The names below live in four modules, all importable from here: :mod:`.rates` (maxDA, EER, ROC,
FAR / FRR, thresholds), :mod:`.cost` (DCF, Cllr, PAV, ROCCH), :mod:`.det` (DET curve and plot)
and :mod:`.scorers` (scorers for model selection).
"""

from .cost import (
                   DCF_PRESETS,
                   act_dcf,
                   bayes_threshold,
                   cllr,
                   min_cllr,
                   min_dcf,
                   pav_llr,
                   roc_convex_hull,
)
from .det import DET_TICKS, det_curve, plot_det  # noqa: F401 (DET_TICKS: the CLI's plot)
from .rates import (  # noqa: F401
                   THRESHOLD_STRATEGIES,
                   accuracy_at_threshold,
                   calibrate_threshold,
                   equal_error_rate,
                   fa_fr_curve,
                   false_reject_at_false_accept,
                   fnmr_at_fmr,
                   max_decision_accuracy,
                   roc_curve,
)
from .scorers import (  # noqa: F401 (llr_response)
                   get_scorer,
                   llr_response,
                   max_accuracy_scorer,
                   neg_act_dcf_scorer,
                   neg_cllr_scorer,
                   neg_eer_scorer,
                   neg_fmr100_scorer,
                   neg_fmr1000_scorer,
                   neg_min_cllr_scorer,
                   neg_min_dcf_scorer,
)

__all__ = [
    "max_decision_accuracy",
    "equal_error_rate",
    "roc_curve",
    "fa_fr_curve",
    "false_reject_at_false_accept",
    "accuracy_at_threshold",
    "calibrate_threshold",
    "max_accuracy_scorer",
    "neg_eer_scorer",
    "get_scorer",
    "DCF_PRESETS", "min_dcf", "act_dcf", "bayes_threshold", "cllr", "min_cllr",
    "pav_llr", "roc_convex_hull", "fnmr_at_fmr", "det_curve", "plot_det",
    "neg_min_dcf_scorer", "neg_act_dcf_scorer", "neg_cllr_scorer",
    "neg_min_cllr_scorer", "neg_fmr100_scorer", "neg_fmr1000_scorer",
]
