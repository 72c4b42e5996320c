"""Argument parsing and validation of the ``metricfit`` command: every user error is one line
on stderr and exit status 2, before any work starts."""

import argparse
import math
import os
from pathlib import Path

from ..experiments import verification

DESCRIPTION = "The ``metricfit`` command."

FEATURES = ("pixels", "sqrt", "lbp", "oclbp", "dsift", "gabor", "hog", "sqrt-lbp", "sqrt-oclbp",
            "sqrt-dsift", "sqrt-gabor", "sqrt-hog")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose user errors are one line on stderr and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive_int(text):
    """A count: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer (>= 1), got {text!r}")
    return value


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


def _parser():
    parser = _Parser(prog="metricfit", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser("verify", help="learn metrics on pairs, report verification")
    verify.add_argument("--data", default="digits", type=_data,
                        metavar="{digits,att,lfw,yale,PATH.npz}")
    verify.add_argument("--features", default="pixels", choices=FEATURES,
                        help=f"one of {', '.join(FEATURES)}")
    verify.add_argument("--lbp-block", type=_block_list, default=[10], metavar="PIXELS[,...]",
                        help="side of the square LBP blocks (cells) of lbp, sqrt-lbp; several "
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
    verify.add_argument("--pairs", type=_positive_int, default=3000,
                        help="unrestricted training pairs")
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
                        help="report Cllr and actDCF(0.01) of the scores calibrated on each "
                             "validation fold (linear, BOSARIS) instead of the raw Cllr")
    verify.add_argument("--snorm", type=_positive_int, default=None, metavar="COHORT",
                        help="add METHOD+snorm rows: s-norm with a cohort of COHORT training "
                             "images")
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
