"""What a kernel section's fixed costs are right after a GEMM, against the same calls when
the caches are warm: where the short kernel sections lose their 2-thread speed-up.

A kernel section of a linear objective (TSML's row normalisation, 4,800 x 300, a few tenths
of a millisecond) always runs right after the GEMM that writes its input. Each call below is
timed (median of ``--repeats``) twice: back to back ("warm": the call's code and data in the
caches) and right after an untimed ``(4800, 300) @ (300, 300)`` float64 GEMM ("after GEMM").
Setting ``--setup copy`` puts a copy of the same bytes in the GEMM's place, ``sleep`` a
20 ms sleep (other processes' turn on the core).

- Python-level steps of :func:`metricfit.parallel.launch`: a no-op call,
  :func:`metricfit.get_threads`, :func:`metricfit.parallel.kernel_threads`, numba's
  ``get_num_threads`` and a set-and-restore of it;
- an empty numba ``parallel=True`` driver (44 iterations, the kernel section's blocks) on 1
  and on 2 of numba's threads: the launch alone, the second thread's wake-up included;
- TSML's kernel section itself: its driver called directly (numba's count set around the
  round, not in the call), and the whole section as the objective calls it
  (``tsml._normalise_rows_inplace``: buffer, :func:`launch`, driver, ordered sum; metricfit's
  count set around the round), on 1 and on 2 threads. BLAS keeps its count throughout.

    python benchmarks/after_gemm.py [--repeats 61] [--rounds 3] [--setup gemm|copy|sleep]

Run it with ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``NUMBA_NUM_THREADS`` and
``METRICFIT_NUM_THREADS`` at 2 (as ``scaling.py``'s 2-thread worker). Prints microseconds,
the median over ``--rounds`` of each round's median, and the machine's guest halt-polling
setting where Linux shows it (a virtual CPU that halts at once when idle must be woken by its
host: the second thread's wake-up).
"""

import argparse
import contextlib
import functools
import sys
import time
from pathlib import Path

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
import numba
import numpy as np
from numba import njit, prange

from metricfit import parallel
from metricfit.losses import tsml
from metricfit.losses._rows import row_block

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scaling import _timed  # noqa: E402  (the same timer: a warm-up, then the median)

N_ROWS, WIDTH = 4800, 300
HALT_POLL = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")


@njit(cache=True, nogil=True, parallel=True)
def _empty_driver(out, n_tasks):  # pragma: no cover (compiled)
    for t in prange(n_tasks):
        out[t] = t


def _median_us(call, setup, repeats):
    """Median microseconds of ``call()``, each right after an untimed ``setup()``."""
    return 1e3 * _timed(call, repeats, setup=setup)["ms"]


@contextlib.contextmanager
def _package_threads(n):
    """metricfit's count at ``n`` (not BLAS's: :func:`metricfit.threads` would also limit BLAS
    through threadpoolctl, another step after the GEMM)."""
    old = metricfit.set_threads(n)
    try:
        yield
    finally:
        metricfit.set_threads(old)


def calls():
    """The timed calls: name -> (zero-argument callable, a maker of the context its rounds run
    in)."""
    rng = np.random.default_rng(0)
    C = rng.standard_normal((N_ROWS, WIDTH))
    out = np.empty(N_ROWS)
    block = row_block(WIDTH)
    n_blocks = -(-N_ROWS // block)

    def set_and_restore():
        with parallel.numba_threads(numba.get_num_threads()):
            pass

    def section_driver():
        tsml._normalise_rows_parallel(C, out, N_ROWS, block)

    def section():
        tsml._normalise_rows_inplace(C)

    none = contextlib.nullcontext
    on = {n: functools.partial(parallel.numba_threads, n) for n in (1, 2)}
    package = {n: functools.partial(_package_threads, n) for n in (1, 2)}
    return {
        "no-op Python call": (lambda: None, none),
        "get_threads": (metricfit.get_threads, none),
        "kernel_threads": (lambda: parallel.kernel_threads(n_blocks), none),
        "numba.get_num_threads": (numba.get_num_threads, none),
        "numba set + restore": (set_and_restore, none),
        "empty driver, 1 thread": (lambda: _empty_driver(out, n_blocks), on[1]),
        "empty driver, 2 threads": (lambda: _empty_driver(out, n_blocks), on[2]),
        "TSML section driver, 1 thread": (section_driver, on[1]),
        "TSML section driver, 2 threads": (section_driver, on[2]),
        "TSML section (launch), 1 thread": (section, package[1]),
        "TSML section (launch), 2 threads": (section, package[2]),
    }


def setups(kind):
    """``(name, setup)`` pairs: warm (nothing between calls) and the chosen cache-evicting
    step."""
    rng = np.random.default_rng(1)
    X, A = rng.standard_normal((N_ROWS, WIDTH)), rng.standard_normal((WIDTH, WIDTH)) / 17
    product = np.empty((N_ROWS, WIDTH))
    evict = {"gemm": lambda: np.matmul(X, A, out=product),
             "copy": lambda: np.copyto(product, X),
             "sleep": lambda: time.sleep(0.02)}[kind]
    return [("warm", lambda: None), (f"after {kind}", evict)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=61)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--setup", choices=("gemm", "copy", "sleep"), default="gemm")
    args = parser.parse_args(argv)
    if numba.config.NUMBA_NUM_THREADS < 2:
        parser.error("needs numba's threads at 2 or more (NUMBA_NUM_THREADS)")
    timed, steps = calls(), setups(args.setup)
    results = {(name, step): [] for name in timed for step, _ in steps}
    for _ in range(args.rounds):
        for name, (call, around) in timed.items():
            with around():
                for step, setup in steps:  # each timing's warm-up call compiles
                    results[name, step].append(_median_us(call, setup, args.repeats))
    halt = HALT_POLL.read_text().strip() if HALT_POLL.exists() else "not shown"
    print(f"metricfit threads {metricfit.get_threads()}, numba {numba.config.NUMBA_NUM_THREADS}"
          f" ({numba.threading_layer()}); guest_halt_poll_ns: {halt}")
    print(f"{'call':34s}" + "".join(f"{step + ' us':>18s}" for step, _ in steps))
    for name in timed:
        print(f"{name:34s}" + "".join(f"{np.median(results[name, step]):18.1f}"
                                      for step, _ in steps))


if __name__ == "__main__":
    main()
