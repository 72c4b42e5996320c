"""What speed-up a machine allows at all: the ceiling against which the scaling targets read.

Two workloads with no serial part, run at each thread count on the package's own launchers
(each thread count in the same process, the work split in fixed tasks of equal size):

- ``compute``: every task iterates a short recurrence in registers (no memory traffic), so
  the speed-up measures the cores and their clock under load: a processor that runs one
  thread faster than sixteen (turbo) caps every workload's speed-up below the thread count;
- ``stream``: every task sums its own slice of a 256 MB array (read once per call, from
  memory), so the speed-up measures the memory bandwidth the threads share.

Each runs through a numba ``parallel=True`` driver (numba's threads, as the kernel sections)
and through the package pool (Python threads over a ``nogil`` kernel, as the descriptors and
the convnet), so the hand-off costs of both appear too.

    python benchmarks/ceiling.py --threads 1 2 4 8 16

Prints milliseconds per call and the speed-up over the first count, for each workload and
launcher (medians of ``--repeats``).
"""

import argparse
import os
import sys
from pathlib import Path

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
import numpy as np
from numba import njit, prange

from metricfit.parallel import map_blocks, numba_threads

sys.path.insert(0, str(Path(__file__).resolve().parent))
from handoff import _median_us  # noqa: E402  (the same timer)

TASKS = 64  # fixed tasks per call: the split does not depend on the thread count
STEPS = 400_000  # recurrence steps per compute task (about 1 ms on one core)
STREAM_BYTES = 256 * 2**20


@njit(cache=True, nogil=True)
def _compute(seeds, out, lo, hi):  # pragma: no cover (compiled)
    for t in range(lo, hi):
        x = seeds[t]
        y = 0.5
        for _ in range(STEPS):  # a dependent chain: latency-bound, in registers
            x = x * 0.999999 + y
            y = y * 0.999998 + 1e-9 * x
        out[t] = x + y


@njit(cache=True, nogil=True, parallel=True)
def _compute_driver(seeds, out, n_tasks):  # pragma: no cover (compiled)
    for t in prange(n_tasks):
        _compute(seeds, out, t, t + 1)


@njit(cache=True, nogil=True)
def _stream(data, out, lo, hi):  # pragma: no cover (compiled)
    size = data.shape[0] // out.shape[0]
    for t in range(lo, hi):
        total = 0.0
        for i in range(t * size, (t + 1) * size):
            total += data[i]
        out[t] = total


@njit(cache=True, nogil=True, parallel=True)
def _stream_driver(data, out, n_tasks):  # pragma: no cover (compiled)
    for t in prange(n_tasks):
        _stream(data, out, t, t + 1)


def _median_ms(call, repeats):
    return _median_us(call, repeats)[0] / 1e3


def measure(threads, repeats=7):
    """``{(workload, launcher): ms}`` at ``threads`` threads."""
    seeds = np.linspace(0.1, 0.9, TASKS)
    data = np.ones(STREAM_BYTES // 8)
    out = np.empty(TASKS)
    kernels = {"compute": (_compute, _compute_driver, seeds),
               "stream": (_stream, _stream_driver, data)}
    result = {}
    with metricfit.threads(threads):
        for name, (kernel, driver, first) in kernels.items():
            def on_pool(kernel=kernel, first=first):
                map_blocks(lambda b: kernel(first, out, b.start, b.stop), TASKS, 1)

            def on_numba(driver=driver, first=first):
                with numba_threads(threads):
                    driver(first, out, TASKS)

            result[name, "pool"] = _median_ms(on_pool, repeats)
            result[name, "numba"] = _median_ms(on_numba, repeats)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    rows = {t: measure(t, args.repeats) for t in args.threads}
    first = args.threads[0]
    print(f"ceiling: {TASKS} fixed tasks a call, median of {args.repeats}; "
          f"{os.cpu_count()} CPUs")
    print(f"{'workload':9s} {'launcher':8s} " + " ".join(f"{t:>14d}" for t in args.threads))
    for key in rows[first]:
        cells = " ".join(f"{rows[t][key]:7.2f} ({rows[first][key] / rows[t][key]:4.1f}x)"
                         for t in args.threads)
        print(f"{key[0]:9s} {key[1]:8s} {cells}")


if __name__ == "__main__":
    main()
