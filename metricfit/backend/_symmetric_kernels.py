"""numba kernel completing a symmetric matrix from one triangle (pure, ``nogil``).

LAPACK's ``potri`` writes only the lower triangle of the inverse (Fortran order): its
transpose, a C-ordered view, holds the inverse in its upper triangle, mirrored here in place.
Before, two ``np.tril`` and a sum of arrays of opposite memory orders: inside PLDA's EM
iteration (1e5 x 256, one thread) that cost about 1 ms an iteration more (6.54 against 5.58
ms; alone, in a tight loop, both forms cost the same; docs/results/timing.md). Plain-NumPy
twin: ``np.triu(a) + np.triu(a, 1).T``.
"""

from numba import njit


@njit(cache=True, nogil=True)
def mirror_upper(a):  # pragma: no cover (compiled)
    """Copy the strict upper triangle of the square C-ordered ``a`` onto its lower one, in
    place (``a[i, j] = a[j, i]`` for i > j); returns ``a``."""
    d = a.shape[0]
    for i in range(1, d):
        for j in range(i):
            a[i, j] = a[j, i]
    return a
