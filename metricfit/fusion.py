"""Temporary: ``ScoreFusion`` now lives in :mod:`metricfit.learners.fusion`.

Kept only for ``tests/estimator_registry.py`` (edited in another branch) until its import reads
``from metricfit.learners.fusion import ScoreFusion``; then delete this file. No library
module imports it (tests/test_layout.py checks).
"""

from .learners.fusion import ScoreFusion, fusion_model, stack_scores  # noqa: F401
