r"""The energy of a pair of embeddings and the siamese losses of seed 000 (eq. 8) and DrLIM.

The losses now live in :mod:`metricfit.losses` (one module each: ``square_exponential``,
``contrastive``; the energy in ``metricfit.losses._energy``); this module keeps the names the
convnet used, and :func:`embedding_cost_grad` picks one of the two by name with seed 000's
defaults (Q the bound of the energy, margin Q / 4).
"""

from ..losses import contrastive as _contrastive
from ..losses import square_exponential as _square_exponential
from ..losses._energy import ENERGIES, energy, energy_bound, impostor, mean_energy_loss

__all__ = ["LOSSES", "ENERGIES", "energy", "energy_bound", "square_exponential", "contrastive",
           "embedding_cost_grad"]

LOSSES = ("square_exponential", "contrastive")
DECAY = _square_exponential.DECAY


def square_exponential(E, s, Q):
    """Seed 000 eq. 8 per pair: ``(L, dL/dE)``."""
    return _square_exponential.per_pair(E, impostor(s), Q)


def contrastive(E, s, margin):
    """DrLIM contrastive loss with margin per pair: ``(L, dL/dE)``."""
    return _contrastive.per_pair(E, impostor(s), margin)


def embedding_cost_grad(a, b, s, loss="square_exponential", Q=None, margin=None, kind="l1"):
    """Mean loss over pairs of embeddings and its gradients ``(J, dJ/da, dJ/db)``.

    ``loss`` 'square_exponential' (eq. 8 with bound Q; None: :func:`energy_bound` for outputs
    in (-1, 1)) or 'contrastive' (margin; None: Q / 4); ``kind`` the energy, 'l1' or 'l2'.
    """
    if kind not in ENERGIES:
        raise ValueError(f"energy must be one of {ENERGIES}, got {kind!r}.")
    Q = energy_bound(a.shape[1], kind) if Q is None else float(Q)
    if loss == "square_exponential":
        return mean_energy_loss(lambda E, Y: _square_exponential.per_pair(E, Y, Q), a, b, s, kind)
    if loss == "contrastive":
        m = Q / 4 if margin is None else float(margin)
        return mean_energy_loss(lambda E, Y: _contrastive.per_pair(E, Y, m), a, b, s, kind)
    raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")
