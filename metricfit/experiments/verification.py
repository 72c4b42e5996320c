"""Verification experiments: the methods of seed 002 Table I and the protocols that run them.

This module is the one namespace of the verification experiments; each job has its module
in :mod:`metricfit.experiments`:

methods
    The method registry: one :class:`MethodSpec` per method (:data:`REGISTRY`), from which
    :data:`METHODS`, :data:`IMAGE_METHODS`, :data:`ALIASES`, :data:`SIMILAR_ONLY` and
    :data:`DEFAULT_METHODS` follow; :func:`make_method` builds one by name.
selection
    Choices on the validation pairs only: lambda (:func:`select_lambda`), the WPCA
    dimension, L2 normalisation and lambda together (:func:`select`,
    :class:`LeadingComponents`), the descriptor variant (:func:`choose_variant`); the
    ``*_and_test`` functions of one experiment (seed 002 III.A / III.E).
evaluation
    Fit and test: :func:`fit_and_test` and :func:`result_at_validation_threshold`, the one
    place that chooses the threshold on the validation pairs (:func:`validation_threshold`)
    and makes a :class:`Result`.
fusion
    Score fusion of seed 002 IV.D, within a run (:func:`fuse`) and across saved runs
    (:func:`fuse_saved`).
runs
    The protocols: :class:`ExperimentConfig`, :func:`run_experiment`, :func:`run_folds`
    (the fold rotation of seed 002 III.A, restricted or unrestricted training, seed 004
    5.2.2), :func:`run_lfw_restricted`, :func:`run_digits`.
scores
    The run score files of ``metricfit verify --scores`` / ``metricfit fuse`` (.npz).
report
    :func:`summarise`, :func:`mean_curves`, :func:`format_table`, :func:`as_records`.

The pairs of the protocols are drawn in :mod:`metricfit.pairs.splits` (``labelled_folds``,
``unrestricted_train_pairs``, ``digits_split``: their names here are deprecated).
"""

import warnings

from ..pairs import splits as _splits
from .evaluation import (
    Result,
    fit_and_test,
    maxda_scorer,
    result_at_validation_threshold,
    snorm_result,
    validation_accuracy,
    validation_threshold,
)
from .fusion import (
    FUSION_COLUMNS,
    FUSION_CS,
    TopColumns,
    fuse,
    fuse_saved,
    fusion_search,
    saved_results,
)
from .methods import (
    ALIASES,
    CNN_RECIPE,
    DEFAULT_METHODS,
    IMAGE_METHODS,
    METHODS,
    REGISTRY,
    SIMILAR_ONLY,
    MethodSpec,
    has_lam,
    make_method,
    resolve_methods,
    takes_images,
)
from .report import as_records, experiment_numbers, format_table, mean_curves, summarise
from .runs import (
    DIGITS_CONFIG,
    ExperimentConfig,
    run_digits,
    run_experiment,
    run_folds,
    run_lfw_restricted,
)
from .scores import (
    SCORE_FIELDS,
    SCORES_FILE,
    load_scores,
    merge_score_files,
    save_scores,
    write_score_columns,
)
from .selection import (
    DEFAULT_DIMS,
    DEFAULT_LAMS,
    LeadingComponents,
    Selection,
    choose_variant,
    image_method_and_test,
    select,
    select_all_and_test,
    select_and_test,
    select_lambda,
    selection_pipeline,
)

__all__ = [
    # methods
    "MethodSpec", "REGISTRY", "METHODS", "IMAGE_METHODS", "CNN_RECIPE", "ALIASES",
    "SIMILAR_ONLY", "DEFAULT_METHODS", "make_method", "resolve_methods", "has_lam",
    "takes_images",
    # evaluation
    "Result", "validation_threshold", "result_at_validation_threshold", "fit_and_test",
    "validation_accuracy", "maxda_scorer", "snorm_result",
    # selection
    "DEFAULT_LAMS", "DEFAULT_DIMS", "LeadingComponents", "Selection", "selection_pipeline",
    "select_lambda", "select", "select_and_test", "select_all_and_test",
    "image_method_and_test", "choose_variant",
    # fusion
    "fuse", "saved_results", "TopColumns", "FUSION_CS", "FUSION_COLUMNS", "fusion_search",
    "fuse_saved",
    # runs
    "ExperimentConfig", "DIGITS_CONFIG", "run_experiment", "run_folds", "run_lfw_restricted",
    "run_digits",
    # scores
    "SCORES_FILE", "SCORE_FIELDS", "save_scores", "load_scores", "write_score_columns",
    "merge_score_files",
    # report
    "summarise", "mean_curves", "format_table", "as_records", "experiment_numbers",
]

_MOVED_TO_PAIRS = ("labelled_folds", "unrestricted_train_pairs", "digits_split")


def __getattr__(name):
    """The pair generation that lived here: deprecated aliases of
    :mod:`metricfit.pairs.splits` (PEP 562)."""
    if name in _MOVED_TO_PAIRS:
        warnings.warn(f"metricfit.experiments.verification.{name} is deprecated and will be "
                      f"removed in 0.3; use metricfit.pairs.splits.{name} instead",
                      FutureWarning, stacklevel=2)
        return getattr(_splits, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
