"""OpenBLAS's idle spin against the numba kernel that follows a product (issue 27).

DDML's fused kernel section (``ddml._delta_grad_inplace``) on n x 300 float64 rows, each call
right after a GEMM (untimed), at 1 and 2 threads (``--threads``), and at the last count with
BLAS held to one thread during the kernel; in fresh processes with ``OPENBLAS_THREAD_TIMEOUT``
= 28 (OpenBLAS's own 2^28 cycles of polling) and = 16 (metricfit's default,
:mod:`metricfit._blas_env`). Medians of ``--repeats`` calls, ms.

    python benchmarks/blas_spin.py [--rows 48000] [--repeats 60] [--spins 28 16]
        [--threads 1 2]
"""

import argparse
import json
import os
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
import numpy as np
import metricfit
from metricfit.losses import ddml
from metricfit.parallel import blas_threads
n, repeats = int(sys.argv[1]), int(sys.argv[2])
counts = [int(c) for c in sys.argv[3].split(",")]
rng = np.random.default_rng(0)
source = rng.standard_normal((n, 300))
s = np.where(rng.random(n) < 0.5, 1.0, -1.0)
P, Z = source.copy(), rng.standard_normal((2000, 300))

def median_ms(call):
    times = []
    for _ in range(repeats + 1):
        np.copyto(P, source)
        Z @ Z.T  # the product the kernel follows
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times[1:]))

def kernel():
    ddml._delta_grad_inplace(P, s, 10.0, 1.0)

def kernel_blas_1():
    with blas_threads(1):
        kernel()

out = {}
for threads in counts:
    with metricfit.threads(threads):
        out[f"{threads} threads"] = median_ms(kernel)
with metricfit.threads(counts[-1]):
    out[f"{counts[-1]} threads, BLAS held to 1 in the kernel"] = median_ms(kernel_blas_1)
out["spin"] = metricfit.parallel.blas_idle_spin()
print(json.dumps(out))
"""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=48000)
    p.add_argument("--repeats", type=int, default=60)
    p.add_argument("--spins", nargs="+", default=["28", "16"])
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    args = p.parse_args(argv)
    here = os.path.dirname(os.path.abspath(__file__))
    for spin in args.spins:
        env = dict(os.environ, OPENBLAS_THREAD_TIMEOUT=spin,
                   PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"),
                                                            os.path.dirname(here)])))
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", CHILD, str(args.rows), str(args.repeats),
                               ",".join(map(str, args.threads))],
                              env=env, capture_output=True, text=True, check=True)
        row = json.loads(proc.stdout.splitlines()[-1])
        timings = ", ".join(f"{k} {v:.2f} ms" for k, v in row.items() if k != "spin")
        print(f"OPENBLAS_THREAD_TIMEOUT={spin}: {timings} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
