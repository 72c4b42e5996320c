r"""Sums over a pair of rows in float64 on vector registers, in a fixed order (numba intrinsics).

The linear losses' kernels need float64 sums over the entries of one or two rows: the
prepared TSML, DDML and LDML kernels one a row (``|c_i|^2``, ``|z_i|^2``, ``delta_i^T M
delta_i``: :func:`row_dot`); CSML's cosine three a pair (:func:`pair_dot_narrow`); TSML's and
DDML's pair kernels, which the index pairs, the composition and non-linear mappings use,
``|a|^2``, ``|b|^2`` and ``|a + s b|^2`` or ``|a - b|^2`` (:func:`pair_sumsq_narrow`,
:func:`pair_sumsq`); LDML's index pairs ``(E[p] - E[q])[:d] . (E[p] - E[q])[d:]``
(:func:`pair_halves`). A sum
vectorises only where its additions may be re-associated, which numba allows only with
``fastmath`` (banned in this project's reductions), so a plain loop adds one product at a
time: on four scalar accumulators it ran at about one entry a cycle (0.55 ms for 4,800 rows of
300 on the 2-core machine), the largest part of the kernel sections between the GEMMs.

:func:`dot_rows` states the order instead (as :mod:`metricfit._simd` does for the
convnet): entry j goes to lane ``j mod 16`` of two vector accumulators of eight float64
lanes (``<8 x double>``; LLVM splits them into the registers the CPU has), row block after row
block of 16 entries, each product formed in float64 from the entries (float32 entries are
widened first, exactly); then lane ``l`` and lane ``l + 8`` are added, the eight sums folded
in halves (lanes ``l`` and ``l + 4``, then ``l`` and ``l + 2``, then 0 and 1), and the
``k mod 16`` entries left over, summed one after the other on their own, added last. The IR
multiplies, then adds (no fused multiply-add), so the result is the same on every CPU and
thread count, and :func:`dot_lanes_twin` (plain NumPy) gives it to the bit. Every sum of this
module follows that order; the ``_narrow`` forms compute each term in the rows' dtype (as the
kernels they replace did) before widening it. Arrays that are not C-contiguous take the same
order in scalar code (:func:`row_sum_any`, :func:`halves_any`): the same bits, slower.

Each public form is a plain Python function (its NumPy twin, for interpreted calls) with a
numba ``overload`` that picks the intrinsic or the scalar code by the arrays' types
(:func:`_twin_form` makes four of them).
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

__all__ = ["LANES", "BLOCK", "row_dot", "pair_dot", "pair_dot_narrow", "pair_sumsq",
           "pair_sumsq_narrow", "pair_halves", "halves_rows", "halves_any", "dot_rows",
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


class _Form:
    """What a row-sum intrinsic adds (see :func:`_make_row_sum`)."""

    def __init__(self, widen_first, combination, halves):
        self.widen_first, self.combination, self.halves = widen_first, combination, halves


def _fold_lanes(builder, lanes):
    """Lane 0 of ``lanes`` folded in halves: lane l += lane l + width / 2, down to one."""
    width = LANES
    mask = ir.VectorType(ir.IntType(32), LANES)
    while width > 1:
        width //= 2
        low = builder.shuffle_vector(lanes, lanes, ir.Constant(
            mask, list(range(width)) + [0] * (LANES - width)))
        high = builder.shuffle_vector(lanes, lanes, ir.Constant(
            mask, list(range(width, 2 * width)) + [0] * (LANES - width)))
        lanes = builder.fadd(low, high)
    return builder.extract_element(lanes, ir.Constant(ir.IntType(32), 0))


class _Rows:
    """The two rows' pointers, their summed length and the term of one entry (or vector of
    entries) for one form, in one function being built."""

    def __init__(self, context, builder, signature, args, form):
        self.builder, self.form = builder, form
        x_type, i_type, y_type, j_type = signature.args[:4]
        self.item = context.get_value_type(x_type.dtype)
        self.f64 = ir.DoubleType()
        self.intp = context.get_value_type(types.intp)
        self.in_vec = ir.VectorType(self.item, LANES)
        self.out_vec = ir.VectorType(self.f64, LANES)
        self.itemsize = context.get_abi_sizeof(self.item)
        x_arr = context.make_array(x_type)(context, builder, args[0])
        y_arr = context.make_array(y_type)(context, builder, args[2])
        width = cgutils.unpack_tuple(builder, x_arr.shape, 2)[1]
        rows = [context.cast(builder, args[n], ty, types.intp)
                for n, ty in ((1, i_type), (3, j_type))]
        self.x_row = builder.gep(x_arr.data, [builder.mul(rows[0], width)])
        self.y_row = builder.gep(y_arr.data, [builder.mul(rows[1], width)])
        self.k = builder.sdiv(width, ir.Constant(self.intp, 2)) if form.halves else width
        self.wide = form.widen_first or isinstance(self.item, ir.DoubleType)
        self.coef = None
        if form.combination:
            self.coef = context.cast(builder, args[4], signature.args[4],
                                     types.float64 if self.wide else x_type.dtype)

    def _widened(self, value, vector):
        if self.wide and not isinstance(self.item, ir.DoubleType):
            return self.builder.fpext(value, self.out_vec if vector else self.f64)
        return value

    def _load(self, row_ptr, offset, vector):
        ptr = self.builder.gep(row_ptr, [offset])
        if vector:
            ptr = self.builder.bitcast(ptr, self.in_vec.as_pointer())
            return self.builder.load(ptr, align=self.itemsize)
        return self.builder.load(ptr)

    def term(self, offset, vector):
        """The float64 term(s) at ``offset`` (a vector of LANES entries, or one)."""
        b, widened = self.builder, self._widened
        x, y = self._load(self.x_row, offset, vector), self._load(self.y_row, offset, vector)
        if self.form.halves:  # (x_t - y_t)(x_{h+t} - y_{h+t})
            far = b.add(offset, self.k)
            x2, y2 = self._load(self.x_row, far, vector), self._load(self.y_row, far, vector)
            return b.fmul(b.fsub(widened(x, vector), widened(y, vector)),
                          b.fsub(widened(x2, vector), widened(y2, vector)))
        x, y = widened(x, vector), widened(y, vector)
        if self.form.combination:  # c = x + coef y, then c c
            factor = _splat(b, x.type, self.coef) if vector else self.coef
            x = y = b.fadd(x, b.fmul(factor, y))
        value = b.fmul(x, y)
        return value if self.wide else b.fpext(value, self.out_vec if vector else self.f64)


def _row_sum_codegen(form):
    def codegen(context, builder, signature, args):
        rows = _Rows(context, builder, signature, args, form)
        intp, f64 = rows.intp, rows.f64
        zero = ir.Constant(rows.out_vec, [ir.Constant(f64, 0.0)] * LANES)
        accs = [cgutils.alloca_once_value(builder, zero) for _ in range(2)]
        n_blocks = builder.sdiv(rows.k, ir.Constant(intp, BLOCK))
        with cgutils.for_range(builder, n_blocks) as block:
            start = builder.mul(block.index, ir.Constant(intp, BLOCK))
            for half, acc in enumerate(accs):
                value = rows.term(builder.add(start, ir.Constant(intp, half * LANES)), True)
                builder.store(builder.fadd(builder.load(acc), value), acc)
        total = _fold_lanes(builder, builder.fadd(builder.load(accs[0]),
                                                  builder.load(accs[1])))
        tail = cgutils.alloca_once_value(builder, ir.Constant(f64, 0.0))
        first = builder.mul(n_blocks, ir.Constant(intp, BLOCK))
        with cgutils.for_range(builder, builder.sub(rows.k, first)) as left:
            value = rows.term(builder.add(first, left.index), False)
            builder.store(builder.fadd(builder.load(tail), value), tail)
        return builder.fadd(total, builder.load(tail))

    return codegen


def _make_row_sum(widen_first, combination, halves=False):
    """The intrinsic summing, over t, one term of rows ``x = X[i]``, ``y = Y[j]``: ``x_t y_t``
    (``combination`` False: :func:`dot_rows`, :func:`dot_rows_narrow`) or ``c_t^2`` with
    ``c_t = x_t + coef y_t`` (True: :func:`sumsq_rows`, :func:`sumsq_rows_narrow`); each term
    computed in float64 from the widened entries (``widen_first``) or in the entries' dtype
    and then widened. ``halves`` (:func:`halves_rows`): over t < h = width / 2, ``(x_t -
    y_t)(x_{h+t} - y_{h+t})`` (LDML's ``delta^T M delta`` from rows ``[x M, x]``)."""
    form = _Form(widen_first, combination, halves)

    def typing(X, i, Y, j, *coef):
        rows = _c_rows(X, Y) and isinstance(i, types.Integer) and isinstance(j, types.Integer)
        scalar = all(isinstance(c, (types.Float, types.Integer)) for c in coef)
        if not (rows and scalar):
            return None
        return types.float64(X, i, Y, j, *coef), _row_sum_codegen(form)

    if combination:
        def row_sum(typingctx, X, i, Y, j, coef):
            return typing(X, i, Y, j, coef)
    else:
        def row_sum(typingctx, X, i, Y, j):
            return typing(X, i, Y, j)
    name = ("halves_rows" if halves else "sumsq_rows" if combination else "dot_rows") + (
        "" if widen_first else "_narrow")
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
halves_rows = _make_row_sum(widen_first=True, combination=False, halves=True)
halves_rows.__doc__ = """``sum_{t < h} (X[i, t] - Y[j, t]) (X[i, h + t] - Y[j, h + t])``, h =
width / 2, in :func:`dot_rows`' order, each term in float64 (LDML's ``delta^T M delta`` from
rows ``[x M, x]`` of E)."""


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


def dot_lanes_twin(x, y, narrow=False, coef=None, halves=False):
    """:func:`dot_rows` (``narrow``: :func:`dot_rows_narrow`; ``coef``: :func:`sumsq_rows`,
    :func:`sumsq_rows_narrow`; ``halves``: :func:`halves_rows`) of two rows in plain NumPy,
    operation for operation (the same bits)."""
    if halves:
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        h = x.shape[0] // 2
        products = (x[:h] - y[:h]) * (x[h:2 * h] - y[h:2 * h])
    else:
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


@njit(cache=True, nogil=True, inline="always")
def _folded(lanes):  # pragma: no cover (compiled)
    """Lane 0 after folding the BLOCK lanes in halves (lane l += lane l + width / 2)."""
    width = BLOCK
    while width > 1:
        width //= 2
        for lane in range(width):
            lanes[lane] += lanes[lane + width]
    return lanes[0]


@njit(cache=True, nogil=True, inline="always")
def _halves_term(X, i, Y, j, t, h):  # pragma: no cover (compiled)
    return ((np.float64(X[i, t]) - np.float64(Y[j, t]))
            * (np.float64(X[i, h + t]) - np.float64(Y[j, h + t])))


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
    tail = 0.0
    for t in range(stop, k):
        tail += _term(X[i, t], Y[j, t], narrow, coef, combination)
    return _folded(lanes) + tail


def _twin_form(name, vector, narrow, combination, doc):
    """A public form: a plain Python function (the NumPy twin, for interpreted calls) with a
    numba ``overload`` that takes the intrinsic ``vector`` for C-contiguous rows of one float
    dtype and :func:`row_sum_any` (the same order in scalar code) for any other layout."""
    if combination:
        def form(X, i, Y, j, coef):
            return dot_lanes_twin(np.asarray(X)[i], np.asarray(Y)[j], narrow, coef)

        def compiled(X, i, Y, j, coef):
            if _c_rows(X, Y):
                return lambda X, i, Y, j, coef: vector(X, i, Y, j, coef)
            return lambda X, i, Y, j, coef: row_sum_any(X, i, Y, j, narrow, coef, True)
    else:
        def form(X, i, Y, j):
            return dot_lanes_twin(np.asarray(X)[i], np.asarray(Y)[j], narrow)

        def compiled(X, i, Y, j):
            if _c_rows(X, Y):
                return lambda X, i, Y, j: vector(X, i, Y, j)
            return lambda X, i, Y, j: row_sum_any(X, i, Y, j, narrow, 0.0, False)
    form.__name__ = form.__qualname__ = name
    form.__doc__ = doc
    overload(form, jit_options={"nogil": True})(compiled)
    return form


pair_dot = _twin_form("pair_dot", dot_rows, False, False, """``sum_t X[i, t] Y[j, t]`` in
float64, in :func:`dot_rows`' fixed order: on vector registers for C-contiguous arrays of one
float dtype, else in scalar code in the same order (the same bits either way). Compiled code
picks the form by the arrays' types; from Python it is :func:`dot_lanes_twin`.""")
pair_dot_narrow = _twin_form("pair_dot_narrow", dot_rows_narrow, True, False, """:func:`pair_dot`
with each product formed in the entries' dtype (:func:`dot_rows_narrow`).""")
pair_sumsq = _twin_form("pair_sumsq", sumsq_rows, False, True, """``sum_t (X[i, t] + coef Y[j,
t])^2`` in float64 in :func:`dot_rows`' order, each term in float64 (:func:`sumsq_rows`).""")
pair_sumsq_narrow = _twin_form("pair_sumsq_narrow", sumsq_rows_narrow, True, True,
                               """:func:`pair_sumsq` with ``c = x + coef y`` and ``c^2`` in the
rows' dtype (``coef`` of that dtype; :func:`sumsq_rows_narrow`).""")


@njit(cache=True, nogil=True)
def halves_any(X, i, Y, j):  # pragma: no cover (compiled)
    """:func:`halves_rows` for arrays of any layout, in its order (the same bits)."""
    h = X.shape[1] // 2
    lanes = np.zeros(BLOCK)
    stop = h - h % BLOCK
    for start in range(0, stop, BLOCK):
        for lane in range(BLOCK):
            lanes[lane] += _halves_term(X, i, Y, j, start + lane, h)
    tail = 0.0
    for t in range(stop, h):
        tail += _halves_term(X, i, Y, j, t, h)
    return _folded(lanes) + tail


def pair_halves(X, i, Y, j):
    """``sum_{t < h} (X[i, t] - Y[j, t]) (X[i, h + t] - Y[j, h + t])`` (:func:`halves_rows`;
    scalar code in the same order for other layouts). From Python: :func:`dot_lanes_twin`."""
    return dot_lanes_twin(np.asarray(X)[i], np.asarray(Y)[j], halves=True)


@overload(pair_halves, jit_options={"nogil": True})
def _pair_halves_compiled(X, i, Y, j):
    if _c_rows(X, Y):
        return lambda X, i, Y, j: halves_rows(X, i, Y, j)
    return lambda X, i, Y, j: halves_any(X, i, Y, j)


def row_dot(X, Y, i):
    """``sum_j X[i, j] Y[i, j]``: :func:`pair_dot` of row i of X and row i of Y."""
    return pair_dot(X, i, Y, i)


@overload(row_dot, jit_options={"nogil": True})
def _row_dot_compiled(X, Y, i):
    return lambda X, Y, i: pair_dot(X, i, Y, i)
