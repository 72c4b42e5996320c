r"""The L2 penalty, once for every objective: weight decay towards a target, on all entries or
on a mask of them.

.. math::

    P(\theta) = \frac\lambda2 \|m \odot (\theta - \theta_0)\|^2, \qquad
    \nabla P = \lambda\, m \odot (\theta - \theta_0),

with ``theta0 = 0`` and ``m = 1`` by default. The linear losses' ``lam/2 ||A - A0||_F^2``
(seed 002 eq. 9), the mapped objectives' weight decay towards theta0, the convnet's decay of
its weights only (a mask without the biases) and LDML's ``lam/2 ||M||^2`` are all this term.
:func:`add_penalty` adds it to a cost and gradient; :class:`Regularised` adds it to every
value of an objective ``f(theta) -> (J, G)`` (and of its mini-batches).
"""

import numpy as np

__all__ = ["l2_penalty", "add_penalty", "Regularised", "regularised"]


def l2_penalty(theta, lam, theta0=None, mask=None, dtype=None):
    """``(lam/2 |m * (theta - theta0)|^2, lam m * (theta - theta0))``.

    Parameters
    ----------
    theta : array-like
    lam : float
    theta0 : array-like with theta's number of entries, default=None (zeros)
    mask : array-like of bool with theta's shape, default=None (every entry)
    dtype : dtype, default=None
        The difference is formed in this dtype (None: theta's); the value is a Python float,
        the gradient has theta's shape.

    Returns
    -------
    value : float
    grad : ndarray
    """
    diff = np.asarray(theta, dtype=dtype)
    if theta0 is not None:
        diff = diff - np.asarray(theta0, dtype=dtype).reshape(diff.shape)
    if mask is not None:
        diff = np.where(mask, diff, 0.0)
    return 0.5 * lam * float(np.vdot(diff, diff)), lam * diff


def add_penalty(J, G, theta, lam, theta0=None, mask=None, dtype=None):
    """``(J + P(theta), G + grad P(theta))`` for the penalty of :func:`l2_penalty` (nothing is
    computed when ``lam == 0``); the gradient is added in G's dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.losses.penalty import add_penalty
    >>> J, G = add_penalty(1.0, np.zeros(2), np.array([1.0, 2.0]), lam=0.5)
    >>> J, G.tolist()
    (2.25, [0.5, 1.0])
    """
    if lam == 0:
        return J, G
    value, grad = l2_penalty(theta, lam, theta0, mask, dtype)
    return J + value, G + grad.astype(G.dtype, copy=False)


class Regularised:
    """``f(theta) + lam/2 |m * (theta - theta0)|^2`` (and on each mini-batch) for an objective
    without a penalty; the difference is formed in the dtype of ``f``'s gradient.

    Parameters
    ----------
    f : callable
        ``f(theta) -> (J, G)`` with the batch protocol of the solvers (``n_pairs``,
        ``labels``, ``batch(theta, rows)``), which the result keeps.
    lam : float, default=0.0
    theta0 : array-like, default=None (zeros)
    mask : array-like of bool, default=None (every entry)

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.losses.penalty import Regularised
    >>> class Square:  # J = |theta|^2, with the batch protocol
    ...     n_pairs, labels = 2, np.array([1, -1])
    ...     def __call__(self, theta):
    ...         return float(theta @ theta), 2 * theta
    ...     def batch(self, theta, rows):
    ...         return self(theta)
    >>> f = Regularised(Square(), lam=1.0, theta0=np.ones(2))
    >>> f(np.array([1.0, 3.0]))
    (12.0, array([2., 8.]))
    """

    def __init__(self, f, lam=0.0, theta0=None, mask=None):
        self.f, self.lam, self.theta0, self.mask = f, float(lam), theta0, mask
        self.n_pairs, self.labels = f.n_pairs, f.labels

    def _add(self, theta, J, G):
        theta = np.reshape(theta, -1)
        return add_penalty(J, G, theta, self.lam, self.theta0, self.mask, dtype=G.dtype)

    def __call__(self, theta):
        return self._add(theta, *self.f(theta))

    def batch(self, theta, rows):
        return self._add(theta, *self.f.batch(theta, rows))


def regularised(f, lam, theta0=None, mask=None):
    """``f`` with the L2 penalty added to each of its values (:class:`Regularised`)."""
    return Regularised(f, lam, theta0, mask)
