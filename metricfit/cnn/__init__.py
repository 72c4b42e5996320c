"""A torch-free siamese convolutional network on numba kernels (seed 000, Chopra, Hadsell and
LeCun 2005): LeNet-style layers, the C1-S2-C3-S4-C5-F6 network, the L1 energy and its losses,
and verification by a Gaussian model of the claimed subject.

Imports only NumPy, SciPy and numba (and scikit-learn's public ``check_random_state``); the
estimator is :class:`metricfit.learners.siamese_cnn.SiameseCNN`. Kernels compile on first use.

Modules
-------
_kernels
    numba: valid convolution with a connection table, trainable subsampling; forward, backward.
layers
    Conv2D, Subsample, Dense, Tanh objects (sizes only) and the LeNet-5 connection table.
network
    :func:`network_spec` (sizing for any input) and :class:`ConvNet` (flat parameters).
loss
    L1 / L2 energy, the square-exponential loss (eq. 8), the DrLIM contrastive loss.
objective
    :class:`SiameseObjective`, the mini-batch objective of the two weight-sharing branches;
    :class:`TrainingObjective`, with weight decay and the learning-rate schedule.
schedule
    :func:`learning_rate_factor`: constant, step, cosine and inverse learning-rate schedules.
_threads
    :func:`num_threads`: the layers run their kernels on fixed chunks of a batch in threads.
augment
    seeded random shifts, scalings, rotations and mirror flips of image batches (bilinear).
gaussian
    :func:`gaussian_claims`: Prob(genuine) against a Gaussian model of a subject (section 4.1).
"""

from .gaussian import fit_gaussian, gaussian_claims, gaussian_log_density
from .layers import lenet_table
from .loss import embedding_cost_grad, energy, energy_bound  # noqa: F401 (legacy shim)
from .network import ConvNet, NetworkSpec, network_spec
from .objective import SiameseObjective, TrainingObjective
from .schedule import SCHEDULES, learning_rate_factor
from ._threads import get_num_threads, num_threads

__all__ = [
    "ConvNet", "NetworkSpec", "network_spec", "lenet_table", "SiameseObjective",
    "TrainingObjective", "SCHEDULES", "learning_rate_factor",
    "energy", "energy_bound", "fit_gaussian", "gaussian_log_density",
    "gaussian_claims", "num_threads", "get_num_threads",
]
