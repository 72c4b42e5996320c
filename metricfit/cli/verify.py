"""``metricfit verify``: load a data set, compute its features, run the protocol, print the
table (and write JSON, plots, score files)."""

import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from .. import datasets
from ..experiments import selection, verification
from ..features.lbp import CROP_CELL_SIDE
from ..pairs.splits import labelled_folds, unrestricted_train_pairs
from ._output import _write_json
from ._plot import _plot
from ._progress import _Bar


def _load(args):
    """The data set as images (n, H, W) (or vectors), labels, and folds of fixed pairs."""
    name = args.data
    if name == "digits":
        from sklearn.datasets import load_digits

        digits = load_digits()
        return Bunch(images=digits.images, labels=digits.target)
    if name == "lfw":
        return datasets.load_lfw_view2(args.data_home)
    if name not in ("att", "yale") and not name.endswith(".npz"):
        raise ValueError(f"unknown data set {name!r}; choose digits, att, lfw, yale or PATH.npz.")
    data = getattr(datasets, f"load_{name}_faces")(args.data_home) if name in ("att", "yale") \
        else datasets.load_labelled_npz(name)
    own = _own_pairs(args, data)
    if own is not None:
        pairs, y, pair_fold, source = own
        return Bunch(images=data.images, labels=data.labels, pairs=pairs, y=y,
                     pair_fold=pair_fold, image_fold=None, source=source)
    pairs, y, pair_fold, image_fold = labelled_folds(data.labels)
    return Bunch(images=data.images, labels=data.labels, pairs=pairs, y=y, pair_fold=pair_fold,
                 image_fold=image_fold, source=None)


def _own_pairs(args, data):
    """The user's pairs of a labelled .npz: ``--pairs PAIRS.txt`` (LFW style) or the pair
    arrays stored in the file, as ``(index_pairs, y, fold, source)``; None without them."""
    if isinstance(args.pairs, str):
        index, y, fold = datasets.read_pairs_over_ids(
            args.pairs, data.ids if data.get("ids") is not None else [], data.labels)
        source = f"the pairs of {Path(args.pairs).name}"
    elif data.get("pairs") is not None:
        (index, y, fold), source = data.pairs, f"the pairs stored in {Path(args.data).name}"
    else:
        return None
    folds, counts = np.unique(fold, return_counts=True)
    if folds.size < 3:
        raise ValueError(f"--data {args.data}: {source} fall in {folds.size} fold(s); the "
                         "rotation needs 3 or more (train, validation, test).")
    for f in folds:
        if np.unique(y[fold == f]).size < 2:
            raise ValueError(f"--data {args.data}: fold {f} of {source} lacks same- or "
                             "different-identity pairs.")
    per = f"{counts[0]}" if np.all(counts == counts[0]) else f"{counts.min()} to {counts.max()}"
    return index, y, fold, f"{source}: {folds.size} folds of {per} pairs"


def _extractor(kind, height, width, lbp_block=CROP_CELL_SIDE, lbp_radius=1):
    """The unfitted image descriptor of ``kind`` (without its sqrt- prefix), scaled down to
    fit small images (block sides at most half the image, HOG cells at most a quarter, SIFT
    patches at most the image). ``lbp_block``, ``lbp_radius`` (a radius or a tuple of radii:
    multi-scale): LBP's cell side and radius."""
    from ..features import HOG, LBP, OCLBP, DenseSIFT, Gabor

    side = lambda b: (min(b, max(height // 2, 1)), min(b, max(width // 2, 1)))  # noqa: E731
    if kind == "lbp":
        radii = tuple(np.ravel(lbp_radius))
        return LBP(block_size=side(lbp_block), radius=radii[0] if len(radii) == 1 else radii)
    if kind == "oclbp":
        return OCLBP([(*side(b), r) for b, r in ((10, 1), (14, 2), (18, 3))])
    if kind == "hog":
        return HOG(pixels_per_cell=(min(8, max(height // 4, 1)), min(8, max(width // 4, 1))))
    if kind == "dsift":
        bins = tuple(b for b in (4, 6, 8) if 4 * b <= min(height, width))
        return DenseSIFT(bin_sizes=bins or (max(min(height, width) // 4, 1),))
    return Gabor(block_size=side(10))


def _features(images, kind, quiet, lbp_block=CROP_CELL_SIDE, lbp_radius=1):
    """(n, d) float64 feature vectors of the images, computed once for the whole protocol."""
    n = images.shape[0]
    if kind in ("pixels", "sqrt"):
        vectors = np.asarray(images.reshape(n, -1), dtype=np.float64)
        if kind == "sqrt" and (vectors < 0).any():
            raise ValueError("--features sqrt needs non-negative pixel values.")
        return np.sqrt(vectors) if kind == "sqrt" else vectors
    if kind == "dlib":
        return _dlib_features(images, quiet)
    if images.ndim != 3:
        raise ValueError(f"--features {kind} needs images (n, H, W), got shape {images.shape}.")
    height, width = images.shape[1:]
    extractor = _extractor(kind.removeprefix("sqrt-"), height, width, lbp_block,
                           lbp_radius).fit(images[:1])
    out = np.empty((n, extractor.n_features_out_))
    bar, chunk = _Bar(n, f"{kind} features", quiet), 512
    for start in range(0, n, chunk):
        out[start:start + chunk] = extractor.transform(images[start:start + chunk])
        bar.step(n=min(chunk, n - start))
    return np.sqrt(out) if kind.startswith("sqrt-") else out


def _dlib_features(images, quiet):
    """dlib's 128-d face descriptors (the ``faces`` extra), cached on disk under
    ``$METRICFIT_DLIB_CACHE`` (default ``~/.cache/metricfit/dlib``)."""
    import os

    from ..features import DlibFaceEmbedding

    if images.ndim not in (3, 4):
        raise ValueError(f"--features dlib needs images (n, H, W) or (n, H, W, 3), got shape "
                         f"{images.shape}.")
    if images.dtype != np.uint8:
        if not (np.all(np.isfinite(images)) and np.all(images == np.rint(images))
                and images.min() >= 0 and images.max() <= 255):
            raise ValueError("--features dlib needs 8-bit images (integers 0 to 255); got "
                             f"{images.dtype} values in [{images.min():g}, {images.max():g}].")
        images = images.astype(np.uint8)
    cache = os.environ.get("METRICFIT_DLIB_CACHE",
                           os.path.join(os.path.expanduser("~"), ".cache", "metricfit", "dlib"))
    embedding = DlibFaceEmbedding(cache_dir=cache)
    n, chunk = images.shape[0], 256
    out, fallbacks, cached = np.empty((n, 128)), 0, 0
    bar = _Bar(n, "dlib features", quiet)
    for start in range(0, n, chunk):
        out[start:start + chunk] = embedding.transform(images[start:start + chunk])
        fallbacks += embedding.n_fallback_
        cached += embedding.n_cached_
        bar.step(n=min(chunk, n - start))
    if not quiet:
        print(f"dlib: {cached} of {n} images from the cache {cache}; no face detected on "
              f"{fallbacks} of the {n - cached} others (whole image taken as the face box)",
              file=sys.stderr)
    return out


def _wpca_dimension(args, vectors, embeddings=False):
    """``(wpca, n_components)`` of the run: --wpca none, --wpca N / --n-components N, or the
    default: none on ``embeddings`` (the vectors of the user's .npz, dlib's descriptors)
    without --select, else 32 for digits and 100 otherwise, capped at the dimension of the
    vectors with a note. On the dlib LFW embeddings a WPCA to their rank cost the learned
    metrics 0.9-1.6 points and the cosine as much (docs/results/embeddings.md)."""
    if args.wpca == "none":
        return False, None, "no WPCA"
    asked = args.wpca or args.n_components
    if not asked and embeddings and not args.select:
        return False, None, "no WPCA (the default on embeddings; --wpca N whitens first)"
    k = asked or (32 if args.data == "digits" else 100)
    if k > vectors.shape[1]:
        note = f"WPCA-{vectors.shape[1]} (the vectors' dimension; {k} asked)"
        return True, vectors.shape[1], note
    return True, k, f"WPCA-{k}"


def _embeddings(args):
    """Whether the run is on embeddings: the user's .npz, or dlib's descriptors
    (``--features dlib``), as opposed to the hand-made descriptors of the seeds' tables."""
    return args.data.endswith(".npz") or args.features == "dlib"


def _baseline(args):
    """--baseline, by default raw on embeddings (:func:`_embeddings`) and wpca for the
    bundled sets' descriptors."""
    if args.baseline is not None:
        return args.baseline
    return "raw" if _embeddings(args) else "wpca"


def _judging(args):
    """(--select-on, --select-folds), by default ('both', 5) on embeddings
    (:func:`_embeddings`) and ('accuracy', 0) for the bundled sets' descriptors (their
    tables)."""
    own = _embeddings(args)
    return (args.select_on or ("both" if own else "accuracy"),
            (5 if own else 0) if args.select_folds is None else args.select_folds)


def _run(args, data, vectors, methods, lams, progress):
    own_vectors = args.features == "dlib" or (args.data.endswith(".npz")
                                              and np.ndim(data.images) == 2)
    wpca, n_components, wpca_note = _wpca_dimension(args, vectors, own_vectors)
    select_on, select_folds = _judging(args)
    config = verification.ExperimentConfig(
        methods=methods, n_components=n_components or 1, wpca=wpca,
        raw_baseline=_baseline(args) == "raw", prior=args.prior,
        start_candidates=_embeddings(args), select_on=select_on,
        select_folds=select_folds,
        lams=lams, max_iter=args.max_iter, fusion=args.fusion, snorm=args.snorm,
        selection=dict(dims=args.dims) if args.select else None,
        cnn=dict(max_epochs=args.cnn_epochs, n_jobs=args.threads))
    if args.select:
        wpca_note = "WPCA chosen on validation" if wpca else "no WPCA"
    if _embeddings(args) and any(map(selection.starts_centred, methods)):
        wpca_note += ("; 'no learning' (the start)" + (" and 'no WPCA'" if args.select and wpca
                                                       else "")
                      + " among the candidates chosen on validation")
    if any(map(verification.has_lam, methods)) and (select_on, select_folds) != ("accuracy", 0):
        criterion = {"accuracy": "maxDA", "min-dcf": f"minDCF({args.prior:g})",
                     "both": f"maxDA and minDCF({args.prior:g}), never below 'no learning'"}
        wpca_note += (f"; lambda chosen by {criterion[select_on]} on the validation fold"
                      + (f" and {select_folds} image-disjoint parts of the training pairs"
                         if select_folds else ""))
    if "baseline" in methods:
        raw = _baseline(args) == "raw" or not wpca
        wpca_note += "; baseline: cosine of the raw vectors" if raw else \
            "; baseline: cosine after WPCA"
    images = data.images if any(map(verification.takes_images, methods)) else None
    if args.data == "digits":
        experiments = verification.run_digits(vectors, data.labels, config,
                                              n_repeats=args.repeats, progress=progress,
                                              images=images)
        return experiments, ("digits: train/val/test pairs on disjoint images, shared classes; "
                             f"{wpca_note}")
    unrestricted = args.setting == "unrestricted"
    if unrestricted and data.get("image_fold", 0) is None:
        raise ValueError(f"--setting unrestricted draws pairs within identity folds; the pairs "
                         f"of {args.data} come with their own folds: use the restricted "
                         "setting.")
    train = (unrestricted_train_pairs(data.labels, data.image_fold, args.pairs)
             if unrestricted else None)
    experiments = verification.run_folds(vectors, data.pairs, data.y, data.pair_fold, config,
                                         progress=progress, train_pairs=train,
                                         experiments=args.experiments, images=images)
    n, setting = np.unique(data.pair_fold).size, args.setting or "restricted"
    which = f"{n} experiments" if args.experiments is None else \
        f"experiments {','.join(map(str, args.experiments))} of {n}"
    drawn = f"training pairs drawn from the identities of the training folds ({args.pairs} + " \
        f"as many at most)" if unrestricted else "training on the fixed pairs of the folds"
    if args.data == "lfw":
        return experiments, f"LFW View 2 {setting} (seed 002 III.A): {which}, 8/1/1 " \
            "folds" + (f"; {drawn}" if unrestricted else "") + f"; {wpca_note}"
    if data.get("source"):
        return experiments, (f"{Path(args.data).name} {setting}, {data.source}; {which}, "
                             f"{n - 2}/1/1 folds; {wpca_note}")
    return experiments, (f"{Path(args.data).name} {setting}: {np.unique(data.labels).size} "
                         f"identities in {n} folds, {which} {n - 2}/1/1 folds (pairs: every "
                         f"same-identity pair of a fold, as many different); {drawn}; "
                         f"{wpca_note}")


def _check_cnn_and_experiments(args, methods):
    """--snorm and --experiments against the methods and data, before any work (one line,
    exit 2)."""
    image = [name for name in methods if verification.takes_images(name)]
    if image and args.snorm is not None:
        raise ValueError(f"--snorm does not apply to {', '.join(image)}: its cohort is of WPCA "
                         "vectors, and image methods take image pairs.")
    if args.experiments is not None:
        if args.data == "digits":
            raise ValueError("--experiments applies to lfw, att, yale and npz data (the fold "
                             "rotation); digits has --repeats.")
        wrong = [e for e in args.experiments if e > 9]
        if args.data == "lfw" and wrong:
            raise ValueError(f"--experiments: LFW View 2 has experiments 0 to 9, got "
                             f"{','.join(map(str, wrong))}.")


def _check_loaded(args, data, methods):
    """What only the loaded data can tell: experiments in range, images for image methods."""
    image = [name for name in methods if verification.takes_images(name)]
    if image and np.ndim(data.images) != 3:
        raise ValueError(f"--methods {','.join(image)} needs images (n, H, W); {args.data} "
                         f"holds vectors of shape {np.shape(data.images)}.")
    if args.experiments is not None and args.data != "digits":
        n = np.unique(data.pair_fold).size
        wrong = [e for e in args.experiments if e >= n]
        if wrong:
            raise ValueError(f"--experiments: {Path(args.data).name} has experiments 0 to "
                             f"{n - 1}, got {','.join(map(str, wrong))}.")


def _check_user_pairs(args):
    """--wpca against --n-components, --pairs FILE against the data and setting (exit 2)."""
    if args.wpca is not None and args.n_components is not None:
        raise ValueError("--wpca and --n-components both set the WPCA dimension: give one.")
    if isinstance(args.pairs, str):
        if not args.data.endswith(".npz"):
            raise ValueError(f"--pairs {args.pairs}: a pairs file applies to --data PATH.npz "
                             f"(your embeddings or images), not to {args.data}.")
        if args.setting == "unrestricted":
            raise ValueError("--pairs PAIRS.txt gives the restricted protocol's fixed pairs; "
                             "--setting unrestricted draws its own (give --pairs N).")


def _check_back_end_flags(args):
    """--snorm, --lbp-block and --lbp-radius: one-line errors naming the argument (exit 2)."""
    if args.snorm is not None and args.snorm < 2:
        raise ValueError(f"--snorm: the cohort needs at least 2 images, got {args.snorm}.")
    small = [b for b in args.lbp_block if b < 2]
    if small:
        raise ValueError(f"--lbp-block: the LBP cell side must be >= 2 pixels, got "
                         f"{','.join(map(str, small))}.")
    if len(_lbp_variants(args)) > 1 and (args.fusion or args.snorm is not None):
        raise ValueError("--fusion and --snorm take one LBP setting: several --lbp-block / "
                         "--lbp-radius values are chosen per method on validation, and a "
                         "fusion or a cohort would mix the variants.")


def _radius_label(radii):
    return "+".join(f"{r:g}" for r in radii)


def _lbp_variants(args):
    """``[(label, block, radii)]``: every --lbp-block x --lbp-radius setting for lbp and
    sqrt-lbp (the label names both, e.g. '5x5 r1+2'); one unlabelled entry otherwise."""
    blocks = getattr(args, "lbp_block", [CROP_CELL_SIDE])
    radii = getattr(args, "lbp_radius", [(1.0,)])
    if args.features not in ("lbp", "sqrt-lbp"):
        return [(None, blocks[0], radii[0])]
    return [(f"{b}x{b} r{_radius_label(r)}", b, r) for b in blocks for r in radii]


def _dcf_resolution(experiments, prior, limit=0.05):
    """How many test pairs the minDCF of one experiment rests on, and how far one false
    accept (weight (1 - P) / P over the non-target pairs) and one miss move it."""
    y = np.concatenate([np.asarray(results[0].y) for results in experiments])
    n_tar = int(np.sum(y == 1)) / len(experiments)
    n_non = int(np.sum(y != 1)) / len(experiments)
    step_fa, step_miss = (1 - prior) / prior / max(n_non, 1), 1 / max(n_tar, 1)
    text = (f"minDCF({prior:g}) rests on {n_tar:g} target and {n_non:g} non-target test pairs "
            f"per experiment: one false accept moves it by {step_fa:.3g}, one miss by "
            f"{step_miss:.3g}")
    if step_fa > limit:
        text += " (warning: too few non-target pairs for this operating point)"
    return {"n_target": n_tar, "n_nontarget": n_non, "one_false_accept": step_fa,
            "one_miss": step_miss, "text": text}


def run(args):
    methods = verification.resolve_methods(args.methods, args.similar_only)
    lams = args.lams
    if args.data == "digits" and args.setting:
        raise ValueError("--setting applies to lfw, att, yale and npz data (fixed folds of "
                         "pairs); digits has its own image-split protocol.")
    if args.fusion and len(methods) < 2:
        raise ValueError("--fusion needs at least two methods.")
    _check_back_end_flags(args)
    _check_cnn_and_experiments(args, methods)
    if args.select and (args.n_components is not None or args.wpca not in (None, "none")):
        raise ValueError("--n-components / --wpca N and --select exclude each other: with "
                         "--select the WPCA dimension is chosen from --dims.")
    _check_user_pairs(args)
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ValueError("--plot: plots need matplotlib: pip install metricfit[plot]") from None
    start = time.perf_counter()
    threads = args.threads if args.threads is not None else (1 if args.data == "digits" else None)
    from ..parallel import threads as thread_setting

    with thread_setting(threads), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = _load(args)
        _check_loaded(args, data, methods)
        variants = _lbp_variants(args)
        n_experiments = args.repeats if args.data == "digits" else \
            np.unique(data.pair_fold).size if args.experiments is None else len(args.experiments)
        bar = _Bar(len(variants) * n_experiments
                   * (len(methods) * (1 + bool(args.snorm)) + args.fusion), "verify", args.quiet)
        runs = {}
        for label, block, radii in variants:
            vectors = _features(data.images, args.features, args.quiet, block, radii)
            runs[label], protocol = _run(
                args, data, vectors, methods, lams, lambda e, r, label=label: bar.step(
                    f"experiment {e + 1}: {r.method} {100 * r.accuracy:.2f} %"
                    + ("" if label is None else f" ({label})")
                    + ("" if np.isnan(r.lam) else f" (lambda {r.lam:g})")
                    + ("" if r.n_components is None else f" (dim {r.n_components}, "
                       f"{'L2' if r.normalize else 'no L2'})")))
    experiments = next(iter(runs.values())) if len(runs) == 1 else \
        verification.choose_variant(runs)
    rows = verification.summarise(experiments)
    curves = verification.mean_curves(experiments)
    seconds = time.perf_counter() - start
    if args.select:
        protocol += (f"; chosen on validation per method: WPCA dimension from "
                     f"{','.join(map(str, args.dims))}, L2 on/off, lambda")
    if len(runs) > 1:
        for label, run_ in runs.items():
            print(f"variant {label}:")
            print(verification.format_table(verification.summarise(run_),
                                            calibrated=args.calibrate, prior=args.prior))
        protocol += (f"; LBP variant (cell side x radius) chosen on validation per method and "
                     f"experiment from {', '.join(runs)}")
    elif args.features in ("lbp", "sqrt-lbp"):
        protocol += f"; LBP {next(iter(runs)) or ''}".rstrip()
    features = args.features
    if features == "pixels" and np.ndim(data.images) == 2:
        features = "the file's vectors"  # an .npz of embeddings, not images
    print(f"{protocol}; features {features}; mean +- SEM over {len(experiments)}; "
          f"{seconds:.1f} s")
    print(verification.format_table(rows, calibrated=args.calibrate, prior=args.prior))
    resolution = _dcf_resolution(experiments, args.prior)
    print(f"metricfit: {resolution['text']}", file=sys.stderr)  # the table stays parsable
    if caught:
        print(f"metricfit: {len(caught)} warning(s) while fitting, e.g. {caught[0].message}",
              file=sys.stderr)
    if args.json:
        _write_json(args.json, {
            "data": args.data, "features": args.features, "protocol": protocol,
            "setting": None if args.data == "digits" else args.setting or "restricted",
            "methods": methods, "fusion": args.fusion, "seconds": seconds,
            "prior": args.prior, "wpca": args.wpca, "baseline": _baseline(args),
            "select_on": _judging(args)[0], "select_folds": _judging(args)[1],
            "dcf_resolution": {k: v for k, v in resolution.items() if k != "text"},
            "selection": {"dims": args.dims, "normalize": [False, True],
                          "lams": list(lams), "edge_decades": 1} if args.select else None,
            "summary": rows,
            "results": verification.as_records(experiments, args.experiments),
            "curves": curves, **({} if args.experiments is None
                                 else {"experiments": args.experiments}),
            **({} if len(runs) < 2 else {"variants": {
                label: {"summary": verification.summarise(run_),
                        "results": verification.as_records(run_, args.experiments)}
                for label, run_ in runs.items()}})})
    if args.plot:
        _plot(args.plot, curves, rows, f"{protocol}; features {args.features}")
    if args.scores:
        verification.save_scores(args.scores, experiments, args.features, args.experiments)
    return 0
