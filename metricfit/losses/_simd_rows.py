r"""A row's dot product in float64 on vector registers, in a fixed order, as a numba intrinsic.

The prepared TSML, DDML and LDML kernels (:mod:`metricfit.losses._rows`) need one float64 sum
per row, ``sum_j X[i, j] Y[i, j]`` (``|c_i|^2``, ``|z_i|^2``, ``delta_i^T M delta_i``). A sum
vectorises only where its additions may be re-associated, which numba allows only with
``fastmath`` (banned in this project's reductions), so a plain loop adds one product at a
time: on four scalar accumulators it ran at about one entry a cycle (0.55 ms for 4,800 rows of
300 on the 2-core machine), the largest part of the kernel sections between the GEMMs.

:func:`dot_rows` states the order instead (as :mod:`metricfit.cnn._simd` does for the
convnet): entry j goes to lane ``j mod 16`` of two vector accumulators of eight float64
lanes (``<8 x double>``; LLVM splits them into the registers the CPU has), row block after row
block of 16 entries, each product formed in float64 from the entries (float32 entries are
widened first, exactly); then lane ``l`` and lane ``l + 8`` are added, the eight sums folded
in halves (lanes ``l`` and ``l + 4``, then ``l`` and ``l + 2``, then 0 and 1), and the
``k mod 16`` entries left over, summed one after the other on their own, added last. The IR
multiplies, then adds (no fused multiply-add), so the result is the same on every CPU and
thread count, and :func:`dot_lanes_twin` (plain NumPy) gives it to the bit.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

__all__ = ["LANES", "BLOCK", "row_dot", "pair_dot", "pair_dot_narrow", "dot_rows",
           "dot_rows_narrow", "dot_rows_any", "dot_lanes_twin"]

LANES = 8  # float64 lanes of one 64-byte vector
BLOCK = 2 * LANES  # entries a step: two vector accumulators


def _c_rows(X, Y):
    return (isinstance(X, types.Array) and isinstance(Y, types.Array) and X.ndim == 2
            and Y.ndim == 2 and X.layout == "C" and Y.layout == "C" and X.dtype == Y.dtype
            and X.dtype in (types.float32, types.float64))


def _make_dot_rows(widen_first):
    """The intrinsic of :func:`dot_rows` (``widen_first``: each product formed in float64 from
    the widened entries) or :func:`dot_rows_narrow` (formed in the entries' dtype, then
    widened: what CSML's kernel did)."""

    def dot(typingctx, X, i, Y, j):
        if not (_c_rows(X, Y) and isinstance(i, types.Integer)
                and isinstance(j, types.Integer)):
            return None
        sig = types.float64(X, i, Y, j)

        def codegen(context, builder, signature, args):
            x_type, i_type, y_type, j_type = signature.args
            item = context.get_value_type(x_type.dtype)
            f64 = ir.DoubleType()
            intp = context.get_value_type(types.intp)
            in_vec, out_vec = ir.VectorType(item, LANES), ir.VectorType(f64, LANES)
            x_arr = context.make_array(x_type)(context, builder, args[0])
            y_arr = context.make_array(y_type)(context, builder, args[2])
            x_index = context.cast(builder, args[1], i_type, types.intp)
            y_index = context.cast(builder, args[3], j_type, types.intp)
            k = cgutils.unpack_tuple(builder, x_arr.shape, 2)[1]
            x_row = builder.gep(x_arr.data, [builder.mul(x_index, k)])
            y_row = builder.gep(y_arr.data, [builder.mul(y_index, k)])
            itemsize = context.get_abi_sizeof(item)
            narrow = isinstance(item, ir.FloatType)  # float32 entries

            def product(x, y, vector):
                if not narrow:
                    return builder.fmul(x, y)
                wide = out_vec if vector else f64
                if widen_first:
                    return builder.fmul(builder.fpext(x, wide), builder.fpext(y, wide))
                return builder.fpext(builder.fmul(x, y), wide)

            def load(row_ptr, offset):
                ptr = builder.bitcast(builder.gep(row_ptr, [offset]), in_vec.as_pointer())
                return builder.load(ptr, align=itemsize)

            zero = ir.Constant(out_vec, [ir.Constant(f64, 0.0)] * LANES)
            accs = [cgutils.alloca_once_value(builder, zero) for _ in range(2)]
            n_blocks = builder.sdiv(k, ir.Constant(intp, BLOCK))
            with cgutils.for_range(builder, n_blocks) as block:
                start = builder.mul(block.index, ir.Constant(intp, BLOCK))
                for half, acc in enumerate(accs):
                    offset = builder.add(start, ir.Constant(intp, half * LANES))
                    term = product(load(x_row, offset), load(y_row, offset), True)
                    builder.store(builder.fadd(builder.load(acc), term), acc)
            lanes = builder.fadd(builder.load(accs[0]), builder.load(accs[1]))
            width = LANES
            while width > 1:  # fold in halves: lane l += lane l + width / 2
                width //= 2
                mask = ir.VectorType(ir.IntType(32), LANES)
                low = builder.shuffle_vector(lanes, lanes, ir.Constant(
                    mask, list(range(width)) + [0] * (LANES - width)))
                high = builder.shuffle_vector(lanes, lanes, ir.Constant(
                    mask, list(range(width, 2 * width)) + [0] * (LANES - width)))
                lanes = builder.fadd(low, high)
            total = builder.extract_element(lanes, ir.Constant(ir.IntType(32), 0))
            tail = cgutils.alloca_once_value(builder, ir.Constant(f64, 0.0))
            first = builder.mul(n_blocks, ir.Constant(intp, BLOCK))
            with cgutils.for_range(builder, builder.sub(k, first)) as left:
                t = builder.add(first, left.index)
                term = product(builder.load(builder.gep(x_row, [t])),
                               builder.load(builder.gep(y_row, [t])), False)
                builder.store(builder.fadd(builder.load(tail), term), tail)
            return builder.fadd(total, builder.load(tail))

        return sig, codegen

    dot.__name__ = dot.__qualname__ = "dot_rows" if widen_first else "dot_rows_narrow"
    return intrinsic(dot)


dot_rows = _make_dot_rows(widen_first=True)
dot_rows.__doc__ = """``sum_t X[i, t] Y[j, t]`` in float64 in the module's fixed order, each
product formed in float64 (X, Y: 2-D C-contiguous arrays of one float dtype and the same
width, possibly the same array; rows i, j in bounds: not checked)."""
dot_rows_narrow = _make_dot_rows(widen_first=False)
dot_rows_narrow.__doc__ = """:func:`dot_rows` with each product formed in the entries' dtype
(float32: rounded to float32), then added in float64 (CSML's cosine sums)."""


def dot_lanes_twin(x, y, narrow=False):
    """:func:`dot_rows` (``narrow``: :func:`dot_rows_narrow`) of two rows in plain NumPy,
    operation for operation (the same bits)."""
    if narrow:
        products = (np.asarray(x) * np.asarray(y)).astype(np.float64)
    else:
        products = np.asarray(x, dtype=np.float64) * np.asarray(y, dtype=np.float64)
    k = products.shape[0]
    stop = k - k % BLOCK
    acc = np.zeros(BLOCK)
    for start in range(0, stop, BLOCK):
        acc = acc + products[start:start + BLOCK]  # lane by lane, block after block
    lanes = acc[:LANES] + acc[LANES:]
    width = LANES
    while width > 1:
        width //= 2
        lanes = lanes[:width] + lanes[width:2 * width]
    tail = 0.0
    for value in products[stop:]:
        tail = tail + float(value)
    return float(lanes[0]) + tail


@njit(cache=True, nogil=True, inline="always")
def _term(x, y, narrow):  # pragma: no cover (compiled)
    if narrow:
        return np.float64(x * y)
    return np.float64(x) * np.float64(y)


@njit(cache=True, nogil=True)
def dot_rows_any(X, i, Y, j, narrow=False):  # pragma: no cover (compiled)
    """:func:`dot_rows` (``narrow``: :func:`dot_rows_narrow`) for arrays of any layout: the
    same order in scalar code (the same bits; for rows that are not contiguous)."""
    k = X.shape[1]
    lanes = np.zeros(BLOCK)
    stop = k - k % BLOCK
    for start in range(0, stop, BLOCK):
        for lane in range(BLOCK):
            lanes[lane] += _term(X[i, start + lane], Y[j, start + lane], narrow)
    width = BLOCK
    while width > 1:
        width //= 2
        for lane in range(width):
            lanes[lane] += lanes[lane + width]
    tail = 0.0
    for t in range(stop, k):
        tail += _term(X[i, t], Y[j, t], narrow)
    return lanes[0] + tail


def pair_dot(X, i, Y, j):
    """``sum_t X[i, t] Y[j, t]`` in float64, in :func:`dot_rows`' fixed order: on vector
    registers for C-contiguous arrays of one float dtype, else in scalar code in the same
    order (the same bits either way). Compiled code picks the form by the arrays' types; from
    Python it is :func:`dot_lanes_twin`."""
    return dot_lanes_twin(np.asarray(X)[i], np.asarray(Y)[j])


@overload(pair_dot, jit_options={"nogil": True})
def _pair_dot_compiled(X, i, Y, j):
    if _c_rows(X, Y):
        return lambda X, i, Y, j: dot_rows(X, i, Y, j)
    return lambda X, i, Y, j: dot_rows_any(X, i, Y, j, False)


def pair_dot_narrow(X, i, Y, j):
    """:func:`pair_dot` with each product formed in the entries' dtype
    (:func:`dot_rows_narrow`)."""
    return dot_lanes_twin(np.asarray(X)[i], np.asarray(Y)[j], narrow=True)


@overload(pair_dot_narrow, jit_options={"nogil": True})
def _pair_dot_narrow_compiled(X, i, Y, j):
    if _c_rows(X, Y):
        return lambda X, i, Y, j: dot_rows_narrow(X, i, Y, j)
    return lambda X, i, Y, j: dot_rows_any(X, i, Y, j, True)


def row_dot(X, Y, i):
    """``sum_j X[i, j] Y[i, j]``: :func:`pair_dot` of row i of X and row i of Y."""
    return pair_dot(X, i, Y, i)


@overload(row_dot, jit_options={"nogil": True})
def _row_dot_compiled(X, Y, i):
    return lambda X, Y, i: pair_dot(X, i, Y, i)
