"""DDML: Discriminative Deep Metric Learning's pair loss (Hu et al. 2014; seed 004 eqs. 5-7)."""

from numbers import Real

from .._validation import Interval
from ._params_doc import SIAMESE_ATTRIBUTES, SIAMESE_PARAMETERS
from ._siamese import SiameseLearner


class DDML(SiameseLearner):
    __doc__ = f"""Discriminative distance metric learning with the generalised logistic loss.

    Minimises seed 004 eq. 5 averaged over the pairs,
    ``J = 1/n sum_i 1/2 g(1 - s_i (tau - |a_i - b_i|^2)) + lam/2 |W - W0|^2``, with
    ``g(z) = log(1 + exp(T z)) / T`` and ``a_i = f(x_i)``, ``b_i = f(y_i)``: similar pairs are
    pulled together, dissimilar pairs pushed beyond a squared distance of ``tau + 1``. Pairs
    are scored by minus the squared distance in the learned space (``pair_distance`` gives
    the distance itself, seed 004's ``(a - b)^2``). The linear gradient works on ``x - y``
    only and is prepared once per fit (:mod:`metricfit.losses.ddml`).

    Threads: the linear losses' fused kernels and BLAS run on ``metricfit.get_threads()``
    threads (a :func:`metricfit.threads` block, :func:`metricfit.set_threads` or
    ``METRICFIT_NUM_THREADS``); the kernels give the same bits on any number of them (BLAS
    may round differently at another thread count).

    Parameters
    ----------{SIAMESE_PARAMETERS}    T : float, default=10.0
        Sharpness of the generalised logistic loss (seed 004: 10).
    tau : float, default=1.0
        The distance threshold of eq. 6 (seed 004: 1).

    Attributes
    ----------{SIAMESE_ATTRIBUTES}
    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import DDML
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2, 5))
    >>> X[:20, 1] = X[:20, 0] + 0.1 * rng.normal(size=(20, 5))
    >>> y = np.r_[np.ones(20), -np.ones(20)]
    >>> DDML().fit(X, y).score(X, y) > 0.9
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

    _parameter_constraints = {
        **SiameseLearner._parameter_constraints,
        "T": [Interval(Real, 0, None, closed="neither")],
        "tau": [Interval(Real, None, None)],
    }

    def __init__(self, n_components=None, *, T=10.0, tau=1.0, mapping="linear", n_hidden=None,
                 normalize=False, init="auto", lam=1e-3, similar_only=False, solver="lbfgs",
                 max_iter=None, tol=1e-5, learning_rate=1e-3, momentum=0.9, batch_size=32,
                 validation_fraction=0.1, validation_interval=100, n_iter_no_change=20,
                 random_state=None, verbose=0, warm_start=False, callback=None,
                 preprocessor=None):
        super().__init__(
            n_components, mapping=mapping, n_hidden=n_hidden, normalize=normalize, init=init,
            lam=lam, similar_only=similar_only, solver=solver, max_iter=max_iter, tol=tol,
            learning_rate=learning_rate, momentum=momentum, batch_size=batch_size,
            validation_fraction=validation_fraction, validation_interval=validation_interval,
            n_iter_no_change=n_iter_no_change, random_state=random_state, verbose=verbose,
            warm_start=warm_start, callback=callback, preprocessor=preprocessor)
        self.T = T
        self.tau = tau

    def _loss_spec(self):
        return "ddml", {"T": self.T, "tau": self.tau}

    def pair_distance(self, pairs):
        """Squared Euclidean distance of each pair in the learned space (lower = more similar)."""
        return -self.pair_score(pairs)
