"""Rates at every threshold: maxDA, EER, ROC, FAR / FRR curves, FRR at FAR, thresholds.

Every threshold splits the sorted distinct scores ``u[0] < ... < u[m-1]`` at a *cut*
``c in 0..m``: the scores ``u[:c]`` are rejected and ``u[c:]`` accepted. All the metrics
below are computed exactly on these ``m + 1`` cuts in O(n log n), so tied scores always get
the same decision.
"""

import numpy as np
from sklearn.metrics import roc_curve as sklearn_roc_curve

from ..pairs.checks import check_labels_and_scores
from . import _xp
from ._xp import _beyond

__all__ = ["max_decision_accuracy", "equal_error_rate", "roc_curve", "fa_fr_curve",
           "false_reject_at_false_accept", "accuracy_at_threshold", "calibrate_threshold",
           "fnmr_at_fmr"]

THRESHOLD_STRATEGIES = ("accuracy", "eer")


def _array_api(name, y_true, scores, *args, what="scores"):
    """The result of :mod:`._xp`'s ``name`` when the input is a dispatched array-API array
    (torch, CuPy, ...; :func:`metricfit.array_api_dispatch`), else None (NumPy path)."""
    xp, dispatched = _xp.namespace(y_true, scores, what)
    return getattr(_xp, name)(xp, y_true, scores, *args) if dispatched else None


def _cut_counts(s, scores):
    """Distinct sorted scores and, for each cut c, the genuine and impostor pairs rejected.

    Returns ``(unique, rejected_genuine, rejected_impostor)``; the counts have length m + 1.
    """
    unique, inverse = np.unique(scores, return_inverse=True)
    genuine = np.bincount(inverse[s == 1], minlength=unique.size)
    impostor = np.bincount(inverse[s != 1], minlength=unique.size)
    rejected_genuine = np.concatenate(([0], np.cumsum(genuine)))
    rejected_impostor = np.concatenate(([0], np.cumsum(impostor)))
    return unique, rejected_genuine, rejected_impostor


def _rates(rejected_genuine, rejected_impostor):
    """FAR and FRR at every cut, from the cumulative rejected counts."""
    n_genuine, n_impostor = rejected_genuine[-1], rejected_impostor[-1]
    far = (n_impostor - rejected_impostor) / n_impostor
    frr = rejected_genuine / n_genuine
    return far, frr


def _cut_threshold(unique, cut):
    """A threshold realising ``cut``: the midpoint of the two scores it separates."""
    if cut == 0:
        return _beyond(unique, -1)
    if cut == unique.size:
        return _beyond(unique, +1)
    low, high = unique[cut - 1], unique[cut]
    midpoint = 0.5 * low + 0.5 * high
    return float(midpoint if low < midpoint <= high else high)


def max_decision_accuracy(y_true, scores):
    """Maximal decision accuracy (maxDA) over all thresholds and a threshold reaching it.

    ``DA(gamma) = #{i : decision_i(gamma) is right} / n`` with ``decision_i = scores_i >=
    gamma``, maximised over every threshold (all cuts between distinct scores).

    Parameters
    ----------
    y_true : array-like of shape (n_pairs,)
        Pair labels in {-1, +1} or {0, 1}, 1 = similar.
    scores : array-like of shape (n_pairs,)
        Finite similarity scores, higher = more similar.

    Returns
    -------
    accuracy : float
    threshold : float
        The midpoint between the two consecutive distinct scores where the best cut lies
        (the upper score if the midpoint is not representable). If the best is to accept
        (reject) every pair, a value ``1e-12 * max(|min|, |max|)`` below the minimum (above
        the maximum) score. When several cuts tie for the best, the lowest threshold.

    Examples
    --------
    >>> from metricfit.metrics import max_decision_accuracy
    >>> y = [1, 1, 1, -1, -1, -1]
    >>> accuracy, threshold = max_decision_accuracy(y, [0.9, 0.8, 0.3, 0.4, 0.2, 0.1])
    >>> round(accuracy, 4), threshold   # 5 of 6 right: only the 0.3 genuine pair is missed
    (0.8333, 0.25)

    Torch, CuPy or array_api_strict input with dispatch on is computed in its namespace
    (:mod:`metricfit.metrics._xp`); the results are Python floats in every case.
    """
    if (done := _array_api("max_decision_accuracy", y_true, scores)) is not None:
        return done
    s, scores = check_labels_and_scores(y_true, scores)
    unique, rejected_genuine, rejected_impostor = _cut_counts(s, scores)
    correct = (rejected_genuine[-1] - rejected_genuine) + rejected_impostor
    best = int(np.argmax(correct))
    return float(correct[best]) / s.size, _cut_threshold(unique, best)


def equal_error_rate(y_true, scores):
    """Equal error rate: where the false-accept and false-reject rates cross.

    FAR and FRR are evaluated at the ROC points "accept ``score >= u[c]``" for every distinct
    score ``u[c]``, plus "reject all". FAR - FRR strictly decreases from 1 to -1 along them;
    between the two consecutive points where it changes sign, FAR, FRR and the threshold are
    interpolated linearly (the same fraction of the way for all three), and the EER is the
    interpolated FAR (= the interpolated FRR) at the crossing.

    Parameters
    ----------
    y_true : array-like of shape (n_pairs,)
        Pair labels in {-1, +1} or {0, 1}, 1 = similar.
    scores : array-like of shape (n_pairs,)
        Finite similarity scores, higher = more similar.

    Returns
    -------
    eer : float in [0, 1]
    threshold : float
        The interpolated threshold. It is an exact score when a ROC point has FAR = FRR;
        the "reject all" point uses a value just above the maximum score.

    Examples
    --------
    >>> from metricfit.metrics import equal_error_rate
    >>> eer, threshold = equal_error_rate([1, 1, 1, -1, -1, -1], [0.9, 0.8, 0.3, 0.4, 0.2, 0.1])
    >>> round(eer, 4), threshold   # at 0.4: one genuine in 3 rejected, one impostor in 3 accepted
    (0.3333, 0.4)

    Torch, CuPy or array_api_strict input with dispatch on is computed in its namespace
    (sorted scores and cumulative counts, :mod:`metricfit.metrics._xp`).
    """
    if (done := _array_api("equal_error_rate", y_true, scores)) is not None:
        return done
    s, scores = check_labels_and_scores(y_true, scores)
    unique, rejected_genuine, rejected_impostor = _cut_counts(s, scores)
    far, frr = _rates(rejected_genuine, rejected_impostor)
    point_thresholds = np.append(unique, _beyond(unique, +1))
    gap = far - frr
    after = int(np.argmax(gap <= 0))  # >= 1 since gap[0] = 1
    if gap[after] == 0:
        return float(far[after]), float(point_thresholds[after])
    before = after - 1
    fraction = gap[before] / (gap[before] - gap[after])
    eer = far[before] + fraction * (far[after] - far[before])
    low, high = point_thresholds[before], point_thresholds[after]
    return float(eer), float((1 - fraction) * low + fraction * high)


def roc_curve(y_true, scores, *, drop_intermediate=False):
    """ROC curve ``(far, tar, thresholds)``: :func:`sklearn.metrics.roc_curve`, pos_label=+1.

    Thresholds decrease from ``inf`` (accept nothing), as in scikit-learn; unlike it,
    ``drop_intermediate`` defaults to False (one point per distinct score). Torch, CuPy or
    array_api_strict input with dispatch on: computed in its namespace (``drop_intermediate``
    False only), the arrays on its device.
    """
    if not drop_intermediate and (done := _array_api("roc_curve", y_true, scores)) is not None:
        return done
    s, scores = check_labels_and_scores(y_true, scores)
    return sklearn_roc_curve(s, scores, pos_label=1, drop_intermediate=drop_intermediate)


def fa_fr_curve(y_true, scores):
    """False-accept and false-reject rates ``(thresholds, far, frr)`` at every threshold.

    ``thresholds`` holds the m distinct scores in increasing order, then ``inf`` (reject all);
    ``far[k]``, ``frr[k]`` are the rates when accepting ``score >= thresholds[k]``.
    Array-API input (dispatch on): arrays of its namespace, on its device.
    """
    if (done := _array_api("fa_fr_curve", y_true, scores)) is not None:
        return done
    s, scores = check_labels_and_scores(y_true, scores)
    unique, rejected_genuine, rejected_impostor = _cut_counts(s, scores)
    far, frr = _rates(rejected_genuine, rejected_impostor)
    return np.append(unique, np.inf), far, frr


def false_reject_at_false_accept(y_true, scores, far=(0.1, 0.01, 0.001)):
    """False-reject rate at given false-accept rates.

    For each target, the operating point is the lowest threshold whose *empirical* FAR is
    at most the target (what a deployed system calibrated on these pairs would use): it never
    exceeds the target FAR and has the smallest FRR among the thresholds that do. No
    interpolation; a target below ``1 / n_impostor`` typically forces FAR = 0.

    Parameters
    ----------
    far : float or array-like of floats in [0, 1], default=(0.1, 0.01, 0.001)

    Returns
    -------
    frr : ndarray of the shape of ``far``
        An array of the scores' namespace, on their device, for array-API input with
        dispatch on.
    """
    targets = np.asarray(far, dtype=np.float64)
    if not (np.isfinite(targets).all() and (targets >= 0).all() and (targets <= 1).all()):
        raise ValueError(f"far targets must be rates in [0, 1], got {far!r}.")
    if (done := _array_api("false_reject_at_false_accept", y_true, scores, targets)) is not None:
        return done
    s, scores = check_labels_and_scores(y_true, scores)
    _, rejected_genuine, rejected_impostor = _cut_counts(s, scores)
    far_at_cut, frr_at_cut = _rates(rejected_genuine, rejected_impostor)
    first_below = np.searchsorted(-far_at_cut, -targets, side="left")
    return frr_at_cut[first_below]


def accuracy_at_threshold(y_true, scores, threshold):
    """Fraction of right decisions when declaring similar every pair with score >= threshold."""
    s, scores = check_labels_and_scores(y_true, scores)
    if not isinstance(threshold, (int, float, np.integer, np.floating)) or np.isnan(threshold):
        raise ValueError(f"threshold must be a real number, got {threshold!r}.")
    return float(np.mean((scores >= threshold) == (s == 1)))


def calibrate_threshold(y_true, scores, strategy="accuracy"):
    """Choose a decision threshold on labelled pairs; estimators use it to set ``threshold_``.

    Parameters
    ----------
    strategy : {'accuracy', 'eer'}, default='accuracy'
        The threshold of :func:`max_decision_accuracy` or of :func:`equal_error_rate`.
    """
    if strategy == "accuracy":
        return max_decision_accuracy(y_true, scores)[1]
    if strategy == "eer":
        return equal_error_rate(y_true, scores)[1]
    raise ValueError(f"strategy must be one of {THRESHOLD_STRATEGIES}, got {strategy!r}.")


def fnmr_at_fmr(y_true, scores, fmr=0.01):
    """False non-match rate at a false match rate (ISO/IEC 19795 names for FRR at FAR; see
    :func:`false_reject_at_false_accept`). FMR100: fmr=0.01; FMR1000: fmr=0.001."""
    return false_reject_at_false_accept(y_true, scores, fmr)
