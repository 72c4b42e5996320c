"""The verification metrics on an array-API namespace (torch, CuPy, array_api_strict).

Called by the public functions of :mod:`.rates`, :mod:`.cost` and :mod:`.det` when their
input is such an array and dispatch is on (:func:`metricfit.array_api_dispatch`); NumPy input
never comes here. The same cuts as the NumPy path (module docstring of :mod:`.rates`), found
by sorting instead of ``np.unique``: with the scores sorted, ``u_sorted[i] != u_sorted[i+1]``
ends a group of tied scores; the cumulative sums of the sorted genuine flags at the group ends
are the genuine pairs rejected by each cut (the impostors: the position minus them). The counts
are exact integers and the rates the same divisions as NumPy's, so the results agree with the
NumPy path to rounding (reductions such as Cllr's means may sum in another order).

Scalars come back as Python floats, arrays in the input's namespace and on its device. Scores
are computed on in float64 (float32 where the device has no float64).
"""

import math

import numpy as np

from .._array_api import device_of, get_namespace, to_numpy

__all__ = []

_RELATIVE_MARGIN = 1e-12


def _beyond(unique, side):
    """A threshold just below the minimum (side=-1) or just above the maximum (side=+1).

    The offset ``1e-12 * max(|min|, |max|)`` (at least the smallest normal float) always
    moves off the extreme score; it gives +-inf only for scores near the float64 limit.
    """
    low, high = float(unique[0]), float(unique[-1])
    margin = max(_RELATIVE_MARGIN * max(abs(low), abs(high)), np.finfo(np.float64).tiny)
    return high + margin if side > 0 else low - margin


def namespace(y_true, scores, what="scores"):
    """``(xp, dispatched)`` of labels and scores; labels given as a list or tuple follow the
    scores' namespace."""
    if isinstance(y_true, (list, tuple)):
        return get_namespace(scores, names=[what])
    return get_namespace(y_true, scores, names=["y_true", what])


def _float64(xp, x):
    try:
        return xp.astype(x, xp.float64)
    except (TypeError, RuntimeError):  # pragma: no cover - devices without float64 (MPS)
        return xp.astype(x, xp.float32)


def check(xp, y_true, scores, *, allow_infinite=False, what="scores", both=False):
    """``(genuine, scores)``: boolean similar-pair flags and float scores, 1-D, of one length,
    in ``xp``; the errors of :func:`metricfit.pairs.checks.check_labels_and_scores`."""
    scores = xp.asarray(scores)
    if not (xp.isdtype(scores.dtype, ("real floating", "integral"))
            or scores.dtype == xp.bool):
        raise ValueError(f"{what} must be numeric, got an array of dtype {scores.dtype}.")
    if scores.ndim != 1:
        raise ValueError(f"{what} must be 1-D of shape (n_pairs,), got shape {scores.shape}.")
    if scores.shape[0] == 0:
        raise ValueError(f"{what} is empty: at least one score is needed.")
    scores = _float64(xp, scores)
    if bool(xp.any(xp.isnan(scores))):
        raise ValueError(f"{what} contains NaN: every score must be a number.")
    if not allow_infinite and not bool(xp.all(xp.isfinite(scores))):
        raise ValueError(f"{what} contains infinity: every score must be finite.")
    y = xp.asarray(y_true, device=device_of(scores)) if isinstance(y_true, (list, tuple)) \
        else y_true
    if y.ndim != 1:
        raise ValueError(f"y_true must be 1-D of shape (n_pairs,), got shape {tuple(y.shape)}.")
    if y.shape[0] != scores.shape[0]:
        raise ValueError(f"y_true and {what} have different lengths: {y.shape[0]} != "
                         f"{scores.shape[0]}.")
    values = set(to_numpy(xp.unique_values(y)).tolist())  # a few values to the host
    if not (values <= {-1, 1} or values <= {0, 1}):
        raise ValueError(f"y_true must hold pair labels in {{-1, +1}} or {{0, 1}} (1 = similar), "
                         f"got the values {sorted(values)}.")
    if both and len(values) < 2:
        raise ValueError("y_true needs both similar (target) and dissimilar (non-target) pairs.")
    return y == 1, scores


def cut_counts(xp, genuine, scores):
    """``(unique, rejected_genuine, rejected_impostor)`` as :func:`.rates._cut_counts`."""
    order = xp.argsort(scores, stable=True)
    ordered = xp.take(scores, order)
    flags = xp.astype(xp.take(genuine, order), xp.int64)
    dev = device_of(scores)
    ends = xp.concat([ordered[1:] != ordered[:-1], xp.asarray([True], device=dev)])
    seen_genuine = xp.cumulative_sum(flags)
    seen = xp.arange(1, scores.shape[0] + 1, dtype=xp.int64, device=dev)
    zero = xp.zeros(1, dtype=xp.int64, device=dev)
    rejected_genuine = xp.concat([zero, seen_genuine[ends]])
    rejected_impostor = xp.concat([zero, (seen - seen_genuine)[ends]])
    return ordered[ends], rejected_genuine, rejected_impostor


def rates(xp, rejected_genuine, rejected_impostor):
    """FAR and FRR at every cut (float64), as :func:`.rates._rates`."""
    n_genuine, n_impostor = rejected_genuine[-1], rejected_impostor[-1]
    far = _float64(xp, n_impostor - rejected_impostor) / _float64(xp, n_impostor)
    frr = _float64(xp, rejected_genuine) / _float64(xp, n_genuine)
    return far, frr


def cut_threshold(unique, cut):
    """:func:`.rates._cut_threshold` from the few scores it needs (Python floats)."""
    m = unique.shape[0]
    if cut == 0 or cut == m:
        return _beyond(np.array([float(unique[0]), float(unique[-1])]), -1 if cut == 0 else 1)
    low, high = np.float64(float(unique[cut - 1])), np.float64(float(unique[cut]))
    midpoint = 0.5 * low + 0.5 * high
    return float(midpoint if low < midpoint <= high else high)


def _counts(xp, y_true, scores):
    genuine, scores = check(xp, y_true, scores)
    return cut_counts(xp, genuine, scores)


def max_decision_accuracy(xp, y_true, scores):
    unique, rejected_genuine, rejected_impostor = _counts(xp, y_true, scores)
    correct = (rejected_genuine[-1] - rejected_genuine) + rejected_impostor
    best = int(xp.argmax(correct))
    n = int(rejected_genuine[-1]) + int(rejected_impostor[-1])
    return float(int(correct[best])) / n, cut_threshold(unique, best)


def equal_error_rate(xp, y_true, scores):
    unique, rejected_genuine, rejected_impostor = _counts(xp, y_true, scores)
    far, frr = rates(xp, rejected_genuine, rejected_impostor)
    gap = far - frr
    after = int(xp.argmax(xp.astype(gap <= 0, xp.int8)))  # >= 1 since gap[0] = 1
    m = unique.shape[0]

    def point(c):
        return float(unique[c]) if c < m else _beyond(
            np.array([float(unique[0]), float(unique[-1])]), +1)

    if float(gap[after]) == 0:
        return float(far[after]), point(after)
    before = after - 1
    g0, g1 = np.float64(float(gap[before])), np.float64(float(gap[after]))
    fraction = g0 / (g0 - g1)
    f0, f1 = np.float64(float(far[before])), np.float64(float(far[after]))
    eer = f0 + fraction * (f1 - f0)
    low, high = np.float64(point(before)), np.float64(point(after))
    return float(eer), float((1 - fraction) * low + fraction * high)


def min_dcf(xp, y_true, scores, w_miss, w_fa):
    unique, rejected_genuine, rejected_impostor = _counts(xp, y_true, scores)
    far, frr = rates(xp, rejected_genuine, rejected_impostor)
    dcf = w_miss * frr + w_fa * far
    best = int(xp.argmin(dcf))
    return float(dcf[best]), cut_threshold(unique, best)


def false_reject_at_false_accept(xp, y_true, scores, targets):
    """FRR at the lowest threshold whose FAR is at most each target (host-checked targets)."""
    unique, rejected_genuine, rejected_impostor = _counts(xp, y_true, scores)
    far, frr = rates(xp, rejected_genuine, rejected_impostor)
    wanted = xp.asarray(-targets.reshape(-1), dtype=far.dtype, device=device_of(far))
    first_below = xp.searchsorted(-far, wanted, side="left")
    return xp.reshape(xp.take(frr, first_below), targets.shape)


def _mean_of(xp, flags):
    """The mean of boolean flags as NumPy computes it (a count over a count)."""
    count = int(xp.sum(xp.astype(flags, xp.int64)))
    return np.float64(count) / np.float64(flags.shape[0])


def act_dcf(xp, y_true, llr, threshold, w_miss, w_fa):
    genuine, llr = check(xp, y_true, llr, allow_infinite=True, what="llr")
    accept = llr >= threshold
    miss = _mean_of(xp, ~accept[genuine])
    false_accept = _mean_of(xp, accept[~genuine])
    return float(w_miss * miss + w_fa * false_accept)


def cllr(xp, y_true, llr):
    genuine, llr = check(xp, y_true, llr, allow_infinite=True, what="llr", both=True)
    zero = xp.zeros(1, dtype=llr.dtype, device=device_of(llr))
    tar = float(xp.mean(xp.logaddexp(zero, -llr[genuine])))
    non = float(xp.mean(xp.logaddexp(zero, llr[~genuine])))
    return (tar + non) / (2 * math.log(2))


def on_host(function, y_true, scores):
    """``function`` of NumPy copies (one transfer each): for what the array API lacks (PAV)."""
    host_y = y_true if isinstance(y_true, (list, tuple)) else to_numpy(y_true)
    return function(host_y, to_numpy(scores))


def back(xp, array, like):
    """A NumPy result as an array of ``xp`` on the device of ``like``."""
    return xp.asarray(np.ascontiguousarray(array), device=device_of(like))


def _curve_counts(xp, y_true, scores):
    genuine, scores = check(xp, y_true, scores)
    unique, rejected_genuine, rejected_impostor = cut_counts(xp, genuine, scores)
    inf = xp.asarray([math.inf], dtype=unique.dtype, device=device_of(unique))
    return xp.concat([unique, inf]), rejected_genuine, rejected_impostor


def fa_fr_curve(xp, y_true, scores):
    thresholds, rejected_genuine, rejected_impostor = _curve_counts(xp, y_true, scores)
    far, frr = rates(xp, rejected_genuine, rejected_impostor)
    return thresholds, far, frr


def roc_curve(xp, y_true, scores):
    """:func:`sklearn.metrics.roc_curve` with ``drop_intermediate=False``: thresholds from
    inf down, FAR and TAR at each (the cuts in reverse order)."""
    thresholds, rejected_genuine, rejected_impostor = _curve_counts(xp, y_true, scores)
    n_genuine, n_impostor = rejected_genuine[-1], rejected_impostor[-1]
    far = _float64(xp, n_impostor - rejected_impostor) / _float64(xp, n_impostor)
    tar = _float64(xp, n_genuine - rejected_genuine) / _float64(xp, n_genuine)
    return xp.flip(far), xp.flip(tar), xp.flip(thresholds)


def det_curve(xp, y_true, scores):
    """:func:`sklearn.metrics.det_curve` (thresholds increasing): the cuts from the last that
    rejects no genuine pair to the first that accepts no impostor."""
    genuine, scores = check(xp, y_true, scores, both=True)
    unique, rejected_genuine, rejected_impostor = cut_counts(xp, genuine, scores)
    inf = xp.asarray([math.inf], dtype=unique.dtype, device=device_of(unique))
    thresholds = xp.concat([unique, inf])
    far, frr = rates(xp, rejected_genuine, rejected_impostor)
    low = int(xp.sum(xp.astype(rejected_genuine == 0, xp.int64))) - 1  # counts increase
    high = int(xp.argmax(xp.astype(far == 0, xp.int8)))
    return far[low:high + 1], frr[low:high + 1], thresholds[low:high + 1]
