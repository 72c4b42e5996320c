"""Verification metrics: pair labels and similarity scores in, numbers out.

Scores are "higher = more similar" and a pair is declared similar when ``score >= threshold``.
Labels are pair labels in {-1, +1} or {0, 1} (see :func:`metricfit.pairs.check_pair_labels`).
The false-accept rate (FAR) is the fraction of dissimilar (impostor) pairs declared similar;
the false-reject rate (FRR) is the fraction of similar (genuine) pairs declared dissimilar.

Every threshold splits the sorted distinct scores ``u[0] < ... < u[m-1]`` at a *cut*
``c in 0..m``: the scores ``u[:c]`` are rejected and ``u[c:]`` accepted. All the metrics
below are computed exactly on these ``m + 1`` cuts in O(n log n), so tied scores always get
the same decision.
"""

import numpy as np
from sklearn.metrics import make_scorer
from sklearn.metrics import roc_curve as sklearn_roc_curve

from .pairs import check_pair_labels

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
]

THRESHOLD_STRATEGIES = ("accuracy", "eer")
_RELATIVE_MARGIN = 1e-12


def _check_scores(scores, *, allow_infinite=False, what="scores"):
    """Validate scores alone (no labels): a numeric 1-D array, as float64.

    One score is valid (a verifier scores one trial at a time). NaN is always an error;
    +-inf only where ``allow_infinite`` (log-likelihood ratios of pure PAV bins are +-inf).
    """
    scores = np.asarray(scores)
    if scores.dtype.kind not in "biuf":
        raise ValueError(f"{what} must be numeric, got an array of dtype {scores.dtype}.")
    if scores.ndim != 1:
        raise ValueError(f"{what} must be 1-D of shape (n_pairs,), got shape {scores.shape}.")
    if scores.size == 0:
        raise ValueError(f"{what} is empty: at least one score is needed.")
    scores = scores.astype(np.float64)  # exact for float32 and for integers below 2**53
    if np.isnan(scores).any():
        raise ValueError(f"{what} contains NaN: every score must be a number.")
    if not allow_infinite and not np.isfinite(scores).all():
        raise ValueError(f"{what} contains infinity: every score must be finite.")
    return scores


def _check_labels_and_scores(y_true, scores, *, allow_infinite=False, what="scores"):
    """Validate and return ``(s, scores)``: int8 labels in {-1, +1}, float64 1-D scores."""
    scores = _check_scores(scores, allow_infinite=allow_infinite, what=what)
    if np.ndim(y_true) == 1 and len(y_true) != scores.size:
        raise ValueError(
            f"y_true and {what} have different lengths: {len(y_true)} != {scores.size}."
        )
    return check_pair_labels(y_true, scores.size), scores


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


def _beyond(unique, side):
    """A threshold just below the minimum (side=-1) or just above the maximum (side=+1).

    The offset ``1e-12 * max(|min|, |max|)`` (at least the smallest normal float) always
    moves off the extreme score; it gives +-inf only for scores near the float64 limit.
    """
    low, high = float(unique[0]), float(unique[-1])
    margin = max(_RELATIVE_MARGIN * max(abs(low), abs(high)), np.finfo(np.float64).tiny)
    return high + margin if side > 0 else low - margin


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
    """
    s, scores = _check_labels_and_scores(y_true, scores)
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
    """
    s, scores = _check_labels_and_scores(y_true, scores)
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
    ``drop_intermediate`` defaults to False (one point per distinct score).
    """
    s, scores = _check_labels_and_scores(y_true, scores)
    return sklearn_roc_curve(s, scores, pos_label=1, drop_intermediate=drop_intermediate)


def fa_fr_curve(y_true, scores):
    """False-accept and false-reject rates ``(thresholds, far, frr)`` at every threshold.

    ``thresholds`` holds the m distinct scores in increasing order, then ``inf`` (reject all);
    ``far[k]``, ``frr[k]`` are the rates when accepting ``score >= thresholds[k]``.
    """
    s, scores = _check_labels_and_scores(y_true, scores)
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
    """
    s, scores = _check_labels_and_scores(y_true, scores)
    targets = np.asarray(far, dtype=np.float64)
    if not (np.isfinite(targets).all() and (targets >= 0).all() and (targets <= 1).all()):
        raise ValueError(f"far targets must be rates in [0, 1], got {far!r}.")
    _, rejected_genuine, rejected_impostor = _cut_counts(s, scores)
    far_at_cut, frr_at_cut = _rates(rejected_genuine, rejected_impostor)
    first_below = np.searchsorted(-far_at_cut, -targets, side="left")
    return frr_at_cut[first_below]


def accuracy_at_threshold(y_true, scores, threshold):
    """Fraction of right decisions when declaring similar every pair with score >= threshold."""
    s, scores = _check_labels_and_scores(y_true, scores)
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


def _max_accuracy_value(y_true, scores):
    return max_decision_accuracy(y_true, scores)[0]


def _eer_value(y_true, scores):
    return equal_error_rate(y_true, scores)[0]


#: maxDA of ``estimator.decision_function(X)``; greater is better.
max_accuracy_scorer = make_scorer(_max_accuracy_value, response_method="decision_function")

#: Negated EER of ``estimator.decision_function(X)`` (like scikit-learn's ``neg_*`` scorers,
#: so that greater is better); the EER itself is ``-neg_eer_scorer(estimator, X, y)``.
neg_eer_scorer = make_scorer(
    _eer_value, response_method="decision_function", greater_is_better=False
)

_SCORERS = {"max_accuracy": max_accuracy_scorer, "neg_eer": neg_eer_scorer}


def get_scorer(name):
    """The scorer named 'max_accuracy', 'neg_eer', 'neg_min_dcf', 'neg_act_dcf', 'neg_cllr',
    'neg_min_cllr', 'neg_fmr100' or 'neg_fmr1000', for ``scoring=`` in model selection (the
    last six are defined further down this module)."""
    try:
        return _SCORERS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown scorer {name!r}; choose one of {sorted(_SCORERS)}.") from None


# --------------------------------------------------------------------------------------------
# The speaker-verification units: DCF, Cllr, FNMR at FMR, DET (NIST SRE, BOSARIS, ISO 19795).
# Scores for actDCF and Cllr are log-likelihood ratios (natural log), "accept" = llr >= theta.

#: Named operating points ``(P_target, C_miss, C_fa)``: NIST SRE / VoxCeleb use 0.01 and
#: 0.001 (C_miss = C_fa = 1 in VoxSRC), 0.05 is VoxSRC's other point.
DCF_PRESETS = {"p01": (0.01, 1.0, 1.0), "p001": (0.001, 1.0, 1.0), "p05": (0.05, 1.0, 1.0)}


def _operating_point(p_target, c_miss, c_fa, preset):
    if preset is not None:
        if preset not in DCF_PRESETS:
            raise ValueError(f"unknown DCF preset {preset!r}; choose from {sorted(DCF_PRESETS)}.")
        return DCF_PRESETS[preset]
    if not 0 < p_target < 1 or not c_miss > 0 or not c_fa > 0:
        raise ValueError(f"need 0 < p_target < 1 and positive costs, got p_target={p_target}, "
                         f"c_miss={c_miss}, c_fa={c_fa}.")
    return float(p_target), float(c_miss), float(c_fa)


def _dcf_terms(p_target, c_miss, c_fa):
    """The weights of P_miss and P_fa in the DCF normalised by the best trivial system."""
    norm = min(c_miss * p_target, c_fa * (1 - p_target))
    return c_miss * p_target / norm, c_fa * (1 - p_target) / norm


def min_dcf(y_true, scores, p_target=0.01, c_miss=1.0, c_fa=1.0, *, preset=None):
    """Minimum normalised detection cost over all thresholds (NIST SRE).

    ``DCF(theta) = [C_miss P_tar P_miss(theta) + C_fa (1 - P_tar) P_fa(theta)] / min(C_miss
    P_tar, C_fa (1 - P_tar))``, minimised over every cut between distinct scores (exact).
    ``preset`` ('p01', 'p001', 'p05', :data:`DCF_PRESETS`) overrides the three numbers.
    Any score scale works (only the order matters). Returns ``(min_dcf, threshold)``.
    """
    s, scores = _check_labels_and_scores(y_true, scores)
    p, cm, cf = _operating_point(p_target, c_miss, c_fa, preset)
    unique, rejected_genuine, rejected_impostor = _cut_counts(s, scores)
    far, frr = _rates(rejected_genuine, rejected_impostor)
    w_miss, w_fa = _dcf_terms(p, cm, cf)
    dcf = w_miss * frr + w_fa * far
    best = int(np.argmin(dcf))
    return float(dcf[best]), _cut_threshold(unique, best)


def bayes_threshold(p_target=0.01, c_miss=1.0, c_fa=1.0, *, preset=None):
    """The Bayes decision threshold on a calibrated LLR: ``log(C_fa (1 - P) / (C_miss P))``."""
    p, cm, cf = _operating_point(p_target, c_miss, c_fa, preset)
    return float(np.log(cf * (1 - p) / (cm * p)))


def act_dcf(y_true, llr, p_target=0.01, c_miss=1.0, c_fa=1.0, *, preset=None):
    """Actual normalised DCF: the cost of deciding ``llr >= bayes_threshold`` (the scores
    must be log-likelihood ratios; the gap to :func:`min_dcf` is the calibration loss).
    LLRs of +-inf are valid (decided like any LLR above / below the threshold); NaN is not."""
    s, llr = _check_labels_and_scores(y_true, llr, allow_infinite=True, what="llr")
    p, cm, cf = _operating_point(p_target, c_miss, c_fa, preset)
    accept = llr >= bayes_threshold(p, cm, cf)
    w_miss, w_fa = _dcf_terms(p, cm, cf)
    return float(w_miss * np.mean(~accept[s == 1]) + w_fa * np.mean(accept[s != 1]))


def cllr(y_true, llr):
    """Log-likelihood-ratio cost (Brümmer and du Preez 2006), in bits::

        Cllr = 1/(2 log 2) [mean_tar log(1 + e^-llr) + mean_non log(1 + e^llr)]

    1 for a system that always says llr = 0; 0 for perfect, calibrated, infinitely
    confident scores. Infinite LLRs are valid input (:func:`pav_llr` gives them in pure
    bins): a right one costs 0, a wrong one (-inf for a target, +inf for a non-target) makes
    Cllr infinite. NaN is an error."""
    s, llr = _check_labels_and_scores(y_true, llr, allow_infinite=True, what="llr")
    _require_both(s)
    tar = np.mean(np.logaddexp(0, -llr[s == 1]))
    non = np.mean(np.logaddexp(0, llr[s != 1]))
    return float((tar + non) / (2 * np.log(2)))


def _require_both(s):
    if np.unique(s).size < 2:
        raise ValueError("y_true needs both similar (target) and dissimilar (non-target) pairs.")


def pav_llr(y_true, scores):
    """The pool-adjacent-violators (isotonic) transform of ``scores`` into the LLRs that are
    optimal on these trials (the "oracle" calibration behind minCllr and the ROC convex hull):
    the isotonic posterior p of a target, as a log-odds minus the log-odds of the empirical
    target proportion. Values are +-inf in pure bins.

    Only the order of the scores matters: the isotonic fit sees each score's rank among the
    distinct scores (scikit-learn's ``IsotonicRegression`` merges inputs closer than its
    tolerance, which pooled every score below a magnitude of about 1e-20)."""
    from sklearn.isotonic import IsotonicRegression

    s, scores = _check_labels_and_scores(y_true, scores)
    _require_both(s)
    rank = np.unique(scores, return_inverse=True)[1].reshape(-1).astype(np.float64)
    post = IsotonicRegression(out_of_bounds="clip").fit_transform(rank, (s == 1).astype(float))
    prior = np.mean(s == 1)
    with np.errstate(divide="ignore"):
        return np.log(post) - np.log1p(-post) - np.log(prior / (1 - prior))


def min_cllr(y_true, scores):
    """Cllr after the optimal monotone (PAV) calibration on these trials: the discrimination
    part of Cllr (``cllr - min_cllr`` is the calibration loss)."""
    s, scores = _check_labels_and_scores(y_true, scores)
    llr = pav_llr(s, scores)
    with np.errstate(over="ignore"):
        tar = np.where(np.isposinf(llr), 0.0, np.logaddexp(0, -llr))[s == 1]
        non = np.where(np.isneginf(llr), 0.0, np.logaddexp(0, llr))[s != 1]
    return float((tar.mean() + non.mean()) / (2 * np.log(2)))


def roc_convex_hull(y_true, scores):
    """The vertices ``(p_fa, p_miss)`` of the ROC convex hull (ROCCH), from the PAV bins:
    accept everything at and above each bin, from "accept all" to "reject all"."""
    s, scores = _check_labels_and_scores(y_true, scores)
    llr = pav_llr(s, scores)
    levels = np.unique(llr)
    p_fa = [np.mean(llr[s != 1] >= v) for v in levels] + [0.0]
    p_miss = [np.mean(llr[s == 1] < v) for v in levels] + [1.0]
    return np.array(p_fa), np.array(p_miss)


def fnmr_at_fmr(y_true, scores, fmr=0.01):
    """False non-match rate at a false match rate (ISO/IEC 19795 names for FRR at FAR; see
    :func:`false_reject_at_false_accept`). FMR100: fmr=0.01; FMR1000: fmr=0.001."""
    return false_reject_at_false_accept(y_true, scores, fmr)


def det_curve(y_true, scores):
    """DET curve ``(fmr, fnmr, thresholds)`` (:func:`sklearn.metrics.det_curve`, pos_label
    +1); plot it on normal-deviate axes with :func:`plot_det` (``scipy.stats.norm.ppf``)."""
    from sklearn.metrics import det_curve as sklearn_det_curve

    s, scores = _check_labels_and_scores(y_true, scores)
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


def _llr_response(estimator, X):
    """``pair_score`` (an LLR for PLDA and calibrated learners), looking through a Pipeline's
    transformers; ``decision_function`` for estimators without it."""
    steps = getattr(estimator, "steps", None)
    if steps is not None and hasattr(steps[-1][1], "pair_score"):
        for _, step in steps[:-1]:
            if step is not None and step != "passthrough":
                X = step.transform(X)
        return steps[-1][1].pair_score(X)
    if hasattr(estimator, "pair_score"):
        return estimator.pair_score(X)
    return estimator.decision_function(X)


def _scorer(function, sign=-1.0):
    def scorer(estimator, X, y):
        return sign * function(y, _llr_response(estimator, X))
    scorer.__name__ = f"neg_{function.__name__}_scorer" if sign < 0 else function.__name__
    return scorer


#: minDCF at P_target 0.01, negated (greater is better) for GridSearchCV.
neg_min_dcf_scorer = _scorer(lambda y, s: min_dcf(y, s, preset="p01")[0])
#: actDCF at P_target 0.01 of ``pair_score`` (an LLR), negated.
neg_act_dcf_scorer = _scorer(lambda y, s: act_dcf(y, s, preset="p01"))
#: Cllr of ``pair_score`` (an LLR), negated.
neg_cllr_scorer = _scorer(cllr)
#: minCllr, negated.
neg_min_cllr_scorer = _scorer(min_cllr)
#: FNMR at FMR = 1 % (FMR100), negated.
neg_fmr100_scorer = _scorer(lambda y, s: float(fnmr_at_fmr(y, s, 0.01)))
#: FNMR at FMR = 0.1 % (FMR1000), negated.
neg_fmr1000_scorer = _scorer(lambda y, s: float(fnmr_at_fmr(y, s, 0.001)))

_SCORERS.update({"neg_min_dcf": neg_min_dcf_scorer, "neg_act_dcf": neg_act_dcf_scorer,
                 "neg_cllr": neg_cllr_scorer, "neg_min_cllr": neg_min_cllr_scorer,
                 "neg_fmr100": neg_fmr100_scorer, "neg_fmr1000": neg_fmr1000_scorer})
__all__ += ["DCF_PRESETS", "min_dcf", "act_dcf", "bayes_threshold", "cllr", "min_cllr",
            "pav_llr", "roc_convex_hull", "fnmr_at_fmr", "det_curve", "plot_det",
            "neg_min_dcf_scorer", "neg_act_dcf_scorer", "neg_cllr_scorer",
            "neg_min_cllr_scorer", "neg_fmr100_scorer", "neg_fmr1000_scorer"]
