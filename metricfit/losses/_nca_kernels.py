"""NCA's compiled kernels (:mod:`metricfit.losses.nca`): the distances of a Gram row and their
minimum on vector lanes, the shifted logits and the floor below which a logit is skipped (its
weight 0; written finite, and its ``exp`` set to 0 by :func:`drop_skipped`), the neighbour
weights and their column sums. MLKR (:mod:`.mlkr`, :mod:`._mlkr_kernels`) shares all but the
neighbour weights. Pure ``nogil`` numba functions, compiled on first use; float64
accumulators for float32 data.
"""

import math

import numpy as np
from numba import njit

from ._simd_rows import pair_dot

__all__ = ["MIN_LANES", "SKIPPED_BELOW_FLOOR", "KEPT_FACTOR", "nearest_distance",
           "shifted_logits", "drop_skipped", "neighbour_weights", "logit_floor",
           "identity_members", "add_column_sums"]

MIN_LANES = 16  # lanes of shifted_logits' row minimum (two vectors of eight float64)
#: a skipped logit is written as ``floor - SKIPPED_BELOW_FLOOR``, finite and just under the
#: floor: NumPy's float64 SIMD ``exp`` leaves its vector path for a vector holding -inf or an
#: exponent under about -707.7 (NumPy 2.4, AVX-512), 230,016 entries half of them skipped
#: taking 1.57 ms with -inf and 1.93 ms with -707.9 instead of 0.16 (float32 0.11 either
#: way); NCA on digits at ``A = 3 I`` took 38 ms an evaluation against 18 at ``A = I``. The
#: floor itself is -707.40 in float64; the skipped entry's exp, ``e^0.9`` times the
#: smallest normal number, is normal.
SKIPPED_BELOW_FLOOR = 0.1
#: after ``exp``, an entry under ``KEPT_FACTOR`` times the dtype's smallest normal number is
#: a skipped one (a kept logit >= floor gives at least ``e`` times it, a skipped one
#: ``e^0.9``): ``e^0.95``, a margin of 5 % on either side, far above exp's rounding
KEPT_FACTOR = math.exp(0.95)


@njit(cache=True, nogil=True)
def nearest_distance(row, sq_i, sq_norms, g, dist, lanes):  # pragma: no cover (compiled)
    """Overwrite the Gram row ``row[j] = z_g . z_j`` with ``d_gj = max(sq_i + sq_norms[j] -
    2 row[j], 0)``, formed in float64 and stored in the row's dtype (and in float64 in
    ``dist``, (n,)); returns ``min_{j != g} d_gj`` of the float64 distances.

    The minimum runs on :data:`MIN_LANES` lanes (``lanes``, (MIN_LANES,); entry j on lane ``j
    mod MIN_LANES``, then the lanes, then the entries left over): a minimum is exact in any
    order, so this is the number a plain loop finds (the same bits), in a loop that vectorises.
    NCA's :func:`shifted_logits` and MLKR's kernel (:mod:`._mlkr_kernels`) share it."""
    n = row.shape[0]
    for j in range(n):
        d = max(sq_i + sq_norms[j] - 2.0 * row[j], 0.0)
        row[j] = d
        dist[j] = d
    dist[g] = np.inf  # j != g
    lanes[:] = np.inf
    stop = n - n % MIN_LANES
    for j0 in range(0, stop, MIN_LANES):
        for lane in range(MIN_LANES):
            d = dist[j0 + lane]
            lanes[lane] = d if d < lanes[lane] else lanes[lane]
    nearest = np.inf
    for lane in range(MIN_LANES):
        nearest = lanes[lane] if lanes[lane] < nearest else nearest
    for j in range(stop, n):
        nearest = dist[j] if dist[j] < nearest else nearest
    return nearest


@njit(cache=True, nogil=True)
def shifted_logits(S, sq_norms, start, floor):  # pragma: no cover (compiled)
    """Overwrite the Gram block ``S[i, j] = z_{start+i} . z_j`` (b, n) with
    ``min_{l != i} d_il - d_ij``, ``d_ij`` clamped at 0 (:func:`nearest_distance`; with the
    row minimum on lanes, 0.52 -> 0.19 ms float64, 0.56 -> 0.15 float32, for 128 rows of 1,797
    on the 2-core machine, the same bits). On the diagonal, and where it is below ``floor``
    (:func:`logit_floor` of S's dtype), the logit is skipped: written as ``floor -``
    :data:`SKIPPED_BELOW_FLOOR`, whose ``exp`` :func:`drop_skipped` sets to 0 (weight 0)."""
    b, n = S.shape
    lanes, dist = np.empty(MIN_LANES), np.empty(n)
    for i in range(b):
        g = start + i
        row = S[i]
        nearest = nearest_distance(row, sq_norms[g], sq_norms, g, dist, lanes)
        skipped = floor - SKIPPED_BELOW_FLOOR
        for j in range(n):
            logit = nearest - row[j]
            row[j] = logit if logit >= floor else skipped
        row[g] = skipped


@njit(cache=True, nogil=True)
def drop_skipped(E, i):  # pragma: no cover (compiled)
    """Row i of ``E = exp(shifted logits)``: the skipped entries (under :data:`KEPT_FACTOR`
    times the smallest normal number of E's dtype: :func:`shifted_logits`) set to 0."""
    keep = np.finfo(E.dtype).tiny * KEPT_FACTOR
    for j in range(E.shape[1]):
        e = E[i, j]
        E[i, j] = e if e >= keep else 0.0


@njit(cache=True, nogil=True)
def neighbour_weights(E, codes, start, members, first, last, ones, tiny, p_out,
                      r_out):  # pragma: no cover (compiled)
    """Overwrite ``E[i, j] = exp(min d_i - d_ij)`` (b, n) with ``w_ij = p_ij (m_ij - p_i)``,
    0 where ``|w_ij|`` is under ``tiny`` (the smallest normal number of E's dtype: no
    subnormal weight reaches the GEMMs, :func:`logit_floor`), and for the skipped entries
    (:func:`drop_skipped`, first).

    Writes ``p_i`` (b,) and the row sums ``r_i`` (b,) of W as stored (float64). The row's
    total and ``r_i`` are sums in :func:`metricfit.losses._simd_rows.pair_dot`'s fixed order
    on vector lanes (``ones``: a (1, n) row of ones of E's dtype); the identity's share adds
    ``E[i, j]`` over the points j of i's identity, ``members[first[g]:last[g]]`` (by index),
    one after the other. Rows are independent: any split of the rows gives the same numbers.
    (Before, both sums ran one entry after the other, latency-bound: 0.55 -> 0.14 ms for 128
    rows of 1,797.)
    """
    b, n = E.shape
    for i in range(b):
        g = start + i
        code = codes[g]
        drop_skipped(E, i)
        total = pair_dot(E, i, ones, 0)
        same = 0.0
        for t in range(first[g], last[g]):
            same += E[i, members[t]]  # E[i, g] = 0: the point itself adds nothing
        p_i = same / total
        scale = 1.0 / total
        row = E[i]
        e_g = row[g]
        for j in range(n):
            w = (row[j] * scale) * ((1.0 if codes[j] == code else 0.0) - p_i)
            row[j] = w if abs(w) >= tiny else 0.0
        row[g] = (e_g * scale) * (0.0 - p_i)  # m_ii = 0
        p_out[i] = p_i
        r_out[i] = pair_dot(E, i, ones, 0)


def logit_floor(dtype):
    """The smallest logit :func:`shifted_logits` keeps in ``dtype``: ``log`` of its smallest
    normal number, plus 1. Below it ``exp`` would give a subnormal number (float32: under
    1.2e-38, a logit under -87.3), a weight smaller than the float64 sums of a row (at least 1,
    from the nearest point) can hold, and subnormal operands slow the GEMMs and the
    conversions down many times: on digits after 10 float32 iterations, 8.8% of a block's
    weights were subnormal and one evaluation took 145 ms instead of 16 (the scales of a
    learned metric spread the logits out). Such logits are skipped (weight 0:
    :func:`shifted_logits`, :func:`drop_skipped`)."""
    return float(np.log(np.finfo(dtype).tiny)) + 1.0


def identity_members(codes):
    """``(members, first, last)`` for :func:`neighbour_weights`: the point indices sorted by
    code (by index within a code) and, for each point, the range of its code's entries."""
    members = np.argsort(codes, kind="stable")
    ordered = codes[members]
    return (members, np.searchsorted(ordered, codes, side="left"),
            np.searchsorted(ordered, codes, side="right"))


@njit(cache=True, nogil=True)
def add_column_sums(W, c_out):  # pragma: no cover (compiled)
    """``c_out[j] += sum_i W[i, j]`` (float64), row by row in order."""
    for i in range(W.shape[0]):
        for j in range(W.shape[1]):
            c_out[j] += W[i, j]
