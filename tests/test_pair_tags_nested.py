"""A Pipeline whose last step is itself a Pipeline (``WPCA -> [LengthNormalizer -> PLDA]``, as
``metricfit score --method plda-lnorm --wpca N`` builds): its score kind and the data reaching
the scoring step are read through the nesting."""

import numpy as np
from sklearn.pipeline import make_pipeline

from metricfit import PLDA, WPCA, LengthNormalizer
from metricfit.pairs.tags import before_final_step, final_step, score_kind


def test_nested_pipelines_are_read_to_their_scoring_step():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 6))
    inner = make_pipeline(LengthNormalizer(), PLDA())
    outer = make_pipeline(WPCA(n_components=4), inner)
    labels = np.repeat(np.arange(12), 5)
    outer.fit(X, labels)
    assert final_step(outer) is inner.steps[-1][1]
    assert score_kind(outer) == "llr"
    expected = inner[:-1].transform(outer[:-1].transform(X))
    np.testing.assert_array_equal(before_final_step(outer, X), expected)
