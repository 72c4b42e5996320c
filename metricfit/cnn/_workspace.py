"""Arrays a training step reuses from one step to the next.

A training step of the convnet allocates some 100 MB of feature maps, gradients and padded
grids (64 pairs of 56x46 images) and frees them at its end. The C library's allocator gives
such blocks back to the kernel and maps fresh, zero-filled pages for the next step: measured
with ``resource.getrusage``, about 4,700 page faults and 11 ms of system time per 73 ms step
on one thread (``benchmarks/bench_cnn.py``'s batch), none of it arithmetic. A
:class:`Workspace` keeps the arrays of the previous step of the same shape instead.

Only an owner that knows nothing outlives its step may pass one: the siamese objective's
:meth:`~metricfit.cnn.SiameseObjective.batch` (the loss, the gradient it returns and the
embeddings it reads are fresh arrays; every array handed out here is overwritten by the next
step). Without a workspace (``None``, the default everywhere) every call allocates afresh.
"""

import numpy as np

__all__ = ["Workspace", "empty", "zeros"]


class Workspace:
    """Arrays by ``(owner, role, shape, dtype)``: the one handed out last time, or a new one.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.cnn._workspace import Workspace
    >>> ws = Workspace()
    >>> Y = ws.get("C1", "Y", (2, 3), np.float64)
    >>> ws.get("C1", "Y", (2, 3), np.float64) is Y  # the same step shape: reused
    True
    >>> ws.get("C1", "Y", (3, 3), np.float64) is Y  # another shape: a new array
    False
    >>> grid = ws.get("C1", "grid", (3,), np.float32, zeroed=True)
    >>> grid[0] = 5.0  # the next caller gets it as this one left it
    >>> ws.get("C1", "grid", (3,), np.float32, zeroed=True)
    array([5., 0., 0.], dtype=float32)
    """

    def __init__(self):
        self._arrays = {}

    def get(self, owner, role, shape, dtype, zeroed=False):
        """An array of ``shape`` and ``dtype`` for ``role`` of ``owner`` (any hashable),
        uninitialised, or zeros when first made with ``zeroed`` (later calls return it as the
        caller left it: for buffers whose zeros are never written over)."""
        key = (owner, role, tuple(shape), np.dtype(dtype).str, zeroed)
        array = self._arrays.get(key)
        if array is None:
            array = (np.zeros if zeroed else np.empty)(shape, dtype)
            self._arrays[key] = array
        return array


def empty(workspace, owner, role, shape, dtype):
    """``np.empty(shape, dtype)``, from ``workspace`` when one is given."""
    if workspace is None:
        return np.empty(shape, dtype)
    return workspace.get(owner, role, shape, dtype)


def zeros(workspace, owner, role, shape, dtype):
    """``np.zeros(shape, dtype)`` the first time; from ``workspace`` (when one is given) the
    array as the last caller left it."""
    if workspace is None:
        return np.zeros(shape, dtype)
    return workspace.get(owner, role, shape, dtype, zeroed=True)
