"""``metricfit bench``: one cost-and-gradient call of the prepared objectives against the
two-GEMM bound (NumPy only); ``--scaling``: the same at 1, 2, 4, ... threads up to the
machine's cores, with the speed-up and the ratio to the bound."""

import functools
import os
import sys
import time

import numpy as np


def _data(args):
    rng, n, d, k = np.random.default_rng(0), args.n, args.d, args.k
    X1, X2 = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    s = rng.permutation(np.where(np.arange(n) < n // 2, 1.0, -1.0))
    A = np.eye(k, d) + 0.01 * rng.standard_normal((k, d))
    return X1, X2, s, A


def run(args):
    """Median ms of one cost-and-gradient call (lam = 0), the variants called round-robin,
    inside ``metricfit.threads(--threads)`` (BLAS and metricfit's kernels alike)."""
    from ..parallel import threads

    print_target()
    if args.scaling:
        return scaling(args)
    with threads(args.threads):
        return _timings(args)


def print_target():
    """What numba compiles metricfit's kernels for, and a warning (stderr) where that is
    narrower than this processor (:func:`metricfit.parallel.codegen_warning`)."""
    from ..parallel import codegen_warning, numba_target

    target = numba_target()
    print(f"numba compiles for '{target.cpu_name}' ({target.simd or 'as named'}); this "
          f"processor: '{target.host_cpu_name}' ({target.host_simd or 'unknown'})")
    message = codegen_warning(target)
    if message:
        print(f"warning: {message}", file=sys.stderr)


def _timings(args):
    from ..losses import csml, ddml, tsml

    X1, X2, s, A = _data(args)
    table = {}
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
    print(f"one cost-and-gradient call, n = {args.n}, d = {args.d}, k = {args.k}; median of "
          f"{args.repeats}; threads: {args.threads or 'default'}")
    print(f"{'variant':<16} {'float64 ms':>11} {'x bound':>8} {'float32 ms':>11} {'x bound':>8}")
    for i, name in enumerate(("two-GEMM bound", "TSML prepared", "CSML prepared",
                              "DDML prepared")):
        print(f"{name:<16} " + " ".join(f"{table[t][i]:11.2f} {table[t][i] / table[t][0]:8.2f}"
                                        for t in table))
    print("Full benchmark (torch autograd, LDML, stateless cost_grad, JSON): python "
          "benchmarks/bench_gradients.py in the source repository (pip install -e .[bench]); "
          "scaling of every workload: benchmarks/scaling.py.")
    return 0


def thread_counts(cpus):
    """1, 2, 4, ... up to ``cpus``, and ``cpus`` itself."""
    counts = [1]
    while counts[-1] * 2 <= cpus:
        counts.append(counts[-1] * 2)
    return counts + ([cpus] if counts[-1] != cpus else [])


def _objectives(X1, X2, s, A, dtype):
    """[(name, call, bound)] for TSML, CSML, DDML (A) and LDML (M = I, b = 2d) in ``dtype``."""
    from ..losses import csml, ddml, ldml, tsml

    x1, x2, sd, a = (v.astype(dtype) for v in (X1, X2, s, A))
    z, stacked, D = x1 + sd[:, None] * x2, np.concatenate([x1, x2]), x1 - x2
    M = np.eye(D.shape[1], dtype=dtype)
    theta, w = ldml.pack(M, 2.0 * D.shape[1]), np.linspace(-1, 1, D.shape[0], dtype=dtype)
    rows = []
    for name, loss, Z in (("TSML", tsml, z), ("CSML", csml, stacked), ("DDML", ddml, z)):
        rows.append((name, functools.partial(loss.objective(x1, x2, sd), a),
                     lambda Z=Z, a=a: (Z @ a.T).T @ Z))
    rows.append(("LDML", functools.partial(ldml.objective(x1, x2, sd), theta),
                 lambda: (D @ M, (w[:, None] * D).T @ D)))
    return rows


def scaling(args):
    """The prepared objectives at 1, 2, 4, ... threads (``metricfit.threads``) up to the CPU
    count (or ``--threads``): median ms, speed-up over 1 thread, ratio to the two-GEMM bound
    (TSML, DDML: on the (n, d) pairs; CSML: on the stacked (2n, d) pairs; LDML: its two
    (n x d x d) GEMMs). One process: for a fresh process per count, benchmarks/scaling.py."""
    from ..parallel import blas_idle_spin, threads

    counts = thread_counts(args.threads or os.cpu_count() or 1)
    X1, X2, s, A = _data(args)
    print(f"scaling of one cost-and-gradient call, n = {args.n}, d = {args.d}, k = {args.k} "
          f"(LDML: d x d); median of {args.repeats}; threads {counts}; {blas_idle_spin()}")
    print(f"{'objective':<9} {'dtype':<8} {'threads':>7} {'ms':>9} {'speed-up':>9} "
          f"{'x bound':>8}")
    for dtype in ("float64", "float32"):
        rows = _objectives(X1, X2, s, A, dtype)
        base = {}
        for name, call, bound in rows:
            for n in counts:
                with threads(n):
                    ms, ratio = _median_pair(call, bound, args.repeats)
                base.setdefault(name, ms)
                print(f"{name:<9} {dtype:<8} {n:>7} {ms:9.2f} {base[name] / ms:9.2f} "
                      f"{ratio:8.2f}")
    return 0


def _median_pair(call, bound, repeats):
    """Median ms of ``call`` and the median per-round ratio to ``bound`` (a warm-up round
    first)."""
    times = np.empty((repeats + 1, 2))
    for r in range(repeats + 1):
        for i, fn in enumerate((call, bound)):
            t0 = time.perf_counter()
            fn()
            times[r, i] = time.perf_counter() - t0
    return 1e3 * float(np.median(times[1:, 0])), float(np.median(times[1:, 0] / times[1:, 1]))
