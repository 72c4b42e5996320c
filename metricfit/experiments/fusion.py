"""Score fusion (seed 002 IV.D): a classifier on the methods' scores, fitted on the validation
pairs, within one run (:func:`fuse`) or across saved runs (:func:`fuse_saved`, ``metricfit
fuse``). The threshold is chosen on the validation pairs like every method's
(:func:`~metricfit.experiments.evaluation.fit_and_test`).
"""

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from ..learners.fusion import ScoreFusion, fusion_model
from ..metrics import max_decision_accuracy
from .evaluation import fit_and_test, maxda_scorer, result_at_validation_threshold

__all__ = ["fuse", "saved_results", "TopColumns", "FUSION_CS", "FUSION_COLUMNS",
           "fusion_search", "fuse_saved"]

FUSION_CS = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
FUSION_COLUMNS = (2, 4, 8, 16, None)


def fuse(results, val, test):
    """Seed 002 IV.D: a linear SVM (:class:`~metricfit.learners.ScoreFusion`) on the scores of
    the fitted methods of ``results``, trained on the validation pairs ``val``; its threshold
    is then chosen on ``val`` for accuracy, like the methods'. Returns the 'fusion' Result.

    ``val`` and ``test`` are ``(pairs, y)``: ``pairs`` one array all methods score, or a list
    of one array per Result, in order (each method's own input: vectors, or images for an
    image method)."""
    fusion = ScoreFusion([(r.method, r.model) for r in results], method="svm").fit(*val)
    return fit_and_test("fusion", fusion, None, val, test, score=fusion.pair_score)


def saved_results(columns):
    """Each saved score column as Results (its test scores at the threshold that maximises its
    validation accuracy), one list per experiment, columns named ``'source:method'``."""
    out = []
    for cells in zip(*columns.values(), strict=True):
        out.append([result_at_validation_threshold(f"{source}:{method}",
                                                   (c["val_scores"], c["val_y"]),
                                                   (c["scores"], c["y"]))
                    for (source, method), c in zip(columns, cells, strict=True)])
    return out


class TopColumns(TransformerMixin, BaseEstimator):
    """The ``n_columns`` score columns with the best accuracy at their best threshold (maxDA)
    on the rows ``fit`` sees (all columns with None), in decreasing order of it; the first
    column wins a tie.

    Attributes
    ----------
    columns_ : ndarray of int
        The kept columns.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.experiments.verification import TopColumns
    >>> Z = np.array([[0.1, 0.9, 0.5], [0.2, 0.8, 0.4], [0.3, 0.1, 0.6], [0.4, 0.2, 0.3]])
    >>> y = np.array([1, 1, -1, -1])
    >>> TopColumns(n_columns=1).fit(Z, y).columns_
    array([1])
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


def fusion_search(n_columns=None, Cs=None, n_splits=5):
    """The fusion's own choices, by 5-fold cross-validation (stratified, seeded) on the pairs
    it is given (the validation fold): how many of the best score columns to keep
    (:class:`TopColumns`, ranked inside each training part), the classifier (linear SVM or
    logistic regression) and its C, by maxDA. ``GridSearchCV`` refits the best on all of
    them. ``n_columns`` and ``Cs`` default to :data:`FUSION_COLUMNS` and
    :data:`FUSION_CS`."""
    pipeline = Pipeline([("columns", TopColumns()), ("scale", StandardScaler()),
                         ("classifier", LinearSVC(random_state=0))])
    grid = [{"columns__n_columns": list(FUSION_COLUMNS if n_columns is None else n_columns),
             "classifier": [classifier], "classifier__C": list(FUSION_CS if Cs is None else Cs)}
            for classifier in (LinearSVC(random_state=0), LogisticRegression())]
    return GridSearchCV(pipeline, grid, scoring=maxda_scorer,
                        cv=StratifiedKFold(n_splits, shuffle=True, random_state=0),
                        error_score="raise")


def _fusion_choice(search, names):
    best = search.best_estimator_
    classifier = best.named_steps["classifier"]
    return {"classifier": "svm" if type(classifier).__name__ == "LinearSVC" else "logistic",
            "C": float(classifier.C), "n_columns": int(best.named_steps["columns"].columns_.size),
            "columns": [names[j] for j in best.named_steps["columns"].columns_],
            "cv_maxda": float(search.best_score_)}


def _check_columns(names, sets):
    """The saved columns hold the same experiments (same numbers): ValueError otherwise."""
    if len(names) < 2:
        raise ValueError(f"fusion needs at least two score columns, got {len(names)}.")
    if len({len(experiments) for experiments in sets}) != 1:
        raise ValueError("the score columns hold different numbers of experiments.")
    numbers = {name: [c.get("experiment") for c in experiments]
               for name, experiments in zip(names, sets, strict=True)}
    if len({tuple(n) for n in numbers.values()}) != 1:
        raise ValueError(f"the score columns hold different experiments: {numbers}; fuse runs "
                         "of the same experiments only.")


def fuse_saved(columns, classifier="svm", select=False):
    """Seed 002 IV.D across descriptors: per experiment, a linear SVM (or logistic
    regression, seed 001 5.3) on the saved scores of ``columns`` (``{(source, method):
    experiments}`` from :func:`~metricfit.experiments.scores.load_scores`), fitted on the
    validation pairs, threshold chosen there for accuracy, tested on the test pairs. Every
    column must hold the same experiments on the same pairs (same labels). Returns one
    ``[Result('fusion')]`` per experiment.

    With ``select``, ``classifier`` is ignored: :func:`fusion_search` chooses the columns,
    the classifier and its C by cross-validation inside the validation fold, and the
    Result's ``choice`` records them (the test scores are not read until the choice is
    made)."""
    names, sets = list(columns), list(columns.values())
    _check_columns(names, sets)
    out = []
    for e, cells in enumerate(zip(*sets, strict=True)):
        for key in ("val_y", "y"):
            if any(not np.array_equal(c[key], cells[0][key]) for c in cells):
                raise ValueError(f"experiment {e}: the columns {names} were not scored on the "
                                 f"same pairs ({key} differ); fuse runs of one protocol only.")
        val = (np.column_stack([c["val_scores"] for c in cells]), cells[0]["val_y"])
        test = (np.column_stack([c["scores"] for c in cells]), cells[0]["y"])
        choice = None
        if select:
            search = fusion_search().fit(*val)
            model, choice = search.best_estimator_, _fusion_choice(
                search, [f"{source}:{method}" for source, method in names])
        else:
            model = fusion_model(classifier).fit(*val)
        result = fit_and_test("fusion", model, None, val, test)
        result.choice = choice
        out.append([result])
    return out
