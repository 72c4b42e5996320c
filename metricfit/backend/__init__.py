"""The verification back-end of speaker and face verification: PLDA (:mod:`.plda`), the
transformers before it (:mod:`.lda`), score calibration (:mod:`.calibration`), score
normalisation (:mod:`.score_norm`), multi-enrolment scoring (:mod:`.enrolment`) and trial
lists and score files (:mod:`.trials`)."""

from .calibration import CalibratedScorer, LinearCalibration, PAVCalibration  # noqa: F401
from .enrolment import score_sets  # noqa: F401
from .lda import LDA, LengthNormalizer  # noqa: F401
from .score_norm import ScoreNormalizer  # noqa: F401
