"""Verification experiments: the methods of seed 002 Table I and the protocols that run them.

A *method* is an estimator with the pair API (``fit(pairs, y)``, ``decision_function``);
``make_method`` builds the ones of seed 002 Table I by name. ``select_and_test`` is one
experiment of seed 002 III.A/III.E: fit on the training pairs for each lambda, keep the lambda
and the threshold with the best accuracy on the validation pairs, report the test accuracy at
that threshold (and, threshold-free, the test maxDA and EER of seed 004 eq. 14).
"""

import functools
from dataclasses import asdict, dataclass

import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.utils import check_random_state

from .learners import CSML, DDML, LDML, TSML, CosineSimilarity
from .metrics import accuracy_at_threshold, equal_error_rate, max_decision_accuracy
from .pairs import sample_pairs
from .whitening import WCCN, WPCA

METHODS = ("baseline", "wccn", "csml-i", "csml-wccn", "tsml-i", "tsml-wccn", "tsml-sim",
           "ddml-i", "ddml-sim", "ldml")
DEFAULT_METHODS = ("baseline", "wccn", "csml-i", "tsml-i", "tsml-wccn", "tsml-sim")
DEFAULT_LAMS = (1e-3, 1e-2, 1e-1, 1.0)


def make_method(name, lam=None, max_iter=200):
    """The estimator of a seed 002 Table I method ('tsml-sim': TSML-I on similar pairs only;
    'ddml-*': the linear DDML of seed 004 with the same initialisation and selection)."""
    learned = {
        "csml-i": lambda: CSML(lam=lam, max_iter=max_iter),
        "csml-wccn": lambda: CSML(init="wccn", lam=lam, max_iter=max_iter),
        "tsml-i": lambda: TSML(lam=lam, max_iter=max_iter),
        "tsml-wccn": lambda: TSML(init="wccn", lam=lam, max_iter=max_iter),
        "tsml-sim": lambda: TSML(lam=lam, similar_only=True, max_iter=max_iter),
        "ddml-i": lambda: DDML(lam=lam, max_iter=max_iter),
        "ddml-sim": lambda: DDML(lam=lam, similar_only=True, max_iter=max_iter),
        "ldml": lambda: LDML(lam=lam, max_iter=max_iter),
    }
    if name == "baseline":
        return CosineSimilarity()
    if name == "wccn":
        return make_pipeline(WCCN(), CosineSimilarity())
    if name not in learned:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}.")
    return learned[name]()


def has_lam(name):
    return name not in ("baseline", "wccn")


@dataclass
class Result:
    """One method on one experiment: test accuracy at the validation-chosen threshold."""

    method: str
    accuracy: float
    maxda: float
    eer: float
    lam: float
    threshold: float


def select_and_test(name, train, val, test, lams=DEFAULT_LAMS, max_iter=200):
    """Fit ``name`` on ``train`` for each lambda, choose lambda and threshold on ``val`` (best
    accuracy), evaluate on ``test``. Each of train/val/test is ``(pairs, y)``."""
    best = None
    for lam in lams if has_lam(name) else [np.nan]:
        method = make_method(name, None if np.isnan(lam) else lam, max_iter).fit(*train)
        val_accuracy, threshold = max_decision_accuracy(val[1], method.decision_function(val[0]))
        if best is None or val_accuracy > best[0]:
            best = (val_accuracy, threshold, lam, method)
    _, threshold, lam, method = best
    scores = method.decision_function(test[0])
    return Result(
        method=name,
        accuracy=accuracy_at_threshold(test[1], scores, threshold),
        maxda=max_decision_accuracy(test[1], scores)[0],
        eer=equal_error_rate(test[1], scores)[0],
        lam=float(lam),
        threshold=float(threshold),
    )


def lfw_restricted_rotation(n_folds=10):
    """Seed 002 III.A: experiment e trains on folds e..e+7, validates on e+8, tests on e+9
    (mod 10); the first uses (1..8), 9, 10 in the paper's 1-based numbering."""
    for e in range(n_folds):
        yield [(e + j) % n_folds for j in range(n_folds - 2)], (e + 8) % n_folds, (e + 9) % n_folds


def run_lfw_restricted(vectors, pair_index, y, fold, methods=DEFAULT_METHODS, n_components=100,
                       lams=DEFAULT_LAMS, max_iter=200, progress=None):
    """The LFW View 2 restricted protocol on image vectors (n_images, n_features): one
    :func:`run_experiment` per fold rotation. Returns one list of :class:`Result` per
    experiment."""
    experiments = []
    for e, (train_folds, val_fold, test_fold) in enumerate(lfw_restricted_rotation()):
        splits = [(pair_index[mask], y[mask])
                  for mask in (np.isin(fold, train_folds), fold == val_fold, fold == test_fold)]
        experiments.append(run_experiment(vectors, splits, methods, n_components, lams,
                                          max_iter, functools.partial(progress, e)
                                          if progress else None))
    return experiments


def run_experiment(vectors, splits, methods, n_components, lams=DEFAULT_LAMS, max_iter=200,
                   progress=None):
    """One experiment: WPCA to ``n_components`` fitted on the distinct images of the training
    pairs (no labels, no identities), then :func:`select_and_test` for every method.

    ``splits`` is ``[(index_pairs, y)]`` for train, validation and test: row indices into
    ``vectors`` (n_images, n_features). ``progress(result)`` is called after each method.
    """
    wpca = WPCA(n_components=n_components).fit(vectors[np.unique(splits[0][0])])
    embedded = wpca.transform(vectors)  # (n_images, n_components)
    data = [(embedded[index_pairs], y) for index_pairs, y in splits]
    results = []
    for name in methods:
        results.append(select_and_test(name, *data, lams=lams, max_iter=max_iter))
        if progress:
            progress(results[-1])
    return results


def digits_split(labels, n_pairs=1000, random_state=0):
    """Image-disjoint pairs on a labelled set: half of the images for training pairs, a
    quarter each for validation and test pairs (classes are shared, images are not).
    Returns ``{split: (index_pairs, y)}`` with ``n_pairs`` similar and dissimilar pairs each."""
    rng = check_random_state(random_state)
    labels = np.asarray(labels)
    order = rng.permutation(labels.shape[0])
    quarter = labels.shape[0] // 4
    parts = {"train": order[2 * quarter:], "val": order[:quarter],
             "test": order[quarter:2 * quarter]}
    out = {}
    for split, rows in parts.items():
        index_pairs, y = sample_pairs(labels[rows], n_pairs, n_pairs, random_state=rng)
        out[split] = (rows[index_pairs], y)
    return out


def run_digits(images, labels, methods=DEFAULT_METHODS, n_components=32, lams=DEFAULT_LAMS,
               n_repeats=5, max_iter=200, progress=None):
    """:func:`run_experiment` on ``n_repeats`` random :func:`digits_split` splits. Returns one
    list of Results per repeat."""
    experiments = []
    for repeat in range(n_repeats):
        split = digits_split(labels, random_state=repeat)
        splits = [split[name] for name in ("train", "val", "test")]
        experiments.append(run_experiment(images, splits, methods, n_components, lams, max_iter,
                                          functools.partial(progress, repeat)
                                          if progress else None))
    return experiments


def summarise(experiments):
    """Mean and standard error of the mean over experiments, per method, in method order."""
    rows = []
    for column in zip(*experiments):
        row = {"method": column[0].method, "n_experiments": len(column)}
        for key in ("accuracy", "maxda", "eer"):
            values = np.array([getattr(r, key) for r in column])
            sem = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
            row[key], row[key + "_sem"] = float(values.mean()), float(sem)
        row["lams"] = [r.lam for r in column]
        rows.append(row)
    return rows


def format_table(rows):
    """A plain-text table of :func:`summarise` rows, percentages with +- SEM."""
    lines = [f"{'method':<11} {'accuracy %':>15} {'maxDA %':>15} {'EER %':>15}"]
    for row in rows:
        cells = [f"{100 * row[k]:6.2f} +- {100 * row[k + '_sem']:4.2f}"
                 for k in ("accuracy", "maxda", "eer")]
        lines.append(f"{row['method']:<11} " + " ".join(f"{c:>15}" for c in cells))
    return "\n".join(lines)


def as_records(experiments):
    """Every Result as a dict, with its experiment number (for JSON)."""
    return [dict(asdict(r), experiment=e) for e, results in enumerate(experiments) for r in results]
