"""Experiments: protocols that run methods on data sets, and the applications of seed 001.

verification
    The methods of seed 002 Table I (:func:`~metricfit.experiments.verification.make_method`)
    and the protocols that run them: the fold rotation of seed 002 III.A on fixed folds of
    pairs, the digits image split, score files and tables (``metricfit verify``, ``fuse``).
    One namespace over the modules of its jobs: ``methods`` (the method registry),
    ``selection``, ``evaluation`` (fit and test at the validation threshold), ``fusion``,
    ``runs`` (the protocols and their ``ExperimentConfig``), ``scores`` (run score files),
    ``report`` (tables, curves, JSON records).
applications
    Seed 001 section 6: clustering labelling cost, one-exemplar recognition.

This room sits above the learners: it imports them, and nothing below imports it.
"""

from . import applications, verification

__all__ = ["applications", "verification"]
