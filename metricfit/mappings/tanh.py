r"""One layer of nonlinear neurons ``f(z, W) = tanh(W z + h)`` (seed 004 eqs. 10-12).

Forward and backward, with ``P = X W^T + h`` and ``Z = tanh(P)`` row-wise:

.. math::

    Z = \tanh(X W^T + \mathbf 1 h^T)                                             (eq. 10)
    D = dZ \odot (1 - Z \odot Z), \qquad
    dW = D^T X, \qquad dh = D^T \mathbf 1                                         (eq. 12)

which is eq. 12 written for all rows at once: ``[W h]`` acting on ``[z; 1]`` (eq. 11) gets the
gradient ``[(1 - a \odot a) \odot dJ/da] [x; 1]^T``; the bias column is the row sum of D.
``theta = [W.ravel(), h]``. Products are NumPy GEMMs; the element-wise passes between them
(``tanh(P + h)``, ``dZ (1 - Z^2)``) are :func:`._base.tanh_forward` / ``tanh_backward``: fused
numba kernels where they measured faster than NumPy, NumPy's vectorised tanh otherwise.
"""

import numpy as np

from ._base import Mapping, _check_size, _rng, glorot_uniform, tanh_backward, tanh_forward

__all__ = ["Tanh"]


class Tanh(Mapping):
    """``Z = tanh(X W^T + h)`` with ``W`` (n_components, n_features) and ``h`` (n_components,).

    Parameters
    ----------
    n_features : int
        Input dimension d.
    n_components : int
        Output dimension k.

    Examples
    --------
    >>> import numpy as np
    >>> f = Tanh(3, 2)
    >>> theta = f.init(random_state=0)
    >>> f.n_params, f.transform(theta, np.ones((4, 3))).shape
    (8, (4, 2))
    """

    def __init__(self, n_features, n_components):
        self.n_features = _check_size(n_features, "n_features")
        self.n_components = _check_size(n_components, "n_components")

    @property
    def shapes(self):
        return {"W": (self.n_components, self.n_features), "h": (self.n_components,)}

    def init(self, random_state=None):
        r"""Glorot-uniform W and h (seed 004 eq. 13) with ``n_j = d``, ``n_{j+1} = k``:
        all entries from :math:`U[-\sqrt6/\sqrt{d + k}, \sqrt6/\sqrt{d + k}]`.

        Parameters
        ----------
        random_state : None, int, RandomState or Generator, default=None

        Returns
        -------
        theta : ndarray of shape (n_params,), float64
        """
        rng = _rng(random_state)
        d, k = self.n_features, self.n_components
        W = glorot_uniform(rng, d, k, (k, d))
        h = glorot_uniform(rng, d, k, (k,))
        return self.pack(W=W, h=h)

    def forward(self, theta, X):
        """``Z = tanh(X W^T + h)`` (n, k) and the cache ``(X, Z)`` (Z is the cache: do not
        modify it in place before :meth:`backward`)."""
        X = self._check_input(X)
        p = self.unpack(theta)
        Z = tanh_forward(X @ p["W"].T, p["h"])  # (n, k)
        return Z, (X, Z)

    def backward(self, theta, cache, dZ):
        """Flat ``[dW, dh]`` of eq. 12 for the upstream gradient dZ = dJ/dZ (n, k)."""
        X, Z = cache
        D = tanh_backward(Z, dZ)  # (n, k)
        dtheta = np.empty(self.n_params, dtype=np.result_type(D, X))
        grad = self.unpack(dtheta)  # views into dtheta
        np.matmul(D.T, X, out=grad["W"])  # (k, d)
        np.sum(D, axis=0, out=grad["h"])  # (k,)
        return dtheta
