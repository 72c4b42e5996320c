"""The public API is a deliberate list: adding or removing a public name fails here until the
list below is updated (and, for a removal or a rename, a deprecated alias and a changelog line
are added: :mod:`metricfit._deprecation`, docs/changelog.rst "Unreleased").

The public names are those the API reference documents (``docs/_apigen.py``): ``__all__`` of
``metricfit``, of its public child modules, and of modules exported by name. Internals
(kernels, passes, workspaces, objectives' classes) stay importable by their module path but are
not listed in an ``__all__``.
"""

import importlib.util
import warnings
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"

PUBLIC_NAMES = frozenset({
    # issue 26 (i26-base): tuples beyond pairs, the Mahalanobis learners
    "metricfit.pairs.IndexTuples",
    "metricfit.pairs.check_chunks",
    "metricfit.pairs.check_tuples",
    "metricfit.pairs.sample_chunks",
    "metricfit.pairs.sample_quadruplets",
    "metricfit.pairs.sample_triplets",
    "metricfit.Covariance", "metricfit.LMNN", "metricfit.MLKR", "metricfit.LFDA",
    "metricfit.RCA", "metricfit.RCA_Supervised",
    "metricfit.learners.Covariance", "metricfit.learners.LMNN", "metricfit.learners.MLKR",
    "metricfit.learners.LFDA", "metricfit.learners.RCA", "metricfit.learners.RCA_Supervised",
    # issue 30: array-API dispatch
    "metricfit.array_api_dispatch",
    # issue 27: one thread setting for the package
    "metricfit.get_threads",
    "metricfit.parallel.blas_idle_spin",
    "metricfit.parallel.blas_threads",
    "metricfit.parallel.blocks",
    "metricfit.parallel.codegen_warning",
    "metricfit.parallel.get_threads",
    "metricfit.parallel.map_blocks",
    "metricfit.parallel.n_jobs_threads",
    "metricfit.parallel.NumbaTarget",
    "metricfit.parallel.numba_target",
    "metricfit.parallel.set_threads",
    "metricfit.parallel.threads",
    "metricfit.set_threads",
    "metricfit.threads",
    # issue 25: the experiment room split by job; the experiments' pair drawing in pairs
    "metricfit.experiments.verification.ALIASES",
    "metricfit.experiments.verification.CNN_RECIPE",
    "metricfit.experiments.verification.DEFAULT_DIMS",
    "metricfit.experiments.verification.DEFAULT_LAMS",
    "metricfit.experiments.verification.DEFAULT_METHODS",
    "metricfit.experiments.verification.DIGITS_CONFIG",
    "metricfit.experiments.verification.ExperimentConfig",
    "metricfit.experiments.verification.FUSION_COLUMNS",
    "metricfit.experiments.verification.FUSION_CS",
    "metricfit.experiments.verification.IMAGE_METHODS",
    "metricfit.experiments.verification.METHODS",
    "metricfit.experiments.verification.MethodSpec",
    "metricfit.experiments.verification.REGISTRY",
    "metricfit.experiments.verification.SCORES_FILE",
    "metricfit.experiments.verification.SCORE_FIELDS",
    "metricfit.experiments.verification.SIMILAR_ONLY",
    "metricfit.experiments.verification.experiment_numbers",
    "metricfit.experiments.verification.fit_and_test",
    "metricfit.experiments.verification.maxda_scorer",
    "metricfit.experiments.verification.merge_score_files",
    "metricfit.experiments.verification.result_at_validation_threshold",
    "metricfit.experiments.verification.validation_threshold",
    "metricfit.experiments.verification.write_score_columns",
    "metricfit.pairs.digits_split",
    "metricfit.pairs.labelled_folds",
    "metricfit.pairs.unrestricted_train_pairs",
    # issue 25: the loss contract (declared losses, distances, reducers, one penalty)
    "metricfit.losses.LinearPath",
    "metricfit.losses.PairLoss",
    "metricfit.losses.distances",
    "metricfit.losses.distances.DISTANCES",
    "metricfit.losses.distances.ENERGIES",
    "metricfit.losses.distances.L1Energy",
    "metricfit.losses.distances.L2Energy",
    "metricfit.losses.distances.energy",
    "metricfit.losses.distances.energy_bound",
    "metricfit.losses.distances.get_distance",
    "metricfit.losses.penalty",
    "metricfit.losses.penalty.Regularised",
    "metricfit.losses.penalty.add_penalty",
    "metricfit.losses.penalty.l2_penalty",
    "metricfit.losses.penalty.regularised",
    "metricfit.losses.reducers",
    "metricfit.losses.reducers.AvgNonZeroReducer",
    "metricfit.losses.reducers.MeanReducer",
    "metricfit.losses.reducers.REDUCERS",
    "metricfit.losses.reducers.get_reducer",
    # metricfit
    "metricfit.CSML", "metricfit.CosineSimilarity", "metricfit.DDML", "metricfit.LDA",
    "metricfit.LDML", "metricfit.LengthNormalizer", "metricfit.MkNN", "metricfit.NCA",
    "metricfit.PLDA", "metricfit.Siamese", "metricfit.SiameseCNN", "metricfit.TSML",
    "metricfit.WCCN", "metricfit.WPCA", "metricfit.__version__", "metricfit.backend",
    "metricfit.metrics", "metricfit.pairs",
    # metricfit.backend
    "metricfit.backend.CalibratedScorer", "metricfit.backend.LDA",
    "metricfit.backend.LengthNormalizer", "metricfit.backend.LinearCalibration",
    "metricfit.backend.PAVCalibration", "metricfit.backend.ScoreNormalizer",
    "metricfit.backend.normalize_scores", "metricfit.backend.read_scores",
    "metricfit.backend.read_trials", "metricfit.backend.score_sets",
    "metricfit.backend.read_trial_list",
    "metricfit.backend.fit_gaussian", "metricfit.backend.gaussian_claims",
    "metricfit.backend.gaussian_log_density",
    "metricfit.backend.adapt_two_covariance",  # issue 28 item 4
    "metricfit.backend.score_trials", "metricfit.backend.write_scores",
    "metricfit.backend.write_trials",
    # metricfit.cnn
    "metricfit.cnn.ConvNetwork", "metricfit.cnn.NetworkSpec", "metricfit.cnn.SCHEDULES",
    "metricfit.cnn.SiameseObjective", "metricfit.cnn.TrainingObjective",
    "metricfit.cnn.fit_gaussian", "metricfit.cnn.gaussian_claims",
    "metricfit.cnn.gaussian_log_density", "metricfit.cnn.get_num_threads",
    "metricfit.cnn.learning_rate_factor", "metricfit.cnn.lenet_table",
    "metricfit.cnn.network_spec", "metricfit.cnn.num_threads",
    # metricfit.datasets
    "metricfit.datasets.LFWPairs", "metricfit.datasets.get_data_home",
    "metricfit.datasets.lfw_pairs_to_indices",
    "metricfit.datasets.lfw_unrestricted_training_pairs", "metricfit.datasets.lfw_view2_pairs",
    "metricfit.datasets.lfw_view2_splitter", "metricfit.datasets.load_att_faces",
    "metricfit.datasets.load_labelled_npz", "metricfit.datasets.load_lfw",
    "metricfit.datasets.load_lfw_view2", "metricfit.datasets.load_yale_faces",
    "metricfit.datasets.read_lfw_pairs", "metricfit.datasets.read_lfw_people",
    "metricfit.datasets.load_embeddings", "metricfit.datasets.read_id_map",
    "metricfit.datasets.read_pairs_over_ids",
    # metricfit.experiments
    "metricfit.experiments.applications", "metricfit.experiments.verification",
    # metricfit.experiments.applications
    "metricfit.experiments.applications.CostCurve",
    "metricfit.experiments.applications.OneExemplarResult",
    "metricfit.experiments.applications.complete_linkage_cost_curve",
    "metricfit.experiments.applications.labelling_cost",
    "metricfit.experiments.applications.one_exemplar_recognition",
    "metricfit.experiments.applications.pairwise_scores",
    # metricfit.experiments.verification
    "metricfit.experiments.verification.LeadingComponents",
    "metricfit.experiments.verification.Result", "metricfit.experiments.verification.Selection",
    "metricfit.experiments.verification.TopColumns",
    "metricfit.experiments.verification.as_records",
    "metricfit.experiments.verification.choose_variant",

    "metricfit.experiments.verification.format_table", "metricfit.experiments.verification.fuse",
    "metricfit.experiments.verification.fuse_saved",
    "metricfit.experiments.verification.fusion_search",
    "metricfit.experiments.verification.has_lam",
    "metricfit.experiments.verification.image_method_and_test",

    "metricfit.experiments.verification.load_scores",
    "metricfit.experiments.verification.make_method",
    "metricfit.experiments.verification.mean_curves",
    "metricfit.experiments.verification.resolve_methods",
    "metricfit.experiments.verification.run_digits",
    "metricfit.experiments.verification.run_experiment",
    "metricfit.experiments.verification.run_folds",
    "metricfit.experiments.verification.run_lfw_restricted",
    "metricfit.experiments.verification.save_scores",
    "metricfit.experiments.verification.saved_results",
    "metricfit.experiments.verification.select",
    "metricfit.experiments.verification.select_all_and_test",
    "metricfit.experiments.verification.select_and_test",
    "metricfit.experiments.verification.select_lambda",
    "metricfit.experiments.verification.selection_pipeline",
    "metricfit.experiments.verification.snorm_result",
    "metricfit.experiments.verification.summarise",
    "metricfit.experiments.verification.takes_images",

    "metricfit.experiments.verification.validation_accuracy",
    # metricfit.features
    "metricfit.features.DenseSIFT", "metricfit.features.DlibFaceEmbedding",
    "metricfit.features.Gabor", "metricfit.features.HOG",
    "metricfit.features.LBP", "metricfit.features.OCLBP", "metricfit.features.SquareRoot",
    "metricfit.features.block_histograms", "metricfit.features.gabor_kernel",
    "metricfit.features.lbp_codes", "metricfit.features.lbp_histograms",
    # metricfit.learners
    "metricfit.learners.CSML", "metricfit.learners.CosineSimilarity", "metricfit.learners.DDML",
    "metricfit.learners.LDML", "metricfit.learners.MkNN", "metricfit.learners.NCA",
    "metricfit.learners.PairTags", "metricfit.learners.final_step",
    "metricfit.learners.score_kind",
    "metricfit.learners.ScoreFusion", "metricfit.learners.Siamese",
    "metricfit.learners.SiameseCNN", "metricfit.learners.TSML",
    # metricfit.losses
    "metricfit.losses.PAIR_LOSSES", "metricfit.losses.contrastive",
    "metricfit.losses.csml", "metricfit.losses.ddml", "metricfit.losses.get_loss",
    "metricfit.losses.ldml", "metricfit.losses.loss_params", "metricfit.losses.signature_cosine",
    "metricfit.losses.square_exponential", "metricfit.losses.square_square",
    "metricfit.losses.tsml",
    # metricfit.losses.tsml
    "metricfit.losses.tsml.DEFAULTS", "metricfit.losses.tsml.cost_grad",
    "metricfit.losses.tsml.embedding_cost_grad", "metricfit.losses.tsml.index_objective",
    "metricfit.losses.tsml.objective", "metricfit.losses.tsml.pair_score",
    # metricfit.losses.csml
    "metricfit.losses.csml.DEFAULTS", "metricfit.losses.csml.cost_grad",
    "metricfit.losses.csml.embedding_cost_grad", "metricfit.losses.csml.index_objective",
    "metricfit.losses.csml.objective", "metricfit.losses.csml.pair_score",
    # metricfit.losses.ddml
    "metricfit.losses.ddml.DEFAULTS", "metricfit.losses.ddml.cost_grad",
    "metricfit.losses.ddml.embedding_cost_grad", "metricfit.losses.ddml.index_objective",
    "metricfit.losses.ddml.objective", "metricfit.losses.ddml.pair_score",
    # metricfit.losses.ldml
    "metricfit.losses.ldml.cost_grad", "metricfit.losses.ldml.index_objective",
    "metricfit.losses.ldml.metric_distances", "metricfit.losses.ldml.metric_embedding",
    "metricfit.losses.ldml.objective", "metricfit.losses.ldml.pack",
    "metricfit.losses.ldml.pair_probability", "metricfit.losses.ldml.unpack",
    # metricfit.losses.contrastive
    "metricfit.losses.contrastive.DEFAULTS", "metricfit.losses.contrastive.embedding_cost_grad",
    "metricfit.losses.contrastive.pair_score", "metricfit.losses.contrastive.per_pair",
    # metricfit.losses.square_square
    "metricfit.losses.square_square.DEFAULTS",
    "metricfit.losses.square_square.embedding_cost_grad",
    "metricfit.losses.square_square.pair_score", "metricfit.losses.square_square.per_pair",
    # metricfit.losses.square_exponential
    "metricfit.losses.square_exponential.DECAY", "metricfit.losses.square_exponential.DEFAULTS",
    "metricfit.losses.square_exponential.embedding_cost_grad",
    "metricfit.losses.square_exponential.pair_score",
    "metricfit.losses.square_exponential.per_pair",
    # metricfit.losses.signature_cosine
    "metricfit.losses.signature_cosine.DEFAULTS",
    "metricfit.losses.signature_cosine.embedding_cost_grad",
    "metricfit.losses.signature_cosine.pair_score",
    # metricfit.mappings
    "metricfit.mappings.ConvNet", "metricfit.mappings.Linear", "metricfit.mappings.MAPPINGS",
    "metricfit.mappings.MLP", "metricfit.mappings.MappedObjective", "metricfit.mappings.Mapping",
    "metricfit.mappings.Tanh", "metricfit.mappings.l2_normalize",
    "metricfit.mappings.make_mapping",
    # metricfit.metrics
    "metricfit.metrics.DCF_PRESETS", "metricfit.metrics.accuracy_at_threshold",
    "metricfit.metrics.act_dcf", "metricfit.metrics.bayes_threshold",
    "metricfit.metrics.calibrate_threshold", "metricfit.metrics.cllr",
    "metricfit.metrics.det_curve", "metricfit.metrics.equal_error_rate",
    "metricfit.metrics.fa_fr_curve", "metricfit.metrics.false_reject_at_false_accept",
    "metricfit.metrics.fnmr_at_fmr", "metricfit.metrics.get_scorer",
    "metricfit.metrics.max_accuracy_scorer", "metricfit.metrics.max_decision_accuracy",
    "metricfit.metrics.min_cllr", "metricfit.metrics.min_dcf",
    "metricfit.metrics.neg_act_dcf_scorer", "metricfit.metrics.neg_cllr_scorer",
    "metricfit.metrics.neg_eer_scorer", "metricfit.metrics.neg_fmr1000_scorer",
    "metricfit.metrics.neg_fmr100_scorer", "metricfit.metrics.neg_min_cllr_scorer",
    "metricfit.metrics.neg_min_dcf_scorer", "metricfit.metrics.pav_llr",
    "metricfit.metrics.plot_det", "metricfit.metrics.roc_convex_hull",
    "metricfit.metrics.roc_curve",
    # metricfit.objective
    "metricfit.objective.make_metric_objective", "metricfit.objective.make_objective",
    # metricfit.optim
    "metricfit.optim.SOLVERS", "metricfit.optim.minimize", "metricfit.optim.minimize_lbfgs",
    "metricfit.optim.minimize_sgd",
    # metricfit.pairs
    "metricfit.pairs.FoldRotation", "metricfit.pairs.IdentityDisjointPairSplit",
    "metricfit.pairs.IndexPairs", "metricfit.pairs.PredefinedPairFolds",
    "metricfit.pairs.ValidationSplit", "metricfit.pairs.check_pair_input",
    "metricfit.pairs.check_pair_labels", "metricfit.pairs.check_pairs",
    "metricfit.pairs.check_points", "metricfit.pairs.check_points_or_pairs",
    "metricfit.pairs.fold_pairs", "metricfit.pairs.identity_folds",
    "metricfit.pairs.neighbourhood_pairs", "metricfit.pairs.sample_pairs",
    "metricfit.pairs.unrestricted_pairs",
    # metricfit.whitening
    "metricfit.whitening.WCCN", "metricfit.whitening.WPCA",
    # issue 26 (i26-catalogue): ITML, MMC, SDML, LSML, SCML and their supervised forms
    "metricfit.ITML", "metricfit.learners.ITML",
    "metricfit.ITML_Supervised", "metricfit.learners.ITML_Supervised",
    "metricfit.MMC", "metricfit.learners.MMC",
    "metricfit.MMC_Supervised", "metricfit.learners.MMC_Supervised",
    "metricfit.SDML", "metricfit.learners.SDML",
    "metricfit.SDML_Supervised", "metricfit.learners.SDML_Supervised",
    "metricfit.LSML", "metricfit.learners.LSML",
    "metricfit.LSML_Supervised", "metricfit.learners.LSML_Supervised",
    "metricfit.SCML", "metricfit.learners.SCML",
    "metricfit.SCML_Supervised", "metricfit.learners.SCML_Supervised",
})

# Renamed public names: still importable, with a FutureWarning naming the removal version.
DEPRECATED = {
    "metricfit.backend.normalise_scores": "metricfit.backend.normalize_scores",
    "metricfit.backend.score_norm.normalise_scores":
        "metricfit.backend.score_norm.normalize_scores",
    "metricfit.mappings.objective.l2_normalise": "metricfit.mappings.objective.l2_normalize",
    "metricfit.cnn.ConvNet": "metricfit.cnn.ConvNetwork",
    "metricfit.cnn.network.ConvNet": "metricfit.cnn.network.ConvNetwork",
}


def _apigen():
    spec = importlib.util.spec_from_file_location("_apigen", DOCS / "_apigen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _public_names():
    apigen = _apigen()
    return {f"{module.__name__}.{name}" for module in apigen.api_modules()
            for name in apigen.exported_names(module)}


def test_the_public_names_are_the_listed_ones():
    found = _public_names()
    added, removed = sorted(found - PUBLIC_NAMES), sorted(PUBLIC_NAMES - found)
    assert not added and not removed, (
        f"public names added: {added}; removed: {removed}. Update PUBLIC_NAMES in "
        "tests/test_public_api.py; a removed or renamed name keeps a deprecated alias "
        "(metricfit._deprecation) and gets a line in docs/changelog.rst.")


@pytest.mark.parametrize("old", sorted(DEPRECATED))
def test_a_renamed_name_warns_and_still_works(old):
    module_name, _, name = old.rpartition(".")
    new_module, _, new_name = DEPRECATED[old].rpartition(".")
    module = importlib.import_module(module_name)
    with pytest.warns(FutureWarning, match=r"will be removed in 0\.3; use .*" + new_name):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new_module), new_name)


def test_the_new_names_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        for new in DEPRECATED.values():
            module_name, _, name = new.rpartition(".")
            getattr(importlib.import_module(module_name), name)


def test_an_unknown_name_is_an_attribute_error():
    from metricfit import backend

    with pytest.raises(AttributeError, match="no attribute 'normalise_everything'"):
        _ = backend.normalise_everything
