r"""MMC: Mahalanobis Metric for Clustering (Xing, Ng, Jordan and Russell, NIPS 2002), the
objective and its hand-derived gradient.

The paper's problem (eq. 2-4): with S the similar and D the dissimilar pairs and
:math:`d_A(x, y) = (x - y)^T A (x - y)`,

.. math::

    \max_{A \succeq 0} \ \sum_{(i,j) \in D} \sqrt{d_A(x_i, x_j)}
    \quad\text{s.t.}\quad \sum_{(i,j) \in S} d_A(x_i, x_j) \le 1 .

At the optimum the constraint is active, and both sides are homogeneous in A (degree 1/2
and 1): scaling A by t > 0 multiplies the objective by :math:`\sqrt t`. So the problem is the
scale-free ratio (the same reduction as the paper's diagonal case, eq. 6)

.. math::

    \min_{A \succeq 0} J(A) = -\log \sum_{D} \sqrt{d_A} + \tfrac12 \log \sum_{S} d_A,

followed by the scaling that makes :math:`\sum_S d_A = 1`. The paper solves the full case by
gradient ascent with alternating projections onto the constraint and the PSD cone (slow: an
eigendecomposition per projection, and thousands of projections). Here :math:`A = L^T L`
removes the PSD constraint, and J is minimised over L by L-BFGS (the shared solver).

The gradient, derived by hand. Write :math:`\delta_i` for a pair's difference,
:math:`u_i = L \delta_i`, :math:`r_i = \|u_i\|` (so :math:`\sqrt{d_A} = r_i`),
:math:`R = \sum_D r_i`, :math:`\Sigma_S = \sum_S \delta_i \delta_i^T` and
:math:`Q = \sum_S d_A = \operatorname{tr}(L \Sigma_S L^T)`. From
:math:`\partial r_i / \partial L = u_i \delta_i^T / r_i` and
:math:`\partial Q / \partial L = 2 L \Sigma_S`,

.. math::

    \frac{\partial J}{\partial L} = -\frac{1}{R} \sum_{D} \frac{u_i \delta_i^T}{r_i}
        + \frac{L \Sigma_S}{Q}
      = -\frac{1}{R} \big(\operatorname{diag}(1/r) U_D\big)^T \Delta_D
        + \frac{L \Sigma_S}{Q},

two GEMMs of the dissimilar differences (O(n_D d^2)) and one d x d product; the similar pairs
enter through :math:`\Sigma_S` only (computed once). A dissimilar pair with :math:`r_i = 0`
contributes a zero subgradient.

Diagonal A (the paper's eq. 6 case): :math:`A = \operatorname{diag}(l)^2`,
:math:`r_i^2 = \sum_k l_k^2 \delta_{ik}^2`, :math:`Q = \sum_k l_k^2 \sigma_k` with
:math:`\sigma_k = \sum_S \delta_{ik}^2`, and

.. math::

    \frac{\partial J}{\partial l_k} = -\frac{l_k}{R} \sum_D \frac{\delta_{ik}^2}{r_i}
        + \frac{l_k \sigma_k}{Q}.
"""

import numpy as np

__all__ = ["MMCObjective", "metric_from_params", "sum_similar_distances"]


class MMCObjective:
    """``J(theta)`` and its gradient, theta = L.ravel() (full) or l (diagonal).

    Parameters
    ----------
    similar : ndarray (n_S, d), the similar pairs' differences
    dissimilar : ndarray (n_D, d), the dissimilar pairs' differences
    diagonal : bool

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.losses.mmc import MMCObjective
    >>> rng = np.random.default_rng(0)
    >>> f = MMCObjective(rng.normal(size=(10, 3)), rng.normal(size=(12, 3)))
    >>> J, grad = f(np.eye(3).ravel())
    >>> grad.shape
    (9,)
    """

    def __init__(self, similar, dissimilar, diagonal=False):
        self.d = similar.shape[1]
        self.diagonal = diagonal
        self.dissimilar = np.ascontiguousarray(dissimilar, dtype=np.float64)
        similar = np.asarray(similar, dtype=np.float64)
        if diagonal:
            self.sigma = np.einsum("ij,ij->j", similar, similar)
            self.squares = self.dissimilar ** 2
        else:
            self.sigma = similar.T @ similar

    def __call__(self, theta):
        d = self.d
        if self.diagonal:
            l2 = theta * theta
            r = np.sqrt(self.squares @ l2)
            Q = l2 @ self.sigma
        else:
            L = theta.reshape(d, d)
            U = self.dissimilar @ L.T
            r = np.sqrt(np.einsum("ij,ij->i", U, U))
            LS = L @ self.sigma
            Q = np.einsum("ij,ij->", LS, L)
        R = r.sum()
        if not (R > 0 and Q > 0):
            raise ValueError("MMC: every dissimilar pair (or every similar pair) has distance "
                             "0 under the current metric; give pairs of distinct points.")
        J = -np.log(R) + 0.5 * np.log(Q)
        inv_r = np.divide(1.0, r, out=np.zeros_like(r), where=r > 0)
        if self.diagonal:
            grad = -theta * (inv_r @ self.squares) / R + theta * self.sigma / Q
        else:
            grad = (-(U * inv_r[:, None]).T @ self.dissimilar / R + LS / Q).ravel()
        return float(J), grad


def metric_from_params(theta, d, diagonal):
    """A = L^T L (full) or diag(l^2) (diagonal)."""
    if diagonal:
        return np.diag(theta * theta)
    L = theta.reshape(d, d)
    return L.T @ L


def sum_similar_distances(A, similar):
    """``sum_S d_A`` of the similar differences (n_S, d)."""
    return float(np.einsum("ij,ij->", similar @ A, similar))
