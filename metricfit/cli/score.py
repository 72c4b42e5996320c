"""``metricfit score``: a back-end trained on the user's embeddings scores a trial list.

``--train`` (embeddings with identity labels) fits the method: PLDA and its variants on the
points and their labels (the two-covariance model's class statistics), the pair learners on
``--train-pairs`` same-identity pairs and as many different-identity ones drawn identity by
identity, with ``--wpca N`` first if asked. The trials (``enrol test`` lines, a key's third
column ignored) name enrolment models and test segments: a model is every row of ``--enrol``
with that label (N-vs-M enrolment, :func:`metricfit.backend.score_sets`; without labels, or
without ``--enrol``, each id is its own one-vector model), a segment a row of ``--test``.
``--norm s-norm|as-norm --cohort COHORT`` normalises each score with the cohort scores of
its model and its segment (:func:`metricfit.backend.normalize_scores`); ``--calibrate DEV``
scores the development trials the same way and fits a linear calibration to LLRs at
``--prior`` (:class:`metricfit.backend.LinearCalibration`), and the LLRs are written.
``--adapt UNLABELLED`` (PLDA methods) adapts the fitted PLDA to unlabelled in-domain
embeddings by Kaldi's unsupervised adaptation (:meth:`metricfit.PLDA.adapt`), after the
method's own WPCA / length normalisation of those embeddings.
"""

import copy
import sys
import time

import numpy as np

from ..backend import LinearCalibration, normalize_scores, score_sets
from ..backend.trials import read_trial_list, read_trials, write_scores
from ..datasets import load_embeddings
from ..experiments import verification
from ..learners.plda import PLDA
from ..pairs import sample_pairs
from ..pairs.tags import final_step
from ..whitening import WPCA

#: Methods fitted on points and identity labels (class statistics), not on pairs.
POINT_METHODS = ("plda", "plda-lnorm")


def _load(path, labels=None, what="--train"):
    try:
        return load_embeddings(path, labels=labels)
    except ValueError as error:
        raise ValueError(f"{what}: {error}") from None


def build_method(name, lam=None, max_iter=200, wpca=None):
    """The unfitted estimator of ``name`` (``cosine`` is ``baseline``); ``lam`` None: the
    learner's own default; ``wpca`` (int) puts a WPCA of that dimension first."""
    from sklearn.pipeline import make_pipeline

    name = "baseline" if name == "cosine" else name
    method = verification.make_method(name, 1.0, max_iter)
    if verification.has_lam(name):
        method.set_params(lam=type(method)().get_params()["lam"] if lam is None else lam)
    return method if wpca is None else make_pipeline(WPCA(n_components=wpca), method)


def fit_method(method, name, X, labels, n_pairs=3000):
    """Fit on points and labels (:data:`POINT_METHODS`) or on pairs drawn from the labels."""
    if name in POINT_METHODS:
        return method.fit(X, labels)
    index, y = sample_pairs(labels, n_pairs, n_pairs, random_state=0, balance="identity")
    if np.unique(y).size < 2:
        raise ValueError("--train: the labels give no same-identity pair or no different-"
                         "identity pair; a pair method needs both (2+ rows of some identity).")
    return method.fit(X[index], y)


def adapt_plda(learner, X, **scales):
    """A copy of a fitted PLDA, or of a (nested) Pipeline ending in one, whose PLDA is adapted
    to unlabelled points X (:meth:`metricfit.PLDA.adapt` with ``scales``, default Kaldi's)
    after the Pipeline's own earlier steps (WPCA, length normalisation) transform X."""
    if isinstance(learner, PLDA):
        return learner.adapt(X, **scales)
    steps = getattr(learner, "steps", None)
    if not steps:
        raise ValueError(f"--adapt adapts a PLDA; the method ends in "
                         f"{type(final_step(learner)).__name__}.")
    name, last = steps[-1]
    Z = learner[:-1].transform(X) if len(steps) > 1 else X
    adapted = copy.copy(learner)  # the fitted earlier steps are shared, not refitted
    adapted.steps = [*steps[:-1], (name, adapt_plda(last, Z, **scales))]
    return adapted


def models_and_segments(enrol, test):
    """``(enrolments, segments)``: model id -> rows (by label when ``enrol`` has labels,
    else by id), test id -> row."""
    if enrol.labels is None:
        models = {i: enrol.X[[k]] for k, i in enumerate(enrol.ids)}
    else:
        order = np.argsort(enrol.labels, kind="stable")
        names, starts = np.unique(enrol.labels[order], return_index=True)
        models = {str(n): enrol.X[rows] for n, rows in
                  zip(names, np.split(order, starts[1:]), strict=True)}
    return models, {i: test.X[k] for k, i in enumerate(test.ids)}


def _lookup(ids, table, what, trials):
    unknown = sorted(set(map(str, ids)) - table.keys())
    if unknown:
        more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        raise ValueError(f"{trials}: unknown {what} id(s) {', '.join(unknown[:3])}{more} (not in "
                         f"the {what} embeddings{' labels' if what == 'enrolment' else ''}).")
    return [table[str(i)] for i in ids]


def score_list(learner, enrol_ids, test_ids, models, segments, trials, method=None,
               norm=None, cohort=None, top_n=None):
    """Scores of the trials (ids looked up in ``models`` / ``segments``), s- or
    as-normalised with the cohort (rows (K, d)) when ``norm`` is given."""
    enrol_sets = _lookup(enrol_ids, models, "enrolment", trials)
    test_sets = _lookup(test_ids, segments, "test", trials)
    scores = score_sets(learner, enrol_sets, test_sets, method)
    if norm is None:
        return scores
    sides = []
    for ids, table, model_side in ((enrol_ids, models, True), (test_ids, segments, False)):
        unique, inverse = np.unique(np.asarray(ids, dtype=str), return_inverse=True)
        k = cohort.shape[0]
        own = [table[u] for u in unique for _ in range(k)]
        others = [c for _ in unique for c in cohort]
        cross = score_sets(learner, own, others, method) if model_side else \
            score_sets(learner, others, own, method)
        sides.append(cross.reshape(unique.size, k)[inverse.reshape(-1)])
    return normalize_scores(scores, sides[0], sides[1], norm,
                            None if norm != "as-norm" else min(top_n, cohort.shape[0]))


def _check_dims(*data):
    dims = {d.path: d.X.shape[1] for d in data if d is not None}
    if len(set(dims.values())) > 1:
        raise ValueError("the embeddings differ in dimension: " + ", ".join(
            f"{path}: {d}" for path, d in dims.items()) + ".")


def run(args):
    """Fit, score, normalise, calibrate, write ``enrol test score`` lines."""
    start = time.perf_counter()
    if args.llr and args.calibrate is None:
        raise ValueError("--llr needs --calibrate DEV_TRIALS: the map from scores to LLRs is "
                         "fitted on a development trial list.")
    if (args.norm is None) != (args.cohort is None):
        raise ValueError("--norm and --cohort go together: s-norm / as-norm need a cohort of "
                         "embeddings of other identities, and a cohort needs --norm.")
    train = _load(args.train, args.train_labels)
    if train.labels is None:
        raise ValueError(f"--train: {args.train} has no identity labels: store 'labels' in the "
                         ".npz or give --train-labels (an 'id label' file).")
    test = _load(args.test, what="--test")
    enrol = test if args.enrol is None else _load(args.enrol, args.enrol_labels, "--enrol")
    cohort = None if args.cohort is None else _load(args.cohort, what="--cohort")
    dev_enrol = enrol if args.dev_enrol is None else \
        _load(args.dev_enrol, args.dev_enrol_labels, "--dev-enrol")
    dev_test = test if args.dev_test is None else _load(args.dev_test, what="--dev-test")
    if args.calibrate is None and (args.dev_enrol or args.dev_test):
        raise ValueError("--dev-enrol / --dev-test hold the development trials' embeddings: "
                         "they need --calibrate DEV_TRIALS.")
    if args.adapt is not None and args.method not in POINT_METHODS:
        raise ValueError(f"--adapt adapts a PLDA back-end (--method {' or '.join(POINT_METHODS)})"
                         f", not {args.method}.")
    adapt = None if args.adapt is None else _load(args.adapt, what="--adapt")
    _check_dims(train, test, enrol, cohort, dev_enrol, dev_test, adapt)
    wpca = None if args.wpca in (None, "none") else min(int(args.wpca), train.X.shape[1])
    learner = fit_method(build_method(args.method, args.lam, args.max_iter, wpca),
                         "baseline" if args.method == "cosine" else args.method, train.X,
                         train.labels, args.train_pairs)
    if adapt is not None:
        try:
            learner = adapt_plda(learner, adapt.X)
        except ValueError as error:
            raise ValueError(f"--adapt: {error}") from None
    method = args.enrol_method
    models, segments = models_and_segments(enrol, test)
    enrol_ids, test_ids, _ = read_trial_list(args.trials)
    norm = dict(norm=args.norm, cohort=None if cohort is None else cohort.X, top_n=args.top_n)
    scores = score_list(learner, enrol_ids, test_ids, models, segments, args.trials, method,
                        **norm)
    note = ""
    if args.calibrate is not None:
        dev_models, dev_segments = models_and_segments(dev_enrol, dev_test)
        dev_e, dev_t, dev_y = read_trials(args.calibrate)
        if np.unique(dev_y).size < 2:
            raise ValueError(f"--calibrate: {args.calibrate} needs target and non-target "
                             "trials.")
        dev_scores = score_list(learner, dev_e, dev_t, dev_models, dev_segments,
                                args.calibrate, method, **norm)
        calibration = LinearCalibration(prior=args.prior).fit(dev_scores, dev_y)
        scores = calibration.transform(scores)
        note = (f"; LLRs by linear calibration at prior {args.prior:g} on {dev_y.size} "
                f"development trials (llr = {calibration.slope_:.4g} score "
                f"{calibration.offset_:+.4g})")
    write_scores(args.out, enrol_ids, test_ids, scores)
    last = type(final_step(learner)).__name__
    print(f"{args.method} ({last}{'' if wpca is None else f' after WPCA-{wpca}'}) trained on "
          f"{train.X.shape[0]} embeddings of {np.unique(train.labels).size} identities"
          f"{'' if adapt is None else f', adapted to {adapt.X.shape[0]} unlabelled'}; "
          f"{len(enrol_ids)} trials scored"
          f"{'' if args.norm is None else f', {args.norm} with a cohort of {cohort.X.shape[0]}'}"
          f"{note}; wrote {args.out} ({time.perf_counter() - start:.1f} s)", file=sys.stdout)
    return 0
