"""One thread setting for the whole package: numba kernels, thread pools and BLAS.

metricfit's data-parallel kernels are serial numba functions compiled with ``nogil=True`` and
``cache=True``, run side by side on **fixed blocks** of the data. Two launchers share them:

- the package pool of Python threads (:func:`map_blocks`), for any work unit (NumPy calls,
  per-image descriptors, the convnet's dense layers, NCA, PLDA's statistics);
- for the short kernel sections between two GEMMs (the linear losses' fused kernels and their
  index-pair passes) and the convnet's convolution and subsampling passes
  (:mod:`metricfit.cnn._drivers`), a numba ``parallel=True`` *driver* per kernel: a ``prange`` over
  the same fixed blocks, each calling the same serial kernel, launched from compiled code. A
  hand-off through the pool costs a wake-up and a turn at the GIL per task, one after another: 358
  microseconds for 16 tasks on a 16-core Xeon against 47 for the driver (``benchmarks/handoff.py``),
  and the kernel sections ran no faster on 16 threads than on 4 through the pool
  (docs/results/timing.md). :func:`launch` runs a driver where :func:`kernel_threads` allows, per
  call: only where numba's threading layer is thread-safe (OpenMP or TBB:
  :mod:`metricfit._numba_layer`, which also keeps GNU OpenMP's threads from spinning after each
  section), never nested in a pool thread, and never with ``METRICFIT_KERNEL_THREADS=pool``;
  the convnet's drivers only from :data:`metricfit.cnn.threads.DRIVER_MIN_THREADS` threads (below
  it they are no faster than the pool and their first compilation costs 15-73 s), unless
  ``METRICFIT_KERNEL_THREADS=numba``. The drivers are cached (``cache=True`` with
  ``parallel=True`` works in numba 0.68 across thread counts; the first call of a process on a
  cold cache compiles them: about 0.4 s each for the kernel sections).

The blocks do not depend on the thread count and partial results are combined in block order
by the caller, so a result is the same bit for bit on 1, 2 or 16 threads, on either launcher.

The thread count is, in this order: the innermost :func:`threads` block; the value set by
:func:`set_threads`; the ``METRICFIT_NUM_THREADS`` environment variable; numba's
``NUMBA_NUM_THREADS`` (all CPUs unless set). The same count is handed to BLAS inside a
:func:`threads` block (threadpoolctl), and :func:`blas_threads` narrows BLAS for the sections in
which kernel threads and BLAS would run at once.

BLAS's idle workers: OpenBLAS's threads poll for about 0.1 s after each product unless
``OPENBLAS_THREAD_TIMEOUT`` was set when it loaded, and a polling worker keeps its core from
the kernel threads that run between two products. metricfit sets it (to 16: some 25
microseconds) when it is imported before numpy; :func:`blas_idle_spin` says whether that
happened (:mod:`metricfit._blas_env`).

What numba compiles for: :func:`numba_target` and :func:`codegen_warning` say when numba's code
is built for a narrower vector level than the processor has (``NUMBA_CPU_NAME=generic``, or AVX
turned off for a CPU name a virtual machine reports: 2.4-2.5x slower convnet training on
the 2-core machine; :mod:`metricfit._numba_target`). ``metricfit bench`` prints it.

Examples
--------
>>> import metricfit
>>> with metricfit.threads(4):
...     metricfit.get_threads()
4
"""

import contextlib
import contextvars
import os
from concurrent.futures import ThreadPoolExecutor

import numba
from threadpoolctl import ThreadpoolController  # a dependency of scikit-learn

from ._blas_env import idle_spin as blas_idle_spin
from ._numba_layer import threadsafe_layer
from ._numba_target import NumbaTarget, codegen_warning, numba_target

__all__ = ["threads", "set_threads", "get_threads", "n_jobs_threads", "blas_threads",
           "blas_idle_spin", "numba_target", "codegen_warning", "NumbaTarget",
           "map_blocks", "blocks"]

_CONTEXT = contextvars.ContextVar("metricfit_threads", default=None)
_GLOBAL = [None]
_POOLS = {}
_BLAS = []  # the ThreadpoolController, made on first use


def _check_count(n, name="n"):
    if n is None:
        return None
    if isinstance(n, bool) or int(n) != n or int(n) < 1:
        raise ValueError(f"{name} must be an integer >= 1 or None, got {n!r}.")
    return int(n)


def _default_threads():
    env = os.environ.get("METRICFIT_NUM_THREADS")
    if env:
        try:
            return _check_count(int(env), "METRICFIT_NUM_THREADS")
        except ValueError as error:
            raise ValueError(f"METRICFIT_NUM_THREADS must be an integer >= 1, got {env!r}."
                             ) from error
    return max(1, int(numba.config.NUMBA_NUM_THREADS))


def get_threads():
    """The number of threads metricfit's kernels use here (>= 1)."""
    n = _CONTEXT.get()
    if n is None:
        n = _GLOBAL[0]
    return _default_threads() if n is None else n


def set_threads(n):
    """Set the package-wide thread count (None: back to the default); returns the old setting.

    A :func:`threads` block takes precedence inside it.
    """
    old = _GLOBAL[0]
    _GLOBAL[0] = _check_count(n)
    return old


def n_jobs_threads(n_jobs):
    """The thread count of an estimator's ``n_jobs``: None -> None (the package setting), -1 ->
    every CPU numba sees, else ``n_jobs`` (>= 1, else ValueError naming ``n_jobs``)."""
    if n_jobs is None:
        return None
    if n_jobs == -1:
        return max(1, int(numba.config.NUMBA_NUM_THREADS))
    return _check_count(n_jobs, "n_jobs")


def _controller():
    if not _BLAS:
        _BLAS.append(ThreadpoolController())
    return _BLAS[0]


_BLAS_LIMIT = contextvars.ContextVar("metricfit_blas_limit", default=None)


@contextlib.contextmanager
def blas_threads(n):
    """BLAS limited to ``n`` threads inside the block (``n`` None: left as it is).

    Inside a block that already holds BLAS at ``n`` it does nothing (a limit costs some 30
    microseconds, and the convnet's layers ask for one inside passes that hold it).
    """
    n = _check_count(n)
    if n is None or _BLAS_LIMIT.get() == n:
        yield
        return
    token = _BLAS_LIMIT.set(n)
    try:
        with _controller().limit(limits=n, user_api="blas"):
            yield
    finally:
        _BLAS_LIMIT.reset(token)


@contextlib.contextmanager
def threads(n):
    """Run metricfit's kernels, pools and BLAS on ``n`` threads inside the block.

    ``n`` None leaves the current setting (and BLAS) as they are. On several threads the
    kernels after each product need OpenBLAS's idle workers asleep: see
    :func:`blas_idle_spin` (import metricfit before numpy, or set ``OPENBLAS_THREAD_TIMEOUT``).
    """
    n = _check_count(n)
    if n is None:
        yield
        return
    token = _CONTEXT.set(n)
    try:
        with blas_threads(n):
            yield
    finally:
        _CONTEXT.reset(token)


def _forget_pools():
    """In a forked child: the parent's pool threads do not exist there (a task handed to them
    would wait forever); the child starts its own on first use."""
    _POOLS.clear()


if hasattr(os, "register_at_fork"):  # POSIX (no fork elsewhere)
    os.register_at_fork(after_in_child=_forget_pools)


def _pool(n):
    if n not in _POOLS:
        _POOLS[n] = ThreadPoolExecutor(n, thread_name_prefix="metricfit")
    return _POOLS[n]


def blocks(n_items, block):
    """The fixed work units: ``slice`` objects of ``block`` items covering ``range(n_items)``."""
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}.")
    return [slice(start, min(start + block, n_items)) for start in range(0, n_items, block)]


def map_blocks(fn, n_items, block):
    """``[fn(rows) for rows in blocks(n_items, block)]``, in block order, on
    :func:`get_threads` threads.

    ``fn`` should spend its time in ``nogil`` numba kernels or NumPy calls that release the GIL.
    The blocks do not depend on the thread count: combine the returned list in order and the
    result is the same on any number of threads. Called from inside a pool thread it runs
    serially (no nested pools).
    """
    units = blocks(n_items, block)
    n = min(get_threads(), len(units))
    if n <= 1 or _in_pool():
        return [fn(rows) for rows in units]
    if n == len(units):  # a unit a thread: the caller takes the first (one hand-off fewer)
        rest = [_pool(n - 1).submit(_marked(fn), rows) for rows in units[1:]]
        token = _IN_POOL.set(True)
        try:
            first = fn(units[0])
        finally:
            _IN_POOL.reset(token)
        return [first, *(future.result() for future in rest)]
    return list(_pool(n).map(_marked(fn), units))


_IN_POOL = contextvars.ContextVar("metricfit_in_pool", default=False)


def kernel_threads(n_tasks, threads=None, min_threads=2):
    """Threads for a numba ``parallel=True`` driver over ``n_tasks`` fixed tasks, or 0 where
    the tasks run on the pool (:func:`map_blocks`) instead.

    0 on one thread or task, inside a pool thread (no nested pools), where numba's threading
    layer is not thread-safe (:mod:`metricfit._numba_layer`) or where
    ``METRICFIT_KERNEL_THREADS=pool`` (the pool for every kernel section: a switch for the
    benchmarks' A/B and a way around a numba threading layer that misbehaves). Never more than
    numba's ``NUMBA_NUM_THREADS``; the tasks do not depend on the count, so neither does the
    result.

    ``min_threads``: the fewest package threads (``threads``, default :func:`get_threads`) at
    which the driver is used: for a driver that runs no faster than the pool below that count
    and costs a long first compilation (the convnet's,
    :data:`metricfit.cnn.threads.DRIVER_MIN_THREADS`). ``METRICFIT_KERNEL_THREADS=numba`` uses
    the drivers from two threads whatever ``min_threads`` says (the tests' and the benchmarks'
    way to run them on a small machine).
    """
    count = get_threads() if threads is None else threads
    n = min(count, n_tasks, int(numba.config.NUMBA_NUM_THREADS))
    if n <= 1 or _in_pool():
        return 0
    launcher = _kernel_launcher()
    if launcher == "pool" or (count < min_threads and launcher != "numba"):
        return 0
    return n if threadsafe_layer() else 0


def _kernel_launcher():
    """``METRICFIT_KERNEL_THREADS``: "numba", "pool" or "" (not set: each driver from its
    ``min_threads``)."""
    value = os.environ.get("METRICFIT_KERNEL_THREADS", "").strip().lower()
    if value not in ("", "numba", "pool"):
        raise ValueError("METRICFIT_KERNEL_THREADS must be 'numba' or 'pool' (or not set), "
                         f"got {os.environ['METRICFIT_KERNEL_THREADS']!r}.")
    return value


def launch(driver, n_tasks, *args, threads=None, min_threads=2):
    """``driver(*args)``, a numba ``parallel=True`` driver over ``n_tasks`` fixed tasks, on
    :func:`kernel_threads` numba threads (``threads``: the count asked for, default the package
    setting; ``min_threads``: as there); returns False without calling it where that is 0
    (``driver`` None included), and the caller then runs the tasks on the pool.

    numba's own count is changed for the call only where it differs: right after a GEMM each
    Python-level call here costs 15-40 microseconds (the GEMM has evicted the interpreter's
    code and data from the caches), and no longer setting and restoring it took 0.05-0.15 ms
    off a kernel section of 0.4-0.9 ms at 2 threads on the 2-core machine
    (docs/results/timing.md)."""
    n = 0 if driver is None else kernel_threads(n_tasks, threads, min_threads)
    if not n:
        return False
    # the usual case, checked here rather than in numba_threads: the context manager's own
    # frames cost 0.03 ms more a section after a GEMM (measured on the 2-core machine)
    if numba.get_num_threads() == n:
        driver(*args)
    else:
        with numba_threads(n):
            driver(*args)
    return True


@contextlib.contextmanager
def numba_threads(n):
    """numba's parallel regions launched from this thread use ``n`` threads inside the block
    (numba's setting is per thread; the caller's is restored after)."""
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _in_pool():
    return _IN_POOL.get()


def _marked(fn):
    def run(rows):
        _IN_POOL.set(True)
        return fn(rows)
    return run
