"""The verification back-end of speaker and face verification: PLDA (:mod:`.plda`), the
transformers before it (:mod:`.lda`), Kaldi's unsupervised PLDA adaptation
(:mod:`.plda_adapt`), score calibration (:mod:`.calibration`), score normalisation
(:mod:`.score_norm`), multi-enrolment scoring (:mod:`.enrolment`), the Gaussian claim model of
seed 000 (:mod:`.gaussian`) and trial lists and score files (:mod:`.trials`)."""

from .._deprecation import deprecated_aliases
from .calibration import CalibratedScorer, LinearCalibration, PAVCalibration
from .enrolment import score_sets
from .gaussian import fit_gaussian, gaussian_claims, gaussian_log_density
from .lda import LDA, LengthNormalizer
from .plda_adapt import adapt_two_covariance
from .score_norm import ScoreNormalizer, normalize_scores
from .trials import (
                     read_scores,
                     read_trial_list,
                     read_trials,
                     score_trials,
                     write_scores,
                     write_trials,
)

__all__ = [
    "LDA", "LengthNormalizer", "LinearCalibration", "PAVCalibration", "CalibratedScorer",
    "ScoreNormalizer", "normalize_scores", "score_sets", "read_trials", "write_trials",
    "read_scores", "write_scores", "score_trials", "fit_gaussian", "gaussian_log_density",
    "gaussian_claims", "read_trial_list", "adapt_two_covariance",
]

__getattr__ = deprecated_aliases(__name__, {"normalise_scores": ("normalize_scores",
                                                                 normalize_scores)})
