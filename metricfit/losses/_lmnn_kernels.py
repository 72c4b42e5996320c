"""numba kernels of LMNN's push term: the active impostor triples of a block of anchors.

Pure, module-level, compiled on first use (``cache=True``), sums in float64. A block takes
two steps: :func:`impostor_rows` scans its anchors (fixed units side by side on several
threads), keeping each anchor's active impostors and their weights in its own row of the Gram
block, then :func:`impostor_steps` adds their steps to dZ, anchor after anchor, on one thread
(a step writes the impostor's row, which other anchors share). The hinge is summed per anchor,
then over the anchors in order, so cost and gradient are the same bit for bit on any thread
count (:func:`metricfit.losses.lmnn._impostors` runs the two on a block). (The one-pass kernel
they replace, the steps inside the scan, ran 15-17% slower on one thread: the step loop inside
kept the scan from vectorising.) The plain-NumPy twin of a block is ``impostor_block_ref`` in
tests/test_lmnn.py.

The scan screens each anchor's row :data:`SCREEN` points at a time (:func:`_any_candidate`:
the impostor test without branches on an unsigned index, which the compiler vectorises; the
test with its branches did not) and runs the exact loop only on the chunks with a candidate:
the same points in the same order, so the same numbers. On digits-30 at ``L = I`` (1,521
active triples), the scan of its blocks of 512 rows took 1.36-1.38 ms instead of 2.49 on one
thread of the 2-core machine. :func:`target_distances` and :func:`target_steps` do the target
pairs' part (before: NumPy on an (n, K, k) array of differences, whose broadcast subtraction
alone took 0.87 ms there). A fit on digits-30, one thread: 0.407 -> 0.348 s (float64), 0.348
-> 0.239 s (float32), 41 iterations either way (docs/results/timing.md).
"""

import numpy as np
from numba import njit, prange

__all__ = ["impostor_rows", "impostor_rows_parallel", "impostor_steps", "target_distances",
           "target_steps"]

SCREEN = 64  # points screened at once for a candidate impostor


@njit(cache=True, nogil=True, inline="always")
def _anchor_radius(target_d, i, counts):  # pragma: no cover (compiled)
    """Reset ``counts[i]``; return the largest ``1 + d_ij`` of anchor i (no impostor beyond
    it)."""
    radius = -np.inf
    for t in range(target_d.shape[1]):
        counts[i, t] = 0.0
        if 1.0 + target_d[i, t] > radius:
            radius = 1.0 + target_d[i, t]
    return radius


@njit(cache=True, nogil=True, inline="always")
def _impostor_weight(target_d, i, d_il, counts):  # pragma: no cover (compiled)
    """``(w_il, sum_t margin_ilt)``: the number of targets j for which l is active, the sum of
    its active margins ``1 + d_ij - d_il``, and ``counts[i, t]`` incremented."""
    w = 0.0
    margins = 0.0
    for t in range(target_d.shape[1]):
        margin = 1.0 + target_d[i, t] - d_il
        if margin > 0.0:
            margins += margin
            counts[i, t] += 1.0
            w += 1.0
    return w, margins


@njit(cache=True, nogil=True)
def _any_candidate(g, sq_i, sq_norms, codes, code, radius, lo, hi):  # pragma: no cover
    """The number of points l in lo..hi-1 of another class with ``|z_i|^2 + |z_l|^2 - 2 g_l <
    radius`` (for finite entries a superset of :func:`impostor_rows`' test ``max(., 0) <
    radius``: the radius is at least 1, or -inf), without branches and on an unsigned index:
    a loop the compiler vectorises."""
    hits = 0
    for t in range(hi - lo):
        l = np.uint64(lo + t)  # noqa: E741 (the paper's index)
        x = sq_i + sq_norms[l] - 2.0 * g[l]
        hits += (x < radius) & (codes[l] != code)
    return hits


@njit(cache=True, nogil=True)
def impostor_rows(G, sq_norms, codes, start, target_d, counts, hinge, active, n_active, lo,
                  hi):  # pragma: no cover (compiled)
    """The impostor scan of the anchors lo..hi-1 of a block (the Gram block G), without the
    steps: ``hinge[i]`` (the anchor's sum of active margins), ``counts[i]``, and the anchor's
    active impostors in order, ``active[i, :n_active[i]]`` (their points) and ``G[i,
    :n_active[i]]`` (their weights w_il, integers, exact in G's dtype; written over entries
    of the row already read). Rows are independent: any split gives the same numbers."""
    n = G.shape[1]
    for i in range(lo, hi):
        g = start + i
        code = codes[g]
        sq_i = sq_norms[g]
        radius = _anchor_radius(target_d, i, counts)
        anchor_loss = 0.0
        p = 0
        for lo_l in range(0, n, SCREEN):
            hi_l = min(lo_l + SCREEN, n)
            if not _any_candidate(G[i], sq_i, sq_norms, codes, code, radius, lo_l, hi_l):
                continue
            for l in range(lo_l, hi_l):  # noqa: E741 (the paper's index)
                if codes[l] == code:
                    continue
                d_il = max(sq_i + sq_norms[l] - 2.0 * G[i, l], 0.0)
                if d_il >= radius:
                    continue
                w, margins = _impostor_weight(target_d, i, d_il, counts)
                anchor_loss += margins
                if w > 0.0:
                    active[i, p] = l
                    G[i, p] = w  # p <= l: the row's entry l is read before
                    p += 1
        hinge[i] = anchor_loss
        n_active[i] = p


@njit(cache=True, nogil=True, parallel=True)
def impostor_rows_parallel(G, sq_norms, codes, start, target_d, counts, hinge, active,
                           n_active, n_rows, block):  # pragma: no cover (compiled)
    """:func:`impostor_rows` block by block on numba's threads (``_rows.run_rows``)."""
    for t in prange(-(-n_rows // block)):
        impostor_rows(G, sq_norms, codes, start, target_d, counts, hinge, active, n_active,
                      t * block, min(n_rows, t * block + block))


@njit(cache=True, nogil=True)
def impostor_steps(G, active, n_active, start, scale, Z, dZ):  # pragma: no cover (compiled)
    """The impostor steps of a block from the anchors' lists of :func:`impostor_rows`:
    for each anchor g in order and each of its active impostors l in order, ``step = v (z_g -
    z_l)`` with ``v = -2 scale w_gl``, added to ``dZ[g]`` and subtracted from ``dZ[l]``; the
    same additions in the same order (serial: rows of dZ are shared between anchors)."""
    k = Z.shape[1]
    for i in range(n_active.shape[0]):
        g = start + i
        for p in range(n_active[i]):
            l = active[i, p]  # noqa: E741 (the paper's index)
            v = -2.0 * scale * np.float64(G[i, p])
            for c in range(k):
                step = v * (Z[g, c] - Z[l, c])
                dZ[g, c] += step
                dZ[l, c] -= step


@njit(cache=True, nogil=True)
def target_distances(Z, targets, target_d):  # pragma: no cover (compiled)
    """``target_d[i, t] = |z_i - z_j|^2`` (float64) for each target neighbour ``j =
    targets[i, t]``, -inf where there is none (-1: never active)."""
    for i in range(targets.shape[0]):
        for t in range(targets.shape[1]):
            j = targets[i, t]
            if j < 0:
                target_d[i, t] = -np.inf
                continue
            d = 0.0
            for c in range(Z.shape[1]):
                diff = np.float64(Z[i, c]) - np.float64(Z[j, c])
                d += diff * diff
            target_d[i, t] = d


@njit(cache=True, nogil=True)
def target_steps(Z, targets, weights, dZ):  # pragma: no cover (compiled)
    """The pull part of dJ/dZ: for each target pair (i, j) in order, ``step = 2 v_ij (z_i -
    z_j)`` added to ``dZ[i]`` and subtracted from ``dZ[j]`` (``v = weights[i, t]``; no pair
    where ``targets[i, t] < 0``). Serial: rows of dZ are shared between pairs."""
    for i in range(targets.shape[0]):
        for t in range(targets.shape[1]):
            j = targets[i, t]
            if j < 0:
                continue
            v = 2.0 * weights[i, t]
            for c in range(Z.shape[1]):
                step = v * (np.float64(Z[i, c]) - np.float64(Z[j, c]))
                dZ[i, c] += step
                dZ[j, c] -= step
