"""Seed 001 section 6 on LFW: clustering labelling cost and one-exemplar recognition, L2 against
learned metrics, on faces of people never seen in training.

Per test fold f (View 2 ``people.txt`` folds; f = 0..9):

- training: identity-balanced unrestricted pairs (``--pairs`` similar + as many dissimilar)
  among all images of the people of the 8 folds other than f and f - 1; WPCA to
  ``--n-components`` fitted on those images;
- validation: the official View 2 pairs of fold f - 1 choose each learner's lambda (maxDA);
- test faces: all images of the people of fold f, restricted to its ``--people`` (17 in the
  paper) most frequent people for clustering, all of them as queries for recognition.

Clustering (seed 001 Fig. 6): complete linkage on each metric's distances over the test
people's faces; the minimum labelling cost over all numbers of clusters, the number of
clusters where it is reached, and the share of faces right when each cluster is labelled
by its majority. One-exemplar recognition (Table 5): one random exemplar per test person
(``--draws`` draws), every other face of the fold a query, accept the best exemplar when its
score clears the threshold at equal error rate; precision = correctly recognised / accepted.

Metrics: L2 on the descriptor (the paper's baseline), L2 after WPCA, cosine after WPCA, and
the learners on the WPCA output. Mean +- SEM over the folds (each fold's value averaged over
its draws for recognition).

    python benchmarks/lfw_applications.py --features sqrt-lbp --json results/lfw_apps.json
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from metricfit import datasets
from metricfit.experiments.applications import (
    complete_linkage_cost_curve,
    one_exemplar_recognition,
    pairwise_scores,
)
from metricfit.features import LBP, SquareRoot
from metricfit.learners import LDML, TSML, CosineSimilarity
from metricfit.metrics import max_decision_accuracy
from metricfit.pairs import unrestricted_pairs
from metricfit.whitening import WPCA

LEARNERS = {"tsml": lambda lam: TSML(lam=lam), "tsml-sim": lambda lam: TSML(lam=lam,
            similar_only=True), "ldml": lambda lam: LDML(lam=lam)}
LAMS = (1e-3, 1e-2, 1e-1, 1.0)


def describe(images, kind):
    """(n, d) float64 descriptors: pixels, sqrt, lbp or sqrt-lbp (10x10 blocks)."""
    if kind in ("pixels", "sqrt"):
        vectors = images.reshape(len(images), -1).astype(np.float64)
        return np.sqrt(vectors) if kind == "sqrt" else vectors
    vectors = LBP(block_size=(10, 10)).fit_transform(images).astype(np.float64)
    return SquareRoot().fit_transform(vectors) if kind == "sqrt-lbp" else vectors


def fit_selected(name, train, val, lams=LAMS):
    """The learner ``name`` fitted on ``train`` with the lambda of best validation maxDA."""
    best = None
    for lam in lams:
        model = LEARNERS[name](lam).fit(*train)
        accuracy = max_decision_accuracy(val[1], model.pair_score(val[0]))[0]
        if best is None or accuracy > best[0]:
            best = (accuracy, lam, model)
    return best[2], best[1]


def clustering(scorer, faces, labels):
    curve = complete_linkage_cost_curve(faces, labels, metric=scorer or "euclidean")
    return {"min_cost": curve.best_cost, "n_clusters": curve.best_n_clusters,
            "correct": curve.best_accuracy}


def recognition(scorer, faces, person, targets, draws, rng):
    """Mean over draws of seed 001 Table 5's outcome for one random exemplar per target."""
    keys = ("precision", "correctly_recognised", "wrongly_recognised", "wrongly_rejected",
            "correctly_rejected", "wrongly_accepted")
    sums = dict.fromkeys(keys, 0.0)
    for _ in range(draws):
        exemplars = np.array([rng.choice(np.flatnonzero(person == t)) for t in targets])
        queries = np.setdiff1d(np.arange(len(person)), exemplars)
        S = pairwise_scores(scorer, faces[queries], faces[exemplars])
        result = one_exemplar_recognition(S, person[exemplars], person[queries])
        for key in keys:
            sums[key] += getattr(result, key) / draws
    return sums


def run_fold(f, data, vectors, args):
    person, fold_of_person = data.person, data.people_fold_view2
    image_fold = fold_of_person[person]
    val_fold = (f - 1) % 10
    train_mask = (image_fold != f) & (image_fold != val_fold)
    index, y = unrestricted_pairs(person, train_mask, args.pairs, random_state=f,
                                  balance="identity")
    wpca = WPCA(n_components=args.n_components).fit(vectors[np.unique(index)])
    embedded = wpca.transform(vectors)
    keep = data.pairs_view2_fold == val_fold
    val = (embedded[data.pairs_view2[keep]], np.where(data.pairs_view2_label[keep] == 1, 1, -1))
    test = np.flatnonzero(image_fold == f)
    ids, counts = np.unique(person[test], return_counts=True)
    targets = ids[np.argsort(-counts, kind="stable")[:args.people]]
    in_targets = np.isin(person[test], targets)
    scorers = {"L2 (descriptor)": (None, vectors), "L2 (WPCA)": (None, embedded),
               "cosine (WPCA)": (CosineSimilarity().fit(embedded[index], y), embedded)}
    lams = {}
    for name in args.methods:
        model, lams[name] = fit_selected(name, (embedded[index], y), val)
        scorers[name] = (model, embedded)
    rng = np.random.default_rng(f)
    out = {}
    for name, (scorer, space) in scorers.items():
        faces = space[test]
        state = rng.bit_generator.state
        out[name] = {**clustering(scorer, faces[in_targets], person[test][in_targets]),
                     **recognition(scorer, faces, person[test], targets, args.draws, rng)}
        rng.bit_generator.state = state  # every metric gets the same exemplar draws
    info = {"fold": f, "n_test_faces": int(test.size), "n_test_people": int(ids.size),
            "n_target_faces": int(in_targets.sum()), "lams": lams,
            "n_train_pairs": int(len(y))}
    return info, out


def summary_table(folds):
    names = list(folds[0][1])
    keys = ("min_cost", "n_clusters", "correct", "precision", "correctly_recognised",
            "wrongly_recognised", "wrongly_rejected", "correctly_rejected", "wrongly_accepted")
    rows = {}
    for name in names:
        rows[name] = {}
        for key in keys:
            values = np.array([out[name][key] for _, out in folds], dtype=float)
            sem = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
            rows[name][key] = (float(values.mean()), float(sem))
    return rows


def print_table(rows):
    print(f"{'metric':<16} {'min cost':>14} {'clusters':>9} {'correct %':>10} "
          f"{'precision %':>14} {'right':>7} {'wrong':>7} {'rej.':>7} {'acc. other':>10}")
    for name, r in rows.items():
        print(f"{name:<16} {r['min_cost'][0]:7.1f} +- {r['min_cost'][1]:4.1f} "
              f"{r['n_clusters'][0]:9.1f} {100 * r['correct'][0]:10.1f} "
              f"{100 * r['precision'][0]:7.1f} +- {100 * r['precision'][1]:3.1f} "
              f"{r['correctly_recognised'][0]:7.1f} {r['wrongly_recognised'][0]:7.1f} "
              f"{r['wrongly_rejected'][0]:7.1f} {r['wrongly_accepted'][0]:10.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--features", default="sqrt-lbp",
                        choices=["pixels", "sqrt", "lbp", "sqrt-lbp"])
    parser.add_argument("--methods", default="tsml,tsml-sim,ldml")
    parser.add_argument("--folds", type=int, default=10, help="test folds 0..folds-1")
    parser.add_argument("--pairs", type=int, default=10000, help="similar training pairs")
    parser.add_argument("--n-components", type=int, default=100)
    parser.add_argument("--people", type=int, default=17, help="most frequent test people")
    parser.add_argument("--draws", type=int, default=10, help="random exemplar draws per fold")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    args.methods = args.methods.split(",")
    start = time.perf_counter()
    with threadpool_limits(args.threads):
        blas = [(i["internal_api"], i["num_threads"]) for i in threadpool_info()]
        data = datasets.load_lfw(args.data_home)
        vectors = describe(data.images, args.features)
        folds, n_warnings = [], 0
        for f in range(args.folds):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                folds.append(run_fold(f, data, vectors, args))
            n_warnings += len(caught)
            info, out = folds[-1]
            print(f"fold {f}: {info['n_target_faces']} faces of {args.people} people among "
                  f"{info['n_test_faces']} of {info['n_test_people']}; lambdas {info['lams']}; "
                  + ", ".join(f"{k} cost {v['min_cost']} prec {100 * v['precision']:.1f}"
                              for k, v in out.items()), flush=True)
    rows = summary_table(folds)
    seconds = time.perf_counter() - start
    print(f"LFW {args.features}, {args.folds} test folds, {args.pairs} + {args.pairs} "
          f"training pairs; BLAS {blas}; {seconds:.0f} s; {n_warnings} warnings while fitting "
          "(LDML: iteration cap, indefinite metric_)")
    print_table(rows)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"args": vars(args), "seconds": seconds,
                                               "folds": folds, "summary": rows}, indent=1))


if __name__ == "__main__":
    main()
