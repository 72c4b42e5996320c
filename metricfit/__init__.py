"""metricfit: similarity metric learning from pairs for identity verification.

Metric learners with hand-derived gradients (TSML, CSML, DDML, LDML; MkNN), the siamese convnet
of Chopra, Hadsell and LeCun on numba kernels (SiameseCNN), within-class and
whitening transformers (WCCN, WPCA), verification metrics and protocols, all scikit-learn
compatible.
Kernels are compiled by numba on first use, never at import.
"""

from . import _blas_env  # noqa: F401  (first: OpenBLAS's idle spin, before numpy loads it)

# isort: split
from . import backend, metrics, pairs  # noqa: E402
from ._array_api import array_api_dispatch  # noqa: E402
from ._version import __version__  # noqa: E402
from .backend import LDA, LengthNormalizer  # noqa: E402
from .learners import (  # noqa: E402
    CSML,
    DDML,
    LDML,
    LFDA,
    LMNN,
    MLKR,
    NCA,
    RCA,
    TSML,
    CosineSimilarity,
    Covariance,
    MkNN,
    RCA_Supervised,
    Siamese,
    SiameseCNN,
)
from .learners.plda import PLDA  # noqa: E402
from .parallel import get_threads, set_threads, threads  # noqa: E402
from .whitening import WCCN, WPCA  # noqa: E402

__all__ = [
    "Siamese", "TSML", "CSML", "DDML", "LDML", "MkNN", "NCA", "CosineSimilarity", "SiameseCNN",
    "WCCN", "WPCA", "backend", "metrics", "pairs",
    "__version__",
    "PLDA", "LDA", "LengthNormalizer",
    "threads", "set_threads", "get_threads", "array_api_dispatch",
    # issue 26: the metric-learn catalogue
    "Covariance", "LMNN", "MLKR", "LFDA", "RCA", "RCA_Supervised",
]

# issue 26 (i26-catalogue): ITML, MMC, SDML, LSML, SCML and their supervised forms
from .learners import (  # noqa: E402
    ITML,
    LSML,
    MMC,
    SCML,
    SDML,
    ITML_Supervised,
    LSML_Supervised,
    MMC_Supervised,
    SCML_Supervised,
    SDML_Supervised,
)

__all__ += ["ITML", "ITML_Supervised", "MMC", "MMC_Supervised", "SDML", "SDML_Supervised",
            "LSML", "LSML_Supervised", "SCML", "SCML_Supervised"]
