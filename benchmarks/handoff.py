"""What one hand-off of a kernel section costs: the package pool (Python threads over
``nogil`` kernels, :func:`metricfit.parallel.map_blocks`) against a numba ``parallel=True``
driver (numba's threading layer), each running one tiny task a thread.

    python benchmarks/handoff.py --threads 1 2 4 16

Prints the median and 90th percentile microseconds per call at each thread count, numba's
threading layer and the BLAS / OpenMP libraries (threadpoolctl).
"""

import argparse
import time

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
import numpy as np
from numba import njit, prange
from threadpoolctl import threadpool_info

from metricfit import parallel
from metricfit._numba_layer import threadsafe_layer


@njit(cache=True, nogil=True)
def _touch(x, lo, hi):  # a task of a few nanoseconds
    for i in range(lo, hi):
        x[i] += 1.0


@njit(cache=True, nogil=True, parallel=True)
def _touch_parallel(x, n_tasks):
    for t in prange(n_tasks):
        _touch(x, t, t + 1)


def _median_us(call, repeats):
    call()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return 1e6 * np.median(times), 1e6 * np.percentile(times, 90)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=2000)
    args = parser.parse_args(argv)
    import numba

    print("numba threading layer usable:", threadsafe_layer(), numba.threading_layer())
    for lib in threadpool_info():
        print(f"  {lib['internal_api']} {lib.get('version')} threads {lib['num_threads']}")
    x = np.zeros(64)
    for n in args.threads:
        with metricfit.threads(n), parallel.numba_threads(min(n, numba.config.NUMBA_NUM_THREADS)):
            pool = _median_us(lambda: parallel.map_blocks(  # noqa: B023
                lambda b: _touch(x, b.start, b.stop), n, 1), args.repeats)  # noqa: B023
            driver = _median_us(lambda: _touch_parallel(x, n), args.repeats)  # noqa: B023
        print(f"{n:2d} threads: pool {pool[0]:7.1f} us (p90 {pool[1]:7.1f}), numba driver "
              f"{driver[0]:7.1f} us (p90 {driver[1]:7.1f})", flush=True)


if __name__ == "__main__":
    main()
