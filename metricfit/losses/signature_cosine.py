r"""The cosine siamese loss of the signature slides (seed 003; Bromley et al. 1994).

Seed 003, "Signature Verification": "maximize cosine of output vectors for genuine pair, make
it close to zero (or -1) for forged pair". As a regression of the cosine onto a target,

.. math::

    c = \cos(a, b) = \frac{a^T b}{\|a\| \|b\|}, \qquad
    L = \tfrac12 (c - t)^2, \quad t = 1 \text{ (genuine, } s = +1),\
    t = t_- \text{ (forgery, } s = -1),

    \frac{\partial L}{\partial a} = (c - t)\,\frac{\partial c}{\partial a}, \qquad
    \frac{\partial c}{\partial a} = \frac{1}{\|a\|}\Big(\frac{b}{\|b\|} - c\,\frac{a}{\|a\|}\Big)

(and symmetrically for b). ``t_-`` is ``impostor_target`` (default 0: the slide's "close to
zero"; -1 gives its alternative).

**Not CSML.** CSML (:mod:`.csml`, Nguyen & Bai; seed 002 eq. 11) minimises ``-s c``: linear
in the cosine, every pair keeps pushing (impostors towards -1) however well placed. This loss
is quadratic around a target: a genuine pair at c = 1 and a forgery at ``c = t_-`` contribute
nothing, and a forgery past the target (``c < t_-``) is pulled back. With ``t_- = -1`` the two
have the same minimisers but different weights (``(1 - s c)`` times CSML's gradient).

Zero embeddings have no cosine: such a pair contributes 0 and zero gradient (CSML's
convention). Pairs are scored by the cosine.
"""

import numpy as np

from ..pairs.rows import cosine_rows
from ._spec import PairLoss

__all__ = ["embedding_cost_grad", "pair_score", "DEFAULTS"]

DEFAULTS = {"impostor_target": 0.0}


def _unit_rows(a):
    norms = np.sqrt(np.einsum("ij,ij->i", a, a))  # (n,)
    inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return a * inv[:, None], inv


def embedding_cost_grad(a, b, s, impostor_target=0.0):
    """Mean ``1/2 (cos(a_i, b_i) - t_i)^2`` over the pairs and ``(J, dJ/da, dJ/db)``.

    Parameters
    ----------
    a, b : ndarray of shape (n, k)
    s : ndarray of shape (n,), +1 genuine / -1 forgery
    impostor_target : float, default=0.0
        The cosine aimed at for s = -1 (the slides: 0, or -1).
    """
    ua, inv_a = _unit_rows(a)
    ub, inv_b = _unit_rows(b)
    c = np.einsum("ij,ij->i", ua, ub)  # (n,); 0 where a zero vector makes it undefined
    defined = (inv_a > 0) & (inv_b > 0)
    s = np.asarray(s, dtype=np.float64)
    target = np.where(s > 0, 1.0, float(impostor_target))
    r = np.where(defined, c - target, 0.0)  # (n,)
    n = a.shape[0]
    w = (r / n).astype(a.dtype)
    dJ_da = (w * inv_a)[:, None] * (ub - c[:, None] * ua)
    dJ_db = (w * inv_b)[:, None] * (ua - c[:, None] * ub)
    return float(np.mean(0.5 * r**2)), dJ_da.astype(a.dtype), dJ_db.astype(a.dtype)


def pair_score(a, b, impostor_target=0.0):
    """The cosine of each pair (higher = more similar)."""
    return cosine_rows(a, b)


SPEC = PairLoss("signature_cosine", embedding_cost_grad, pair_score, score_kind="cosine",
                defaults=DEFAULTS)
