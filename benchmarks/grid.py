"""The grid: every pair loss x {linear, tanh, mlp, convnet} x {lbfgs, sgd} on digits pairs.

The protocol of ``metricfit verify`` (digits, the default): for each repeat r, the image-disjoint
train / validation / test split of :func:`metricfit.pairs.splits.digits_split` (1000 similar and
1000 dissimilar pairs each, random_state r), WPCA to 32 dimensions fitted on the training
images; the test maxDA (seed 004 eq. 14) of the fitted model's pair scores; mean +- SEM over
the repeats. Differences from ``verify``, for time: one lambda (1e-3, every learner's default)
instead of choosing among four on the validation pairs; small iteration budgets (defaults:
L-BFGS 100 iterations, SGD 1500 steps; convnet L-BFGS 15 iterations, SGD 400 steps: the
convnet costs ~100x more per pair, so its cells are under-trained). The convnet cells take
the 8x8 images themselves (pixels / 16), not WPCA vectors, through a small net
``ConvNet((8, 8), n_components=16, n_maps=(4, 8, 32))``; the other mappings map the 32-d WPCA
vectors to 32 dimensions (mlp: 32 hidden units). SGD holds out 10 % of the training pairs for
early stopping (checked every 100 steps, stop after 10 checks without improvement).

    python benchmarks/grid.py [--repeats 3] [--lbfgs-iter 100] [--sgd-iter 1500]
        [--convnet-lbfgs-iter 15] [--convnet-sgd-iter 400]
        [--learning-rate 1e-2] [--only LOSS[,LOSS]] [--json benchmarks/results/grid.json]
        [--markdown OUT.md]

LDML learns a Mahalanobis matrix and a bias, not a mapping: its row has the linear cells only.
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_info, threadpool_limits

from metricfit import LDML, WPCA, Siamese
from metricfit.losses import PAIR_LOSSES
from metricfit.mappings import ConvNet
from metricfit.metrics import max_decision_accuracy
from metricfit.pairs.splits import digits_split

MAPPINGS = ("linear", "tanh", "mlp", "convnet")
SOLVERS = ("lbfgs", "sgd")
LOSSES = tuple(PAIR_LOSSES) + ("ldml",)
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "grid.json"
WHY_EMPTY = "LDML learns M and b, not a mapping"


def make(loss, mapping, solver, args, seed):
    budgets = ((args.convnet_lbfgs_iter, args.convnet_sgd_iter) if mapping == "convnet"
               else (args.lbfgs_iter, args.sgd_iter))
    budget = budgets[SOLVERS.index(solver)]
    sgd = dict(learning_rate=args.learning_rate, batch_size=32, validation_interval=100,
               n_iter_no_change=10)
    if loss == "ldml":
        return LDML(solver=solver, max_iter=budget, random_state=seed, **sgd)
    if mapping == "convnet":
        mapping = ConvNet((8, 8), n_components=16, n_maps=(4, 8, 32))
    return Siamese(loss=loss, mapping=mapping, solver=solver, max_iter=budget, lam=1e-3,
                   random_state=seed, **sgd)


def run_cell(loss, mapping, solver, data, args):
    values, seconds = [], 0.0
    for r, (vectors, pixels, split) in enumerate(data):
        X = pixels if mapping == "convnet" else vectors
        (train, y_train), _, (test, y_test) = split
        start = time.perf_counter()
        est = make(loss, mapping, solver, args, r).fit(X[train], y_train)
        seconds += time.perf_counter() - start
        values.append(max_decision_accuracy(y_test, est.pair_score(X[test]))[0])
    values = np.array(values)
    sem = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
    return {"loss": loss, "mapping": mapping, "solver": solver, "maxda": float(values.mean()),
            "sem": float(sem), "values": values.tolist(), "fit_seconds": seconds}


def prepare(repeats):
    digits = load_digits()
    pixels = digits.images.reshape(len(digits.images), -1) / 16.0
    data = []
    for r in range(repeats):
        split = digits_split(digits.target, random_state=r)
        parts = [split[name] for name in ("train", "val", "test")]
        images = np.unique(parts[0][0])
        vectors = WPCA(n_components=32).fit(pixels[images]).transform(pixels)
        data.append((vectors, pixels, parts))
    return data


def table(cells):
    by = {(c["loss"], c["mapping"], c["solver"]): c for c in cells}
    head = "| loss | " + " | ".join(f"{m} {s}" for m in MAPPINGS for s in SOLVERS) + " |"
    lines = [head, "|---" * (1 + len(MAPPINGS) * len(SOLVERS)) + "|"]
    for loss in dict.fromkeys(c["loss"] for c in cells):
        row = []
        for m in MAPPINGS:
            for s in SOLVERS:
                c = by.get((loss, m, s))
                row.append("-" if c is None else f"{100 * c['maxda']:.1f} ± {100 * c['sem']:.1f}")
        lines.append(f"| {loss} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--lbfgs-iter", type=int, default=100)
    p.add_argument("--sgd-iter", type=int, default=1500)
    p.add_argument("--convnet-lbfgs-iter", type=int, default=15)
    p.add_argument("--convnet-sgd-iter", type=int, default=400)
    p.add_argument("--learning-rate", type=float, default=1e-2)
    p.add_argument("--only", default=None, help="comma-separated losses")
    p.add_argument("--mappings", default=",".join(MAPPINGS))
    p.add_argument("--threads", type=int, default=1, help="BLAS threads")
    p.add_argument("--json", type=Path, default=DEFAULT_JSON)
    p.add_argument("--markdown", type=Path, default=None)
    args = p.parse_args()
    losses = args.only.split(",") if args.only else LOSSES
    mappings = args.mappings.split(",")
    warnings.simplefilter("ignore", ConvergenceWarning)  # the budgets are the point
    start = time.perf_counter()
    with threadpool_limits(args.threads):
        blas = [(i["internal_api"], i["num_threads"]) for i in threadpool_info()]
        print(f"BLAS {blas}; repeats {args.repeats}; L-BFGS {args.lbfgs_iter} iterations "
              f"(convnet {args.convnet_lbfgs_iter}); SGD {args.sgd_iter} steps of 32 pairs "
              f"(convnet {args.convnet_sgd_iter}), learning rate {args.learning_rate}")
        data = prepare(args.repeats)
        cells = []
        for loss in losses:
            for mapping in mappings:
                if loss == "ldml" and mapping != "linear":
                    continue
                for solver in SOLVERS:
                    cells.append(run_cell(loss, mapping, solver, data, args))
                    c = cells[-1]
                    print(f"{loss:20s} {mapping:8s} {solver:6s} maxDA {100 * c['maxda']:5.1f} "
                          f"+- {100 * c['sem']:4.1f}  fit {c['fit_seconds']:6.1f} s", flush=True)
    total = time.perf_counter() - start
    text = table(cells)
    print(text)
    print(f"total {total:.0f} s; '-': {WHY_EMPTY}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                     "blas": blas, "seconds": total, "cells": cells}, indent=1))
    if args.markdown:
        args.markdown.write_text(text + "\n")


if __name__ == "__main__":
    main()
