"""Fit benchmark: L-BFGS vs SGD, wall time to reach a given validation accuracy.

For TSML and DDML (linear mapping, k = d = 100) the script runs the L-BFGS fit and a grid of
SGD fits (momentum SGD, balanced mini-batches, early stopping on SGD's own held-out split) and
records, along each fit, the wall and CPU time since ``fit`` was called and a copy of the
parameters, through the estimators' ``callback(params, n_iter)`` (each L-BFGS iteration; each
SGD validation check). The validation maxDA of every snapshot is computed only after the fit,
so scoring never counts in the timings. The start point A0 (identity rows, shared by both
solvers) is the snapshot at t = 0.

Data (``--data lfw``, the default): LFW View 2, sqrt pixels, WPCA(100) fitted on the distinct
images of the training pairs; training = the 4800 official pairs of folds 0-7, validation = the
600 pairs of fold 8. ``--data synthetic`` needs no files: the same protocol on Gaussian
"identities" (10 folds x 600 pairs, people disjoint across folds, 300-d, WPCA(100)).

Scores: cosine of the embeddings (TSML), minus their squared distance (DDML). Reported per fit:
the best validation maxDA along the path (an oracle stopping point on fold 8), the maxDA of the
model ``fit`` returns, and the first wall time at which the path reaches (a) ``--fraction`` (99%)
of the better of the two solvers' bests and (b) the fixed level ``--level``.

SGD runs every config of the grid (learning_rate x batch_size x momentum, validation_interval
100) for each of ``--seeds`` (its split and mini-batches); the table gives medians over the
seeds (the best also as [min-max]) and, for each target, in how many seeds the path reaches it.

Notes. SGD trains on 90% of the training pairs (``validation_fraction`` = 0.1 is held out for its
early stopping), L-BFGS on all of them. SGD's time includes its own per-check scoring (maxDA on
its 480 held-out pairs and on 2000 training pairs, done inside ``fit``). The SGD result's
``status``/``message``/``best_step`` are not kept by the estimator, so the benchmark wraps
``metricfit.learners._siamese.minimize`` in this process only (a pass-through spy) to read them.
A fit that raises (a diverged SGD run can) is reported as such, with its path up to the last
snapshot. L-BFGS is deterministic: it runs ``--repeats`` times and each iteration's time is the
median. "best" is the best fold-8 maxDA along the path: an oracle stopping point, optimistic for
both solvers; "retnd" is what ``fit`` actually returns. Timings need an idle machine to be
precise: the load average is printed, and process CPU times next to the wall times.

    python benchmarks/bench_fit.py [--data lfw|synthetic] [--threads 1] [--seeds 0 1 2]
        [--learners tsml ddml] [--repeats 3] [--level L] [--fraction 0.99]
        [--n-iter-no-change 20] [--sgd-max-iter 20000] [--quick]
        [--json benchmarks/results/bench_fit.json]

About 3 minutes for the default run (2 x 12 configs x 3 seeds) on 2 cores.
"""

import argparse
import contextlib
import itertools
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "bench_fit.json"
LEARNING_RATES = (1e-2, 1e-3)
BATCH_SIZES = (2, 32, 256)
MOMENTA = (0.99, 0.9)
VALIDATION_INTERVAL = 100
DEFAULT_LEVEL = {"lfw": 0.74, "synthetic": 0.75}
N_COMPONENTS = 100


# -- data -------------------------------------------------------------------------------------

def lfw_data(data_home=None):
    """(train_pairs, train_y, val_pairs, val_y, description) or None when LFW is absent."""
    import metricfit.datasets as datasets
    from metricfit import WPCA

    try:
        lfw = datasets.load_lfw(data_home)
    except FileNotFoundError as exc:
        print(f"LFW not available, skipping: {exc}\n(use --data synthetic to run without files)")
        return None
    vectors = np.sqrt(lfw.images.reshape(len(lfw.images), -1).astype(np.float64))
    fold, index, label = lfw.pairs_view2_fold, lfw.pairs_view2, lfw.pairs_view2_label
    train, val = fold <= 7, fold == 8
    wpca = WPCA(n_components=N_COMPONENTS).fit(vectors[np.unique(index[train])])
    embedded = wpca.transform(vectors)[index]  # (6000, 2, 100)
    desc = (f"LFW View 2: sqrt pixels ({vectors.shape[1]}), WPCA({N_COMPONENTS}) on the "
            f"{np.unique(index[train]).size} distinct images of folds 0-7; train folds 0-7 "
            f"({train.sum()} pairs), validation fold 8 ({val.sum()} pairs)")
    return embedded[train], label[train], embedded[val], label[val], desc


def synthetic_data(seed=0, n_folds=10, people_per_fold=150, images_per_person=4, dim=300):
    """The LFW protocol on Gaussian identities: x = M [id (20); nuisance (30, std 3)] + noise."""
    from metricfit import WPCA

    rng = np.random.default_rng(seed)
    n_people = n_folds * people_per_fold
    mixing = rng.standard_normal((dim, 50)) / np.sqrt(50)
    identity = rng.standard_normal((n_people, 20))
    person = np.repeat(np.arange(n_people), images_per_person)
    latent = np.hstack([identity[person], 3.0 * rng.standard_normal((person.size, 30))])
    vectors = latent @ mixing.T + 2.5 * rng.standard_normal((person.size, dim))
    index, label, fold = [], [], []
    for f in range(n_folds):
        people = np.arange(f * people_per_fold, (f + 1) * people_per_fold)
        for _ in range(300):  # matched: two distinct images of one person
            p = rng.choice(people)
            i, j = rng.choice(images_per_person, 2, replace=False)
            index.append((p * images_per_person + i, p * images_per_person + j))
        for _ in range(300):  # mismatched: two people of the fold
            p, q = rng.choice(people, 2, replace=False)
            index.append((p * images_per_person + rng.integers(images_per_person),
                          q * images_per_person + rng.integers(images_per_person)))
        label += [1] * 300 + [0] * 300
        fold += [f] * 600
    index, label, fold = np.array(index), np.array(label, dtype=np.int8), np.array(fold)
    train, val = fold <= 7, fold == 8
    wpca = WPCA(n_components=N_COMPONENTS).fit(vectors[np.unique(index[train])])
    embedded = wpca.transform(vectors)[index]
    desc = (f"synthetic: {n_people} Gaussian identities x {images_per_person} images, {dim}-d, "
            f"WPCA({N_COMPONENTS}) on the training images; train folds 0-7 ({train.sum()} "
            f"pairs), validation fold 8 ({val.sum()} pairs)")
    return embedded[train], label[train], embedded[val], label[val], desc


# -- scoring ----------------------------------------------------------------------------------

def val_accuracy(kind, A, pairs, y):
    """Validation maxDA of the linear map A: cosine (TSML) or -squared distance (DDML)."""
    from metricfit.metrics import max_decision_accuracy

    with np.errstate(all="ignore"):
        a, b = pairs[:, 0] @ A.T, pairs[:, 1] @ A.T
        if kind == "cosine":
            norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
            scores = np.sum(a * b, axis=1) / np.maximum(norms, np.finfo(np.float64).tiny)
        else:
            scores = -np.sum((a - b) ** 2, axis=1)
    if not np.isfinite(scores).all():
        return float("nan")
    return max_decision_accuracy(y, scores)[0]


# -- fitting with snapshots -------------------------------------------------------------------

@contextlib.contextmanager
def capture_results(sink):
    """Record the OptimizeResult of every fit (status, message, best_step): a pass-through
    wrapper around the ``minimize`` the siamese learner calls, undone on exit."""
    from metricfit.learners import _siamese

    original = _siamese.minimize

    def spy(*args, **kwargs):
        result = original(*args, **kwargs)
        sink.append(result)
        return result

    _siamese.minimize = spy
    try:
        yield
    finally:
        _siamese.minimize = original


def timed_fit(make, pairs, y):
    """Fit ``make(callback=...)``; snapshots (wall, cpu, n_iter, params copy) since fit start."""
    snaps, results = [], []
    clock = {}

    def callback(params, n_iter):
        snaps.append((time.perf_counter() - clock["wall"], time.process_time() - clock["cpu"],
                      int(n_iter), np.array(params, dtype=np.float64, copy=True)))

    est, error = make(callback=callback), None
    with capture_results(results), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clock["wall"], clock["cpu"] = time.perf_counter(), time.process_time()
        try:
            est.fit(pairs, y)
        except (ValueError, FloatingPointError) as exc:  # a diverged SGD fit can raise
            error = f"{type(exc).__name__}: {exc}"
        wall, cpu = time.perf_counter() - clock["wall"], time.process_time() - clock["cpu"]
    result = results[-1] if results else None
    if error is not None:
        est, result = None, None
    return {
        "est": est, "snaps": snaps, "fit_wall": wall, "fit_cpu": cpu, "error": error,
        "status": None if result is None else int(result.status),
        "message": error if result is None else str(result.message),
        "nit": snaps[-1][2] if est is None and snaps else (-1 if est is None else est.n_iter_),
        "nfev": None if result is None else int(result.nfev),
        "best_step": None if result is None else result.get("best_step"),
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    }


def names_first(targets):
    return next(iter(targets))


def first_time(path, target):
    """(wall, cpu, n_iter) of the first point of ``path`` with accuracy >= target, else None."""
    for point in path:
        if np.isfinite(point["acc"]) and point["acc"] >= target - 1e-12:
            return point
    return None


def trajectory(run, start_acc, kind, val_pairs, val_y):
    path = [{"n_iter": 0, "wall": 0.0, "cpu": 0.0, "acc": start_acc}]
    for wall, cpu, n_iter, params in run["snaps"]:
        path.append({"n_iter": n_iter, "wall": wall, "cpu": cpu,
                     "acc": val_accuracy(kind, params, val_pairs, val_y)})
    return path


def best_point(path):
    accs = np.array([p["acc"] for p in path], dtype=float)
    return path[int(np.nanargmax(accs))] if np.isfinite(accs).any() else None


def lbfgs_benchmark(cls, kind, data, args, start_acc):
    train_pairs, train_y, val_pairs, val_y, _ = data
    runs = [timed_fit(lambda **kw: cls(N_COMPONENTS, solver="lbfgs", lam=args.lam, **kw),
                      train_pairs, train_y) for _ in range(args.repeats)]
    first = runs[0]
    path = trajectory(first, start_acc, kind, val_pairs, val_y)
    # deterministic: same iterates each repeat; each iteration's time = median over repeats
    n = min(len(r["snaps"]) for r in runs)
    for i, point in enumerate(path[1:n + 1]):
        point["wall"] = float(np.median([r["snaps"][i][0] for r in runs]))
        point["cpu"] = float(np.median([r["snaps"][i][1] for r in runs]))
    return {
        "solver": "lbfgs", "config": {"lam": args.lam, "tol": 1e-5, "max_iter": 200},
        "path": path[:n + 1], "status": first["status"], "message": first["message"],
        "error": first["error"],
        "nit": first["nit"], "nfev": first["nfev"], "warnings": first["warnings"],
        "fit_wall": float(np.median([r["fit_wall"] for r in runs])),
        "fit_wall_all": [r["fit_wall"] for r in runs],
        "fit_cpu": float(np.median([r["fit_cpu"] for r in runs])),
        "returned_acc": returned_accuracy(first, kind, val_pairs, val_y),
    }


def returned_accuracy(run, kind, val_pairs, val_y):
    est = run["est"]
    return float("nan") if est is None else val_accuracy(kind, est.components_, val_pairs, val_y)


def sgd_benchmark(cls, kind, data, args, start_acc, lr, batch, momentum, seed):
    train_pairs, train_y, val_pairs, val_y, _ = data

    def make(**kw):
        return cls(N_COMPONENTS, solver="sgd", lam=args.lam, learning_rate=lr, batch_size=batch,
                   momentum=momentum, validation_interval=VALIDATION_INTERVAL,
                   n_iter_no_change=args.n_iter_no_change, max_iter=args.sgd_max_iter,
                   random_state=seed, **kw)

    run = timed_fit(make, train_pairs, train_y)
    est = run["est"]
    curves = (est.curves_ if est is not None else None) or {}
    internal = curves.get("validation", [])
    return {
        "solver": "sgd", "seed": seed,
        "config": {"learning_rate": lr, "batch_size": batch, "momentum": momentum,
                   "validation_interval": VALIDATION_INTERVAL,
                   "n_iter_no_change": args.n_iter_no_change, "max_iter": args.sgd_max_iter,
                   "lam": args.lam},
        "path": trajectory(run, start_acc, kind, val_pairs, val_y),
        "status": run["status"], "message": run["message"], "nit": run["nit"],
        "nfev": run["nfev"], "best_step": run["best_step"], "warnings": run["warnings"],
        "error": run["error"], "fit_wall": run["fit_wall"], "fit_cpu": run["fit_cpu"],
        "returned_acc": returned_accuracy(run, kind, val_pairs, val_y),
        "internal_validation": {"step": curves.get("step", []), "validation": internal,
                                "train": curves.get("train", [])},
        "internal_best": max(internal) if internal else None,
    }


def aggregate(config, runs):
    """One table row for an SGD config run over several seeds (medians; best also min-max)."""
    bests = [r["best"] for r in runs]
    codes = {0: "e", 1: "m", 2: "n"}
    status = {}
    for r in runs:
        code = "R" if r["error"] else codes.get(r["status"], "?")
        status[code] = status.get(code, 0) + 1

    def med(values):
        values = [v for v in values if v is not None and np.isfinite(v)]
        return float(np.median(values)) if values else float("nan")

    return {
        "solver": "sgd", "config": config, "n_seeds": len(runs),
        "status": "".join(f"{n}{c}" for c, n in sorted(status.items())),
        "nit": med([r["nit"] for r in runs]), "best_step": med([r["best_step"] for r in runs]),
        "fit_wall": med([r["fit_wall"] for r in runs]),
        "fit_cpu": med([r["fit_cpu"] for r in runs]),
        "best_acc": med([b["acc"] for b in bests]),
        "best_acc_range": [min(b["acc"] for b in bests), max(b["acc"] for b in bests)],
        "best_iter": med([b["n_iter"] for b in bests]),
        "best_wall": med([b["wall"] for b in bests]),
        "returned_acc": med([r["returned_acc"] for r in runs]),
        "internal_best": med([r["internal_best"] for r in runs]),
        "time_to": {name: {"median_wall": med([r["time_to"][name]["wall"] for r in runs
                                               if r["time_to"][name]]),
                           "median_iter": med([r["time_to"][name]["n_iter"] for r in runs
                                               if r["time_to"][name]]),
                           "reached": sum(r["time_to"][name] is not None for r in runs),
                           "of": len(runs)}
                    for name in runs[0]["time_to"]},
        "errors": sorted({r["error"] for r in runs if r["error"]}),
        "warnings": sorted({w for r in runs for w in r["warnings"]
                            if w.startswith("ConvergenceWarning")}),
    }


def lbfgs_row(entry):
    best = entry["best"]
    return {
        "solver": "lbfgs", "config": entry["config"], "n_seeds": 1, "status": str(entry["status"]),
        "nit": entry["nit"], "best_step": float("nan"), "fit_wall": entry["fit_wall"],
        "fit_cpu": entry["fit_cpu"], "best_acc": best["acc"],
        "best_acc_range": [best["acc"], best["acc"]], "best_iter": best["n_iter"],
        "best_wall": best["wall"], "returned_acc": entry["returned_acc"],
        "internal_best": float("nan"),
        "time_to": {name: {"median_wall": p["wall"] if p else float("nan"),
                           "median_iter": p["n_iter"] if p else float("nan"),
                           "reached": int(p is not None), "of": 1}
                    for name, p in entry["time_to"].items()},
        "errors": [entry["error"]] if entry["error"] else [],
        "warnings": [w for w in entry["warnings"] if w.startswith("ConvergenceWarning")],
    }


def warm_up(classes, data):
    """Untimed tiny fits of every learner x solver: numba compiles on first use."""
    rows = np.r_[np.flatnonzero(data[1] == 1)[:100], np.flatnonzero(data[1] != 1)[:100]]
    train_pairs, train_y = data[0][rows], data[1][rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cls in classes:
            cls(N_COMPONENTS, solver="lbfgs", max_iter=3).fit(train_pairs, train_y)
            cls(N_COMPONENTS, solver="sgd", max_iter=20, validation_interval=10,
                random_state=0).fit(train_pairs, train_y)


# -- report -----------------------------------------------------------------------------------

def environment(threads):
    import numba
    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    import metricfit

    return {
        "python": platform.python_version(), "platform": platform.platform(),
        "numpy": np.__version__, "scipy": scipy.__version__, "sklearn": sklearn.__version__,
        "numba": numba.__version__, "numba_threads": numba.get_num_threads(),
        "metricfit": metricfit.__version__, "cpu_count": os.cpu_count(),
        "threads_requested": threads, "loadavg_start": os.getloadavg(),
        "threadpools": [{k: pool.get(k) for k in ("user_api", "internal_api", "version",
                                                  "architecture", "num_threads", "filepath")}
                        for pool in threadpool_info()],
    }


def fmt_target(t):
    if not t["reached"]:
        return f"never 0/{t['of']}"
    text = f"{t['median_wall']:.3f}s@{t['median_iter']:.0f}"
    return text if t["of"] == 1 else f"{text} {t['reached']}/{t['of']}"


def summarise(entry, targets):
    entry["best"] = best_point(entry["path"])
    entry["time_to"] = {name: first_time(entry["path"], value) for name, value in targets.items()}
    return entry


def config_text(row):
    c = row["config"]
    if row["solver"] == "lbfgs":
        return "L-BFGS"
    return f"SGD lr={c['learning_rate']:g} batch={c['batch_size']} momentum={c['momentum']}"


def print_table(learner, targets, rows, start_acc):
    names = list(targets)
    print(f"\n== {learner}: start (A0 = identity rows) validation maxDA {start_acc:.4f}; "
          + "; ".join(f"target {n} = {v:.4f}" for n, v in targets.items()))
    head = (f"{'solver':6} {'lr':>6} {'batch':>5} {'mom':>4} {'status':>6} {'nit':>6} "
            f"{'bstep':>6} {'fit s':>6} {'cpu s':>6} {'best':>6} {'[min - max]':>13} "
            f"{'@iter':>6} {'@s':>6} {'retnd':>6} {'int.val':>7} "
            + " ".join(f"{'t(' + n + ')':>17}" for n in names))
    print(head)
    print("-" * len(head))
    for r in rows:
        c = r["config"]
        sgd = r["solver"] == "sgd"
        lr = f"{c['learning_rate']:.0e}" if sgd else "-"
        bs = f"{c['batch_size']}" if sgd else "all"
        mom = f"{c['momentum']}" if sgd else "-"
        lo, hi = r["best_acc_range"]
        rng = f"[{lo:.4f}-{hi:.4f}]" if sgd else ""
        bstep = f"{r['best_step']:.0f}" if np.isfinite(r["best_step"]) else "-"
        internal = f"{r['internal_best']:.4f}" if np.isfinite(r["internal_best"]) else "-"
        print(f"{r['solver']:6} {lr:>6} {bs:>5} {mom:>4} {r['status']:>6} {r['nit']:>6.0f} "
              f"{bstep:>6} {r['fit_wall']:6.2f} {r['fit_cpu']:6.2f} {r['best_acc']:6.4f} "
              f"{rng:>13} {r['best_iter']:>6.0f} {r['best_wall']:6.3f} {r['returned_acc']:6.4f} "
              f"{internal:>7} " + " ".join(f"{fmt_target(r['time_to'][n]):>17}" for n in names))
    for r in rows:
        for text in r["errors"]:
            print(f"  ! {config_text(r)}: fit raised {text}")
        for text in r["warnings"]:
            print(f"  ! {config_text(r)}: {text}")


def to_jsonable(obj):
    if isinstance(obj, dict):
        return {k: to_jsonable(v) for k, v in obj.items() if k != "est"}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        return None if not np.isfinite(obj) else float(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", choices=["lfw", "synthetic"], default="lfw")
    p.add_argument("--data-home", default=None, help="data folder (default: metricfit's)")
    p.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    p.add_argument("--learners", nargs="+", choices=["tsml", "ddml"], default=["tsml", "ddml"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                   help="SGD random_state values (split and batches); also the synthetic data's "
                        "seed (the first)")
    p.add_argument("--lam", type=float, default=1e-3)
    p.add_argument("--repeats", type=int, default=3, help="L-BFGS fits (median times)")
    p.add_argument("--sgd-max-iter", type=int, default=20000)
    p.add_argument("--n-iter-no-change", type=int, default=20,
                   help="SGD early-stopping patience in checks (estimator default 20)")
    p.add_argument("--fraction", type=float, default=0.99,
                   help="relative target: this fraction of the better solver's best")
    p.add_argument("--level", type=float, default=None,
                   help="fixed target maxDA (default 0.74 lfw, 0.75 synthetic)")
    p.add_argument("--quick", action="store_true", help="SGD grid: batch 32 only")
    p.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = p.parse_args(argv)

    import numba
    import scipy.linalg  # noqa: F401  load every BLAS before limiting the threads
    import scipy.optimize  # noqa: F401
    from threadpoolctl import threadpool_limits

    import metricfit.datasets  # noqa: F401
    from metricfit import TSML
    from metricfit.learners.ddml import DDML
    from metricfit.mappings import MAPPINGS

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))  # loads its OpenMP
    threadpool_limits(limits=args.threads)  # BLAS and OpenMP, for the rest of the process

    env = environment(args.threads)
    print(f"python {env['python']}, numpy {env['numpy']}, scipy {env['scipy']}, scikit-learn "
          f"{env['sklearn']}, numba {env['numba']} ({env['numba_threads']} threads), "
          f"{env['cpu_count']} CPUs, load average {env['loadavg_start']}")
    for pool in env["threadpools"]:
        print(f"  {pool['user_api']}: {pool['internal_api']} {pool['version']} "
              f"{pool['architecture'] or '-'}, {pool['num_threads']} threads "
              f"({Path(pool['filepath']).name})")
    if env["loadavg_start"][0] > 0.5:
        print(f"  note: load average {env['loadavg_start'][0]:.2f} on {env['cpu_count']} CPUs: "
              "other processes compete, wall times are noisy (CPU times printed too)")

    t_total = time.perf_counter()
    data = lfw_data(args.data_home) if args.data == "lfw" else synthetic_data(args.seeds[0])
    if data is None:
        return 0
    print(data[4])
    level = DEFAULT_LEVEL[args.data] if args.level is None else args.level
    learners = {"tsml": (TSML, "cosine"), "ddml": (DDML, "distance")}
    warm_up([learners[name][0] for name in args.learners], data)

    batches = (32,) if args.quick else BATCH_SIZES
    grid = list(itertools.product(LEARNING_RATES, batches, MOMENTA))
    output = {"environment": env, "args": {k: str(v) if isinstance(v, Path) else v
                                           for k, v in vars(args).items()},
              "data": data[4], "learners": {}}
    for name in args.learners:
        cls, kind = learners[name]
        A0 = MAPPINGS["linear"](N_COMPONENTS, N_COMPONENTS).init().reshape(N_COMPONENTS, -1)
        start_acc = val_accuracy(kind, A0, data[2], data[3])
        print(f"\n{name.upper()}: L-BFGS x{args.repeats}, then {len(grid)} SGD configs x "
              f"{len(args.seeds)} seeds ...", flush=True)
        lbfgs = lbfgs_benchmark(cls, kind, data, args, start_acc)
        sgd = {}
        for lr, batch, momentum in grid:
            for seed in args.seeds:
                run = sgd_benchmark(cls, kind, data, args, start_acc, lr, batch, momentum, seed)
                sgd.setdefault((lr, batch, momentum), []).append(run)
            print(f"  sgd lr={lr:g} batch={batch} momentum={momentum}: steps "
                  f"{[r['nit'] for r in sgd[lr, batch, momentum]]}, "
                  f"{sum(r['fit_wall'] for r in sgd[lr, batch, momentum]):.1f}s", flush=True)

        def median_best(runs):
            return float(np.median([best_point(r["path"])["acc"] for r in runs]))

        top_key = max(sgd, key=lambda key: median_best(sgd[key]))
        top = max(best_point(lbfgs["path"])["acc"], median_best(sgd[top_key]))
        targets = {f"{args.fraction:g}best": args.fraction * top, f"{level:g}": level}
        for entry in [lbfgs, *itertools.chain(*sgd.values())]:
            summarise(entry, targets)
        rows = [lbfgs_row(lbfgs)] + [aggregate(runs[0]["config"], runs) for runs in sgd.values()]
        print_table(name.upper(), targets, rows, start_acc)
        best_row = max(rows[1:], key=lambda r: (r["best_acc"],
                                                -r["time_to"][names_first(targets)]["median_wall"]
                                                if r["time_to"][names_first(targets)]["reached"]
                                                else -np.inf))
        print(f"best SGD config (median over seeds of the best fold-8 maxDA): "
              f"{config_text(best_row)[4:]} -> {best_row['best_acc']:.4f} "
              f"[{best_row['best_acc_range'][0]:.4f}-{best_row['best_acc_range'][1]:.4f}]; "
              f"L-BFGS {rows[0]['best_acc']:.4f}")
        for tname in targets:
            tl, ts = rows[0]["time_to"][tname], best_row["time_to"][tname]
            ratio = (f"  (SGD/L-BFGS = {ts['median_wall'] / tl['median_wall']:.1f}x)"
                     if tl["reached"] and ts["reached"] and tl["median_wall"] > 0 else "")
            reaching = [r for r in rows[1:] if 2 * r["time_to"][tname]["reached"] > r["n_seeds"]]
            fastest = min(reaching, key=lambda r: r["time_to"][tname]["median_wall"], default=None)
            fast = ("none reaches it in most seeds" if fastest is None else
                    f"{config_text(fastest)[4:]} {fmt_target(fastest['time_to'][tname])}")
            print(f"  time to {tname}: L-BFGS {fmt_target(tl)}, best SGD config "
                  f"{fmt_target(ts)}{ratio}; fastest SGD config: {fast}")
        output["learners"][name] = {
            "score": kind, "start_acc": start_acc, "targets": targets,
            "best_sgd_config": best_row["config"], "table": rows, "lbfgs": lbfgs,
            "sgd_runs": list(itertools.chain(*sgd.values())),
        }

    output["environment"]["loadavg_end"] = os.getloadavg()
    output["total_wall"] = time.perf_counter() - t_total
    print("\ncolumns: SGD rows are over the seeds (medians; best also [min-max]). status: L-BFGS "
          "scipy code; SGD counts of e = early-stopped, m = max_iter, n = non-finite (status 2), "
          "R = fit raised. nit = iterations/steps; bstep = the step SGD returns (best on its own "
          "held-out split); fit s / cpu s = wall / process CPU time of fit; best = best fold-8 "
          "maxDA along the path, reached @iter / @s; retnd = fold-8 maxDA of the model fit "
          "returns; int.val = SGD's best maxDA on its internal split; t(target) = first wall "
          "time @ iteration/step where the path reaches the target (median over the seeds that "
          "do, k/n of them; 0 = the start already does)")
    print(f"total {output['total_wall']:.0f}s, load average at end {os.getloadavg()}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(to_jsonable(output), indent=1))
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
