"""Batch-parallel runs of the serial kernels: fixed chunks of images on a thread pool.

The numba kernels of :mod:`._kernels` are serial and ``nogil=True`` (and NumPy's ``tanh``
releases the GIL), so Python threads run them side by side on slices of one batch. This keeps
``cache=True`` on every kernel (numba's ``parallel=True`` cannot be cached safely when the
thread count changes). The GEMMs of C5 and F6 (a few milliseconds) run between the threaded
sections; :func:`blas_single_threaded` keeps BLAS on one thread around a whole pass, because
OpenBLAS's idle workers spin after each GEMM and take the cores from the kernel threads
(measured, 64 pairs, 2 threads: 157-161 ms per training step with OpenBLAS on 2 threads,
117-122 ms with it on 1).

The batch is cut into chunks of ``CHUNK`` images whatever the thread count, and per-chunk
parameter gradients are summed in chunk order: a result does not depend on how many threads
computed it (bit for bit).

The thread count is :func:`get_num_threads`: the innermost :func:`num_threads` context, else
the package setting :func:`metricfit.parallel.get_threads` (:func:`metricfit.threads`,
``METRICFIT_NUM_THREADS``, ``NUMBA_NUM_THREADS``).
"""

import contextlib
import contextvars
from concurrent.futures import ThreadPoolExecutor

from threadpoolctl import ThreadpoolController  # a dependency of scikit-learn

from ..parallel import get_threads

__all__ = ["CHUNK", "get_num_threads", "num_threads", "map_chunks", "blas_single_threaded",
           "n_threads"]

CHUNK = 16  # images per task: 8 tasks for a batch of 64 pairs
_THREADS = contextvars.ContextVar("metricfit_cnn_threads", default=None)
_POOLS = {}
_BLAS = []  # the ThreadpoolController, made on first use


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


@contextlib.contextmanager
def blas_single_threaded():
    """BLAS on one thread inside the block (see above; also makes a result independent of the
    BLAS thread count, whose GEMMs round differently on 1 and 2 threads)."""
    if not _BLAS:
        _BLAS.append(ThreadpoolController())
    with _BLAS[0].limit(limits=1, user_api="blas"):
        yield


def _pool(n):
    if n not in _POOLS:
        _POOLS[n] = ThreadPoolExecutor(n, thread_name_prefix="metricfit-cnn")
    return _POOLS[n]


def map_chunks(fn, n_images):
    """``[fn(rows) for rows in chunks]`` over slices of ``CHUNK`` images, in chunk order, run on
    :func:`get_num_threads` threads."""
    chunks = [slice(start, min(start + CHUNK, n_images)) for start in range(0, n_images, CHUNK)]
    threads = min(get_num_threads(), len(chunks))
    if threads <= 1:
        return [fn(rows) for rows in chunks]
    return list(_pool(threads).map(fn, chunks))
