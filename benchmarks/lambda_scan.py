"""Every lambda of a learned metric, per experiment, on the user's embeddings and an LFW-style
pairs file (issue 28 item 3): what each lambda gives on the validation fold and on the test
fold, in accuracy (at the validation fold's threshold) and minDCF(0.01), against the start
("no learning", ``NO_LEARNING``: the cosine of the inputs for TSML / CSML from I).

Not a selection: it reads the test folds of every lambda, to show whether *any* lambda of
a method beats its start there (the question behind "learned metrics never lose to their
start"), and how well the validation fold alone foretells it.

    python benchmarks/lambda_scan.py lfw_dlib.npz pairs.txt tsml-sim,csml-i \\
        1e-3,1e-2,1e-1,1,10 --json scan.json

One BLAS thread. Prints, per method and lambda, the mean over the experiments of the test
accuracy and minDCF(0.01), their paired difference to the start, and the same on validation.
"""

import argparse
import json

import numpy as np
from threadpoolctl import threadpool_limits

from metricfit.datasets import load_embeddings, read_pairs_over_ids
from metricfit.experiments.evaluation import fit_and_test
from metricfit.experiments.methods import make_method
from metricfit.experiments.selection import NO_LEARNING, starts_centred
from metricfit.metrics import min_dcf
from metricfit.pairs import FoldRotation


def scan(X, index_pairs, y, fold, name, lams, prior=0.01, max_iter=200):
    """Per experiment of the fold rotation and lambda: validation and test accuracy / minDCF."""
    rotation = FoldRotation(fold, n_train_folds=np.unique(fold).size - 2)
    out = []
    for e in range(rotation.get_n_splits()):
        train, (val,), test = rotation.rotation(e)
        splits = [(X[index_pairs[m]], y[m])
                  for m in (np.isin(fold, train), fold == val, fold == test)]
        for lam in lams:
            r = fit_and_test(name, make_method(name, lam, max_iter), *splits, lam)
            out.append(dict(experiment=e, lam=lam, val_acc=r.val_maxda,
                            val_dcf=min_dcf(r.val_y, r.val_scores, prior)[0],
                            acc=r.accuracy, dcf=r.min_dcf))
    return out


def summary(records, start):
    """Rows (lam, test acc %, test dcf, paired d acc, paired d dcf, val d acc, val d dcf)."""
    by = {}
    for r in records:
        by.setdefault(r["lam"], {})[r["experiment"]] = r
    base = by[start]
    rows = []
    for lam, per in by.items():
        e = sorted(per)
        val = {key: np.array([per[k][key] for k in e]) for key in ("acc", "dcf", "val_acc",
                                                                   "val_dcf")}
        ref = {key: np.array([base[k][key] for k in e]) for key in val}
        rows.append((lam, 100 * val["acc"].mean(), val["dcf"].mean(),
                     100 * (val["acc"] - ref["acc"]).mean(), (val["dcf"] - ref["dcf"]).mean(),
                     100 * (val["val_acc"] - ref["val_acc"]).mean(),
                     (val["val_dcf"] - ref["val_dcf"]).mean()))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("embeddings")
    parser.add_argument("pairs")
    parser.add_argument("methods")
    parser.add_argument("lams")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    data = load_embeddings(args.embeddings)
    index_pairs, y, fold = read_pairs_over_ids(args.pairs, data.ids, data.labels)
    lams = [float(v) for v in args.lams.split(",")]
    report = {}
    with threadpool_limits(1):
        for name in args.methods.split(","):
            grid = lams + ([NO_LEARNING] if starts_centred(name) else [])
            report[name] = scan(data.X, index_pairs, y, fold, name, grid)
            start = NO_LEARNING if starts_centred(name) else grid[0]
            print(f"\n{name} (paired differences to lambda {start:g})")
            print("| lambda | test acc % | test minDCF | d acc | d minDCF | val d acc | "
                  "val d minDCF |\n|---|---|---|---|---|---|---|")
            for row in summary(report[name], start):
                print("| {:g} | {:.2f} | {:.3f} | {:+.2f} | {:+.3f} | {:+.2f} | {:+.3f} |"
                      .format(*row))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f)


if __name__ == "__main__":
    main()
