"""CSML: Cosine Similarity Metric Learning (Nguyen & Bai 2010; seed 002 eq. 11)."""

from ..losses import csml as csml_loss
from ._base import LinearPairLearner


class CSML(LinearPairLearner):
    """Cosine Similarity Metric Learning: a linear map learned by minimising
    ``J(A) = mean_i(-s_i cos(A x_i, A y_i)) + lam/2 ||A - A0||_F^2`` (gradient: seed 002
    eq. 11), scored by the cosine in the learned space.

    Parameters and attributes are those of :class:`metricfit.TSML`.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import CSML
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2, 5))
    >>> X[:20, 1] = X[:20, 0] + 0.1 * rng.normal(size=(20, 5))
    >>> y = np.r_[np.ones(20), -np.ones(20)]
    >>> CSML().fit(X, y).score(X, y) > 0.9
    True
    """

    _loss = csml_loss
