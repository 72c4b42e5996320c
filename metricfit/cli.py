"""The ``metricfit`` command.

``metricfit verify`` learns metrics on pairs and reports verification accuracy:

- ``--data digits`` (default, embedded: scikit-learn's bundled digits, no download): pairs
  drawn from half of the images train, pairs from the other images validate (lambda and
  threshold) and test. The classes are shared between the halves (ten digit classes are too
  few for an unseen-class protocol), the images are not. ``--setting`` does not apply.
- ``--data lfw``: LFW View 2 on $METRICFIT_DATA (or ``--data-home``), the ten experiments of
  seed 002 III.A (8 folds train, the next validates, the one after tests); ``lfw/pairs.txt``
  must parse and match the npz pairs. Restricted: the official pairs of the 8 folds train;
  unrestricted (seed 004 5.2.2): ``--pairs`` (3000) same-person and as many different-person
  pairs drawn from all images of the 8 folds' people. Official validation and test pairs.
- ``--data att|yale|PATH.npz`` (keys ``images`` (n, H, W) or ``X`` (n, d), and ``labels``
  (n,)): the identities go to min(10, n_identities // 3) folds (att: 10 of 4 subjects, yale: 5
  of 3); fixed pairs within each fold (all same-identity pairs, as many different-identity
  ones); the same rotation (n-2 folds train, 1 validates, 1 tests); unrestricted as for lfw.

Features (computed once on all images; no labels): pixels, sqrt, lbp (uniform LBP 8,1 on 10x10
blocks; ``--lbp-block``), oclbp (seed 002's 3 configurations), dsift (dense SIFT, 3 scales),
gabor (5 scales x 8 orientations, 10x10 block means), hog (9 bins, 8x8 cells, 2x2 blocks),
and the square root of each (sqrt-lbp, ...); blocks at most half the image (digits: 4x4),
HOG cells at most a quarter, SIFT patches at most the image. Method aliases csml, tsml, ddml
= csml-i, tsml-i, ddml-i; ``--similar-only`` makes tsml-i, ddml-i tsml-sim, ddml-sim. ``--fusion``: a row 'fusion', a linear SVM on the
methods' scores fitted on each validation fold (seed 002 IV.D). ``--plot OUT.png`` (matplotlib:
``pip install metricfit[plot]``): ROC and FA/FR curves, averaged over the experiments.

``metricfit bench``: one cost-and-gradient call of the prepared TSML / CSML / DDML objectives
against the two-GEMM bound (numpy only); with torch, LDML and JSON: ``benchmarks/
bench_gradients.py`` in the source repository.
"""

import argparse
import functools
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from . import verification

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


def _lam_list(text):
    """A comma-separated list of finite, non-negative lambdas (at least one)."""
    lams = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        try:
            value = float(item)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{item!r} is not a number (expected "
                                             "comma-separated finite lambdas >= 0)") from None
        if not math.isfinite(value) or value < 0:
            raise argparse.ArgumentTypeError(f"lambdas must be finite and >= 0, got {item!r}")
        lams.append(value)
    if not lams:
        raise argparse.ArgumentTypeError(f"expected comma-separated lambdas >= 0, got {text!r}")
    return lams


def _methods(text):
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated method names, got {text!r}")
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
    parser = _Parser(prog="metricfit", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser("verify", help="learn metrics on pairs, report verification")
    verify.add_argument("--data", default="digits", type=_data,
                        metavar="{digits,att,lfw,yale,PATH.npz}")
    verify.add_argument("--features", default="pixels", choices=FEATURES,
                        help=f"one of {', '.join(FEATURES)}")
    verify.add_argument("--lbp-block", type=_positive_int, default=10, metavar="PIXELS",
                        help="side of the square LBP blocks (cells) of lbp, sqrt-lbp")
    verify.add_argument("--methods", default=",".join(verification.DEFAULT_METHODS),
                        type=_methods,
                        help=f"comma-separated, from {','.join(verification.METHODS)}")
    verify.add_argument("--similar-only", action="store_true", help="tsml-i, ddml-i -> -sim")
    verify.add_argument("--setting", choices=["restricted", "unrestricted"], default=None,
                        help="lfw, att, yale, npz: fixed or drawn training pairs")
    verify.add_argument("--pairs", type=_positive_int, default=3000,
                        help="unrestricted training pairs")
    verify.add_argument("--fusion", action="store_true", help="add an SVM fusion of the methods")
    verify.add_argument("--n-components", type=_positive_int, default=None,
                        help="WPCA dimension (default: 32 digits, 100 otherwise; capped at rank)")
    verify.add_argument("--lams", default=",".join(map(str, verification.DEFAULT_LAMS)),
                        type=_lam_list,
                        help="comma-separated lambda grid, chosen on the validation pairs")
    verify.add_argument("--repeats", type=_positive_int, default=5, help="digits: random splits")
    verify.add_argument("--max-iter", type=_positive_int, default=200)
    verify.add_argument("--threads", type=_positive_int, default=None,
                        help="BLAS threads (default: 1 for digits, whose GEMMs are too small "
                             "to share; the BLAS default otherwise)")
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
    fuse.add_argument("--json", default=None, type=_output_file, metavar="OUT",
                      help="write results as strict JSON")
    bench = commands.add_parser("bench", help="gradient timing of the prepared objectives")
    for name, default in (("--n", 4800), ("--d", 300), ("--k", 300), ("--repeats", 10)):
        bench.add_argument(name, type=_positive_int, default=default)
    bench.add_argument("--threads", type=_positive_int, default=None,
                       help="BLAS threads (default: the BLAS default; 1 on a busy machine)")
    return parser


def strict_json(value):
    """``value`` with NaN / infinity as None (JSON null) and NumPy scalars and arrays as
    Python numbers and lists: what ``json.dump(..., allow_nan=False)`` accepts."""
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return strict_json(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _write_json(path, report):
    with open(path, "w") as out:
        json.dump(strict_json(report), out, indent=1, allow_nan=False)


class _Bar:
    """A text progress bar on stderr (redrawn in place on a terminal, a line per step if not)."""

    def __init__(self, total, what, quiet, width=28):
        self.total, self.what, self.quiet, self.width = max(total, 1), what, quiet, width
        self.done, self.start, self.tty = 0, time.perf_counter(), sys.stderr.isatty()

    def step(self, note="", n=1):
        self.done += n
        if self.quiet:
            return
        fill = self.width * self.done // self.total
        line = (f"{self.what} [{'#' * fill}{'.' * (self.width - fill)}] {self.done}/{self.total}"
                f" {time.perf_counter() - self.start:5.0f} s  {note}")
        last = self.done >= self.total
        print(f"\r{line:<100}" if self.tty else line, end="\n" if last or not self.tty else "",
              file=sys.stderr, flush=True)


def _npz(path):
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: --data PATH.npz needs an existing file.")
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} is not a readable .npz file: {error}") from None
    images, labels = arrays.get("images", arrays.get("X")), arrays.get("labels")
    if images is None or labels is None:
        raise ValueError(f"{path} must hold 'images' (n, H, W) or 'X' (n, d), and 'labels' "
                         f"(n,); found keys {sorted(arrays)}.")
    if (images.ndim not in (2, 3) or images.dtype.kind not in "biuf" or labels.ndim != 1
            or len(labels) != len(images)):
        raise ValueError(f"{path}: need numeric images (n, H, W) or X (n, d) and labels (n,); "
                         f"got {images.dtype} {images.shape} and labels {labels.shape}.")
    return Bunch(images=images, labels=labels)


def _lfw(data_home):
    """LFW, its View 2 pairs checked against ``lfw/pairs.txt``, and the people's folds."""
    from .datasets import lfw_pairs_to_indices, load_lfw, read_lfw_pairs

    lfw = load_lfw(data_home)
    path = lfw.data_dir / "pairs.txt"
    if not path.is_file():
        raise FileNotFoundError(f"lfw/pairs.txt not found: looked for {path}. Point the "
                                "METRICFIT_DATA environment variable (or --data-home) at the "
                                "data folder holding lfw/.")
    parsed = read_lfw_pairs(path)  # ValueError naming file and line if malformed
    try:
        index = lfw_pairs_to_indices(parsed, lfw.names, lfw.person, lfw.image_number)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    found = np.column_stack([index, parsed.label, parsed.fold])
    expected = np.column_stack([lfw.pairs_view2, lfw.pairs_view2_label, lfw.pairs_view2_fold])
    differ = np.flatnonzero((found != expected).any(axis=1)) if found.shape == expected.shape \
        else [min(len(found), len(expected))]
    if len(differ):
        raise ValueError(f"{path} does not match the View 2 pairs of the LFW npz: pair "
                         f"{differ[0] + 1} differs (of {len(found)}, npz {len(expected)}).")
    return Bunch(images=lfw.images, labels=lfw.person, pairs=lfw.pairs_view2.astype(np.int64),
                 y=np.where(lfw.pairs_view2_label == 1, 1, -1), pair_fold=lfw.pairs_view2_fold,
                 image_fold=lfw.people_fold_view2[lfw.person])


def _load(args):
    """The data set as images (n, H, W) (or vectors), labels, and folds of fixed pairs."""
    from . import datasets

    name = args.data
    if name == "digits":
        from sklearn.datasets import load_digits

        digits = load_digits()
        return Bunch(images=digits.images, labels=digits.target)
    if name == "lfw":
        return _lfw(args.data_home)
    if name not in ("att", "yale") and not name.endswith(".npz"):
        raise ValueError(f"unknown data set {name!r}; choose digits, att, lfw, yale or PATH.npz.")
    data = getattr(datasets, f"load_{name}_faces")(args.data_home) if name in ("att", "yale") \
        else _npz(name)
    pairs, y, pair_fold, image_fold = verification.labelled_folds(data.labels)
    return Bunch(images=data.images, labels=data.labels, pairs=pairs, y=y, pair_fold=pair_fold,
                 image_fold=image_fold)


def _extractor(kind, height, width, lbp_block=10):
    """The unfitted image descriptor of ``kind`` (without its sqrt- prefix), scaled down to
    fit small images (block sides at most half the image, HOG cells at most a quarter, SIFT
    patches at most the image)."""
    from .features import HOG, LBP, OCLBP, DenseSIFT, Gabor

    side = lambda b: (min(b, max(height // 2, 1)), min(b, max(width // 2, 1)))  # noqa: E731
    if kind == "lbp":
        return LBP(block_size=side(lbp_block))
    if kind == "oclbp":
        return OCLBP([(*side(b), r) for b, r in ((10, 1), (14, 2), (18, 3))])
    if kind == "hog":
        return HOG(pixels_per_cell=(min(8, max(height // 4, 1)), min(8, max(width // 4, 1))))
    if kind == "dsift":
        bins = tuple(b for b in (4, 6, 8) if 4 * b <= min(height, width))
        return DenseSIFT(bin_sizes=bins or (max(min(height, width) // 4, 1),))
    return Gabor(block_size=side(10))


def _features(images, kind, quiet, lbp_block=10):
    """(n, d) float64 feature vectors of the images, computed once for the whole protocol."""
    n = images.shape[0]
    if kind in ("pixels", "sqrt"):
        vectors = np.asarray(images.reshape(n, -1), dtype=np.float64)
        if kind == "sqrt" and (vectors < 0).any():
            raise ValueError("--features sqrt needs non-negative pixel values.")
        return np.sqrt(vectors) if kind == "sqrt" else vectors
    if images.ndim != 3:
        raise ValueError(f"--features {kind} needs images (n, H, W), got shape {images.shape}.")
    height, width = images.shape[1:]
    extractor = _extractor(kind.removeprefix("sqrt-"), height, width, lbp_block).fit(images[:1])
    out = np.empty((n, extractor.n_features_out_))
    bar, chunk = _Bar(n, f"{kind} features", quiet), 512
    for start in range(0, n, chunk):
        out[start:start + chunk] = extractor.transform(images[start:start + chunk])
        bar.step(n=min(chunk, n - start))
    return np.sqrt(out) if kind.startswith("sqrt-") else out


def _run(args, data, vectors, methods, lams, progress):
    options = dict(methods=methods, lams=lams, max_iter=args.max_iter, progress=progress,
                   fusion=args.fusion, snorm=args.snorm)
    if args.data == "digits":
        experiments = verification.run_digits(vectors, data.labels, n_components=args.n_components
                                              or 32, n_repeats=args.repeats, **options)
        return experiments, "digits: train/val/test pairs on disjoint images, shared classes"
    unrestricted = args.setting == "unrestricted"
    train = (verification.unrestricted_train_pairs(data.labels, data.image_fold, args.pairs)
             if unrestricted else None)
    experiments = verification.run_folds(vectors, data.pairs, data.y, data.pair_fold,
                                         n_components=args.n_components or 100,
                                         train_pairs=train, **options)
    n, setting = len(experiments), args.setting or "restricted"
    drawn = f"training pairs drawn from the identities of the training folds ({args.pairs} + " \
        f"as many at most)" if unrestricted else "training on the fixed pairs of the folds"
    if args.data == "lfw":
        return experiments, f"LFW View 2 {setting} (seed 002 III.A): 10 experiments, 8/1/1 " \
            "folds" + (f"; {drawn}" if unrestricted else "")
    return experiments, (f"{Path(args.data).name} {setting}: {np.unique(data.labels).size} "
                         f"identities in {n}"
                         f" folds, {n} experiments {n - 2}/1/1 folds; {drawn}")


def _plot(path, curves, rows, title):
    from matplotlib.figure import Figure  # Agg canvas for PNG, no pyplot state

    fig = Figure(figsize=(18, 5))
    roc, det, fafr = fig.subplots(1, 3)
    _plot_det(det, curves)
    grid, eer = curves["grid"], {row["method"]: row["eer"] for row in rows}
    for name, curve in curves["methods"].items():
        (line,) = roc.plot(grid, curve["tar"], label=f"{name} (EER {100 * eer[name]:.1f} %)")
        fafr.plot(grid, curve["fr"], color=line.get_color(), label=name)
        fafr.plot(grid, curve["fa"], color=line.get_color(), linestyle="--")
    roc.plot([0, 1], [0, 1], ":", color="grey")
    roc.set(xlabel="false accept rate", ylabel="true accept rate",
            title="ROC (test pairs, mean over experiments)")
    fafr.set(xlabel="share of test pairs rejected (threshold as a score quantile)",
             ylabel="rate", title="FR (solid) and FA (dashed) rates, mean over experiments")
    for axes in (roc, det, fafr):
        axes.legend(fontsize="small")
    fig.suptitle(title, fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _check_back_end_flags(args):
    """--snorm and --lbp-block: one-line errors naming the argument (exit 2)."""
    if args.snorm is not None and args.snorm < 2:
        raise ValueError(f"--snorm: the cohort needs at least 2 images, got {args.snorm}.")
    if args.lbp_block < 2:
        raise ValueError(f"--lbp-block: the LBP cell side must be >= 2 pixels, got "
                         f"{args.lbp_block}.")


def _plot_det(axes, curves):
    """The mean ROC of each method (vertically averaged) on DET normal-deviate axes."""
    from scipy.stats import norm

    from .metrics import DET_TICKS

    grid = np.asarray(curves["grid"])
    eps = 1e-3
    for name, curve in curves["methods"].items():
        fnmr = 1 - np.asarray(curve["tar"])
        axes.plot(norm.ppf(np.clip(grid, eps, 1 - eps)), norm.ppf(np.clip(fnmr, eps, 1 - eps)),
                  label=name)
    ticks = norm.ppf(DET_TICKS)
    labels = [f"{100 * t:g}" for t in DET_TICKS]
    axes.set_xticks(ticks, labels)
    axes.set_yticks(ticks, labels)
    axes.set(xlim=(ticks[0], ticks[-1]), ylim=(ticks[0], ticks[-1]),
             xlabel="false match rate (%)", ylabel="false non-match rate (%)",
             title="DET (mean ROC on normal-deviate axes)")


def verify(args):
    methods = verification.resolve_methods(args.methods, args.similar_only)
    lams = args.lams
    if args.data == "digits" and args.setting:
        raise ValueError("--setting applies to lfw, att, yale and npz data (fixed folds of "
                         "pairs); digits has its own image-split protocol.")
    if args.fusion and len(methods) < 2:
        raise ValueError("--fusion needs at least two methods.")
    _check_back_end_flags(args)
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ValueError("--plot: plots need matplotlib: pip install metricfit[plot]") from None
    start = time.perf_counter()
    threads = args.threads if args.threads is not None else (1 if args.data == "digits" else None)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(threads), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = _load(args)
        vectors = _features(data.images, args.features, args.quiet, args.lbp_block)
        n_experiments = args.repeats if args.data == "digits" else np.unique(data.pair_fold).size
        bar = _Bar(n_experiments * (len(methods) * (1 + bool(args.snorm)) + args.fusion),
                   "verify", args.quiet)
        experiments, protocol = _run(args, data, vectors, methods, lams, lambda e, r: bar.step(
            f"experiment {e + 1}: {r.method} {100 * r.accuracy:.2f} %"
            + ("" if np.isnan(r.lam) else f" (lambda {r.lam:g})")))
    rows = verification.summarise(experiments)
    curves = verification.mean_curves(experiments)
    seconds = time.perf_counter() - start
    print(f"{protocol}; features {args.features}; mean +- SEM over {len(experiments)}; "
          f"{seconds:.1f} s")
    print(verification.format_table(rows, calibrated=args.calibrate))
    if caught:
        print(f"metricfit: {len(caught)} warning(s) while fitting, e.g. {caught[0].message}",
              file=sys.stderr)
    if args.json:
        _write_json(args.json, {
            "data": args.data, "features": args.features, "protocol": protocol,
            "setting": None if args.data == "digits" else args.setting or "restricted",
            "methods": methods, "fusion": args.fusion, "seconds": seconds, "summary": rows,
            "results": verification.as_records(experiments), "curves": curves})
    if args.plot:
        _plot(args.plot, curves, rows, f"{protocol}; features {args.features}")
    if args.scores:
        verification.save_scores(args.scores, experiments, args.features)
    return 0


def fuse(args):
    """Seed 002 IV.D across descriptors: fuse saved score columns, print each and the fusion."""
    columns = {}
    for path in args.files:
        columns.update(verification.load_scores(path))
    wanted = None if args.methods is None else set(verification.resolve_methods(args.methods))
    columns = {key: value for key, value in columns.items()
               if key[1] != "fusion" and (wanted is None or key[1] in wanted)}
    singles = verification.saved_results(columns)
    fused = verification.fuse_saved(columns, args.classifier)
    experiments = [row + f for row, f in zip(singles, fused)]
    rows = verification.summarise(experiments)
    print(f"{args.classifier} fusion of {len(columns)} score columns fitted on each validation "
          f"fold; mean +- SEM over {len(experiments)} experiments")
    print(verification.format_table(rows))
    if args.json:
        _write_json(args.json, {"files": args.files, "classifier": args.classifier,
                                "summary": rows, "results": verification.as_records(experiments)})
    return 0


def bench(args):
    """Median ms of one cost-and-gradient call (lam = 0), the variants called round-robin."""
    from threadpoolctl import threadpool_limits

    from .losses import csml, ddml, tsml

    rng, n, d, k = np.random.default_rng(0), args.n, args.d, args.k
    X1, X2 = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    s = rng.permutation(np.where(np.arange(n) < n // 2, 1.0, -1.0))
    A = np.eye(k, d) + 0.01 * rng.standard_normal((k, d))
    table = {}
    with threadpool_limits(args.threads):
        for dtype in ("float64", "float32"):
            x1, x2, sd, a = (v.astype(dtype) for v in (X1, X2, s, A))
            z = x1 + sd[:, None] * x2
            objectives = [loss.objective(x1, x2, sd) for loss in (tsml, csml, ddml)]
            calls = [lambda: (z @ a.T).T @ z] + [functools.partial(f, a) for f in objectives]
            times = np.empty((args.repeats + 1, len(calls)))  # round 0 warms up (numba)
            for r in range(args.repeats + 1):
                for i, call in enumerate(calls):
                    t0 = time.perf_counter()
                    call()
                    times[r, i] = time.perf_counter() - t0
            table[dtype] = 1e3 * np.median(times[1:], axis=0)
    print(f"one cost-and-gradient call, n = {n}, d = {d}, k = {k}; median of {args.repeats}; "
          f"BLAS threads: {args.threads or 'default'}")
    print(f"{'variant':<16} {'float64 ms':>11} {'x bound':>8} {'float32 ms':>11} {'x bound':>8}")
    for i, name in enumerate(("two-GEMM bound", "TSML prepared", "CSML prepared",
                              "DDML prepared")):
        print(f"{name:<16} " + " ".join(f"{table[t][i]:11.2f} {table[t][i] / table[t][0]:8.2f}"
                                        for t in table))
    print("Full benchmark (torch autograd, LDML, stateless cost_grad, JSON): python "
          "benchmarks/bench_gradients.py in the source repository (pip install -e .[bench]).")
    return 0


def main(argv=None):
    """Run the command; user errors print one line ``metricfit: error: ...`` and return 2."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit_:  # argparse: --help (0) or a user error (2), already printed
        return exit_.code
    try:
        return {"verify": verify, "fuse": fuse, "bench": bench}[args.command](args)
    except (FileNotFoundError, ValueError) as error:
        print(f"metricfit: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
