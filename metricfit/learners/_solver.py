"""What every optimised learner shares about its solver: the parameters and their checks, the
iteration default, the validation split of SGD, the per-iteration report (verbose, callback),
SGD's early-stopping options and the convergence warning."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._validation import Interval, StrOptions, user_stacklevel
from ._base import validation_accuracy, validation_split

DEFAULT_MAX_ITER = {"lbfgs": 200, "sgd": 20000, "projected": 2000}  # projected: LDML
N_TRAIN_SCORE_PAIRS = 2000  # training pairs scored at each SGD check, for the learning curve

SOLVER_CONSTRAINTS = {
    "solver": [StrOptions({"lbfgs", "sgd"})],
    "max_iter": [Interval(Integral, 1, None), None],
    "tol": [Interval(Real, 0, None)],
    "learning_rate": [Interval(Real, 0, None, closed="neither")],
    "momentum": [Interval(Real, 0, 1, closed="left")],
    "batch_size": [Interval(Integral, 1, None)],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
    "validation_interval": [Interval(Integral, 1, None)],
    "n_iter_no_change": [Interval(Integral, 1, None), None],
    "random_state": ["random_state"],
    "verbose": [Interval(Integral, 0, None), "boolean"],
    "warm_start": ["boolean"],
    "callback": [callable, None],
}


class SolverMixin:
    """Solver plumbing for learners with the parameters of :data:`SOLVER_CONSTRAINTS`.

    L-BFGS trains on every pair; SGD holds out a stratified ``validation_fraction`` and
    stops early on its maxDA (seed 004 Algorithm 1), keeping the best validation model.
    """

    def _max_iter(self, solver=None):
        return self.max_iter or DEFAULT_MAX_ITER[solver or self.solver]

    def _split(self, s, solver=None):
        """Boolean masks (train, validation); validation is None unless SGD."""
        if (solver or self.solver) != "sgd":
            return np.ones(s.shape[0], dtype=bool), None
        advice = ("Give more pairs, change validation_fraction, or use solver='lbfgs' "
                  "(no validation split).")
        train = validation_split(s, self.validation_fraction, self.random_state, advice)
        return train, ~train

    def _on_iteration(self, public):
        """The solver's callback: verbose printing and ``callback(public(theta), n_iter)``."""
        if not (self.verbose or self.callback):
            return None

        def report(theta, J, n_iter):
            if self.verbose:
                print(f"[{type(self).__name__}] iteration {n_iter:6d}  cost {J:.6f}")
            if self.callback is not None:
                params = public(theta)  # one array, or a tuple of them (LDML's M, b)
                self.callback(*(params if isinstance(params, tuple) else (params,)), n_iter)

        return report

    def _solver_options(self, public, scorer=None, s=None, train=None, validation=None,
                        solver=None, max_epochs=None):
        """Options of :func:`metricfit.optim.minimize`. For SGD, ``scorer(rows)`` returns
        ``theta -> scores`` of the pairs ``rows`` (gathered once): validation maxDA for early
        stopping (``validation`` None: none) and, on up to 2000 ``train`` pairs (None: no
        curve), the training curve. ``public(theta)`` is what ``callback`` receives.
        ``max_epochs`` (SGD): count in epochs, at most this many, a check after each."""
        solver = solver or self.solver
        options = {"max_iter": self._max_iter(solver) if max_epochs is None else max_epochs,
                   "callback": self._on_iteration(public), "random_state": self.random_state}
        if max_epochs is not None:
            options["in_epochs"] = True
        if solver != "sgd":
            return dict(options, tol=self.tol)
        train_rows = np.flatnonzero(train) if train is not None else np.empty(0, dtype=int)
        if train_rows.size > N_TRAIN_SCORE_PAIRS:
            rng = np.random.RandomState(0)
            train_rows = np.sort(rng.choice(train_rows, N_TRAIN_SCORE_PAIRS, replace=False))

        def accuracy_on(rows):
            scores, labels = scorer(rows), s[rows]
            return lambda theta: validation_accuracy(labels, scores(theta))

        return dict(options, learning_rate=self.learning_rate, momentum=self.momentum,
                    batch_size=self.batch_size,
                    validation=None if validation is None else accuracy_on(
                        np.flatnonzero(validation)),
                    train_score=accuracy_on(train_rows) if train_rows.size else None,
                    check_every=1 if max_epochs else self.validation_interval,
                    n_iter_no_change=self.n_iter_no_change)

    def _warn_if_failed(self, result, solver=None):
        solver = solver or self.solver
        if result.success or (solver == "sgd" and result.status == 1):
            return  # SGD at max_iter still returns its best validation model
        warnings.warn(f"[{type(self).__name__}] {solver} did not converge after "
                      f"{result.nit} iterations: {result.message}. Increase max_iter or tol.",
                      ConvergenceWarning, stacklevel=user_stacklevel())
