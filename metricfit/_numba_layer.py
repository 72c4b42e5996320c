"""Whether numba's own threads may run metricfit's kernel sections (:func:`threadsafe_layer`).

A kernel section between two GEMMs is a few tasks of a millisecond or less. Handed to the
package's pool of Python threads (:func:`metricfit.parallel.map_blocks`) each task costs a
wake-up and a turn at the GIL, one after another: 46-63 microseconds for one hand-off on the
project's 2-core machine, 358 for sixteen on a 16-core Xeon, where they cost more than the
kernel saved (docs/results/timing.md). A numba ``parallel=True`` driver wakes its threads
from compiled code: 1.4 microseconds for the same hand-off (GNU OpenMP, spinning) and 7.7
(OpenMP passive), 47 for sixteen on the Xeon, measured by ``benchmarks/handoff.py``.

Only a thread-safe threading layer is used (``omp`` or ``tbb``): numba's ``workqueue`` layer
aborts the process when two threads launch at once (as Dask's or a user's threads may) and
its hand-off (88-90 microseconds here) is slower than the pool's. Which layer numba loads is
known only after its first launch, so :func:`threadsafe_layer` launches a one-line probe the
first time it is asked, and remembers the answer.

After a fork: GNU OpenMP's threads do not survive it, and numba terminates a child that launches
them again ("fork() called from a process already using GNU OpenMP"). A child forked after the
OpenMP layer was launched (``multiprocessing``'s "fork" start method) therefore runs its kernel
sections on the package pool; a child forked before launches its own.
"""

import contextlib
import os
import threading

import numba
import numpy as np
from numba import njit, prange

SAFE_LAYERS = ("omp", "tbb")
_ANSWER = []  # [usable] once probed
_LAYER = []  # [numba's layer] once probed
_LOCK = threading.Lock()


@njit(cache=True, nogil=True, parallel=True)
def _probe(out):  # pragma: no cover (compiled)
    for i in prange(out.shape[0]):
        out[i] = i


def threadsafe_layer():
    """True where numba's threading layer (loaded by a probe on the first call) is ``omp`` or
    ``tbb``; False where it is ``workqueue`` or none loads."""
    if not _ANSWER:
        with _LOCK:
            if not _ANSWER:
                try:
                    with _passive_openmp():
                        _probe(np.zeros(2))
                    _LAYER.append(numba.threading_layer())
                    _ANSWER.append(_LAYER[0] in SAFE_LAYERS)
                except Exception:  # no layer at all: the pool runs everything
                    _ANSWER.append(False)
    return _ANSWER[0]


@contextlib.contextmanager
def _passive_openmp():
    """``OMP_WAIT_POLICY=passive`` while numba loads its OpenMP layer, unless the user set an
    OpenMP wait setting: GNU OpenMP's threads otherwise spin after each region, and a kernel
    section is followed by a GEMM whose OpenBLAS threads need those cores (on 2 threads the
    spinning made TSML's prepared objective 1.45x slower: 23.8 against 16.4 ms,
    ``benchmarks/scaling.py``). libgomp reads it once, when it loads; the variable is put back
    at once, so nothing else started later sees it. Where libgomp was already loaded by then,
    its own setting stays (set ``OMP_WAIT_POLICY=passive``, or
    ``METRICFIT_KERNEL_THREADS=pool``)."""
    if any(name in os.environ for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")):
        yield
        return
    os.environ["OMP_WAIT_POLICY"] = "passive"
    try:
        yield
    finally:
        del os.environ["OMP_WAIT_POLICY"]


def _after_fork_in_child():
    """In a forked child: no more launches where the parent launched OpenMP (see above)."""
    global _LOCK
    _LOCK = threading.Lock()  # the parent's may have been held by another thread
    if _LAYER and _LAYER[0] == "omp":
        _ANSWER[0] = False


if hasattr(os, "register_at_fork"):  # POSIX (no fork elsewhere)
    os.register_at_fork(after_in_child=_after_fork_in_child)
