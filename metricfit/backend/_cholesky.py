"""The inverse and log-determinant of a symmetric positive definite matrix from one Cholesky
factorisation, with the GIL released, so that several run side by side on the package pool.

SciPy's ``scipy.linalg.lapack.dpotrf`` / ``dpotri`` (f2py wrappers) hold the GIL for the whole
LAPACK call: two factorisations on two Python threads take as long as on one. The same LAPACK
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

__all__ = ["cholesky_inverse", "gil_free"]

_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int),
                              ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                              ctypes.POINTER(ctypes.c_int))
_ROUTINES = {}  # "dpotrf", "dpotri" -> ctypes function, or None where unavailable


def _capsule_address(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


def _routine(name):
    """The LAPACK routine ``name`` of ``scipy.linalg.cython_lapack`` as a ctypes function that
    releases the GIL, or None (looked up once)."""
    if name not in _ROUTINES:
        try:
            from scipy.linalg import cython_lapack
            address = _capsule_address(cython_lapack.__pyx_capi__[name])
            _ROUTINES[name] = _SIGNATURE(address) if address else None
        except (AttributeError, ImportError, KeyError, TypeError, ValueError):
            _ROUTINES[name] = None
    return _ROUTINES[name]


def gil_free():
    """Whether :func:`cholesky_inverse` releases the GIL (SciPy's Cython LAPACK found)."""
    return _routine("dpotrf") is not None and _routine("dpotri") is not None


def cholesky_inverse(S):
    """``(F, logdet, info)`` for a symmetric float64 matrix S (d, d): F (Fortran order) holds
    ``S^-1`` in its lower triangle (LAPACK ``potrf`` then ``potri``; the strict upper triangle
    is left as it was), ``logdet = log|S| = 2 sum_i log L_ii`` from the factor ``S = L L^T``,
    and ``info`` LAPACK's (0: S positive definite; otherwise F and logdet are meaningless).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.backend._cholesky import cholesky_inverse
    >>> S = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> F, logdet, info = cholesky_inverse(S)
    >>> bool(np.allclose(np.tril(F), np.tril(np.linalg.inv(S)))), round(logdet, 6), info
    (True, 2.079442, 0)
    """
    if not gil_free():
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
