"""PLDA fit: time per EM iteration against its two d x d GEMM-heavy steps, and scaling in n.

Synthetic float32 points from a two-covariance model (10 samples per identity). Part 1:
100,000 x 256 (10,000 identities): the one-off statistics pass (class means and the offset
scatter, one O(n d^2) GEMM), the time per EM iteration of the two-covariance model, and in the
same run the two GEMMs an iteration holds, ``Wm^T Wm`` and ``(R n)^T R`` (each (C, d)^T (C, d),
C = identities) and the d x d generalised eigenproblem. Part 2: full ``PLDA().fit`` (10
iterations, likelihood recorded) at n = 1e4, 1e5, 1e6 points (d = 256), and the log-log slope.
Prints BLAS and threads (threadpoolctl); writes benchmarks/results/bench_plda.json.

    python benchmarks/bench_plda.py [--threads 1] [--max-n 1000000]
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from metricfit import PLDA
from metricfit.backend import plda as core


def synthetic(n, d, per_identity=10, seed=0):
    rng = np.random.default_rng(seed)
    C = n // per_identity
    scales = np.linspace(2.0, 0.1, d).astype(np.float32)
    centres = rng.standard_normal((C, d), dtype=np.float32) * scales
    codes = np.repeat(np.arange(C), per_identity)
    X = rng.standard_normal((n, d), dtype=np.float32)
    X += centres[codes]
    return X, codes


def best_of(f, repeats=3):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def part1(n, d):
    X, codes = synthetic(n, d)
    t_stats = best_of(lambda: core.class_statistics(X, codes), 2)
    counts, means, mu, scatter = core.class_statistics(X, codes)
    t_iter = best_of(lambda: core.fit_two_covariance(counts, means, scatter, n_iter=1))
    B, W = core.fit_two_covariance(counts, means, scatter, n_iter=3)
    T, psi = core.plda_basis(B, W)
    U = means @ T.T
    R = U * 0.5
    t_gemm1 = best_of(lambda: U.T @ U)
    t_gemm2 = best_of(lambda: (R * counts[:, None]).T @ R)
    t_eig = best_of(lambda: core.plda_basis(B, W))
    C = counts.size
    flops = 2 * C * d * d
    return {"n": n, "d": d, "identities": C, "stats_s": t_stats, "iteration_s": t_iter,
            "gemm1_s": t_gemm1, "gemm2_s": t_gemm2, "eigh_s": t_eig,
            "gemm_gflops": flops / t_gemm1 / 1e9}


def part2(sizes, d):
    rows = []
    for n in sizes:
        X, codes = synthetic(n, d, seed=1)
        t0 = time.perf_counter()
        PLDA().fit(X, codes)
        rows.append({"n": n, "fit_s": time.perf_counter() - t0})
        del X
    n, t = np.log([r["n"] for r in rows]), np.log([r["fit_s"] for r in rows])
    return rows, float(np.polyfit(n, t, 1)[0])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=256)
    args = parser.parse_args()
    with threadpool_limits(args.threads):
        info = [(i["internal_api"], i["num_threads"]) for i in threadpool_info()]
        print(f"BLAS / threads: {info} (the machine may be shared: ratios are what count)")
        one = part1(100_000, args.d)
        print(f"n = {one['n']}, d = {one['d']}, {one['identities']} identities, float32")
        print(f"  statistics pass (once)      {1e3 * one['stats_s']:8.1f} ms")
        print(f"  one EM iteration            {1e3 * one['iteration_s']:8.1f} ms")
        print(f"  GEMM 1 (C,d)^T(C,d)         {1e3 * one['gemm1_s']:8.1f} ms "
              f"({one['gemm_gflops']:.1f} GFLOP/s)")
        print(f"  GEMM 2 (C,d)^T(C,d)         {1e3 * one['gemm2_s']:8.1f} ms")
        print(f"  generalised eigh (d^3)      {1e3 * one['eigh_s']:8.1f} ms")
        bound = one["gemm1_s"] + one["gemm2_s"]
        print(f"  iteration / (two GEMMs)     {one['iteration_s'] / bound:8.2f} x")
        sizes = [s for s in (10_000, 100_000, 1_000_000) if s <= args.max_n]
        rows, slope = part2(sizes, args.d)
        for r in rows:
            print(f"  PLDA().fit n = {r['n']:>9,}: {r['fit_s']:7.2f} s")
        print(f"  log-log slope of fit time in n over {sizes[0]:,} .. {sizes[-1]:,}: {slope:.2f}")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "bench_plda.json").write_text(json.dumps(
        {"blas": info, "part1": one, "part2": rows, "slope": slope}, indent=1))


if __name__ == "__main__":
    main()
