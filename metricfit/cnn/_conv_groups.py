r"""The convolution's input gradient three input maps at a time (issue 27).

The input gradient of input map c is a full correlation over the output maps that read it,
``dx_c[m] = sum_{o: T_oc} sum_t' W_oc,T-1-t' Gp_o[m + off_t']`` (:mod:`._conv_kernels`).
:func:`metricfit._simd.correlate_sources` computes it one input map at a time, and each vector
of ``Gp_o`` it loads serves one multiply-add. Neighbouring input maps are read by mostly the
same output maps (LeNet's table links ranges of neighbouring maps): C3's inputs are read by
12-15 output maps each, and three neighbours by 17-20 together. So here three input maps go
through :func:`metricfit._simd.correlate_group_3` over the output maps that read any of them,
each loaded vector serving three multiply-adds, with a zero tap where an output map does not
read an input.

**The same bits.** For each input map the output maps come in the same order (ascending), and
an unconnected one adds ``0 x Gp = +-0`` (``Gp`` is finite). The sum starts at +0 and a float
sum is -0 only when both terms are -0, so it is never -0 and adding a zero leaves it as it is.

Three maps share a pass when the output maps that read any of them, times three, are at most
twice the links they have on their own (:func:`shares_outputs`): C3's five triples do (51-60
against 36-43), a full table always does.
On C3, 128 images, float32, one thread: 9.4-9.5 against 14.0-14.4 ms a batch; float64
18.9-19.3 against 27.3-28.3 (scratch scripts, 11-15 calls each, medians).
"""

import numpy as np
from numba import njit

from .._simd import correlate_group_3, correlate_sources

__all__ = ["GROUP_INPUTS", "shares_outputs", "input_grad_grouped"]

GROUP_INPUTS = 3  # input maps a pass (correlate_group_3's outputs)


@njit(cache=True, nogil=True)
def shares_outputs(table, c, count):  # pragma: no cover (compiled)
    """Whether input maps c .. c + count - 1 are read by at most twice as many output maps
    together as one at a time (their pass then does at most twice the multiply-adds, with a
    third of the loads)."""
    together, alone = 0, 0
    for o in range(table.shape[0]):
        reads = 0
        for j in range(count):
            reads += table[o, c + j] != 0
        together += reads > 0
        alone += reads
    return count * together <= 2 * alone


@njit(cache=True, nogil=True)
def input_grad_grouped(G_flat, taps, table, offs, hw, dX_flat, n, width):  # pragma: no cover
    """Every input map's gradient of n images: :func:`correlate_group_3` on three neighbouring
    input maps that share their output maps, :func:`correlate_sources` on the others.
    ``taps``: the flipped kernels (c_out, c_in, taps) flat, zero where the table is false;
    ``G_flat``: the padded grids (n, c_out, width) flat; ``dX_flat``: (n, c_in, hw) flat."""
    c_out, c_in = table.shape
    n_taps = offs.size
    starts, image_starts = np.empty(c_out, np.int64), np.empty(c_out, np.int64)
    tap_starts = np.empty(GROUP_INPUTS * c_out, np.int64)
    out_starts = np.empty(GROUP_INPUTS, np.int64)
    c = 0
    while c < c_in:
        group = GROUP_INPUTS if c + GROUP_INPUTS <= c_in and shares_outputs(
            table, c, GROUP_INPUTS) else 1
        k = 0
        for o in range(c_out):  # the output maps that read any of the group; tap_starts: a
            reads = False  # (group, k) matrix, filled column by column below
            for j in range(group):
                reads = reads or table[o, c + j] != 0
            if reads:
                starts[k] = o * width
                k += 1
        for s in range(k):
            for j in range(group):
                tap_starts[j * k + s] = (starts[s] // width * c_in + c + j) * n_taps
        for i in range(n):
            for s in range(k):
                image_starts[s] = starts[s] + i * c_out * width
            for j in range(group):
                out_starts[j] = (i * c_in + c + j) * hw
            if group == GROUP_INPUTS:
                correlate_group_3(G_flat, image_starts[:k], taps, tap_starts[:group * k],
                                  n_taps, offs, hw, dX_flat, out_starts)
            else:
                correlate_sources(G_flat, image_starts[:k], taps, tap_starts[:k], n_taps, offs,
                                  hw, dX_flat, out_starts[:1])
        c += group
