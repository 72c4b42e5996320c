r"""LSML: Metric Learning from Relative Comparisons by Minimizing Squared Residual (Liu, Sun,
Liu and Metaxas, ICDM 2012), the objective and its hand-derived gradient.

A quadruplet (a, b, c, d) says ``d_M(a, b) < d_M(c, d)``. With the distances
:math:`D_{ab} = \sqrt{(a - b)^T M (a - b)}` and the hinge :math:`H(x) = x^2` for x > 0 (else
0), LSML minimises (eqs. 2-4, with the LogDet regulariser of eq. 6 towards a prior
:math:`M_0`)

.. math::

    F(M) = \sum_q w_q\, H(D_{ab} - D_{cd}) + \operatorname{tr}(M M_0^{-1}) - \log\det M,

the weights summing to 1 (metric-learn's scaling). Here :math:`M = L^T L` and F is minimised
over L by L-BFGS; ``log det M = 2 log |det L|`` keeps M positive definite.

The gradient, derived by hand. For a violated quadruplet (:math:`D_{ab} > D_{cd} > 0`), with
:math:`\partial D_{ab} / \partial M = a_q a_q^T / (2 D_{ab})` (:math:`a_q = a - b`,
:math:`c_q = c - d`),

.. math::

    \frac{\partial H}{\partial M} = \Big(1 - \frac{D_{cd}}{D_{ab}}\Big) a_q a_q^T
        + \Big(1 - \frac{D_{ab}}{D_{cd}}\Big) c_q c_q^T,
    \qquad
    G = \frac{\partial F}{\partial M} = \sum_q w_q \frac{\partial H_q}{\partial M}
        + M_0^{-1} - M^{-1}.

(metric-learn 0.7.0 drops the weights :math:`w_q` from this gradient while keeping them in
the loss; the gradient here is that of the loss.) G is symmetric, so with M = L^T L,

.. math::

    \frac{\partial F}{\partial L} = 2 L \Big(\sum_q w_q \frac{\partial H_q}{\partial M}
        + M_0^{-1}\Big) - 2 L^{-T},

the data term as two GEMMs :math:`(A \cdot \text{coef})^T A` over the violated quadruplets.
A violated quadruplet with :math:`D_{cd} = 0` has the gradient :math:`a_q a_q^T` (its loss is
:math:`D_{ab}^2`) for the first term and none through the second.
"""

import numpy as np

__all__ = ["LSMLObjective"]


class LSMLObjective:
    """``F(theta)`` and its gradient, theta = L.ravel() (d x d).

    Parameters
    ----------
    ab, cd : ndarray (n, d), the differences a - b and c - d of the quadruplets
    weights : ndarray (n,), non-negative, summing to 1
    prior_inv : ndarray (d, d), :math:`M_0^{-1}`

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.losses.lsml import LSMLObjective
    >>> rng = np.random.default_rng(0)
    >>> f = LSMLObjective(rng.normal(size=(8, 2)), rng.normal(size=(8, 2)), np.full(8, 1 / 8),
    ...                   np.eye(2))
    >>> F, grad = f(np.eye(2).ravel())
    >>> grad.shape
    (4,)
    """

    def __init__(self, ab, cd, weights, prior_inv):
        self.ab = np.ascontiguousarray(ab, dtype=np.float64)
        self.cd = np.ascontiguousarray(cd, dtype=np.float64)
        self.w = np.asarray(weights, dtype=np.float64)
        self.prior_inv = np.asarray(prior_inv, dtype=np.float64)
        self.d = self.ab.shape[1]

    def __call__(self, theta):
        d = self.d
        L = theta.reshape(d, d)
        sign, logdet = np.linalg.slogdet(L)
        if sign == 0 or not np.isfinite(logdet):
            return np.inf, np.zeros_like(theta)
        Uab, Ucd = self.ab @ L.T, self.cd @ L.T
        Dab = np.sqrt(np.einsum("ij,ij->i", Uab, Uab))
        Dcd = np.sqrt(np.einsum("ij,ij->i", Ucd, Ucd))
        v = Dab > Dcd
        w, Dab, Dcd = self.w[v], Dab[v], Dcd[v]
        loss = float(w @ (Dab - Dcd) ** 2)
        coef_ab = w * (1 - Dcd / Dab)
        coef_cd = w * np.where(Dcd > 0, 1 - Dab / np.where(Dcd > 0, Dcd, 1), 0.0)
        A, C = self.ab[v], self.cd[v]
        G = (A * coef_ab[:, None]).T @ A + (C * coef_cd[:, None]).T @ C + self.prior_inv
        LP = L @ self.prior_inv
        F = loss + np.einsum("ij,ij->", LP, L) - 2 * logdet
        grad = 2 * L @ G - 2 * np.linalg.inv(L).T
        return float(F), grad.ravel()
