"""Declarative parameter validation (a small public-API-only stand-in for scikit-learn's
private ``_param_validation``, which breaks on upgrade).

An estimator declares ``_parameter_constraints = {"lam": [Interval(Real, 0, None)], ...}`` and
calls ``validate_params(self)`` at the start of ``fit``. Each constraint is an ``Interval``, a
``StrOptions``, a type, ``"boolean"``, ``"array-like"``, ``"random_state"``, ``callable`` or
``None``; a value is valid when it satisfies any constraint of its list.
"""

import os
import sys
from numbers import Integral

import numpy as np
from sklearn import get_config
from sklearn.utils.validation import validate_data

__all__ = ["Interval", "StrOptions", "validate_params", "check_feature_names",
           "PointOutputMixin"]


class Interval:
    """Finite numbers of ``kind`` (``Integral`` or ``Real``) in [left, right] (None =
    unbounded).

    ``closed`` is 'both', 'left', 'right' or 'neither'. NaN and +-inf never satisfy it (an
    unbounded side means any finite number: ``lam=inf`` is no weight a fit can use).

    Examples
    --------
    >>> from numbers import Integral, Real
    >>> from metricfit._validation import Interval
    >>> positive = Interval(Real, 0, None, closed="neither")
    >>> print(positive)
    a finite float in the range (0, inf)
    >>> [positive.is_satisfied_by(v) for v in (0.5, 0, float("inf"), float("nan"))]
    [True, False, False, False]
    >>> Interval(Integral, 1, 16).is_satisfied_by(8), Interval(Integral, 1, 16).is_satisfied_by(8.0)
    (True, False)
    >>> Interval(Integral, 0, 1).is_satisfied_by(True)  # a bool is no count
    False
    """

    def __init__(self, kind, left, right, closed="both"):
        self.kind, self.left, self.right, self.closed = kind, left, right, closed

    def is_satisfied_by(self, value):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return False
        if self.kind is not Integral and not _finite_float(value):
            return False
        left_ok = self.left is None or (
            value >= self.left if self.closed in ("both", "left") else value > self.left
        )
        right_ok = self.right is None or (
            value <= self.right if self.closed in ("both", "right") else value < self.right
        )
        return left_ok and right_ok

    def __str__(self):
        kind = "an int" if self.kind is Integral else "a finite float"
        lb = "[" if self.closed in ("both", "left") and self.left is not None else "("
        rb = "]" if self.closed in ("both", "right") and self.right is not None else ")"
        left = "-inf" if self.left is None else self.left
        right = "inf" if self.right is None else self.right
        return f"{kind} in the range {lb}{left}, {right}{rb}"


def _finite_float(value):
    """Whether ``value`` is a finite float64 (NaN, +-inf and ints beyond 1.8e308 are not)."""
    try:
        return bool(np.isfinite(float(value)))
    except OverflowError:
        return False


class StrOptions:
    """One of a fixed set of strings.

    Examples
    --------
    >>> from metricfit._validation import StrOptions
    >>> solver = StrOptions({"sgd", "lbfgs"})
    >>> print(solver)
    a str among 'lbfgs', 'sgd'
    >>> solver.is_satisfied_by("sgd"), solver.is_satisfied_by("adam"), solver.is_satisfied_by(None)
    (True, False, False)
    """

    def __init__(self, options):
        self.options = set(options)

    def is_satisfied_by(self, value):
        return isinstance(value, str) and value in self.options

    def __str__(self):
        return "a str among " + ", ".join(repr(o) for o in sorted(self.options))


def _is_satisfied(constraint, value):
    if constraint is None:
        return value is None
    if constraint == "boolean":
        return isinstance(value, (bool, np.bool_))
    if constraint == "array-like":
        return hasattr(value, "__array__") or isinstance(value, (list, tuple))
    if constraint is callable:
        return callable(value)
    if constraint == "random_state":
        if isinstance(value, (bool, np.bool_)):
            return False
        return value is None or isinstance(
            value, (Integral, np.random.RandomState, np.random.Generator)
        )
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    return constraint.is_satisfied_by(value)


def _describe(constraint):
    if constraint is None:
        return "None"
    if constraint is callable:
        return "a callable"
    if constraint == "random_state":
        return "None, an int, a RandomState or a Generator"
    if isinstance(constraint, type):
        return f"an instance of {constraint.__name__}"
    return str(constraint)


def validate_params(estimator):
    """Check every parameter of ``estimator`` against its ``_parameter_constraints``.

    Raises
    ------
    ValueError
        Naming the parameter, the value given and what it accepts.
    """
    params = estimator.get_params(deep=False)
    for name, constraints in estimator._parameter_constraints.items():
        value = params[name]
        if any(_is_satisfied(c, value) for c in constraints):
            continue
        accepted = " or ".join(_describe(c) for c in constraints)
        raise ValueError(
            f"The {name!r} parameter of {type(estimator).__name__} must be {accepted}. "
            f"Got {value!r} instead."
        )


# -- feature names and output containers of point transformers --------------------------------

def check_feature_names(estimator, X, *, reset):
    """scikit-learn's feature-name and feature-count bookkeeping for 2-D input X.

    ``reset=True`` (fit) records ``n_features_in_`` and, for a DataFrame with string column
    names, ``feature_names_in_``; ``reset=False`` (transform) checks X against them with
    scikit-learn's own messages. Pairs (3-D) have no column names: left to the caller.
    """
    shape = getattr(X, "shape", None)
    ndim = len(shape) if shape is not None else np.asarray(X).ndim
    if ndim == 2:
        validate_data(estimator, X, skip_check_array=True, reset=reset)


class PointOutputMixin:
    """``set_output`` for transformers of points *or* pairs.

    ``set_output(transform="pandas" | "polars" | "default")`` (or scikit-learn's global
    ``transform_output``) turns 2-D output into a DataFrame with ``get_feature_names_out()``
    columns (and the input's index for pandas), as scikit-learn's ``PCA`` does. Pair output
    (3-D) has no DataFrame form and stays an ndarray.

    Examples
    --------
    :class:`~metricfit.features.SquareRoot` is such a transformer:

    >>> import numpy as np
    >>> from metricfit.features import SquareRoot
    >>> X = np.array([[1.0, 4.0], [9.0, 16.0]])
    >>> df = SquareRoot().set_output(transform="pandas").fit_transform(X)
    >>> type(df).__name__, list(df.columns), df.to_numpy().tolist()
    ('DataFrame', ['x0', 'x1'], [[1.0, 2.0], [3.0, 4.0]])
    >>> SquareRoot().set_output(transform="pandas").fit_transform(X[None]).shape  # pairs
    (1, 2, 2)
    """

    _OUTPUTS = ("default", "pandas", "polars")

    def __init_subclass__(cls, **kwargs):
        kwargs.setdefault("auto_wrap_output_keys", None)  # wrapped here, 2-D output only
        super().__init_subclass__(**kwargs)

    def set_output(self, *, transform=None):
        """Set the container of ``transform`` / ``fit_transform``'s 2-D output.

        Parameters
        ----------
        transform : {'default', 'pandas', 'polars'} or None, default=None
            None leaves the configuration unchanged.

        Returns
        -------
        self
        """
        if transform is None:
            return self
        if transform not in self._OUTPUTS:
            raise ValueError(f"set_output: transform must be one of {self._OUTPUTS} or None, "
                             f"got {transform!r}.")
        self._sklearn_output_config = {"transform": transform}
        return self

    def _wrap_output(self, Z, X):
        config = getattr(self, "_sklearn_output_config", {})
        dense = config.get("transform", get_config()["transform_output"])
        if dense == "default" or Z.ndim != 2:
            return Z
        columns = list(self.get_feature_names_out())
        if dense == "pandas":
            import pandas as pd

            index = X.index if isinstance(X, (pd.DataFrame, pd.Series)) else None
            return pd.DataFrame(Z, index=index, columns=columns, copy=False)
        if dense == "polars":
            import polars as pl

            return pl.DataFrame(Z, schema=columns, orient="row")
        raise ValueError(f"unknown transform output {dense!r}; use one of {self._OUTPUTS}.")


# -- counts and identity labels at the public edge ---------------------------------------------

def check_count(value, name, *, minimum=0):
    """An integer count >= ``minimum`` (a bool, float or string is an error), as int.

    Raises
    ------
    ValueError
        Naming the argument, what it accepts and what was given.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Integral, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r} "
                         f"({type(value).__name__}).")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def user_stacklevel():
    """The ``stacklevel`` for ``warnings.warn`` called by the caller of this function that
    names the first frame outside the metricfit package: the user's line, however deep in
    the package the warning is raised."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level
