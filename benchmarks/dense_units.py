"""C5's forward product on a training batch, measured in one process: its units on numba's
threads (:mod:`metricfit.cnn._dense_kernels`, now) against NumPy's column blocks on the pool of
Python threads (before) and against the same units on the pool, at 1 and 2 threads (or
``--threads``). Then its backward products (``dW``, ``dX``: NumPy's blocks on the pool,
:func:`metricfit.cnn.layers.dense_backward`) on at most one thread per
``layers.GEMM_PER_THREAD`` multiply-adds, as now, against every thread asked for.

C5 of seed 000's network on a batch of 64 pairs: X (128, 1125) from S4, W (250, 1125), float32
(as ``bench_cnn.py``). The forms and thread counts alternate call by call in one process (this
project's 2-core machine drifts by 30% between processes), BLAS held at one thread as in the
network's passes. Also checked: each form gives the same bits on every thread count, and the
two forms agree to float32 rounding. The driver runs from ``DRIVER_MIN_THREADS`` threads (12):
on fewer, "now" runs on the pool too (``METRICFIT_KERNEL_THREADS=numba`` forces the driver).

    python benchmarks/dense_units.py [--repeats 101] [--dtype float32] [--threads 1 2]

Run it with ``NUMBA_NUM_THREADS`` and ``METRICFIT_NUM_THREADS`` at the most threads asked for.
Prints the median ms of each form at each thread count, the speed-up and the BLAS libraries
(threadpoolctl).
"""

import argparse
import os
import time

import metricfit  # noqa: F401  (first, before numpy: OpenBLAS's idle spin, metricfit._blas_env)

# isort: split
import numpy as np
from threadpoolctl import threadpool_info

from metricfit.cnn import layers, num_threads
from metricfit.cnn.layers import dense_backward, dense_forward
from metricfit.cnn.threads import blas_single_threaded, map_spans

N_IMAGES, D_IN, D_OUT, BLOCK = 128, 1125, 250, 32


def before(X, W, b):
    """The form before: ``Y[:, J] = X W[J]^T + b[J]`` by blocks J of 32 outputs, NumPy's matmul
    on the pool (:func:`metricfit.cnn.threads.map_spans` without a driver)."""
    Y = np.empty((X.shape[0], W.shape[0]), X.dtype)
    blocks = [slice(a, min(a + BLOCK, W.shape[0])) for a in range(0, W.shape[0], BLOCK)]

    def run(u0, u1):
        for J in blocks[u0:u1]:
            Y[:, J] = X @ W[J].T + b[J]

    map_spans(run, np.ones(len(blocks)))
    return Y


def units_on_the_pool(X, W, b):
    """Now's units on the pool of Python threads (``METRICFIT_KERNEL_THREADS=pool``, read at
    each call)."""
    setting = os.environ.get("METRICFIT_KERNEL_THREADS")
    os.environ["METRICFIT_KERNEL_THREADS"] = "pool"
    try:
        return dense_forward(X, W, b)
    finally:
        if setting is None:
            del os.environ["METRICFIT_KERNEL_THREADS"]
        else:
            os.environ["METRICFIT_KERNEL_THREADS"] = setting


def backward_every_thread(X, W, dY):
    """The backward blocks on every thread asked for (no ``GEMM_PER_THREAD`` cap)."""
    share = layers.GEMM_PER_THREAD
    layers.GEMM_PER_THREAD = 1
    try:
        return dense_backward(X, W, dY)
    finally:
        layers.GEMM_PER_THREAD = share


def _parts(result):
    """A form's result as a list of arrays (the backward products return a tuple)."""
    return list(result) if isinstance(result, tuple) else [result]


def timed(forms, operands, counts, repeats):
    """``{(form, n): [seconds, ...]}``, forms and counts alternated call by call, and the
    largest difference between the first two forms' results (after checking that each form
    gives the same bits on every count)."""
    times = {(form, n): [] for form in forms for n in counts}
    results = {}
    for (form, n) in times:
        with num_threads(n):
            results[form, n] = forms[form](*operands)
    for form in forms:
        for n in counts:
            for got, want in zip(_parts(results[form, n]), _parts(results[form, counts[0]]),
                                 strict=True):
                assert np.array_equal(got, want), form
    first, second = (results[form, counts[0]] for form in list(forms)[:2])
    gap = max(float(np.abs(a - b).max())
              for a, b in zip(_parts(first), _parts(second), strict=True))
    for _ in range(repeats):
        for (form, n) in times:
            with num_threads(n):
                t0 = time.perf_counter()
                forms[form](*operands)
                times[form, n].append(time.perf_counter() - t0)
    return times, gap


def print_table(forms, times, counts):
    print("| form | " + " | ".join(f"{n} thr" for n in counts) + " | speed-up, most / fewest |")
    print("|---|" + "---|" * (len(counts) + 1))
    for form in forms:
        ms = [1e3 * float(np.median(times[form, n])) for n in counts]
        print(f"| {form} | " + " | ".join(f"{m:.3f}" for m in ms) + f" | {ms[0] / ms[-1]:.2f} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=101)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)
    counts = sorted(set(args.threads))
    rng = np.random.default_rng(0)
    X = np.tanh(rng.standard_normal((N_IMAGES, D_IN))).astype(args.dtype)
    W = (rng.standard_normal((D_OUT, D_IN)) / D_IN ** 0.5).astype(args.dtype)
    b = rng.standard_normal(D_OUT).astype(args.dtype)
    dY = rng.standard_normal((N_IMAGES, D_OUT)).astype(args.dtype)
    forms = {"before (NumPy blocks, pool)": before,
             "now (units; driver from 12 threads)": dense_forward,
             "now's units on the pool": units_on_the_pool}
    backward = {"backward blocks, capped (GEMM_PER_THREAD)": dense_backward,
                "backward blocks on every thread": backward_every_thread}
    with blas_single_threaded():
        times, gap = timed(forms, (X, W, b), counts, args.repeats)
        back_times, back_gap = timed(backward, (X, W, dY), counts, args.repeats)
        assert back_gap == 0  # the cap changes who runs a block, not its numbers
        blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
    print(f"C5 forward, {N_IMAGES} x {D_IN} -> {D_OUT}, {args.dtype}, median of "
          f"{args.repeats}, ms (the same bits on {counts} threads: yes; before vs now: "
          f"max |difference| {gap:.1e})")
    print_table(forms, times, counts)
    print(f"C5 backward (dW and dX), the same sizes; each form the same bits on {counts} "
          f"threads, and the two the same bits; capped at {layers.GEMM_PER_THREAD} "
          "multiply-adds a thread")
    print_table(backward, back_times, counts)
    print("BLAS, as the forms ran: " + "; ".join(
        f"{i['internal_api']} {i.get('version')} {i['filepath'].rsplit('/', 1)[-1]} "
        f"({i['num_threads']} threads)" for i in blas))


if __name__ == "__main__":
    main()
