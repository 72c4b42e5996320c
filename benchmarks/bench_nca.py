"""NCA speed and memory: metricfit.NCA against scikit-learn's NeighborhoodComponentsAnalysis.

Per L-BFGS iteration, the same number of iterations from the same start (identity, k = d,
``tol=0`` so both run exactly ``--iters`` iterations), fit times divided by the iterations:

* digits: scikit-learn's 1797 x 64 (pixels / 16), 10 classes;
* LFW sqrt-LBP -> WPCA-100: View 1 training people with 4 images or more (4964 images, 430
  identities), uniform LBP (8, 1) on 10 x 10 blocks, square root, WPCA to 100 dimensions.

scikit-learn runs in float64 (its default); metricfit in float64 and float32. Rounds alternate
the estimators so noise hits all alike; the table gives medians and the paired ratio (median
of per-round ratios). Also: the float64 trajectories are compared (same matrices after the
same iterations), one cost-and-gradient evaluation against its GEMM bound (the products of
the linear path, n^2 k + n^2 d + O(n d^2) multiply-adds, timed alone), the numba compile time
(empty cache, subprocess), and the peak RSS (VmHWM) of a fresh subprocess fitting 20,000 x 100
points.

    python benchmarks/bench_nca.py [--iters 10] [--lfw-iters 3] [--rounds 3] [--threads 1]
        [--no-lfw] [--no-memory | --memory-only] [--json benchmarks/results/bench_nca.json]

(``--memory-only`` writes ``bench_nca_memory.json`` unless ``--json`` is given.)

``time_iteration(threads)`` and ``time_sklearn_iteration(threads)`` (median seconds per
iteration on digits, no data folder) are the scaling harness's hooks (``benchmarks/scaling.py``).

The machine is shared: read the ratios of one run, not absolute times across runs.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "bench_nca.json"
REPO = Path(__file__).resolve().parents[1]

MEMORY_SNIPPET = r"""
import json, resource, sys, time, warnings
import numpy as np
from metricfit import NCA


def high_water_mb():
    # VmHWM: this process's peak RSS (ru_maxrss would carry the parent's peak over exec)
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


n, d, n_ids, iters = 20000, 100, 2000, int(sys.argv[1])
rng = np.random.default_rng(0)
y = rng.integers(0, n_ids, size=n)
X = rng.normal(size=(n_ids, d))[y] + rng.normal(size=(n, d))
X /= np.sqrt(2 * d)
base = high_water_mb()
t0 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    est = NCA(init="identity", max_iter=iters, tol=0.0).fit(X, y)
seconds = time.perf_counter() - t0
print(json.dumps({"n": n, "d": d, "n_identities": n_ids, "iterations": est.n_iter_,
                  "fit_seconds": seconds, "peak_rss_before_fit_mb": base,
                  "peak_rss_mb": high_water_mb()}))
"""

COMPILE_SNIPPET = r"""
import json, time
import numpy as np
from metricfit.losses import nca
rng = np.random.default_rng(0)
out = {}
for dtype in ("float64", "float32"):
    Z = rng.normal(size=(50, 4)).astype(dtype)
    t0 = time.perf_counter()
    nca.cost_grad_embedded(Z, rng.integers(0, 5, 50).astype(np.int64))
    out[dtype] = time.perf_counter() - t0
print(json.dumps(out))
"""


def log(*args):
    print(*args, flush=True)


def environment():
    import numba
    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    pools = [{k: p.get(k) for k in ("user_api", "internal_api", "num_threads", "version",
                                    "architecture")} for p in threadpool_info()]
    return {"python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "sklearn": sklearn.__version__,
            "numba": numba.__version__, "cpu_count": os.cpu_count(),
            "load_average": os.getloadavg(), "threadpools": pools}


def load_digits_data():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return X / 16.0, y


def load_lfw_data(min_images=4, n_components=100):
    from metricfit import WPCA
    from metricfit.datasets import load_lfw
    from metricfit.features import LBP, SquareRoot

    lfw = load_lfw()
    train = np.isin(lfw.person, lfw.people_devtrain)
    counts = np.bincount(lfw.person[train], minlength=lfw.names.size)
    keep = train & (counts[lfw.person] >= min_images)
    vectors = SquareRoot().fit_transform(LBP(block_size=(10, 10)).fit_transform(lfw.images[keep]))
    X = WPCA(n_components=n_components).fit_transform(vectors.astype(np.float64))
    return np.ascontiguousarray(X), lfw.person[keep]


def fit_ours(X, y, iters, dtype):
    import warnings

    from metricfit import NCA

    est = NCA(init="identity", max_iter=iters, tol=0.0)
    Xd = X.astype(dtype)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Xd, y)
    return time.perf_counter() - t0, est


def fit_sklearn(X, y, iters):
    from sklearn.neighbors import NeighborhoodComponentsAnalysis

    est = NeighborhoodComponentsAnalysis(init=np.eye(X.shape[1]), max_iter=iters, tol=0.0)
    t0 = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - t0, est


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def time_iteration(threads, iters=10, repeats=3, dtype=np.float64):
    """Median seconds per L-BFGS iteration of ``metricfit.NCA`` on digits (1797 x 64, identity
    start, ``tol=0``) under ``metricfit.threads(threads)``: a hook of ``benchmarks/scaling.py``."""
    import metricfit

    X, y = load_digits_data()
    with metricfit.threads(threads):
        fit_ours(X, y, 2, dtype)  # compile / warm-up
        return median_time(lambda: fit_ours(X, y, iters, dtype), repeats) / iters


def time_sklearn_iteration(threads, iters=10, repeats=3):
    """Median seconds per iteration of scikit-learn's NeighborhoodComponentsAnalysis on digits
    (float64, identity start, ``tol=0``) with BLAS on ``threads`` threads."""
    import metricfit

    X, y = load_digits_data()
    with metricfit.threads(threads):
        fit_sklearn(X, y, 2)
        return median_time(lambda: fit_sklearn(X, y, iters), repeats) / iters


def evaluation_vs_bound(X, y, dtype, repeats=5):
    """One cost-and-gradient call at A = I against the GEMMs of the linear path alone (the
    bound): ``Z = X A^T``, the Gram ``Z Z^T``, ``W X``, ``X^T (W X)``, ``X^T diag(v) X``."""
    from metricfit.losses import nca

    X = X.astype(dtype)
    codes = np.unique(y, return_inverse=True)[1].astype(np.int64)
    A = np.eye(X.shape[1], dtype=dtype)
    W = np.ones((X.shape[0], X.shape[0]), dtype=dtype)  # stands for the n x n weights
    v = np.ones(X.shape[0], dtype=dtype)
    nca.cost_grad(A, X, codes)

    def bound():
        Z = X @ A.T
        Z @ Z.T
        WX = W @ X
        X.T @ WX
        (X.T * v) @ X

    t_eval = median_time(lambda: nca.cost_grad(A, X, codes), repeats)
    t_bound = median_time(bound, repeats)
    return {"evaluation_s": t_eval, "gemm_bound_s": t_bound, "ratio": t_eval / t_bound}


def bench_dataset(name, X, y, iters, rounds):
    log(f"\n{name}: n = {X.shape[0]}, d = k = {X.shape[1]}, {np.unique(y).size} identities, "
        f"{iters} iterations, {rounds} rounds")
    fit_ours(X[:200], y[:200], 2, np.float64)  # compile / load the kernels untimed
    fit_ours(X[:200], y[:200], 2, np.float32)
    times = {"sklearn_f64": [], "ours_f64": [], "ours_f32": []}
    for r in range(rounds):
        t_sk, sk = fit_sklearn(X, y, iters)
        t64, ours64 = fit_ours(X, y, iters, np.float64)
        t32, ours32 = fit_ours(X, y, iters, np.float32)
        for key, t in zip(times, (t_sk, t64, t32), strict=True):
            times[key].append(t / iters)
        log(f"  round {r}: per iteration sklearn f64 {1e3 * t_sk / iters:8.1f} ms, metricfit "
            f"f64 {1e3 * t64 / iters:8.1f} ms, f32 {1e3 * t32 / iters:8.1f} ms")
    diff = (np.max(np.abs(ours64.components_ - sk.components_))
            / np.max(np.abs(sk.components_)))
    med = {k: float(np.median(v)) for k, v in times.items()}
    paired = {k: float(np.median(np.array(times["sklearn_f64"]) / np.array(times[k])))
              for k in ("ours_f64", "ours_f32")}
    return {"n": int(X.shape[0]), "d": int(X.shape[1]), "identities": int(np.unique(y).size),
            "iterations": iters, "n_iter_ours_f64": ours64.n_iter_,
            "n_iter_ours_f32": ours32.n_iter_, "n_iter_sklearn_callbacks": int(sk.n_iter_),
            "per_iteration_s": med, "per_iteration_all_rounds_s": times,
            "speedup_vs_sklearn_f64": paired,
            "f64_components_max_rel_diff_vs_sklearn": float(diff),
            "evaluation_vs_gemm_bound": {dt: evaluation_vs_bound(X, y, dt)
                                         for dt in ("float64", "float32")}}


def run_snippet(snippet, *args, env=None):
    proc = subprocess.run([sys.executable, "-c", snippet, *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, env=env)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child_env(threads, **extra):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if threads:
        env.update(OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                   MKL_NUM_THREADS=str(threads))
    env.update(extra)
    return env


def print_table(results):
    log("\nper L-BFGS iteration (median over rounds); speed-up = paired median of "
        "sklearn f64 / metricfit")
    log(f"{'data':<10}{'n x d':>12}{'sklearn f64':>14}{'ours f64':>11}{'ours f32':>11}"
        f"{'x f64':>8}{'x f32':>8}{'eval/bound f64':>16}{'f32':>6}")
    for name, r in results.items():
        t, s, b = r["per_iteration_s"], r["speedup_vs_sklearn_f64"], r["evaluation_vs_gemm_bound"]
        log(f"{name:<10}{r['n']:>7} x {r['d']:<3}{1e3 * t['sklearn_f64']:>12.1f}ms"
            f"{1e3 * t['ours_f64']:>9.1f}ms{1e3 * t['ours_f32']:>9.1f}ms"
            f"{s['ours_f64']:>7.2f}x{s['ours_f32']:>7.2f}x"
            f"{b['float64']['ratio']:>15.2f}x{b['float32']['ratio']:>5.2f}x")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--lfw-iters", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (0: library default)")
    p.add_argument("--memory-iters", type=int, default=1)
    p.add_argument("--no-lfw", action="store_true")
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--memory-only", action="store_true")
    p.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = p.parse_args(argv)

    import scipy.linalg.blas  # noqa: F401  (SciPy's own OpenBLAS, used by the kernel's gemm)
    import sklearn.neighbors  # noqa: F401
    from threadpoolctl import threadpool_limits

    if args.threads:
        threadpool_limits(args.threads)
    env = environment()
    for pool in env["threadpools"]:
        log(f"threadpool: {pool['user_api']} {pool['internal_api']} {pool['version']} "
            f"({pool['architecture']}), {pool['num_threads']} threads")
    log(f"numpy {env['numpy']}, scipy {env['scipy']}, scikit-learn {env['sklearn']}, numba "
        f"{env['numba']}; {env['cpu_count']} CPUs, load average {env['load_average']}")

    if args.memory_only:
        memory = run_snippet(MEMORY_SNIPPET, args.memory_iters, env=child_env(args.threads))
        log(f"memory, 20,000 x 100 float64 fit ({args.memory_iters} iterations): {memory}")
        path = args.json if args.json != DEFAULT_JSON else DEFAULT_JSON.with_name(
            "bench_nca_memory.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"environment": env, "memory": memory}, indent=2,
                                   allow_nan=False))
        return log(f"JSON: {path}")
    with tempfile.TemporaryDirectory() as cache:
        compile_s = run_snippet(COMPILE_SNIPPET, env=child_env(args.threads,
                                                               NUMBA_CACHE_DIR=cache))
        cached_s = run_snippet(COMPILE_SNIPPET, env=child_env(args.threads,
                                                              NUMBA_CACHE_DIR=cache))
    log(f"numba first call, empty cache: {compile_s}; from the cache: {cached_s}")

    results = {"digits": bench_dataset("digits", *load_digits_data(), args.iters, args.rounds)}
    if not args.no_lfw:
        try:
            data = load_lfw_data()
        except FileNotFoundError as exc:
            log(f"LFW skipped: {exc}")
        else:
            results["lfw"] = bench_dataset("lfw sqrt-LBP WPCA-100", *data, args.lfw_iters,
                                           args.rounds)
    print_table(results)
    for name, r in results.items():
        log(f"{name}: float64 components after {r['iterations']} iterations differ from "
            f"scikit-learn's by {r['f64_components_max_rel_diff_vs_sklearn']:.1e} (max, relative)")

    memory = None
    if not args.no_memory:
        memory = run_snippet(MEMORY_SNIPPET, args.memory_iters, env=child_env(args.threads))
        log(f"\nmemory, 20,000 x 100 float64 fit ({args.memory_iters} iterations): {memory}")
        log(f"scikit-learn would hold n x n float64 matrices of {20000 ** 2 * 8 / 1e9:.1f} GB "
            "each (not run)")

    out = {"environment": env, "args": {k: str(v) for k, v in vars(args).items()},
           "compile_s": compile_s, "cached_first_call_s": cached_s, "results": results,
           "memory": memory}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2, allow_nan=False))
    log(f"\nJSON: {args.json}")


if __name__ == "__main__":
    main()
