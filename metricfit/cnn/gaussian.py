"""Deprecated alias of :mod:`metricfit.backend.gaussian` (the Gaussian claim model of seed 000,
section 4.1, moved to the back-end beside the other enrolment scores in 0.2).

Importing this module emits a FutureWarning; it will be removed in 0.3.
"""

import sys
import warnings

from ..backend.gaussian import fit_gaussian, gaussian_claims, gaussian_log_density

__all__ = ["fit_gaussian", "gaussian_log_density", "gaussian_claims"]


def _imported_by_the_cnn_package():
    """True while ``metricfit/cnn/__init__.py`` itself runs (it re-exports these names until
    it imports them from the back-end): the package's own import must not warn."""
    package = sys.modules.get(__name__.rpartition(".")[0])
    return bool(getattr(getattr(package, "__spec__", None), "_initializing", False))


if not _imported_by_the_cnn_package():
    warnings.warn("metricfit.cnn.gaussian is deprecated and will be removed in 0.3; use "
                  "metricfit.backend.gaussian instead.", FutureWarning, stacklevel=2)
