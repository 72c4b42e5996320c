"""The choice of the passes over index pairs: serial in this process, or a Dask map-reduce.

Kept apart from :mod:`metricfit.pairs.index` so that the imports run one way:
``passes -> index`` and ``passes -> _dask -> index`` (the Dask module, imported only when an
objective meets a Dask array, builds on the serial passes and never the other way round).
"""

import numpy as np

from .index import SerialPasses, is_dask

__all__ = ["make_passes"]


def make_passes(points, index, s, dtype, chunk_size):
    """Serial passes, or a Dask map-reduce when the points or the index are Dask arrays.

    In memory, with fewer pairs than half the points, the passes run on the points the pairs
    use only (a copy of at most half the points), so an iteration never costs more point
    work than the pairs of vectors would.
    """
    if is_dask(points) or is_dask(index):
        from ._dask import DaskPasses  # optional: metricfit[dask]

        return DaskPasses(points, index, s, dtype, chunk_size)
    passes = SerialPasses(points, index, s, dtype, chunk_size)
    if type(points) is np.ndarray and 2 * index.shape[0] < points.shape[0]:
        return passes.subset(slice(None))
    return passes
