"""``metricfit bench``: one cost-and-gradient call of the prepared objectives against the
two-GEMM bound (NumPy only)."""

import functools
import time

import numpy as np


def run(args):
    """Median ms of one cost-and-gradient call (lam = 0), the variants called round-robin."""
    from threadpoolctl import threadpool_limits

    from ..losses import csml, ddml, tsml

    rng, n, d, k = np.random.default_rng(0), args.n, args.d, args.k
    X1, X2 = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    s = rng.permutation(np.where(np.arange(n) < n // 2, 1.0, -1.0))
    A = np.eye(k, d) + 0.01 * rng.standard_normal((k, d))
    table = {}
    with threadpool_limits(args.threads):
        for dtype in ("float64", "float32"):
            x1, x2, sd, a = (v.astype(dtype) for v in (X1, X2, s, A))
            z = x1 + sd[:, None] * x2
            objectives = [loss.objective(x1, x2, sd) for loss in (tsml, csml, ddml)]
            calls = [lambda z=z, a=a: (z @ a.T).T @ z]
            calls += [functools.partial(f, a) for f in objectives]
            times = np.empty((args.repeats + 1, len(calls)))  # round 0 warms up (numba)
            for r in range(args.repeats + 1):
                for i, call in enumerate(calls):
                    t0 = time.perf_counter()
                    call()
                    times[r, i] = time.perf_counter() - t0
            table[dtype] = 1e3 * np.median(times[1:], axis=0)
    print(f"one cost-and-gradient call, n = {n}, d = {d}, k = {k}; median of {args.repeats}; "
          f"BLAS threads: {args.threads or 'default'}")
    print(f"{'variant':<16} {'float64 ms':>11} {'x bound':>8} {'float32 ms':>11} {'x bound':>8}")
    for i, name in enumerate(("two-GEMM bound", "TSML prepared", "CSML prepared",
                              "DDML prepared")):
        print(f"{name:<16} " + " ".join(f"{table[t][i]:11.2f} {table[t][i] / table[t][0]:8.2f}"
                                        for t in table))
    print("Full benchmark (torch autograd, LDML, stateless cost_grad, JSON): python "
          "benchmarks/bench_gradients.py in the source repository (pip install -e .[bench]).")
    return 0
