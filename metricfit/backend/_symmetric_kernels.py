"""numba kernels of PLDA's EM on d x d arrays (pure, ``nogil``): the completion of a symmetric
matrix from one triangle, a group's M-step sums and the symmetrised means.

LAPACK's ``potri`` writes only the lower triangle of the inverse (Fortran order): its
transpose, a C-ordered view, holds the inverse in its upper triangle, mirrored here in place.
Before, two ``np.tril`` and a sum of arrays of opposite memory orders: inside PLDA's EM
iteration (1e5 x 256, one thread) that cost about 1 ms an iteration more (6.54 against 5.58
ms; alone, in a tight loop, both forms cost the same; docs/results/timing.md). Plain-NumPy
twin: ``np.triu(a) + np.triu(a, 1).T``.
"""

import numpy as np
from numba import njit

#: Rows of T (and its columns copied as rows) a pass of :func:`symmetric_mean` takes.
PANEL = 8


@njit(cache=True, nogil=True)
def mirror_upper(a):  # pragma: no cover (compiled)
    """Copy the strict upper triangle of the square C-ordered ``a`` onto its lower one, in
    place (``a[i, j] = a[j, i]`` for i > j); returns ``a``."""
    d = a.shape[0]
    for i in range(1, d):
        for j in range(i):
            a[i, j] = a[j, i]
    return a


@njit(cache=True, nogil=True)
def transposed_panel(S, extra, i0, i1, panel):  # pragma: no cover (compiled)
    """``panel[a, j] = T[j, i0 + a]`` for ``i0 <= i0 + a < i1`` and every j, ``T = S +
    extra`` (``extra`` of size 0: ``T = S``): the columns i0..i1-1 of T as rows, read a row
    of T at a time, so that the loops over j that need ``T[j, i]`` run on a contiguous row."""
    add = extra.size > 0
    for j in range(S.shape[0]):
        for i in range(i0, i1):
            panel[i - i0, j] = S[j, i] + extra[j, i] if add else S[j, i]


@njit(cache=True, nogil=True)
def add_group_sums(AW, P, AMA, M, n, c, nc, between, within, first):  # pragma: no cover
    """One batched group's M-step sums (:mod:`.plda_em`), in one pass
    over the d x d arrays: with ``C_n = AW / n``, ``between (+)= c C_n + AMA`` and ``within
    (+)= nc C_n + n (((M - P) - P^T) + AMA)`` (``=`` where ``first``), the operations and
    their order those of the NumPy expressions ``c * Cn + AMA`` and ``(n * c) * Cn + n * (M
    - P - P.T + AMA)`` (the same bits). ``c`` and ``nc = n c`` are floats."""
    d = AW.shape[0]
    for i in range(d):
        for j in range(d):
            cov = AW[i, j] / n
            b = c * cov + AMA[i, j]
            w = nc * cov + n * (((M[i, j] - P[i, j]) - P[j, i]) + AMA[i, j])
            if first:
                between[i, j] = b
                within[i, j] = w
            else:
                between[i, j] += b
                within[i, j] += w


@njit(cache=True, nogil=True)
def symmetric_mean(S, extra, scale, out):  # pragma: no cover (compiled)
    """``out = 0.5 (T + T^T) / scale`` with ``T = S + extra`` (``extra`` of size 0: ``T =
    S``), :data:`PANEL` rows at a time, the matching columns of T first copied as rows
    (:func:`transposed_panel`), so that every inner loop reads rows and vectorises (d = 256
    on the 2-core machine: 0.18 -> 0.12 ms with ``extra``, 0.18 -> 0.09 without; the square
    tiles of each pair computed once before; ``docs/results/timing.md``); the operations
    those of ``0.5 * (T + T.T) / scale``. ``out`` is exactly symmetric:
    ``out[j, i]`` adds ``t_ji + t_ij``, the same number as ``t_ij + t_ji``."""
    d = S.shape[0]
    add = extra.size > 0
    panel = np.empty((min(PANEL, d), d))
    for i0 in range(0, d, PANEL):
        i1 = min(i0 + PANEL, d)
        transposed_panel(S, extra, i0, i1, panel)
        for i in range(i0, i1):
            t_t = panel[i - i0]
            if add:
                for j in range(d):
                    out[i, j] = (0.5 * ((S[i, j] + extra[i, j]) + t_t[j])) / scale
            else:
                for j in range(d):
                    out[i, j] = (0.5 * (S[i, j] + t_t[j])) / scale
