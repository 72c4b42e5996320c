"""metricfit vs metric-learn 0.7.0 on the supervised learners (issue 26): LMNN, MLKR, LFDA,
RCA_Supervised, Covariance.

Workloads: iris, wine, breast cancer and digits reduced to 30-d by PCA (fitted once on all of
digits, unsupervised); 70/30 stratified splits, seeds 0..4; 3-NN accuracy in the learned space
(KNeighborsClassifier(3) on ``transform``); fit time (``fit`` only) at one thread (threadpoolctl
and OMP/OPENBLAS/MKL_NUM_THREADS=1 on both sides). Default parameters of both libraries, with
one exception stated in the table: RCA_Supervised's ``n_chunks=100`` chunklets of 2 do not
fit in iris' and wine's training splits (both libraries refuse), so there both get the largest
feasible number, the sum over classes of floor(n_c / 2) (``_rca_chunks``).

metric-learn runs in its own interpreter (it needs scikit-learn < 1.8): the splits are written
to an .npz by this process and read by the worker (``--worker``), so both libraries see the
same arrays. The worker's interpreter is ``$METRIC_LEARN_PYTHON`` (default
``/work/ml-venv/bin/python``); without one, or without metric-learn in it, only metricfit's
side runs and a message says so.

    python benchmarks/vs_metric_learn_supervised.py [--algorithms LMNN,LFDA] [--seeds 5]

The module is importable without metric-learn: ``run(algorithms, seeds)`` returns the rows
(dicts) that ``benchmarks/vs_metric_learn.py`` puts in its tables.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ALGORITHMS = ("LMNN", "MLKR", "LFDA", "RCA_Supervised", "Covariance")
DATASETS = ("iris", "wine", "breast_cancer", "digits30")
DEFAULT_ML_PYTHON = "/work/ml-venv/bin/python"


def load(name):
    """(X, y) of a workload: scikit-learn's bundled data sets; digits through PCA to 30-d."""
    from sklearn import datasets

    if name == "digits30":
        from sklearn.decomposition import PCA

        X, y = datasets.load_digits(return_X_y=True)
        return PCA(n_components=30, random_state=0).fit_transform(X), y
    loader = {"iris": datasets.load_iris, "wine": datasets.load_wine,
              "breast_cancer": datasets.load_breast_cancer}[name]
    return loader(return_X_y=True)


def splits(y, seeds):
    """Train / test indices of 70/30 stratified splits, one per seed."""
    from sklearn.model_selection import train_test_split

    index = np.arange(y.size)
    return [train_test_split(index, test_size=0.3, stratify=y, random_state=seed)
            for seed in seeds]


def _rca_chunks(y_train):
    """metric-learn's default 100 chunklets of 2 where they fit, else as many as fit."""
    available = int(sum(np.bincount(np.unique(y_train, return_inverse=True)[1]) // 2))
    return min(100, available)


def metricfit_estimator(name, y_train):
    from metricfit.learners import LFDA, LMNN, MLKR, Covariance, RCA_Supervised

    if name == "RCA_Supervised":
        return RCA_Supervised(n_chunks=_rca_chunks(y_train), random_state=0)
    return {"LMNN": LMNN, "MLKR": MLKR, "LFDA": LFDA, "Covariance": Covariance}[name]()


def metric_learn_estimator(name, y_train):
    import metric_learn

    if name == "RCA_Supervised":
        return metric_learn.RCA_Supervised(n_chunks=_rca_chunks(y_train), random_state=0)
    return getattr(metric_learn, name)()


def knn_accuracy(Z_train, y_train, Z_test, y_test):
    from sklearn.neighbors import KNeighborsClassifier

    return float(KNeighborsClassifier(n_neighbors=3).fit(Z_train, y_train).score(Z_test, y_test))


def evaluate(make, algorithms, data):
    """``{(algorithm, dataset): {'accuracy': [...], 'time': [...]}}`` for estimators from
    ``make(name, y_train)`` on ``data`` (dataset -> (X, y, [(train, test), ...]))."""
    from threadpoolctl import threadpool_limits

    out = {}
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for algorithm in algorithms:
            for dataset, (X, y, folds) in data.items():
                cell = {"accuracy": [], "time": []}
                for train, test in folds:
                    est = make(algorithm, y[train])
                    start = time.perf_counter()
                    try:
                        est.fit(X[train], y[train])
                    except Exception as error:  # noqa: BLE001 (reported in the table)
                        cell["error"] = f"{type(error).__name__}: {error}"[:200]
                        break
                    cell["time"].append(time.perf_counter() - start)
                    cell["accuracy"].append(knn_accuracy(est.transform(X[train]), y[train],
                                                         est.transform(X[test]), y[test]))
                out[f"{algorithm}|{dataset}"] = cell
    return out


def _worker(npz_path, algorithms, out_path):
    """metric-learn's side, run in its own interpreter: needs no metricfit."""
    stored = np.load(npz_path)
    data = {}
    for dataset in DATASETS:
        if f"{dataset}_X" not in stored:
            continue
        trains, tests = stored[f"{dataset}_train"], stored[f"{dataset}_test"]
        data[dataset] = (stored[f"{dataset}_X"], stored[f"{dataset}_y"],
                         list(zip(trains, tests, strict=True)))
    with open(out_path, "w") as fh:
        json.dump(evaluate(metric_learn_estimator, algorithms, data), fh)


def metric_learn_side(algorithms, data, python=None):
    """metric-learn's results through its interpreter, or ``(None, reason)``."""
    python = python or os.environ.get("METRIC_LEARN_PYTHON", DEFAULT_ML_PYTHON)
    if not os.path.exists(python):
        return None, f"no metric-learn interpreter at {python} (set METRIC_LEARN_PYTHON)"
    with tempfile.TemporaryDirectory() as tmp:
        npz, out = os.path.join(tmp, "splits.npz"), os.path.join(tmp, "ml.json")
        arrays = {}
        for dataset, (X, y, folds) in data.items():
            arrays[f"{dataset}_X"], arrays[f"{dataset}_y"] = X, y
            arrays[f"{dataset}_train"] = np.array([f[0] for f in folds])
            arrays[f"{dataset}_test"] = np.array([f[1] for f in folds])
        np.savez(npz, **arrays)
        cmd = [python, os.path.abspath(__file__), "--worker", npz, "--out", out,
               "--algorithms", ",".join(algorithms)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
        if done.returncode != 0:
            return None, f"metric-learn worker failed: {done.stderr.strip()[-400:]}"
        with open(out) as fh:
            return json.load(fh), None


def _summary(cell):
    if cell is None:
        return {}
    if "error" in cell:
        return {"error": cell["error"]}
    acc, t = np.array(cell["accuracy"]), np.array(cell["time"])
    return {"acc_mean": float(acc.mean()), "acc_std": float(acc.std()),
            "time_median": float(np.median(t))}


def run(algorithms=ALGORITHMS, seeds=range(5), datasets=DATASETS, metric_learn=True):
    """The comparison rows: one dict per (algorithm, dataset) with metricfit's and (when
    available) metric-learn's 3-NN accuracy (mean, std over the seeds) and median fit time,
    the Euclidean 3-NN accuracy, and ``note`` (why metric-learn's side is missing)."""
    algorithms, seeds = list(algorithms), list(seeds)
    data = {}
    for dataset in datasets:
        X, y = load(dataset)
        data[dataset] = (np.ascontiguousarray(X, dtype=np.float64), y, splits(y, seeds))
    ours = evaluate(metricfit_estimator, algorithms, data)
    theirs, note = metric_learn_side(algorithms, data) if metric_learn else (None, "skipped")
    rows = []
    for algorithm in algorithms:
        for dataset, (X, y, folds) in data.items():
            key = f"{algorithm}|{dataset}"
            euclid = np.mean([knn_accuracy(X[tr], y[tr], X[te], y[te]) for tr, te in folds])
            rows.append({"algorithm": algorithm, "dataset": dataset, "seeds": len(seeds),
                         "euclidean_acc": float(euclid), "metricfit": _summary(ours[key]),
                         "metric_learn": _summary(theirs.get(key)) if theirs else {},
                         "note": note})
    return rows


def table(rows):
    """A markdown table of :func:`run`'s rows."""
    lines = ["| algorithm | data | Euclid 3-NN | metricfit 3-NN | metric-learn 3-NN | "
             "metricfit fit s | metric-learn fit s | speed-up |",
             "|---|---|---|---|---|---|---|---|"]

    def acc(side):
        if "error" in side:
            return "error"
        return f"{side['acc_mean']:.3f} ± {side['acc_std']:.3f}" if side else "n/a"

    for r in rows:
        a, b = r["metricfit"], r["metric_learn"]
        ta = f"{a['time_median']:.3f}" if "time_median" in a else "-"
        tb = f"{b['time_median']:.3f}" if "time_median" in b else "-"
        ratio = (f"{b['time_median'] / max(a['time_median'], 1e-9):.1f}x"
                 if "time_median" in a and "time_median" in b else "-")
        lines.append(f"| {r['algorithm']} | {r['dataset']} | {r['euclidean_acc']:.3f} | "
                     f"{acc(a)} | {acc(b)} | {ta} | {tb} | {ratio} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    algorithms = [a for a in args.algorithms.split(",") if a]
    if args.worker:
        return _worker(args.worker, algorithms, args.out)
    rows = run(algorithms, range(args.seeds), [d for d in args.datasets.split(",") if d])
    if rows and rows[0]["note"]:
        print(f"metric-learn side missing: {rows[0]['note']}")
    print(table(rows))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
