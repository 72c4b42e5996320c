#!/usr/bin/env python
"""Seed 004 Tables 3 and 5 on our LFW data, and seed 001's LDML / MkNN (unrestricted).

TSML and DDML with the linear, single-layer tanh ("Nonlinear") and two-layer tanh ("MLP")
mappings, trained on all pairs or on similar pairs only ("-Sim"), in the restricted setting
(the official View 2 pairs of the training folds) and the unrestricted one (pairs generated
from the identities of the training folds), scored by maxDA (seed 004 eq. 14) and EER on the
official 600 pairs of the test fold, mean +- SEM over the ten View 2 folds.

Protocol (experiment e = 0..9, folds numbered 0..9):

* test fold e (its official 600 pairs, the same in both settings); validation fold (e - 1) mod
  10 (its official 600 pairs, for model selection in both settings); the other 8 folds train.
  View 2 folds are identity-disjoint, so no test or validation identity reaches training.
* features: sqrt (default) or raw 62x47 pixel intensities, then WPCA to 100 dimensions fitted
  on training images only: the distinct images of the training pairs (restricted) or every
  image of the people of the 8 training folds (unrestricted).
* restricted training pairs: the 8 x 600 = 4800 official pairs of the training folds;
  unrestricted: ``--n-pairs`` similar + ``--n-pairs`` dissimilar pairs generated from the
  images of the people of the training folds, identity-balanced like the official pairs
  (:func:`identity_balanced_pairs`; ``--pair-sampler sample_pairs`` uses
  :func:`metricfit.pairs.sample_pairs`, which is uniform over all within-class pairs and so
  dominated by the few people with hundreds of images). With the balanced sampler the linear
  models are also trained on sample_pairs' pairs, for contrast.
* learners: L-BFGS (metricfit's default) on L2-normalised inputs (``normalize=True``, seed
  004 4.1), for each lambda of a small grid; the validation maxDA is computed after every
  L-BFGS iteration and the best iterate is kept (early stopping on the validation fold, the
  role of seed 004 Algorithm 1's validation check), a fit stops ``--patience`` iterations
  after its best one; lambda and iterate with the best validation maxDA are tested.
  The final iterates (no early stopping) are recorded too.
* references: cosine on WPCA (baseline), WCCN + cosine; momentum SGD with the paper's
  settings for TSML-Linear(-Sim), restricted (its early stopping uses metricfit's internal
  10% split of the training pairs, as in the paper).
* seed 001 (unrestricted): LDML on plain PCA (35 and 100 dims) of the same features,
  trained on the same generated pairs; MkNN on the labelled training images with L2 on
  PCA-100, the LDML-100 metric and the TSML-Linear (unrestricted) metric as base metrics.

Usage::

    python benchmarks/lfw_tables_004.py [--experiments 10] [--features sqrt] [--n-pairs 10000]
                                        [--json PATH] [--threads 1]

Progress goes to stderr; the tables to stdout; every per-experiment number to the JSON file
(default ``benchmarks/results/lfw_tables_004.json``).
"""

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning

import metricfit
from metricfit import TSML, WCCN, WPCA
from metricfit.datasets import load_lfw
from metricfit.mappings import MAPPINGS, MLP, l2_normalise
from metricfit.metrics import accuracy_at_threshold, equal_error_rate, max_decision_accuracy
from metricfit.pairs import sample_pairs
from metricfit.pairs.tags import PairTags

try:
    from metricfit import DDML
except ImportError:  # metricfit 0.1.0 does not export DDML at the top level
    from metricfit.learners.ddml import DDML

try:
    from metricfit import LDML, MkNN
except ImportError:  # being written elsewhere: the section is skipped
    LDML = MkNN = None

N_COMPONENTS = 100
N_HIDDEN = 100
UNIFORM = "unrestricted-sample_pairs"
MAPPING_NAMES = {"linear": "Linear", "tanh": "Nonlinear", "mlp": "MLP"}
LOSSES = {"tsml": TSML, "ddml": DDML}
LAMS = {"linear": (1e-3, 1e-2, 1e-1), "tanh": (1e-4, 1e-3), "mlp": (1e-4, 1e-3)}
LDML_LAMS = (1e-3, 1e-2, 1e-1, 1.0)
LDML_DIMS = (35, 100)
MKNN_NEIGHBORS = (10, 50, 100)
SGD = dict(solver="sgd", lam=0.0, learning_rate=1e-4, momentum=0.99, batch_size=2,
           validation_interval=1000, n_iter_no_change=20, max_iter=100_000)

# Seed 004 (Fisher-vector faces, WPCA 500, SGD): Tables 3 and 5, maxDA %, (restricted,
# unrestricted). Table 5 as printed in the seed is shifted by one row (its "DDML-Linear" row
# holds Table 3's WCCN numbers and "DDML-Linear-Sim" appears twice); read realigned here,
# DDML-Linear-Sim = 91.03 as in the seed's Table 8.
PAPER = {
    "baseline": (None, 84.83), "wccn": (91.10, 91.17),
    "tsml-linear": (87.95, 92.03), "tsml-tanh": (86.23, 91.43), "tsml-mlp": (84.10, 89.30),
    "tsml-linear-sim": (91.90, 92.40), "tsml-tanh-sim": (90.58, 91.47),
    "tsml-mlp-sim": (88.98, 89.03),
    "ddml-linear": (88.27, 92.48), "ddml-tanh": (88.12, 92.23), "ddml-mlp": (88.60, 91.53),
    "ddml-linear-sim": (91.03, 91.80), "ddml-tanh-sim": (90.82, 91.42),
    "ddml-mlp-sim": (89.57, 89.53),
}

START = time.perf_counter()


def log(message):
    print(f"[{time.perf_counter() - START:7.1f}s] {message}", file=sys.stderr, flush=True)


# -- data and protocol -----------------------------------------------------------------------


def load_data(features):
    lfw = load_lfw()
    images = lfw.images.reshape(lfw.images.shape[0], -1).astype(np.float64)
    vectors = np.sqrt(images) if features == "sqrt" else images
    image_fold = lfw.people_fold_view2[lfw.person]
    pairs, fold = lfw.pairs_view2.astype(np.int64), lfw.pairs_view2_fold
    if not ((image_fold[pairs[:, 0]] == fold) & (image_fold[pairs[:, 1]] == fold)).all():
        raise RuntimeError("an official View 2 pair has an image outside its fold")
    y = np.where(lfw.pairs_view2_label == 1, 1, -1).astype(np.int8)
    return dict(vectors=vectors, person=lfw.person, image_fold=image_fold, pairs=pairs, y=y,
                fold=fold)


def split_folds(e, n_folds=10):
    """(training folds, validation fold, test fold) of experiment e."""
    val = (e - 1) % n_folds
    return [f for f in range(n_folds) if f not in (e, val)], val, e


def official(data, Z, folds):
    keep = np.isin(data["fold"], folds)
    return Z[data["pairs"][keep]], data["y"][keep]


def identity_balanced_pairs(labels, n_similar, n_dissimilar, random_state=None):
    """Pairs drawn identity by identity, like the official LFW pairs: a similar pair is a
    uniformly drawn identity with >= 2 images and two distinct images of it; a dissimilar
    pair two distinct uniformly drawn identities and one image of each. No pair is repeated
    (an identity whose pairs are used up is redrawn). Returns (index_pairs, y) as
    :func:`metricfit.pairs.sample_pairs` (similar first, i < j, y in {-1, +1}).

    :func:`metricfit.pairs.sample_pairs` draws uniformly among all within-class pairs, i.e.
    an identity with m images gets weight m (m - 1) / 2: on LFW a handful of people (George
    W Bush has 530 images) then supply 60-85% of the similar pairs."""
    rng = np.random.RandomState(random_state)
    _, codes, counts = np.unique(labels, return_inverse=True, return_counts=True)
    order = np.argsort(codes, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    multi = np.flatnonzero(counts >= 2)
    capacity = int(np.sum(counts[multi] * (counts[multi] - 1) // 2))
    if n_similar > capacity:
        raise ValueError(f"only {capacity} similar pairs exist, {n_similar} requested")
    seen, similar, dissimilar = set(), [], []
    while len(similar) < n_similar:
        c = multi[rng.randint(multi.size, size=4 * (n_similar - len(similar)) + 16)]
        a = rng.randint(counts[c])
        b = rng.randint(counts[c] - 1)
        b += b >= a  # two distinct positions within the identity
        for ci, ai, bi in zip(c, a, b, strict=True):
            i, j = sorted((int(order[starts[ci] + ai]), int(order[starts[ci] + bi])))
            if (i, j) not in seen and len(similar) < n_similar:
                seen.add((i, j))
                similar.append((i, j))
    n_ids = counts.size
    while len(dissimilar) < n_dissimilar:
        m = 2 * (n_dissimilar - len(dissimilar)) + 16
        c1 = rng.randint(n_ids, size=m)
        c2 = rng.randint(n_ids - 1, size=m)
        c2 += c2 >= c1  # two distinct identities
        i_all = order[starts[c1] + rng.randint(counts[c1])]
        j_all = order[starts[c2] + rng.randint(counts[c2])]
        for i, j in zip(i_all, j_all, strict=True):
            i, j = sorted((int(i), int(j)))
            if (i, j) not in seen and len(dissimilar) < n_dissimilar:
                seen.add((i, j))
                dissimilar.append((i, j))
    index_pairs = np.array(similar + dissimilar, dtype=np.int64)
    y = np.concatenate([np.ones(len(similar), np.int8), -np.ones(len(dissimilar), np.int8)])
    return index_pairs, y


def experiment_data(data, e, n_pairs, sampler="balanced", dtype=np.float32):
    """Both settings of experiment e: ``{setting: dict(train, val, test, ...)}``."""
    train_folds, val_fold, test_fold = split_folds(e)
    X = data["vectors"]
    out = {}
    # restricted: WPCA on the distinct images of the official training pairs
    train_mask = np.isin(data["fold"], train_folds)
    wpca = WPCA(n_components=N_COMPONENTS).fit(X[np.unique(data["pairs"][train_mask])])
    Z = wpca.transform(X).astype(dtype)
    out["restricted"] = dict(train=official(data, Z, train_folds), val=official(data, Z, val_fold),
                             test=official(data, Z, test_fold), Z=Z)
    # unrestricted: WPCA on every image of the training people, generated pairs
    train_images = np.flatnonzero(np.isin(data["image_fold"], train_folds))
    labels = data["person"][train_images]
    wpca = WPCA(n_components=N_COMPONENTS).fit(X[train_images])
    Z = wpca.transform(X).astype(dtype)
    generate = identity_balanced_pairs if sampler == "balanced" else sample_pairs
    index_pairs, s = generate(labels, n_pairs, n_pairs, random_state=e)
    out["unrestricted"] = dict(train=(Z[train_images][index_pairs], s),
                               val=official(data, Z, val_fold), test=official(data, Z, test_fold),
                               Z=Z, train_images=train_images, labels=labels,
                               index_pairs=index_pairs)
    if sampler == "balanced":  # the linear models also on sample_pairs' pairs, for contrast
        other, s_other = sample_pairs(labels, n_pairs, n_pairs, random_state=e)
        out[UNIFORM] = dict(out["unrestricted"], train=(Z[train_images][other], s_other),
                            index_pairs=other)
    similar_ids = labels[index_pairs[s == 1, 0]]
    _, per_id = np.unique(similar_ids, return_counts=True)
    info = dict(pair_sampler=sampler, similar_pair_identities=int(per_id.size),
                similar_pairs_top5_identity_share=float(np.sort(per_id)[::-1][:5].sum()
                                                        / per_id.sum()),
                train_folds=train_folds, val_fold=val_fold, test_fold=test_fold,
                n_train_images_unrestricted=int(train_images.size),
                n_train_people_unrestricted=int(np.unique(labels).size),
                n_pairs_restricted=int(out["restricted"]["train"][1].size),
                n_similar_unrestricted=int((s == 1).sum()),
                n_dissimilar_unrestricted=int((s == -1).sum()))
    return out, info


# -- scores and evaluation -------------------------------------------------------------------


def cosine(a, b):
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.einsum("ij,ij->i", a, b) / np.maximum(norms, np.finfo(a.dtype).tiny)


def evaluate(val, test, val_scores, test_scores):
    """Validation maxDA, and on the test pairs maxDA, EER and the accuracy at the threshold
    chosen on the validation pairs (seed 002's protocol)."""
    val_maxda, threshold = max_decision_accuracy(val[1], val_scores)
    return dict(val_maxda=val_maxda, test_maxda=max_decision_accuracy(test[1], test_scores)[0],
                test_eer=equal_error_rate(test[1], test_scores)[0],
                test_accuracy=accuracy_at_threshold(test[1], test_scores, threshold))


class SiameseScorer:
    """Pair scores of a siamese learner for any parameter vector theta (what the learner's
    ``pair_score`` computes after fit, available at every iteration)."""

    def __init__(self, loss, mapping, d, normalize):
        self.kind = "cosine" if loss == "tsml" else "distance"
        self.mapping = MLP(d, N_HIDDEN, d) if mapping == "mlp" else MAPPINGS[mapping](d, d)
        self.normalize, self.d = normalize, d
        self._prepared = {}

    def _inputs(self, pairs):
        key = id(pairs)
        if key not in self._prepared:
            flat = pairs.reshape(-1, self.d)
            self._prepared[key] = (l2_normalise(flat) if self.normalize else flat, pairs)
        return self._prepared[key][0]

    def __call__(self, theta, pairs):
        flat = self._inputs(pairs)
        Z = self.mapping.transform(np.ravel(theta).astype(flat.dtype), flat)
        Z = Z.reshape(pairs.shape[0], 2, -1)
        if self.kind == "cosine":
            return cosine(Z[:, 0], Z[:, 1])
        return -np.sum((Z[:, 0] - Z[:, 1]) ** 2, axis=1)


class EarlyStopping:
    """L-BFGS callback: validation maxDA after every iteration, best iterate kept, stop
    (StopIteration, handled by scipy) ``patience`` iterations after the best one."""

    def __init__(self, score, val, patience):
        self.score, self.val, self.patience = score, val, patience
        self.best = (-np.inf, 0, None)
        self.curve = []

    def __call__(self, params, n_iter):
        params = copy_params(params)
        accuracy = max_decision_accuracy(self.val[1], self.score(params, self.val[0]))[0]
        self.curve.append(round(float(accuracy), 5))
        if accuracy > self.best[0]:
            self.best = (accuracy, n_iter, params)
        if self.patience and n_iter - self.best[1] >= self.patience:
            raise StopIteration


def copy_params(params):
    """A copy of the parameters handed to a callback: an array, or LDML's (M, b)."""
    if isinstance(params, tuple):
        return tuple(np.array(p, dtype=np.float64, copy=True) for p in params)
    return np.array(params, dtype=np.float64, copy=True)


def fit_and_select(make, score, split, lams, patience, final_score=None):
    """Fit ``make(lam, callback)`` on split['train'] for each lambda; keep the lambda and
    iterate of best validation maxDA. ``final_score(estimator, pairs)`` scores the last
    iterate (default: ``score`` of the fitted parameters). Returns (record, best params,
    fitted estimator)."""
    if final_score is None:
        def final_score(estimator, pairs):
            return score(final_params(estimator), pairs)

    train, val, test = split["train"], split["val"], split["test"]
    per_lam, best = [], None
    for lam in lams:
        stopper = EarlyStopping(score, val, patience)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            estimator = make(lam, stopper).fit(*train)
        seconds = time.perf_counter() - start
        if stopper.best[2] is None:  # no iteration at all: keep the start
            raise RuntimeError(f"no L-BFGS iteration for lam={lam}")
        theta = stopper.best[2]
        at_best = evaluate(val, test, score(theta, val[0]), score(theta, test[0]))
        at_final = evaluate(val, test, final_score(estimator, val[0]),
                            final_score(estimator, test[0]))
        row = dict(lam=lam, best_iter=int(stopper.best[1]), n_iter=int(estimator.n_iter_),
                   seconds=round(seconds, 3), early_stopped=at_best, final=at_final,
                   val_curve=stopper.curve)
        per_lam.append(row)
        if best is None or at_best["val_maxda"] > best[0]["early_stopped"]["val_maxda"]:
            best = (row, theta, estimator)
    final_choice = max(per_lam, key=lambda r: r["final"]["val_maxda"])
    row, theta, estimator = best
    record = dict(row["early_stopped"], lam=row["lam"], best_iter=row["best_iter"],
                  n_iter=row["n_iter"],
                  no_early_stopping=dict(final_choice["final"], lam=final_choice["lam"],
                                         n_iter=final_choice["n_iter"]),
                  per_lam=per_lam, seconds=round(sum(r["seconds"] for r in per_lam), 3))
    return record, theta, estimator


def final_params(estimator):
    if hasattr(estimator, "components_") and not hasattr(estimator, "params_"):
        return estimator.components_
    return estimator.params_


def run_siamese(loss, mapping, similar_only, split, args):
    d = split["train"][0].shape[2]
    score = SiameseScorer(loss, mapping, d, args.normalize)

    def make(lam, callback):
        return LOSSES[loss](mapping=mapping, n_hidden=N_HIDDEN if mapping == "mlp" else None,
                            normalize=args.normalize, lam=lam, similar_only=similar_only,
                            max_iter=args.max_iter, tol=0.0, random_state=0, callback=callback)

    patience = args.patience if (mapping != "linear" or args.linear_patience) else None
    return fit_and_select(make, score, split, LAMS[mapping], patience)


def run_references(split, setting):
    """Cosine on WPCA, and WCCN (on pairs / on labelled images) then cosine."""
    val, test = split["val"], split["test"]
    out = {"baseline": evaluate(val, test, cosine(val[0][:, 0], val[0][:, 1]),
                                cosine(test[0][:, 0], test[0][:, 1]))}
    if setting == "restricted":
        wccn = WCCN().fit(*split["train"])  # each similar pair a class (seed 002 III.D)
    else:
        wccn = WCCN().fit(split["Z"][split["train_images"]], split["labels"])
    V, T = wccn.transform(val[0]), wccn.transform(test[0])
    out["wccn"] = evaluate(val, test, cosine(V[:, 0], V[:, 1]), cosine(T[:, 0], T[:, 1]))
    return out


def run_sgd(similar_only, split, args):
    val, test = split["val"], split["test"]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = TSML(normalize=args.normalize, similar_only=similar_only, random_state=0,
                   **SGD).fit(*split["train"])
    record = evaluate(val, test, est.pair_score(val[0]), est.pair_score(test[0]))
    record.update(n_iter=int(est.n_iter_), seconds=round(time.perf_counter() - start, 3))
    return record


# -- seed 001: LDML on PCA, MkNN (unrestricted) ----------------------------------------------


class FixedEmbedding(BaseEstimator):
    """A fitted linear metric as MkNN's base metric: ``x -> L x`` (inputs L2-normalised
    first when ``normalize``), declaring the learner's score kind."""

    def __init__(self, components=None, normalize=False, score_kind="distance"):
        self.components = components
        self.normalize = normalize
        self.score_kind = score_kind

    def __metricfit_tags__(self):
        return PairTags(score_kind=self.score_kind)

    def fit(self, X=None, y=None):
        self.components_ = np.asarray(self.components)
        return self

    def transform(self, X):
        X = np.asarray(X)
        X = l2_normalise(X) if self.normalize else X
        return X @ self.components_.T.astype(X.dtype)


def ldml_scorer(theta, pairs):
    M, b = theta
    D = pairs[:, 0] - pairs[:, 1]
    return b - np.einsum("ij,ij->i", D @ M.astype(D.dtype), D)


def psd_root(M):
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    return np.sqrt(np.clip(w, 0, None))[:, None] * V.T


def run_seed001(data, split, tsml_theta, args, e):
    """LDML on PCA-35/100 and MkNN (L2 on PCA-100, LDML-100, TSML-Linear) on experiment e."""
    records, X = {}, data["vectors"]
    images, labels = split["train_images"], split["labels"]
    val_idx = data["pairs"][data["fold"] == split_folds(e)[1]]
    test_idx = data["pairs"][data["fold"] == e]
    yv, yt = split["val"][1], split["test"][1]
    ldml_metric = None
    for dim in LDML_DIMS:
        pca = PCA(n_components=dim, random_state=0).fit(X[images])
        # isotropic rescale (mean variance 1 per kept dimension): the geometry of plain PCA,
        # only lambda gets a data-independent scale
        P = (pca.transform(X) / np.sqrt(pca.explained_variance_.mean())).astype(np.float32)
        sub = dict(train=(P[images][split["index_pairs"]], split["train"][1]),
                   val=(P[val_idx], yv), test=(P[test_idx], yt))

        def make(lam, callback):
            return LDML(lam=lam, max_iter=args.max_iter, tol=0.0,
                        callback=lambda M, b, n_iter: callback((M, b), n_iter))

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # negative eigenvalues of a free M
            record, theta, _ = fit_and_select(
                make, ldml_scorer, sub, LDML_LAMS, args.patience,
                final_score=lambda est, pairs: est.pair_score(pairs))
        records[f"ldml-pca{dim}"] = record
        log(f"  exp {e} unrestricted LDML-PCA{dim}: test maxDA {record['test_maxda']:.4f} "
            f"(lam {record['lam']:g}, iter {record['best_iter']}, {record['seconds']:.1f}s)")
        if dim == max(LDML_DIMS):
            P100, ldml_metric = P, psd_root(theta[0])
            (Pv, _), (Pt, _) = sub["val"], sub["test"]
            records["l2-pca100"] = evaluate(sub["val"], sub["test"],
                                            -np.sum((Pv[:, 0] - Pv[:, 1]) ** 2, axis=1),
                                            -np.sum((Pt[:, 0] - Pt[:, 1]) ** 2, axis=1))
    bases = {
        "l2-pca100": (P100, None),
        "ldml-pca100": (P100, FixedEmbedding(ldml_metric, False, "distance").fit()),
        "tsml-linear": (split["Z"], FixedEmbedding(tsml_theta.reshape(N_COMPONENTS, -1),
                                                   args.normalize, "cosine").fit()),
    }
    for base, (F, metric) in bases.items():
        for k in MKNN_NEIGHBORS:
            start = time.perf_counter()
            mknn = MkNN(n_neighbors=k, metric=metric).fit(F[images], labels)
            rec = evaluate((None, yv), (None, yt), mknn.pair_score(F[val_idx]),
                           mknn.pair_score(F[test_idx]))
            rec["seconds"] = round(time.perf_counter() - start, 3)
            records[f"mknn{k}-{base}"] = rec
    log(f"  exp {e} unrestricted MkNN: " + ", ".join(
        f"{name} {r['test_maxda']:.4f}" for name, r in records.items() if name.startswith("mknn")))
    return records


# -- tables ----------------------------------------------------------------------------------


def mean_sem(values):
    values = np.asarray(values, dtype=np.float64)
    sem = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
    return float(values.mean()), float(sem)


def cell(records, key="test_maxda"):
    if not records:
        return "-"
    m, s = mean_sem([r[key] for r in records])
    e, _ = mean_sem([r["test_eer"] for r in records])
    return f"{100 * m:5.2f} +- {100 * s:4.2f} / {100 * e:5.2f}"


def method_label(name):
    if name in ("baseline", "wccn"):
        return {"baseline": "Baseline (cosine)", "wccn": "WCCN"}[name]
    loss, mapping, *sim = name.split("-")
    return f"{loss.upper()}-{MAPPING_NAMES[mapping]}" + ("-Sim" if sim else "")


def grid(title, rows, columns, paper=None, width=30):
    """A text table: ``rows`` = [(label, {column: records})], cells :func:`cell`."""
    head = f"{'Approach':<36}" + "".join(f"{c:>{width}}" for c in columns)
    if paper:
        head += f"{'paper R / U':>16}"
    lines = [title, head, "-" * len(head)]
    for label, by_column in rows:
        row = f"{label:<36}" + "".join(f"{cell(by_column.get(c, [])):>{width}}" for c in columns)
        if paper and label in paper:
            r, u = paper[label]
            row += f"{('-' if r is None else f'{r:.2f}') + ' / ' + f'{u:.2f}':>16}"
        lines.append(row)
    return "\n".join(lines)


def seed001_label(name):
    bases = {"l2-pca100": "L2, PCA 100", "ldml-pca100": "LDML, PCA 100",
             "tsml-linear": "TSML-Linear, WPCA 100"}
    if name.startswith("mknn"):
        k, base = name[4:].split("-", 1)
        return f"MkNN k={k} ({bases[base]})"
    return {"ldml-pca35": "LDML (PCA 35)", "ldml-pca100": "LDML (PCA 100)",
            "l2-pca100": "L2 distance (PCA 100)"}[name]


def paired(results, a, b, setting_a, setting_b=None):
    """Mean +- SEM over experiments of maxDA(a) - maxDA(b), and how often a > b (ties)."""
    A = np.array([r["test_maxda"] for r in results[setting_a][a]])
    B = np.array([r["test_maxda"] for r in results[setting_b or setting_a][b]])
    m, s = mean_sem(A - B)
    return m, s, int((A > B).sum()), int((A == B).sum()), A.size


def fmt_diff(label, d):
    m, s, wins, ties, n = d
    return (f"  {label:<46} {100 * m:+6.2f} +- {100 * s:4.2f} pts   "
            f"({wins}/{n} folds better, {ties} ties)")


def findings(results, losses, mappings):
    lines = ["Paper findings (paired differences of test maxDA over the folds):",
             "1. similar pairs only wins when restricted (X-Sim minus X, restricted):"]
    for loss in losses:
        for mapping in mappings:
            name = f"{loss}-{mapping}"
            lines.append(fmt_diff(f"{method_label(name + '-sim')} - {method_label(name)}",
                                  paired(results, name + "-sim", name, "restricted")))
    lines.append("2. linear beats the nonlinear mappings when restricted (Linear minus other):")
    for loss in losses:
        for sim in ("", "-sim"):
            for mapping in [m for m in mappings if m != "linear"]:
                a, b = f"{loss}-linear{sim}", f"{loss}-{mapping}{sim}"
                lines.append(fmt_diff(f"{method_label(a)} - {method_label(b)}",
                                      paired(results, a, b, "restricted")))
    lines.append("3. unrestricted beats restricted (unrestricted minus restricted):")
    for name in ["baseline", "wccn"] + [f"{loss}-{m}{sim}" for loss in losses
                                        for sim in ("", "-sim") for m in mappings]:
        lines.append(fmt_diff(method_label(name),
                              paired(results, name, name, "unrestricted", "restricted")))
    return "\n".join(lines)


# -- main ------------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--experiments", type=int, default=10, help="run experiments 0..N-1")
    p.add_argument("--features", choices=("sqrt", "raw"), default="sqrt")
    p.add_argument("--n-pairs", type=int, default=10000,
                   help="unrestricted: similar and (as many) dissimilar pairs generated")
    p.add_argument("--pair-sampler", choices=("balanced", "sample_pairs"), default="balanced",
                   help="unrestricted pair generator: identity-balanced (default) or "
                        "metricfit.pairs.sample_pairs (uniform over all within-class pairs)")
    p.add_argument("--json", default=str(Path(__file__).parent / "results" / "lfw_tables_004.json"))
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (threadpoolctl)")
    p.add_argument("--max-iter", type=int, default=200, help="L-BFGS iterations per fit")
    p.add_argument("--patience", type=int, default=30,
                   help="stop a fit this many iterations after its best validation maxDA")
    p.add_argument("--linear-patience", action="store_true",
                   help="also stop linear fits early (default: run them to convergence)")
    p.add_argument("--no-normalize", dest="normalize", action="store_false",
                   help="do not L2-normalise the learners' inputs")
    p.add_argument("--losses", default="tsml,ddml")
    p.add_argument("--mappings", default="linear,tanh,mlp")
    p.add_argument("--no-sgd", dest="sgd", action="store_false")
    p.add_argument("--no-seed001", dest="seed001", action="store_false")
    return p.parse_args(argv)


def main(argv=None):  # noqa: C901 (the tables' sequence of runs, one branch per option)
    args = parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    losses, mappings = args.losses.split(","), args.mappings.split(",")
    methods = [f"{loss}-{m}{sim}" for loss in losses for sim in ("", "-sim") for m in mappings]
    log(f"metricfit {metricfit.__version__}; features {args.features}, WPCA {N_COMPONENTS}, "
        f"{args.n_pairs}+{args.n_pairs} unrestricted pairs, normalize={args.normalize}, "
        f"threads {args.threads}, LDML/MkNN {'available' if LDML else 'NOT available'}")
    data = load_data(args.features)
    results = {"restricted": {}, "unrestricted": {}}
    if args.pair_sampler == "balanced":
        results[UNIFORM] = {}
    seed001, sgd, infos = {}, {}, []
    for e in range(args.experiments):
        t0 = time.perf_counter()
        splits, info = experiment_data(data, e, args.n_pairs, args.pair_sampler)
        info["experiment"] = e
        infos.append(info)
        log(f"exp {e}: train folds {info['train_folds']}, val {info['val_fold']}, test "
            f"{info['test_fold']}; {info['similar_pair_identities']} identities in the similar "
            f"pairs (top 5: {100 * info['similar_pairs_top5_identity_share']:.0f}%); WPCA and "
            f"pairs in {time.perf_counter() - t0:.1f}s")
        for setting, split in splits.items():
            if setting != UNIFORM:
                for name, rec in run_references(split, setting).items():
                    results[setting].setdefault(name, []).append(dict(rec, experiment=e))
            for name in methods:
                if setting == UNIFORM and "-linear" not in name:
                    continue
                loss, mapping, *sim = name.split("-")
                record, theta, _ = run_siamese(loss, mapping, bool(sim), split, args)
                record["experiment"] = e
                results[setting].setdefault(name, []).append(record)
                if setting == "unrestricted" and name == "tsml-linear":
                    tsml_theta = theta
                log(f"  exp {e} {setting:<12} {method_label(name):<20} test maxDA "
                    f"{record['test_maxda']:.4f} EER {record['test_eer']:.4f} (val "
                    f"{record['val_maxda']:.4f}, lam {record['lam']:g}, iter "
                    f"{record['best_iter']}/{record['n_iter']}, {record['seconds']:.1f}s)")
        if args.sgd:
            for sim in (False, True):
                rec = run_sgd(sim, splits["restricted"], args)
                name = "TSML-Linear" + ("-Sim" if sim else "") + " (SGD)"
                sgd.setdefault(name, []).append(dict(rec, experiment=e))
                log(f"  exp {e} restricted   {name:<26} test maxDA {rec['test_maxda']:.4f} "
                    f"({rec['n_iter']} steps, {rec['seconds']:.1f}s)")
        if args.seed001 and LDML is not None and "tsml-linear" in methods:
            for name, rec in run_seed001(data, splits["unrestricted"], tsml_theta, args,
                                         e).items():
                seed001.setdefault(name, []).append(dict(rec, experiment=e))
        log(f"exp {e} done in {time.perf_counter() - t0:.1f}s")

    total = time.perf_counter() - START
    n = args.experiments
    out = [f"LFW View 2, {n} experiments, {args.features} pixels -> WPCA {N_COMPONENTS}; "
           f"unrestricted: {args.n_pairs} similar + {args.n_pairs} dissimilar generated pairs; "
           "cells: mean maxDA +- SEM / mean EER (%) on the official test pairs; "
           "paper = seed 004 (Fisher vectors, maxDA %)."]
    refs = ["baseline", "wccn"]
    columns = {"restricted": "Restricted", "unrestricted": "Unrestricted",
               UNIFORM: "Unrestricted (sample_pairs)"}
    paper = {method_label(k): v for k, v in PAPER.items()}
    for loss, number in (("tsml", 3), ("ddml", 5)):
        if loss in losses:
            names = refs + [m for m in methods if m.startswith(loss)]
            rows = [(method_label(name), {columns[st]: results[st].get(name, [])
                                          for st in ("restricted", "unrestricted")})
                    for name in names]
            out.append(grid(f"\nTable {number} ({loss.upper()}): L-BFGS, lambda and iterate "
                            "chosen on the validation fold; maxDA +- SEM / EER, %",
                            rows, ["Restricted", "Unrestricted"], paper))
    if "linear" in mappings:
        rows = []
        for name in [m for m in methods if "-linear" in m]:
            rows.append((method_label(name), {columns[st]: results[st].get(name, [])
                                              for st in results}))
            rows.append((method_label(name) + " (no ES)", {
                columns[st]: [r["no_early_stopping"] for r in results[st].get(name, [])]
                for st in results}))
        out.append(grid("\nLinear models: early-stopped vs. no early stopping (L-BFGS to "
                        "convergence or max_iter, lambda by validation), and the unrestricted "
                        "pairs of metricfit.pairs.sample_pairs instead of identity-balanced ones",
                        rows, [columns[st] for st in results]))
    if sgd:
        out.append(grid("\nMomentum SGD as seed 004 Alg. 1 (lr 1e-4, momentum 0.99, 1 similar + "
                        "1 dissimilar pair per step, lam 0, check every 1000 steps on a 10% "
                        "split of the training pairs, stop after 20 checks without improvement, "
                        "<= 100000 steps)",
                        [(name, {"Restricted": recs}) for name, recs in sgd.items()],
                        ["Restricted"]))
    if seed001:
        out.append(grid("\nSeed 001 methods, unrestricted (LDML on plain PCA with L-BFGS and "
                        "early stopping on the validation fold; MkNN on the labelled training "
                        "images, base metric in brackets)",
                        [(seed001_label(name), {"Unrestricted": recs})
                         for name, recs in seed001.items()], ["Unrestricted"]))
    elif args.seed001:
        out.append("\nSeed 001 methods: metricfit.LDML / metricfit.MkNN not available; not run.")
    if n > 1 and set(mappings) == {"linear", "tanh", "mlp"}:
        out.append("\n" + findings(results, losses, mappings))
    out.append(f"\nTotal wall time {total / 60:.1f} min.")
    print("\n".join(out))

    payload = dict(
        config=dict(vars(args), n_components=N_COMPONENTS, n_hidden=N_HIDDEN,
                    lams={k: list(v) for k, v in LAMS.items()}, ldml_lams=list(LDML_LAMS),
                    ldml_dims=list(LDML_DIMS), mknn_neighbors=list(MKNN_NEIGHBORS), sgd=SGD,
                    protocol="test fold e, validation fold (e-1)%10, 8 training folds"),
        environment=dict(python=platform.python_version(), numpy=np.__version__,
                         metricfit=metricfit.__version__, machine=platform.machine(),
                         cpus=os.cpu_count(), load_average=os.getloadavg()),
        experiments=infos, results=results, sgd=sgd, seed001=seed001,
        summary={setting: {name: dict(zip(("maxda", "maxda_sem"), mean_sem(
            [r["test_maxda"] for r in recs]), strict=True),
            eer=mean_sem([r["test_eer"] for r in recs])[0])
            for name, recs in res.items()} for setting, res in
            dict(results, sgd=sgd, seed001=seed001).items()},
        tables="\n".join(out), total_seconds=total)
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, default=float))
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
