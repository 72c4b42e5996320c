"""Argument parsing and validation of the ``metricfit`` command: every user error is one line
on stderr and exit status 2, before any work starts."""

import argparse
import math
import os
from pathlib import Path

from ..experiments import verification
from ..features.lbp import CROP_CELL_SIDE

DESCRIPTION = "The ``metricfit`` command."

FEATURES = ("pixels", "sqrt", "lbp", "oclbp", "dsift", "gabor", "hog", "sqrt-lbp", "sqrt-oclbp",
            "sqrt-dsift", "sqrt-gabor", "sqrt-hog", "dlib")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose user errors are one line on stderr and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _int_at_least(text, minimum, what):
    """An integer >= ``minimum`` (``what`` names it in the error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected {what} (>= {minimum}), got {text!r}")
    return value


def _positive_int(text):
    """A count: an integer >= 1."""
    return _int_at_least(text, 1, "a positive integer")


def _non_negative_int(text):
    """A count that may be 0."""
    return _int_at_least(text, 0, "a non-negative integer")


def _lam(item):
    """One lambda: a finite number >= 0."""
    try:
        value = float(item)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{item!r} is not a number (expected "
                                         "comma-separated finite lambdas >= 0)") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"lambdas must be finite and >= 0, got {item!r}")
    return value


def _lam_list(text):
    """A comma-separated list of finite, non-negative lambdas (at least one)."""
    return _comma_list(text, _lam, "lambdas >= 0")


def _comma_list(text, parse, what, repeated=None):
    """Comma-separated items (at least one, none empty: ``4,,2`` or ``4,`` is an error), each
    through ``parse``; with ``repeated`` (the start of a message), no value may come twice."""
    items = [t.strip() for t in text.split(",")]
    if not any(items):
        raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got {text!r}")
    if not all(items):
        raise argparse.ArgumentTypeError(f"empty item in {text!r}: expected comma-separated "
                                         f"{what}, none empty")
    values = [parse(item) for item in items]
    if repeated is not None and len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"{repeated} in {text!r}")
    return values


def _dim_list(text):
    """A comma-separated list of positive integers (at least one)."""
    return _comma_list(text, _positive_int, "dimensions")


def _block_list(text):
    """--lbp-block: comma-separated distinct positive integers (at least one)."""
    return _comma_list(text, _positive_int, "cell sides", "repeated cell side")


def _radius_list(text):
    """--lbp-radius: comma-separated radius settings, each a radius or radii joined by '+'
    (multi-scale, e.g. 1+2); every radius a number > 0; no repeats."""
    settings = []
    for item in (t.strip() for t in text.split(",")):
        try:
            radii = tuple(float(r) for r in item.split("+"))
        except ValueError:
            radii = ()
        if not radii or not all(0 < r < float("inf") for r in radii) \
                or len(set(radii)) != len(radii):
            raise argparse.ArgumentTypeError(
                f"expected comma-separated radii > 0, each a radius or distinct radii joined "
                f"by '+' (e.g. 1,2,1+2), got {text!r}")
        settings.append(radii)
    if len(set(settings)) != len(settings):
        raise argparse.ArgumentTypeError(f"repeated radius setting in {text!r}")
    return settings


def _experiment_number(item):
    if not item.isdigit():
        raise argparse.ArgumentTypeError(f"experiment numbers are integers >= 0, got {item!r}")
    return int(item)


def _experiment_list(text):
    """Comma-separated experiment numbers (integers >= 0, at least one, no repeats)."""
    return _comma_list(text, _experiment_number, "experiment numbers",
                       "an experiment is named twice")


def _methods(text):
    """Comma-separated method names (at least one, none empty), each known."""
    names = _comma_list(text, str, "method names")
    try:
        verification.resolve_methods(names)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return names


def _output_file(text):
    """A path a file can be written to: not a directory, in an existing writable folder."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory; give a file path")
    folder = path.parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"the folder of {text!r} does not exist: {folder}")
    if (path.exists() and not os.access(path, os.W_OK)) or not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text!r} is not writable")
    return str(path)


def _input_file(text):
    path = Path(text).expanduser()
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    return str(path)


def _folder(text):
    if not Path(text).expanduser().is_dir():
        raise argparse.ArgumentTypeError(f"no such folder: {text!r}")
    return text


def _data(text):
    if text in ("digits", "att", "lfw", "yale"):
        return text
    if not text.endswith(".npz"):
        raise argparse.ArgumentTypeError(f"unknown data set {text!r}; choose digits, att, lfw, "
                                         "yale or PATH.npz")
    return _input_file(text)


def _prior(text):
    """A target prior: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a prior in (0, 1), got {text!r}")
    return value


def _prior_list(text):
    """Comma-separated priors in (0, 1)."""
    return _comma_list(text, _prior, "priors in (0, 1)")


def _wpca(text):
    """--wpca: 'none' (no WPCA) or a dimension (a positive integer)."""
    if text.strip().lower() == "none":
        return "none"
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected 'none' or a WPCA dimension >= 1, got "
                                         f"{text!r}") from None


def _lam_value(text):
    return _lam(text)


def _pair_source(text):
    """verify --pairs: a count of unrestricted training pairs, or an LFW-style pairs file."""
    if text.strip().lstrip("+-").isdigit():
        return _positive_int(text)
    path = Path(text).expanduser()
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"expected a positive integer (training pairs) or an "
                                         f"LFW-style pairs file, got {text!r} (no such file)")
    return str(path)


def _score_method(text):
    """--method of `metricfit score`: cosine or a vector method of `verify`."""
    name = text.strip()
    if name == "cosine":
        return name
    try:
        (name,) = verification.resolve_methods([name])
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).replace("unknown method(s)", "unknown "
                                         "method") + " (or cosine)") from None
    if verification.takes_images(name):
        raise argparse.ArgumentTypeError(f"{name} takes images, not embeddings")
    return name


def _score_parser(commands):
    score = commands.add_parser(
        "score", help="fit a back-end on your embeddings, score a trial list",
        description="Fit a back-end on labelled embeddings (--train), score the trials of "
                    "--trials ('enrol test' lines) with models enrolled from --enrol (every "
                    "row of a label, N-vs-M) and segments of --test; write 'enrol test score' "
                    "lines. Embeddings: .npy (+ PATH.ids, one id per line), .npz (X or "
                    "embeddings, ids [, labels]) or a text table ('id v1 ... vd').")
    score.add_argument("--train", required=True, type=_input_file,
                       help="labelled training embeddings (labels in the .npz, or "
                            "--train-labels)")
    score.add_argument("--train-labels", type=_input_file, default=None, metavar="ID2LABEL",
                       help="'id label' lines (Kaldi utt2spk) labelling --train")
    score.add_argument("--method", required=True, type=_score_method,
                       help="cosine, plda, plda-lnorm, tsml-sim, ... (the vector methods of "
                            "verify)")
    score.add_argument("--lam", type=_lam_value, default=None,
                       help="lambda of a learned metric (default: the learner's default)")
    score.add_argument("--wpca", type=_wpca, default="none", metavar="none|N",
                       help="WPCA to N dimensions (fitted on --train) before the method; "
                            "default none")
    score.add_argument("--train-pairs", type=_positive_int, default=3000, metavar="N",
                       help="pair methods: N same-identity and N different-identity training "
                            "pairs drawn from --train (plda fits on the labels)")
    score.add_argument("--max-iter", type=_positive_int, default=200)
    score.add_argument("--adapt", type=_input_file, default=None, metavar="UNLABELLED",
                       help="plda, plda-lnorm: adapt the PLDA to these unlabelled in-domain "
                            "embeddings (Kaldi's unsupervised adaptation, after the same "
                            "WPCA / length norm; labels not needed)")
    score.add_argument("--enrol", type=_input_file, default=None,
                       help="enrolment embeddings; a model is every row of one label (default: "
                            "the --test embeddings, one per id)")
    score.add_argument("--enrol-labels", type=_input_file, default=None, metavar="ID2MODEL",
                       help="'id model' lines naming the model of each --enrol row")
    score.add_argument("--enrol-method", default=None,
                       choices=["plda", "mean-embedding", "mean-score", "max-score"],
                       help="N-vs-M scoring (default: plda for PLDA, else mean-embedding)")
    score.add_argument("--test", required=True, type=_input_file, help="test embeddings")
    score.add_argument("--trials", required=True, type=_input_file,
                       help="'enrol test' lines (a third column, target/nontarget, is ignored)")
    score.add_argument("--norm", choices=["s-norm", "as-norm"], default=None,
                       help="score normalisation with --cohort")
    score.add_argument("--cohort", type=_input_file, default=None,
                       help="cohort embeddings (other identities) for --norm")
    score.add_argument("--top-n", type=_positive_int, default=200,
                       help="as-norm: the top N cohort scores of each side (default 200)")
    score.add_argument("--calibrate", type=_input_file, default=None, metavar="DEV_TRIALS",
                       help="'enrol test target|nontarget' development trials: fit a linear "
                            "calibration at --prior on their scores and write LLRs")
    score.add_argument("--dev-enrol", type=_input_file, default=None,
                       help="enrolment embeddings of the development trials (default --enrol)")
    score.add_argument("--dev-enrol-labels", type=_input_file, default=None,
                       metavar="ID2MODEL", help="'id model' lines labelling --dev-enrol")
    score.add_argument("--dev-test", type=_input_file, default=None,
                       help="test embeddings of the development trials (default --test)")
    score.add_argument("--prior", type=_prior, default=0.01,
                       help="target prior of the calibration (default 0.01, the reported "
                            "minDCF's)")
    score.add_argument("--llr", action="store_true",
                       help="write calibrated LLRs (needs --calibrate, which implies it)")
    score.add_argument("--out", required=True, type=_output_file, metavar="SCORES",
                       help="the score file to write")
    evaluate = commands.add_parser(
        "evaluate", help="EER, minDCF / actDCF, Cllr, FNMR at FMR of a score file",
        description="Evaluate 'enrol test score' lines against a key ('enrol test "
                    "target|nontarget'): EER, minDCF and actDCF at P_target 0.01, 0.001 and "
                    "--prior (with the trial counts and an interval), Cllr, minCllr, FNMR at "
                    "FMR 1e-2 / 1e-3.")
    evaluate.add_argument("--scores", required=True, type=_input_file)
    evaluate.add_argument("--trials", required=True, type=_input_file, metavar="KEY")
    evaluate.add_argument("--prior", type=_prior_list, default=None, metavar="P[,P...]",
                          help="more target priors to report DCFs at")
    evaluate.add_argument("--det", type=_output_file, default=None, metavar="DET.png",
                          help="DET plot (matplotlib)")
    evaluate.add_argument("--json", nargs="?", const="-", default=None, type=_output_file,
                          metavar="OUT",
                          help="strict JSON (null + a reason where undefined): to OUT, or "
                               "instead of the table on stdout without OUT")


def _parser():
    parser = _Parser(prog="metricfit", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser("verify", help="learn metrics on pairs, report verification")
    verify.add_argument("--data", default="digits", type=_data,
                        metavar="{digits,att,lfw,yale,PATH.npz}")
    verify.add_argument("--features", default="pixels", choices=FEATURES,
                        help=f"one of {', '.join(FEATURES)}")
    verify.add_argument("--lbp-block", type=_block_list, default=[CROP_CELL_SIDE],
                        metavar="PIXELS[,...]",
                        help="side of the square LBP blocks (cells) of lbp, sqrt-lbp "
                             f"(default {CROP_CELL_SIDE}: the seed's 10 scaled to 62x47 "
                             "crops); several "
                             "(e.g. 5,6,8,10): each cell size is run through the protocol and "
                             "chosen per method and experiment on the validation fold (with "
                             "--lbp-radius: every cell size x radius setting)")
    verify.add_argument("--lbp-radius", type=_radius_list, default=[(1.0,)],
                        metavar="R[,...]",
                        help="LBP(8,R) radius of lbp, sqrt-lbp (default 1); R1+R2: both "
                             "radii's histograms of each cell concatenated (multi-scale); "
                             "several settings (e.g. 1,2,1+2): chosen on the validation fold "
                             "like several --lbp-block")
    verify.add_argument("--methods", default=",".join(verification.DEFAULT_METHODS),
                        type=_methods,
                        help=f"comma-separated, from {','.join(verification.METHODS)}")
    verify.add_argument("--similar-only", action="store_true",
                        help=f"{', '.join(verification.SIMILAR_ONLY)} -> their -sim "
                             "variants")
    verify.add_argument("--setting", choices=["restricted", "unrestricted"], default=None,
                        help="lfw, att, yale, npz: fixed or drawn training pairs")
    verify.add_argument("--pairs", type=_pair_source, default=3000, metavar="N|PAIRS.txt",
                        help="unrestricted: N training pairs; PATH.npz: an LFW-style pairs "
                             "file of your own (its folds rotate; names are ids name_NNNN or "
                             "the n-th row of a label)")
    verify.add_argument("--wpca", type=_wpca, default=None, metavar="none|N",
                        help="WPCA before the methods: none, or its dimension (same as "
                             "--n-components); default none on embeddings (PATH.npz of "
                             "vectors, --features dlib), else --n-components")
    verify.add_argument("--baseline", choices=["raw", "wpca"], default=None,
                        help="the baseline row: cosine of the raw feature vectors or after "
                             "WPCA like the other methods (default: raw on embeddings, "
                             "PATH.npz or --features dlib; wpca for the bundled sets' "
                             "descriptors, as in the seeds' tables)")
    verify.add_argument("--prior", type=_prior, default=0.01,
                        help="target prior of the reported minDCF / actDCF and of --calibrate "
                             "(default 0.01)")
    verify.add_argument("--experiments", type=_experiment_list, default=None, metavar="E,E,...",
                        help="lfw, att, yale, npz: run only these experiments of the fold "
                             "rotation (numbered from 0; lfw: 0 to 9); default all")
    verify.add_argument("--fusion", action="store_true", help="add an SVM fusion of the methods")
    verify.add_argument("--n-components", type=_positive_int, default=None,
                        help="WPCA dimension (default: 32 digits, 100 otherwise; capped at rank)")
    verify.add_argument("--lams", default=",".join(map(str, verification.DEFAULT_LAMS)),
                        type=_lam_list,
                        help="comma-separated lambda grid, chosen on the validation pairs")
    verify.add_argument("--select", action="store_true",
                        help="choose per method and experiment, on the validation pairs only, "
                             "the WPCA dimension (from --dims), L2 normalisation after WPCA "
                             "(on/off) and lambda (--lams, one decade beyond its edge where "
                             "the best lies there); WPCA is fitted once per experiment at the "
                             "largest dimension. Off by default: --n-components, no "
                             "normalisation, --lams as given (the older tables)")
    verify.add_argument("--select-on", choices=["accuracy", "min-dcf", "both"], default=None,
                        help="how lambda (and the --select settings) are chosen: best maxDA, "
                             "lowest minDCF(--prior), or best maxDA among the candidates at "
                             "least level with 'no learning' in both (default: both on "
                             "embeddings, PATH.npz or --features dlib; accuracy otherwise)")
    verify.add_argument("--select-folds", type=_non_negative_int, default=None, metavar="K",
                        help="also score each candidate on K image-disjoint parts of the "
                             "training pairs (K+1 fits each) and judge by the mean over them "
                             "and the validation fold (default: 5 on embeddings, 0 otherwise)")
    verify.add_argument("--dims", default=",".join(map(str, verification.DEFAULT_DIMS)),
                        type=_dim_list, help="with --select: candidate WPCA dimensions "
                                             "(comma-separated; capped at rank)")
    verify.add_argument("--cnn-epochs", type=_positive_int, default=30, metavar="N",
                        help="cnn: at most N epochs of SGD (early stopping on the validation "
                             "fold's pairs)")
    verify.add_argument("--repeats", type=_positive_int, default=5, help="digits: random splits")
    verify.add_argument("--max-iter", type=_positive_int, default=200)
    verify.add_argument("--threads", type=_positive_int, default=None,
                        help="threads of BLAS and metricfit's kernels, the run inside "
                             "metricfit.threads(N) (default: 1 for digits, whose GEMMs are "
                             "too small to share; the package setting otherwise)")
    verify.add_argument("--data-home", default=None, type=_folder,
                        help="overrides $METRICFIT_DATA")
    verify.add_argument("--json", default=None, type=_output_file, metavar="OUT",
                        help="write results as strict JSON (null where a value is undefined)")
    verify.add_argument("--plot", default=None, type=_output_file, metavar="OUT.png",
                        help="ROC and FA/FR curves")
    verify.add_argument("--scores", default=None, type=_output_file, metavar="OUT.npz",
                        help="save validation and test scores for `metricfit fuse`")
    verify.add_argument("--quiet", action="store_true", help="no progress bar")
    verify.add_argument("--calibrate", action="store_true",
                        help="report Cllr and actDCF(--prior) of the scores calibrated at "
                             "--prior on each validation fold (linear, BOSARIS) instead of the "
                             "raw Cllr")
    verify.add_argument("--snorm", type=_positive_int, default=None, metavar="COHORT",
                        help="add METHOD+snorm rows: s-norm with a cohort of COHORT training "
                             "images")
    _score_parser(commands)
    fuse = commands.add_parser("fuse", help="fuse the saved scores of several verify runs")
    fuse.add_argument("files", nargs="+", metavar="SCORES.npz", type=_input_file,
                      help="written by `metricfit verify --scores` on one protocol")
    fuse.add_argument("--methods", default=None, type=_methods,
                      help="comma-separated methods to fuse (default: all but 'fusion')")
    fuse.add_argument("--classifier", choices=["svm", "logistic"], default="svm")
    fuse.add_argument("--select", action="store_true",
                      help="choose the columns (the best 2, 4, 8, 16 or all by validation "
                           "maxDA), the classifier (svm, logistic) and C by 5-fold CV inside "
                           "each validation fold (--classifier is then ignored)")
    fuse.add_argument("--json", default=None, type=_output_file, metavar="OUT",
                      help="write results as strict JSON")
    bench = commands.add_parser("bench", help="gradient timing of the prepared objectives")
    for name, default in (("--n", 4800), ("--d", 300), ("--k", 300), ("--repeats", 10)):
        bench.add_argument(name, type=_positive_int, default=default)
    bench.add_argument("--threads", type=_positive_int, default=None,
                       help="threads of BLAS and metricfit's kernels, the run inside "
                            "metricfit.threads(N) (default: the package setting; 1 on a busy "
                            "machine); with --scaling the largest count")
    bench.add_argument("--scaling", action="store_true",
                       help="time the prepared TSML, CSML, DDML and LDML objectives at 1, 2, "
                            "4, ... threads up to the CPU count: speed-up and ratio to the "
                            "two-GEMM bound")
    return parser
