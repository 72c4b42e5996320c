r"""Distances between the two embeddings of a pair, with their gradient: the energies of
seeds 000 and 003 as objects the energy losses take as a parameter (as pytorch-metric-learning's
distances).

.. math::

    E_1 = \|a - b\|_1, \quad \frac{\partial E_1}{\partial a} = \operatorname{sign}(a - b);
    \qquad
    E_2 = \|a - b\|_2, \quad \frac{\partial E_2}{\partial a} = \frac{a - b}{E_2}
    \ (0 \text{ at } E_2 = 0);

and ``dE/db = -dE/da`` for both. Each distance offers ``value_grad(a, b) -> (E, dE/da)``,
``score(a, b) -> -E`` (higher = more similar, computed without intermediate overflow) and
``bound(n_outputs, amplitude)``, the largest E for outputs in ``(-amplitude, amplitude)^k``
(seed 000 eq. 8's Q). :func:`get_distance` turns a name ('l1', 'l2') into one.
"""

from ..pairs.rows import l2_distances
from ._energy import ENERGIES, energy, energy_bound
from ._spec import Stateless

__all__ = ["L1Energy", "L2Energy", "DISTANCES", "get_distance", "energy", "energy_bound",
           "ENERGIES"]


class _Energy(Stateless):
    """A named energy: ``value_grad``, ``score`` and ``bound`` by the kernels of
    :mod:`metricfit.losses._energy`."""

    name = None

    def value_grad(self, a, b):
        """``(E, dE/da)`` for embeddings a, b (n, k); ``dE/db = -dE/da``."""
        return energy(a, b, self.name)

    def score(self, a, b):
        """``-E`` (n,): higher means more similar."""
        return -energy(a, b, self.name)[0]

    def bound(self, n_outputs, amplitude=1.0):
        """The largest E for outputs in ``(-amplitude, amplitude)^n_outputs``."""
        return energy_bound(n_outputs, self.name, amplitude)


class L1Energy(_Energy):
    """The L1 energy ``E = |a - b|_1`` of seed 000 (its convnet's outputs in (-1, 1)^k).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.losses.distances import L1Energy
    >>> E, dE = L1Energy().value_grad(np.array([[1.0, 2.0]]), np.array([[0.0, 4.0]]))
    >>> E.tolist(), dE.tolist(), L1Energy().bound(3)
    ([3.0], [[1.0, -1.0]], 6.0)
    """

    name = "l1"


class L2Energy(_Energy):
    """The Euclidean energy ``E = |a - b|_2`` of DrLIM (seed 003).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.losses.distances import L2Energy
    >>> E, dE = L2Energy().value_grad(np.array([[3.0, 0.0]]), np.array([[0.0, 4.0]]))
    >>> E.tolist(), np.round(dE, 12).tolist()
    ([5.0], [[0.6, -0.8]])
    >>> L2Energy().score(np.array([[1e200]]), np.array([[0.0]]))  # no overflow on the way
    array([-1.e+200])
    """

    name = "l2"

    def score(self, a, b):
        return -l2_distances(a, b)


DISTANCES = {"l1": L1Energy(), "l2": L2Energy()}


def get_distance(distance):
    """The distance named ``distance`` ('l1' or 'l2'), or ``distance`` itself when it is a
    distance object (with ``value_grad``, ``score`` and ``bound``). Raises ValueError."""
    if isinstance(distance, _Energy):
        return distance
    if isinstance(distance, str) and distance in DISTANCES:
        return DISTANCES[distance]
    raise ValueError(f"energy must be one of {ENERGIES} or a distance of "
                     f"metricfit.losses.distances, got {distance!r}.")
