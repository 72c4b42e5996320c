"""PLDA fit: time per EM iteration against the two GEMMs of the per-class M-step, and scaling in n.

Synthetic float32 points from a two-covariance model (10 samples per identity unless said).
Part 1: 100,000 x 256 (10,000 identities): the one-off statistics pass (class means and the
offset scatter, one O(n d^2) GEMM), the time per EM iteration of the two-covariance model
(likelihood recorded, as ``PLDA.fit`` does) and, in the same run, the two GEMMs of the
per-class M-step, ``Wm^T Wm`` and ``(R n)^T R`` (each (C, d)^T (C, d) in float64, C =
identities: the bound the per-class EM had to beat; the batched EM of
:mod:`metricfit.backend.plda_em` does not form them). Part 2: full ``PLDA().fit`` (10
iterations) at n = 1e4, 1e5, 1e6 points (d = 256), and the log-log slope. Prints BLAS and
threads; writes benchmarks/results/bench_plda.json.

The functions ``time_em_iteration``, ``time_em_gemms``, ``time_fit`` (median seconds, no data
folder) are the scaling harness's hooks (``benchmarks/scaling.py``); ``time_plda_fit_gpu``
times a fit of torch CUDA points with array-API dispatch on (None without CUDA).

    python benchmarks/bench_plda.py [--threads 1] [--max-n 1000000]
"""

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

import metricfit
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


def median_time(f, repeats=3):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _em(counts, means, scatter, n_iter):
    return core.fit_two_covariance(counts, means, scatter, n_iter, callback=lambda *a: None)


def time_em_iteration(threads, n=100_000, d=256, n_classes=10_000, repeats=5):
    """Median seconds of one EM iteration of the two-covariance model (likelihood recorded):
    ``(t(6 iterations) - t(1 iteration)) / 5``, so the once-per-fit grouping is left out."""
    X, codes = synthetic(n, d, per_identity=n // n_classes)
    with metricfit.threads(threads):
        counts, means, _, scatter = core.class_statistics(X, codes)
        _em(counts, means, scatter, 1)  # warm-up
        t1 = median_time(lambda: _em(counts, means, scatter, 1), repeats)
        t6 = median_time(lambda: _em(counts, means, scatter, 6), repeats)
    return max(t6 - t1, 0.0) / 5


def time_em_gemms(threads, n=100_000, d=256, n_classes=None, repeats=5):
    """Median seconds of the per-class M-step's two GEMMs, ``U^T U`` and ``(R n)^T R`` with
    U, R (C, d) float64 (C = ``n_classes``, default n // 10): the iteration's GEMM bound."""
    C = n_classes or n // 10
    rng = np.random.default_rng(0)
    U, R = rng.standard_normal((C, d)), rng.standard_normal((C, d))
    counts = np.full(C, n / C)
    with metricfit.threads(threads):
        U.T @ U
        return median_time(lambda: (U.T @ U, (R * counts[:, None]).T @ R), repeats)


def time_statistics(threads, n=100_000, d=256, repeats=3):
    """Median seconds of :func:`metricfit.backend.plda.class_statistics` (10 per identity)."""
    X, codes = synthetic(n, d)
    with metricfit.threads(threads):
        core.class_statistics(X, codes)
        return median_time(lambda: core.class_statistics(X, codes), repeats)


def time_fit(threads, n, d=256, repeats=3):
    """Median seconds of ``PLDA().fit`` on n synthetic float32 points (n // 10 identities)."""
    X, codes = synthetic(n, d, seed=1)
    with metricfit.threads(threads):
        return median_time(lambda: PLDA().fit(X, codes), repeats)


def time_plda_fit_gpu(n=1_000_000, d=256, n_classes=100_000, repeats=3):
    """Median seconds of ``PLDA().fit(X, labels)`` with X a float32 torch CUDA tensor (labels a
    NumPy array) under :func:`metricfit.array_api_dispatch`, after one warm-up fit; None (and a
    message) without torch or CUDA."""
    try:
        import torch
    except ImportError:
        print("time_plda_fit_gpu: torch is not installed: skipped")
        return None
    if not torch.cuda.is_available():
        print("time_plda_fit_gpu: no CUDA device: skipped")
        return None
    gen = torch.Generator(device="cuda").manual_seed(0)
    per = n // n_classes
    codes = np.repeat(np.arange(n_classes), per)
    scales = torch.linspace(2.0, 0.1, d, device="cuda")
    centres = torch.randn(n_classes, d, device="cuda", generator=gen) * scales
    X = torch.randn(n_classes * per, d, device="cuda", generator=gen)
    X += centres.repeat_interleave(per, dim=0)

    def fit():
        PLDA().fit(X, codes)
        torch.cuda.synchronize()

    with metricfit.array_api_dispatch():
        fit()
        return median_time(fit, repeats)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=256)
    args = parser.parse_args()
    t, d = args.threads, args.d
    with metricfit.threads(t):
        info = [(i["internal_api"], i["num_threads"]) for i in threadpool_info()]
    print(f"BLAS / threads: {info}, metricfit threads {t} (the machine may be shared)")
    one = {"n": 100_000, "d": d, "identities": 10_000, "stats_s": time_statistics(t, d=d),
           "iteration_s": time_em_iteration(t, d=d), "gemms_s": time_em_gemms(t, d=d)}
    print(f"n = {one['n']}, d = {d}, {one['identities']} identities, float32")
    print(f"  statistics pass (once)      {1e3 * one['stats_s']:8.1f} ms")
    print(f"  one EM iteration            {1e3 * one['iteration_s']:8.1f} ms")
    print(f"  the two per-class GEMMs     {1e3 * one['gemms_s']:8.1f} ms")
    print(f"  iteration / (two GEMMs)     {one['iteration_s'] / one['gemms_s']:8.2f} x")
    sizes = [s for s in (10_000, 100_000, 1_000_000) if s <= args.max_n]
    rows = [{"n": s, "fit_s": time_fit(t, s, d, repeats=3 if s <= 100_000 else 1)}
            for s in sizes]
    for r in rows:
        print(f"  PLDA().fit n = {r['n']:>9,}: {r['fit_s']:7.3f} s")
    logn, logt = np.log([r["n"] for r in rows]), np.log([r["fit_s"] for r in rows])
    slope = float(np.polyfit(logn, logt, 1)[0]) if len(rows) > 1 else float("nan")
    print(f"  log-log slope of fit time in n over {sizes[0]:,} .. {sizes[-1]:,}: {slope:.2f}")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "bench_plda.json").write_text(json.dumps(
        {"blas": info, "threads": t, "part1": one, "part2": rows, "slope": slope}, indent=1))


if __name__ == "__main__":
    main()
