"""SiameseCNN: the siamese convolutional network of seed 000 (Chopra, Hadsell, LeCun 2005).

``fit`` reads like the method: validate, size the network from the images, build the siamese
objective (:mod:`metricfit.cnn`), run momentum SGD with a validation split and early stopping
(:func:`metricfit.optim.minimize_sgd`), unpack, calibrate the threshold on the validation pairs.
"""

import json
import sys
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._version import __version__
from .._validation import Interval, StrOptions, validate_params
from ..cnn import ConvNet, NetworkSpec, energy_bound, num_threads
from ..cnn.loss import ENERGIES
from ..features._images import check_images
from ..losses import ALIASES, PAIR_LOSSES, get_loss
from ..mappings import ConvNet as ConvNetMapping
from ..objective import make_objective
from ..optim import minimize
from ..pairs import check_pair_labels
from ._base import PairLearnerMixin, finite_scores, validation_accuracy, validation_split

SAVE_FORMAT = "metricfit.SiameseCNN"
SAVE_VERSION = 1
"""The file layout :meth:`SiameseCNN.save` writes (``format`` = ``"metricfit.SiameseCNN/1"``).
Bump it when the layout changes and keep a reader for every older version in
:meth:`SiameseCNN.load`; a newer version than this is refused with a clear error."""


class SiameseCNN(PairLearnerMixin, BaseEstimator):
    """Siamese convolutional network trained on image pairs (seed 000).

    Two copies of the network ``G_W`` (C1-S2-C3-S4-C5-F6, section 3.2, sized from the
    images; :mod:`metricfit.cnn.network`) map the images of a pair to ``a, b``; the energy
    ``E = ||a - b||_1`` (eq. 1) is small for the same person. Trained with the loss of eq. 8,
    ``(1 - Y) 2/Q E^2 + Y 2Q exp(-2.77 E / Q)`` (Y = 0 genuine, i.e. ``s = +1``), or with the
    DrLIM contrastive loss, by momentum SGD on balanced mini-batches with early stopping on
    the maxDA of a held-out validation split. Pairs are scored by ``-E``.

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
    validation_fraction : float, default=0.1
        Share of the pairs held out (stratified) for early stopping; checked every epoch.
    n_iter_no_change : int or None, default=8
        Stop after this many epochs without a better validation maxDA (None: never).
    dtype : {'float32', 'float64'}, default='float32'
        Compute dtype (float64 for gradient checks).
    inference_batch_size : int, default=256
        Images per forward pass in :meth:`transform` (bounds memory).
    n_jobs : int or None, default=None
        Threads running the convolution, subsampling and tanh kernels on chunks of each batch
        (:mod:`metricfit.cnn._threads`); None or -1: ``NUMBA_NUM_THREADS`` (all CPUs unless
        that environment variable says otherwise). Results do not depend on it.
    random_state : int, RandomState or None, default=None
        Weights, validation split and mini-batches; an int reproduces a fit bit for bit.
    verbose : int, default=0
        > 0: a progress bar per epoch and the validation maxDA.

    Attributes
    ----------
    params_ : ndarray of shape (n_params,)
        The flat network weights (in ``dtype``).
    network_ : ConvNet
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
        Epoch of the returned (best validation) weights.
    curves_ : dict of lists
        ``step``, ``validation`` (maxDA at each check), ``train`` (empty).
    classes_ : ndarray of shape (2,)
        The coding of the pair labels given to ``fit`` ({-1, +1}, {0, 1} or {False, True});
        ``predict`` answers in it.

    Notes
    -----
    On AT&T (``benchmarks/att_siamese_cnn.py``, 8 disjoint splits of 5 unseen subjects) the
    paper's eq. 8 with the L1 energy fits its 35 training subjects but does not carry over to
    new ones (false rejects 20-26 % at 5-10 % false accepts); ``loss='contrastive',
    energy='l2'`` gives 6-10 %. See the README.

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
    """

    @property
    def _score_kind(self):
        kind = getattr(get_loss(self.loss), "SCORE_KIND", "")
        return "cosine" if kind == "cosine" else "distance"

    _pair_input = "images"

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None)],
        "n_maps": ["array-like"],
        "kernel_sizes": ["array-like", None],
        "loss": [StrOptions(set(PAIR_LOSSES) | set(ALIASES))],
        "energy": [StrOptions(set(ENERGIES))],
        "margin": [Interval(Real, 0, None, closed="neither"), None],
        "max_epochs": [Interval(Integral, 1, None)],
        "batch_size": [Interval(Integral, 2, None)],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None), None],
        "dtype": [StrOptions({"float32", "float64"})],
        "inference_batch_size": [Interval(Integral, 1, None)],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0, None), "boolean"],
    }

    def __init__(self, n_components=50, *, n_maps=(15, 45, 250), kernel_sizes=None,
                 loss="square_exponential", energy="l1", margin=None, max_epochs=30,
                 batch_size=32, learning_rate=1e-2, momentum=0.9, validation_fraction=0.1,
                 n_iter_no_change=8, dtype="float32", inference_batch_size=256, n_jobs=None,
                 random_state=None, verbose=0):
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
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.dtype = dtype
        self.inference_batch_size = inference_batch_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # -- fit: validate, size, objective, optimise, unpack ----------------------------------

    def fit(self, pairs, y, validation_data=None):
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

        Returns
        -------
        self
        """
        validate_params(self)
        with num_threads(self._threads()):
            return self._fit(pairs, y, validation_data)

    def _threads(self):
        if self.n_jobs is not None and self.n_jobs != -1 and self.n_jobs < 1:
            raise ValueError(f"n_jobs must be None, -1 or >= 1, got {self.n_jobs}.")
        return None if self.n_jobs in (None, -1) else self.n_jobs

    def _fit(self, pairs, y, validation_data):
        pairs = self._validate_images(pairs, ndim=4, what="pairs", fitted=False)
        s = check_pair_labels(y, pairs.shape[0], require_both=True)
        self.input_shape_ = pairs.shape[2:]
        self.input_mean_, self.input_scale_ = float(pairs.mean()), float(pairs.std()) or 1.0
        inputs = self._scaled(pairs)
        mapping = ConvNetMapping(self.input_shape_, self.n_components, self.n_maps,
                                 self.kernel_sizes)
        network = mapping.network
        self.energy_bound_ = float(energy_bound(self.n_components, self.energy))
        rng = check_random_state(self.random_state)
        theta0 = network.init(rng)
        (train, s_train), validation, held_out = self._split(pairs, inputs, s, validation_data)
        objective = make_objective(self.loss, mapping, train.reshape(len(train), 2, -1),
                                   s_train, params=self._loss_params())
        steps = -(-len(s_train) // self.batch_size)  # one epoch
        progress = _Progress(type(self).__name__, steps, self.max_epochs, self.verbose)
        result = minimize(
            progress.wrap(objective), theta0, solver="sgd", max_iter=self.max_epochs * steps,
            learning_rate=self.learning_rate, momentum=self.momentum, batch_size=self.batch_size,
            check_every=steps, n_iter_no_change=self.n_iter_no_change, random_state=rng,
            validation=progress.report(self._validation_score(network, *validation)))
        self.network_ = network
        self.params_ = result.x.astype(self.dtype)
        self.n_iter_, self.curves_ = int(result.nit), result.curves
        self.n_epochs_, self.best_epoch_ = result.nit / steps, result.best_step / steps
        return self.calibrate_threshold(*held_out)._adopt_coding(y)

    def _split(self, pairs, inputs, s, validation_data):
        """``(train, validation, held_out)``, each ``(pairs, s)``: training and validation
        pairs scaled for the network, and the validation pairs as given (for the threshold).
        A stratified hold-out of ``pairs``, or all of them and ``validation_data``."""
        if validation_data is None:
            train = validation_split(s, self.validation_fraction, self.random_state)
            return ((inputs[train], s[train]), (inputs[~train], s[~train]),
                    (pairs[~train], s[~train]))
        if len(validation_data) != 2:
            raise ValueError("validation_data must be a (pairs, y) tuple.")
        held_out = self._validate_images(validation_data[0], ndim=4, what="validation pairs")
        s_val = check_pair_labels(validation_data[1], held_out.shape[0], require_both=True)
        return (inputs, s), (self._scaled(held_out), s_val), (held_out, s_val)

    def _loss_params(self):
        """The hyper-parameters the loss takes, among Q, energy and margin (None: Q / 4)."""
        margin = self.energy_bound_ / 4 if self.margin is None else self.margin
        offered = {"Q": self.energy_bound_, "energy": self.energy, "margin": margin}
        return {k: v for k, v in offered.items() if k in get_loss(self.loss).DEFAULTS}

    def _pair_scores(self, a, b):
        return get_loss(self.loss).pair_score(a, b, **self._loss_params())

    def _validation_score(self, network, pairs, s):
        """maxDA of ``-E`` on the held-out pairs, as a function of theta."""
        def score(theta):
            a, b = (network.transform(theta, pairs[:, k], self.inference_batch_size)
                    for k in (0, 1))
            return validation_accuracy(s, self._pair_scores(a, b))
        return score

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
        with num_threads(self._threads()):
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
        return finite_scores(self._pair_scores(embedded[:, 0], embedded[:, 1]), pairs)

    # -- persistence: arrays and JSON, no pickled code -------------------------------------

    def save(self, path):
        """Write the fitted model to an ``.npz`` of arrays (weights, scalars, JSON strings)."""
        check_is_fitted(self)
        params = self.get_params()
        if not isinstance(params["random_state"], (Integral, type(None))):
            params["random_state"] = None  # a RandomState object is not data
        np.savez(path, format=np.array(f"{SAVE_FORMAT}/{SAVE_VERSION}"),
                 metricfit_version=np.array(__version__),
                 params_json=np.array(json.dumps(params)),
                 spec_json=np.array(json.dumps(self.network_.spec.to_dict())),
                 weights=self.params_, threshold=self.threshold_, classes=self.classes_,
                 input_mean=self.input_mean_, input_scale=self.input_scale_,
                 energy_bound=self.energy_bound_, n_iter=self.n_iter_,
                 epochs=np.array([self.n_epochs_, self.best_epoch_]),
                 curves_json=np.array(json.dumps(self.curves_)))

    @classmethod
    def load(cls, path):
        """A fitted :class:`SiameseCNN` from :meth:`save`'s file (``allow_pickle=False``).

        Reads every file format version up to ``SAVE_VERSION``; a file of a newer version (from
        a newer metricfit), of an unknown version or not from :meth:`save` raises ValueError.
        """
        with np.load(path, allow_pickle=False) as f:
            _check_save_format(f, path)
            params = json.loads(str(f["params_json"]))
            est = cls(**{k: _tuples(v) for k, v in params.items()})
            est.network_ = ConvNet(NetworkSpec.from_dict(json.loads(str(f["spec_json"]))))
            est.params_ = f["weights"]
            est.threshold_ = float(f["threshold"])
            est.classes_ = f["classes"] if "classes" in f else np.array([-1, 1])
            est.input_mean_, est.input_scale_ = float(f["input_mean"]), float(f["input_scale"])
            est.energy_bound_, est.n_iter_ = float(f["energy_bound"]), int(f["n_iter"])
            est.n_epochs_, est.best_epoch_ = (float(v) for v in f["epochs"])
            est.curves_ = json.loads(str(f["curves_json"]))
        est.input_shape_ = est.network_.spec.input_shape
        return est


def _check_save_format(f, path):
    """The ``format`` entry of a saved model: ``"metricfit.SiameseCNN/<version>"``."""
    fmt = str(f["format"]) if "format" in f.files else ""
    name, _, version = fmt.partition("/")
    if name != SAVE_FORMAT:
        raise ValueError(f"{path} is not a {SAVE_FORMAT} file from SiameseCNN.save "
                         f"(format entry {fmt!r}).")
    if not version.isdigit() or int(version) < 1:
        raise ValueError(f"{path}: unknown {SAVE_FORMAT} format version {version!r}; this "
                         f"metricfit ({__version__}) reads versions 1 to {SAVE_VERSION}.")
    if int(version) > SAVE_VERSION:
        written_by = str(f["metricfit_version"]) if "metricfit_version" in f.files else "?"
        raise ValueError(f"{path} was saved in {SAVE_FORMAT} format version {version} (by "
                         f"metricfit {written_by}); this metricfit ({__version__}) reads "
                         f"versions 1 to {SAVE_VERSION}: upgrade metricfit to load it.")
    missing = {"params_json", "spec_json", "weights", "threshold"} - set(f.files)
    if missing:
        raise ValueError(f"{path} lacks the entries {sorted(missing)} of format version "
                         f"{version}.")


def _tuples(value):
    """JSON lists back to the tuples they were saved from (nested too)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


class _Progress:
    """Text progress bar of the SGD steps of each epoch, then the epoch's validation maxDA."""

    width = 30

    def __init__(self, name, steps, epochs, verbose, stream=None):
        self.name, self.steps, self.epochs, self.verbose = name, steps, epochs, verbose
        self.stream = stream or sys.stdout
        self.step, self.losses = 0, []

    def wrap(self, objective):
        """``objective`` itself, or (verbose) a twin whose mini-batch calls draw the bar."""
        return _Counted(objective, self) if self.verbose else objective

    def tick(self, J):
        self.step += 1
        self.losses.append(J)
        done = (self.step - 1) % self.steps + 1
        bar = "#" * (self.width * done // self.steps)
        epoch = (self.step - 1) // self.steps + 1
        self.stream.write(f"\r[{self.name}] epoch {epoch}/{self.epochs} "
                          f"[{bar:<{self.width}}] loss {np.mean(self.losses):.4f}")
        self.stream.flush()

    def report(self, score):
        """``score`` itself, or (verbose) a twin that ends the epoch's line with its value."""
        if not self.verbose:
            return score

        def reported(theta):
            value = score(theta)
            if self.step:
                self.stream.write(f"  val maxDA {value:.4f}\n")
                self.losses = []
            return value

        return reported


class _Counted:
    """The batch protocol of ``objective``, with each mini-batch reported to ``progress``."""

    def __init__(self, objective, progress):
        self.objective, self.progress = objective, progress
        self.n_pairs, self.labels = objective.n_pairs, objective.labels

    def batch(self, theta, rows):
        J, G = self.objective.batch(theta, rows)
        self.progress.tick(J)
        return J, G

    def __call__(self, theta):
        return self.objective(theta)
