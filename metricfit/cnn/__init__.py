"""A torch-free siamese convolutional network on numba kernels (seed 000, Chopra, Hadsell and
LeCun 2005): LeNet-style layers, the C1-S2-C3-S4-C5-F6 network, its siamese objective, and
verification by a Gaussian model of the claimed subject. The energies and losses are in
:mod:`metricfit.losses` (``distances``, ``square_exponential``, ``contrastive``).

Imports only NumPy, SciPy and numba (and scikit-learn's public ``check_random_state``); the
estimator is :class:`metricfit.learners.siamese_cnn.SiameseCNN`. Kernels compile on first use.

Modules
-------
_kernels
    numba: valid convolution with a connection table, trainable subsampling; forward, backward.
layers
    Conv2D, Subsample, Dense, Tanh objects (sizes only) and the LeNet-5 connection table.
network
    :func:`network_spec` (sizing for any input) and :class:`ConvNetwork` (flat parameters).
objective
    :class:`SiameseObjective`, the mini-batch objective of the two weight-sharing branches
    (its default loss seed 000's eq. 8, from :mod:`metricfit.losses`);
    :class:`TrainingObjective`, with weight decay and the learning-rate schedule.
schedule
    :func:`learning_rate_factor`: constant, step, cosine and inverse learning-rate schedules.
threads
    :func:`num_threads`: the layers run their kernels on fixed work units of a batch in threads.
augment
    seeded random shifts, scalings, rotations and mirror flips of image batches (bilinear).
gaussian
    :func:`gaussian_claims`: Prob(genuine) against a Gaussian model of a subject (section 4.1).
"""

import warnings

from ..backend.gaussian import fit_gaussian, gaussian_claims, gaussian_log_density
from ..losses import distances as _distances
from . import objective as _objective
from .layers import lenet_table
from .network import ConvNetwork, NetworkSpec, network_spec
from .objective import SiameseObjective, TrainingObjective
from .schedule import SCHEDULES, learning_rate_factor
from .threads import get_num_threads, num_threads

__all__ = [
    "ConvNetwork", "NetworkSpec", "network_spec", "lenet_table", "SiameseObjective",
    "TrainingObjective", "SCHEDULES", "learning_rate_factor", "fit_gaussian",
    "gaussian_log_density", "gaussian_claims", "num_threads", "get_num_threads",
]

# Deprecated names (of the removed metricfit.cnn.loss, and the renamed network): (where
# they went, the object).
_MOVED = {
    "embedding_cost_grad": ("metricfit.losses.square_exponential.embedding_cost_grad (or "
                            "contrastive.embedding_cost_grad)", _objective._seed_000_loss),
    "energy": ("metricfit.losses.distances.energy", _distances.energy),
    "energy_bound": ("metricfit.losses.distances.energy_bound", _distances.energy_bound),
    "ConvNet": ("metricfit.cnn.ConvNetwork", ConvNetwork),  # the mapping keeps the name
}


def __getattr__(name):
    if name in _MOVED:
        new, value = _MOVED[name]
        warnings.warn(f"metricfit.cnn.{name} is deprecated and will be removed in 0.3; use "
                      f"{new} instead", FutureWarning, stacklevel=2)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
