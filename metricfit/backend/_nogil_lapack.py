"""LAPACK without the GIL, for PLDA's EM: the inverse and log-determinant of a symmetric
positive definite matrix from one Cholesky factorisation (``potrf``, ``potri``) and the
generalised symmetric eigenproblem (``sygvd``), so that several run side by side on the
package pool.

SciPy's ``scipy.linalg.lapack`` wrappers (f2py) and ``scipy.linalg.eigh`` hold the GIL for the
whole LAPACK call: two factorisations on two Python threads take as long as on one. The same LAPACK
routines are exported, as C function pointers, by SciPy's public Cython API
(``scipy.linalg.cython_lapack``); called through :mod:`ctypes` (which releases the GIL for the
call) they run in parallel. Same library, same routines, same arguments: the same bits as the
f2py wrappers (``tests/test_plda_em_kernels.py``). Where the pointers cannot be had (another
SciPy layout), the f2py wrappers are used.

Measured on the 2-core machine (``benchmarks/plda_factorisations.py``, d = 256, BLAS on one
thread): two factorisations and inverses on two pool threads take the time of one.
"""

import ctypes

import numpy as np
from scipy.linalg import lapack

__all__ = ["cholesky_inverse", "generalized_eigh", "gil_free"]

_INT = ctypes.POINTER(ctypes.c_int)
_CHAR, _ARRAY = ctypes.c_char_p, ctypes.c_void_p
_SIGNATURES = {  # scipy.linalg.cython_lapack's, all arguments by pointer
    "dpotrf": (_CHAR, _INT, _ARRAY, _INT, _INT),
    "dpotri": (_CHAR, _INT, _ARRAY, _INT, _INT),
    # itype, jobz, uplo, n, a, lda, b, ldb, w, work, lwork, iwork, liwork, info
    "dsygvd": (_INT, _CHAR, _CHAR, _INT, _ARRAY, _INT, _ARRAY, _INT, _ARRAY, _ARRAY, _INT,
               _ARRAY, _INT, _INT),
}
_ROUTINES = {}  # name -> ctypes function, or None where unavailable


def _capsule_address(capsule):
    """The pointer a PyCapsule holds (prototypes of our own: the shared
    ``ctypes.pythonapi`` functions are left as other code configured them)."""
    get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
        ("PyCapsule_GetName", ctypes.pythonapi))
    get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))
    return get_pointer(capsule, get_name(capsule))


def _routine(name):
    """The LAPACK routine ``name`` of ``scipy.linalg.cython_lapack`` as a ctypes function that
    releases the GIL, or None (looked up once)."""
    if name not in _ROUTINES:
        try:
            from scipy.linalg import cython_lapack
            address = _capsule_address(cython_lapack.__pyx_capi__[name])
            signature = ctypes.CFUNCTYPE(None, *_SIGNATURES[name])
            _ROUTINES[name] = signature(address) if address else None
        except (AttributeError, ImportError, KeyError, TypeError, ValueError):
            _ROUTINES[name] = None
    return _ROUTINES[name]


def gil_free(*names):
    """Whether the routines ``names`` (default: all of this module's) are called without the
    GIL (SciPy's Cython LAPACK found)."""
    return all(_routine(name) is not None for name in names or _SIGNATURES)


def _int(value):
    return ctypes.byref(ctypes.c_int(value))


def cholesky_inverse(S):
    """``(F, logdet, info)`` for a symmetric float64 matrix S (d, d): F (Fortran order) holds
    ``S^-1`` in its lower triangle (LAPACK ``potrf`` then ``potri``; the strict upper triangle
    is left as it was), ``logdet = log|S| = 2 sum_i log L_ii`` from the factor ``S = L L^T``,
    and ``info`` LAPACK's (0: S positive definite; otherwise F and logdet are meaningless).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.backend._nogil_lapack import cholesky_inverse
    >>> S = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> F, logdet, info = cholesky_inverse(S)
    >>> bool(np.allclose(np.tril(F), np.tril(np.linalg.inv(S)))), round(logdet, 6), info
    (True, 2.079442, 0)
    """
    if not gil_free("dpotrf", "dpotri"):
        factor, info = lapack.dpotrf(S, lower=1, clean=0)
        if info != 0:
            return factor, np.nan, info
        logdet = 2.0 * float(np.log(np.diagonal(factor)).sum())
        inverse, info = lapack.dpotri(factor, lower=1)
        return inverse, logdet, info
    F = np.array(S, dtype=np.float64, order="F")
    size, info = ctypes.c_int(F.shape[0]), ctypes.c_int(0)
    _routine("dpotrf")(b"L", ctypes.byref(size), F.ctypes.data, ctypes.byref(size),
                       ctypes.byref(info))
    if info.value != 0:
        return F, np.nan, info.value
    logdet = 2.0 * float(np.log(np.diagonal(F)).sum())
    _routine("dpotri")(b"L", ctypes.byref(size), F.ctypes.data, ctypes.byref(size),
                       ctypes.byref(info))
    return F, logdet, info.value


def generalized_eigh(A, B):
    """``(w, V)`` with ``A V = B V diag(w)``, ``V^T B V = I``, w ascending, for symmetric A and
    symmetric positive definite B (float64, d x d): LAPACK ``dsygvd`` as
    ``scipy.linalg.eigh(A, B)`` calls it (the lower triangles, its workspace sizes), so the
    same bits; V in Fortran order. ValueError on a NaN or an infinity and LinAlgError where
    LAPACK fails, as SciPy's.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.backend._nogil_lapack import generalized_eigh
    >>> A, B = np.array([[2.0, 1.0], [1.0, 2.0]]), np.diag([1.0, 4.0])
    >>> w, V = generalized_eigh(A, B)
    >>> bool(np.allclose(A @ V, B @ V * w)), bool(np.allclose(V.T @ B @ V, np.eye(2)))
    (True, True)
    """
    if not (np.isfinite(A).all() and np.isfinite(B).all()):
        raise ValueError("array must not contain infs or NaNs")  # SciPy's check_finite
    if not gil_free("dsygvd"):
        w, V, info = lapack.dsygvd(A, B, itype=1, jobz="V", uplo="L")
    else:
        d = A.shape[0]
        V, Bf = np.array(A, dtype=np.float64, order="F"), np.array(B, dtype=np.float64, order="F")
        w = np.empty(d)
        lwork, liwork = 1 + 6 * d + 2 * d * d, 5 * d + 3  # SciPy's defaults for jobz = 'V'
        work, iwork = np.empty(lwork), np.empty(liwork, dtype=np.intc)
        info = ctypes.c_int(0)
        _routine("dsygvd")(_int(1), b"V", b"L", _int(d), V.ctypes.data, _int(d), Bf.ctypes.data,
                           _int(d), w.ctypes.data, work.ctypes.data, _int(lwork),
                           iwork.ctypes.data, _int(liwork), ctypes.byref(info))
        info = info.value
    if info == 0:
        return w, V
    d = A.shape[0]
    if info > d:
        raise np.linalg.LinAlgError(
            f"The leading minor of order {info - d} of B is not positive definite. The "
            "factorization of B could not be completed and no eigenvalues or eigenvectors "
            "were computed.")
    raise np.linalg.LinAlgError(f"The generalised eigenproblem did not converge (LAPACK "
                                f"dsygvd info = {info}).")
