"""Runs: the protocols that run the methods, experiment after experiment.

:class:`ExperimentConfig` holds what one experiment runs (methods, WPCA dimension or the
selection, lambdas, fusion, s-norm, the convnet's parameters); :func:`run_experiment` runs it
on one train / validation / test split; :func:`run_folds` over the fold rotation of seed 002
III.A on fixed folds of pairs (restricted or unrestricted training, seed 004 5.2.2),
:func:`run_digits` over random image splits of a labelled set. Every method takes the WPCA
vectors of the features, except the image methods
(:data:`~metricfit.experiments.methods.IMAGE_METHODS`), which take pairs of the raw images.
"""

import functools
import warnings
from dataclasses import dataclass, fields

import numpy as np

from ..pairs import FoldRotation
from ..pairs.splits import digits_split
from ..whitening import WPCA
from .evaluation import _back_end_metrics, snorm_result
from .fusion import fuse
from .methods import DEFAULT_METHODS, takes_images
from .selection import (
    DEFAULT_DIMS,
    DEFAULT_LAMS,
    Judge,
    image_method_and_test,
    pair_groups,
    select_all_and_test,
    select_and_test,
)

__all__ = ["NO_WPCA_MAX_DIM", "ExperimentConfig", "run_experiment", "run_folds",
           "run_lfw_restricted", "run_digits"]


@dataclass(frozen=True)
class ExperimentConfig:
    """What one experiment runs: the settings every protocol passes down unchanged.

    Parameters
    ----------
    methods : tuple of str, default=DEFAULT_METHODS
        Method names (:data:`~metricfit.experiments.methods.METHODS`), in table order.
    n_components : int, default=100
        WPCA dimension, capped at half the training images and at the dimension; ignored
        with ``selection``.
    lams : tuple of float, default=DEFAULT_LAMS
        The lambda grid, chosen on the validation pairs.
    max_iter : int, default=200
    fusion : bool, default=False
        Add a row 'fusion' (seed 002 IV.D: a linear SVM on the methods' scores).
    snorm : int or None, default=None
        Add a row 'METHOD+snorm' per method, s-normalised with a cohort of that many
        training images.
    selection : dict or None, default=None
        Choose the WPCA dimension, the L2 normalisation and lambda per method on the
        validation pairs: keywords of :func:`~metricfit.experiments.selection.select`
        (``dims``, ``normalize``, ``edge_decades``).
    cnn : dict or None, default=None
        Parameters of the image methods (see
        :func:`~metricfit.experiments.methods.make_method`).
    wpca : bool, default=True
        Whether the methods take WPCA vectors; False: the feature vectors as they are
        (``n_components`` ignored; with ``selection``, only the normalisation and lambda).
    raw_baseline : bool, default=False
        The 'baseline' row is the cosine of the raw feature vectors, not of the WPCA ones.
    prior : float in (0, 1), default=0.01
        The target prior of the minDCF and actDCF reported, and of the calibration behind
        actDCF.
    start_candidates : bool, default=False
        Candidates that keep a learned metric from falling below where it starts: "no
        learning" (:data:`~metricfit.experiments.selection.NO_LEARNING`, the start itself)
        among the lambdas of the start-centred learners, and with ``selection`` (and WPCA),
        "no WPCA" (the selection run again on the raw vectors, when they have at most
        :data:`NO_WPCA_MAX_DIM` dimensions; the one of better validation maxDA is kept, its
        Result's ``choice`` saying ``{"wpca": "none"}``).
    select_on : {'accuracy', 'min-dcf', 'both'}, default='accuracy'
        How lambda (and with ``selection`` the other settings) are chosen
        (:class:`~metricfit.experiments.selection.Judge`): the best validation maxDA, the
        lowest minDCF(``prior``), or the best maxDA among the candidates at least level with
        the start ("no learning", with ``start_candidates``) in both.
    select_folds : int, default=0
        Group-disjoint parts of the training pairs (no image on both sides) each candidate is
        also scored on, besides the validation fold: the criterion is the mean over these
        ``select_folds + 1`` sets (each candidate is fitted ``select_folds + 1`` times).
        Where the training pairs form fewer image-disjoint groups (pairs drawn at random
        from labelled images often link them all), parts drawn at random that share
        images, with a warning.

    Examples
    --------
    >>> from metricfit.experiments.verification import ExperimentConfig
    >>> config = ExperimentConfig(methods=["baseline", "tsml-i"], n_components=32)
    >>> config.methods, config.n_components, config.fusion
    (('baseline', 'tsml-i'), 32, False)
    """

    methods: tuple = DEFAULT_METHODS
    n_components: int = 100
    lams: tuple = DEFAULT_LAMS
    max_iter: int = 200
    fusion: bool = False
    snorm: int = None
    selection: dict = None
    cnn: dict = None
    wpca: bool = True
    raw_baseline: bool = False
    prior: float = 0.01
    start_candidates: bool = False
    select_on: str = "accuracy"
    select_folds: int = 0

    def __post_init__(self):
        object.__setattr__(self, "methods", tuple(self.methods))
        if not 0 < self.prior < 1:
            raise ValueError(f"prior must be in (0, 1), got {self.prior!r}.")
        Judge(self.select_on, self.select_folds, groups=(), prior=self.prior)  # checks both

    def judge(self, train_index_pairs):
        """The :class:`~metricfit.experiments.selection.Judge` of an experiment whose
        training pairs are ``train_index_pairs`` (row indices into its vectors)."""
        if not self.select_folds:
            return Judge(self.select_on, 0, None, self.prior)
        groups = pair_groups(train_index_pairs)
        n_groups = np.unique(groups).size
        if n_groups < self.select_folds:
            warnings.warn(f"select_folds={self.select_folds}: the training pairs form "
                          f"{n_groups} image-disjoint group(s), too few; its parts are drawn "
                          "at random and share images", UserWarning, stacklevel=3)
            rng = np.random.RandomState(0)
            groups = rng.permutation(len(groups)) % self.select_folds
        return Judge(self.select_on, self.select_folds, groups, self.prior)


NO_WPCA_MAX_DIM = 1024
"""The largest raw dimension the "no WPCA" candidate is tried at (learned metrics fit d x d
matrices: embeddings of 128-1024 dimensions, not 5,900-bin LBP histograms)."""

_CONFIG_FIELDS = tuple(f.name for f in fields(ExperimentConfig))


def _old_style(function, order, args, kwargs, **defaults):
    """``(config, other keywords)`` from a call with the settings as arguments, in the
    positional ``order`` of the old signature of ``function`` (deprecated)."""
    if args and isinstance(args[0], ExperimentConfig):
        raise TypeError(f"{function}: {', '.join(kwargs) or 'settings'} given beside config; "
                        "set them in the ExperimentConfig (dataclasses.replace).")
    warnings.warn(f"passing the experiment's settings to {function} as separate arguments is "
                  "deprecated and will be removed in 0.3; use config=ExperimentConfig(...) "
                  "instead", FutureWarning, stacklevel=3)
    if len(args) > len(order):
        raise TypeError(f"{function} takes at most {len(order)} settings, got {len(args)}.")
    named = dict(zip(order, args, strict=False))  # the first len(args) settings
    twice = sorted(named.keys() & kwargs.keys())
    unknown = sorted(kwargs.keys() - set(order))
    if twice or unknown:
        raise TypeError(f"{function}: {'repeated' if twice else 'unexpected'} argument(s) "
                        f"{', '.join(twice or unknown)}.")
    named = {**defaults, **named, **kwargs}
    config = ExperimentConfig(**{k: named.pop(k) for k in _CONFIG_FIELDS if k in named})
    return config, named


def run_experiment(vectors, splits, config=None, *old_args, progress=None, images=None,
                   **old_kwargs):
    """One experiment: WPCA to ``config.n_components`` (capped at half the training images,
    whose whitened variances would be ill-estimated beyond, and at the dimension) fitted on the
    distinct images of the training pairs (no labels, no identities), then
    :func:`~metricfit.experiments.selection.select_and_test` for every method, and
    :func:`~metricfit.experiments.fusion.fuse` if ``config.fusion``. With ``config.snorm`` (an
    int K), each method also gets a row 'METHOD+snorm': its scores s-normalised with a cohort
    of K training images (:func:`~metricfit.experiments.evaluation.snorm_result`).

    With ``config.selection``, ``n_components`` is ignored: WPCA is fitted once, at the
    largest candidate dimension (capped as above), and
    :func:`~metricfit.experiments.selection.select_all_and_test` chooses the dimension
    (leading coordinates of that WPCA), the normalisation and lambda of every method on the
    validation pairs.

    The image methods take pairs of ``images`` (n_images, H, W) instead, through
    :func:`~metricfit.experiments.selection.image_method_and_test` (``config.cnn``: its
    ``params``), with or without selection (they have no WPCA dimension nor lambda to
    choose); s-norm does not apply to them (its cohort is of WPCA vectors).

    ``splits`` is ``[(index_pairs, y)]`` for train, validation and test: row indices into
    ``vectors`` (n_images, n_features) and ``images``. ``config``: an
    :class:`ExperimentConfig` (default: its defaults; the settings as separate arguments,
    methods, n_components, lams, max_iter, progress, fusion, snorm, selection, images, cnn,
    are deprecated). ``progress(result)`` is called after each method.
    """
    if old_args or old_kwargs or not isinstance(config, (ExperimentConfig, type(None))):
        config, run = _old_style(
            "run_experiment", ("methods", "n_components", "lams", "max_iter", "progress",
                               "fusion", "snorm", "selection", "images", "cnn"),
            (config, *old_args) if config is not None else old_args, old_kwargs,
            progress=progress, images=images)
        return run_experiment(vectors, splits, config, **run)
    config = ExperimentConfig() if config is None else config
    selection = None if config.selection is None else dict(config.selection)
    embedded, data, image_data = _experiment_data(vectors, splits, config, selection, images)
    raw = _raw_data(vectors, splits) if config.raw_baseline and config.wpca else None
    train_images = np.unique(splits[0][0])
    judge = config.judge(splits[0][0])
    results, inputs = [], []  # inputs: the (train, val, test) pairs each row was scored on

    def add(result, pairs):
        if config.prior != 0.01:
            val = (result.val_scores, result.val_y) if result.val_scores is not None else None
            for key, value in _back_end_metrics(result.scores, result.y, val,
                                                config.prior).items():
                setattr(result, key, value)
        results.append(result)
        inputs.append(pairs)
        if progress:
            progress(result)

    for name in config.methods:
        points, pairs = (vectors, raw) if name == "baseline" and raw is not None else \
            (embedded, data)
        if takes_images(name):
            add(image_method_and_test(name, *image_data, params=config.cnn), image_data)
        elif selection is not None and pairs is data:
            result = _select_with_raw(name, data, vectors, splits, config, selection, judge)
            if _raw_chosen(result):
                points, pairs = vectors, _raw_data(vectors, splits)
            add(result, pairs)
        else:
            add(select_and_test(name, *pairs, lams=config.lams, max_iter=config.max_iter,
                                no_learning=config.start_candidates, judge=judge), pairs)
        if config.snorm:
            cohort = points[np.random.RandomState(0).choice(
                train_images, min(config.snorm, train_images.size), replace=False)]
            add(snorm_result(results[-1], cohort, pairs[1], pairs[2]), pairs)
    if config.fusion:
        add(fuse(results, *[([p[k][0] for p in inputs], data[k][1]) for k in (1, 2)]), data)
    return results


def _raw_chosen(result):
    """Whether the "no WPCA" candidate won (the Result's model takes raw vectors)."""
    return isinstance(result.choice, dict) and result.choice.get("wpca") == "none"


def _select_with_raw(name, data, vectors, splits, config, selection, judge):
    """:func:`select_all_and_test` on the WPCA pairs and, as the "no WPCA" candidate of
    ``config.start_candidates``, on the raw vectors' pairs: the Result the ``judge`` prefers
    (higher maxDA; under 'min-dcf' lower minDCF first, under 'both' not worse in minDCF
    either; WPCA on a tie)."""
    settings = dict(lams=config.lams, max_iter=config.max_iter,
                    no_learning=config.start_candidates, judge=judge)
    result = select_all_and_test(name, *data, **settings, **selection)
    d = np.shape(vectors)[1]
    if not (config.start_candidates and config.wpca and d <= NO_WPCA_MAX_DIM):
        return result
    raw = select_all_and_test(name, *_raw_data(vectors, splits), **settings,
                              **{**selection, "dims": [d]})
    if judge.prefers(raw.choice, result.choice):
        raw.choice = {**raw.choice, "wpca": "none"}
        return raw
    return result


def _raw_data(vectors, splits):
    """The pairs of the three splits of the feature vectors as they are (float64)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    return [(vectors[index_pairs], y) for index_pairs, y in splits]


def _rank(X):
    """The numerical rank of the centred rows of X (as ``numpy.linalg.matrix_rank``)."""
    return int(np.linalg.matrix_rank(X - X.mean(axis=0)))


def _wpca(vectors, train_images, k):
    """WPCA to ``k`` fitted on the training images; where ``k`` exceeds the numerical rank of
    their vectors (constant pixels: the 8 x 8 digits have rank 56 of 64), to the rank, with a
    warning saying so."""
    train = vectors[train_images]
    try:
        return WPCA(n_components=k).fit(train), k
    except ValueError as error:
        if "numerical rank" not in str(error):
            raise
        rank = _rank(np.asarray(train, dtype=np.float64))
        if rank < 1 or rank >= k:
            raise
        warnings.warn(f"WPCA dimension capped at {rank}, the numerical rank of the training "
                      f"vectors (asked {k})", UserWarning, stacklevel=3)
        return WPCA(n_components=rank).fit(train), rank


def _experiment_data(vectors, splits, config, selection, images):
    """``(embedded, data, image_data)``: the WPCA vectors of all images (WPCA fitted on the
    training images; with ``selection``, at its largest capped dimension, and
    ``selection['dims']`` replaced in place by the capped ones), their pairs ``[(pairs, y)]``
    of the three splits, and the image pairs of them (None without image methods)."""
    with_images = [name for name in config.methods if takes_images(name)]
    if with_images and images is None:
        raise ValueError(f"method(s) {', '.join(with_images)} take image pairs: pass the "
                         "images (n_images, height, width).")
    if with_images and np.ndim(images) != 3:
        raise ValueError(f"method(s) {', '.join(with_images)} take images (n_images, height, "
                         f"width), got an array of shape {np.shape(images)}.")
    if with_images and config.snorm:
        raise ValueError(f"snorm does not apply to the image method(s) "
                         f"{', '.join(with_images)}: its cohort is of WPCA vectors.")
    train_images = np.unique(splits[0][0])
    cap = min(train_images.size // 2, vectors.shape[1])
    if not config.wpca:
        embedded = np.asarray(vectors, dtype=np.float64)
        if selection is not None:
            selection.pop("dims", None)
            selection["dims"] = [embedded.shape[1]]
    elif selection is not None:
        dims = sorted({min(k, cap) for k in selection.pop("dims", DEFAULT_DIMS)})
        wpca, k = _wpca(vectors, train_images, dims[-1])
        selection["dims"] = sorted({min(d, k) for d in dims})
        embedded = wpca.transform(vectors)
    else:
        wpca, _ = _wpca(vectors, train_images, min(config.n_components, cap))
        embedded = wpca.transform(vectors)
    data = [(embedded[index_pairs], y) for index_pairs, y in splits]
    image_data = [(images[index_pairs], y) for index_pairs, y in splits] if with_images \
        else None
    return embedded, data, image_data


def run_folds(vectors, pair_index, y, fold, config=None, *old_args, progress=None,
              train_pairs=None, experiments=None, images=None, **old_kwargs):
    """:func:`run_experiment` for each experiment of the fold rotation of seed 002 III.A
    (:class:`~metricfit.pairs.FoldRotation`: n-2 folds train, the next validates, the one
    after tests) over ``fold``, the fold of each of the fixed pairs ``pair_index`` (row indices
    into ``vectors``, and into ``images`` for the image methods) with labels ``y``;
    ``experiments`` (split numbers, in 0 .. n_folds - 1) runs some only. Validation and test
    pairs are the fixed pairs of their fold. Training pairs: those of the training folds
    (restricted setting), or ``train_pairs(train_folds, e) -> (index_pairs, y)``
    (unrestricted, seed 004 5.2.2). ``config``: an :class:`ExperimentConfig` (default: its
    defaults; the settings as separate arguments are deprecated). Returns one list of
    :class:`~metricfit.experiments.evaluation.Result` per experiment run."""
    if old_args or old_kwargs or not isinstance(config, (ExperimentConfig, type(None))):
        config, run = _old_style(
            "run_folds", ("methods", "n_components", "lams", "max_iter", "progress",
                          "train_pairs", "fusion", "experiments", "snorm", "selection",
                          "images", "cnn"),
            (config, *old_args) if config is not None else old_args, old_kwargs,
            progress=progress, train_pairs=train_pairs, experiments=experiments, images=images)
        return run_folds(vectors, pair_index, y, fold, config, **run)
    config = ExperimentConfig() if config is None else config
    fold = np.asarray(fold)
    rotation = FoldRotation(fold, n_train_folds=np.unique(fold).size - 2)
    n = rotation.get_n_splits()
    experiments = range(n) if experiments is None else list(experiments)
    wrong = [e for e in experiments if not (isinstance(e, (int, np.integer)) and 0 <= e < n)]
    if wrong:
        raise ValueError(f"experiments {wrong} out of range: this rotation has {n} "
                         f"experiments, 0 to {n - 1}.")
    results = []
    for e in experiments:
        train_folds, (val_fold,), test_fold = rotation.rotation(e)
        splits = [(pair_index[mask], y[mask])
                  for mask in (np.isin(fold, train_folds), fold == val_fold, fold == test_fold)]
        if train_pairs is not None:
            splits[0] = train_pairs(train_folds, e)
        results.append(run_experiment(
            vectors, splits, config, images=images,
            progress=functools.partial(progress, e) if progress else None))
    return results


def run_lfw_restricted(vectors, pair_index, y, fold, config=None, *old_args, progress=None,
                       experiments=None, **old_kwargs):
    """The LFW View 2 restricted protocol on image vectors (n_images, n_features): one
    :func:`run_experiment` per fold rotation (:func:`run_folds` on the fixed pairs). Returns
    one list of :class:`~metricfit.experiments.evaluation.Result` per experiment."""
    if old_args or old_kwargs or not isinstance(config, (ExperimentConfig, type(None))):
        config, run = _old_style(
            "run_lfw_restricted", ("methods", "n_components", "lams", "max_iter", "progress",
                                   "fusion", "experiments"),
            (config, *old_args) if config is not None else old_args, old_kwargs,
            progress=progress, experiments=experiments)
        return run_lfw_restricted(vectors, pair_index, y, fold, config, **run)
    return run_folds(vectors, pair_index, y, fold, config, progress=progress,
                     experiments=experiments)


DIGITS_CONFIG = ExperimentConfig(n_components=32)
"""The default of :func:`run_digits`: 32 WPCA dimensions (the digits have 64 pixels)."""


def run_digits(vectors, labels, config=None, *old_args, n_repeats=5, progress=None, images=None,
               **old_kwargs):
    """:func:`run_experiment` on ``n_repeats`` random
    :func:`~metricfit.pairs.splits.digits_split` splits of the ``vectors`` (and ``images``,
    for the image methods). ``config``: an :class:`ExperimentConfig` (default
    :data:`DIGITS_CONFIG`; the settings as separate arguments are deprecated). Returns one
    list of Results per repeat."""
    if old_args or old_kwargs or not isinstance(config, (ExperimentConfig, type(None))):
        config, run = _old_style(
            "run_digits", ("methods", "n_components", "lams", "n_repeats", "max_iter",
                           "progress", "fusion", "snorm", "selection", "images", "cnn"),
            (config, *old_args) if config is not None else old_args, old_kwargs,
            n_components=DIGITS_CONFIG.n_components, n_repeats=n_repeats, progress=progress,
            images=images)
        return run_digits(vectors, labels, config, **run)
    config = DIGITS_CONFIG if config is None else config
    experiments = []
    for repeat in range(n_repeats):
        split = digits_split(labels, random_state=repeat)
        splits = [split[name] for name in ("train", "val", "test")]
        experiments.append(run_experiment(
            vectors, splits, config, images=images,
            progress=functools.partial(progress, repeat) if progress else None))
    return experiments
