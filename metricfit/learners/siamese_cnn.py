"""SiameseCNN: the siamese convolutional network of seed 000 (Chopra, Hadsell, LeCun 2005).

A preset of the siamese learners (:class:`~metricfit.learners._siamese.SiameseLearner`, as
TSML, CSML and DDML are): the loss (``_loss_spec``: Q, energy, margin from its parameters), the
score kind, the pair scores and ``fit`` (``SiameseLearner._fit``: validate, start, objective,
optimise, unpack, calibrate) are the family's. Its hooks bring its own: image pairs scaled by
the training pixels' mean and std, the convnet sized from them, the validation pairs
(``validation_data``, held-out identities ``groups``, else a stratified share) that stop SGD
and set the threshold, SGD in epochs inside the training recipe (:mod:`metricfit.cnn`).
"""

import functools
from numbers import Integral, Real
from types import SimpleNamespace

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._validation import Interval, StrOptions
from ..cnn.augment import augment_ranges
from ..cnn.network import check_same_network, network_from_dict
from ..cnn.objective import sgd_recipe
from ..cnn.schedule import SCHEDULES
from ..cnn.threads import n_threads, num_threads
from ..features.images import check_images
from ..losses import ALIASES, PAIR_LOSSES, get_loss
from ..losses.distances import ENERGIES, energy_bound
from ..mappings import ConvNet as ConvNetMapping
from ..objective import make_objective
from ..optim.sgd import steps_per_epoch
from ..pairs import check_pair_labels
from ..pairs.held_out import identity_held_out_split
from ._base import finite_scores, validation_split
from ._siamese import SiameseLearner
from ._solver import SOLVER_CONSTRAINTS
from .persistence import load_estimator, persistable, save_estimator

SAVE_VERSION = 1
"""The file layout :meth:`SiameseCNN.save` writes (``format`` = ``"metricfit.SiameseCNN/1"``,
:mod:`metricfit.learners.persistence`). Bump it when the layout changes and keep a reader for
every older version in ``_restore_fitted``; a newer version than this is refused."""

REQUIRED_ENTRIES = ("params_json", "spec_json", "weights", "threshold", "input_mean",
                    "input_scale", "energy_bound", "n_iter", "epochs", "curves_json")


@persistable
class SiameseCNN(SiameseLearner):
    """Siamese convolutional network trained on image pairs (seed 000).

    Two copies of the network ``G_W`` (C1-S2-C3-S4-C5-F6, section 3.2, sized from the
    images; :mod:`metricfit.cnn.network`) map the images of a pair to ``a, b``; the energy
    ``E = ||a - b||_1`` (eq. 1) is small for the same person. Trained with the loss of eq. 8,
    ``(1 - Y) 2/Q E^2 + Y 2Q exp(-2.77 E / Q)`` (Y = 0 genuine, i.e. ``s = +1``), or with the
    DrLIM contrastive loss, by momentum SGD on balanced mini-batches (the shared solver of
    ``metricfit.learners._solver``) with early stopping on the maxDA of held-out
    validation pairs: of held-out *identities* when ``fit`` is given ``groups``. Options that
    help a convnet carry over to new people: on-the-fly augmentation, weight decay and a
    learning-rate schedule. Pairs are scored by ``-E``.

    Parameters
    ----------
    n_components : int, default=50
        Units of F6, the embedding dimension.
    n_maps : tuple of 3 ints, default=(15, 45, 250)
        Feature maps of C1, C3 and C5.
    kernel_sizes : tuple of 2 ints, default=None
        C1 and C3 kernels; None: (7, 6) as in the paper, (3, 2) for images under 28 pixels.
    loss : str, default='square_exponential'
        Eq. 8 of seed 000, or DrLIM's ``(1 - Y) E^2 / 2 + Y max(0, margin - E)^2 / 2``
        ('contrastive'), or any other pair loss of :data:`metricfit.losses.PAIR_LOSSES`
        ('triangular', 'cosine', 'ddml', 'square_square', 'signature_cosine'): the convnet
        is one mapping of the grid. Pairs are scored as the loss says: ``-E`` for the energy
        losses, the cosine for 'triangular', 'cosine', 'signature_cosine', ``-|a - b|^2`` for
        'ddml'.
    energy : {'l1', 'l2'}, default='l1'
        The norm of ``a - b`` (seed 000 argues for L1; DrLIM uses L2), for the energy losses.
    margin : float, default=None
        Margin of 'contrastive' and 'square_square'; None: Q / 4, Q the bound of the energy
        (2 n_components for L1).
    max_epochs : int, default=30
        Passes over the training pairs (an epoch is ``ceil(n_train / batch_size)`` steps).
    batch_size : int, default=32
        Pairs per SGD step (half genuine, half impostor), i.e. ``2 batch_size`` images.
    learning_rate : float, default=1e-2
    momentum : float, default=0.9
    learning_rate_schedule : {'constant', 'step', 'cosine', 'inverse'}, default='constant'
        Factor of ``learning_rate`` at each step (:mod:`metricfit.cnn.schedule`): 'step'
        divides it by 10 at 50 % and again at 75 % of ``max_epochs``, 'cosine' takes it from
        1 to 0 over ``max_epochs`` (half a cosine), 'inverse' is ``1 / (1 + epochs done)``.
    weight_decay : float, default=0.0
        lambda of ``lambda / 2 ||W||^2`` over the convolution and full-layer weights (not the
        biases or subsampling coefficients), added to the loss of every mini-batch.
    augment : bool or dict, default=False
        On-the-fly augmentation of every training mini-batch
        (:func:`metricfit.cnn.augment.augment_images`): each image of each pair gets its own
        small random shift, scale, rotation and mirror flip, drawn from ``random_state`` (an
        int reproduces the fit bit for bit). True: the default ranges (shift 5 % of the side,
        scale +-10 %, rotation +-10 degrees, flip half the time); a dict sets some of
        ``shift``, ``scale``, ``rotation``, ``flip`` (the rest keep their defaults).
    early_stopping : bool, default=True
        True: return the weights of the epoch with the best validation maxDA, and stop after
        ``n_iter_no_change`` epochs without a better one. False: run all ``max_epochs``
        epochs and return the last epoch's weights (e.g. a recipe whose epoch count was
        chosen on held-out people, refitted on all of them). Then, unless ``validation_data``
        or ``groups`` is given, nothing is held out: every pair trains and ``threshold_`` is
        set on the training pairs (optimistic: see ``threshold_``); with them, the validation
        pairs draw ``curves_['validation']`` and set ``threshold_``, and choose nothing.
    validation_fraction : float, default=0.1
        Share of the pairs held out (stratified) for early stopping; checked every epoch.
        With ``groups`` given to ``fit``: the share of the *identities* held out (at least 2);
        the pairs of two held-out identities validate, the pairs of two others train, pairs
        with one of each are left out.
    n_iter_no_change : int or None, default=8
        Stop after this many epochs without a better validation maxDA (None: never).
    dtype : {'float32', 'float64'}, default='float32'
        Compute dtype (float64 for gradient checks).
    inference_batch_size : int, default=256
        Images per forward pass in :meth:`transform` (bounds memory).
    n_jobs : int or None, default=None
        Threads running the convolution, subsampling and tanh kernels on chunks of each batch
        (:mod:`metricfit.cnn.threads`); None or -1: ``NUMBA_NUM_THREADS`` (all CPUs unless
        that environment variable says otherwise). Results do not depend on it.
    random_state : int, RandomState or None, default=None
        Weights, validation split and mini-batches; an int reproduces a fit bit for bit.
    verbose : int, default=0
        > 0: the cost of the last mini-batch after every epoch.
    callback : callable or None, default=None
        ``callback(params, n_iter)`` after every epoch, with the flat weights in ``dtype``.
    warm_start : bool, default=False
        True: a fit of an already fitted estimator starts from its weights ``params_`` (e.g.
        a model trained on many identities, :meth:`load`-ed, then fine-tuned on a few) and
        keeps its input scaling ``input_mean_``, ``input_scale_`` (the weights are tied to
        it); the images must have the fitted size and the network parameters
        (``n_components``, ``n_maps``, ``kernel_sizes``) must give the fitted network, else
        ValueError. The optimiser state (momentum, schedule, early stopping) starts afresh:
        ``max_epochs`` more epochs, the learning-rate schedule from its start. False, or an
        estimator not yet fitted: new random weights.

    Attributes
    ----------
    params_ : ndarray of shape (n_params,)
        The flat network weights (in ``dtype``).
    network_ : ConvNetwork
        The fitted network's sizes.
    input_shape_ : tuple (height, width)
    input_mean_, input_scale_ : float
        Inputs are fed as ``(x - input_mean_) / input_scale_`` (training pixel mean and std).
    energy_bound_ : float
        Q.
    threshold_ : float
        In score units (``-E``), calibrated for accuracy on the validation pairs (the
        held-out share or ``validation_data``): a convnet can fit its training pairs far
        better than new ones, and a threshold set on them rejects too many new genuine
        pairs (AT&T, DrLIM, split 7: accuracy 0.764 on the test subjects' pairs at a
        threshold set on the training pairs, against a maxDA of 0.953).
        :meth:`calibrate_threshold` sets another.
    n_iter_ : int
        SGD steps taken.
    n_epochs_ : float
        ``n_iter_`` in epochs.
    best_epoch_ : float
        Epoch of the returned weights: the best validation epoch, or the last with
        ``early_stopping=False``.
    curves_ : dict of lists
        ``step``, ``validation`` (maxDA at each check), ``train`` (empty: scoring the
        training pairs would cost a forward pass over them every epoch).
    classes_ : ndarray of shape (2,)
        The coding of the pair labels given to ``fit`` ({-1, +1}, {0, 1} or {False, True});
        ``predict`` answers in it.

    Notes
    -----
    On AT&T (``benchmarks/att_siamese_cnn.py``, 8 disjoint splits of 5 unseen subjects) the
    paper's eq. 8 with the L1 energy fits its 35 training subjects but does not carry over to
    new ones (false rejects 20-26 % at 5-10 % false accepts); ``loss='contrastive',
    energy='l2'`` gives 6-10 %, and with ``augment=True, weight_decay=1e-3,
    learning_rate_schedule='cosine'`` and early stopping on held-out subjects 4.5 / 5.0 /
    7.0 % (Gaussian model); the raw pixels' minimum L1 distance gets 0.5 / 1.5 / 3.0 %.
    Trained on 1512 LFW people (``benchmarks/lfw_siamese_cnn.py``) it rejects 14.5-19.5 %
    of genuine AT&T claims at 5 % false accepts, and 8.5-19.0 % once fine-tuned per split on
    the AT&T training subjects (``warm_start=True``). See ``docs/results/att.md``.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.learners.siamese_cnn import SiameseCNN
    >>> rng = np.random.default_rng(0)
    >>> pairs = rng.normal(size=(40, 2, 12, 10))
    >>> y = np.r_[np.ones(20), -np.ones(20)]
    >>> est = SiameseCNN(n_components=4, n_maps=(2, 3, 8), max_epochs=1, random_state=0)
    >>> est.fit(pairs, y).transform(pairs[:, 0]).shape
    (40, 4)

    References
    ----------
    - Chopra, Hadsell and LeCun, "Learning a Similarity Metric Discriminatively, with Application to
      Face Verification", CVPR 2005 (seed 000).
    """

    _pair_input = "images"

    _parameter_constraints = {
        **{k: SOLVER_CONSTRAINTS[k] for k in (
            "learning_rate", "momentum", "validation_fraction", "n_iter_no_change",
            "random_state", "verbose", "callback", "warm_start")},
        "early_stopping": ["boolean"],
        "n_components": [Interval(Integral, 1, None)],
        "n_maps": ["array-like"],
        "kernel_sizes": ["array-like", None],
        "loss": [StrOptions(set(PAIR_LOSSES) | set(ALIASES))],
        "energy": [StrOptions(set(ENERGIES))],
        "margin": [Interval(Real, 0, None, closed="neither"), None],
        "max_epochs": [Interval(Integral, 1, None)],
        "batch_size": [Interval(Integral, 2, None)],
        "learning_rate_schedule": [StrOptions(set(SCHEDULES))],
        "weight_decay": [Interval(Real, 0, None, closed="left")],
        "augment": ["boolean", dict],
        "dtype": [StrOptions({"float32", "float64"})],
        "inference_batch_size": [Interval(Integral, 1, None)],
        "n_jobs": [Integral, None],
    }

    def __init__(self, n_components=50, *, n_maps=(15, 45, 250), kernel_sizes=None,
                 loss="square_exponential", energy="l1", margin=None, max_epochs=30,
                 batch_size=32, learning_rate=1e-2, momentum=0.9,
                 learning_rate_schedule="constant", weight_decay=0.0, augment=False,
                 early_stopping=True, validation_fraction=0.1, n_iter_no_change=8,
                 dtype="float32",
                 inference_batch_size=256, n_jobs=None, random_state=None, verbose=0,
                 callback=None, warm_start=False):
        self.n_components = n_components
        self.n_maps = n_maps
        self.kernel_sizes = kernel_sizes
        self.loss = loss
        self.energy = energy
        self.margin = margin
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.learning_rate_schedule = learning_rate_schedule
        self.weight_decay = weight_decay
        self.augment = augment
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.dtype = dtype
        self.inference_batch_size = inference_batch_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback
        self.warm_start = warm_start

    # -- fit: validate, size, objective, optimise, unpack ----------------------------------

    def fit(self, pairs, y, validation_data=None, groups=None):
        """Train the network on labelled image pairs; set ``threshold_`` on the validation pairs.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, height, width)
        y : array-like of shape (n_pairs,)
            +1 same person (genuine), -1 different ({0, 1} accepted, 1 = same).
        validation_data : (pairs, y) or None, default=None
            Labelled pairs for early stopping, used instead of holding out
            ``validation_fraction`` of ``pairs`` (then every pair trains). Pairs of identities
            kept out of ``pairs`` make early stopping track verification of unseen people.
        groups : array-like of shape (n_pairs, 2) or None, default=None
            The identity of each image of each pair (any hashable labels). When given (and
            ``validation_data`` is not), early stopping holds out ``validation_fraction`` of
            the identities, drawn with ``random_state``: pairs of two held-out identities
            validate, pairs of two others train, mixed pairs are left out.

        Returns
        -------
        self
        """
        return self._fit(pairs, y, validation_data=validation_data, groups=groups)

    # SiameseLearner._fit's hooks (one generator draws the weights, the split, the batches)

    def _fit_context(self):
        return num_threads(n_threads(self.n_jobs))

    def _check_fit_input(self, pairs, y, validation_data=None, groups=None):
        pairs = self._validate_images(pairs, ndim=4, what="pairs", fitted=False)
        s = check_pair_labels(y, pairs.shape[0], require_both=True)
        augment = augment_ranges(self.augment, pairs.shape[2:])
        return SimpleNamespace(pairs=pairs, s=s, augment=augment,
                               validation_data=validation_data, groups=groups)

    def _mapping_for(self, data):
        return ConvNetMapping(data.pairs.shape[2:], self.n_components, self.n_maps,
                              self.kernel_sizes)

    def _start(self, mapping, data):
        """(the initial weights, no regulariser target); sets the input scaling (kept when
        warm), ``data.inputs`` and ``data.rng`` (of the weights, the split, the batches)."""
        warm = self._warm_params(mapping.network)  # checked before any state changes
        self.input_shape_ = data.pairs.shape[2:]
        if warm is None:
            self.input_mean_ = float(data.pairs.mean())
            self.input_scale_ = float(data.pairs.std()) or 1.0
        data.inputs = self._scaled(data.pairs)
        self.energy_bound_ = float(energy_bound(self.n_components, self.energy))
        data.rng = check_random_state(self.random_state)
        theta0 = mapping.network.init(data.rng)  # drawn when warm too: the same batches follow
        return (theta0 if warm is None else warm), None

    def _warm_params(self, network):
        """A copy (in ``dtype``) of the fitted weights when ``warm_start`` and fitted, else
        None; ValueError unless ``network`` (of the new images and parameters) is fitted's."""
        if not (self.warm_start and hasattr(self, "params_")):
            return None
        check_same_network(network, self.network_, "warm_start=True", self.params_.size)
        return np.array(self.params_, dtype=self.dtype)

    def _hold_out(self, data):
        """``data.train``, ``data.validation`` (scaled) and ``data.held_out`` (as given, for
        the threshold), each ``(pairs, s)``: ``validation_data``, else ``groups``, else a
        stratified share."""
        data.train, data.validation, data.held_out = self._split_pairs(
            data.pairs, data.inputs, data.s, data.validation_data, data.groups)

    def _split_pairs(self, pairs, inputs, s, validation_data, groups):
        if validation_data is not None:
            if len(validation_data) != 2:
                raise ValueError("validation_data must be a (pairs, y) tuple.")
            held_out = self._validate_images(validation_data[0], 4, "validation pairs")
            s_val = check_pair_labels(validation_data[1], held_out.shape[0], require_both=True)
            return (inputs, s), (self._scaled(held_out), s_val), (held_out, s_val)
        if not self.early_stopping and groups is None:
            return (inputs, s), (None, None), (pairs, s)  # every pair trains
        if groups is not None:
            train, validation = identity_held_out_split(
                groups, s, self.validation_fraction, self.random_state)
        else:
            advice = ("Give more pairs, change validation_fraction, pass validation_data, "
                      "or set early_stopping=False (every pair trains).")
            train = validation_split(s, self.validation_fraction, self.random_state, advice)
            validation = ~train
        return ((inputs[train], s[train]), (inputs[validation], s[validation]),
                (pairs[validation], s[validation]))

    def _objective_for(self, mapping, data, reference, loss, params):
        """The siamese objective of the training pairs inside the training recipe
        (augmentation, weight decay, learning-rate schedule); no ``lam`` penalty."""
        train, s_train = data.train
        recipe = sgd_recipe(data.augment, data.rng, self.weight_decay, self.learning_rate_schedule,
                            steps_per_epoch(len(s_train), self.batch_size), self.max_epochs)
        return make_objective(loss, mapping, train.reshape(len(train), 2, -1), s_train,
                              params=params, recipe=recipe)

    def _fit_solver(self, mapping, data):
        """SGD in epochs, batches drawn by ``data.rng``, stopped early on the validation pairs'
        maxDA (if any), best or last weights as ``early_stopping`` says."""
        public = lambda theta: theta.astype(self.dtype)  # noqa: E731
        val, s_val = data.validation
        scorer = None if val is None else functools.partial(self._scorer, mapping, val)
        validation = None if val is None else np.ones(len(s_val), dtype=bool)
        options = self._solver_options(public, scorer, s_val, validation=validation,
                                       solver="sgd", max_epochs=self.max_epochs)
        if val is None or not self.early_stopping:
            options.update(n_iter_no_change=None, restore_best=False)
        return "sgd", dict(options, random_state=data.rng)

    def _unpack_result(self, mapping, result, data):
        self.network_ = mapping.network
        self.params_ = result.x.astype(self.dtype)
        self.n_epochs_, self.best_epoch_ = result.n_epochs, result.best_epoch

    def _threshold_pairs(self, data):
        return data.held_out  # the validation pairs as given (all pairs: none held out)

    def _loss_spec(self):
        """``loss`` with the hyper-parameters it takes, among Q (the bound of the energy of
        ``n_components`` units, ``energy_bound_``), ``energy`` and ``margin`` (None: Q / 4)."""
        bound = float(energy_bound(self.n_components, self.energy))
        margin = bound / 4 if self.margin is None else self.margin
        offered = {"Q": bound, "energy": self.energy, "margin": margin}
        return self.loss, {k: v for k, v in offered.items() if k in get_loss(self.loss).defaults}

    def _scorer(self, mapping, pairs, rows):
        """``theta -> scores`` of the scaled validation pairs ``pairs[rows]`` (gathered once),
        embedded in batches of ``inference_batch_size`` images: the maxDA that stops SGD."""
        chosen = pairs[rows]

        def scores(theta):
            a, b = (mapping.network.transform(theta, chosen[:, k], self.inference_batch_size)
                    for k in (0, 1))
            return self._score_embedded(a, b)
        return scores

    # -- inputs ----------------------------------------------------------------------------

    def _validate_images(self, X, ndim, what, fitted=True):
        """Finite real images of ``ndim`` dims (3: (n, H, W); 4: pairs), in ``dtype``; with
        ``fitted``, of the size the network was fitted on."""
        allowed = ndim if isinstance(ndim, tuple) else (ndim,)
        if np.ndim(X) not in allowed:
            shapes = {3: "(n_images, height, width)", 4: "(n_pairs, 2, height, width)"}
            accepted = " or ".join(shapes[d] for d in allowed)
            raise ValueError(f"{what} must have shape {accepted}, got an array of shape "
                             f"{np.shape(X)}.")
        X = check_images(X, what=what, dtype=self.dtype)
        expected = self.input_shape_ if fitted else X.shape[-2:]
        if tuple(X.shape[-2:]) != tuple(expected):
            raise ValueError(f"{what} are {X.shape[-2]}x{X.shape[-1]} images, but the network "
                             f"was fitted on {expected[0]}x{expected[1]} images.")
        return X

    def _scaled(self, X):
        return ((X - self.input_mean_) / self.input_scale_).astype(self.dtype, copy=False)

    def _check_pairs(self, pairs):
        check_is_fitted(self)
        return self._validate_images(pairs, ndim=4, what="pairs")

    # -- the learned map and scores --------------------------------------------------------

    def transform(self, X):
        """Embeddings ``G_W(X)``: images (n, H, W) -> (n, k); pairs (n, 2, H, W) -> (n, 2, k).
        Runs in batches of ``inference_batch_size`` images."""
        check_is_fitted(self)
        return self._embed(self._validate_images(X, ndim=(3, 4), what="X"))

    def _embed(self, X):
        """Embeddings of validated images (..., H, W) -> (..., k)."""
        flat = self._scaled(X.reshape(-1, *X.shape[-2:]))
        with num_threads(n_threads(self.n_jobs)):
            Z = self.network_.transform(self.params_, flat, self.inference_batch_size)
        return Z.reshape(*X.shape[:-2], -1)

    def pair_distance(self, pairs):
        """``-pair_score``: for the energy losses the energy ``E = ||G(x1) - G(x2)||`` of each
        pair (seed 000 eq. 1), shape (n,)."""
        return -self.pair_score(pairs)

    def pair_score(self, pairs):
        """The loss's score of each pair (``-E`` for the energy losses): higher means more
        similar, shape (n,)."""
        pairs = self._check_pairs(pairs)
        embedded = self._embed(pairs)  # (n, 2, k)
        return finite_scores(self._score_embedded(embedded[:, 0], embedded[:, 1]), pairs)

    # -- persistence: arrays and JSON, no pickled code (learners/persistence.py) -----------

    _save_version = SAVE_VERSION
    _saved_entries = REQUIRED_ENTRIES

    def save(self, path):
        """Write the fitted model to an ``.npz`` of arrays (weights, scalars, JSON strings)."""
        check_is_fitted(self)
        save_estimator(self, path)

    @classmethod
    def load(cls, path):
        """A fitted :class:`SiameseCNN` from :meth:`save`'s file (``allow_pickle=False``).

        Reads every file format version up to ``SAVE_VERSION``; a file of a newer version (from
        a newer metricfit), of an unknown version or not from :meth:`save` raises ValueError.
        So does any damage: not an .npz, truncated, a missing entry, an entry that is not valid
        JSON or not a number, weights that do not fit the network; each message names the file.
        A missing file is FileNotFoundError.
        """
        return load_estimator(path, cls)

    def _fitted_entries(self):
        return dict(spec_json=self.network_.spec.to_dict(), weights=self.params_,
                    threshold=self.threshold_, classes=self.classes_,
                    input_mean=self.input_mean_, input_scale=self.input_scale_,
                    energy_bound=self.energy_bound_, n_iter=self.n_iter_,
                    epochs=np.array([self.n_epochs_, self.best_epoch_]),
                    curves_json=self.curves_)

    def _restore_fitted(self, saved):
        self.network_ = _saved_network(saved)
        self.params_ = saved.floats("weights", self.network_.n_params,
                                    "the network of 'spec_json'")
        self.threshold_ = saved.number("threshold", finite=False)
        self.classes_ = saved.array("classes", (2,)) if "classes" in saved \
            else np.array([-1, 1])
        self.input_mean_ = saved.number("input_mean")
        self.input_scale_ = saved.number("input_scale")
        self.energy_bound_ = saved.number("energy_bound")
        self.n_iter_ = int(saved.number("n_iter"))
        self.n_epochs_, self.best_epoch_ = (float(v) for v in saved.array("epochs", (2,)))
        self.curves_ = saved.json("curves_json")
        self.input_shape_ = self.network_.spec.input_shape


def _saved_network(saved):
    """The network of ``spec_json``, else ValueError naming the file."""
    try:
        return network_from_dict(saved.json("spec_json"))
    except ValueError as error:
        raise saved.fail("spec_json", str(error)) from None
