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

The object follows the batch protocol of :func:`metricfit.optim.minimize_sgd` (``n_pairs``,
``labels``, ``batch(theta, rows)``) and its ``__call__`` gives the full objective in chunks.
"""

import functools

import numpy as np

from .loss import embedding_cost_grad as _seed_000_loss

__all__ = ["SiameseObjective"]


class SiameseObjective:
    """``f(theta) -> (J, G)`` of the siamese network on image pairs.

    Parameters
    ----------
    net : ConvNet
    pairs : ndarray of shape (n_pairs, 2, H, W), float32 or float64 (the compute dtype)
    s : ndarray of shape (n_pairs,), in {-1, +1}
    chunk_size : int, default=64
        Pairs per forward/backward pass in ``__call__`` (memory bound).
    embedding_cost_grad : callable, default=None
        Any pair loss on embeddings ``(a, b, s) -> (J, dJ/da, dJ/db)`` (e.g. a loss of
        :data:`metricfit.losses.PAIR_LOSSES` with its parameters bound); None:
        :func:`metricfit.cnn.loss.embedding_cost_grad` with ``loss_params``.
    **loss_params
        Passed to :func:`metricfit.cnn.loss.embedding_cost_grad` (loss, Q, margin, kind).
    """

    def __init__(self, net, pairs, s, chunk_size=64, embedding_cost_grad=None, **loss_params):
        self.net, self.pairs = net, pairs
        self.labels = np.asarray(s)
        self.n_pairs = pairs.shape[0]
        self.chunk_size = int(chunk_size)
        self.loss = embedding_cost_grad or functools.partial(_seed_000_loss, **loss_params)

    def batch(self, theta, rows):
        """Mean loss and gradient over the pairs ``rows``; G in the compute dtype."""
        chunk = self.pairs[rows]  # (B, 2, H, W)
        n = chunk.shape[0]
        images = np.concatenate([chunk[:, 0], chunk[:, 1]])  # (2B, H, W): [X1; X2]
        G, cache = self.net.forward(theta, images)  # (2B, k)
        J, dJ_da, dJ_db = self.loss(G[:n], G[n:], self.labels[rows])
        return J, self.net.backward(theta, cache, np.concatenate([dJ_da, dJ_db]))

    def __call__(self, theta):
        """Mean loss and gradient over all pairs, ``chunk_size`` pairs at a time."""
        J, G = 0.0, np.zeros(self.net.n_params)
        for start in range(0, self.n_pairs, self.chunk_size):
            rows = np.arange(start, min(start + self.chunk_size, self.n_pairs))
            J_c, G_c = self.batch(theta, rows)
            J += J_c * rows.size / self.n_pairs
            G += G_c * (rows.size / self.n_pairs)
        return J, G
