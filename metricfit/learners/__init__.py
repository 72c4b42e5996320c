"""The scikit-learn pair learners: one shared base, one short module per learner."""

from .cosine import CosineSimilarity
from .csml import CSML
from .tsml import TSML

__all__ = ["TSML", "CSML", "CosineSimilarity"]
