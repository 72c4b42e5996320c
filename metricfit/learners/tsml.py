"""TSML: Triangular Similarity Metric Learning (seed 002, Zheng et al. FG 2015)."""

from ..losses import tsml as tsml_loss
from ._base import LinearPairLearner


class TSML(LinearPairLearner):
    """Triangular Similarity Metric Learning: a linear map ``x -> A x`` learned from pairs.

    Minimises seed 002 eq. 9,
    ``J(A) = 1/n sum_i [1/2 |a_i|^2 + 1/2 |b_i|^2 - |a_i + s_i b_i| + 1] + lam/2 |A - A0|^2``
    with ``a_i = A x_i``, ``b_i = A y_i``: similar pairs are pulled towards one unit vector,
    dissimilar pairs towards opposite ones. Pairs are then scored by the cosine similarity
    ``cos(A x, A y)`` (eq. 2). The gradient is hand-derived and prepared once per fit
    (:mod:`metricfit.losses.tsml`); L-BFGS minimises it.

    Parameters
    ----------
    n_components : int, default=None
        k, the dimension of the learned space (None: the number of features d).
    init : {'identity', 'wccn'} or array of shape (k, d), default='identity'
        A0, the start of the optimisation and the target of the regulariser. 'identity'
        is the first k rows of I (TSML-I); 'wccn' learns WCCN on the training pairs, each
        similar pair a class of its own (TSML-WCCN, seed 002 III.D).
    lam : float, default=1e-3
        lambda, the weight of ``1/2 ||A - A0||_F^2`` (seed 002 tunes it in [1e-4, 1e-3]).
    similar_only : bool, default=False
        Learn from the similar pairs only ("TSML-Sim", seed 002 III.E); the threshold is
        still calibrated on all pairs.
    solver : {'lbfgs'}, default='lbfgs'
    max_iter : int, default=200
    tol : float, default=1e-5
        Gradient tolerance of L-BFGS-B.
    random_state : int, RandomState or None, default=None
        For stochastic solvers; L-BFGS is deterministic.
    verbose : int, default=0
        Print the cost at each iteration when > 0.
    warm_start : bool, default=False
        Start from the previous ``components_`` (A0 stays the init).
    callback : callable, default=None
        ``callback(components, n_iter)`` after each iteration.

    Attributes
    ----------
    components_ : ndarray of shape (k, d)
        The learned A.
    threshold_ : float
        Cosine threshold of :meth:`predict`, calibrated for accuracy on the training pairs.
    n_iter_ : int
    classes_ : ndarray, [-1, 1]
    n_features_in_ : int

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
    """

    _loss = tsml_loss
