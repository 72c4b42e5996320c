"""Why TSML-I falls below WCCN on histogram descriptors: start, iteration cap, lambda range.

LFW View 2 restricted, sqrt-LBP (or ``--features``), WPCA to 100 fitted on each experiment's
training images, the first ``--experiments`` experiments of seed 002's rotation. For each
experiment: WCCN (closed form) and TSML started from the identity (TSML-I) and from WCCN
(TSML-WCCN), each fitted once per lambda with a cap of ``--max-iter`` L-BFGS iterations; the
matrix is snapshotted at iterations 25, 50, 100, 200 (the CLI's default cap), 500 and at the
end, so every (cap, lambda) point comes from one fit (L-BFGS's path does not depend on the
cap). At each point: validation accuracy (threshold chosen there) and test accuracy at that
threshold; lambda is then chosen on the validation fold as the protocol does, per cap. The
test folds are only read to report.

    python benchmarks/tsml_i_vs_wccn.py                 # 3 experiments, a few minutes
    python benchmarks/tsml_i_vs_wccn.py --tol 1e-9 --out benchmarks/results/tsml_tight.json

Writes ``benchmarks/results/tsml_i_vs_wccn.json``.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from metricfit import cli, datasets
from metricfit.learners import TSML
from metricfit.metrics import accuracy_at_threshold, max_decision_accuracy
from metricfit.pairs import FoldRotation
from metricfit.whitening import WCCN, WPCA

SNAPSHOTS = (25, 50, 100, 200, 500)


def cosine(A, pairs):
    a, b = pairs[:, 0] @ A.T, pairs[:, 1] @ A.T
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def evaluate(A, val, test):
    val_acc, threshold = max_decision_accuracy(val[1], cosine(A, val[0]))
    return float(val_acc), float(accuracy_at_threshold(test[1], cosine(A, test[0]), threshold))


def experiment(vectors, splits, lams, max_iter, tol):
    images = np.unique(splits[0][0])
    embedded = WPCA(n_components=100).fit(vectors[images]).transform(vectors)
    train, val, test = [(embedded[pairs], y) for pairs, y in splits]
    wccn = WCCN().fit(*train)
    out = {"wccn": evaluate(wccn.components_, val, test), "runs": []}
    for init in ("identity", "wccn"):
        for lam in lams:
            snaps = {}

            def keep(A, n_iter, snaps=snaps):
                if n_iter in SNAPSHOTS:
                    snaps[n_iter] = A.copy()

            start = time.perf_counter()
            model = TSML(init=init, lam=lam, max_iter=max_iter, tol=tol, callback=keep).fit(*train)
            seconds = time.perf_counter() - start
            snaps[max_iter] = model.components_
            for cap in sorted(snaps):
                if cap <= model.n_iter_ or cap == max_iter:
                    out["runs"].append({"init": init, "lam": lam, "cap": cap,
                                        "n_iter": min(cap, model.n_iter_),
                                        "converged": bool(model.n_iter_ < cap),
                                        "val_test": evaluate(snaps[cap], val, test),
                                        "seconds": seconds})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--features", default="sqrt-lbp")
    parser.add_argument("--experiments", type=int, default=3)
    parser.add_argument("--lams", default="1e-4,1e-3,1e-2,1e-1,1")
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument("--tol", type=float, default=1e-5, help="L-BFGS gtol (TSML's tol)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"
                                             / "tsml_i_vs_wccn.json"))
    args = parser.parse_args(argv)
    lams = [float(v) for v in args.lams.split(",")]
    start = time.perf_counter()
    lfw = datasets.load_lfw()
    vectors = cli._features(lfw.images, args.features, quiet=True)
    y = np.where(lfw.pairs_view2_label == 1, 1, -1)
    results = []
    with threadpool_limits(1):
        rotation = FoldRotation(lfw.pairs_view2_fold, n_train_folds=8)
        for e in range(args.experiments):
            train, (val,), test = rotation.rotation(e)
            splits = [(lfw.pairs_view2[np.isin(lfw.pairs_view2_fold, folds)],
                       y[np.isin(lfw.pairs_view2_fold, folds)])
                      for folds in (train, [val], [test])]
            results.append(experiment(vectors, splits, lams, args.max_iter, args.tol))
            print(f"experiment {e + 1} done, {time.perf_counter() - start:.0f} s", flush=True)

    caps = sorted({r["cap"] for res in results for r in res["runs"]})
    wccn = np.mean([res["wccn"][1] for res in results])
    print(f"\n{args.features}, {len(results)} experiments, tol {args.tol:g}; WCCN test accuracy "
          f"{100 * wccn:.2f} %; most L-BFGS iterations of any fit "
          f"{max(r['n_iter'] for res in results for r in res['runs'])}")
    print("mean test accuracy % with lambda chosen on validation [chosen lambdas; mean "
          "iterations; share of fits converged]")
    table = {}
    for init in ("identity", "wccn"):
        for cap in caps:
            accs, chosen, iters, conv = [], [], [], []
            for res in results:
                runs = [r for r in res["runs"] if r["init"] == init and r["cap"] == cap]
                if len(runs) < len(lams):
                    continue
                best = max(runs, key=lambda r: r["val_test"][0])
                accs.append(best["val_test"][1])
                chosen.append(best["lam"])
                iters += [r["n_iter"] for r in runs]
                conv += [r["converged"] for r in runs]
            if accs:
                table[f"{init}/{cap}"] = {"test": float(np.mean(accs)), "lams": chosen}
                print(f"TSML-{'I' if init == 'identity' else 'WCCN'} cap {cap:5d}: "
                      f"{100 * np.mean(accs):.2f} [{', '.join(f'{v:g}' for v in chosen)}; "
                      f"{np.mean(iters):.0f}; {np.mean(conv):.2f}]")
    print("per lambda, at the final cap (mean validation / test accuracy %):")
    for init in ("identity", "wccn"):
        for lam in lams:
            runs = [r for res in results for r in res["runs"]
                    if r["init"] == init and r["lam"] == lam and r["cap"] == args.max_iter]
            val = 100 * np.mean([r["val_test"][0] for r in runs])
            print(f"  {init:8s} lambda {lam:g}: {val:.2f}"
                  f" / {100 * np.mean([r['val_test'][1] for r in runs]):.2f}, iterations "
                  f"{np.mean([r['n_iter'] for r in runs]):.0f}")
    seconds = time.perf_counter() - start
    print(f"{seconds:.0f} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as out:
        json.dump({"features": args.features, "lams": lams, "max_iter": args.max_iter,
                   "tol": args.tol,
                   "results": results, "table": table, "seconds": seconds}, out, indent=1)


if __name__ == "__main__":
    main()
