"""numba kernels of PLDA's EM on d x d arrays (pure, ``nogil``): the completion of a symmetric
matrix from one triangle, a group's M-step sums and the symmetrised means.

LAPACK's ``potri`` writes only the lower triangle of the inverse (Fortran order): its
transpose, a C-ordered view, holds the inverse in its upper triangle, mirrored here in place.
Before, two ``np.tril`` and a sum of arrays of opposite memory orders: inside PLDA's EM
iteration (1e5 x 256, one thread) that cost about 1 ms an iteration more (6.54 against 5.58
ms; alone, in a tight loop, both forms cost the same; docs/results/timing.md). Plain-NumPy
twin: ``np.triu(a) + np.triu(a, 1).T``.
"""

from numba import njit

#: Side of the square tiles of :func:`symmetric_mean`.
TILE = 32


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
    S``), square tiles of :data:`TILE` at a time (the transposed reads stay in the cache);
    the operations those of ``0.5 * (T + T.T) / scale``, each pair computed once, so ``out``
    is exactly symmetric (``t_ij + t_ji`` is ``t_ji + t_ij``)."""
    d = S.shape[0]
    add = extra.size > 0
    for i0 in range(0, d, TILE):
        for j0 in range(i0, d, TILE):
            for i in range(i0, min(i0 + TILE, d)):
                for j in range(max(j0, i), min(j0 + TILE, d)):
                    t_ij = S[i, j] + extra[i, j] if add else S[i, j]
                    t_ji = S[j, i] + extra[j, i] if add else S[j, i]
                    v = (0.5 * (t_ij + t_ji)) / scale
                    out[i, j] = v
                    out[j, i] = v
