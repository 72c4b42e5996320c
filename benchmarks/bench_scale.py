"""Scale benchmark: time per L-BFGS iteration and peak RSS versus the number of pairs.

TSML (k = d = 256, float32, lam = 1e-3, identity start) on index pairs over 1e5 points, from
1e4 to 1e7 pairs, with the points (and index) held

- ``memory``: in NumPy arrays (``np.load``);
- ``memmap``: in ``numpy.memmap`` files (``np.load(mmap_mode='r')``), read in ~32 MB blocks;
- ``dask``: in Dask arrays read on the workers (``da.from_npy_stack``, memory-mapped there),
  the gradient a map-reduce on a ``distributed.LocalCluster`` (2 workers x 1 thread);
- ``pairs3d``: the same pairs gathered into an (n_pairs, 2, 256) float32 array in memory,
  the classic path (TSML's prepared ``U = X1 + s X2`` objective), for the comparison.

Every configuration runs in a fresh subprocess (``--one``), so its peak RSS
(``getrusage(RUSAGE_SELF).ru_maxrss``) is its own; for ``dask`` the workers' peaks are read
the same way on each worker. Iteration times come from the estimator's ``callback`` (one
timestamp per L-BFGS iteration): "s/iter" is the median interval between consecutive
iterations (the first iteration, which includes validation, persisting and the numba
compile, is reported apart as "setup", the threshold calibration after the last iteration as
"calibrate"). RSS counts the resident pages of the memory-mapped files too (reclaimable
page cache: at most their size, 100 MB of points and 160 MB of index here).

Data (written once to ``--workdir``): 1e4 identities x 10 points, ``x = mu_c + noise``, and
pairs ``i`` (i even: a similar pair, i odd: a random pair), int64 indices; ``n`` pairs are
the first n rows, so the sizes nest. BLAS runs with ``--threads`` threads (default 1: under
contention 2-thread OpenBLAS stalls, see README).

    python benchmarks/bench_scale.py [--pairs 1e4 1e5 1e6 1e7] [--modes memory memmap dask
        pairs3d] [--pairs3d-max 1e6] [--max-iter 6] [--threads 1] [--workdir /tmp/scale/data]
        [--json benchmarks/results/bench_scale.json] [--plot PNG] [--quick]
    python benchmarks/bench_scale.py --losses 1e6 [--threads ...]   # every linear loss

``--losses N`` times one cost-and-gradient evaluation of TSML, CSML, DDML (A = I, k = 256) and
LDML (M = I, b = 1) on N index pairs and on the same pairs gathered into (N, 2, 256) arrays
(each loss's prepared objective), in one process with the BLAS threads of the environment.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_JSON = HERE / "results" / "bench_scale.json"
MODES = ["memory", "memmap", "dask", "pairs3d"]
PER_IDENTITY = 10
WRITE_BLOCK = 1_000_000


def data_dir(workdir, n_points, d, n_pairs):
    return workdir / f"{n_points}x{d}_{n_pairs}"


def make_data(workdir, n_points, d, n_pairs, seed=0, dask_stack=True):
    """points.npy (float32), index.npy (int64), y.npy (int8); Dask npy stacks of both."""
    workdir = data_dir(workdir, n_points, d, n_pairs)
    workdir.mkdir(parents=True, exist_ok=True)
    done = workdir / ("done_dask" if dask_stack else "done")
    if done.exists():
        return
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(n_points // PER_IDENTITY, d)).astype(np.float32)
    points = np.lib.format.open_memmap(workdir / "points.npy", "w+", np.float32, (n_points, d))
    for start in range(0, n_points, WRITE_BLOCK):
        rows = np.arange(start, min(start + WRITE_BLOCK, n_points))
        points[rows] = means[rows // PER_IDENTITY] + rng.normal(size=(rows.size, d))
    index = np.lib.format.open_memmap(workdir / "index.npy", "w+", np.int64, (n_pairs, 2))
    y = np.lib.format.open_memmap(workdir / "y.npy", "w+", np.int8, (n_pairs,))
    for start in range(0, n_pairs, WRITE_BLOCK):
        m = min(WRITE_BLOCK, n_pairs - start)
        first = rng.integers(0, n_points, m)
        second = rng.integers(0, n_points, m)
        similar = (np.arange(start, start + m) % 2) == 0
        second[similar] = (first[similar] // PER_IDENTITY) * PER_IDENTITY + rng.integers(
            0, PER_IDENTITY, similar.sum())
        index[start:start + m] = np.c_[first, second]
        y[start:start + m] = np.where(first // PER_IDENTITY == second // PER_IDENTITY, 1, -1)
    points.flush(), index.flush(), y.flush()
    del points, index, y
    if dask_stack:
        import dask.array as da

        da.to_npy_stack(workdir / "points_stack",
                        da.from_array(np.load(workdir / "points.npy", mmap_mode="r"),
                                      chunks=(n_points // 4, d)))
        da.to_npy_stack(workdir / "index_stack",
                        da.from_array(np.load(workdir / "index.npy", mmap_mode="r"),
                                      chunks=(WRITE_BLOCK, 2)))
    done.touch()


def _peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _load(mode, workdir, n_pairs):
    y = np.load(workdir / "y.npy")[:n_pairs]
    if mode == "memory":
        return np.load(workdir / "points.npy"), np.load(workdir / "index.npy")[:n_pairs], y
    if mode == "memmap":
        return (np.load(workdir / "points.npy", mmap_mode="r"),
                np.load(workdir / "index.npy", mmap_mode="r")[:n_pairs], y)
    if mode == "dask":
        import dask.array as da

        return (da.from_npy_stack(workdir / "points_stack", mmap_mode="r"),
                da.from_npy_stack(workdir / "index_stack", mmap_mode="r")[:n_pairs], y)
    points, index = np.load(workdir / "points.npy"), np.load(workdir / "index.npy")[:n_pairs]
    return None, np.stack([points[index[:, 0]], points[index[:, 1]]], axis=1), y


def run_one(mode, n_pairs, args):
    """One fit in this (fresh) process; prints ``RESULT {json}``."""
    from metricfit import TSML

    client = cluster = None
    if mode == "dask":
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None, memory_limit=0)
        client = Client(cluster)
    t_load = time.perf_counter()
    points, pairs, y = _load(mode, args.workdir, n_pairs)
    t_load = time.perf_counter() - t_load
    stamps = []
    est = TSML(max_iter=args.max_iter, tol=0.0, preprocessor=points,
               callback=lambda A, n_iter: stamps.append(time.perf_counter()))
    start = time.perf_counter()
    est.fit(pairs, y)
    end = time.perf_counter()
    steps = np.diff(stamps)
    result = {
        "mode": mode, "n_pairs": n_pairs, "n_iter": est.n_iter_,
        "s_per_iter": float(np.median(steps)) if steps.size else None,
        "iter_times": steps.tolist(), "setup_s": stamps[0] - start if stamps else None,
        "calibrate_s": end - stamps[-1] if stamps else None, "fit_s": end - start,
        "load_s": t_load, "peak_rss": _peak_rss(),
    }
    if client is not None:
        result["worker_peak_rss"] = sorted(client.run(_peak_rss).values())
        client.close()
        cluster.close()
    print("RESULT " + json.dumps(result), flush=True)


def compare_losses(n_pairs, args):
    """One cost-and-gradient evaluation of each linear loss, index pairs vs the same pairs
    gathered (n_pairs, 2, d), in this process; prints ``RESULT {json}``."""
    from metricfit.losses import csml, ddml, ldml, tsml

    points, index, y = _load("memory", args.workdir, n_pairs)
    d = points.shape[1]
    rows = {}
    for name, module in [("tsml", tsml), ("csml", csml), ("ddml", ddml), ("ldml", ldml)]:
        theta = ldml.pack(np.eye(d), 1.0) if name == "ldml" else np.eye(d, dtype=np.float32)
        timings = {}
        for layout in ("index", "pairs3d"):
            if layout == "index":
                f = module.index_objective(points, index, y)
            else:
                f = module.objective(points[index[:, 0]], points[index[:, 1]], y)
            f(theta)  # compile / warm up
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                f(theta)
                times.append(time.perf_counter() - start)
            timings[layout] = float(np.median(times))
            del f
        rows[name] = timings
        print(f"{name}: index {timings['index']:.3f} s, 3-D {timings['pairs3d']:.3f} s per "
              f"evaluation ({timings['pairs3d'] / timings['index']:.2f}x)", flush=True)
    print("RESULT " + json.dumps({"mode": "losses", "n_pairs": n_pairs, "evaluation_s": rows}),
          flush=True)


def run_all(args):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads),
               OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               NUMBA_NUM_THREADS=str(max(1, args.threads)))
    results = []
    for n_pairs in args.pairs:
        for mode in args.modes:
            if mode == "pairs3d" and n_pairs > args.pairs3d_max:
                continue
            workdir = data_dir(args.workdir, args.points, args.dim, max(args.pairs))
            command = [sys.executable, __file__, "--one", mode, str(n_pairs),
                       "--workdir", str(workdir), "--max-iter", str(args.max_iter)]
            proc = subprocess.run(command, env=env, capture_output=True, text=True,
                                  timeout=args.timeout)
            lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
            if proc.returncode or not lines:
                print(f"{mode} {n_pairs}: FAILED\n{proc.stderr[-3000:]}", flush=True)
                results.append({"mode": mode, "n_pairs": n_pairs, "error": proc.stderr[-3000:]})
                continue
            results.append(json.loads(lines[-1][len("RESULT "):]))
            print(_row(results[-1]), flush=True)
    return results


def _row(r):
    workers = r.get("worker_peak_rss")
    extra = f"  workers {max(workers) / 2**20:7.0f} MB" if workers else ""
    return (f"{r['mode']:8s} {r['n_pairs']:>9.0e} pairs  {r['s_per_iter']:8.3f} s/iter  "
            f"(setup {r['setup_s']:.2f} s, calibrate {r['calibrate_s']:.2f} s, "
            f"{r['n_iter']} it)  peak RSS {r['peak_rss'] / 2**20:7.0f} MB{extra}")


def _slope(results, mode):
    """Log-log slope of s/iter over the two largest pair counts of a mode."""
    rows = sorted((r["n_pairs"], r["s_per_iter"]) for r in results
                  if r["mode"] == mode and r.get("s_per_iter"))
    if len(rows) < 2:
        return None
    (n1, t1), (n2, t2) = rows[-2:]
    return float(np.log(t2 / t1) / np.log(n2 / n1))


def table(results, modes):
    """Markdown: pairs vs s/iter and peak RSS per mode; log-log slopes; index vs 3-D."""
    ok = [r for r in results if "error" not in r]
    head = "| pairs | " + " | ".join(f"{m} s/iter | {m} peak RSS" for m in modes) + " |"
    lines = [head, "|" + "---|" * (1 + 2 * len(modes))]
    for n in sorted({r["n_pairs"] for r in ok}):
        cells = []
        for m in modes:
            r = next((r for r in ok if r["mode"] == m and r["n_pairs"] == n), None)
            if r is None:
                cells += ["-", "-"]
                continue
            rss = r["peak_rss"] / 2**20
            if r.get("worker_peak_rss"):
                rss_text = f"{rss:.0f} MB + 2 x <= {max(r['worker_peak_rss']) / 2**20:.0f} MB"
            else:
                rss_text = f"{rss:.0f} MB"
            cells += [f"{r['s_per_iter']:.3f}", rss_text]
        lines.append(f"| {n:.0e} | " + " | ".join(cells) + " |")
    slopes = {m: _slope(ok, m) for m in modes}
    lines.append("")
    lines.append("log-log slope of s/iter over the two largest sizes: " + ", ".join(
        f"{m} {s:.2f}" for m, s in slopes.items() if s is not None))
    for n in sorted({r["n_pairs"] for r in ok if r["mode"] == "pairs3d"}):
        idx = next((r for r in ok if r["mode"] == "memory" and r["n_pairs"] == n), None)
        vec = next(r for r in ok if r["mode"] == "pairs3d" and r["n_pairs"] == n)
        if idx:
            speedup = vec["s_per_iter"] / idx["s_per_iter"]
            lines.append(f"{n:.0e} pairs: index {idx['s_per_iter']:.3f} s/iter vs 3-D "
                         f"{vec['s_per_iter']:.3f} s/iter: {speedup:.2f}x")
    return "\n".join(lines)


def plot(results, modes, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    for m in modes:
        rows = sorted((r["n_pairs"], r["s_per_iter"], r["peak_rss"] / 2**20) for r in results
                      if r["mode"] == m and "error" not in r)
        if rows:
            n, t, rss = zip(*rows, strict=True)
            ax_t.loglog(n, t, "o-", label=m)
            ax_m.loglog(n, rss, "o-", label=m)
    ax_t.set(xlabel="pairs", ylabel="s per L-BFGS iteration")
    ax_m.set(xlabel="pairs", ylabel="peak RSS (MB, main process)")
    ax_t.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pairs", type=float, nargs="+", default=[1e4, 1e5, 1e6, 1e7])
    p.add_argument("--modes", nargs="+", choices=MODES, default=MODES)
    p.add_argument("--pairs3d-max", type=float, default=1e6)
    p.add_argument("--points", type=int, default=100_000)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--max-iter", type=int, default=6)
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/scale/data"))
    p.add_argument("--json", type=Path, default=DEFAULT_JSON)
    p.add_argument("--plot", type=Path, default=None, help="log-log plot (needs matplotlib)")
    p.add_argument("--quick", action="store_true", help="1e4 points, 1e4 and 1e5 pairs")
    p.add_argument("--losses", type=float, default=None, metavar="N_PAIRS",
                   help="instead: one evaluation of each linear loss, index vs 3-D pairs")
    p.add_argument("--repeats", type=int, default=3, help="evaluations timed (--losses)")
    p.add_argument("--one", nargs=2, metavar=("MODE", "N_PAIRS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        return run_one(args.one[0], int(float(args.one[1])), args)
    if args.losses:
        make_data(args.workdir, args.points, args.dim, int(args.losses), dask_stack=False)
        args.workdir = data_dir(args.workdir, args.points, args.dim, int(args.losses))
        return compare_losses(int(args.losses), args)
    if args.quick:
        args.points, args.pairs = 10_000, [1e4, 1e5]
    args.pairs = [int(n) for n in args.pairs]
    make_data(args.workdir, args.points, args.dim, max(args.pairs),
              dask_stack="dask" in args.modes)
    print(f"load average {os.getloadavg()}; BLAS threads {args.threads}; "
          f"{args.points} points x {args.dim} float32; TSML k = {args.dim}", flush=True)
    results = run_all(args)
    text = table(results, args.modes)
    print(text)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                     "load_average": os.getloadavg(), "results": results,
                                     "table": text}, indent=1))
    if args.plot:
        plot(results, args.modes, args.plot)


if __name__ == "__main__":
    main()
