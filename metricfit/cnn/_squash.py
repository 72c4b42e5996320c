r"""The tanh fused into the convolution and subsampling kernels (:mod:`._conv_kernels`,
:mod:`._subsample_kernels`): :func:`tanh32` and :func:`squash_into`.

**tanh fused.** ``squash=True`` applies tanh to the output as it is written
(``Y = tanh(conv + b)``), and the backward pass then takes ``dL/dY`` of the squashed output
and folds ``tanh' = 1 - Y^2`` into the spread of ``Ge``: no separate tanh pass over the maps,
no intermediate array. float32 uses :func:`tanh32`, a rational approximation that vectorises
(below); float64 uses ``np.tanh``.

``error_model="numpy"`` on the kernels that divide: numba's default Python error model checks
every float division for zero (to raise ZeroDivisionError), and that branch blocks
vectorisation. It changes no arithmetic.
"""

import numpy as np
from numba import njit

from .._simd import multiply_add

__all__ = ["tanh32", "squash_into", "squash_add_into", "write_output", "TANH32_CLAMP"]

_F32 = np.float32
TANH32_CLAMP = _F32(7.90531110763549805)  # tanh32 of it rounds to < 1 in float32
_TANH32_TINY = _F32(4e-4)  # below it tanh32 returns x (tanh x = x to float32 precision)
_A1, _A3, _A5, _A7, _A9, _A11, _A13 = (_F32(v) for v in (
    4.89352455891786e-03, 6.37261928875436e-04, 1.48572235717979e-05, 5.12229709037114e-08,
    -8.60467152213735e-11, 2.00018790482477e-13, -2.76076847742355e-16))
_B0, _B2, _B4, _B6 = (_F32(v) for v in (
    4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04, 1.19825839466702e-06))


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def tanh32(x):  # pragma: no cover (compiled)
    """float32 tanh as Eigen's ``generic_fast_tanh_float``: the input clamped to
    ``[-7.905, 7.905]``, then an odd degree-13 over an even degree-6 polynomial in x, each
    Horner step one fused multiply-add where the target has them (as Eigen's ``pmadd``;
    :func:`metricfit._simd.multiply_add`). Branch-free (selects), so loops over it vectorise; at
    most 6 float32 ulp from the exact tanh (the test checks 4e-7 relative over [-12, 12]; NumPy's
    float32 tanh: 1.4 ulp) and never above 1 in absolute value."""
    v = TANH32_CLAMP if x > TANH32_CLAMP else x
    v = -TANH32_CLAMP if v < -TANH32_CLAMP else v
    v2 = v * v
    p = multiply_add(v2, _A13, _A11)
    p = multiply_add(p, v2, _A9)
    p = multiply_add(p, v2, _A7)
    p = multiply_add(p, v2, _A5)
    p = multiply_add(p, v2, _A3)
    p = multiply_add(p, v2, _A1)
    q = multiply_add(v2, _B6, _B4)
    q = multiply_add(q, v2, _B2)
    q = multiply_add(q, v2, _B0)
    r = p * v / q
    return r if abs(v) >= _TANH32_TINY else v


@njit(cache=True, nogil=True, error_model="numpy")
def squash_into(src, bias, dst, squash):  # pragma: no cover (compiled)
    """``dst = tanh(src + bias)`` when ``squash``, else ``src + bias`` (1-D, same length):
    :func:`tanh32` in float32, ``np.tanh`` in float64."""
    n = dst.size
    if not squash:
        for p in range(n):
            dst[p] = src[p] + bias
    elif dst.itemsize == 4:
        for p in range(n):
            dst[p] = tanh32(src[p] + bias)
    else:
        for p in range(n):
            dst[p] = np.tanh(src[p] + bias)


@njit(cache=True, nogil=True, error_model="numpy")
def squash_add_into(src, bias, dst, squash):  # pragma: no cover (compiled)
    """:func:`squash_into` with a bias for each element (``bias``: the length of ``dst``), so
    that one loop runs over several maps: a map of S4's 25 outputs is too short for the
    vector loop (16 lanes, unrolled four times), and its tanh ran element by element (0.49 of
    S4's 1.27 ms forward on a batch of 128 images, one thread). The same numbers as
    :func:`squash_into` map by map."""
    n = dst.size
    if not squash:
        for p in range(n):
            dst[p] = src[p] + bias[p]
    elif dst.itemsize == 4:
        for p in range(n):
            dst[p] = tanh32(src[p] + bias[p])
    else:
        for p in range(n):
            dst[p] = np.tanh(src[p] + bias[p])


@njit(cache=True, nogil=True)
def write_output(acc, bias, out, Y_map, w, squash):  # pragma: no cover (compiled)
    """``Y_map = tanh(acc + bias)`` (or without tanh) from the flat grid ``acc`` of row width w:
    one pass over the grid, wrap-around columns included, then its rows copied out element by
    element (a slice assignment ``Y_map[r] = out[...]`` is a call that checks the two for
    overlap: for C1's rows of 40, 2.1 of the 4.3 ms this took for a batch of 128 images)."""
    ho, wo = Y_map.shape
    squash_into(acc, bias, out, squash)
    for r in range(ho):
        row, src = Y_map[r], out[r * w:r * w + wo]
        for q in range(wo):
            row[q] = src[q]
