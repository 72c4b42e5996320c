"""CSML: Cosine Similarity Metric Learning (Nguyen & Bai 2010; seed 002 eq. 11)."""

from ._params_doc import SIAMESE_ATTRIBUTES, SIAMESE_PARAMETERS
from ._siamese import SiameseLearner


class CSML(SiameseLearner):
    __doc__ = f"""Cosine Similarity Metric Learning: a mapping learned by minimising
    ``J = mean_i(-s_i cos(f(x_i), f(y_i))) + lam/2 ||W - W0||^2`` (linear gradient: seed 002
    eq. 11), scored by the cosine in the learned space.

    Threads: the linear losses' fused kernels and BLAS run on ``metricfit.get_threads()``
    threads (a :func:`metricfit.threads` block, :func:`metricfit.set_threads` or
    ``METRICFIT_NUM_THREADS``); the kernels give the same bits on any number of them (BLAS
    may round differently at another thread count).

    Parameters
    ----------{SIAMESE_PARAMETERS}
    Attributes
    ----------{SIAMESE_ATTRIBUTES}
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

    References
    ----------
    - Chopra, Hadsell and LeCun, "Learning a Similarity Metric Discriminatively, with Application to
      Face Verification", CVPR 2005 (seed 000).
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """

    def _loss_spec(self):
        return "cosine", {}
