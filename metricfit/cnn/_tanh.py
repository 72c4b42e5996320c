"""The dense layers' tanh kernels, for old importers: their home is
:mod:`metricfit.cnn.activations` (issue 25: no room imports another room's private module)."""

from .activations import (  # noqa: F401 (re-exported)
    tanh_backward,
    tanh_bias_inplace_f64,
    tanh_forward,
    tanh_grad,
)
