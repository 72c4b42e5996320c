"""Running the linear losses' fused per-pair kernels on every core, with results that do not
depend on the thread count.

The fused kernels between the GEMMs of a linear loss (TSML's ``c/|c|``, CSML's cosine
gradients, DDML's and LDML's weights) work row by row: pair i reads row i of the embeddings
and writes row i of the per-pair gradients. Each kernel here is a serial, ``nogil``,
``cache=True`` numba function over a *range of rows* ``[lo, hi)`` that also writes each pair's
cost term into ``out[i]`` (float64). :func:`run_rows` runs such a kernel on fixed blocks of
rows (:data:`ROW_ELEMENTS` matrix entries each, whatever the thread count) over the package's
thread pool (:func:`metricfit.parallel.map_blocks`), and the cost is then summed over the
pairs *in pair order* by :func:`ordered_sum`. Every row is computed by the same code whatever
block it falls in, and the sum runs in one fixed order, so cost and gradient are the same bit
for bit on 1, 2 or 16 threads. The pair costs are summed in the order of the serial kernels
these replace (one accumulator, pair after pair); the embedding kernels (the composition, index
pairs) give their results bit for bit. The prepared TSML, DDML and LDML kernels sum each row
on vector registers (:func:`row_sumsq`, :func:`row_dot`: 16 float64 lanes in a fixed order,
:mod:`metricfit.losses._simd_rows`): another fixed order, a few ulp from the
single-accumulator one. On the 2-core machine the row sums of 4,800 rows of 300 took 0.084 /
0.234 ms (float32 / float64) against 0.61 / 0.52 ms on the four scalar accumulators used
before (which had been 1.2-1.8x faster than one).

Who runs the blocks: each kernel has a numba ``parallel=True`` twin, its *driver* (a
``prange`` over the same blocks calling the same kernel), which :func:`run_rows` launches on
numba's threads where :func:`metricfit.parallel.kernel_threads` allows; otherwise the package
pool runs the blocks. The pool's hand-off (a wake-up and a GIL turn per task) cost more than
the kernel saved on 16 cores; the driver's is one launch from compiled code (the numbers are in
:mod:`metricfit.parallel`). Drivers are top-level functions, one per kernel, so that numba
caches them: a driver taking the kernel as an argument, or made by a closure factory,
recompiled in every process (measured: no cache hit).

Oversubscription: the kernel sections run between the GEMMs, never beside them, on the same
number of threads as BLAS (:func:`metricfit.threads` sets both). The pool's idle threads block
on a queue (they do not spin). OpenBLAS's idle workers poll for ~0.1 s after a GEMM unless
``OPENBLAS_THREAD_TIMEOUT`` was set when OpenBLAS loaded, and although they call
``sched_yield`` while they poll, a polling worker keeps its core: on 2 threads right after a
GEMM, DDML's kernel section ran no faster than on one (:mod:`metricfit._blas_env`, which sets
the variable when metricfit is imported before numpy). Holding BLAS to one thread during a
kernel section does not help (measured): ``openblas_set_num_threads`` only changes the count of
the next call, not the polling workers (and, called from concurrent callers such as Dask's
threads, it races and can leave BLAS at the wrong count).

Subnormal numbers
-----------------
A weighted row ``w_i delta_i`` with a tiny weight (LDML's and DDML's sigmoid far in its tail)
rounds to float32 subnormals, and subnormal operands slow an sgemm on many x86 CPUs by an
order of magnitude (microcode assists; LDML float32 ran at 3x its GEMM bound on a Xeon). The
weighting kernels write such entries as 0 (below :func:`tiny` of the dtype): what flush-to-zero
hardware would do, a change far below the float32 rounding of any sum they enter.

The same holds wherever such terms go on to a product: the index passes' scatter onto R
(``R^T X`` after it; DDML's and LDML's side kernels and LDML's one-thread pass add them as 0,
checking only the terms of a pair whose weight is under :data:`CHECKED_WEIGHT`), the rows
kernel on gathered rows, and the mean's ``dJ/da / n`` of :func:`metricfit.losses._linear.
embedding_cost_grad`, which a mapping back-propagates (:func:`zero_subnormals`). Before, a
float32 evaluation whose dissimilar pairs lay in that tail ran 22x (LDML over index pairs)
to 42x (DDML over index pairs) slower on the 2-core Xeon, and the product after DDML's
embedding gradient 66x (``docs/results/timing.md``).
"""

from typing import Callable, NamedTuple

import numpy as np
from numba import njit

from ..parallel import get_threads, launch, map_blocks
from ._simd_rows import row_dot

__all__ = ["run_rows", "run_blocks", "ordered_sum", "grouped_sum", "row_block", "tiny",
           "zero_subnormals", "PairKernel", "IndexRows", "row_sumsq", "row_dot"]

ROW_ELEMENTS = 1 << 15  # matrix entries per fixed block of rows (~256 KB of float64)
#: The subnormal rule of the index passes and DDML's rows kernel, checked pair by pair: a
#: term ``w_i delta_ij`` of a pair whose weight is at least this in magnitude is under the
#: dtype's ``tiny`` only where ``|delta_ij| < 2^64 tiny`` (float32: 2^-62), so only the terms
#: of smaller nonzero weights are compared with ``tiny``.
CHECKED_WEIGHT = 2.0 ** -64


def row_block(width):
    """Rows per fixed block for rows of ``width`` entries (independent of the thread count)."""
    return max(16, ROW_ELEMENTS // max(1, int(width)))


def tiny(dtype):
    """The smallest normal number of ``dtype``: weighted entries below it are written as 0."""
    return float(np.finfo(dtype).tiny)


@njit(cache=True, nogil=True)
def zero_subnormals(G):  # pragma: no cover (compiled)
    """Write the subnormal entries of the C-contiguous ``G`` (any shape) as 0, in place (zeros
    keep their sign): what a mean over n pairs, ``dJ/da / n``, makes of terms between the
    smallest normal number and n times it."""
    flat = G.reshape(-1)
    smallest = np.finfo(G.dtype).tiny
    for i in range(flat.size):  # a store each entry: the loop vectorises
        v = flat[i]
        flat[i] = 0.0 if 0.0 < abs(v) < smallest else v


def run_blocks(fn, n_rows, width):
    """``fn(lo, hi)`` over ``[0, n_rows)`` in fixed blocks of :func:`row_block` rows, on
    :func:`metricfit.parallel.get_threads` threads.

    One thread: one call ``fn(0, n_rows)``. Several: each task takes a run of consecutive
    blocks (one task a thread, so that the pool's cost per task is paid a few times, not once
    a block). ``fn`` must write only rows ``[lo, hi)`` of its outputs and compute each row
    alone; the result is then the same for any split of the rows, hence for any thread
    count.
    """
    block = row_block(width)
    n_blocks = -(-n_rows // block)
    n_threads = min(get_threads(), n_blocks)
    if n_threads <= 1:
        fn(0, n_rows)
        return
    per_task = -(-n_blocks // n_threads)  # blocks a task

    def task(blocks):
        fn(blocks.start * block, min(blocks.stop * block, n_rows))

    map_blocks(task, n_blocks, per_task)


def run_rows(kernel, n_rows, width, *args, driver=None):
    """``kernel(*args, lo, hi)`` over ``[0, n_rows)`` in the fixed blocks of :func:`run_blocks`.

    ``driver(*args, n_rows, block)``, the kernel's numba ``parallel=True`` twin (a ``prange``
    over the same blocks, each calling ``kernel``), runs them on numba's threads where
    :func:`metricfit.parallel.kernel_threads` allows (one hand-off in compiled code instead of
    one a task through the GIL); else the package pool does (:func:`run_blocks`). Every block
    is the same call either way, so the result is too.
    """
    block = row_block(width)
    if not launch(driver, -(-n_rows // block), *args, n_rows, block):
        run_blocks(lambda lo, hi: kernel(*args, lo, hi), n_rows, width)


@njit(cache=True, nogil=True)
def ordered_sum(values):  # pragma: no cover (compiled)
    """``sum(values)`` from the first entry to the last (float64), one accumulator."""
    total = 0.0
    for i in range(values.shape[0]):
        total += values[i]
    return total


@njit(cache=True, nogil=True)
def grouped_sum(values, group):  # pragma: no cover (compiled)
    """The sum of the in-order sums of consecutive groups of ``group`` entries (the order in
    which a kernel called on blocks of ``group`` pairs summed its costs)."""
    total = 0.0
    n = values.shape[0]
    for start in range(0, n, group):
        part = 0.0
        for i in range(start, min(start + group, n)):
            part += values[i]
        total += part
    return total


class IndexRows(NamedTuple):
    """A pair kernel's two passes over index pairs (:func:`metricfit.losses._index.
    linear_pair_block`), reading the rows of the embeddings E in place instead of gathering
    them.

    ``pair_rows(E, first, second, s, *extra, out, W, lo, hi)``: for the pairs lo..hi-1,
    ``out[i] = J_i`` and the ``width`` scalars ``W[i]`` that its gradients need (norms,
    weights): the reductions of the rows kernel, in its order. ``side_rows(E, first, second,
    s, W, R, order, lo, hi)``: for the sides ``order[lo:hi]`` (2i: point first[i], 2i + 1:
    second[i]), in that order, ``R[point] += dJ_i/da_i`` (or ``dJ_i/db_i``), the rows kernel's
    expression rounded to R's dtype. Together they give the rows kernel's gathered, in-place,
    scattered result bit for bit. ``pair_driver`` and ``side_driver``, their numba
    ``parallel=True`` twins (the same calls on the same blocks or runs of sides, on numba's
    threads: :func:`run_rows`, :func:`metricfit.pairs.index.scatter_by_points`), are optional.

    Examples
    --------
    TSML's kernel keeps one scalar a pair, ``1/|c_i|``; its two passes over three index pairs
    give what its rows kernel gives on the gathered rows, to the bit:

    >>> import numpy as np
    >>> from metricfit.losses import _index, tsml
    >>> from metricfit.losses._rows import PairKernel
    >>> kernel = tsml._embedding_grad_inplace
    >>> kernel.index.width
    1
    >>> E = np.arange(12.0).reshape(4, 3)
    >>> index, s = np.array([[0, 1], [2, 2], [3, 0]]), np.array([1.0, -1.0, 1.0])
    >>> R, R_gathered = np.zeros((4, 3)), np.zeros((4, 3))
    >>> J = _index.linear_pair_block(E, index, s, R, kernel)
    >>> J_gathered = _index.linear_pair_block(E, index, s, R_gathered,
    ...                                       PairKernel(kernel.rows))
    >>> J == J_gathered and R.tobytes() == R_gathered.tobytes()
    True
    """

    pair_rows: Callable
    side_rows: Callable
    width: int
    pair_driver: Callable = None
    side_driver: Callable = None


class PairKernel:
    """``kernel(P1, P2, s) -> sum_i J_i`` of a rows kernel ``rows(P1, P2, s, *extra, out, lo,
    hi)`` (P1, P2 overwritten with dJ_i/da_i, dJ_i/db_i; ``out[i] = J_i``), run by
    :func:`run_rows` and summed in pair order: the embedding kernel of the generic composition
    (:func:`metricfit.losses._linear.composed_cost_grad`) on every core.

    Over index pairs (:mod:`metricfit.losses._index`) the kernel's :class:`IndexRows` (``index``)
    runs in two passes on the rows of the embeddings; a kernel without them has ``rows`` and
    ``extra`` called on gathered copies of the rows, on one thread.

    Examples
    --------
    TSML's kernel on three pairs ``a = (1, 1)``, ``b = 0``, ``s = 1``: each pair costs
    ``1/2 |a|^2 - |a| + 1 = 2 - sqrt 2`` and gets ``dJ/da = a - a/|a|``:

    >>> import numpy as np
    >>> import metricfit
    >>> from metricfit.losses import tsml
    >>> kernel = tsml._embedding_grad_inplace  # a PairKernel
    >>> a, b, s = np.ones((3, 2)), np.zeros((3, 2)), np.ones(3)
    >>> with metricfit.threads(2):
    ...     J = kernel(a, b, s)
    >>> round(J, 6), round(float(a[0, 0]), 6)
    (1.757359, 0.292893)
    """

    def __init__(self, rows, *extra, index=None, driver=None):
        self.rows, self.extra, self.index, self.driver = rows, tuple(extra), index, driver

    def __call__(self, P1, P2, s):
        n, k = P1.shape
        out = np.empty(n)  # (n,) J_i, float64
        run_rows(self.rows, n, k, P1, P2, s, *self.extra, out, driver=self.driver)
        return ordered_sum(out)


@njit(cache=True, nogil=True)
def row_sumsq(X, i):  # pragma: no cover (compiled)
    """``sum_j X[i, j]^2`` in float64, in the fixed order of :func:`row_dot` (it is
    ``row_dot(X, X, i)``: vector lanes, :mod:`metricfit.losses._simd_rows`)."""
    return row_dot(X, X, i)
