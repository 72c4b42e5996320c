"""Batch-parallel runs of the serial kernels: fixed work units on numba's threads or a pool.

The numba kernels of :mod:`._kernels` are serial and ``nogil=True`` (and NumPy's ``tanh``
releases the GIL), so threads run them side by side on slices of one batch, with
``cache=True`` on every kernel. The convolution and subsampling passes hand their spans to a
numba ``parallel=True`` driver (:mod:`._drivers`: one launch from compiled code; 1.25x faster
training steps than the pool at 16 threads on a Xeon, level at 1, 4 and 8 there and on 2 cores)
from :data:`DRIVER_MIN_THREADS` threads, where :func:`metricfit.parallel.kernel_threads`
allows (C5's forward units too, :mod:`._dense_kernels`); else, and for the dense layers'
backward GEMM units, Python threads of a pool run them. The GEMMs run between the threaded
sections;
:func:`blas_single_threaded` keeps BLAS on one thread around a whole pass, because OpenBLAS's
idle workers spin after each GEMM and take the cores from the kernel threads (measured, 64
pairs, 2 threads: 157-161 ms per training step with OpenBLAS on 2 threads, 117-122 ms with it
on 1).

**Work units.** A layer's work is cut into units fixed by the data's sizes alone (an image;
an image block of ``CHUNK`` images and one output map; a block of GEMM columns), never by the
thread count. :func:`map_spans` cuts them into a few contiguous *spans* per thread (balanced
by the units' estimated cost), which the threads take as they come free, and the kernel loops
over its span itself, so one batch costs a handful of Python calls per layer however fine the
units are (a batch of 64 pairs: 128
images, 360 weight-gradient units in C3). Each unit writes its own output slice or its own
partial sums; partial parameter gradients are then summed over the image blocks in block order.
Which thread computed a unit does not change its arithmetic, so a result does not depend on how
many threads computed it (bit for bit). The older :func:`map_chunks` (fixed chunks of ``CHUNK``
images, one task each) is kept for small element-wise passes.

The thread count is :func:`get_num_threads`: the innermost :func:`num_threads` context, else
the package setting :func:`metricfit.parallel.get_threads` (:func:`metricfit.threads`,
``METRICFIT_NUM_THREADS``, ``NUMBA_NUM_THREADS``).
"""

import contextlib
import contextvars
import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..parallel import blas_threads, get_threads, kernel_threads, launch

__all__ = ["CHUNK", "get_num_threads", "num_threads", "map_chunks", "blas_single_threaded",
           "n_threads", "spans", "map_spans", "drivers_run"]

CHUNK = 16  # images per block of partial parameter gradients (and per map_chunks task)
_THREADS = contextvars.ContextVar("metricfit_cnn_threads", default=None)
_POOLS = {}


def get_num_threads():
    """Threads the convnet layers use in this context (>= 1): the innermost
    :func:`num_threads` block, else the package setting :func:`metricfit.parallel.get_threads`."""
    n = _THREADS.get()
    return get_threads() if n is None else max(1, int(n))


def n_threads(n_jobs):
    """The thread count of an ``n_jobs`` option for :func:`num_threads`: None or -1 ->
    None (``NUMBA_NUM_THREADS``), else ``n_jobs`` (>= 1, else ValueError)."""
    if n_jobs is not None and n_jobs != -1 and n_jobs < 1:
        raise ValueError(f"n_jobs must be None, -1 or >= 1, got {n_jobs}.")
    return None if n_jobs in (None, -1) else n_jobs


@contextlib.contextmanager
def num_threads(n):
    """Run the convnet layers on ``n`` threads inside the block (None: the default)."""
    if n is not None and int(n) < 1:
        raise ValueError(f"the number of threads must be >= 1 or None, got {n!r}.")
    token = _THREADS.set(None if n is None else int(n))
    try:
        yield
    finally:
        _THREADS.reset(token)


def blas_single_threaded():
    """BLAS on one thread inside the block (see above; also makes a result independent of the
    BLAS thread count, whose GEMMs round differently on 1 and 2 threads): the package's
    :func:`metricfit.parallel.blas_threads` ``(1)``, which does nothing inside another such
    block."""
    return blas_threads(1)


if hasattr(os, "register_at_fork"):  # a forked child has none of the threads
    os.register_at_fork(after_in_child=_POOLS.clear)


def _pool(n):
    """The pool of ``n`` threads (``-n``: of ``n - 1``, for :func:`map_spans`, whose calling
    thread takes the last span)."""
    if n not in _POOLS:
        _POOLS[n] = ThreadPoolExecutor(abs(n) - (n < 0), thread_name_prefix="metricfit-cnn")
    return _POOLS[n]


def map_chunks(fn, n_images):
    """``[fn(rows) for rows in chunks]`` over slices of ``CHUNK`` images, in chunk order, run on
    :func:`get_num_threads` threads."""
    chunks = [slice(start, min(start + CHUNK, n_images)) for start in range(0, n_images, CHUNK)]
    threads = min(get_num_threads(), len(chunks))
    if threads <= 1:
        return [fn(rows) for rows in chunks]
    return list(_pool(threads).map(fn, chunks))


def spans(costs, n_spans):
    """Cut units ``0..len(costs)-1`` into at most ``n_spans`` contiguous ``(start, stop)``
    spans of about equal total cost (boundaries where the running cost passes ``k total /
    n_spans``); empty spans are dropped. Only *who* computes a unit depends on this."""
    n_units = len(costs)
    n_spans = max(1, min(int(n_spans), n_units))
    if n_spans == 1:
        return [(0, n_units)] if n_units else []
    running = np.cumsum(np.asarray(costs, dtype=np.float64))
    total = running[-1]
    if total <= 0:
        running, total = np.arange(1.0, n_units + 1), float(n_units)
    cuts = np.searchsorted(running, total * np.arange(1, n_spans) / n_spans, side="left") + 1
    bounds = [0] + [int(c) for c in cuts] + [n_units]
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


GRAIN = 2  # spans per thread that map_spans hands out ...
MIN_SPANS = 8  # ... and at least this many (a few threads: finer sharing when cores are busy)
#: The fewest threads at which :func:`map_spans` hands its spans to a numba driver. Below it
#: the pool runs them: a training step on the pool against the drivers (``cnn_launchers.py``)
#: took 1.01x as long at 1, 4 and 8 threads on a 16-core Xeon and 0.99-1.02x on 2 cores, and
#: 1.25x at 16 threads, while the drivers' first compilation (cold numba cache) added 15-18 s
#: to the first training step under numba 0.68 and 71-73 s under 0.59 (docs/results/timing.md). 12
#: lies between the last count measured level (8) and the first that gained (16).
DRIVER_MIN_THREADS = 12


def _n_spans(threads):
    """How many spans :func:`map_spans` asks :func:`spans` for on ``threads`` threads."""
    return max(GRAIN * threads, MIN_SPANS) if threads > 1 else 1


def drivers_run(n_units):
    """Whether :func:`map_spans` over ``n_units`` units of equal cost would hand its spans to
    a numba driver (given one) at this context's thread count, rather than to the pool."""
    threads = get_num_threads()
    n_spans = len(spans(np.ones(n_units), _n_spans(threads)))
    return n_spans > 1 and kernel_threads(n_spans, threads, DRIVER_MIN_THREADS) > 0


def map_spans(fn, costs, driver=None, args=(), max_threads=None):
    """``fn(start, stop)`` on each of the :func:`spans` of ``costs`` (``GRAIN`` spans per
    thread, at least ``MIN_SPANS``; one span on one thread), run by :func:`get_num_threads`
    threads that take the next span as they come free (the calling thread among them);
    returns the results in span order. Which thread runs a span changes nothing in it: ``fn``
    should spend its time in ``nogil`` kernels that write each unit's own output. (Taking spans
    as they come keeps the threads busy when other processes hold some cores; one span per
    thread would wait for the slowest.)

    ``driver``: ``fn``'s numba ``parallel=True`` twin (:mod:`._drivers`), called as
    ``driver(*args, starts, stops)`` on the same spans from :data:`DRIVER_MIN_THREADS` threads,
    where :func:`metricfit.parallel.kernel_threads` allows (one launch from compiled code
    instead of a GIL turn a span); the results are then None.

    ``max_threads``: at most this many threads (a pass too small to repay waking more: the
    spans, and so the numbers, are those of that count)."""
    threads = get_num_threads()
    if max_threads is not None:
        threads = max(1, min(threads, int(max_threads)))
    parts = spans(costs, _n_spans(threads))
    if len(parts) <= 1:
        return [fn(a, b) for a, b in parts]
    if driver is not None:
        starts, stops = (np.array(ends, np.int64) for ends in zip(*parts, strict=True))
        if launch(driver, len(parts), *args, starts, stops, threads=threads,
                  min_threads=DRIVER_MIN_THREADS):
            return [None] * len(parts)
    results = [None] * len(parts)
    order = itertools.count()  # next() is atomic under the GIL

    def work():
        for k in order:
            if k >= len(parts):
                return
            results[k] = fn(*parts[k])

    pool = _pool(-threads)  # threads - 1 helpers (keyed apart from map_chunks' pools)
    futures = [pool.submit(work) for _ in range(min(threads, len(parts)) - 1)]
    work()
    for future in futures:
        future.result()
    return results
