"""OpenBLAS's idle spin, set before OpenBLAS is loaded (``metricfit/__init__`` imports this
module first, before numpy).

When a product ends, OpenBLAS's worker threads (a pthreads build, as in numpy's and scipy's
wheels) poll for the next one for ``2^OPENBLAS_THREAD_TIMEOUT`` CPU cycles before they sleep:
``2^28``, about 0.1 s, unless the variable is set. A polling worker calls ``sched_yield`` but
keeps its core in practice, and metricfit's numba kernels run right after a product (the
linear losses' fused kernels between their two GEMMs, NCA's between its products): on the
project's 2-core machine, DDML's fused kernel on 48,000 pairs took 7.9-8.9 ms on 2 threads
right after a GEMM with the default spin, 4.3-4.5 ms with ``OPENBLAS_THREAD_TIMEOUT=16``
(7.7-8.2 ms on one thread; ``benchmarks/blas_spin.py``); one NCA iteration on digits 39.1
against 24.6 ms (42 ms on one thread; ``benchmarks/scaling.py``, docs/results/timing.md). On 16
cores fifteen polling workers sit beside sixteen kernel threads.

OpenBLAS reads the variable once, when it loads (``openblas_thread_timeout``; clamped to 4..30):
no call changes it later (``openblas_set_num_threads`` does not put polling workers to sleep).
So it is set here, as scikit-learn sets its ``KMP_*`` defaults: to :data:`DEFAULT` (``2^16``
cycles, some 25 microseconds: products closer together than that still find their workers
awake) unless the user set it. It takes effect only where metricfit is imported before numpy
and scipy (the ``metricfit`` command always is); :func:`idle_spin` says which holds.
Only OpenBLAS's pthreads server reads it; an OpenMP BLAS (MKL: ``KMP_BLOCKTIME``, GNU OpenMP:
``OMP_WAIT_POLICY``) has its own setting, left to the user.
"""

import os
import sys

VARIABLE = "OPENBLAS_THREAD_TIMEOUT"
DEFAULT = "16"

USER_VALUE = os.environ.get(VARIABLE) or None
BLAS_LOADED_BEFORE = any(name in sys.modules for name in ("numpy", "scipy"))
if USER_VALUE is None:
    os.environ[VARIABLE] = DEFAULT


def idle_spin():
    """One line: how long OpenBLAS's idle workers poll in this process, as far as it is known.

    Examples
    --------
    >>> from metricfit.parallel import blas_idle_spin
    >>> blas_idle_spin().startswith("OPENBLAS_THREAD_TIMEOUT")
    True
    """
    if USER_VALUE is not None:
        return f"{VARIABLE}={USER_VALUE} (set by the user)"
    if not BLAS_LOADED_BEFORE:
        return f"{VARIABLE}={DEFAULT} (metricfit's default, set before OpenBLAS loaded)"
    return (f"{VARIABLE} unset when OpenBLAS loaded (numpy or scipy imported before "
            f"metricfit): idle workers poll about 0.1 s after each product; set "
            f"{VARIABLE}={DEFAULT} in the environment, or import metricfit first")
