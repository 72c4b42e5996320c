"""Model selection on the validation pairs only (seed 002 III.A / III.E, issue 15).

``select_and_test`` is one experiment: scikit-learn's ``GridSearchCV`` fits on the training
pairs for each lambda and keeps the lambda with the best accuracy (at its best threshold) on
the validation pairs (:class:`~metricfit.pairs.ValidationSplit`), and
:func:`~metricfit.experiments.evaluation.fit_and_test` then takes the threshold there and
reports the test pairs. :func:`select` also chooses the WPCA dimension and the L2
normalisation after it (:class:`LeadingComponents`); :func:`choose_variant` chooses among
descriptor variants. The test pairs are never an argument of a choice.

How the candidates are judged is a :class:`Judge` (issue 28 item 3): by default the validation
fold's maxDA as above; or, on embeddings that are already good, the mean over the validation
fold and ``folds`` group-disjoint folds of the training pairs of both maxDA and minDCF at the
reported prior, keeping only candidates at least level with the start ("no learning") in both.
"""

from dataclasses import dataclass, replace

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline

from ..learners import CSML, DDML, TSML
from ..metrics import min_dcf
from ..pairs import ValidationSplit, check_points_or_pairs
from ..pairs.identity import index_components
from ..pairs.rows import l2_normalize
from .evaluation import fit_and_test, maxda_scorer, validation_accuracy
from .methods import has_lam, make_method

__all__ = ["DEFAULT_LAMS", "DEFAULT_DIMS", "NO_LEARNING", "CRITERIA", "starts_centred",
           "Judge", "pair_groups", "LeadingComponents", "Selection",
           "selection_pipeline", "select_lambda", "select", "select_and_test",
           "select_all_and_test", "image_method_and_test", "choose_variant"]

DEFAULT_LAMS = (1e-3, 1e-2, 1e-1, 1.0)
DEFAULT_DIMS = (100, 200, 300)
NO_LEARNING = 1e12
"""The 'no learning' candidate of the selections: a lambda that pins a start-centred learner
(:func:`starts_centred`) at its start. Their penalty is ``lam/2 ||W - W0||_F^2`` (seed 002
eq. 9), so as lam grows the minimiser tends to ``W0`` (the identity: the cosine of the
inputs; WCCN, LDA or PLDA's transform for the other inits): at 1e12, ``W`` is ``W0`` to
~1e-12. With it among the candidates, the validation never chooses a metric below its start.
"""

_START_CENTRED = (TSML, CSML, DDML)


def starts_centred(name):
    """Whether method ``name`` is regularised towards its start (TSML, CSML, DDML: ``lam/2
    ||W - W0||^2``), so that :data:`NO_LEARNING` is its start; LDML's penalty is centred at
    zero and the methods without lambda have no start to return to."""
    return has_lam(name) and isinstance(make_method(name, 1.0, 1), _START_CENTRED)


def _lam_candidates(name, lams, no_learning):
    """``lams``, and :data:`NO_LEARNING` last when asked and ``name`` starts centred."""
    return list(lams) + ([NO_LEARNING] if no_learning and starts_centred(name) else [])


CRITERIA = ("accuracy", "min-dcf", "both")
"""What a :class:`Judge` picks by: ``'accuracy'``, the best maxDA; ``'min-dcf'``, the lowest
minDCF at the judge's prior (then the best maxDA); ``'both'``, among the candidates at least
level with the start in maxDA *and* minDCF, the best maxDA."""


@dataclass(frozen=True)
class Judge:
    """How the selections judge their candidates.

    Every candidate is fitted on the training pairs and scored on the validation fold; with
    ``folds`` > 0 also fitted on ``folds - 1`` of ``folds`` group-disjoint parts of the
    training pairs and scored on the remaining part (scikit-learn's ``GroupKFold`` over
    ``groups``: no image is on both sides, see :func:`pair_groups`), each part in turn. A
    candidate's maxDA and minDCF(``prior``) are their means over these ``folds + 1`` scored
    sets (each at its own best threshold: scores of different fits are never pooled).

    One validation fold of LFW holds 300 non-target pairs, so one false accept moves its
    minDCF(0.01) by 0.33: on its own it cannot tell a learned metric's minDCF from its
    start's (issue 28, ``docs/results/embeddings.md``); the training folds add five more
    estimates.

    Parameters
    ----------
    criterion : {'accuracy', 'min-dcf', 'both'}, default='accuracy'
        See :data:`CRITERIA`. With ``'both'`` the start is the best :data:`NO_LEARNING`
        candidate (a start-centred learner's metric before learning); a search without one
        picks by ``'accuracy'``.
    folds : int, default=0
        Training-pair parts scored besides the validation fold (0: the validation fold only,
        the protocols' rule until issue 28; needs ``groups``).
    groups : array-like of shape (n_train_pairs,) or None, default=None
        A group per training pair (pairs of one group stay on one side).
    prior : float, default=0.01
        Target prior of the minDCF.

    Examples
    --------
    >>> from metricfit.experiments.selection import Judge
    >>> Judge(criterion="both", folds=5, groups=[0, 0, 1, 1, 2, 2, 3, 3, 4, 4]).criterion
    'both'
    """

    criterion: str = "accuracy"
    folds: int = 0
    groups: object = None
    prior: float = 0.01

    def __post_init__(self):
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}, got "
                             f"{self.criterion!r}.")
        if not (isinstance(self.folds, (int, np.integer)) and self.folds >= 0):
            raise ValueError(f"folds must be an integer >= 0, got {self.folds!r}.")
        if self.folds and self.groups is None:
            raise ValueError("folds > 0 needs groups (one per training pair).")
        if not 0 < self.prior < 1:
            raise ValueError(f"prior must be in (0, 1), got {self.prior!r}.")

    def splits(self, n_train, n_val):
        """``(train, test)`` row indices into the training pairs followed by the validation
        pairs: the ``folds`` group-disjoint training parts, then train -> validation."""
        out = []
        if self.folds:
            groups = np.asarray(self.groups)
            if groups.shape != (n_train,):
                raise ValueError(f"groups has shape {groups.shape}; expected ({n_train},), "
                                 "one per training pair.")
            n_groups = np.unique(groups).size
            if n_groups < self.folds:
                raise ValueError(f"folds={self.folds} needs at least as many groups; the "
                                 f"training pairs form {n_groups}.")
            out = list(GroupKFold(self.folds).split(np.zeros(n_train), groups=groups))
        is_val = np.arange(n_train + n_val) >= n_train
        return out + list(ValidationSplit(is_val).split())

    def scoring(self):
        """The scorers of the search: maxDA and minus minDCF(prior) (greater is better)."""
        prior = self.prior

        def neg_min_dcf(estimator, pairs, y):
            return -min_dcf(y, estimator.decision_function(pairs), prior)[0]

        return {"maxda": maxda_scorer, "neg_min_dcf": neg_min_dcf}

    def choose(self, results, is_start):
        """The index of the chosen candidate in ``cv_results_`` (``results``); ``is_start[i]``:
        whether candidate i is a start (:data:`NO_LEARNING`). The first wins a tie."""
        acc = np.asarray(results["mean_test_maxda"])
        dcf = 0.0 - np.asarray(results["mean_test_neg_min_dcf"])
        order = np.arange(acc.size)
        if self.criterion == "min-dcf":
            return int(np.lexsort((order, -acc, dcf))[0])
        keep = np.ones(acc.size, dtype=bool)
        starts = np.flatnonzero(is_start)
        if self.criterion == "both" and starts.size:
            start = starts[np.argmax(acc[starts])]
            keep = (acc >= acc[start]) & (dcf <= dcf[start])
        return int(np.flatnonzero(keep)[np.argmax(acc[keep])])

    def prefers(self, a, b):
        """Whether the judge prefers the chosen candidate with numbers ``a`` to the one with
        ``b`` (each ``{"maxda": ..., "min_dcf": ...}``, as a Result's ``choice`` from
        :func:`select_all_and_test`): strictly, so that ``b`` wins a tie."""
        if self.criterion == "min-dcf":
            return (a["min_dcf"], -a["maxda"]) < (b["min_dcf"], -b["maxda"])
        if self.criterion == "both":
            return a["maxda"] > b["maxda"] and a["min_dcf"] <= b["min_dcf"]
        return a["maxda"] > b["maxda"]


def pair_groups(index_pairs):
    """A group per pair: the connected component of its two images in the graph of all the
    pairs (images as nodes, pairs as edges), so that grouped folds share no image.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.experiments.selection import pair_groups
    >>> pair_groups(np.array([[0, 1], [1, 2], [3, 4], [5, 3]]))
    array([0, 0, 1, 1], dtype=int32)
    """
    index_pairs = np.asarray(index_pairs)
    if index_pairs.ndim != 2 or index_pairs.shape[1] != 2:
        raise ValueError(f"index_pairs must have shape (n_pairs, 2), got {index_pairs.shape}.")
    n = int(index_pairs.max()) + 1 if index_pairs.size else 0
    return index_components(index_pairs, n)[index_pairs[:, 0]]


def _validation_search(estimator, param_grid, train, val, judge=None):
    """``GridSearchCV`` of ``estimator`` over ``param_grid``, fitted on the ``train`` pairs and
    scored on the ``val`` pairs (and on the training parts of ``judge``), not refitted.
    Returns ``(params, maxda, min_dcf)`` of the candidate ``judge`` (default: the validation
    fold's maxDA) chooses; the first candidate wins a tie."""
    judge = Judge() if judge is None else judge
    pairs = np.concatenate([train[0], val[0]])
    y = np.concatenate([train[1], val[1]])
    cv = judge.splits(len(train[1]), len(val[1]))  # the last: train -> validation
    search = GridSearchCV(estimator, param_grid, scoring=judge.scoring(), cv=cv, refit=False,
                          error_score="raise").fit(pairs, y)
    results = search.cv_results_
    is_start = [params.get("lam", params.get("method__lam")) == NO_LEARNING
                for params in results["params"]]
    best = judge.choose(results, is_start)
    return (results["params"][best], float(results["mean_test_maxda"][best]),
            float(0.0 - results["mean_test_neg_min_dcf"][best]))


def select_lambda(name, train, val, lams=DEFAULT_LAMS, max_iter=200, no_learning=False,
                  judge=None):
    """The lambda of ``name`` with the best validation accuracy at its best threshold:
    ``GridSearchCV`` over ``lams`` with :class:`~metricfit.pairs.ValidationSplit` (fit on the
    ``train`` pairs, score on the ``val`` pairs). The first lambda wins a tie. NaN for a method
    without lambda. ``no_learning``: :data:`NO_LEARNING` (the start itself) is a candidate
    too, last, for the methods that start centred (:func:`starts_centred`). ``judge``: a
    :class:`Judge` (other criteria, training folds besides the validation fold)."""
    if not has_lam(name):
        return np.nan
    candidates = _lam_candidates(name, lams, no_learning)
    if len(candidates) == 1:  # nothing to choose: no fit spent on judging it
        return candidates[0]
    params, _, _ = _validation_search(make_method(name, lams[0], max_iter),
                                      {"lam": candidates}, train, val, judge)
    return params["lam"]


def select_and_test(name, train, val, test, lams=DEFAULT_LAMS, max_iter=200,
                    no_learning=False, judge=None):
    """Choose lambda on ``val`` (:func:`select_lambda`, with ``no_learning`` and ``judge``),
    fit ``name`` on ``train`` with it, take the threshold of best accuracy on ``val``,
    evaluate on ``test``. Each of train/val/test is ``(pairs, y)``."""
    lam = select_lambda(name, train, val, lams, max_iter, no_learning, judge)
    method = make_method(name, None if np.isnan(lam) else lam, max_iter)
    return fit_and_test(name, method, train, val, test, lam)


def image_method_and_test(name, train, val, test, params=None):
    """An image method (:data:`~metricfit.experiments.methods.IMAGE_METHODS`) on image pairs:
    fitted on ``train`` with early stopping on ``val`` (``validation_data``: a validation-fold
    choice, like lambda for the others), the threshold of best accuracy on ``val``, evaluated
    on ``test``. No lambda (NaN). ``params``: see
    :func:`~metricfit.experiments.methods.make_method`."""
    result = fit_and_test(name, make_method(name, params=params), train, val, test,
                          fit_params={"validation_data": val})
    result.choice = {"best_epoch": float(result.model.best_epoch_),
                     "n_epochs": float(result.model.n_epochs_)}
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

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.experiments.verification import LeadingComponents
    >>> X = np.array([[3.0, 4.0, 1.0], [0.0, 2.0, 5.0]])
    >>> LeadingComponents(2, normalize=True).fit_transform(X)
    array([[0.6, 0.8],
           [0. , 1. ]])
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
        return l2_normalize(Z)


@dataclass
class Selection:
    """The settings :func:`select` chose on the validation fold, and their validation
    accuracy at the best threshold (maxDA) and minDCF at the judge's prior (means over the
    scored sets of the :class:`Judge`).

    Examples
    --------
    >>> from metricfit.experiments.verification import Selection
    >>> Selection(lam=0.1, n_components=32, normalize=True, val_score=0.9, val_min_dcf=0.2)
    Selection(lam=0.1, n_components=32, normalize=True, val_score=0.9, val_min_dcf=0.2)
    """

    lam: float
    n_components: int
    normalize: bool
    val_score: float
    val_min_dcf: float = np.nan


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
           max_iter=200, edge_decades=1, no_learning=False, judge=None):
    """Choose, on the validation pairs only, the WPCA dimension (the leading coordinates of
    the inputs: ``dims``), the L2 normalisation after it (``normalize``) and lambda
    (``lams``) of method ``name``, by the accuracy at the best threshold (maxDA), or as
    ``judge`` (a :class:`Judge`) says.

    ``GridSearchCV`` over :func:`selection_pipeline` with one
    :class:`~metricfit.pairs.ValidationSplit` (fit on ``train``, score on ``val``). Where the
    best lambda lies on the grid's edge, a second ``GridSearchCV`` tries ``edge_decades``
    more decades beyond it at the chosen dimension and normalisation, and wins only if
    strictly better (in maxDA; under a ``judge`` with minDCF, only if also not worse in
    minDCF). The first candidate wins a tie (sklearn's order: dimension, then
    normalisation, then lambda). Returns a :class:`Selection` (lambda NaN for a method
    without one). The test pairs are not an argument: they cannot be read. ``no_learning``:
    :data:`NO_LEARNING` (the start) is a lambda candidate too, last (:func:`select_lambda`).
    """
    grid = {"components__n_components": list(dims), "components__normalize": list(normalize)}
    if has_lam(name):
        grid["method__lam"] = _lam_candidates(name, lams, no_learning)

    def search(param_grid):
        start = {key: values[0] for key, values in param_grid.items()}
        pipeline = selection_pipeline(name, max_iter=max_iter).set_params(**start)
        return _validation_search(pipeline, param_grid, train, val, judge)

    best, score, dcf = search(grid)
    best = dict(best)
    extra = _edge_lams(best["method__lam"], lams, edge_decades) \
        if has_lam(name) and best["method__lam"] != NO_LEARNING else []
    if extra:
        second, score2, dcf2 = search({**{key: [value] for key, value in best.items()},
                                       "method__lam": extra})
        judged_on_dcf = judge is not None and judge.criterion != "accuracy"
        if score2 > score and not (judged_on_dcf and dcf2 > dcf):
            best, score, dcf = dict(second), score2, dcf2
    return Selection(lam=float(best.get("method__lam", np.nan)),
                     n_components=int(best["components__n_components"]),
                     normalize=bool(best["components__normalize"]), val_score=float(score),
                     val_min_dcf=float(dcf))


def select_all_and_test(name, train, val, test, lams=DEFAULT_LAMS, dims=DEFAULT_DIMS,
                        normalize=(False, True), max_iter=200, edge_decades=1,
                        no_learning=False, judge=None):
    """:func:`select` on ``train`` / ``val``, then the chosen pipeline fitted on ``train``,
    its threshold of best accuracy on ``val``, evaluated on ``test``. The Result carries the
    chosen ``lam``, ``n_components`` and ``normalize``, and in ``choice`` the criterion's
    numbers of the chosen candidate (``{"maxda": ..., "min_dcf": ...}``)."""
    chosen = select(name, train, val, lams, dims, normalize, max_iter, edge_decades,
                    no_learning, judge)
    lam = None if np.isnan(chosen.lam) else chosen.lam
    method = selection_pipeline(name, chosen.n_components, chosen.normalize, lam, max_iter)
    result = fit_and_test(name, method, train, val, test, chosen.lam,
                          n_components=chosen.n_components, normalize=chosen.normalize)
    result.choice = {"maxda": chosen.val_score, "min_dcf": chosen.val_min_dcf}
    return result


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
