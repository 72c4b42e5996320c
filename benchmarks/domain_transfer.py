"""Domain transfer (issue 28 item 4): back-ends trained on LFW dlib embeddings, tested on AT&T
and Yale, with no in-domain data, with unlabelled in-domain data (Kaldi's PLDA adaptation)
and with a few labelled in-domain pairs.

Trials (docs/results/embeddings.md, "Domain transfer"): subject number s (in sorted label
order) goes to fold s mod n_folds (AT&T 10 folds of 4 subjects, Yale 5 folds of 3: the
design that reproduces that page's rows); in each fold every pair of its images, one image
each side. Per fold EER and minDCF(0.01), then mean +- SEM over the folds.

Rows, all trained on the 7,701 LFW View 2 images with their identity labels through
``metricfit score``'s own code (:func:`metricfit.cli.score.build_method` / ``fit_method``):

- no in-domain data: cosine; WCCN + cosine; PLDA (WPCA-84); WPCA-84 + length norm + PLDA;
  TSML-Sim (default lambda, 3,000 + 3,000 LFW pairs drawn identity by identity, no WPCA);
- unlabelled in-domain data: the two PLDAs adapted (:meth:`metricfit.PLDA.adapt`, Kaldi's
  scales) to the in-domain images *not* in the test fold; and the first without Kaldi's
  mean-difference term (``mean_diff_scale=0``: the domain's mean shift is not counted as
  variance);
- N labelled in-domain pairs (N/2 same-subject, N/2 different-subject, drawn from the images
  of the other folds' subjects with :func:`metricfit.pairs.sample_pairs`, seed = fold):
  TSML-Sim trained on them alone from the identity (default lambda); TSML-Sim fine-tuned from
  the LFW TSML-Sim matrix (init = that matrix, default lambda: the regulariser pulls towards
  it); PLDA (WPCA-84, and its adapted version) refitted on LFW plus the images of those
  pairs with their subject labels. And the pairs fit a linear calibration
  (:class:`metricfit.backend.LinearCalibration` at prior 0.01) of the rows without labelled
  data and of the rows trained on those same N pairs: the calibration tables report
  actDCF(0.01) (threshold-dependent; EER and minDCF do not change under an increasing affine
  map), next to PLDA's uncalibrated LLRs.

    python benchmarks/domain_transfer.py lfw_dlib.npz att.npz yale.npz --json out.json
"""

import argparse
import json
import sys
import time

import numpy as np

from metricfit import TSML, metrics
from metricfit.backend import LinearCalibration, score_sets
from metricfit.cli.score import adapt_plda, build_method, fit_method
from metricfit.pairs import sample_pairs

SETS = {"AT&T": 10, "Yale": 5}  # folds
PRIOR = 0.01
WPCA = 84  # the rank of the LFW dlib vectors (docs/results/embeddings.md)


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lfw"), parser.add_argument("att"), parser.add_argument("yale")
    parser.add_argument("--pairs", default="20,100", help="labelled in-domain pairs (list)")
    parser.add_argument("--json", default="domain_transfer.json")
    return parser.parse_args(argv)


def fold_trials(labels, subjects):
    """Indices of the fold's images and its trials (i, j, y) within them."""
    rows = np.flatnonzero(np.isin(labels, subjects))
    i, j = np.triu_indices(rows.size, 1)
    return rows, rows[i], rows[j], np.where(labels[rows[i]] == labels[rows[j]], 1, -1)


def scores_of(learner, X, i, j):
    return score_sets(learner, [X[[k]] for k in i], [X[[k]] for k in j])


def source_models(lfw_X, lfw_labels):
    """The back-ends trained on LFW (name -> fitted learner), and their fit times."""
    spec = {"cosine": ("cosine", None), "WCCN + cosine": ("wccn", None),
            "PLDA (WPCA-84)": ("plda", WPCA), "lnorm + PLDA (WPCA-84)": ("plda-lnorm", WPCA),
            "TSML-Sim (LFW)": ("tsml-sim", None)}
    models, seconds = {}, {}
    for name, (method, wpca) in spec.items():
        start = time.perf_counter()
        fit_name = "baseline" if method == "cosine" else method
        models[name] = fit_method(build_method(method, wpca=wpca), fit_name, lfw_X, lfw_labels)
        seconds[name] = time.perf_counter() - start
    return models, seconds


def in_domain_pairs(labels, others, n, seed):
    """n labelled pairs (n/2 same-subject, n/2 not) among the images ``others``."""
    index, y = sample_pairs(labels[others], n // 2, n - n // 2, random_state=seed)
    return others[index], y


def labelled_rows(models, lfw, X, labels, others, n, fold):
    """The rows that need N labelled in-domain pairs, and those pairs (index, y)."""
    index, y = in_domain_pairs(labels, others, n, seed=fold)
    lfw_X, lfw_labels = lfw
    A0 = models["TSML-Sim (LFW)"].components_
    rows = {
        f"TSML-Sim on {n} pairs (from I)": TSML(similar_only=True).fit(X[index], y),
        f"TSML-Sim LFW + {n} pairs (fine-tuned)":
            TSML(similar_only=True, init=A0).fit(X[index], y),
    }
    points = np.unique(index)
    joint_X = np.concatenate([lfw_X, X[points]])
    joint_labels = np.concatenate([lfw_labels.astype(str), [f"in-domain {s}" for s in
                                                              labels[points]]])
    plda = fit_method(build_method("plda", wpca=WPCA), "plda", joint_X, joint_labels)
    rows[f"PLDA LFW + {n} pairs' images"] = plda
    rows[f"PLDA LFW + {n} pairs' images, adapted"] = adapt_plda(plda, X[others])
    return rows, (index, y)


def evaluate(y, s, calibration=None):
    out = {"eer": metrics.equal_error_rate(y, s)[0], "min_dcf": metrics.min_dcf(y, s, PRIOR)[0]}
    if calibration is not None:
        out["act_dcf"] = metrics.act_dcf(y, calibration(s), PRIOR)
    return out


def run_set(name, X, labels, models, lfw, n_pairs):
    """Per fold: every row's EER, minDCF and calibrated actDCF (dict row -> list of dicts)."""
    subjects = np.unique(labels)
    n_folds = SETS[name]
    results = {}
    for fold in range(n_folds):
        fold_subjects = subjects[np.arange(subjects.size) % n_folds == fold]
        rows, i, j, y = fold_trials(labels, fold_subjects)
        others = np.flatnonzero(~np.isin(labels, fold_subjects))
        fold_models = dict(models)
        for base in ("PLDA (WPCA-84)", "lnorm + PLDA (WPCA-84)"):
            fold_models[f"{base}, adapted"] = adapt_plda(models[base], X[others])
        fold_models["PLDA (WPCA-84), adapted, mean_diff_scale 0"] = adapt_plda(
            models["PLDA (WPCA-84)"], X[others], mean_diff_scale=0.0)
        calib_pairs, uses = {}, {}  # row -> the N labelled pairs it was trained with
        for n in n_pairs:
            extra, calib_pairs[n] = labelled_rows(models, lfw, X, labels, others, n, fold)
            fold_models.update(extra)
            uses.update(dict.fromkeys(extra, n))
        for row, learner in fold_models.items():
            s = scores_of(learner, X, i, j)
            entry = evaluate(y, s)
            if "PLDA" in row:
                entry["act_dcf_raw"] = metrics.act_dcf(y, s, PRIOR)  # the LLR as it is
            for n, (index, yc) in calib_pairs.items():
                if uses.get(row, n) != n:
                    continue
                cal = LinearCalibration(prior=PRIOR).fit(
                    scores_of(learner, X, index[:, 0], index[:, 1]), yc)
                entry[f"act_dcf_cal{n}"] = metrics.act_dcf(y, cal.transform(s), PRIOR)
            results.setdefault(row, []).append(entry)
        print(f"{name} fold {fold}: {y.size} trials ({(y == 1).sum()} target)", file=sys.stderr,
              flush=True)
    return results


def mean_sem(values):
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)), float(np.median(v))


def table(results, key, scale=1.0, fmt="{:.2f} +- {:.2f}", base=None):
    """Markdown rows: one per back-end, one column per data set, the lowest mean in bold.
    With ``base`` (a row name): the per-fold difference row - base, mean +- SEM (paired)."""
    names = list(next(iter(results.values())))
    cells = {}
    for set_name, rows in results.items():
        stats = {}
        for r in names:
            if key not in rows[r][0]:
                continue
            values = np.array([e[key] * scale for e in rows[r]])
            if base is not None:
                values = values - np.array([e[key] * scale for e in rows[base]])
            stats[r] = mean_sem(values)
        best = min(v[0] for v in stats.values())
        cells[set_name] = {r: (f"**{fmt.format(*v)}**" if v[0] == best else fmt.format(*v))
                           for r, v in stats.items()}
    shown = [r for r in names if all(r in c for c in cells.values()) and r != base]
    return [f"| {r} | " + " | ".join(cells[s][r] for s in results) + " |" for r in shown]


def print_table(results, key, what, **kwargs):
    print("\n| back-end | " + " | ".join(f"{s} {what}" for s in results) + " |")
    print("|---|" + "---|" * len(results))
    print("\n".join(table(results, key, **kwargs)))


def main(argv=None):
    args = parse(argv)
    start = time.perf_counter()
    n_pairs = [int(n) for n in args.pairs.split(",")]
    lfw = np.load(args.lfw)
    lfw_X, lfw_labels = lfw["X"], lfw["labels"]
    models, fit_seconds = source_models(lfw_X, lfw_labels)
    results = {}
    for name, path in (("AT&T", args.att), ("Yale", args.yale)):
        data = np.load(path)
        results[name] = run_set(name, data["X"], data["labels"], models, (lfw_X, lfw_labels),
                                n_pairs)
    print_table(results, "eer", "EER %", scale=100.0)
    print_table(results, "min_dcf", "minDCF(0.01)", fmt="{:.3f} +- {:.3f}")
    print_table(results, "eer", "EER % - cosine's (paired)", scale=100.0, base="cosine",
                fmt="{:+.2f} +- {:.2f}")
    print_table(results, "min_dcf", "minDCF - cosine's (paired)", base="cosine",
                fmt="{:+.3f} +- {:.3f}")
    act = "{:.3f} +- {:.3f} (median {:.3f})"
    print_table(results, "act_dcf_raw", "actDCF(0.01), uncalibrated LLR", fmt=act)
    for n in n_pairs:
        print_table(results, f"act_dcf_cal{n}", f"actDCF(0.01), calibrated on {n} pairs",
                    fmt=act)
    wall = time.perf_counter() - start
    print("\nLFW fits (s): " + ", ".join(f"{k} {v:.1f}" for k, v in fit_seconds.items())
          + f"; wall time {wall:.1f} s")
    with open(args.json, "w") as f:
        json.dump({"results": results, "fit_seconds": fit_seconds, "wall_seconds": wall,
                   "pairs": n_pairs, "prior": PRIOR, "wpca": WPCA}, f, indent=1)


if __name__ == "__main__":
    main()
