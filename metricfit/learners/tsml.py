"""TSML: Triangular Similarity Metric Learning (seed 002, Zheng et al. FG 2015; seed 004)."""

from ._params_doc import SIAMESE_ATTRIBUTES, SIAMESE_PARAMETERS
from ._siamese import SiameseLearner


class TSML(SiameseLearner):
    __doc__ = f"""Triangular Similarity Metric Learning: a mapping ``x -> f(x, W)`` from pairs.

    Minimises seed 002 eq. 9 (seed 004 eq. 1),
    ``J = 1/n sum_i [1/2 |a_i|^2 + 1/2 |b_i|^2 - |a_i + s_i b_i| + 1] + lam/2 |W - W0|^2``
    with ``a_i = f(x_i)``, ``b_i = f(y_i)``: similar pairs are pulled towards one unit vector,
    dissimilar pairs towards opposite ones. Pairs are then scored by the cosine similarity
    ``cos(f(x), f(y))`` (eq. 2). The linear gradient is hand-derived and prepared once per fit
    (:mod:`metricfit.losses.tsml`).

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
    >>> from metricfit import TSML
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2, 5))
    >>> X[:20, 1] = X[:20, 0] + 0.1 * rng.normal(size=(20, 5))
    >>> y = np.r_[np.ones(20), -np.ones(20)]
    >>> TSML(n_components=3).fit(X, y).transform(X[:, 0]).shape
    (40, 3)

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
        return "triangular", {}
