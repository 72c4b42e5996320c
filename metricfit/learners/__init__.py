"""The scikit-learn pair learners: one shared base, one short module per learner."""

from .cosine import CosineSimilarity
from .csml import CSML
from .ddml import DDML
from .fusion import ScoreFusion
from .ldml import LDML
from .mknn import MkNN
from ._siamese import Siamese
from .nca import NCA
from .siamese_cnn import SiameseCNN
from .tsml import TSML

__all__ = ["Siamese", "TSML", "CSML", "DDML", "CosineSimilarity", "LDML", "MkNN", "NCA",
           "SiameseCNN", "ScoreFusion"]
