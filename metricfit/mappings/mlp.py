r"""Two layers of nonlinear neurons (seed 004, "Multiple layers of nonlinear neurons").

The paper's 3-layer MLP (input layer plus two tanh layers, both with bias):

.. math::

    H = \tanh(X W_1^T + \mathbf 1 h_1^T), \qquad Z = \tanh(H W_2^T + \mathbf 1 h_2^T)

Backward by the chain rule, eq. 12 applied layer by layer (:math:`\tanh' = 1 - \tanh^2`):

.. math::

    D_2 = dZ \odot (1 - Z \odot Z), \quad dW_2 = D_2^T H, \quad dh_2 = D_2^T \mathbf 1

    D_1 = (D_2 W_2) \odot (1 - H \odot H), \quad dW_1 = D_1^T X, \quad dh_1 = D_1^T \mathbf 1

Five GEMMs per forward + backward (two forward, three backward) against the linear map's
two. ``theta = [W1.ravel(), h1, W2.ravel(), h2]``.
"""

import numpy as np

from ._base import Mapping, _check_size, _rng, glorot_uniform, tanh_backward, tanh_forward

__all__ = ["MLP"]


class MLP(Mapping):
    """``Z = tanh(tanh(X W1^T + h1) W2^T + h2)``.

    Parameters
    ----------
    n_features : int
        Input dimension d.
    n_hidden : int
        Number of hidden tanh neurons m.
    n_components : int
        Output dimension k.

    Examples
    --------
    >>> import numpy as np
    >>> f = MLP(3, 5, 2)
    >>> theta = f.init(random_state=0)
    >>> f.n_params, f.transform(theta, np.ones((4, 3))).shape
    (32, (4, 2))
    """

    def __init__(self, n_features, n_hidden, n_components):
        self.n_features = _check_size(n_features, "n_features")
        self.n_hidden = _check_size(n_hidden, "n_hidden")
        self.n_components = _check_size(n_components, "n_components")

    def _sizes(self):
        return {"n_features": self.n_features, "n_hidden": self.n_hidden,
                "n_components": self.n_components}

    @property
    def shapes(self):
        d, m, k = self.n_features, self.n_hidden, self.n_components
        return {"W1": (m, d), "h1": (m,), "W2": (k, m), "h2": (k,)}

    def init(self, random_state=None):
        r"""Glorot-uniform weights and biases of each layer (seed 004 eq. 13): layer 1
        from :math:`U[\pm\sqrt6/\sqrt{d + m}]`, layer 2 from :math:`U[\pm\sqrt6/\sqrt{m + k}]`.

        Parameters
        ----------
        random_state : None, int, RandomState or Generator, default=None

        Returns
        -------
        theta : ndarray of shape (n_params,), float64
        """
        rng = _rng(random_state)
        d, m, k = self.n_features, self.n_hidden, self.n_components
        return self.pack(
            W1=glorot_uniform(rng, d, m, (m, d)), h1=glorot_uniform(rng, d, m, (m,)),
            W2=glorot_uniform(rng, m, k, (k, m)), h2=glorot_uniform(rng, m, k, (k,)),
        )

    def forward(self, theta, X):
        """``Z`` (n, k) and the cache ``(X, H, Z)`` (do not modify Z in place before
        :meth:`backward`)."""
        X = self._check_input(X)
        p = self.unpack(theta)
        H = tanh_forward(X @ p["W1"].T, p["h1"])  # (n, m)
        Z = tanh_forward(H @ p["W2"].T, p["h2"])  # (n, k)
        return Z, (X, H, Z)

    def backward(self, theta, cache, dZ):
        """Flat ``[dW1, dh1, dW2, dh2]`` for the upstream gradient dZ = dJ/dZ (n, k)."""
        X, H, Z = cache
        W2 = self.unpack(theta)["W2"]  # (k, m)
        D2 = tanh_backward(Z, dZ)  # (n, k)
        dtheta = np.empty(self.n_params, dtype=np.result_type(D2, X, W2))
        grad = self.unpack(dtheta)  # views into dtheta
        np.matmul(D2.T, H, out=grad["W2"])  # (k, m)
        np.sum(D2, axis=0, out=grad["h2"])  # (k,)
        D1 = tanh_backward(H, D2 @ W2)  # (n, m)
        np.matmul(D1.T, X, out=grad["W1"])  # (m, d)
        np.sum(D1, axis=0, out=grad["h1"])  # (m,)
        return dtheta
