"""Verification experiments: the methods of seed 002 Table I and the protocols that run them.

A *method* is an estimator with the pair API (``fit(pairs, y)``, ``decision_function``);
``make_method`` builds the ones of seed 002 Table I by name. ``select_and_test`` is one
experiment of seed 002 III.A/III.E: scikit-learn's ``GridSearchCV`` fits on the training pairs
for each lambda and keeps the lambda with the best accuracy (at its best threshold) on the
validation pairs (:class:`~metricfit.pairs.ValidationSplit`), the threshold is chosen there, and
the test accuracy at that threshold is reported (and, threshold-free, the test maxDA and EER of
seed 004 eq. 14). ``fuse`` adds
the score fusion of seed 002 IV.D (a linear SVM on the methods' scores, fitted on the
validation pairs). Protocols: :func:`run_folds` (the fold rotation of seed 002 III.A on fixed
folds of pairs, restricted or unrestricted training, seed 004 5.2.2), :func:`run_lfw_restricted`
and :func:`run_digits`; :func:`labelled_folds` makes identity-disjoint folds of fixed pairs
from labelled images. Every method takes the WPCA vectors of the features, except the image
methods (:data:`IMAGE_METHODS`: 'cnn', the siamese convnet), which take pairs of the raw images
(:func:`image_method_and_test`: early stopping and threshold on the validation pairs).
"""

import functools
from dataclasses import dataclass, field, fields, replace

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.utils import check_random_state

from .._files import read_npz_file
from ..learners.fusion import ScoreFusion, fusion_model
from ..learners import CSML, DDML, LDML, TSML, CosineSimilarity
from ..mappings import l2_normalise
from ..metrics import (accuracy_at_threshold, equal_error_rate, fa_fr_curve,
                       max_decision_accuracy, roc_curve)
from ..pairs import (FoldRotation, ValidationSplit, check_pair_labels, check_points_or_pairs,
                     fold_pairs, identity_folds, sample_pairs, unrestricted_pairs)
from ..whitening import WCCN, WPCA

METHODS = ("baseline", "wccn", "csml-i", "csml-wccn", "tsml-i", "tsml-wccn", "tsml-sim",
           "ddml-i", "ddml-sim", "ldml", "tsml-wccn-sim", "csml-sim", "ddml-wccn", "plda",
           "plda-lnorm", "tsml-lda", "csml-lda", "tsml-plda", "csml-plda", "cnn")
IMAGE_METHODS = ("cnn",)
"""Methods that take image pairs (n, 2, H, W) of the data set's raw images, whatever the
features; every other method takes pairs of WPCA-embedded feature vectors (n, 2, k)."""
CNN_RECIPE = dict(loss="contrastive", energy="l2", augment=True, weight_decay=1e-3,
                  learning_rate_schedule="cosine", random_state=0)
"""The convnet recipe chosen on validation subjects (``docs/results/att.md``)."""
ALIASES = {"csml": "csml-i", "tsml": "tsml-i", "ddml": "ddml-i"}
SIMILAR_ONLY = {"tsml-i": "tsml-sim", "ddml-i": "ddml-sim", "csml-i": "csml-sim",
                "tsml-wccn": "tsml-wccn-sim"}
DEFAULT_METHODS = ("baseline", "wccn", "csml-i", "tsml-i", "tsml-wccn", "tsml-sim")
DEFAULT_LAMS = (1e-3, 1e-2, 1e-1, 1.0)
DEFAULT_DIMS = (100, 200, 300)


def make_method(name, lam=None, max_iter=200, params=None):
    """The estimator of a seed 002 Table I method ('tsml-sim': TSML-I on similar pairs only;
    'ddml-i', 'ddml-sim': the linear DDML of seed 004 with the same initialisation and selection).

    Beyond Table I (issue 15): 'tsml-wccn-sim' is TSML started from WCCN on similar pairs only
    (seed 002 III.D and III.E together), 'csml-sim' CSML-I on similar pairs only, 'ddml-wccn'
    DDML started from WCCN; 'tsml-lda' / 'csml-lda' (and '-plda') are TSML-I / CSML-I started
    from (and regularised towards) the LDA projection (:class:`~metricfit.backend.LDA`) or
    PLDA's simultaneous-diagonalisation transform (``PLDA.components_``), fitted on the same
    training pairs (each similar pair a class of two) inside each fit.

    'cnn' (one of :data:`IMAGE_METHODS`, on image pairs) is the siamese convnet of seed 000
    (:class:`~metricfit.learners.SiameseCNN`) with :data:`CNN_RECIPE`; ``params`` (a dict)
    sets other parameters of it (e.g. ``max_epochs``, ``n_maps``, ``n_jobs``). It has no
    lambda; ``params`` is not read by the other methods.

    References
    ----------
    - Chopra, Hadsell and LeCun, "Learning a Similarity Metric Discriminatively, with Application to
      Face Verification", CVPR 2005 (seed 000).
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """
    from ..backend import LDA
    from ..learners.plda import PLDA

    if name == "cnn":
        from ..learners.siamese_cnn import SiameseCNN

        return SiameseCNN(**{**CNN_RECIPE, **(params or {})})

    learned = {
        "csml-i": lambda: CSML(lam=lam, max_iter=max_iter),
        "csml-wccn": lambda: CSML(init="wccn", lam=lam, max_iter=max_iter),
        "tsml-i": lambda: TSML(lam=lam, max_iter=max_iter),
        "tsml-wccn": lambda: TSML(init="wccn", lam=lam, max_iter=max_iter),
        "tsml-sim": lambda: TSML(lam=lam, similar_only=True, max_iter=max_iter),
        "ddml-i": lambda: DDML(lam=lam, max_iter=max_iter),
        "ddml-sim": lambda: DDML(lam=lam, similar_only=True, max_iter=max_iter),
        "ldml": lambda: LDML(lam=lam, max_iter=max_iter),
        "tsml-wccn-sim": lambda: TSML(init="wccn", lam=lam, similar_only=True,
                                      max_iter=max_iter),
        "csml-sim": lambda: CSML(lam=lam, similar_only=True, max_iter=max_iter),
        "ddml-wccn": lambda: DDML(init="wccn", lam=lam, max_iter=max_iter),
        "tsml-lda": lambda: TSML(init=LDA(), lam=lam, max_iter=max_iter),
        "csml-lda": lambda: CSML(init=LDA(), lam=lam, max_iter=max_iter),
        "tsml-plda": lambda: TSML(init=PLDA(), lam=lam, max_iter=max_iter),
        "csml-plda": lambda: CSML(init=PLDA(), lam=lam, max_iter=max_iter),
    }
    if name == "baseline":
        return CosineSimilarity()
    if name == "wccn":
        return make_pipeline(WCCN(), CosineSimilarity())
    if name in ("plda", "plda-lnorm"):
        return _plda_method(name)
    if name not in learned:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}.")
    return learned[name]()


def resolve_methods(names, similar_only=False):
    """Method names as in :data:`METHODS`: the aliases csml, tsml, ddml become csml-i, tsml-i,
    ddml-i; with ``similar_only`` each method that has a similar-only variant becomes it
    (:data:`SIMILAR_ONLY`: tsml-i, ddml-i, csml-i, tsml-wccn; the others stay); duplicates
    are dropped, order kept."""
    names = [ALIASES.get(name, name) for name in names]
    unknown = [name for name in names if name not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(METHODS)} (aliases: {', '.join(ALIASES)}).")
    return list(dict.fromkeys(SIMILAR_ONLY.get(n, n) if similar_only else n for n in names))


def has_lam(name):
    return name not in ("baseline", "wccn", "plda", "plda-lnorm", *IMAGE_METHODS)


def takes_images(name):
    """Whether method ``name`` takes image pairs (:data:`IMAGE_METHODS`) rather than vectors."""
    return name in IMAGE_METHODS


def _plda_method(name):
    """'plda': two-covariance PLDA (each similar training pair a class of two); 'plda-lnorm':
    after length normalisation (centre, whiten, L2-normalise)."""
    from ..backend import LengthNormalizer
    from ..learners.plda import PLDA

    return PLDA() if name == "plda" else make_pipeline(LengthNormalizer(), PLDA())


def _back_end_metrics(scores, y, val):
    """minDCF(0.01) of the test scores; Cllr of the scores as they are (the decision values:
    for PLDA its LLR minus ``threshold_``, a plain score for the other methods); actDCF(0.01)
    and Cllr after linear calibration fitted on the validation scores (NaN without them)."""
    from ..backend.calibration import LinearCalibration
    from ..metrics import act_dcf, cllr, min_dcf

    out = {"min_dcf": min_dcf(y, scores, preset="p01")[0], "cllr_raw": cllr(y, scores),
           "cllr": np.nan, "act_dcf": np.nan}
    if val is not None and np.unique(val[1]).size == 2:
        calibrated = LinearCalibration().fit(val[0], val[1]).transform(scores)
        out.update(cllr=cllr(y, calibrated), act_dcf=act_dcf(y, calibrated, preset="p01"))
    return out


def _extra():
    return field(default=None, repr=False, compare=False, metadata={"json": False})


@dataclass
class Result:
    """One method on one experiment: test accuracy at the validation-chosen threshold. Not in
    JSON: the test ``scores`` (decision values) and labels ``y``, the validation ones
    (``val_scores``, ``val_y``: what a later fusion trains on) and the fitted ``model``."""

    method: str
    accuracy: float
    maxda: float
    eer: float
    lam: float
    threshold: float
    min_dcf: float = np.nan  # P_target 0.01
    cllr_raw: float = np.nan  # of the decision values as they are
    cllr: float = np.nan  # after linear calibration on the validation fold
    act_dcf: float = np.nan  # P_target 0.01, after the same calibration
    n_components: int = None  # chosen WPCA dimension (with the selection of issue 15)
    normalize: bool = None  # L2 normalisation after WPCA chosen (same)
    choice: dict = None  # a selected fusion's choices (fuse_saved(select=True)); an image
    # method's epoch of early stopping and epochs run (image_method_and_test)
    descriptor: str = None  # the descriptor variant chosen on validation (choose_variant)
    val_maxda: float = np.nan  # validation accuracy at the best threshold (validation_accuracy)
    scores: np.ndarray = _extra()
    y: np.ndarray = _extra()
    model: object = _extra()
    val_scores: np.ndarray = _extra()
    val_y: np.ndarray = _extra()


def _test_result(name, scores, y, threshold, lam, model, val=None, n_components=None,
                 normalize=None):
    val_scores, val_y = (None, None) if val is None else (np.asarray(val[0]), np.asarray(val[1]))
    result = Result(method=name, accuracy=accuracy_at_threshold(y, scores, threshold),
                    maxda=max_decision_accuracy(y, scores)[0], eer=equal_error_rate(y, scores)[0],
                    lam=float(lam), threshold=float(threshold), scores=scores, y=np.asarray(y),
                    model=model, val_scores=val_scores, val_y=val_y, n_components=n_components,
                    normalize=normalize, **_back_end_metrics(np.asarray(scores), y, val))
    if val is not None:
        result.val_maxda = validation_accuracy(result)
    return result


def _validation_accuracy(estimator, pairs, y):
    """The scorer of the selection: the accuracy at the best threshold (maxDA, seed 004 eq.
    14) of the decision values, so that lambda and the threshold are chosen together."""
    return max_decision_accuracy(y, estimator.decision_function(pairs))[0]


def select_lambda(name, train, val, lams=DEFAULT_LAMS, max_iter=200):
    """The lambda of ``name`` with the best validation accuracy at its best threshold:
    ``GridSearchCV`` over ``lams`` with :class:`~metricfit.pairs.ValidationSplit` (fit on the
    ``train`` pairs, score on the ``val`` pairs). The first lambda wins a tie. NaN for a method
    without lambda."""
    if not has_lam(name):
        return np.nan
    pairs = np.concatenate([train[0], val[0]])
    y = np.concatenate([train[1], val[1]])
    cv = ValidationSplit(np.arange(len(y)) >= len(train[1]))
    search = GridSearchCV(make_method(name, lams[0], max_iter), {"lam": list(lams)},
                          scoring=_validation_accuracy, cv=cv, refit=False,
                          error_score="raise").fit(pairs, y)
    return search.best_params_["lam"]


def select_and_test(name, train, val, test, lams=DEFAULT_LAMS, max_iter=200):
    """Choose lambda on ``val`` (:func:`select_lambda`), fit ``name`` on ``train`` with it, take
    the threshold of best accuracy on ``val``, evaluate on ``test``. Each of train/val/test is
    ``(pairs, y)``."""
    lam = select_lambda(name, train, val, lams, max_iter)
    method = make_method(name, None if np.isnan(lam) else lam, max_iter).fit(*train)
    val_scores = method.decision_function(val[0])
    threshold = max_decision_accuracy(val[1], val_scores)[1]
    return _test_result(name, method.decision_function(test[0]), test[1], threshold, lam, method,
                        (val_scores, val[1]))


def image_method_and_test(name, train, val, test, params=None):
    """An image method (:data:`IMAGE_METHODS`) on image pairs: fitted on ``train`` with early
    stopping on ``val`` (``validation_data``: a validation-fold choice, like lambda for the
    others), the threshold of best accuracy on ``val``, evaluated on ``test``. No lambda
    (NaN). ``params``: see :func:`make_method`."""
    method = make_method(name, params=params).fit(*train, validation_data=val)
    val_scores = method.decision_function(val[0])
    threshold = max_decision_accuracy(val[1], val_scores)[1]
    result = _test_result(name, method.decision_function(test[0]), test[1], threshold, np.nan,
                          method, (val_scores, val[1]))
    result.choice = {"best_epoch": float(method.best_epoch_), "n_epochs": float(method.n_epochs_)}
    return result


class LeadingComponents(TransformerMixin, BaseEstimator):
    """The first ``n_components`` coordinates of points (n, d) or pairs (n, 2, d), then, with
    ``normalize``, each vector scaled to unit length (seed 004 section 4.1: L2 normalisation
    after WPCA).

    On WPCA output the first k coordinates of a K-dimensional WPCA are the k-dimensional WPCA
    (same eigenvectors, same scaling, same signs), so one WPCA fitted at the largest candidate
    dimension serves every candidate of :func:`select` without a refit.

    Parameters
    ----------
    n_components : int or None, default=None
        Coordinates kept; None keeps all.
    normalize : bool, default=False
        Scale every kept vector to unit Euclidean length (a zero vector is an error).

    Attributes
    ----------
    n_features_in_ : int

    References
    ----------
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """

    def __init__(self, n_components=None, normalize=False):
        self.n_components = n_components
        self.normalize = normalize

    def fit(self, X, y=None):
        """Check the input and that ``n_components`` fits in it; nothing is learned."""
        X = check_points_or_pairs(X)
        k = self.n_components
        if k is not None and not 1 <= k <= X.shape[-1]:
            raise ValueError(f"n_components={k} must be in [1, n_features={X.shape[-1]}].")
        self.n_features_in_ = X.shape[-1]
        return self

    def transform(self, X):
        """Keep the leading coordinates (and L2-normalise them with ``normalize``)."""
        if not hasattr(self, "n_features_in_"):
            raise ValueError("LeadingComponents is not fitted yet; call fit first.")
        X = check_points_or_pairs(X, n_features=self.n_features_in_)
        Z = X[..., :self.n_components]
        if not self.normalize:
            return Z
        if not np.all(np.any(Z != 0, axis=-1)):
            raise ValueError("LeadingComponents(normalize=True): a zero vector has no "
                             "direction to normalise.")
        return l2_normalise(Z)


@dataclass
class Selection:
    """The settings :func:`select` chose on the validation fold, and their validation
    accuracy at the best threshold (maxDA)."""

    lam: float
    n_components: int
    normalize: bool
    val_score: float


def selection_pipeline(name, n_components=None, normalize=False, lam=None, max_iter=200):
    """``LeadingComponents -> method``: the candidate :func:`select` fits (steps 'components'
    and 'method')."""
    return Pipeline([("components", LeadingComponents(n_components, normalize)),
                     ("method", make_method(name, lam, max_iter))])


def _edge_lams(lam, lams, decades=1):
    """One more decade beyond the grid's edge where the best lambda lies on it (none for a
    one-point grid, and none below an edge of 0)."""
    lams = sorted(lams)
    if len(lams) < 2:
        return []
    if lam == lams[-1]:
        return [lam * 10.0 ** (i + 1) for i in range(decades)]
    if lam == lams[0] and lam > 0:
        return [lam / 10.0 ** (i + 1) for i in range(decades)]
    return []


def select(name, train, val, lams=DEFAULT_LAMS, dims=DEFAULT_DIMS, normalize=(False, True),
           max_iter=200, edge_decades=1):
    """Choose, on the validation pairs only, the WPCA dimension (the leading coordinates of
    the inputs: ``dims``), the L2 normalisation after it (``normalize``) and lambda
    (``lams``) of method ``name``, by the accuracy at the best threshold (maxDA).

    ``GridSearchCV`` over :func:`selection_pipeline` with one
    :class:`~metricfit.pairs.ValidationSplit` (fit on ``train``, score on ``val``). Where the
    best lambda lies on the grid's edge, a second ``GridSearchCV`` tries ``edge_decades``
    more decades beyond it at the chosen dimension and normalisation, and wins only if
    strictly better. The first candidate wins a tie (sklearn's order: dimension, then
    normalisation, then lambda). Returns a :class:`Selection` (lambda NaN for a method
    without one). The test pairs are not an argument: they cannot be read."""
    pairs = np.concatenate([train[0], val[0]])
    y = np.concatenate([train[1], val[1]])
    cv = ValidationSplit(np.arange(len(y)) >= len(train[1]))
    grid = {"components__n_components": list(dims), "components__normalize": list(normalize)}
    if has_lam(name):
        grid["method__lam"] = list(lams)

    def search(param_grid):
        start = {key: values[0] for key, values in param_grid.items()}
        pipeline = selection_pipeline(name, max_iter=max_iter).set_params(**start)
        return GridSearchCV(pipeline, param_grid, scoring=_validation_accuracy, cv=cv,
                            refit=False, error_score="raise").fit(pairs, y)

    first = search(grid)
    best, score = dict(first.best_params_), first.best_score_
    extra = _edge_lams(best["method__lam"], lams, edge_decades) if has_lam(name) else []
    if extra:
        second = search({**{key: [value] for key, value in best.items()},
                         "method__lam": extra})
        if second.best_score_ > score:
            best, score = dict(second.best_params_), second.best_score_
    return Selection(lam=float(best.get("method__lam", np.nan)),
                     n_components=int(best["components__n_components"]),
                     normalize=bool(best["components__normalize"]), val_score=float(score))


def select_all_and_test(name, train, val, test, lams=DEFAULT_LAMS, dims=DEFAULT_DIMS,
                        normalize=(False, True), max_iter=200, edge_decades=1):
    """:func:`select` on ``train`` / ``val``, then the chosen pipeline fitted on ``train``,
    its threshold of best accuracy on ``val``, evaluated on ``test``. The Result carries the
    chosen ``lam``, ``n_components`` and ``normalize``."""
    chosen = select(name, train, val, lams, dims, normalize, max_iter, edge_decades)
    lam = None if np.isnan(chosen.lam) else chosen.lam
    method = selection_pipeline(name, chosen.n_components, chosen.normalize, lam,
                                max_iter).fit(*train)
    val_scores = method.decision_function(val[0])
    threshold = max_decision_accuracy(val[1], val_scores)[1]
    return _test_result(name, method.decision_function(test[0]), test[1], threshold, chosen.lam,
                        method, (val_scores, val[1]), chosen.n_components, chosen.normalize)


def snorm_result(result, cohort, val, test):
    """'METHOD+snorm': the fitted method's scores s-normalised with the cohort (points in the
    method's input space), threshold chosen on ``val`` for accuracy."""
    from ..backend import ScoreNormalizer

    normaliser = ScoreNormalizer(result.model, cohort, "s-norm")
    val_scores = normaliser.pair_score(val[0])
    threshold = max_decision_accuracy(val[1], val_scores)[1]
    return _test_result(result.method + "+snorm", normaliser.pair_score(test[0]), test[1],
                        threshold, result.lam, normaliser, (val_scores, val[1]))


def fuse(results, val, test):
    """Seed 002 IV.D: a linear SVM (:class:`~metricfit.learners.ScoreFusion`) on the scores of
    the fitted methods of ``results``, trained on the validation pairs ``val``; its threshold
    is then chosen on ``val`` for accuracy, like the methods'. Returns the 'fusion' Result.

    ``val`` and ``test`` are ``(pairs, y)``: ``pairs`` one array all methods score, or a list
    of one array per Result, in order (each method's own input: vectors, or images for an
    image method)."""
    fusion = ScoreFusion([(r.method, r.model) for r in results], method="svm").fit(*val)
    val_scores = fusion.pair_score(val[0])
    threshold = max_decision_accuracy(val[1], val_scores)[1]
    return _test_result("fusion", fusion.pair_score(test[0]), test[1], threshold, np.nan, fusion,
                        (val_scores, val[1]))


def save_scores(path, experiments, source, numbers=None):
    """Write the validation and test scores of every Result to ``path`` (.npz), so that runs on
    different descriptors can be fused later (:func:`fuse_saved`). Keys are
    ``'{source}/{method}/{experiment}/{val_scores|val_y|scores|y}'``, ``experiment`` the
    experiment's number in ``numbers`` (default 0, 1, ...)."""
    arrays = {}
    for e, results in zip(_numbers(experiments, numbers), experiments):
        for r in results:
            for key in ("val_scores", "val_y", "scores", "y"):
                arrays[f"{source}/{r.method}/{e}/{key}"] = np.asarray(getattr(r, key))
    np.savez_compressed(path, **arrays)


SCORES_FILE = "a scores file of `metricfit verify --scores`"
SCORE_FIELDS = ("val_scores", "val_y", "scores", "y")


def load_scores(path):
    """``{(source, method): [ {val_scores, val_y, scores, y, experiment} per experiment ]}``
    from a file of :func:`save_scores`, experiments in increasing number.

    Raises FileNotFoundError if there is no such file, and ValueError naming the file if it is
    not such a scores file (not an .npz, damaged, foreign keys, missing fields) or its arrays
    are wrong (scores not 1-D finite numbers, labels not pair labels or not one per score)."""
    saved = read_npz_file(path, what=SCORES_FILE)
    table = {}
    for key, array in saved.items():
        parts = key.rsplit("/", 3)
        if len(parts) != 4 or not parts[2].isdigit() or parts[3] not in SCORE_FIELDS:
            raise ValueError(f"{path}: key {key!r} is not SOURCE/METHOD/EXPERIMENT/FIELD "
                             f"(FIELD in {sorted(SCORE_FIELDS)}): not {SCORES_FILE}.")
        source, method, e, name = parts
        table.setdefault((source, method), {}).setdefault(int(e), {})[name] = array
    if not table:
        raise ValueError(f"{path} holds no score columns.")
    for (source, method), by_experiment in table.items():
        for e, cells in by_experiment.items():
            _check_saved_cells(cells, path, f"{source}/{method}/{e}")
            cells["experiment"] = e
    return {column: [by_experiment[e] for e in sorted(by_experiment)]
            for column, by_experiment in table.items()}


def _check_saved_cells(cells, path, where):
    """One experiment's saved arrays: every field, scores 1-D finite, labels one per score."""
    missing = sorted(set(SCORE_FIELDS) - set(cells))
    if missing:
        raise ValueError(f"{path}: {where} lacks {missing}.")
    for scores, labels in (("val_scores", "val_y"), ("scores", "y")):
        values = cells[scores]
        if values.ndim != 1 or values.dtype.kind not in "biuf" or not np.isfinite(values).all():
            raise ValueError(f"{path}: {where}/{scores} must be 1-D finite numbers, got "
                             f"dtype {values.dtype} and shape {values.shape}.")
        check_pair_labels(cells[labels], values.shape[0], require_both=False,
                          what=f"{path}: {where}/{labels}")


def saved_results(columns):
    """Each saved score column as Results (its test scores at the threshold that maximises its
    validation accuracy), one list per experiment, columns named ``'source:method'``."""
    out = []
    for e, cells in enumerate(zip(*columns.values())):
        out.append([_test_result(f"{source}:{method}", c["scores"], c["y"],
                                 max_decision_accuracy(c["val_y"], c["val_scores"])[1], np.nan,
                                 None, (c["val_scores"], c["val_y"]))
                    for (source, method), c in zip(columns, cells)])
    return out


class TopColumns(TransformerMixin, BaseEstimator):
    """The ``n_columns`` score columns with the best accuracy at their best threshold (maxDA)
    on the rows ``fit`` sees (all columns with None), in decreasing order of it; the first
    column wins a tie.

    Attributes
    ----------
    columns_ : ndarray of int
        The kept columns.
    """

    def __init__(self, n_columns=None):
        self.n_columns = n_columns

    def fit(self, Z, y):
        Z = np.asarray(Z, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[0] != np.shape(y)[0]:
            raise ValueError(f"TopColumns needs scores (n_pairs, n_columns) and one label per "
                             f"pair, got shapes {Z.shape} and {np.shape(y)}.")
        n = Z.shape[1] if self.n_columns is None else min(self.n_columns, Z.shape[1])
        quality = np.array([max_decision_accuracy(y, Z[:, j])[0] for j in range(Z.shape[1])])
        self.columns_ = np.argsort(-quality, kind="stable")[:n]
        return self

    def transform(self, Z):
        return np.asarray(Z)[:, self.columns_]


FUSION_CS = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
FUSION_COLUMNS = (2, 4, 8, 16, None)


def fusion_search(n_columns=None, Cs=None, n_splits=5):
    """The fusion's own choices, by 5-fold cross-validation (stratified, seeded) on the pairs
    it is given (the validation fold): how many of the best score columns to keep
    (:class:`TopColumns`, ranked inside each training part), the classifier (linear SVM or
    logistic regression) and its C, by maxDA. ``GridSearchCV`` refits the best on all of
    them. ``n_columns`` and ``Cs`` default to :data:`FUSION_COLUMNS` and
    :data:`FUSION_CS`."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    pipeline = Pipeline([("columns", TopColumns()), ("scale", StandardScaler()),
                         ("classifier", LinearSVC(random_state=0))])
    grid = [{"columns__n_columns": list(FUSION_COLUMNS if n_columns is None else n_columns),
             "classifier": [classifier], "classifier__C": list(FUSION_CS if Cs is None else Cs)}
            for classifier in (LinearSVC(random_state=0), LogisticRegression())]
    return GridSearchCV(pipeline, grid, scoring=_validation_accuracy,
                        cv=StratifiedKFold(n_splits, shuffle=True, random_state=0),
                        error_score="raise")


def _fusion_choice(search, names):
    best = search.best_estimator_
    classifier = best.named_steps["classifier"]
    return {"classifier": "svm" if type(classifier).__name__ == "LinearSVC" else "logistic",
            "C": float(classifier.C), "n_columns": int(best.named_steps["columns"].columns_.size),
            "columns": [names[j] for j in best.named_steps["columns"].columns_],
            "cv_maxda": float(search.best_score_)}


def fuse_saved(columns, classifier="svm", select=False):
    """Seed 002 IV.D across descriptors: per experiment, a linear SVM (or logistic
    regression, seed 001 5.3) on the saved scores of ``columns`` (``{(source, method):
    experiments}`` from :func:`load_scores`), fitted on the validation pairs, threshold chosen
    there for accuracy, tested on the test pairs. Every column must hold the same experiments
    on the same pairs (same labels). Returns one ``[Result('fusion')]`` per experiment.

    With ``select``, ``classifier`` is ignored: :func:`fusion_search` chooses the columns,
    the classifier and its C by cross-validation inside the validation fold, and the
    Result's ``choice`` records them (the test scores are not read until the choice is
    made).

    References
    ----------
    - Guillaumin, Verbeek and Schmid, "Is that you? Metric Learning Approaches for Face
      Identification", ICCV 2009 (seed 001).
    """
    names, sets = list(columns), list(columns.values())
    if len(names) < 2:
        raise ValueError(f"fusion needs at least two score columns, got {len(names)}.")
    if len({len(experiments) for experiments in sets}) != 1:
        raise ValueError("the score columns hold different numbers of experiments.")
    numbers = {name: [c.get("experiment") for c in experiments]
               for name, experiments in zip(names, sets)}
    if len({tuple(n) for n in numbers.values()}) != 1:
        raise ValueError(f"the score columns hold different experiments: {numbers}; fuse runs "
                         "of the same experiments only.")
    out = []
    for e, cells in enumerate(zip(*sets)):
        for key in ("val_y", "y"):
            if any(not np.array_equal(c[key], cells[0][key]) for c in cells):
                raise ValueError(f"experiment {e}: the columns {names} were not scored on the "
                                 f"same pairs ({key} differ); fuse runs of one protocol only.")
        val_Z = np.column_stack([c["val_scores"] for c in cells])
        test_Z = np.column_stack([c["scores"] for c in cells])
        choice = None
        if select:
            search = fusion_search().fit(val_Z, cells[0]["val_y"])
            model, choice = search.best_estimator_, _fusion_choice(
                search, [f"{source}:{method}" for source, method in names])
        else:
            model = fusion_model(classifier).fit(val_Z, cells[0]["val_y"])
        val_scores = model.decision_function(val_Z)
        threshold = max_decision_accuracy(cells[0]["val_y"], val_scores)[1]
        result = _test_result("fusion", model.decision_function(test_Z), cells[0]["y"],
                              threshold, np.nan, model, (val_scores, cells[0]["val_y"]))
        result.choice = choice
        out.append([result])
    return out


def run_folds(vectors, pair_index, y, fold, methods=DEFAULT_METHODS, n_components=100,
              lams=DEFAULT_LAMS, max_iter=200, progress=None, train_pairs=None, fusion=False,
              experiments=None, snorm=None, selection=None, images=None, cnn=None):
    """:func:`run_experiment` for each experiment of the fold rotation of seed 002 III.A
    (:class:`~metricfit.pairs.FoldRotation`: n-2 folds train, the next validates, the one
    after tests) over ``fold``, the fold of each of the fixed pairs ``pair_index`` (row indices
    into ``vectors``, and into ``images`` for the image methods) with labels ``y``;
    ``experiments`` (split numbers, in 0 .. n_folds - 1) runs some only. Validation and test
    pairs are the fixed pairs of their fold. Training pairs: those of the training folds
    (restricted setting), or ``train_pairs(train_folds, e) -> (index_pairs, y)``
    (unrestricted, seed 004 5.2.2). Returns one list of :class:`Result` per experiment run.

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """
    fold = np.asarray(fold)
    rotation = FoldRotation(fold, n_train_folds=np.unique(fold).size - 2)
    n = rotation.get_n_splits()
    experiments = range(n) if experiments is None else list(experiments)
    wrong = [e for e in experiments if not (isinstance(e, (int, np.integer)) and 0 <= e < n)]
    if wrong:
        raise ValueError(f"experiments {wrong} out of range: this rotation has {n} "
                         f"experiments, 0 to {n - 1}.")
    results = []
    for e in experiments:
        train_folds, (val_fold,), test_fold = rotation.rotation(e)
        splits = [(pair_index[mask], y[mask])
                  for mask in (np.isin(fold, train_folds), fold == val_fold, fold == test_fold)]
        if train_pairs is not None:
            splits[0] = train_pairs(train_folds, e)
        results.append(run_experiment(vectors, splits, methods, n_components, lams,
                                      max_iter, functools.partial(progress, e)
                                      if progress else None, fusion, snorm, selection,
                                      images, cnn))
    return results


def run_lfw_restricted(vectors, pair_index, y, fold, methods=DEFAULT_METHODS, n_components=100,
                       lams=DEFAULT_LAMS, max_iter=200, progress=None, fusion=False,
                       experiments=None):
    """The LFW View 2 restricted protocol on image vectors (n_images, n_features): one
    :func:`run_experiment` per fold rotation. Returns one list of :class:`Result` per
    experiment."""
    return run_folds(vectors, pair_index, y, fold, methods, n_components, lams, max_iter,
                     progress, fusion=fusion, experiments=experiments)


def run_experiment(vectors, splits, methods, n_components, lams=DEFAULT_LAMS, max_iter=200,
                   progress=None, fusion=False, snorm=None, selection=None, images=None,
                   cnn=None):
    """One experiment: WPCA to ``n_components`` (capped at half the training images, whose
    whitened variances would be ill-estimated beyond, and at the dimension) fitted on the
    distinct images of the training pairs (no labels, no identities), then
    :func:`select_and_test` for every method, and :func:`fuse` if ``fusion``. With ``snorm``
    (an int K), each method also gets a row 'METHOD+snorm': its scores s-normalised with a
    cohort of K training images (:func:`snorm_result`).

    With ``selection`` (a dict of :func:`select`'s ``dims``, ``normalize``, ``edge_decades``;
    missing keys take its defaults), ``n_components`` is ignored: WPCA is fitted once, at the
    largest candidate dimension (capped as above), and :func:`select_all_and_test` chooses
    the dimension (leading coordinates of that WPCA), the normalisation and lambda of every
    method on the validation pairs.

    The image methods (:data:`IMAGE_METHODS`) take pairs of ``images`` (n_images, H, W)
    instead, through :func:`image_method_and_test` (``cnn``: its ``params``), with or without
    ``selection`` (they have no WPCA dimension nor lambda to choose); ``snorm`` does not
    apply to them (its cohort is of WPCA vectors).

    ``splits`` is ``[(index_pairs, y)]`` for train, validation and test: row indices into
    ``vectors`` (n_images, n_features) and ``images``. ``progress(result)`` is called after
    each method.
    """
    selection = None if selection is None else dict(selection)
    embedded, data, image_data = _experiment_data(vectors, splits, methods, n_components,
                                                  selection, images, snorm)
    train_images = np.unique(splits[0][0])
    results = []
    for name in methods:
        if takes_images(name):
            results.append(image_method_and_test(name, *image_data, params=cnn))
        elif selection is not None:
            results.append(select_all_and_test(name, *data, lams=lams, max_iter=max_iter,
                                               **selection))
        else:
            results.append(select_and_test(name, *data, lams=lams, max_iter=max_iter))
        if progress:
            progress(results[-1])
        if snorm:
            cohort = embedded[np.random.RandomState(0).choice(
                train_images, min(snorm, train_images.size), replace=False)]
            results.append(snorm_result(results[-1], cohort, data[1], data[2]))
            if progress:
                progress(results[-1])
    if fusion:
        inputs = [[(image_data if takes_images(r.method) else data)[k][0] for r in results]
                  for k in (1, 2)]
        results.append(fuse(results, (inputs[0], data[1][1]), (inputs[1], data[2][1])))
        if progress:
            progress(results[-1])
    return results


def _experiment_data(vectors, splits, methods, n_components, selection, images, snorm):
    """``(embedded, data, image_data)``: the WPCA vectors of all images (WPCA fitted on the
    training images; with ``selection``, at its largest capped dimension, and
    ``selection['dims']`` replaced in place by the capped ones), their pairs ``[(pairs, y)]``
    of the three splits, and the image pairs of them (None without image methods)."""
    with_images = [name for name in methods if takes_images(name)]
    if with_images and images is None:
        raise ValueError(f"method(s) {', '.join(with_images)} take image pairs: pass the "
                         "images (n_images, height, width).")
    if with_images and np.ndim(images) != 3:
        raise ValueError(f"method(s) {', '.join(with_images)} take images (n_images, height, "
                         f"width), got an array of shape {np.shape(images)}.")
    if with_images and snorm:
        raise ValueError(f"snorm does not apply to the image method(s) "
                         f"{', '.join(with_images)}: its cohort is of WPCA vectors.")
    train_images = np.unique(splits[0][0])
    cap = min(train_images.size // 2, vectors.shape[1])
    if selection is not None:
        dims = sorted({min(k, cap) for k in selection.pop("dims", DEFAULT_DIMS)})
        selection["dims"] = dims
        k = dims[-1]
    else:
        k = min(n_components, cap)
    embedded = WPCA(n_components=k).fit(vectors[train_images]).transform(vectors)
    data = [(embedded[index_pairs], y) for index_pairs, y in splits]
    image_data = [(images[index_pairs], y) for index_pairs, y in splits] if with_images \
        else None
    return embedded, data, image_data


def labelled_folds(labels, random_state=0):
    """Identity-disjoint folds of fixed pairs from labelled images (restricted setting): the
    identities go to ``min(10, n_identities // 3)`` folds (:func:`identity_folds`, balancing
    images), then every same-identity pair of each fold and as many different-identity pairs
    of that fold (:func:`fold_pairs`). Returns ``(index_pairs, y, pair_fold, image_fold)``."""
    labels = np.asarray(labels)
    n_identities = np.unique(labels).size
    n_folds = min(10, n_identities // 3)
    if n_folds < 3:
        raise ValueError(f"{n_identities} identities are too few: the identity-disjoint "
                         "protocol needs at least 9 (3 folds: train, validation, test).")
    image_fold = identity_folds(labels, n_folds, random_state=random_state)
    index_pairs, y, pair_fold = fold_pairs(labels, image_fold, "all", random_state=random_state)
    for f in range(n_folds):
        if np.unique(y[pair_fold == f]).size < 2:
            raise ValueError(f"identity fold {f} lacks same- or different-identity pairs: each "
                             "fold needs two identities or more, some with 2+ images.")
    return index_pairs, y, pair_fold, image_fold


def unrestricted_train_pairs(identities, image_fold, n_pairs):
    """``train_pairs`` for :func:`run_folds` (seed 004 5.2.2, unrestricted): up to ``n_pairs``
    same-identity pairs and as many different-identity pairs drawn among all images of the
    training folds (seeded by the experiment number), identity by identity like the official
    LFW pairs (``balance='identity'``: drawn uniformly over all within-identity pairs, five LFW
    people would supply most similar pairs; see ``benchmarks/lfw_tables_004.py``).

    References
    ----------
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """
    def draw(train_folds, e):
        allowed = np.isin(image_fold, train_folds)
        return unrestricted_pairs(identities, allowed, n_pairs, None, random_state=e,
                                  balance="identity")
    return draw


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


def run_digits(vectors, labels, methods=DEFAULT_METHODS, n_components=32, lams=DEFAULT_LAMS,
               n_repeats=5, max_iter=200, progress=None, fusion=False, snorm=None,
               selection=None, images=None, cnn=None):
    """:func:`run_experiment` on ``n_repeats`` random :func:`digits_split` splits of the
    ``vectors`` (and ``images``, for the image methods). Returns one list of Results per
    repeat."""
    experiments = []
    for repeat in range(n_repeats):
        split = digits_split(labels, random_state=repeat)
        splits = [split[name] for name in ("train", "val", "test")]
        experiments.append(run_experiment(vectors, splits, methods, n_components, lams, max_iter,
                                          functools.partial(progress, repeat)
                                          if progress else None, fusion, snorm, selection,
                                          images, cnn))
    return experiments


def validation_accuracy(result):
    """The accuracy at the best threshold (maxDA) of a Result's validation scores: what the
    selection maximised, read back from the fitted model's validation fold."""
    if result.val_scores is None:
        raise ValueError(f"the Result of {result.method} has no validation scores.")
    return max_decision_accuracy(result.val_y, result.val_scores)[0]


def choose_variant(runs):
    """Per experiment and method, the Result of the descriptor variant with the best validation
    accuracy at its best threshold (:func:`validation_accuracy`); the first variant wins a tie.
    A choice made on the validation fold only, like the WPCA dimension: the test scores are
    not read.

    ``runs`` is ``{label: experiments}``, each ``experiments`` a list (per experiment) of lists
    of Results of the same methods on the same pairs, with one descriptor variant (e.g. an LBP
    cell size). Returns experiments of the same shape whose Results are copies of the chosen
    ones with ``descriptor`` set to the variant's label."""
    runs = dict(runs)
    if not runs:
        raise ValueError("choose_variant needs at least one variant.")
    labels = list(runs)
    shapes = {label: [[r.method for r in results] for results in runs[label]]
              for label in labels}
    if any(shape != shapes[labels[0]] for shape in shapes.values()):
        raise ValueError("the variants must hold the same experiments and methods in the "
                         "same order.")
    chosen = []
    for e in range(len(runs[labels[0]])):
        row = []
        for m in range(len(runs[labels[0]][e])):
            scores = [validation_accuracy(runs[label][e][m]) for label in labels]
            best = labels[int(np.argmax(scores))]
            row.append(replace(runs[best][e][m], descriptor=best))
        chosen.append(row)
    return chosen


def summarise(experiments):
    """Mean and standard error of the mean over experiments, per method, in method order."""
    rows = []
    for column in zip(*experiments):
        row = {"method": column[0].method, "n_experiments": len(column)}
        for key in ("accuracy", "maxda", "eer", "min_dcf", "cllr_raw", "cllr", "act_dcf"):
            values = np.array([getattr(r, key) for r in column])
            sem = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
            row[key], row[key + "_sem"] = float(values.mean()), float(sem)
        row["lams"] = [r.lam for r in column]
        if any(r.n_components is not None for r in column):
            row["n_components"] = [r.n_components for r in column]
            row["normalize"] = [r.normalize for r in column]
        if any(r.descriptor is not None for r in column):
            row["descriptors"] = [r.descriptor for r in column]
        rows.append(row)
    return rows


def mean_curves(experiments, n_points=101):
    """Per method, curves averaged over the experiments (vertical averaging on a grid of
    ``n_points`` in [0, 1]): the ROC (``tar``: best true-accept rate at false-accept rate <=
    ``grid``) and the FA / FR rates (``fa``, ``fr``) at the threshold rejecting the share
    ``grid`` of the test pairs (a scale-free threshold axis: methods' scores differ in scale).
    Returns ``{"grid": [...], "methods": {name: {"tar", "fa", "fr": [...]}}}``."""
    grid = np.linspace(0.0, 1.0, n_points)
    curves = {}
    for column in zip(*experiments):
        tar, fa, fr = [], [], []
        for r in column:
            far, tpr, _ = roc_curve(r.y, r.scores)
            tar.append(tpr[np.searchsorted(far, grid, side="right") - 1])
            thresholds, far, frr = fa_fr_curve(r.y, r.scores)
            rejected = np.searchsorted(np.sort(r.scores), thresholds) / r.scores.size
            at = np.searchsorted(rejected, grid, side="right") - 1
            fa.append(far[at])
            fr.append(frr[at])
        curves[column[0].method] = {key: np.mean(v, axis=0).tolist()
                                    for key, v in (("tar", tar), ("fa", fa), ("fr", fr))}
    return {"grid": grid.tolist(), "methods": curves}


def format_table(rows, calibrated=False):
    """A plain-text table of :func:`summarise` rows, percentages with +- SEM, then minDCF at
    P_target 0.01 and Cllr: of the raw scores, or (``calibrated``) of the scores calibrated on
    the validation fold, with their actDCF."""
    width = max([11] + [len(row["method"]) for row in rows])
    extra = (("min_dcf", "minDCF"), ("cllr", "Cllr cal"), ("act_dcf", "actDCF cal")) \
        if calibrated else (("min_dcf", "minDCF"), ("cllr_raw", "Cllr"))
    lines = [f"{'method':<{width}} {'accuracy %':>15} {'maxDA %':>15} {'EER %':>15} "
             + " ".join(f"{title:>15}" for _, title in extra)]
    for row in rows:
        cells = [f"{100 * row[k]:6.2f} +- {100 * row[k + '_sem']:4.2f}"
                 for k in ("accuracy", "maxda", "eer")]
        cells += [f"{row.get(k, np.nan):6.3f} +- {row.get(k + '_sem', np.nan):5.3f}"
                  for k, _ in extra]
        lines.append(f"{row['method']:<{width}} " + " ".join(f"{c:>15}" for c in cells))
    return "\n".join(lines)


def _numbers(experiments, numbers):
    numbers = list(range(len(experiments))) if numbers is None else list(numbers)
    if len(numbers) != len(experiments):
        raise ValueError(f"{len(numbers)} experiment numbers for {len(experiments)} "
                         "experiments.")
    return numbers


def as_records(experiments, numbers=None):
    """Every Result as a dict (without scores and model), with its experiment number (JSON):
    its entry in ``numbers`` (default 0, 1, ...: the position)."""
    keys = [f.name for f in fields(Result) if f.metadata.get("json", True)]
    return [dict({k: getattr(r, k) for k in keys}, experiment=e)
            for e, results in zip(_numbers(experiments, numbers), experiments)
            for r in results]
