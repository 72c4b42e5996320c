r"""The convolution layer's passes cut into fixed work units, for :func:`.threads.map_spans`.

The kernels of :mod:`._conv_kernels` are unchanged in their arithmetic; here they are called on
units that the data's sizes alone fix (never the thread count), each unit writing its own
output:

- **forward**: one unit per image (``Y[i]`` from ``X[i]``; :func:`conv2d_forward_into` on a
  span of images);
- **backward, per image** (:func:`conv2d_backward_images`): the spread of ``dL/dY`` (times
  ``1 - Y^2``) into the padded grid ``Gp[i]``, then the input gradient ``dX[i]`` from it (a
  full correlation over the output maps; it needs ``Gp[i]`` of every map, which this same unit
  has just written);
- **backward, weights** (:func:`conv2d_weight_units`): unit ``u = b c_out + o`` is output map
  o over the image block b (images ``b B .. (b + 1) B - 1``, ``B`` = ``CHUNK``): the partial
  sums ``dW_b[o] = sum_{n in b} sum_p Ge[n, o, p] x[n, c, p + off_t]`` and ``db_b[o]``,
  written into ``dW_parts[b, o]`` and ``db_parts[b, o]``. The caller adds the blocks' partial
  sums in block order, ``dW = dW_0 + dW_1 + ...``.

With ``B`` equal to the chunk of the former chunk-per-task runs, each partial sum is the one
that run computed (the same dot products over the same images), and so is their ordered sum:
the gradients are the same to the bit as before and on any number of threads.

Costs (for balancing the spans): a weight unit costs its images times the input maps output
map o reads (C3's connection table gives 3, 4 or 15); an image unit the same on every image.
"""

import numpy as np
from numba import njit

from ._conv_kernels import _bias_grad, _input_grad_into, _spread, _weight_grad_maps

__all__ = ["conv2d_backward_images", "conv2d_weight_units", "weight_unit_costs"]


@njit(cache=True, nogil=True)
def conv2d_backward_images(dY, Y, W, table, w, pad, Gp, dX, start,
                           stop):  # pragma: no cover (compiled)
    """Images ``start..stop-1`` of a layer whose input maps are ``w`` wide: ``Gp`` written at
    its valid positions from ``dY`` (and the squashed output ``Y``; an empty Y: no tanh), then
    ``dX`` (n, c_in, h, w) from it unless dX is empty (the first layer)."""
    _spread(dY[start:stop], Y[start:stop] if Y.size else Y, w, pad, Gp[start:stop])
    if dX.size:
        n_in, h = dX.shape[1], dX.shape[2]
        _input_grad_into(W, Gp[start:stop], table, w,
                         dX[start:stop].reshape(stop - start, n_in, h * w))


@njit(cache=True, nogil=True)
def conv2d_weight_units(X, Gp, pad, table, kh, kw, block, u0, u1, dW_parts,
                        db_parts):  # pragma: no cover (compiled)
    """Weight units ``u0 <= u < u1`` (module docstring) into ``dW_parts`` (n_blocks, c_out,
    c_in, kh kw; zeros where the table is false) and ``db_parts`` (n_blocks, c_out)."""
    n, c_in, h, w = X.shape
    c_out = Gp.shape[1]
    X3 = X.reshape(n, c_in, h * w)
    for u in range(u0, u1):
        b, o = u // c_out, u % c_out
        i0, i1 = b * block, min(n, (b + 1) * block)
        _weight_grad_maps(X3[i0:i1], Gp[i0:i1], pad, table, kh, kw, w, o, o + 1, dW_parts[b])
        _bias_grad(Gp[i0:i1], pad, o, o + 1, db_parts[b])


def weight_unit_costs(n, table, block):
    """Estimated cost of each weight unit, in unit order: the unit's images times the input
    maps its output map reads (plus one for the bias)."""
    n_blocks = -(-n // block)
    images = np.minimum(block, n - block * np.arange(n_blocks))  # (n_blocks,)
    reads = table.sum(axis=1) + 1.0  # (c_out,)
    return (images[:, None] * reads[None, :]).ravel()
