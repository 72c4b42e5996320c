r"""The energy of a pair of embeddings and the siamese losses on it (seed 000 eqs. 1, 8; DrLIM).

Labels use the toolkit's coding ``s = +1`` similar (genuine) / ``s = -1`` dissimilar
(impostor). Seed 000 writes ``Y = 0`` genuine, ``Y = 1`` impostor, so ``Y = (1 - s) / 2``.

Energy (seed 000 eq. 1, with the L1 norm of its abstract and section 2.3), or the Euclidean
distance of DrLIM:

.. math::

    E = \|a - b\|_1, \quad \frac{\partial E}{\partial a} = \operatorname{sign}(a - b)
    = -\frac{\partial E}{\partial b};
    \qquad
    E = \|a - b\|_2, \quad \frac{\partial E}{\partial a} = \frac{a - b}{E}
    \ (0 \text{ at } E = 0).

Square-exponential loss (seed 000 eq. 8), Q the upper bound of E:

.. math::

    L = (1 - Y)\,\frac2Q E^2 + Y\, 2Q\, e^{-2.77 E / Q}, \qquad
    \frac{\partial L}{\partial E} = (1 - Y)\,\frac4Q E - Y\, 5.54\, e^{-2.77 E / Q}.

Contrastive loss with margin m (DrLIM, seed 003 "pay quadratically"):

.. math::

    L = (1 - Y)\,\tfrac12 E^2 + Y\,\tfrac12 \max(0, m - E)^2, \qquad
    \frac{\partial L}{\partial E} = (1 - Y)\, E - Y \max(0, m - E).

:func:`embedding_cost_grad` averages over the pairs and chains ``dL/dE`` with ``dE/da``,
``dE/db`` (the ``(J, dJ/da, dJ/db)`` API of :mod:`metricfit.losses`).
"""

import numpy as np

__all__ = ["LOSSES", "ENERGIES", "energy", "energy_bound", "square_exponential", "contrastive",
           "embedding_cost_grad"]

ENERGIES = ("l1", "l2")
LOSSES = ("square_exponential", "contrastive")
DECAY = 2.77  # seed 000 eq. 8


def energy(a, b, kind="l1"):
    """``(E, dE/da)`` for embeddings a, b (n, k); ``dE/db = -dE/da``."""
    diff = a - b  # (n, k)
    if kind == "l1":
        return np.abs(diff).sum(axis=1), np.sign(diff)
    if kind == "l2":
        E = np.sqrt(np.einsum("ij,ij->i", diff, diff))  # (n,)
        scale = np.divide(1, E, out=np.zeros_like(E), where=E > 0)
        return E, diff * scale[:, None]
    raise ValueError(f"energy must be one of {ENERGIES}, got {kind!r}.")


def energy_bound(n_outputs, kind="l1", amplitude=1.0):
    """Upper bound Q of E for outputs in ``(-amplitude, amplitude)^n_outputs`` (eq. 8's Q)."""
    width = 2.0 * amplitude
    return width * n_outputs if kind == "l1" else width * np.sqrt(n_outputs)


def _impostor(s):
    return (1 - np.asarray(s, dtype=np.float64)) / 2  # Y of seed 000: 0 genuine, 1 impostor


def square_exponential(E, s, Q):
    """Seed 000 eq. 8 per pair: ``(L, dL/dE)``."""
    Y = _impostor(s)
    decay = np.exp(-DECAY * E / Q)
    L = (1 - Y) * (2 / Q) * E**2 + Y * 2 * Q * decay
    return L, (1 - Y) * (4 / Q) * E - Y * 2 * DECAY * decay


def contrastive(E, s, margin):
    """DrLIM contrastive loss with margin per pair: ``(L, dL/dE)``."""
    Y = _impostor(s)
    short = np.maximum(0, margin - E)
    return (1 - Y) * E**2 / 2 + Y * short**2 / 2, (1 - Y) * E - Y * short


def embedding_cost_grad(a, b, s, loss="square_exponential", Q=None, margin=None, kind="l1"):
    """Mean loss over pairs of embeddings and its gradients ``(J, dJ/da, dJ/db)``.

    Parameters
    ----------
    a, b : ndarray of shape (n, k)
        ``G_W(X1)`` and ``G_W(X2)``.
    s : array-like of shape (n,)
        +1 genuine, -1 impostor.
    loss : {'square_exponential', 'contrastive'}, default='square_exponential'
    Q : float, default=None
        Eq. 8's bound of E; None means :func:`energy_bound` for outputs in (-1, 1).
    margin : float, default=None
        The contrastive margin; None means Q / 4.
    kind : {'l1', 'l2'}, default='l1'
        The energy.

    Returns
    -------
    J : float
    dJ_da, dJ_db : ndarrays of shape (n, k), the dtype of a
    """
    Q = energy_bound(a.shape[1], kind) if Q is None else float(Q)
    E, dE = energy(a, b, kind)
    if loss == "square_exponential":
        L, dL = square_exponential(E, s, Q)
    elif loss == "contrastive":
        L, dL = contrastive(E, s, Q / 4 if margin is None else float(margin))
    else:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")
    n = a.shape[0]
    dJ_da = (dL / n)[:, None].astype(a.dtype) * dE  # (n, k)
    return float(L.mean()), dJ_da, -dJ_da
