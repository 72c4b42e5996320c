"""The speaker-verification costs: DCF (NIST SRE), Cllr and minCllr (BOSARIS), the PAV
transform and the ROC convex hull.

Scores for actDCF and Cllr are log-likelihood ratios (natural log), "accept" = llr >= theta.

Torch, CuPy or array_api_strict input with dispatch on (:func:`metricfit.array_api_dispatch`):
minDCF, actDCF and Cllr are computed in its namespace (:mod:`metricfit.metrics._xp`); PAV has
no array-API form, so :func:`pav_llr`, :func:`min_cllr` and :func:`roc_convex_hull` copy the
labels and scores to the host once and run the NumPy code (``pav_llr`` returns its LLRs in the
input's namespace, on its device).
"""

import numpy as np

from ..pairs.checks import check_labels_and_scores, require_both_classes
from .rates import _array_api, _cut_counts, _cut_threshold, _rates

__all__ = ["DCF_PRESETS", "min_dcf", "act_dcf", "bayes_threshold", "cllr", "min_cllr",
           "pav_llr", "roc_convex_hull"]

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
    p, cm, cf = _operating_point(p_target, c_miss, c_fa, preset)
    if (done := _array_api("min_dcf", y_true, scores, *_dcf_terms(p, cm, cf))) is not None:
        return done
    s, scores = check_labels_and_scores(y_true, scores)
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
    p, cm, cf = _operating_point(p_target, c_miss, c_fa, preset)
    done = _array_api("act_dcf", y_true, llr, bayes_threshold(p, cm, cf), *_dcf_terms(p, cm, cf),
                      what="llr")
    if done is not None:
        return done
    s, llr = check_labels_and_scores(y_true, llr, allow_infinite=True, what="llr")
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
    if (done := _array_api("cllr", y_true, llr, what="llr")) is not None:
        return done
    s, llr = check_labels_and_scores(y_true, llr, allow_infinite=True, what="llr")
    require_both_classes(s)
    tar = np.mean(np.logaddexp(0, -llr[s == 1]))
    non = np.mean(np.logaddexp(0, llr[s != 1]))
    return float((tar + non) / (2 * np.log(2)))


def pav_llr(y_true, scores):
    """The pool-adjacent-violators (isotonic) transform of ``scores`` into the LLRs that are
    optimal on these trials (the "oracle" calibration behind minCllr and the ROC convex hull):
    the isotonic posterior p of a target, as a log-odds minus the log-odds of the empirical
    target proportion. Values are +-inf in pure bins.

    Only the order of the scores matters: the isotonic fit sees each score's rank among the
    distinct scores (scikit-learn's ``IsotonicRegression`` merges inputs closer than its
    tolerance, which pooled every score below a magnitude of about 1e-20). Array-API input
    (dispatch on): computed on the host (one copy), the LLRs returned in its namespace."""
    from sklearn.isotonic import IsotonicRegression

    from . import _xp

    xp, dispatched = _xp.namespace(y_true, scores)
    if dispatched:
        return _xp.back(xp, _xp.on_host(pav_llr, y_true, scores), scores)

    s, scores = check_labels_and_scores(y_true, scores)
    require_both_classes(s)
    rank = np.unique(scores, return_inverse=True)[1].reshape(-1).astype(np.float64)
    post = IsotonicRegression(out_of_bounds="clip").fit_transform(rank, (s == 1).astype(float))
    prior = np.mean(s == 1)
    with np.errstate(divide="ignore"):
        return np.log(post) - np.log1p(-post) - np.log(prior / (1 - prior))


def min_cllr(y_true, scores):
    """Cllr after the optimal monotone (PAV) calibration on these trials: the discrimination
    part of Cllr (``cllr - min_cllr`` is the calibration loss). Array-API input (dispatch
    on): PAV on the host, one copy of the labels and scores."""
    from . import _xp

    if _xp.namespace(y_true, scores)[1]:
        return _xp.on_host(min_cllr, y_true, scores)
    s, scores = check_labels_and_scores(y_true, scores)
    llr = pav_llr(s, scores)
    with np.errstate(over="ignore"):
        tar = np.where(np.isposinf(llr), 0.0, np.logaddexp(0, -llr))[s == 1]
        non = np.where(np.isneginf(llr), 0.0, np.logaddexp(0, llr))[s != 1]
    return float((tar.mean() + non.mean()) / (2 * np.log(2)))


def roc_convex_hull(y_true, scores):
    """The vertices ``(p_fa, p_miss)`` of the ROC convex hull (ROCCH), from the PAV bins:
    accept everything at and above each bin, from "accept all" to "reject all". Array-API
    input (dispatch on): computed on the host, the vertices returned in its namespace."""
    from . import _xp

    xp, dispatched = _xp.namespace(y_true, scores)
    if dispatched:
        return tuple(_xp.back(xp, v, scores)
                     for v in _xp.on_host(roc_convex_hull, y_true, scores))
    s, scores = check_labels_and_scores(y_true, scores)
    llr = pav_llr(s, scores)
    levels = np.unique(llr)
    p_fa = [np.mean(llr[s != 1] >= v) for v in levels] + [0.0]
    p_miss = [np.mean(llr[s == 1] < v) for v in levels] + [1.0]
    return np.array(p_fa), np.array(p_miss)
