r"""The energy of a pair of embeddings (seed 000 eq. 1; seed 003 "Energy function").

Labels use the toolkit's coding ``s = +1`` similar (genuine) / ``s = -1`` dissimilar
(impostor). Seeds 000 and 003 write ``Y = 0`` genuine, ``Y = 1`` impostor: ``Y = (1 - s) / 2``.

.. math::

    E = \|a - b\|_1, \quad \frac{\partial E}{\partial a} = \operatorname{sign}(a - b)
    = -\frac{\partial E}{\partial b};
    \qquad
    E = \|a - b\|_2, \quad \frac{\partial E}{\partial a} = \frac{a - b}{E}
    \ (0 \text{ at } E = 0).

Every energy loss is ``L(E, Y)`` per pair; :func:`energy_loss` reduces it over the pairs
(the mean by default; :mod:`metricfit.losses.reducers`) and chains ``dL/dE`` with ``dE/da``
and ``dE/db = -dE/da`` (the ``(J, dJ/da, dJ/db)`` API of :mod:`metricfit.losses`); the
distance objects of :mod:`metricfit.losses.distances` wrap :func:`energy`. Pure NumPy: the
work is O(n k) element-wise, BLAS-free.
"""

import numpy as np

__all__ = ["ENERGIES", "energy", "energy_bound", "impostor", "energy_loss"]

ENERGIES = ("l1", "l2")


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


def impostor(s):
    """Y of seeds 000 / 003 from s: 0 genuine (s = +1), 1 impostor (s = -1), float64."""
    return (1 - np.asarray(s, dtype=np.float64)) / 2


def energy_loss(per_pair, a, b, s, distance, reducer):
    """``(J, dJ/da, dJ/db)`` of ``J = reduce_i L(E_i, Y_i)`` for ``per_pair(E, Y) -> (L, dL/dE)``.

    ``distance`` gives ``(E, dE/da)`` (:mod:`metricfit.losses.distances`), ``reducer`` turns
    the per-pair L and dL/dE into J and dJ/dE (:mod:`metricfit.losses.reducers`; the mean:
    ``dL / n``). ``a``, ``b`` (n, k) float32 or float64; the gradients come back in that
    dtype, J as a Python float.
    """
    E, dE = distance.value_grad(a, b)
    L, dL = per_pair(E, impostor(s))
    J, dJ_dE = reducer.reduce(L, dL)
    dJ_da = dJ_dE[:, None].astype(a.dtype) * dE  # (n, k)
    return J, dJ_da, -dJ_da
