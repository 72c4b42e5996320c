"""Scale-safe pair scores on embeddings, shared by every loss's ``pair_score``: their home is
:mod:`metricfit.pairs.rows` (the ground floor, which the learners' base imports too); the
losses keep importing them from here."""

from ..pairs.rows import (  # noqa: F401 (their home)
    cosine_rows,
    l2_distances,
    squared_distances,
    unit_rows,
    unit_scale_rows,
)
