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

__all__ = ["LANES", "BLOCK", "row_dot", "pair_dot", "pair_dot_narrow", "pair_sumsq",
           "pair_sumsq_narrow", "dot_rows",
           "dot_rows_narrow", "sumsq_rows", "sumsq_rows_narrow", "row_sum_any", "dot_lanes_twin"]

LANES = 8  # float64 lanes of one 64-byte vector
BLOCK = 2 * LANES  # entries a step: two vector accumulators


def _splat(builder, vec_type, value):
    """A vector with every lane ``value``."""
    out = ir.Constant(vec_type, ir.Undefined)
    for lane in range(vec_type.count):
        out = builder.insert_element(out, value, ir.Constant(ir.IntType(32), lane))
    return out


def _c_rows(X, Y):
    return (isinstance(X, types.Array) and isinstance(Y, types.Array) and X.ndim == 2
            and Y.ndim == 2 and X.layout == "C" and Y.layout == "C" and X.dtype == Y.dtype
            and X.dtype in (types.float32, types.float64))


def _make_row_sum(widen_first, combination):
    """The intrinsic summing, over t, one term of rows ``x = X[i]``, ``y = Y[j]``: ``x_t y_t``
    (``combination`` False: :func:`dot_rows`, :func:`dot_rows_narrow`) or ``c_t^2`` with
    ``c_t = x_t + coef y_t`` (True: :func:`sumsq_rows`, :func:`sumsq_rows_narrow`); each term
    computed in float64 from the widened entries (``widen_first``) or in the entries' dtype
    and then widened."""

    def typing(X, i, Y, j, coef=None):
        if not (_c_rows(X, Y) and isinstance(i, types.Integer)
                and isinstance(j, types.Integer)):
            return None
        if combination and not isinstance(coef, (types.Float, types.Integer)):
            return None
        sig = types.float64(X, i, Y, j, *((coef,) if combination else ()))

        def codegen(context, builder, signature, args):
            x_type, i_type, y_type, j_type = signature.args[:4]
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
            wide = widen_first or isinstance(item, ir.DoubleType)  # arithmetic in float64
            if combination:
                scalar = context.cast(builder, args[4], signature.args[4],
                                      types.float64 if wide else x_type.dtype)

            def term(x, y, vector):
                if wide and not isinstance(item, ir.DoubleType):
                    x = builder.fpext(x, out_vec if vector else f64)
                    y = builder.fpext(y, out_vec if vector else f64)
                if combination:
                    factor = _splat(builder, x.type, scalar) if vector else scalar
                    x = builder.fadd(x, builder.fmul(factor, y))  # c = x + coef y
                    y = x
                value = builder.fmul(x, y)
                return value if wide else builder.fpext(value, out_vec if vector else f64)

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
                    value = term(load(x_row, offset), load(y_row, offset), True)
                    builder.store(builder.fadd(builder.load(acc), value), acc)
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
                value = term(builder.load(builder.gep(x_row, [t])),
                             builder.load(builder.gep(y_row, [t])), False)
                builder.store(builder.fadd(builder.load(tail), value), tail)
            return builder.fadd(total, builder.load(tail))

        return sig, codegen

    if combination:
        def row_sum(typingctx, X, i, Y, j, coef):
            return typing(X, i, Y, j, coef)
    else:
        def row_sum(typingctx, X, i, Y, j):
            return typing(X, i, Y, j)
    name = ("sumsq_rows" if combination else "dot_rows") + ("" if widen_first else "_narrow")
    row_sum.__name__ = row_sum.__qualname__ = name
    return intrinsic(row_sum)


dot_rows = _make_row_sum(widen_first=True, combination=False)
dot_rows.__doc__ = """``sum_t X[i, t] Y[j, t]`` in float64 in the module's fixed order, each
product formed in float64 (X, Y: 2-D C-contiguous arrays of one float dtype and the same
width, possibly the same array; rows i, j in bounds: not checked)."""
dot_rows_narrow = _make_row_sum(widen_first=False, combination=False)
dot_rows_narrow.__doc__ = """:func:`dot_rows` with each product formed in the entries' dtype
(float32: rounded to float32), then added in float64 (CSML's cosine sums)."""
sumsq_rows = _make_row_sum(widen_first=True, combination=True)
sumsq_rows.__doc__ = """``sum_t (X[i, t] + coef Y[j, t])^2`` in :func:`dot_rows`' order, each
term in float64 from the widened entries (DDML's ``|a - b|^2``, coef = -1)."""
sumsq_rows_narrow = _make_row_sum(widen_first=False, combination=True)
sumsq_rows_narrow.__doc__ = """:func:`sumsq_rows` with ``c = x + coef y`` and ``c^2`` in the
entries' dtype (coef cast to it), then widened (TSML's ``|a + s b|^2``)."""


def _terms(x, y, narrow, coef):
    """The summed terms, float64: ``x y`` (coef None) or ``(x + coef y)^2``, computed in the
    rows' dtype (``narrow``) or in float64."""
    x, y = np.asarray(x), np.asarray(y)
    if not narrow:
        x, y = x.astype(np.float64), y.astype(np.float64)
    if coef is not None:
        x = x + x.dtype.type(coef) * y
        y = x
    return (x * y).astype(np.float64)


def dot_lanes_twin(x, y, narrow=False, coef=None):
    """:func:`dot_rows` (``narrow``: :func:`dot_rows_narrow`; ``coef``: :func:`sumsq_rows`,
    :func:`sumsq_rows_narrow`) of two rows in plain NumPy, operation for operation (the same
    bits)."""
    products = _terms(x, y, narrow, coef)
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
def _term(x, y, narrow, coef, combination):  # pragma: no cover (compiled)
    if narrow:  # in the rows' dtype (coef of that dtype), then widened
        if combination:
            c = x + coef * y
            return np.float64(c * c)
        return np.float64(x * y)
    x_wide, y_wide = np.float64(x), np.float64(y)
    if combination:
        c_wide = x_wide + np.float64(coef) * y_wide
        return c_wide * c_wide
    return x_wide * y_wide


@njit(cache=True, nogil=True)
def row_sum_any(X, i, Y, j, narrow, coef, combination):  # pragma: no cover (compiled)
    """The intrinsics' sums for arrays of any layout: the same order in scalar code (the same
    bits; for rows that are not contiguous). ``coef`` in the rows' dtype when ``narrow``."""
    k = X.shape[1]
    lanes = np.zeros(BLOCK)
    stop = k - k % BLOCK
    for start in range(0, stop, BLOCK):
        for lane in range(BLOCK):
            lanes[lane] += _term(X[i, start + lane], Y[j, start + lane], narrow, coef,
                                 combination)
    width = BLOCK
    while width > 1:
        width //= 2
        for lane in range(width):
            lanes[lane] += lanes[lane + width]
    tail = 0.0
    for t in range(stop, k):
        tail += _term(X[i, t], Y[j, t], narrow, coef, combination)
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
    return lambda X, i, Y, j: row_sum_any(X, i, Y, j, False, 0.0, False)


def pair_dot_narrow(X, i, Y, j):
    """:func:`pair_dot` with each product formed in the entries' dtype
    (:func:`dot_rows_narrow`)."""
    return dot_lanes_twin(np.asarray(X)[i], np.asarray(Y)[j], narrow=True)


@overload(pair_dot_narrow, jit_options={"nogil": True})
def _pair_dot_narrow_compiled(X, i, Y, j):
    if _c_rows(X, Y):
        return lambda X, i, Y, j: dot_rows_narrow(X, i, Y, j)
    return lambda X, i, Y, j: row_sum_any(X, i, Y, j, True, 0.0, False)


def pair_sumsq(X, i, Y, j, coef):
    """``sum_t (X[i, t] + coef Y[j, t])^2`` in float64 in :func:`dot_rows`' order, each term
    in float64 (:func:`sumsq_rows`). From Python: :func:`dot_lanes_twin`."""
    return dot_lanes_twin(np.asarray(X)[i], np.asarray(Y)[j], False, coef)


@overload(pair_sumsq, jit_options={"nogil": True})
def _pair_sumsq_compiled(X, i, Y, j, coef):
    if _c_rows(X, Y):
        return lambda X, i, Y, j, coef: sumsq_rows(X, i, Y, j, coef)
    return lambda X, i, Y, j, coef: row_sum_any(X, i, Y, j, False, coef, True)


def pair_sumsq_narrow(X, i, Y, j, coef):
    """:func:`pair_sumsq` with ``c = x + coef y`` and ``c^2`` in the rows' dtype (``coef`` of
    that dtype; :func:`sumsq_rows_narrow`)."""
    return dot_lanes_twin(np.asarray(X)[i], np.asarray(Y)[j], True, coef)


@overload(pair_sumsq_narrow, jit_options={"nogil": True})
def _pair_sumsq_narrow_compiled(X, i, Y, j, coef):
    if _c_rows(X, Y):
        return lambda X, i, Y, j, coef: sumsq_rows_narrow(X, i, Y, j, coef)
    return lambda X, i, Y, j, coef: row_sum_any(X, i, Y, j, True, coef, True)


def row_dot(X, Y, i):
    """``sum_j X[i, j] Y[i, j]``: :func:`pair_dot` of row i of X and row i of Y."""
    return pair_dot(X, i, Y, i)


@overload(row_dot, jit_options={"nogil": True})
def _row_dot_compiled(X, Y, i):
    return lambda X, Y, i: pair_dot(X, i, Y, i)
