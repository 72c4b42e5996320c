"""NCA's and MLKR's evaluations at a start and at a learned scale, and NumPy's exp on skipped
entries: what the softmax losses' kernel entries cost.

Both losses turn a block of Gram rows into ``exp(min_l d_il - d_ij)`` with the entries under
the dtype's floor skipped (:mod:`metricfit.losses.nca`, :mod:`metricfit.losses.mlkr`). Two
measurements:

- ``exp``: ``np.exp`` in place on 128 x 1,797 entries (one unit of rows on digits), half of
  them in [-50, 0] and half set to the value a skipped entry would hold: -inf, -1000, -708.5,
  -707.9, the floor minus 0.1 (what the kernels now write) or -600; float64 and float32. One
  thread; medians of ``--repeats``.
- ``losses``: one cost-and-gradient call of NCA (digit codes) and of MLKR (the digit as the
  target) with the linear map ``A = s I`` on digits (standardised, PCA to 30-d), ``s`` 1 (a
  start: few entries skipped) and 3 (distances 9 times larger, as a learned metric spreads
  them: in float32 most entries skipped), float64 and float32, at 1 and at 2 threads
  (``metricfit.threads``) alternated call by call; medians in ms and the speed-up. Set the
  thread variables (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``NUMBA_NUM_THREADS``,
  ``METRICFIT_NUM_THREADS``) to 2 first. ``--save FILE.npz`` keeps the costs and gradients
  (``--compare A B`` prints the largest relative difference of each), for two trees run with
  ``PYTHONPATH=<tree>``.

- ``units``: how many rows a work unit should hold where a block has few of them (n points
  above about 2,300: a block of b rows gives ``ceil(b / 128)`` units, at n = 8,000 five, so on
  16 cores at most five busy threads). NCA and MLKR on ``--n`` random 30-d points (``A = 0.5
  I``, float64, default blocks), ``UNIT_ROWS`` 128, 64 and 32 (set on both modules), at each
  of ``--threads`` (``metricfit.threads``; start the process with the thread variables at
  the largest); medians of ``--repeats`` (at least 3) in ms. On the 2-core machine, n =
  8,000: smaller units cost (each unit's GEMMs pack Z and X again); this is for a machine
  with many cores to decide.

    python benchmarks/softmax_losses.py [exp] [losses] [--repeats 15] [--save out.npz]
    python benchmarks/softmax_losses.py units [--n 8000] [--threads 1 4 16] [--repeats 3]
    python benchmarks/softmax_losses.py --compare before.npz after.npz
"""

import argparse
import time

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
import numpy as np
from threadpoolctl import threadpool_info

UNIT = (128, 1797)


def exp_paths(repeats):
    rng = np.random.default_rng(0)
    kept = -rng.random(UNIT) * 50
    skipped = rng.random(UNIT) < 0.5
    for dtype in (np.float64, np.float32):
        floor = float(np.log(np.finfo(dtype).tiny)) + 1.0
        cells = []
        for label, value in (("-inf", -np.inf), ("-1000", -1000.0), ("-708.5", -708.5),
                             ("-707.9", -707.9), ("floor-0.1", floor - 0.1), ("-600", -600.0)):
            a = np.where(skipped, value, kept).astype(dtype)
            times = []
            for _ in range(repeats + 1):
                b = a.copy()
                t0 = time.perf_counter()
                with np.errstate(under="ignore", over="ignore"):
                    np.exp(b, out=b)
                times.append(time.perf_counter() - t0)
            cells.append(f"{label} {1e3 * np.median(times[1:]):.3f}")
        print(f"exp {np.dtype(dtype).name:8s} ms: " + "  ".join(cells))


def _digits():
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    return PCA(30, random_state=0).fit_transform(StandardScaler().fit_transform(X)), y


def losses(repeats, save=None):
    from metricfit.losses import mlkr, nca

    X, y = _digits()
    results = {}
    for loss in ("nca", "mlkr"):
        for dtype in (np.float64, np.float32):
            for scale in (1.0, 3.0):
                A, Xd = (scale * np.eye(30)).astype(dtype), X.astype(dtype)
                target = y.astype(np.int64) if loss == "nca" else y.astype(dtype)
                cost_grad = nca.cost_grad if loss == "nca" else mlkr.cost_grad
                times = {1: [], 2: []}
                for rep in range(repeats + 1):
                    for n in (1, 2) if rep % 2 else (2, 1):
                        with metricfit.threads(n):
                            t0 = time.perf_counter()
                            J, G = cost_grad(A, Xd, target)
                            times[n].append(time.perf_counter() - t0)
                one, two = (1e3 * float(np.median(times[n][1:])) for n in (1, 2))
                name = f"{loss}_{np.dtype(dtype).name}_{scale:g}I"
                results[name + "_J"], results[name + "_G"] = J, G
                print(f"{name:18s} 1 thread {one:7.2f} ms  2 threads {two:7.2f} ms  "
                      f"({one / two:.2f}x)")
    if save:
        np.savez(save, **results)


def units(n, counts, repeats):
    from metricfit.losses import mlkr, nca

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 30))
    codes, y, A = rng.integers(0, 50, n).astype(np.int64), rng.normal(size=n), 0.5 * np.eye(30)
    kept = nca.UNIT_ROWS, mlkr.UNIT_ROWS
    try:
        for rows in (128, 64, 32):
            nca.UNIT_ROWS = mlkr.UNIT_ROWS = rows
            b = nca.default_block_rows(n, 8)
            cells = []
            for threads in counts:
                with metricfit.threads(threads):
                    for name, call in (("nca", lambda: nca.cost_grad(A, X, codes)),
                                       ("mlkr", lambda: mlkr.cost_grad(A, X, y))):
                        times = []
                        for _ in range(max(3, repeats)):
                            t0 = time.perf_counter()
                            call()
                            times.append(time.perf_counter() - t0)
                        cells.append(f"{name} {threads}t {1e3 * np.median(times[1:]):.1f}")
            print(f"n {n}, units of {rows} rows ({-(-b // rows)} a block of {b}): "
                  + "  ".join(cells), flush=True)
    finally:
        nca.UNIT_ROWS, mlkr.UNIT_ROWS = kept


def compare(before, after):
    a, b = np.load(before), np.load(after)
    for key in a.files:
        scale = float(np.max(np.abs(a[key]))) or 1.0
        print(f"{key:20s} largest difference / largest entry: "
              f"{float(np.max(np.abs(a[key] - b[key]))) / scale:.2e}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="*", help="exp, losses, units (default: exp losses)")
    parser.add_argument("--n", type=int, default=8000, help="points for units")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="for units")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--save")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if set(args.what) - {"exp", "losses", "units"}:
        parser.error(f"what must be exp, losses or units, not {args.what}")
    if args.compare:
        compare(*args.compare)
        return
    blas = [f"{p['internal_api']} {p['version']} x{p['num_threads']}" for p in threadpool_info()
            if p["user_api"] == "blas"]
    print(f"numpy {np.__version__}; blas {', '.join(blas)}; metricfit threads "
          f"{metricfit.get_threads()}")
    for what in args.what or ["exp", "losses"]:
        if what == "exp":
            exp_paths(args.repeats)
        elif what == "losses":
            losses(args.repeats, args.save)
        else:
            units(args.n, args.threads, args.repeats)


if __name__ == "__main__":
    main()
