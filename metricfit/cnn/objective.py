r"""The siamese objective of seed 000 (Fig. 1, section 3.2): one network, two branches, one loss.

.. math::

    J(W) = \frac1n \sum_i L\big(E(G_W(X_1^i), G_W(X_2^i)), Y^i\big), \qquad
    \nabla_W J = \sum_i \Big[\frac{\partial G_W(X_1^i)}{\partial W}^T
        \frac{\partial J}{\partial a_i}
        + \frac{\partial G_W(X_2^i)}{\partial W}^T \frac{\partial J}{\partial b_i}\Big],

"the sum of the gradients contributed by the two subnets" (section 3.2). Both branches share
W, so a mini-batch of B pairs runs as *one* batch of 2B images ``[X1; X2]`` through one
forward and one backward pass with upstream gradient ``[dJ/da; dJ/db]``: the sum over the two
subnets is the sum over the stacked batch that the weight-gradient kernels already take.

The wrappers train it with SGD as :class:`~metricfit.learners.siamese_cnn.SiameseCNN` does:
:class:`WeightDecayed` (decay of the weights, not the biases), :class:`Scheduled` (the
learning-rate schedule's factor on each mini-batch gradient, and a step counter); a
:class:`TrainingRecipe` (with the augmentation) is what
:func:`metricfit.objective.make_objective` applies.

The object follows the batch protocol of :func:`metricfit.optim.minimize_sgd` (``n_pairs``,
``labels``, ``batch(theta, rows)``) and its ``__call__`` gives the full objective in chunks.
"""

import functools
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..losses import contrastive, square_exponential
from ..losses.distances import get_distance
from ..losses.penalty import add_penalty
from ._workspace import Workspace
from .augment import augment_images
from .schedule import learning_rate_factor

__all__ = ["SiameseObjective", "TrainingObjective", "WeightDecayed", "Scheduled",
           "TrainingRecipe"]

SEED_000_LOSSES = ("square_exponential", "contrastive")


def _seed_000_loss(a, b, s, loss="square_exponential", Q=None, margin=None, kind="l1"):
    """The convnet's default loss, ``(J, dJ/da, dJ/db)``: seed 000's eq. 8
    (:mod:`metricfit.losses.square_exponential`, Q None: the bound of the ``kind`` energy for
    outputs in (-1, 1)) or DrLIM's contrastive loss (:mod:`metricfit.losses.contrastive`,
    margin None: Q / 4)."""
    distance = get_distance(kind)
    Q = distance.bound(a.shape[1]) if Q is None else float(Q)
    if loss == "square_exponential":
        return square_exponential.embedding_cost_grad(a, b, s, Q=Q, energy=distance)
    if loss == "contrastive":
        margin = Q / 4 if margin is None else float(margin)
        return contrastive.embedding_cost_grad(a, b, s, margin=margin, energy=distance)
    raise ValueError(f"loss must be one of {SEED_000_LOSSES}, got {loss!r}.")


class SiameseObjective:
    """``f(theta) -> (J, G)`` of the siamese network on image pairs.

    Parameters
    ----------
    net : ConvNetwork
    pairs : ndarray of shape (n_pairs, 2, H, W), float32 or float64 (the compute dtype)
    s : ndarray of shape (n_pairs,), in {-1, +1}
    chunk_size : int, default=64
        Pairs per forward/backward pass in ``__call__`` (memory bound).
    embedding_cost_grad : callable, default=None
        Any pair loss on embeddings ``(a, b, s) -> (J, dJ/da, dJ/db)`` (e.g. a loss of
        :data:`metricfit.losses.PAIR_LOSSES` with its parameters bound); None: seed 000's
        square-exponential loss (or the contrastive loss) with ``loss_params``.
    augment : callable, default=None
        ``augment(images) -> images`` of the same shape, applied to the ``2B`` stacked images
        of every mini-batch in :meth:`batch` (e.g. seeded random shifts, scalings, rotations
        and flips, :func:`metricfit.cnn.augment.augment_images`); never in ``__call__``, the
        full objective on the pairs as given.
    **loss_params
        Of the default loss: ``loss`` ('square_exponential' or 'contrastive'), ``Q`` (None:
        the energy's bound for outputs in (-1, 1)), ``margin`` (None: Q / 4) and ``kind``
        (the energy, 'l1' or 'l2').

    Notes
    -----
    J and G are in the compute dtype (the loss's J is rounded to it).

    Examples
    --------
    A small network on six pairs of 8x8 images; the gradient agrees with central
    differences along a random direction, and a batch of every pair is the full objective:

    >>> import numpy as np
    >>> from metricfit.cnn import ConvNetwork, SiameseObjective, network_spec
    >>> net = ConvNetwork(network_spec((8, 8), n_maps=(2, 3, 4), n_outputs=2))
    >>> rng = np.random.default_rng(0)
    >>> pairs = rng.uniform(size=(6, 2, 8, 8))
    >>> s = np.array([1, 1, 1, -1, -1, -1])
    >>> f = SiameseObjective(net, pairs, s, chunk_size=4)
    >>> theta = net.init(random_state=0)
    >>> J, G = f(theta)
    >>> G.shape == theta.shape == (net.n_params,)
    True
    >>> v, h = rng.normal(size=theta.size), 1e-5
    >>> slope = (f(theta + h * v)[0] - f(theta - h * v)[0]) / (2 * h)
    >>> bool(abs(slope - G @ v) < 1e-6)
    True
    >>> J_all, G_all = f.batch(theta, np.arange(6))
    >>> bool(np.isclose(J_all, J) and np.allclose(G_all, G))
    True
    """

    def __init__(self, net, pairs, s, chunk_size=64, embedding_cost_grad=None, augment=None,
                 **loss_params):
        self.net, self.pairs, self.augment = net, pairs, augment
        self.labels = np.asarray(s)
        self.n_pairs = pairs.shape[0]
        self.chunk_size = int(chunk_size)
        self.loss = embedding_cost_grad or functools.partial(_seed_000_loss, **loss_params)
        self._workspace = Workspace()  # arrays of one step, reused by the next

    def batch(self, theta, rows):
        """Mean loss and gradient over the pairs ``rows`` (augmented when ``augment`` is
        set); G in the compute dtype."""
        return self._batch(theta, rows, self.augment)

    def _batch(self, theta, rows, augment):
        chunk = self.pairs[rows]  # (B, 2, H, W)
        n = chunk.shape[0]
        images = np.concatenate([chunk[:, 0], chunk[:, 1]])  # (2B, H, W): [X1; X2]
        if augment is not None:
            images = augment(images)
        G, cache = self.net.forward(theta, images, self._workspace)  # (2B, k)
        J, dJ_da, dJ_db = self.loss(G[:n], G[n:], self.labels[rows])
        J = self.pairs.dtype.type(J)  # the compute dtype, as the gradient
        return J, self.net.backward(theta, cache, np.concatenate([dJ_da, dJ_db]),
                                    self._workspace)

    def __call__(self, theta):
        """Mean loss and gradient over all pairs as given (no augmentation), ``chunk_size``
        pairs at a time."""
        J, G = 0.0, np.zeros(self.net.n_params)
        for start in range(0, self.n_pairs, self.chunk_size):
            rows = np.arange(start, min(start + self.chunk_size, self.n_pairs))
            J_c, G_c = self._batch(theta, rows, None)
            J += J_c * rows.size / self.n_pairs
            G += G_c * (rows.size / self.n_pairs)
        return J, G


class WeightDecayed:
    r"""An objective plus weight decay on a mask of its parameters (and on each mini-batch).

    .. math::

        J_\lambda(\theta) = J(\theta) + \frac{\lambda}{2} \sum_{j \in \mathcal W} \theta_j^2,
        \qquad \nabla J_\lambda = \nabla J + \lambda\, \theta \odot 1_{\mathcal W},

    the penalty of :func:`metricfit.losses.penalty.add_penalty` formed in theta's dtype (the
    solver's float64), with :math:`\mathcal W` the entries of ``decay_mask`` (the convolution
    and full-layer weights, :meth:`~metricfit.cnn.ConvNetwork.decay_mask`; no biases, no
    subsampling coefficients).

    Parameters
    ----------
    objective : callable with the batch protocol
    decay_mask : ndarray of bool, shape (n_params,)
    weight_decay : float >= 0, default=0.0
        lambda.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.cnn.objective import WeightDecayed
    >>> class Zero:  # J = 0, with the batch protocol
    ...     n_pairs, labels = 2, np.array([1, -1])
    ...     def __call__(self, theta):
    ...         return 0.0, np.zeros_like(theta)
    >>> f = WeightDecayed(Zero(), decay_mask=[True, False], weight_decay=2.0)
    >>> f(np.array([1.0, 3.0]))
    (1.0, array([2., 0.]))
    """

    def __init__(self, objective, decay_mask, weight_decay=0.0):
        self.objective, self.decay_mask = objective, np.asarray(decay_mask, dtype=bool)
        self.weight_decay = float(weight_decay)
        self.n_pairs, self.labels = objective.n_pairs, objective.labels

    def _decayed(self, theta, J, G):
        return add_penalty(J, G, theta, self.weight_decay, mask=self.decay_mask)

    def batch(self, theta, rows):
        return self._decayed(theta, *self.objective.batch(theta, rows))

    def __call__(self, theta):
        return self._decayed(theta, *self.objective(theta))


class Scheduled:
    """An objective whose ``t``-th mini-batch gradient (from 0) is scaled by the
    learning-rate schedule's ``factor_t`` (:mod:`metricfit.cnn.schedule`): momentum SGD then
    steps with rate ``learning_rate * factor_t``. ``__call__`` is the plain objective (no
    factor, no step counted).

    Parameters
    ----------
    objective : callable with the batch protocol
    schedule : str, default='constant'
    steps_per_epoch, max_steps : int, default=1

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.cnn.objective import Scheduled
    >>> class Slope:  # J = theta, with the batch protocol
    ...     n_pairs, labels = 2, np.array([1, -1])
    ...     def batch(self, theta, rows):
    ...         return float(theta[0]), np.ones(1)
    >>> f = Scheduled(Slope(), schedule="step", max_steps=4)
    >>> [float(f.batch(np.zeros(1), None)[1][0]) for _ in range(4)]
    [1.0, 1.0, 0.1, 0.01]
    """

    def __init__(self, objective, schedule="constant", steps_per_epoch=1, max_steps=1):
        self.objective, self.schedule = objective, schedule
        self.steps_per_epoch, self.max_steps = int(steps_per_epoch), int(max_steps)
        learning_rate_factor(schedule, 0, self.steps_per_epoch, self.max_steps)  # checks
        self.n_pairs, self.labels = objective.n_pairs, objective.labels
        self.step = 0

    def batch(self, theta, rows):
        factor = learning_rate_factor(self.schedule, self.step, self.steps_per_epoch,
                                      self.max_steps)
        self.step += 1
        J, G = self.objective.batch(theta, rows)
        return J, (G if factor == 1.0 else G * factor)

    def __call__(self, theta):
        return self.objective(theta)


class TrainingObjective(Scheduled):
    r"""A siamese objective with weight decay, as SGD trains it with a learning-rate schedule:
    :class:`Scheduled` around :class:`WeightDecayed`.

    Parameters
    ----------
    objective : SiameseObjective
    decay_mask : ndarray of bool, shape (n_params,)
    weight_decay : float >= 0, default=0.0
        lambda.
    schedule : str, default='constant'
    steps_per_epoch, max_steps : int, default=1
        Of the schedule.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.cnn import ConvNetwork, SiameseObjective, TrainingObjective, network_spec
    >>> net = ConvNetwork(network_spec((8, 8), n_maps=(2, 3, 4), n_outputs=2))
    >>> pairs = np.random.default_rng(0).uniform(size=(6, 2, 8, 8))
    >>> f = SiameseObjective(net, pairs, np.array([1, 1, 1, -1, -1, -1]))
    >>> train = TrainingObjective(f, net.decay_mask(), weight_decay=0.1, schedule="step",
    ...                           max_steps=2)
    >>> theta = net.init(random_state=0)
    >>> (J, G), (J_decay, G_decay) = f(theta), train(theta)
    >>> w = np.where(net.decay_mask(), theta, 0.0)  # the weights, no biases
    >>> bool(np.isclose(J_decay, J + 0.05 * w @ w) and np.allclose(G_decay, G + 0.1 * w))
    True

    The 'step' schedule over 2 steps scales the second mini-batch gradient by 0.1:

    >>> rows = np.arange(6)
    >>> g0, g1 = train.batch(theta, rows)[1], train.batch(theta, rows)[1]
    >>> bool(np.allclose(g0, G_decay) and np.allclose(g1, 0.1 * G_decay)), train.step
    (True, 2)
    """

    def __init__(self, objective, decay_mask, weight_decay=0.0, schedule="constant",
                 steps_per_epoch=1, max_steps=1):
        super().__init__(WeightDecayed(objective, decay_mask, weight_decay), schedule,
                         steps_per_epoch, max_steps)


@dataclass(frozen=True)
class TrainingRecipe:
    """How SGD trains a convnet beyond the loss: the wrappers that
    :func:`metricfit.objective.make_objective` applies to the siamese objective.

    Parameters
    ----------
    augment : callable or None, default=None
        ``augment(images) -> images`` on the stacked images of every mini-batch
        (:func:`metricfit.cnn.augment.augment_images` with its ranges and generator bound).
    weight_decay : float, default=0.0
        lambda of :class:`WeightDecayed` on the network's ``decay_mask``.
    schedule : str, default='constant'
    steps_per_epoch, max_steps : int, default=1
        Of :class:`Scheduled`.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.cnn.objective import TrainingRecipe
    >>> from metricfit.mappings import ConvNet
    >>> from metricfit.objective import make_objective
    >>> mapping = ConvNet((8, 8), n_components=2, n_maps=(2, 3, 4))
    >>> pairs = np.random.default_rng(0).uniform(size=(6, 2, 64))
    >>> f = make_objective("contrastive", mapping, pairs, np.array([1, 1, 1, -1, -1, -1]),
    ...                    recipe=TrainingRecipe(weight_decay=0.1, schedule="step"))
    >>> type(f).__name__
    'Scheduled'
    """

    augment: Optional[Callable] = None
    weight_decay: float = 0.0
    schedule: str = "constant"
    steps_per_epoch: int = 1
    max_steps: int = 1

    def wrap(self, objective, network):
        """``objective`` with weight decay on ``network``'s weights and the schedule."""
        return Scheduled(WeightDecayed(objective, network.decay_mask(), self.weight_decay),
                         self.schedule, self.steps_per_epoch, self.max_steps)


def sgd_recipe(augment, rng, weight_decay=0.0, schedule="constant", steps_per_epoch=1,
               max_epochs=1):
    """The :class:`TrainingRecipe` of ``max_epochs`` epochs of ``steps_per_epoch`` steps, with
    the augmentation ranges ``augment`` (None: off; :func:`~metricfit.cnn.augment.
    augment_ranges`). The augmentation draws from its own generator, seeded from ``rng`` (a
    RandomState) only when on, so that a fit without it draws exactly what it drew before
    the option existed."""
    transform = None
    if augment is not None:
        seed = rng.randint(np.iinfo(np.int32).max)
        transform = functools.partial(augment_images, random_state=np.random.default_rng(seed),
                                      **augment)
    return TrainingRecipe(transform, weight_decay, schedule, steps_per_epoch,
                          max_epochs * steps_per_epoch)
