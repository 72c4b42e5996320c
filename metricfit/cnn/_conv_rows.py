r"""The convolution's correlation in blocks of output rows, as numba intrinsics (issue 27).

:func:`metricfit._simd.correlate_sources` keeps a block of one output's *flat* positions in
vector registers and, for every tap, loads the source vectors under it: one unaligned vector
load (on AVX-512 nearly always split across two cache lines) for every vector multiply-add, so
the loop is bound by its loads: C3's forward pass ran at about a fifth of the rate OpenBLAS's
sgemm reaches on the same Xeon core (34 against 154 GFLOP/s).

Here the block is ``R`` output *rows* by ``V`` column vectors. Output row ``r`` reads source rows
``r + u`` for the kernel's rows ``u < k_h``, so one loaded source vector at row ``r0 + s``
serves the rows ``j = s - u`` of the block that read it, up to ``R`` multiply-adds instead of
one, and each broadcast tap serves the ``V`` column vectors (two or three images, or a row's
vectors). Per output element the sums run in :func:`~metricfit._simd.correlate_sources`'
order (source after source, then tap ``t = u k_w + v`` after tap: rows ``s`` ascending, columns
``v`` ascending within a row), one fused multiply-add per product: **the same bits**.

The loop over ``s`` has three parts, so that every ``j`` in the code has its taps (``0 <= s - j
< k_h``) without a test: rows ``s < R - 1`` (written out: rows ``j <= s``), rows ``R - 1 <= s <
k_h`` (a loop: every row of the block) and rows ``k_h <= s < k_h + R - 1`` (written out: rows
``j > s - k_h``). That needs ``R <= k_h``; smaller kernels, or fewer output rows than ``R``,
take blocks of one row (the same sums). The last block of rows overlaps the one before it and
writes the same values again.

A column vector ``b`` adds ``src_cols[b]`` to the source's starts and ``out_cols[b]`` to the
output's: the caller chooses vectors of a row (the last one overlapping the one before) or the
same columns of other images. Every lane is loaded and stored: the caller makes sure that each
index is in bounds (a lane past a row's last valid column reads the next row and writes a
column that is discarded).

**The weight gradient** (:func:`weight_grad_rows`) takes the same structure the other way
round: blocks of rows of ``Ge`` stay in registers, and each source row loaded once serves
every pair (row of the block, kernel row) that reads it. Its sums run in another order than
:func:`metricfit._simd.dot_taps_8`'s (a tap's lanes are a row's columns), so its bits differ
from the flat form's. :func:`weight_grad_pair` chooses between them.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .._simd import (
    VECTOR_BYTES,
    dot_taps_1,
    dot_taps_4,
    dot_taps_8,
    emit_multiply_add,
    float_arrays,
    lane_sum,
    load_vector,
    splat,
    vector_types,
    wide_registers,
)
from ._squash import write_output

__all__ = ["ROWS", "NARROW_ROWS", "SPARE_LANES", "WEIGHT_SPARE_LANES", "column_starts",
           "correlate_columns", "few_spare_lanes", "images_by_rows", "forward_by_rows",
           "input_grad_by_rows", "weight_grad_rows", "weight_block_sizes",
           "weight_rows_max_kernel", "weight_grad_flat", "weight_grad_pair", "correlate_rows_1",
           "correlate_rows_2", "correlate_rows_3", "rows_per_block"]

ROWS = 6  # output rows a block where the target has 32 vector registers (AVX-512)
NARROW_ROWS = 2  # with 16 (AVX2): 2 rows x 3 vectors x 2 registers a 64-byte vector


def rows_per_block(context):
    """Output rows a block, ``R``: :data:`ROWS` with 32 vector registers, else
    :data:`NARROW_ROWS`. (Blocks of ``R - 1`` rows where they compute fewer rows, C3's 20
    rows in 4 blocks of 5 instead of 24, were no faster: 10.98 against 10.86 ms a batch.)"""
    return ROWS if wide_registers(context) else NARROW_ROWS


def _make_correlate_rows(n_cols):
    """An intrinsic correlating blocks of ``R`` output rows by ``n_cols`` column vectors."""

    def correlate_rows(typingctx, src, src_starts, taps, tap_starts, kh, kw, w_src, n_rows,
                       src_cols, out, out_start, w_out, out_cols):
        if not float_arrays(src, taps, out):
            return None
        sig = types.void(src, src_starts, taps, tap_starts, kh, kw, w_src, n_rows, src_cols,
                         out, out_start, w_out, out_cols)

        def codegen(context, builder, signature, args):
            item, itemsize, lanes, vec, vec_ptr, intp = vector_types(context, src.dtype)
            arys = {i: context.make_array(signature.args[i])(context, builder, args[i])
                    for i in (0, 1, 2, 3, 8, 9, 12)}
            src_arr, taps_arr, out_arr = arys[0], arys[2], arys[9]
            kh_, kw_, w_src_, n_rows_, out0, w_out_ = (
                context.cast(builder, args[i], signature.args[i], types.intp)
                for i in (4, 5, 6, 7, 10, 11))
            n_src = cgutils.unpack_tuple(builder, arys[1].shape, 1)[0]
            zero = ir.Constant(vec, [ir.Constant(item, 0.0)] * lanes)
            const = lambda value: ir.Constant(intp, value)  # noqa: E731

            def index(i, position):
                value = builder.load(builder.gep(arys[i].data, [position]))
                return context.cast(builder, value, signature.args[i].dtype, types.intp)

            src_cols_ = [index(8, const(b)) for b in range(n_cols)]
            out_cols_ = [index(12, const(b)) for b in range(n_cols)]

            def add_row(accs, rows, row_base, tap_base, s):
                """Source row ``s`` (an LLVM value) of the block into the accumulators of the
                block's ``rows`` (Python ints), every column v."""
                with cgutils.for_range(builder, kw_) as v:
                    base = builder.add(row_base, v.index)
                    x_vecs = [load_vector(builder, src_arr.data, builder.add(base, col),
                                           vec_ptr, itemsize) for col in src_cols_]
                    for j in rows:
                        u = builder.sub(s, const(j))
                        t = builder.add(builder.add(tap_base, builder.mul(u, kw_)), v.index)
                        tap = splat(builder, vec, builder.load(builder.gep(taps_arr.data,
                                                                            [t])))
                        for b in range(n_cols):
                            acc = accs[j][b]
                            builder.store(emit_multiply_add(context, builder, builder.load(acc),
                                                        tap, x_vecs[b]), acc)

            def block(n_block, r0):
                """Output rows r0 .. r0 + n_block - 1 (needs n_block <= kh)."""
                accs = [[cgutils.alloca_once_value(builder, zero) for _ in range(n_cols)]
                        for _ in range(n_block)]
                for row in accs:
                    for acc in row:
                        builder.store(zero, acc)
                with cgutils.for_range(builder, n_src) as k:
                    s0 = builder.add(index(1, k.index), builder.mul(r0, w_src_))
                    tap_base = index(3, k.index)

                    def at(s):
                        return builder.add(s0, builder.mul(s, w_src_))

                    for s in range(n_block - 1):  # rows j <= s
                        add_row(accs, range(s + 1), at(const(s)), tap_base, const(s))
                    with cgutils.for_range_slice(builder, const(n_block - 1), kh_,
                                                 const(1)) as (s, _):
                        add_row(accs, range(n_block), at(s), tap_base, s)
                    for d in range(1, n_block):  # s = kh - 1 + d: rows j >= d
                        s = builder.add(kh_, const(d - 1))
                        add_row(accs, range(d, n_block), at(s), tap_base, s)
                for j, row in enumerate(accs):
                    o = builder.add(out0, builder.mul(builder.add(r0, const(j)), w_out_))
                    for acc, col in zip(row, out_cols_, strict=True):
                        ptr = builder.gep(out_arr.data, [builder.add(o, col)])
                        builder.store(builder.load(acc), builder.bitcast(ptr, vec_ptr),
                                      align=itemsize)

            n_block = rows_per_block(context)
            blocked = builder.and_(builder.icmp_signed(">=", kh_, const(n_block)),
                                   builder.icmp_signed(">=", n_rows_, const(n_block)))
            with builder.if_else(blocked) as (then, otherwise):
                with then:  # blocks of n_block rows, the last one overlapping
                    count = builder.sdiv(builder.add(n_rows_, const(n_block - 1)),
                                         const(n_block))
                    last = builder.sub(n_rows_, const(n_block))
                    with cgutils.for_range(builder, count) as i:
                        r0 = builder.mul(i.index, const(n_block))
                        block(n_block, builder.select(builder.icmp_signed(">", r0, last), last,
                                                      r0))
                with otherwise:  # small kernels or few rows: rows one at a time
                    with cgutils.for_range(builder, n_rows_) as i:
                        block(1, i.index)
            return context.get_dummy_value()

        return sig, codegen

    correlate_rows.__name__ = correlate_rows.__qualname__ = f"correlate_rows_{n_cols}"
    return intrinsic(correlate_rows)


correlate_rows_1 = _make_correlate_rows(1)
correlate_rows_1.__doc__ = r"""``out[out_start + r w_out + out_cols[0] + l] = sum_k sum_{u, v}
taps[tap_starts[k] + u kw + v] src[src_starts[k] + (r + u) w_src + v + src_cols[0] + l]``
for every output row r < n_rows and lane l < lanes, summed in the order of the module
docstring (the same bits as :func:`metricfit._simd.correlate_sources` over the same
positions). ``src``, ``taps``, ``out``: 1-D contiguous arrays of one float dtype; the starts and
column offsets: integer arrays. Every index must be in bounds (not checked)."""
correlate_rows_2 = _make_correlate_rows(2)
correlate_rows_2.__doc__ = """:func:`correlate_rows_1` for two column vectors (``src_cols``,
``out_cols`` of two offsets): each broadcast tap serves both."""
correlate_rows_3 = _make_correlate_rows(3)
correlate_rows_3.__doc__ = """:func:`correlate_rows_1` for three column vectors."""


SPARE_LANES = 0.1  # the share of lanes past a row's width (or computed twice) that rows allow
# in the forward pass and the input gradient, ...
WEIGHT_SPARE_LANES = 0.25  # ... and in the weight gradient, whose rows save more loads: C1's
# 40 columns in three vectors of 16 (1.2x the lanes) took 5.6 against 8.4 ms a batch in rows
# (float32, blocks of 16 images, one thread), while its forward pass took 9.4 against 7.9


@njit(cache=True, nogil=True)
def few_spare_lanes(width, lanes, spare):  # pragma: no cover (compiled)
    """Whether the column vectors of a row of ``width`` (:func:`column_starts`) compute at
    most ``spare`` (:data:`SPARE_LANES`, :data:`WEIGHT_SPARE_LANES`) more lanes than the row
    has: otherwise the flat blocks, which compute none, are faster (C3's input gradient, 20
    columns in two vectors of 16: 1.6x the lanes, 15.4 against 14.0 ms a batch)."""
    return -(-width // lanes) * lanes <= (1 + spare) * width


@njit(cache=True, nogil=True)
def images_by_rows(n, cols, w, lanes, spare):  # pragma: no cover (compiled)
    """How many of n images (the first ones) suit blocks of rows whose rows hold ``cols``
    valid columns in rows ``w`` wide: none unless a vector fits in a row and the column
    vectors have few lanes to spare (:func:`few_spare_lanes` with ``spare``); all of them
    where a row holds a whole vector; else all but the last (a lane past a short row reads the
    next map, and past the last image's end)."""
    if lanes > w or not few_spare_lanes(cols, lanes, spare):
        return 0
    return n if cols >= lanes else max(n - 1, 0)


@njit(cache=True, nogil=True)
def column_starts(width, lanes):  # pragma: no cover (compiled)
    """Starts of the column vectors that cover ``width`` columns: 0, lanes, 2 lanes, ..., the
    last one at ``width - lanes`` (overlapping the one before); ``[0]`` when ``width <
    lanes`` (its lanes past ``width`` are the caller's to keep in bounds)."""
    if width < lanes:
        return np.zeros(1, np.int64)
    count = -(-width // lanes)
    starts = np.empty(count, np.int64)
    for c in range(count):
        starts[c] = min(c * lanes, width - lanes)
    return starts


@njit(cache=True, nogil=True)
def correlate_columns(src, starts, taps, tap_starts, kh, kw, w_src, n_rows, src_cols, out,
                      w_out, out_cols):  # pragma: no cover (compiled)
    """:func:`correlate_rows_1` over every column vector of ``src_cols`` / ``out_cols`` (equal
    sizes), three at a time (then two, or one): each output element's sums in the same order,
    whatever the grouping."""
    c, count = 0, src_cols.size
    while c < count:
        if count - c >= 3:
            correlate_rows_3(src, starts, taps, tap_starts, kh, kw, w_src, n_rows,
                             src_cols[c:c + 3], out, 0, w_out, out_cols[c:c + 3])
            c += 3
        elif count - c == 2:
            correlate_rows_2(src, starts, taps, tap_starts, kh, kw, w_src, n_rows,
                             src_cols[c:c + 2], out, 0, w_out, out_cols[c:c + 2])
            c += 2
        else:
            correlate_rows_1(src, starts, taps, tap_starts, kh, kw, w_src, n_rows,
                             src_cols[c:c + 1], out, 0, w_out, out_cols[c:c + 1])
            c += 1


@njit(cache=True, nogil=True)
def forward_by_rows(X_flat, taps, b, table, Y, squash, shape, kh, kw, n, out):  # pragma: no cover
    """Images 0 .. n - 1 of :func:`conv2d_forward_into` in blocks of output rows
    (:mod:`._conv_rows`: the same bits as the flat blocks, fewer loads): the column vectors of
    a row, and of up to three images at once where a row holds one vector."""
    c_in, h, w = shape
    c_out, ho, wo = Y.shape[1], Y.shape[2], Y.shape[3]
    span, lanes = (ho - 1) * w + wo, VECTOR_BYTES // X_flat.itemsize
    chunks = column_starts(wo, lanes)
    per_call = max(1, 3 // chunks.size)  # images a call
    acc = np.zeros((per_call, span + lanes), X_flat.dtype)  # + lanes: the last row's lanes
    acc_flat = acc.reshape(acc.size)
    starts, tap_starts = np.empty(c_in, np.int64), np.empty(c_in, np.int64)
    src_cols = np.empty(per_call * chunks.size, np.int64)
    out_cols = np.empty(per_call * chunks.size, np.int64)
    i = 0
    while i < n:
        m = min(per_call, n - i)
        for j in range(m):
            for q in range(chunks.size):
                src_cols[j * chunks.size + q] = j * c_in * h * w + chunks[q]
                out_cols[j * chunks.size + q] = j * (span + lanes) + chunks[q]
        for o in range(c_out):
            k = 0
            for c in range(c_in):
                if table[o, c]:
                    starts[k], tap_starts[k] = (i * c_in + c) * h * w, (o * c_in + c) * kh * kw
                    k += 1
            correlate_columns(X_flat, starts[:k], taps, tap_starts[:k], kh, kw, w, ho,
                              src_cols[:m * chunks.size], acc_flat, w,
                              out_cols[:m * chunks.size])
            for j in range(m):
                write_output(acc[j, :span], b[o], out, Y[i + j, o], w, squash)
        i += m


@njit(cache=True, nogil=True)
def input_grad_by_rows(flipped, Gp, table, kh, kw, w, dX):  # pragma: no cover (compiled)
    """:func:`_input_grad_into` in blocks of rows of dX (:mod:`._conv_rows`; needs ``w >=``
    one vector): the same bits as the flat blocks."""
    n, c_out, width = Gp.shape
    c_in, hw = dX.shape[1], dX.shape[2]
    chunks = column_starts(w, VECTOR_BYTES // Gp.itemsize)
    G_flat, taps, dX_flat = Gp.reshape(Gp.size), flipped.reshape(flipped.size), dX.reshape(
        dX.size)
    starts, tap_starts = np.empty(c_out, np.int64), np.empty(c_out, np.int64)
    out_cols = np.empty(chunks.size, np.int64)
    for i in range(n):
        for c in range(c_in):
            k = 0
            for o in range(c_out):
                if table[o, c]:
                    starts[k], tap_starts[k] = (i * c_out + o) * width, (o * c_in + c) * kh * kw
                    k += 1
            out_cols[:] = chunks + (i * c_in + c) * hw
            correlate_columns(G_flat, starts[:k], taps, tap_starts[:k], kh, kw, w, hw // w,
                              chunks, dX_flat, w, out_cols)


def weight_block_sizes(context):
    """``(R, (U, ...), K)``: rows of Ge a block, the kernel rows a pass takes (the largest
    that fits what is left of the kernel first) and the most kernel rows for which the weight
    gradient takes row blocks at all. With 32 vector registers: 8, (7, 6, 1) and 7 (seven
    kernel rows: 14 accumulators, 8 rows of Ge and a source row, 23 registers). With 16: 3,
    (3, 1) and 6. Which pass takes a kernel row does not change its sums. Measured (one
    thread, blocks of 16 images, float32 / float64): C3's 6 rows in one pass, 10.0-10.7
    against 13.0-14.7 ms a batch flat (float32); C1's 7 in one pass (AVX-512), 5.6 / 10.9
    against 8.4 / 18.2 flat (6 + 1 rows had taken 40.9 against 20.0 in float64); C1's 7 in
    passes of 3, 3 and 1 (AVX2, compiled for ``haswell`` on the same Xeon), 17.7 / 27.4
    against 12.2 / 23.7 flat: there C1 stays flat."""
    return (8, (7, 6, 1), 7) if wide_registers(context) else (3, (3, 1), 6)


@intrinsic
def weight_rows_max_kernel(typingctx):
    """The most kernel rows for which the weight gradient takes row blocks on the target
    numba compiles for (:func:`weight_block_sizes`): a constant in the compiled code."""
    def codegen(context, builder, signature, args):
        return context.get_constant(types.intp, weight_block_sizes(context)[2])

    return types.intp(), codegen


@intrinsic
def weight_grad_rows(typingctx, G, X, g_start, x_start, n_images, g_step, x_step, w, n_rows,
                     n_cols, kh, kw, chunks, keep_from, out, out_start):
    r"""``out[out_start + u kw + v] = sum_b sum_n sum_r sum_l Ge_b[n, r, l] X[x_start + n x_step
    + (r + u) w + v + chunks[b] + l]`` with ``Ge_b[n, r, l] = G[g_start + n g_step + r w +
    chunks[b] + l]`` for lanes ``keep_from[b] <= l < n_cols - chunks[b]`` (0 elsewhere: lanes
    an overlapping chunk shares with the one before, and those past a row's ``n_cols``
    columns), every tap (u, v): a convolution's weight gradient in blocks of
    rows of Ge (see :func:`weight_block_sizes`). Each tap has two vectors of lanes: one adds
    the products of the even rows of every block, the other those of the odd rows (the rows
    past the last whole block go to the first), each in order of image, chunk and row; the
    two are added, then the lanes in order. Every index must be in bounds (not checked)."""
    if not float_arrays(G, X, out):
        return None
    sig = types.void(G, X, g_start, x_start, n_images, g_step, x_step, w, n_rows, n_cols, kh, kw,
                     chunks, keep_from, out, out_start)

    def codegen(context, builder, signature, args):
        item, itemsize, lanes, vec, vec_ptr, intp = vector_types(context, G.dtype)
        g_arr, x_arr = (context.make_array(signature.args[i])(context, builder, args[i])
                        for i in (0, 1))
        ch_arr, keep_arr, out_arr = (context.make_array(signature.args[i])(context, builder,
                                                                           args[i])
                                     for i in (12, 13, 14))
        g0, x0, n_img, g_step_, x_step_, w_, n_rows_, n_cols_, kh_, kw_ = (
            context.cast(builder, args[i], signature.args[i], types.intp) for i in range(2, 12))
        out0 = context.cast(builder, args[15], signature.args[15], types.intp)
        n_chunks = cgutils.unpack_tuple(builder, ch_arr.shape, 1)[0]
        zero = ir.Constant(vec, [ir.Constant(item, 0.0)] * lanes)
        const = lambda value: ir.Constant(intp, value)  # noqa: E731
        lane_ids = ir.Constant(ir.VectorType(intp, lanes), [const(lane) for lane in range(lanes)])
        rows, passes, _ = weight_block_sizes(context)

        def index(arr, i, ty):
            return context.cast(builder, builder.load(builder.gep(arr.data, [i])), ty, types.intp)

        def load(arr, i):
            return load_vector(builder, arr.data, i, vec_ptr, itemsize)

        def one_pass(n_u, u0):
            """Kernel rows u0 .. u0 + n_u - 1, every column v."""
            with cgutils.for_range(builder, kw_) as v:
                accs = [[cgutils.alloca_once_value(builder, zero) for _ in range(2)]
                        for _ in range(n_u)]  # two a tap (even and odd rows of a block)
                for pair in accs:
                    for acc in pair:
                        builder.store(zero, acc)
                with cgutils.for_range(builder, n_img) as n, \
                        cgutils.for_range(builder, n_chunks) as b:
                    col = index(ch_arr, b.index, signature.args[12].dtype)
                    lane_type = ir.VectorType(intp, lanes)
                    keep = builder.and_(
                        builder.icmp_signed(">=", lane_ids, splat(builder, lane_type, index(
                            keep_arr, b.index, signature.args[13].dtype))),
                        builder.icmp_signed("<", lane_ids, splat(builder, lane_type,
                                                                 builder.sub(n_cols_, col))))
                    g_base = builder.add(builder.add(g0, builder.mul(n.index, g_step_)), col)
                    x_base = builder.add(builder.add(x0, builder.mul(n.index, x_step_)), col)
                    x_base = builder.add(builder.add(x_base, v.index), builder.mul(u0, w_))

                    def g_row(r):
                        return builder.select(keep, load(g_arr, builder.add(
                            g_base, builder.mul(r, w_))), zero)

                    def x_row(r):
                        return load(x_arr, builder.add(x_base, builder.mul(r, w_)))

                    def fma(acc, g, x):
                        builder.store(emit_multiply_add(context, builder, builder.load(acc), g,
                                                        x), acc)

                    full = builder.sdiv(n_rows_, const(rows))
                    with cgutils.for_range(builder, full) as blk:
                        r0 = builder.mul(blk.index, const(rows))
                        g = [g_row(builder.add(r0, const(j))) for j in range(rows)]
                        for s in range(rows + n_u - 1):  # source row r0 + s: rows j = s - u
                            x = x_row(builder.add(r0, const(s)))
                            for j in range(max(0, s - n_u + 1), min(rows - 1, s) + 1):
                                fma(accs[s - j][j % 2], g[j], x)
                    with cgutils.for_range_slice(builder, builder.mul(full, const(rows)),
                                                 n_rows_, const(1)) as (r, _):
                        g = g_row(r)
                        for uu in range(n_u):
                            fma(accs[uu][0], g, x_row(builder.add(r, const(uu))))
                for uu, (even, odd) in enumerate(accs):
                    t = builder.add(builder.mul(builder.add(u0, const(uu)), kw_), v.index)
                    acc = builder.fadd(builder.load(even), builder.load(odd))
                    builder.store(lane_sum(builder, acc),
                                  builder.gep(out_arr.data, [builder.add(out0, t)]))

        u0 = cgutils.alloca_once_value(builder, const(0))
        for n_u in passes:  # as many passes of n_u rows as fit, then the smaller ones
            left = builder.sdiv(builder.sub(kh_, builder.load(u0)), const(n_u))
            with cgutils.for_range(builder, left):
                one_pass(n_u, builder.load(u0))
                builder.store(builder.add(builder.load(u0), const(n_u)), u0)
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True)
def weight_grad_flat(G, X, starts, n, steps, span, offs, out):  # pragma: no cover (compiled)
    """``out[t] = sum_{i < n} sum_{p < span} G[g0 + i g_step + p] X[x0 + i x_step + p +
    offs[t]]`` for every tap t (``starts = (g0, x0)``, ``steps = (g_step, x_step)``): eight
    taps at a time in vector registers (:func:`metricfit._simd.dot_taps_8`, fixed order), then
    four, then one."""
    (g0, x0), (g_step, x_step), n_taps, t = starts, steps, offs.size, 0
    while t + 8 <= n_taps:
        dot_taps_8(G, X, g0, x0, span, offs, t, n, g_step, x_step, out, t)
        t += 8
    if t + 4 <= n_taps:  # four of the rest at once (each single tap is one chain)
        dot_taps_4(G, X, g0, x0, span, offs, t, n, g_step, x_step, out, t)
        t += 4
    while t < n_taps:
        dot_taps_1(G, X, g0, x0, span, offs, t, n, g_step, x_step, out, t)
        t += 1


@njit(cache=True, nogil=True)
def weight_grad_pair(G, X, starts, n, steps, w, span, kh, kw, offs, out):  # pragma: no cover
    """The weight gradient of one connected pair (o, c) over n images into ``out`` (kh kw):
    :func:`weight_grad_rows` where a row of Ge holds its vectors with few lanes to spare
    (:func:`few_spare_lanes` with :data:`WEIGHT_SPARE_LANES`: C3's 15 columns, C1's 40) and
    the kernel has at most :func:`weight_rows_max_kernel` rows (7 on AVX-512, 6 on AVX2), else
    :func:`weight_grad_flat`.
    Where a row is shorter than a vector, the last image takes the flat form (its spare
    lanes would read past X) and its sums are added to the rows' (a fixed order)."""
    lanes, wo = VECTOR_BYTES // X.itemsize, w - kw + 1
    by_rows = (images_by_rows(n, wo, w, lanes, WEIGHT_SPARE_LANES)
               if kh <= weight_rows_max_kernel() else 0)
    if by_rows == 0:
        weight_grad_flat(G, X, starts, n, steps, span, offs, out)
        return
    chunks = column_starts(wo, lanes)
    keep = np.zeros(chunks.size, np.int64)  # lanes an overlapping chunk shares: zero in Ge
    for b in range(1, chunks.size):
        keep[b] = chunks[b - 1] + lanes - chunks[b]
    weight_grad_rows(G, X, starts[0], starts[1], by_rows, steps[0], steps[1], w,
                     (span + kw - 1) // w, wo, kh, kw, chunks, keep, out, 0)
    if by_rows < n:
        rest = np.empty(out.size, out.dtype)
        last = (starts[0] + by_rows * steps[0], starts[1] + by_rows * steps[1])
        weight_grad_flat(G, X, last, n - by_rows, steps, span, offs, rest)
        for t in range(out.size):
            out[t] += rest[t]
