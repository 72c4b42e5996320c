"""metricfit against metric-learn 0.7.0 on identical seeded splits (issue 26).

    python benchmarks/vs_metric_learn.py --peer-python /work/ml-venv/bin/python \\
        [--seeds 5] [--pair-seeds 3] [--budget 40] [--json OUT.json]

metric-learn runs in its own interpreter (``--peer-python``: a venv with metric-learn and a
scikit-learn it supports, 1.7.x; default: this interpreter), as a subprocess of this script
in ``--worker`` mode, which imports neither metricfit nor anything but NumPy, scikit-learn and
metric-learn. This process makes the splits, writes them to one ``.npz`` that both sides read,
and fits metricfit itself. When metric-learn cannot be imported by the peer interpreter the
script says so and exits 0 (nothing to compare).

Workloads (every array standardised on its training split; digits also reduced to 30-d by a
PCA fitted on its training split):

- supervised: iris, wine, breast cancer, digits-30d; 70/30 stratified splits, ``--seeds``
  seeds; 3-NN accuracy in the learned space; fit time (median over the seeds); each
  algorithm with the default parameters of both libraries (``random_state=0`` where there
  is one);
- pairs: digits-30d, images split in two stratified halves; 1,000 similar and 1,000
  dissimilar pairs within each half (train, test: disjoint images); ITML, MMC, SDML; test ROC
  AUC of ``decision_function`` and accuracy of ``predict`` at the threshold each library
  calibrates on the training pairs;
- growth: LMNN and ITML_Supervised on n = 300, 600, 1200 digits-30d points, one fit each;
- the other supervised learners (LMNN, MLKR, LFDA, RCA_Supervised, Covariance): the rows of
  ``benchmarks/vs_metric_learn_supervised.py`` (its own workloads: the same data sets and
  70/30 stratified splits, digits through a PCA fitted on all of digits, no standardising),
  imported and run when that file is present (``--only base`` or the default).

One thread everywhere (OMP/OpenBLAS/MKL/numba thread variables set to 1 before NumPy is
imported, in both processes). metricfit's numba kernels are compiled once before timing
(``cache=True`` keeps them on disk anyway). A metric-learn cell whose seeds pass ``--budget``
seconds in total stops after the seed that crossed it (the table gives the seeds run; the
comparison uses metricfit's results on those same seeds); a single fit beyond
``3 * budget`` is stopped and reported as such.

The SDML shim: metric-learn 0.7.0's SDML calls ``graphical_lasso(emp_cov, alpha=...,
cov_init=sigma0)``; scikit-learn removed ``cov_init`` in 1.5. The worker replaces
``metric_learn.sdml.graphical_lasso`` with a wrapper that drops ``cov_init`` (the start point
only: the objective is the same) and calls scikit-learn's ``graphical_lasso``.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS", "METRICFIT_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

SUPERVISED = ["ITML_Supervised", "MMC_Supervised", "SDML_Supervised", "LSML_Supervised",
              "SCML_Supervised"]
BASE_SUPERVISED = ("LMNN", "MLKR", "LFDA", "RCA_Supervised", "Covariance")
PAIRS = ["ITML", "MMC", "SDML"]
GROWTH = ["LMNN", "ITML_Supervised"]
DATASETS = ["iris", "wine", "breast_cancer", "digits30"]
GROWTH_SIZES = (300, 600, 1200)
SEEDED = {"ITML_Supervised", "MMC_Supervised", "SDML_Supervised", "LSML_Supervised",
          "SCML_Supervised", "LMNN", "NCA", "MLKR", "RCA_Supervised", "ITML", "MMC", "SDML"}


# -- estimators of either library ------------------------------------------------------------


def metric_learn_estimator(name):
    import metric_learn
    cls = getattr(metric_learn, name)
    return cls(random_state=0) if name in SEEDED and "random_state" in \
        cls().get_params() else cls()


def metricfit_estimator(name):
    import metricfit.learners as learners
    cls = getattr(learners, name, None)
    if cls is None:
        import metricfit
        cls = getattr(metricfit, name, None)
    if cls is None:
        return None
    return cls(random_state=0) if "random_state" in cls().get_params() else cls()


def _shim_sdml():
    """metric-learn's SDML passes ``cov_init`` (removed in scikit-learn 1.5): drop it."""
    import metric_learn.sdml
    from sklearn.covariance import graphical_lasso

    def graphical_lasso_without_cov_init(emp_cov, alpha, cov_init=None, **kwargs):
        return graphical_lasso(emp_cov, alpha=alpha, **kwargs)

    metric_learn.sdml.graphical_lasso = graphical_lasso_without_cov_init


# -- one cell: an algorithm on a workload's seeds ----------------------------------------------


def _knn_accuracy(Ztr, ytr, Zte, yte):
    from sklearn.neighbors import KNeighborsClassifier
    return float(KNeighborsClassifier(n_neighbors=3).fit(Ztr, ytr).score(Zte, yte))


def run_cell(make, data, task, key, seeds, budget):
    """Fit ``make()`` on each seed's split; {'acc'|'auc', 'time', 'seeds', 'error'}."""
    from sklearn.metrics import roc_auc_score
    out = {"time": [], "seeds": [], "error": None}
    spent = 0.0
    for seed in seeds:
        est = make()
        if est is None:
            out["error"] = "not available"
            break
        prefix = f"{key}_{seed}_"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if task == "supervised":
                    Xtr, ytr = data[prefix + "Xtr"], data[prefix + "ytr"]
                    start = time.perf_counter()
                    est.fit(Xtr, ytr)
                    elapsed = time.perf_counter() - start
                    out.setdefault("acc", []).append(_knn_accuracy(
                        est.transform(Xtr), ytr, est.transform(data[prefix + "Xte"]),
                        data[prefix + "yte"]))
                elif task == "pairs":
                    Ptr, ytr = data[prefix + "Ptr"], data[prefix + "ytr"]
                    start = time.perf_counter()
                    est.fit(Ptr, ytr)
                    elapsed = time.perf_counter() - start
                    Pte, yte = data[prefix + "Pte"], data[prefix + "yte"]
                    out.setdefault("auc", []).append(float(roc_auc_score(
                        yte, est.decision_function(Pte))))
                    out.setdefault("acc", []).append(float(np.mean(est.predict(Pte) == yte)))
                else:  # growth: time only
                    X, y = data[prefix + "X"], data[prefix + "y"]
                    start = time.perf_counter()
                    est.fit(X, y)
                    elapsed = time.perf_counter() - start
        except Exception as error:  # a library's failure is a result of the comparison
            out["error"] = f"{type(error).__name__}: {str(error)[:120]}"
            break
        out["time"].append(elapsed)
        out["seeds"].append(int(seed))
        spent += elapsed
        if spent > budget:
            break
    return out


def worker(args):
    """The metric-learn side: one cell, its JSON on stdout."""
    _shim_sdml()
    data = np.load(args.data)
    seeds = [int(s) for s in args.seeds.split(",")]
    result = run_cell(lambda: metric_learn_estimator(args.algorithm), data, args.task,
                      args.key, seeds, args.budget)
    print(json.dumps(result))


def peer_cell(peer, path, task, algorithm, key, seeds, budget):
    command = [peer, os.path.abspath(__file__), "--worker", "--data", path, "--task", task,
               "--algorithm", algorithm, "--key", key, "--seeds", ",".join(map(str, seeds)),
               "--budget", str(budget)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=3 * budget + 30)
    except subprocess.TimeoutExpired:
        return {"time": [], "seeds": [], "error": f"stopped after {3 * budget + 30:.0f} s"}
    if done.returncode != 0:
        return {"time": [], "seeds": [], "error": done.stderr.strip().splitlines()[-1][:160]}
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the workloads (this process) ----------------------------------------------------------


def _load(name):
    from sklearn import datasets
    loader = {"iris": datasets.load_iris, "wine": datasets.load_wine,
              "breast_cancer": datasets.load_breast_cancer,
              "digits30": datasets.load_digits}[name]
    return loader(return_X_y=True)


def _prepare(name, Xtr, Xte):
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import StandardScaler
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    if name == "digits30":
        pca = PCA(n_components=30, random_state=0).fit(Xtr)
        Xtr, Xte = pca.transform(Xtr), pca.transform(Xte)
    return Xtr, Xte


def _pairs_of(y, n_each, rng):
    """``n_each`` similar and ``n_each`` dissimilar index pairs (distinct points) of y."""
    same, diff = [], []
    while len(same) < n_each or len(diff) < n_each:
        i, j = rng.randint(0, len(y), size=2)
        if i == j:
            continue
        if y[i] == y[j] and len(same) < n_each:
            same.append((i, j))
        elif y[i] != y[j] and len(diff) < n_each:
            diff.append((i, j))
    return np.array(same + diff), np.r_[np.ones(n_each), -np.ones(n_each)].astype(int)


def make_splits(n_seeds, n_pair_seeds):
    from sklearn.model_selection import train_test_split
    arrays = {}
    for name in DATASETS:
        X, y = _load(name)
        for seed in range(n_seeds):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y,
                                                  random_state=seed)
            Xtr, Xte = _prepare(name, Xtr, Xte)
            arrays.update({f"{name}_{seed}_Xtr": Xtr, f"{name}_{seed}_Xte": Xte,
                           f"{name}_{seed}_ytr": ytr, f"{name}_{seed}_yte": yte})
    X, y = _load("digits30")
    for seed in range(n_pair_seeds):
        A, B, ya, yb = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
        A, B = _prepare("digits30", A, B)
        rng = np.random.RandomState(seed)
        ia, sa = _pairs_of(ya, 1000, rng)
        ib, sb = _pairs_of(yb, 1000, rng)
        arrays.update({f"pairs_{seed}_Ptr": A[ia], f"pairs_{seed}_ytr": sa,
                       f"pairs_{seed}_Pte": B[ib], f"pairs_{seed}_yte": sb})
    from sklearn.model_selection import StratifiedShuffleSplit
    for n in GROWTH_SIZES:
        rows = next(StratifiedShuffleSplit(n_splits=1, train_size=n, random_state=0)
                    .split(X, y))[0]
        Xn, _ = _prepare("digits30", X[rows], X[rows[:1]])
        arrays.update({f"growth{n}_0_X": Xn, f"growth{n}_0_y": y[rows]})
    return arrays


def _warm_up():
    """Compile metricfit's numba kernels before any timing."""
    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(60, 4)), np.repeat(np.arange(3), 20)
    for name in SUPERVISED:
        est = metricfit_estimator(name)
        if est is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    est.fit(X, y)
                except ValueError:
                    pass


def _mean(values):
    return float(np.mean(values)) if values else float("nan")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", default=sys.executable)
    parser.add_argument("--seeds", default="5", help="number of seeds (worker: the list)")
    parser.add_argument("--pair-seeds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=40.0,
                        help="seconds of metric-learn fits per cell before it stops")
    parser.add_argument("--only", default="supervised,pairs,growth,base")
    parser.add_argument("--algorithms", default=None, help="comma-separated subset")
    parser.add_argument("--json", default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--algorithm", help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    args.seeds = int(args.seeds)
    probe = subprocess.run([args.peer_python, "-c",
                            "import metric_learn, sklearn; print(metric_learn.__version__, "
                            "sklearn.__version__)"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"metric-learn is not importable by {args.peer_python} (give a venv with "
              "metric-learn and a scikit-learn it supports as --peer-python); skipping the "
              "comparison.")
        return 0
    import sklearn

    import metricfit
    ml_version, ml_sklearn = probe.stdout.split()
    print(f"metricfit {metricfit.__version__} (scikit-learn {sklearn.__version__}) vs "
          f"metric-learn {ml_version} (scikit-learn {ml_sklearn}); 1 thread")
    chosen = set(args.algorithms.split(",")) if args.algorithms else None
    tasks = args.only.split(",")
    results = {"versions": {"metricfit": metricfit.__version__,
                            "sklearn": sklearn.__version__, "metric_learn": ml_version,
                            "metric_learn_sklearn": ml_sklearn}}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "splits.npz")
        np.savez(path, **make_splits(args.seeds, args.pair_seeds))
        data = np.load(path)
        _warm_up()
        plan = []
        if "supervised" in tasks:
            plan += [("supervised", a, d, range(args.seeds)) for a in SUPERVISED
                     for d in DATASETS]
        if "pairs" in tasks:
            plan += [("pairs", a, "pairs", range(args.pair_seeds)) for a in PAIRS]
        if "growth" in tasks:
            plan += [("growth", a, f"growth{n}", [0]) for a in GROWTH for n in GROWTH_SIZES]
        for task, algorithm, key, seeds in plan:
            if chosen and algorithm not in chosen:
                continue
            theirs = peer_cell(args.peer_python, path, task, algorithm, key, list(seeds),
                               args.budget)
            ours = run_cell(lambda a=algorithm: metricfit_estimator(a), data, task, key,
                            list(seeds), float("inf"))
            results[f"{task}/{algorithm}/{key}"] = {"metricfit": ours, "metric_learn": theirs}
            _print_row(task, algorithm, key, ours, theirs)
    if "base" in tasks:
        results["base"] = _base_rows(args.seeds, args.peer_python)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


def _base_rows(n_seeds, peer_python):
    """The rows of benchmarks/vs_metric_learn_supervised.py (LMNN, MLKR, LFDA, RCA, Covariance)
    when the file is there; its table printed."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import vs_metric_learn_supervised as base
    except ImportError:
        print("benchmarks/vs_metric_learn_supervised.py is not here: no rows for LMNN, MLKR, "
              "LFDA, RCA, Covariance.")
        return None
    os.environ.setdefault("METRIC_LEARN_PYTHON", peer_python)
    rows = base.run(BASE_SUPERVISED, range(n_seeds))
    print(base.table(rows), flush=True)
    return rows


def _print_row(task, algorithm, key, ours, theirs):
    common = [s for s in ours["seeds"] if s in theirs["seeds"]]
    pick = {s: i for i, s in enumerate(ours["seeds"])}

    def on_common(values):
        return [values[pick[s]] for s in common] if values else []

    t_ours, t_theirs = np.median(ours["time"]) if ours["time"] else np.nan, \
        np.median(theirs["time"]) if theirs["time"] else np.nan
    cells = [task, algorithm, key, f"n={len(ours['seeds'])}/{len(theirs['seeds'])}"]
    for metric in ("acc", "auc"):
        if metric in ours or metric in theirs:
            mine, peer = ours.get(metric, []), theirs.get(metric, [])
            cells.append(f"{metric} mf {_mean(mine):.4f}+-{np.std(mine) if mine else np.nan:.4f}"
                         f" (same seeds {_mean(on_common(mine)):.4f}) ml {_mean(peer):.4f}"
                         f"+-{np.std(peer) if peer else np.nan:.4f}")
    cells.append(f"time mf {t_ours:.4f} s ml {t_theirs:.4f} s x{t_theirs / t_ours:.1f}")
    for side, out in (("mf", ours), ("ml", theirs)):
        if out["error"]:
            cells.append(f"{side} error: {out['error']}")
    print(" | ".join(cells), flush=True)


if __name__ == "__main__":
    sys.exit(main())
