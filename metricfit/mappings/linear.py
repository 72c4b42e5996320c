r"""The linear mapping ``f(x, W) = W x`` (seed 004, "Linear neurons"; TSML-Linear, DDML-Linear).

.. math::

    a_i = W x_i, \qquad
    \frac{\partial J}{\partial W} = \sum_i \frac{\partial J}{\partial a_i} x_i^T
    \quad\text{i.e.}\quad dW = dZ^T X                                           (eq. 9)

No bias (the paper's linear neurons have none). ``theta = W.ravel()``: the same flat layout as
the components ``A`` (k, d) of :mod:`metricfit.losses`, so a linear theta *is* ``A.ravel()``.
"""

import numpy as np

from ._base import Mapping, _check_size

__all__ = ["Linear"]


class Linear(Mapping):
    """``Z = X W^T`` with ``W`` of shape (n_components, n_features).

    Parameters
    ----------
    n_features : int
        Input dimension d.
    n_components : int
        Output dimension k.

    Examples
    --------
    >>> import numpy as np
    >>> f = Linear(3, 2)
    >>> theta = f.init()
    >>> f.unpack(theta)["W"]
    array([[1., 0., 0.],
           [0., 1., 0.]])
    >>> f.transform(theta, np.array([[1.0, 2.0, 3.0]]))
    array([[1., 2.]])
    """

    fitted_attribute = "components_"
    regularise_towards_init = True
    is_matrix = True
    is_linear = True

    def as_attribute(self, theta):
        """``components_``: theta as the (n_components, n_features) matrix W."""
        return theta.reshape(self.n_components, self.n_features)

    def __init__(self, n_features, n_components):
        self.n_features = _check_size(n_features, "n_features")
        self.n_components = _check_size(n_components, "n_components")

    @property
    def shapes(self):
        return {"W": (self.n_components, self.n_features)}

    def init(self, random_state=None):
        """``W0 = I`` (seed 004, Algorithm 1): the first k rows of the d x d identity.

        For k > d the rows past d are zero. ``random_state`` is accepted for a uniform
        interface and not used. Returns theta (n_params,) in float64.
        """
        return np.eye(self.n_components, self.n_features).ravel()

    def forward(self, theta, X):
        """``Z = X W^T`` (n, k) and the cache ``(X,)`` for :meth:`backward`."""
        X = self._check_input(X)
        W = self.unpack(theta)["W"]  # (k, d)
        return X @ W.T, (X,)  # (n, k)

    def backward(self, theta, cache, dZ):
        """Flat ``dW = dZ^T X`` (one GEMM) for the upstream gradient dZ = dJ/dZ (n, k)."""
        (X,) = cache
        dZ = np.asarray(dZ)
        expected = (X.shape[0], self.n_components)
        if dZ.shape != expected:
            raise ValueError(f"dZ must have shape {expected}, got {dZ.shape}.")
        return (dZ.T @ X).ravel()  # (k * d,)
