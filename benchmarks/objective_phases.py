"""Where a prepared linear objective's time goes beside its two GEMMs, at given thread counts.

Times, for TSML and DDML on bench_gradients' data (n = 4800, d = k = 300), medians of
``--repeats``: the first GEMM into a kept buffer; the second GEMM right after the first
(OpenBLAS's workers still awake) and after a 2 ms pause (asleep: metricfit's
OPENBLAS_THREAD_TIMEOUT=16 puts them to sleep after some 25 us); the kernel section right after
the first GEMM; the whole prepared call; and the two-GEMM bound with fresh result arrays (as
``bench_gradients.prepared_and_bound``) against kept ones (the page faults of fresh arrays).

    python benchmarks/objective_phases.py --threads 1 4 16
"""

import argparse
import sys
import time
from pathlib import Path

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
import numpy as np

from metricfit.losses import ddml, tsml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gradients  # noqa: E402


def _median_ms(call, repeats, before=None):
    times = []
    for _ in range(repeats + 1):
        if before is not None:
            before()
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times[1:]))


def phases(loss, dtype, repeats):
    X1, X2, s, A = bench_gradients.make_data(4800, 300, 300, dtype, 0)
    Z = X1 + s[:, None] * X2 if loss == "tsml" else X1 - X2
    C, G = np.empty((Z.shape[0], A.shape[0]), dtype), np.empty((A.shape[0], Z.shape[1]), dtype)
    kernel = (tsml._normalise_rows_inplace if loss == "tsml"
              else lambda P: ddml._delta_grad_inplace(P, s, bench_gradients.DDML_T,
                                                       bench_gradients.DDML_TAU))
    hyper = {"T": bench_gradients.DDML_T, "tau": bench_gradients.DDML_TAU}
    kwargs = hyper if loss == "ddml" else {}
    f = {"tsml": tsml, "ddml": ddml}[loss].objective(X1, X2, s, **kwargs)

    def gemm1():
        np.matmul(Z, A.T, out=C)

    def gemm2():
        np.matmul(C.T, Z, out=G)

    return {
        "gemm1": _median_ms(gemm1, repeats),
        "gemm2 awake": _median_ms(gemm2, repeats, before=gemm1),
        "gemm2 asleep": _median_ms(gemm2, repeats, before=lambda: (gemm1(), time.sleep(0.002))),
        "kernel": _median_ms(lambda: kernel(C), repeats, before=gemm1),
        "bound, kept arrays": _median_ms(lambda: (gemm1(), gemm2()), repeats),
        "bound, fresh arrays": _median_ms(lambda: (Z @ A.T).T @ Z, repeats),
        "whole call": _median_ms(lambda: f(A), repeats),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    for n in args.threads:
        with metricfit.threads(n):
            for loss in ("tsml", "ddml"):
                for dtype in ("float64", "float32"):
                    row = phases(loss, dtype, args.repeats)
                    cells = ", ".join(f"{k} {v:.2f}" for k, v in row.items())
                    print(f"{n:2d} threads, {loss} {dtype} (ms): {cells}", flush=True)


if __name__ == "__main__":
    main()
