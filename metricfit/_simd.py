r"""Vector-register accumulators for the convolution kernels, as numba intrinsics.

Used by the convnet (:mod:`metricfit.cnn`) and the Gabor filter bank
(:mod:`metricfit.features._gabor_separable`): both correlate rows with taps in a fixed order.

The weight gradient is a dot product per kernel tap,
``dW[o, c, t] = sum_n sum_p Ge[n, o, p] x[n, c, p + off_t]``
(:mod:`metricfit.cnn._conv_kernels`). A float dot product only vectorises if its additions
may be re-associated, which numba allows only with
``fastmath`` (banned in this project's reductions: the result would depend on the compiler's
choices). Written in plain numba, the sum therefore goes through an array of partial sums in
memory, one load and one store of it per few products, and the loop is bound by memory
operations, not arithmetic (about 30-40 GFLOP/s on this project's machine, against 90-110 for
the forward correlation).

:func:`dot_taps_8` states the order instead of leaving it to the compiler. It is written in
LLVM IR (``llvmlite``) with explicit vector types of 64 bytes (16 float32 or 8 float64 lanes;
LLVM splits them into the registers the CPU has): lane ``l`` of the accumulator of tap t adds,
image after image and block after block, the products at positions ``p = l (mod lanes)``; the
lanes are then added in order 0, 1, ..., lanes - 1. The accumulators of eight taps (four
where the CPU has 16 vector registers: the two halves then take one pass each, the same sums)
stay in registers across the whole loop and share each load of ``Ge``: nine vector loads per
eight vector multiply-adds, no stores. :func:`correlate_sources` does the same for the
correlations of the forward pass and the input gradient (element-wise sums, so the gain there
is the registers: each output written once).

**The order is fixed by the code**, not by the CPU or the thread count. Each product is added
by one fused multiply-add (``llvm.fma``: ``acc + a b`` rounded once) where the target has
them (x86 with FMA3, every AArch64 CPU), else multiplied, rounded, then added. The two round
differently, so a machine with FMA and one without (or numba told to compile for
``generic``) differ in the last bits; on one machine and target every thread count gives the
same bits. Why FMA: a CPU with two 512-bit arithmetic ports (Intel's Xeons) issues a separate
multiply and add as two operations, so half the products a cycle; AMD's Zen 4/5 add on their
own pipes and run both forms alike (``docs/results/timing.md``, "FMA in the convolution
intrinsics": llvm-mca's model of a Xeon core, measurements on an AMD one). How many vectors
a block holds follows the registers the target has: 32 (AVX-512) or 16
(:func:`wide_registers`); the sums are the same either way.

A span that is not a multiple of the lane count ends with one more block that *overlaps* the
previous one (it starts at ``span - lanes``), its already-counted lanes zeroed in the
``Ge`` vector: every load stays inside the data, and the overlapped products add exact zeros.
Spans shorter than one vector are left to the caller (:mod:`metricfit.cnn._conv_kernels`
keeps its plain loop for them).
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["VECTOR_BYTES", "BLOCK_VECTORS", "GROUP_OUTPUTS", "GROUP_OUTPUTS_WIDE",
           "PAIR_VECTORS", "lanes_of", "dot_taps_8", "dot_taps_4", "dot_taps_1",
           "correlate_sources", "correlate_group_2", "correlate_group_3", "correlate_group_5",
           "target_features", "fused_multiply_add", "wide_registers", "multiply_add",
           "float_arrays", "vector_types", "load_vector", "splat", "emit_multiply_add",
           "lane_sum"]  # the last six: code generation, for intrinsics

VECTOR_BYTES = 64  # one AVX-512 register; two AVX2 ones


def lanes_of(itemsize):
    """Lanes of a vector of ``VECTOR_BYTES`` bytes for items of ``itemsize`` bytes."""
    return VECTOR_BYTES // itemsize


def float_arrays(*arrays):
    """Whether all are arrays of one float dtype (float32 or float64)."""
    return (all(isinstance(a, types.Array) for a in arrays)
            and arrays[0].dtype in (types.float32, types.float64)
            and all(a.dtype == arrays[0].dtype for a in arrays))


def vector_types(context, dtype):
    """``(item, itemsize, lanes, vector, vector pointer, intp)`` LLVM types for ``dtype``."""
    item = context.get_value_type(dtype)
    itemsize = context.get_abi_sizeof(item)
    lanes = lanes_of(itemsize)
    vec = ir.VectorType(item, lanes)
    return item, itemsize, lanes, vec, vec.as_pointer(), context.get_value_type(types.intp)


def target_features(context):
    """``(triple, features)`` numba compiles for: the LLVM target triple and the set of CPU
    features it enables (``"fma"``, ``"avx512f"``, ...), from the codegen's description of
    itself (what its cache is keyed on)."""
    triple, _, features = context.codegen().magic_tuple()
    return triple, {f[1:] for f in features.split(",") if f.startswith("+")}


def fused_multiply_add(context):
    """Whether the target has a fused multiply-add instruction: x86 with FMA3, and every
    AArch64 CPU (part of its base instruction set)."""
    triple, features = target_features(context)
    return "fma" in features or triple.startswith(("aarch64", "arm64"))


def wide_registers(context):
    """Whether the target has 32 vector registers of ``VECTOR_BYTES`` (AVX-512): then the
    intrinsics keep twice as many accumulators."""
    return "avx512f" in target_features(context)[1]


def emit_multiply_add(context, builder, acc, a, b):
    """``acc + a b`` on float scalars or vectors of one type: one ``llvm.fma`` (one rounding)
    where the target has fused multiply-adds, else a multiply then an add (module
    docstring)."""
    if not fused_multiply_add(context):
        return builder.fadd(acc, builder.fmul(a, b))
    kind = acc.type
    element = kind.element if isinstance(kind, ir.VectorType) else kind
    name = f"f{32 if element == ir.FloatType() else 64}"
    if isinstance(kind, ir.VectorType):
        name = f"v{kind.count}{name}"
    fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(kind, [kind] * 3),
                                         f"llvm.fma.{name}")
    return builder.call(fma, [a, b, acc])


def splat(builder, vec_type, value):
    """A vector with every lane ``value``."""
    out = ir.Constant(vec_type, ir.Undefined)
    for lane in range(vec_type.count):
        out = builder.insert_element(out, value, ir.Constant(ir.IntType(32), lane))
    return out


@intrinsic
def multiply_add(typingctx, a, b, c):
    """``a b + c`` for float scalars (computed in the widest of their types), as
    :func:`emit_multiply_add` decides: one rounding where the target has FMA. Loops over it
    vectorise (``llvm.fma``)."""
    if not all(isinstance(t, types.Float) for t in (a, b, c)):
        return None
    result = max((a, b, c), key=lambda t: t.bitwidth)

    def codegen(context, builder, signature, args):
        x, y, z = (context.cast(builder, v, t, result)
                   for v, t in zip(args, signature.args, strict=True))
        return emit_multiply_add(context, builder, z, x, y)

    return result(a, b, c), codegen


def lane_sum(builder, vector):
    """LLVM: the lanes of ``vector`` added in order 0, 1, ..., lanes - 1 (one rounding each)."""
    i32 = ir.IntType(32)
    total = builder.extract_element(vector, ir.Constant(i32, 0))
    for lane in range(1, vector.type.count):
        total = builder.fadd(total, builder.extract_element(vector, ir.Constant(i32, lane)))
    return total


def load_vector(builder, data, index, vec_ptr, align):
    """LLVM: the vector at ``data[index]`` (``vec_ptr`` its pointer type; ``align`` in bytes,
    the item size for unaligned loads)."""
    return builder.load(builder.bitcast(builder.gep(data, [index]), vec_ptr), align=align)


def _make_dot_taps(n_taps):
    """An intrinsic computing ``n_taps`` tap dot products at once (see :func:`dot_taps_8`)."""

    def dot_taps(typingctx, G, X, g_start, x_start, span, offs, t0, n_images, g_step, x_step,
                 out, out_start):
        if not float_arrays(G, X, out):
            return None
        sig = types.void(G, X, g_start, x_start, span, offs, t0, n_images, g_step, x_step, out,
                         out_start)

        def codegen(context, builder, signature, args):
            item, itemsize, lanes, vec, vec_ptr, intp = vector_types(context, G.dtype)
            g_arr = context.make_array(signature.args[0])(context, builder, args[0])
            x_arr = context.make_array(signature.args[1])(context, builder, args[1])
            o_arr = context.make_array(signature.args[5])(context, builder, args[5])
            out_arr = context.make_array(signature.args[10])(context, builder, args[10])
            g0, x0, span_, _, t0_, n_img, g_step_, x_step_, _, out0 = [
                context.cast(builder, a, ty, types.intp)
                if isinstance(ty, types.Integer) else a
                for a, ty in zip(args[2:], signature.args[2:], strict=True)]
            offsets = [builder.load(builder.gep(o_arr.data, [builder.add(
                t0_, ir.Constant(intp, j))])) for j in range(n_taps)]
            offsets = [context.cast(builder, v, signature.args[5].dtype, types.intp)
                       for v in offsets]
            zero = ir.Constant(vec, [ir.Constant(item, 0.0)] * lanes)
            width = ir.Constant(intp, lanes)
            n_blocks = builder.sdiv(span_, width)
            rest = builder.srem(span_, width)
            # the overlapping last block: its first lanes - rest lanes were counted already
            lane_ids = ir.Constant(ir.VectorType(intp, lanes),
                                   [ir.Constant(intp, lane) for lane in range(lanes)])
            keep = builder.icmp_signed(">=", lane_ids,
                                       splat(builder, ir.VectorType(intp, lanes),
                                              builder.sub(width, rest)))
            last = builder.sub(span_, width)
            per_pass = n_taps if n_taps <= 4 or wide_registers(context) else 4

            def add_block(accs, taps, g_base, x_base, p, mask):
                g_vec = load_vector(builder, g_arr.data, builder.add(g_base, p), vec_ptr,
                                     itemsize)
                if mask is not None:
                    g_vec = builder.select(mask, g_vec, zero)
                for acc, j in zip(accs, taps, strict=True):
                    x_vec = load_vector(builder, x_arr.data,
                                         builder.add(builder.add(x_base, p), offsets[j]),
                                         vec_ptr, itemsize)
                    builder.store(emit_multiply_add(context, builder, builder.load(acc), g_vec,
                                                x_vec), acc)

            for first in range(0, n_taps, per_pass):  # the taps in registers at once
                taps = range(first, first + per_pass)
                accs = [cgutils.alloca_once_value(builder, zero) for _ in taps]
                with cgutils.for_range(builder, n_img) as image:
                    g_base = builder.add(g0, builder.mul(image.index, g_step_))
                    x_base = builder.add(x0, builder.mul(image.index, x_step_))
                    with cgutils.for_range(builder, n_blocks) as block:
                        add_block(accs, taps, g_base, x_base, builder.mul(block.index, width),
                                  None)
                    has_rest = builder.icmp_signed(">", rest, ir.Constant(intp, 0))
                    with builder.if_then(has_rest):
                        add_block(accs, taps, g_base, x_base, last, keep)
                for acc, j in zip(accs, taps, strict=True):
                    builder.store(lane_sum(builder, builder.load(acc)), builder.gep(
                        out_arr.data, [builder.add(out0, ir.Constant(intp, j))]))
            return context.get_dummy_value()

        return sig, codegen

    dot_taps.__name__ = dot_taps.__qualname__ = f"dot_taps_{n_taps}"
    return intrinsic(dot_taps)


dot_taps_8 = _make_dot_taps(8)
dot_taps_8.__doc__ = r"""``out[out_start + j] = sum_{i < n_images} sum_{p < span}
G[g_start + i g_step + p] X[x_start + i x_step + p + offs[t0 + j]]`` for j = 0..7, in the
fixed order of the module docstring (all eight taps in one pass over the data where the target
has 32 vector registers, else taps 0-3 then 4-7: the same sums). ``G``, ``X``, ``out``: 1-D
contiguous arrays of one float dtype (flat views of the batch); ``offs``: integer tap offsets.
Requires ``span >= lanes_of(itemsize)`` and every index in bounds (not checked: the caller's
loops guarantee it)."""
dot_taps_4 = _make_dot_taps(4)
dot_taps_4.__doc__ = """:func:`dot_taps_8` for four taps (four of those left after groups of 8)."""
dot_taps_1 = _make_dot_taps(1)
dot_taps_1.__doc__ = """:func:`dot_taps_8` for one tap (the taps left after groups of 8 and 4; one
chain of dependent additions, so bound by their latency)."""


def _make_correlate_group(n_out, block_vectors):
    """An intrinsic correlating ``n_out`` output maps that read the same source maps (each with
    its own kernels), ``block_vectors`` vectors per output in registers, twice as many on a
    target with 32 vector registers when the size holds such a block (see
    :func:`correlate_sources` and :func:`correlate_group_3`)."""

    def correlate_group(typingctx, src, src_starts, taps, tap_starts, n_taps, offs, size, out,
                        out_starts):
        if not float_arrays(src, taps, out):
            return None
        sig = types.void(src, src_starts, taps, tap_starts, n_taps, offs, size, out, out_starts)

        def codegen(context, builder, signature, args):
            item, itemsize, lanes, vec, vec_ptr, intp = vector_types(context, src.dtype)
            arrays = [context.make_array(signature.args[i])(context, builder, args[i])
                      for i in (0, 1, 2, 3, 5, 7, 8)]
            src_arr, starts_arr, taps_arr, tstarts_arr, offs_arr, out_arr, ostarts_arr = arrays
            n_taps_ = context.cast(builder, args[4], signature.args[4], types.intp)
            size_ = context.cast(builder, args[6], signature.args[6], types.intp)
            n_src = cgutils.unpack_tuple(builder, starts_arr.shape, 1)[0]
            zero = ir.Constant(vec, [ir.Constant(item, 0.0)] * lanes)

            def load_index(arr, i, dtype):
                value = builder.load(builder.gep(arr.data, [i]))
                return context.cast(builder, value, dtype, types.intp)

            def blocks_of(n_vectors):
                """Every block of ``n_vectors`` vectors per output (the last one overlapping)."""
                accs = [[cgutils.alloca_once_value(builder, zero) for _ in range(n_vectors)]
                        for _ in range(n_out)]
                width = ir.Constant(intp, lanes * n_vectors)
                n_blocks = builder.sdiv(builder.add(size_, ir.Constant(intp, lanes * n_vectors
                                                                       - 1)), width)
                last = builder.sub(size_, width)
                with cgutils.for_range(builder, n_blocks) as block:
                    start = builder.mul(block.index, width)
                    start = builder.select(builder.icmp_signed(">", start, last), last, start)
                    for row in accs:
                        for acc in row:
                            builder.store(zero, acc)
                    with cgutils.for_range(builder, n_src) as k:
                        s0 = builder.add(load_index(starts_arr, k.index,
                                                    signature.args[1].dtype), start)
                        t0s = [load_index(tstarts_arr, builder.add(
                            builder.mul(ir.Constant(intp, j), n_src), k.index),
                            signature.args[3].dtype) for j in range(n_out)]
                        with cgutils.for_range(builder, n_taps_) as t:
                            base = builder.add(s0, load_index(offs_arr, t.index,
                                                              signature.args[5].dtype))
                            x_vecs = [load_vector(builder, src_arr.data, builder.add(
                                base, ir.Constant(intp, b * lanes)), vec_ptr, itemsize)
                                for b in range(n_vectors)]
                            for j in range(n_out):
                                tap = builder.load(builder.gep(taps_arr.data,
                                                               [builder.add(t0s[j], t.index)]))
                                tap_vec = splat(builder, vec, tap)
                                for b in range(n_vectors):
                                    acc = accs[j][b]
                                    builder.store(emit_multiply_add(context, builder,
                                                                builder.load(acc), tap_vec,
                                                                x_vecs[b]), acc)
                    for j in range(n_out):
                        o0 = builder.add(load_index(ostarts_arr, ir.Constant(intp, j),
                                                    signature.args[8].dtype), start)
                        for b in range(n_vectors):
                            ptr = builder.gep(out_arr.data, [builder.add(o0, ir.Constant(
                                intp, b * lanes))])
                            builder.store(builder.load(accs[j][b]),
                                          builder.bitcast(ptr, vec_ptr), align=itemsize)

            if not wide_registers(context):
                blocks_of(block_vectors)
                return context.get_dummy_value()
            fits = builder.icmp_signed(">=", size_, ir.Constant(intp, 2 * block_vectors * lanes))
            with builder.if_else(fits) as (wide, narrow):
                with wide:
                    blocks_of(2 * block_vectors)
                with narrow:
                    blocks_of(block_vectors)
            return context.get_dummy_value()

        return sig, codegen

    correlate_group.__name__ = correlate_group.__qualname__ = f"correlate_group_{n_out}"
    return intrinsic(correlate_group)


BLOCK_VECTORS = 4  # output vectors accumulated at once by correlate_sources (8: AVX-512)
correlate_sources = _make_correlate_group(1, BLOCK_VECTORS)
correlate_sources.__doc__ = r"""``out[out_starts[0] + p] = sum_k sum_{t < n_taps}
taps[tap_starts[k] + t] src[src_starts[k] + p + offs[t]]`` for p < size, the sums in that
order (source k, then tap t): a correlation of several source maps with their kernels into one
output map (a convolution's forward pass over the input maps an output reads, or its input
gradient over the output maps that read an input).

Blocks of ``BLOCK_VECTORS`` vectors of out (twice as many on AVX-512 when the size holds
them) stay in registers while every source and tap adds to them (one load and one broadcast
tap per ``BLOCK_VECTORS`` multiply-adds, each output written once); a size that is not a
multiple of the block ends with a block that overlaps the previous one and writes the same
values again. Requires ``size >= BLOCK_VECTORS *
lanes_of(itemsize)`` and every index in bounds (not checked). ``src``, ``taps``, ``out``: 1-D
contiguous arrays of one float dtype; ``src_starts``, ``tap_starts``, ``out_starts``: integer
arrays."""


GROUP_OUTPUTS, GROUP_VECTORS = 3, 2  # 6 accumulators: 12 AVX2 registers of the 16 (AVX-512:
# 4 vectors an output when the size holds them, 12 of its 32 registers)
correlate_group_3 = _make_correlate_group(GROUP_OUTPUTS, GROUP_VECTORS)
correlate_group_3.__doc__ = r"""``out[out_starts[j] + p] = sum_k sum_{t < n_taps}
taps[tap_starts[j k_n + k] + t] src[src_starts[k] + p + offs[t]]`` for the ``GROUP_OUTPUTS``
= 3 outputs j and p < size (``k_n`` = ``src_starts.size``; ``tap_starts`` a flat (3, k_n)
matrix): :func:`correlate_sources` for three output maps that read the same source maps, each
loaded source vector serving the three (C1's 15 maps read one input). Blocks of
``GROUP_VECTORS`` vectors per output (twice as many on AVX-512 when the size holds them);
each output's sums in :func:`correlate_sources`' order (the same result to the bit).
Requires ``size >= GROUP_VECTORS * lanes_of(itemsize)``."""


GROUP_OUTPUTS_WIDE = 5  # 10 accumulators, two loaded vectors and a tap: 13 AVX2 registers of
# the 16 (AVX-512: 20 accumulators, four vectors and a tap, 25 of its 32)
correlate_group_5 = _make_correlate_group(GROUP_OUTPUTS_WIDE, GROUP_VECTORS)
correlate_group_5.__doc__ = r""":func:`correlate_group_3` for ``GROUP_OUTPUTS_WIDE`` = 5 output
maps that read the same source maps (``tap_starts`` a flat (5, k_n) matrix, ``out_starts`` five
starts): each loaded source vector serves five multiply-adds instead of three, and each
output's sums are :func:`correlate_sources`' (the same result to the bit). C1's 15 maps are
three such groups instead of five of three: 2.6 against 2.9 ms for a batch's correlations on
one thread (float32, the 2-core machine). Requires ``size >= GROUP_VECTORS *
lanes_of(itemsize)``."""


PAIR_VECTORS = 3  # 2 outputs x 3 vectors: 12 AVX2 registers of the 16 (AVX-512: 6 vectors an
# output when the size holds them)
correlate_group_2 = _make_correlate_group(2, PAIR_VECTORS)
correlate_group_2.__doc__ = r""":func:`correlate_sources` for two output maps that read the
same source maps, each with its own taps (``tap_starts[j * n_sources + k]`` for output j and
source k; ``out_starts`` holds two starts): each loaded source vector serves both (the real and
imaginary parts of a complex filter on a real row, say). Requires ``size >= PAIR_VECTORS *
lanes_of(itemsize)``."""
