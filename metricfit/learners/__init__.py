"""The scikit-learn pair learners: one shared base, one short module per learner.

Each learner declares the kind of its scores (:data:`~metricfit.pairs.tags.SCORE_KINDS`) in
``__metricfit_tags__``; :func:`score_kind` reads it, through a Pipeline to its last step
(:func:`final_step`).
"""

from ..pairs.tags import PairTags, final_step, score_kind
from ._siamese import Siamese
from .cosine import CosineSimilarity
from .covariance import Covariance
from .csml import CSML
from .ddml import DDML
from .fusion import ScoreFusion
from .ldml import LDML
from .lfda import LFDA
from .lmnn import LMNN
from .mknn import MkNN
from .mlkr import MLKR
from .nca import NCA
from .rca import RCA, RCA_Supervised
from .siamese_cnn import SiameseCNN
from .tsml import TSML

__all__ = ["Siamese", "TSML", "CSML", "DDML", "CosineSimilarity", "LDML", "MkNN", "NCA",
           "SiameseCNN", "ScoreFusion", "score_kind", "final_step", "PairTags",
           "Covariance", "LMNN", "MLKR", "LFDA", "RCA",
           "RCA_Supervised"]

# issue 26 (i26-catalogue): ITML, MMC, SDML, LSML, SCML and their supervised forms
from .itml import ITML, ITML_Supervised  # noqa: E402
from .lsml import LSML, LSML_Supervised  # noqa: E402
from .mmc import MMC, MMC_Supervised  # noqa: E402
from .scml import SCML, SCML_Supervised  # noqa: E402
from .sdml import SDML, SDML_Supervised  # noqa: E402

__all__ += ["ITML", "ITML_Supervised", "MMC", "MMC_Supervised", "SDML", "SDML_Supervised",
            "LSML", "LSML_Supervised", "SCML", "SCML_Supervised"]
