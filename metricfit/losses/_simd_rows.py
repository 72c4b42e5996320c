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

__all__ = ["LANES", "BLOCK", "row_dot", "pair_dot", "dot_rows", "dot_rows_any", "dot_lanes_twin"]

LANES = 8  # float64 lanes of one 64-byte vector
BLOCK = 2 * LANES  # entries a step: two vector accumulators


def _c_rows(X, Y):
    return (isinstance(X, types.Array) and isinstance(Y, types.Array) and X.ndim == 2
            and Y.ndim == 2 and X.layout == "C" and Y.layout == "C" and X.dtype == Y.dtype
            and X.dtype in (types.float32, types.float64))


@intrinsic
def dot_rows(typingctx, X, i, Y, j):
    """``sum_t X[i, t] Y[j, t]`` in float64 in the module's fixed order (X, Y: 2-D
    C-contiguous arrays of one float dtype and the same width, possibly the same array; rows
    i, j in bounds: not checked)."""
    if not (_c_rows(X, Y) and isinstance(i, types.Integer) and isinstance(j, types.Integer)):
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

        def widened(value, vector):
            if isinstance(item, ir.DoubleType):
                return value
            return builder.fpext(value, out_vec if vector else f64)

        def load(row_ptr, offset):
            ptr = builder.bitcast(builder.gep(row_ptr, [offset]), in_vec.as_pointer())
            return widened(builder.load(ptr, align=itemsize), True)

        zero = ir.Constant(out_vec, [ir.Constant(f64, 0.0)] * LANES)
        accs = [cgutils.alloca_once_value(builder, zero) for _ in range(2)]
        n_blocks = builder.sdiv(k, ir.Constant(intp, BLOCK))
        with cgutils.for_range(builder, n_blocks) as block:
            start = builder.mul(block.index, ir.Constant(intp, BLOCK))
            for half, acc in enumerate(accs):
                offset = builder.add(start, ir.Constant(intp, half * LANES))
                product = builder.fmul(load(x_row, offset), load(y_row, offset))
                builder.store(builder.fadd(builder.load(acc), product), acc)
        lanes = builder.fadd(builder.load(accs[0]), builder.load(accs[1]))
        width = LANES
        while width > 1:  # fold in halves: lane l += lane l + width / 2
            width //= 2
            low = builder.shuffle_vector(lanes, lanes, ir.Constant(
                ir.VectorType(ir.IntType(32), LANES), list(range(width)) + [0] * (LANES - width)))
            high = builder.shuffle_vector(lanes, lanes, ir.Constant(
                ir.VectorType(ir.IntType(32), LANES),
                list(range(width, 2 * width)) + [0] * (LANES - width)))
            lanes = builder.fadd(low, high)
        total = builder.extract_element(lanes, ir.Constant(ir.IntType(32), 0))
        tail = cgutils.alloca_once_value(builder, ir.Constant(f64, 0.0))
        first = builder.mul(n_blocks, ir.Constant(intp, BLOCK))
        with cgutils.for_range(builder, builder.sub(k, first)) as left:
            j = builder.add(first, left.index)
            x = widened(builder.load(builder.gep(x_row, [j])), False)
            y = widened(builder.load(builder.gep(y_row, [j])), False)
            builder.store(builder.fadd(builder.load(tail), builder.fmul(x, y)), tail)
        return builder.fadd(total, builder.load(tail))

    return sig, codegen


def dot_lanes_twin(x, y):
    """:func:`dot_rows` of two rows in plain NumPy, operation for operation (the same bits)."""
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


@njit(cache=True, nogil=True)
def dot_rows_any(X, i, Y, j):  # pragma: no cover (compiled)
    """:func:`dot_rows` for arrays of any layout: the same order in scalar code (the same
    bits; for rows that are not contiguous)."""
    k = X.shape[1]
    lanes = np.zeros(BLOCK)
    stop = k - k % BLOCK
    for start in range(0, stop, BLOCK):
        for lane in range(BLOCK):
            lanes[lane] += np.float64(X[i, start + lane]) * np.float64(Y[j, start + lane])
    width = BLOCK
    while width > 1:
        width //= 2
        for lane in range(width):
            lanes[lane] += lanes[lane + width]
    tail = 0.0
    for t in range(stop, k):
        tail += np.float64(X[i, t]) * np.float64(Y[j, t])
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
    return lambda X, i, Y, j: dot_rows_any(X, i, Y, j)


def row_dot(X, Y, i):
    """``sum_j X[i, j] Y[i, j]``: :func:`pair_dot` of row i of X and row i of Y."""
    return pair_dot(X, i, Y, i)


@overload(row_dot, jit_options={"nogil": True})
def _row_dot_compiled(X, Y, i):
    return lambda X, Y, i: pair_dot(X, i, Y, i)
