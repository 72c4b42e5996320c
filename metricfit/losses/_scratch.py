"""Scratch arrays that a prepared objective reuses from call to call, one set per thread.

A prepared objective makes a (chunk, k) product per chunk of pairs at every call (the
embeddings the fused kernel overwrites) and a (k, d) product to add into the gradient. Made
fresh, each is memory the allocator may have handed back to the kernel since the last call
(glibc gives arrays over 128 KB their own mapping and unmaps them when freed, unless its
adaptive threshold has grown past their size), and then every page costs a fault on first
touch. LDML's float64 objective (4,800 pairs, d = 300) on the 2-core machine took 17.4-17.9 ms
called alone, and 28.5-29.7 ms called in turn with a benchmark whose own arrays kept the
allocator handing pages back (docs/results/timing.md). Reusing the arrays keeps the faults out
of the call. Each thread has its own set (``threading.local``), so concurrent calls of one
objective never share an array; pickling an objective drops the arrays.

The gradient itself is a new array at every call: callers (scipy's optimizers) keep it.
"""

import threading

import numpy as np

__all__ = ["Scratch", "product", "add_product"]


class Scratch:
    """Per-thread scratch arrays by name, reused from call to call.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.losses._scratch import Scratch
    >>> scratch = Scratch()
    >>> a = scratch.rows("P", 4, 3, np.float64)
    >>> b = scratch.rows("P", 2, 3, np.float64)  # the first 2 rows of the same array
    >>> b.shape, np.shares_memory(a, b), b.flags["C_CONTIGUOUS"]
    ((2, 3), True, True)
    """

    def __init__(self):
        self._local = threading.local()

    def rows(self, name, n_rows, width, dtype):
        """An (n_rows, width) C-contiguous array of ``dtype``, contents undefined: the first
        rows of this thread's array ``name``, made anew when it is too small or another width
        or dtype."""
        arrays = self._local.__dict__
        array = arrays.get(name)
        if (array is None or array.dtype != dtype or array.shape[1] != width
                or array.shape[0] < n_rows):
            array = arrays[name] = np.empty((n_rows, width), dtype=dtype)
        return array[:n_rows]

    def __getstate__(self):
        return {}

    def __setstate__(self, state):
        self.__init__()


def product(a, b, scratch, name):
    """``a @ b`` (2-D), into the scratch array ``name`` when ``scratch`` is given (else a new
    array). The same numbers either way."""
    if scratch is None:
        return a @ b
    out = scratch.rows(name, a.shape[0], b.shape[1], np.result_type(a, b))
    return np.matmul(a, b, out=out)


def add_product(total, a, b, scratch, name="sum"):
    """``total + a @ b``: ``a @ b`` itself (a new array) when ``total`` is None, else added into
    ``total`` in place through the scratch array ``name`` (the same numbers as ``total += a @
    b``)."""
    if total is None:
        return a @ b
    total += product(a, b, scratch, name)
    return total
