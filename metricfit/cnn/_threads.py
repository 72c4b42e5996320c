"""The former home of :mod:`metricfit.cnn.threads` (batch-parallel runs of the serial kernels),
kept so that ``from metricfit.cnn._threads import ...`` (the layers, the network, older code)
keeps working: the same objects, re-exported."""

from .threads import (  # noqa: F401
    _BLAS,
    _POOLS,
    _THREADS,
    CHUNK,
    _pool,
    blas_single_threaded,
    get_num_threads,
    map_chunks,
    n_threads,
    num_threads,
)
