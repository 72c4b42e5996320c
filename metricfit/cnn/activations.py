r"""The element-wise tanh passes between GEMMs: the convnet's fully connected layers (C5, F6,
:class:`metricfit.cnn.layers.Tanh`) and the ``Tanh`` and ``MLP`` mappings use these, and only
these (numba, serial, where it measurably helps).

:func:`tanh_forward` ``Z = tanh(P + h)`` in place and :func:`tanh_backward` ``D = dZ (1 - Z^2)``
are the whole tanh of the dense layers; the convolution and subsampling layers fuse theirs
into their own kernels (:mod:`._kernels`).

Why numba here (measured on this 2-core AVX2 VM, 1 BLAS thread, medians of 15 interleaved
runs; n = 4800 pairs, d = m = k = 300):

- ``tanh(P + h)`` in float64: NumPy's float64 ``np.tanh`` is SIMD only with AVX-512; on an
  AVX2 host it was ~5x its float32 time. The kernel below (one fused pass, bias included) is
  4.8x faster than ``np.tanh`` for typical pre-activations (|p| < 0.6: Glorot weights on
  L2-normalised inputs), 1.8x for large ones, within 2 ulp of it. End to end, forward +
  backward went 129 -> 94 ms (Tanh) and 309 -> 238 ms (MLP). numba's own scalar
  ``math.tanh`` is *slower* than NumPy (PERF-NOTES), so it is not used. In float32 NumPy's
  SIMD tanh is faster than any numba variant tried and is used.
- ``dZ * (1 - Z^2)``: one fused pass instead of three NumPy passes (2.5x in float64).

The float64 tanh is the Cephes algorithm (S. L. Moshier, ``tanh.c``): for ``|x| < 0.625`` the
rational form ``x + x^3 P(x^2)/Q(x^2)``, else ``sign(x) (1 - e)/(1 + e)`` with
``e = exp(-2|x|)`` (no overflow; ``+-inf -> +-1``, NaN propagates).
"""

import math

import numpy as np
from numba import njit

__all__ = ["tanh_forward", "tanh_backward", "tanh_bias_inplace_f64", "tanh_grad"]

_P0, _P1, _P2 = -9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3
_Q0, _Q1, _Q2 = 1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3


@njit(cache=True)
def tanh_bias_inplace_f64(P, h):  # pragma: no cover (compiled)
    """Overwrite ``P[i, j]`` (float64) with ``tanh(P[i, j] + h[j])``."""
    n, k = P.shape
    for i in range(n):
        for j in range(k):
            x = P[i, j] + h[j]
            ax = abs(x)
            if ax < 0.625:
                s = x * x
                P[i, j] = x + x * s * (((_P0 * s + _P1) * s + _P2)
                                       / (((s + _Q0) * s + _Q1) * s + _Q2))
            else:
                e = math.exp(-2.0 * ax)
                t = (1.0 - e) / (1.0 + e)
                P[i, j] = t if x >= 0.0 else -t


@njit(cache=True)
def tanh_grad(Z, dZ, out):  # pragma: no cover (compiled)
    """``out[i, j] = dZ[i, j] * (1 - Z[i, j]^2)`` in one pass."""
    n, k = Z.shape
    for i in range(n):
        for j in range(k):
            z = Z[i, j]
            out[i, j] = dZ[i, j] * (1.0 - z * z)


def tanh_forward(P, h=None):
    r"""``Z = tanh(P + h)`` computed in place in the pre-activations P (n, k); returns P.

    Float64: the fused numba kernel :func:`tanh_bias_inplace_f64` (NumPy's float64 tanh is
    scalar on AVX2 hosts); otherwise vectorised NumPy (``P += h; np.tanh(P, out=P)``).
    ``h`` None: no bias (``tanh(P)``).
    """
    if P.dtype == np.float64 and P.flags.c_contiguous and (h is None or h.dtype == np.float64):
        tanh_bias_inplace_f64(P, np.zeros(P.shape[1]) if h is None else h)
    else:
        if h is not None:
            P += h
        np.tanh(P, out=P)
    return P


def tanh_backward(Z, dZ):
    r"""``D = dZ * (1 - Z^2)``: back through ``Z = tanh(P)``, as :math:`\tanh' = 1 - \tanh^2`
    (seed 004, before eq. 12). One fused numba pass (same dtypes, 2-D), else NumPy; a new
    array."""
    dZ = np.asarray(dZ)
    if dZ.shape != Z.shape:
        raise ValueError(f"dZ must have the shape of the output {Z.shape}, got {dZ.shape}.")
    if Z.dtype == dZ.dtype and Z.dtype in (np.float32, np.float64) and Z.ndim == 2:
        D = np.empty_like(Z)  # (n, k)
        tanh_grad(Z, dZ, D)
        return D
    return dZ * (1.0 - Z * Z)  # mixed dtypes: NumPy, in the promoted dtype
