"""Model selection on the validation pairs only (seed 002 III.A / III.E, issue 15).

``select_and_test`` is one experiment: scikit-learn's ``GridSearchCV`` fits on the training
pairs for each lambda and keeps the lambda with the best accuracy (at its best threshold) on
the validation pairs (:class:`~metricfit.pairs.ValidationSplit`), and
:func:`~metricfit.experiments.evaluation.fit_and_test` then takes the threshold there and
reports the test pairs. :func:`select` also chooses the WPCA dimension and the L2
normalisation after it (:class:`LeadingComponents`); :func:`choose_variant` chooses among
descriptor variants. The test pairs are never an argument of a choice.
"""

from dataclasses import dataclass, replace

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from ..learners import CSML, DDML, TSML
from ..pairs import ValidationSplit, check_points_or_pairs
from ..pairs.rows import l2_normalize
from .evaluation import fit_and_test, maxda_scorer, validation_accuracy
from .methods import has_lam, make_method

__all__ = ["DEFAULT_LAMS", "DEFAULT_DIMS", "NO_LEARNING", "starts_centred",
           "LeadingComponents", "Selection",
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


def _validation_search(estimator, param_grid, train, val):
    """``GridSearchCV`` of ``estimator`` over ``param_grid``, fitted on the ``train`` pairs and
    scored (maxDA) on the ``val`` pairs (one :class:`~metricfit.pairs.ValidationSplit`), not
    refitted; the first candidate wins a tie."""
    pairs = np.concatenate([train[0], val[0]])
    y = np.concatenate([train[1], val[1]])
    cv = ValidationSplit(np.arange(len(y)) >= len(train[1]))
    return GridSearchCV(estimator, param_grid, scoring=maxda_scorer, cv=cv, refit=False,
                        error_score="raise").fit(pairs, y)


def select_lambda(name, train, val, lams=DEFAULT_LAMS, max_iter=200, no_learning=False):
    """The lambda of ``name`` with the best validation accuracy at its best threshold:
    ``GridSearchCV`` over ``lams`` with :class:`~metricfit.pairs.ValidationSplit` (fit on the
    ``train`` pairs, score on the ``val`` pairs). The first lambda wins a tie. NaN for a method
    without lambda. ``no_learning``: :data:`NO_LEARNING` (the start itself) is a candidate
    too, last, for the methods that start centred (:func:`starts_centred`)."""
    if not has_lam(name):
        return np.nan
    search = _validation_search(make_method(name, lams[0], max_iter),
                                {"lam": _lam_candidates(name, lams, no_learning)}, train, val)
    return search.best_params_["lam"]


def select_and_test(name, train, val, test, lams=DEFAULT_LAMS, max_iter=200,
                    no_learning=False):
    """Choose lambda on ``val`` (:func:`select_lambda`, with ``no_learning``), fit ``name`` on
    ``train`` with it, take the threshold of best accuracy on ``val``, evaluate on ``test``.
    Each of train/val/test is ``(pairs, y)``."""
    lam = select_lambda(name, train, val, lams, max_iter, no_learning)
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
    accuracy at the best threshold (maxDA).

    Examples
    --------
    >>> from metricfit.experiments.verification import Selection
    >>> Selection(lam=0.1, n_components=32, normalize=True, val_score=0.9)
    Selection(lam=0.1, n_components=32, normalize=True, val_score=0.9)
    """

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
           max_iter=200, edge_decades=1, no_learning=False):
    """Choose, on the validation pairs only, the WPCA dimension (the leading coordinates of
    the inputs: ``dims``), the L2 normalisation after it (``normalize``) and lambda
    (``lams``) of method ``name``, by the accuracy at the best threshold (maxDA).

    ``GridSearchCV`` over :func:`selection_pipeline` with one
    :class:`~metricfit.pairs.ValidationSplit` (fit on ``train``, score on ``val``). Where the
    best lambda lies on the grid's edge, a second ``GridSearchCV`` tries ``edge_decades``
    more decades beyond it at the chosen dimension and normalisation, and wins only if
    strictly better. The first candidate wins a tie (sklearn's order: dimension, then
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
        return _validation_search(pipeline, param_grid, train, val)

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
                        normalize=(False, True), max_iter=200, edge_decades=1,
                        no_learning=False):
    """:func:`select` on ``train`` / ``val``, then the chosen pipeline fitted on ``train``,
    its threshold of best accuracy on ``val``, evaluated on ``test``. The Result carries the
    chosen ``lam``, ``n_components`` and ``normalize``."""
    chosen = select(name, train, val, lams, dims, normalize, max_iter, edge_decades,
                    no_learning)
    lam = None if np.isnan(chosen.lam) else chosen.lam
    method = selection_pipeline(name, chosen.n_components, chosen.normalize, lam, max_iter)
    return fit_and_test(name, method, train, val, test, chosen.lam,
                        n_components=chosen.n_components, normalize=chosen.normalize)


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
