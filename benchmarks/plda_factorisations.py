"""PLDA's EM factorisations on several threads (issue 27): SciPy's f2py LAPACK wrappers hold
the GIL, the same routines through ``scipy.linalg.cython_lapack`` (``metricfit.backend.
_nogil_lapack``) do not, and from which d two factorisations side by side pay for the pool's
hand-off.

1. ``potrf`` + ``potri`` of a d x d matrix, ``--calls`` times on one thread, then as many on
   each of two Python threads at once (BLAS on one thread): f2py wrappers and
   ``cholesky_inverse``. Without the GIL the two threads take the time of one.
2. ``metricfit.backend.plda_em.factorisations`` (one group and W, as in an EM iteration)
   at 1 and 2 package threads for several d, median of ``--repeats`` calls, with
   ``TOGETHER_MIN_DIM`` set to 1 so that every size runs side by side.
3. ``--iteration``: one EM iteration (``bench_plda``'s 1e5 x 256, 1e4 identities of 10; with
   ``--counts lfw``, counts shaped like LFW's) at 1 and 2 threads, a fit of 41 iterations
   over 41, median of 7 fits. It runs on any tree (``PYTHONPATH=<tree>``, for before / after
   pairs), and prints nothing else.
4. ``--phases``: the same iteration's parts (the factorisations, the groups' GEMMs and
   sums, the symmetrisations), medians of 200, at 1 and 2 threads.

    python benchmarks/plda_factorisations.py [--d 256] [--calls 200] [--repeats 300]
    PYTHONPATH=<tree> python benchmarks/plda_factorisations.py --iteration
    python benchmarks/plda_factorisations.py --phases
"""

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
import numpy as np
from scipy.linalg import lapack
from threadpoolctl import threadpool_info

from metricfit.parallel import blas_threads

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_plda  # noqa: E402


def spd(d, seed=0):
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((d, d))
    return Q @ Q.T / d + np.eye(d)


def f2py_inverse(S):
    factor, _ = lapack.dpotrf(S, lower=1, clean=0)
    return lapack.dpotri(factor, lower=1)


def serial_and_two_threads(fn, S, calls):
    """Seconds for ``calls`` calls on this thread, then for ``calls`` on each of two threads
    at once."""
    def work():
        for _ in range(calls):
            fn(S)
    t0 = time.perf_counter()
    work()
    serial = time.perf_counter() - t0
    pair = [threading.Thread(target=work) for _ in range(2)]
    t0 = time.perf_counter()
    for thread in pair:
        thread.start()
    for thread in pair:
        thread.join()
    return serial, time.perf_counter() - t0


def median_ms(fn, repeats):
    return 1e3 * bench_plda.median_time(fn, repeats)


def crossover(sizes, repeats):
    """``factorisations`` of one group and W at 1 and 2 package threads, ms, per d."""
    from metricfit.backend import plda_em

    rows = []
    saved = plda_em.TOGETHER_MIN_DIM
    plda_em.TOGETHER_MIN_DIM = 1
    try:
        for d in sizes:
            B, W = spd(d, 1), spd(d, 2)
            stats = plda_em.EMGroups([(10.0, 100, np.eye(d))], 1000.0, 100, np.eye(d),
                                     np.eye(d))
            times = []
            for threads in (1, 2):
                with metricfit.threads(threads), blas_threads(1):
                    times.append(median_ms(
                        lambda B=B, W=W, stats=stats: plda_em.factorisations(
                            np, B, W, stats, within=True), repeats))
            rows.append((d, *times))
    finally:
        plda_em.TOGETHER_MIN_DIM = saved
    return rows


def em_statistics(counts="equal"):
    """Class statistics, d = 256: ``equal``, bench_plda's 1e5 points, 1e4 identities of 10
    (one batched group); ``lfw``, counts shaped like LFW's (779 identities of 2, 291 of 3,
    187 of 4, 423 of 5-530: two batched groups and 610 classes in the basis)."""
    if counts == "equal":
        X, codes = bench_plda.synthetic(100_000, 256, per_identity=10)
        return bench_plda.core.class_statistics(X, codes)
    rng = np.random.default_rng(0)
    sizes = np.r_[np.full(779, 2), np.full(291, 3), np.full(187, 4),
                  np.minimum(5 + rng.geometric(0.08, size=423), 530)]
    codes = np.repeat(np.arange(sizes.size), sizes)
    X = 2.0 * rng.standard_normal((sizes.size, 256))[codes]
    X += rng.standard_normal((codes.size, 256))
    return bench_plda.core.class_statistics(X, codes)


def iteration_ms(threads, statistics_, fits=7, iterations=41):
    """One EM iteration, ms: a fit of ``iterations`` over ``iterations``, median of ``fits``."""
    counts, means, _, scatter = statistics_
    with metricfit.threads(threads):
        bench_plda._em(counts, means, scatter, 2)
        times = []
        for _ in range(fits):
            t0 = time.perf_counter()
            bench_plda._em(counts, means, scatter, iterations)
            times.append((time.perf_counter() - t0) / iterations)
    return 1e3 * statistics.median(times)


def phases_ms(threads, statistics_, repeats=200):
    """Medians (ms) of an EM iteration's parts at (B, W) near the data's."""
    from metricfit.backend import plda_em

    counts, means, _, scatter = statistics_
    stats = bench_plda.core._em_statistics(counts, means, scatter)[0]
    B, W = spd(256, 1), spd(256, 2)
    parts = {
        "factorisations": lambda: plda_em.factorisations(np, B, W, stats, within=True),
        "GEMMs and sums": lambda: plda_em.grouped_terms(np, B, W, stats, True, factors),
        "symmetrisations": lambda: plda_em.symmetric_means(between, stats.C, scatter,
                                                           within, stats.N),
    }
    with metricfit.threads(threads):
        factors = plda_em.factorisations(np, B, W, stats)
        between, within, _ = plda_em.grouped_terms(np, B, W, stats, True, factors)
        return {name: median_ms(fn, repeats) for name, fn in parts.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=256)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 64, 96, 128, 192, 256])
    parser.add_argument("--iteration", action="store_true")
    parser.add_argument("--phases", action="store_true")
    parser.add_argument("--counts", choices=["equal", "lfw"], default="equal",
                        help="--iteration's class counts (see em_statistics)")
    args = parser.parse_args(argv)
    if args.iteration:
        stats = em_statistics(args.counts)
        one, two = iteration_ms(1, stats), iteration_ms(2, stats)
        print(f"EM iteration, {args.counts} counts, d = 256: 1 thread {one:.2f} ms, 2 threads "
              f"{two:.2f} ms, speed-up {one / two:.2f} ({metricfit.__file__})")
        return
    if args.phases:
        stats = em_statistics()
        for threads in (1, 2, 1, 2):
            print(threads, "thread(s):", ", ".join(
                f"{k} {v:.3f}" for k, v in phases_ms(threads, stats).items()), "ms")
        return
    from metricfit.backend import _nogil_lapack as nogil

    print("BLAS:", ", ".join(f"{i['internal_api']} {i['version']} x{i['num_threads']}"
                             for i in threadpool_info() if i["user_api"] == "blas"))
    print(f"cholesky_inverse without the GIL: {nogil.gil_free()}")
    S = spd(args.d)
    with blas_threads(1):
        for name, fn in (("f2py (GIL held)", f2py_inverse),
                         ("cython_lapack via ctypes", nogil.cholesky_inverse)):
            for _ in range(2):
                serial, pair = serial_and_two_threads(fn, S, args.calls)
                print(f"{name:26s} d = {args.d}: {args.calls} calls on one thread "
                      f"{serial:.3f} s, {args.calls} on each of two threads {pair:.3f} s")
    print("\nfactorisations(one group and W), ms: d, 1 thread, 2 threads, speed-up")
    for d, one, two in crossover(args.sizes, args.repeats):
        print(f"{d:5d} {one:8.3f} {two:8.3f} {one / two:6.2f}")


if __name__ == "__main__":
    main()
