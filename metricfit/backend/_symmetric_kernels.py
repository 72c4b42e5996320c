"""numba kernel completing a symmetric matrix from one triangle (pure, ``nogil``).

LAPACK's ``potri`` writes only the lower triangle of the inverse (Fortran order): its
transpose, a C-ordered view, holds the inverse in its upper triangle. Mirroring it in one
pass costs 0.03 ms at d = 256, where two ``np.tril`` and a sum of arrays of opposite memory
orders cost 0.5-1.4 ms (2-core machine). Plain-NumPy twin: ``np.triu(a) + np.triu(a, 1).T``.
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
