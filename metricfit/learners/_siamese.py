"""The siamese learners: a mapping x a pair loss x an optimizer (ARCHITECTURE.md, seed 004
Fig. 1).

``fit`` reads like the method: validate, choose the start and the regulariser's target, build
the objective, optimise, unpack. The learner never asks which mapping or which kind of pairs it
has: :func:`metricfit.mappings.make_mapping` turns the ``mapping`` parameter into a mapping,
:func:`metricfit.objective.make_objective` chooses the fast path (a linear map with a loss's
prepared algebra, index pairs) or the generic composition, and the mapping says how its fitted
parameters are exposed (``components_`` for ``Linear``, ``params_`` otherwise).

:class:`Siamese` names any cell of the grid, ``Siamese(loss=..., mapping=..., solver=...)``;
:class:`~metricfit.TSML`, :class:`~metricfit.CSML` and :class:`~metricfit.DDML` are its
presets (the loss fixed, their hyper-parameters explicit).
"""

import contextlib
import functools
from numbers import Integral, Real
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from .._numba_target import warn_if_narrower
from .._validation import Interval, StrOptions, validate_params
from ..losses import ALIASES as LOSS_ALIASES
from ..losses import PAIR_LOSSES, get_loss, loss_params
from ..mappings import MAPPINGS, Mapping, l2_normalize, make_mapping
from ..objective import make_objective
from ..optim import minimize
from ..pairs import check_pair_labels, check_points_or_pairs
from ..pairs.index import check_pair_input, map_pair_vectors, pairs_as_given, score_pairs
from ..pairs.tags import score_kind
from ..whitening import WCCN
from ._base import FittedMappingMixin, PairLearnerMixin, rowwise
from ._params_doc import SIAMESE_ATTRIBUTES, SIAMESE_PARAMETERS
from ._solver import DEFAULT_MAX_ITER, N_TRAIN_SCORE_PAIRS, SOLVER_CONSTRAINTS, SolverMixin
from ._xp import device_namespace, fit_siamese_on_device, pair_score_on_device, transform_on_device

__all__ = ["SiameseLearner", "Siamese", "DEFAULT_MAX_ITER", "N_TRAIN_SCORE_PAIRS"]


def _rows(pairs, mask):
    """``pairs[mask]``, without a copy when every pair is kept."""
    return pairs if mask.all() else pairs[mask]


class _Transformer:
    """``init`` constraint: a transformer with ``components_`` (fitted) or ``fit``."""

    def is_satisfied_by(self, value):
        return hasattr(value, "components_") or hasattr(value, "fit")

    def __str__(self):
        return "a transformer with components_ or fit"


class SiameseLearner(SolverMixin, FittedMappingMixin, PairLearnerMixin, BaseEstimator):
    """Base of the learners built on one mapping, one pair loss and one optimizer.

    Subclasses name their loss through ``_loss_spec() -> (name or PairLoss, params)``.

    Threads: the linear losses' fused kernels and BLAS run on ``metricfit.get_threads()``
    threads (a :func:`metricfit.threads` block, :func:`metricfit.set_threads` or
    ``METRICFIT_NUM_THREADS``); the kernels give the same bits on any number of them (BLAS
    may round differently at another thread count).

    Examples
    --------
    A preset is a subclass naming its loss (as :class:`~metricfit.learners.TSML` does); it
    learns what :class:`Siamese` learns with that loss:

    >>> import numpy as np
    >>> from metricfit.learners import Siamese
    >>> from metricfit.learners._siamese import SiameseLearner
    >>> class Contrastive(SiameseLearner):
    ...     def _loss_spec(self):
    ...         return "contrastive", {"margin": 2.0}
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2, 5))
    >>> X[:20, 1] = X[:20, 0] + 0.1 * rng.normal(size=(20, 5))
    >>> y = np.r_[np.ones(20), -np.ones(20)]
    >>> preset = Contrastive(n_components=2).fit(X, y)
    >>> same = Siamese(loss="contrastive", loss_params={"margin": 2.0}, n_components=2)
    >>> bool(np.allclose(preset.transform(X[:, 0]), same.fit(X, y).transform(X[:, 0])))
    True
    >>> from metricfit.pairs.tags import score_kind
    >>> preset.components_.shape, score_kind(preset), preset.score(X, y)
    ((2, 5), 'distance', 1.0)
    """

    _parameter_constraints = {
        **SOLVER_CONSTRAINTS,
        "n_components": [Interval(Integral, 1, None), None],
        "mapping": [StrOptions(set(MAPPINGS)), Mapping],
        "n_hidden": [Interval(Integral, 1, None), None],
        "normalize": ["boolean"],
        "init": [StrOptions({"auto", "identity", "wccn"}), "array-like", _Transformer()],
        "lam": [Interval(Real, 0, None)],
        "similar_only": ["boolean"],
        "preprocessor": ["array-like", None],
    }

    def __init__(self, n_components=None, *, mapping="linear", n_hidden=None, normalize=False,
                 init="auto", lam=1e-3, similar_only=False, solver="lbfgs", max_iter=None,
                 tol=1e-5, learning_rate=1e-3, momentum=0.9, batch_size=32,
                 validation_fraction=0.1, validation_interval=100, n_iter_no_change=20,
                 random_state=None, verbose=0, warm_start=False, callback=None,
                 preprocessor=None):
        self.n_components = n_components
        self.mapping = mapping
        self.n_hidden = n_hidden
        self.normalize = normalize
        self.init = init
        self.lam = lam
        self.similar_only = similar_only
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.batch_size = batch_size
        self.validation_fraction = validation_fraction
        self.validation_interval = validation_interval
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.callback = callback
        self.preprocessor = preprocessor

    def _loss_spec(self):
        raise NotImplementedError

    def _loss(self):
        """(the declared loss, :class:`~metricfit.losses.PairLoss`, its hyper-parameters),
        checked."""
        name, params = self._loss_spec()
        loss = get_loss(name)
        return loss, loss_params(loss, params)

    def __metricfit_tags__(self):
        """The score kind: 'cosine' for a loss that scores by the cosine, else 'distance'
        (how MkNN, the back-end and the applications read the scores)."""
        tags = super().__metricfit_tags__()
        tags.score_kind = "cosine" if self._loss()[0].score_kind == "cosine" else "distance"
        return tags

    # -- fit: validate, start, objective, optimise, unpack ---------------------------------

    def fit(self, pairs, y):
        """Learn the mapping from labelled pairs, then calibrate ``threshold_`` on them.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2)
            Vector pairs, or integer index pairs into the points of ``preprocessor`` (the
            same fit, without the (n_pairs, 2, n_features) array).
        y : array-like of shape (n_pairs,)
            +1 similar, -1 dissimilar ({0, 1} accepted, 1 = similar). Both classes are
            needed (the threshold is calibrated on all pairs, also when ``similar_only``).

        Returns
        -------
        self
        """
        return self._fit(pairs, y)

    def _fit(self, pairs, y, **fit_params):
        """The one fit of the family: validate, start, objective, optimise, unpack, calibrate.

        Each step is a hook a preset may override (``SiameseCNN``: image pairs, input
        scaling, held-out validation pairs, its training recipe); ``fit_params`` go to
        :meth:`_check_fit_input`. ``data`` carries what the steps share (a namespace the
        hooks fill: the validated pairs and labels, the inputs, the train/validation rows).
        """
        validate_params(self)
        xp = self._device_namespace(pairs, y)  # None: NumPy, the numba path
        if xp is not None:
            return fit_siamese_on_device(self, xp, pairs, y)
        with self._fit_context():
            warn_if_narrower(stacklevel=4)  # once a process: the caller of fit
            loss, params = self._loss()
            data = self._check_fit_input(pairs, y, **fit_params)
            mapping = self._mapping_for(data)
            start, reference = self._start(mapping, data)
            self._hold_out(data)
            objective = self._objective_for(mapping, data, reference, loss, params)
            result = self._minimize(objective, start, *self._fit_solver(mapping, data))
            self._unpack_result(mapping, result, data)
            return self.calibrate_threshold(*self._threshold_pairs(data))._adopt_coding(y)

    def _device_namespace(self, pairs, y=None, names=("pairs", "y"), with_points=True):
        """The array namespace of a call with array-API dispatch on (torch, CuPy: see
        :mod:`metricfit.learners._xp`), or None for NumPy input. Presets with their own input
        hooks (SiameseCNN) compute on NumPy only."""
        xp = device_namespace(self, pairs, y, names, with_points)
        if xp is not None and type(self)._check_fit_input is not SiameseLearner._check_fit_input:
            raise ValueError(f"{type(self).__name__} computes on NumPy arrays; array-API "
                             f"dispatch covers TSML, CSML, DDML, Siamese (linear) and LDML.")
        return xp

    def _fit_context(self):
        """The context ``fit`` runs in (none here; SiameseCNN: its thread count)."""
        return contextlib.nullcontext()

    def _check_fit_input(self, pairs, y):
        """``data`` with the validated ``pairs`` (vectors or index pairs), labels ``s`` in
        {-1, +1}, the (normalised) ``inputs`` and the ``train``, ``validation`` masks of the
        solver's split (drawn here: the start may be fitted on the training rows)."""
        pairs = check_pair_input(pairs, self.preprocessor,
                                 reject_zero=score_kind(self) == "cosine" or self.normalize)
        s = check_pair_labels(y, pairs.shape[0], require_both=True)
        self.n_features_in_ = pairs.shape[2]
        inputs = self._normalised(pairs)
        train, validation = self._split(s)
        return SimpleNamespace(pairs=pairs, s=s, inputs=inputs, train=train,
                               validation=validation)

    def _mapping_for(self, data):
        return make_mapping(self.mapping, self.n_features_in_, self.n_components,
                            self.n_hidden)

    def _start(self, mapping, data):
        """(start, the regulariser's target): :meth:`_initial_params` on the training rows,
        or the fitted parameters when warm."""
        train = data.train
        theta0, reference = self._initial_params(mapping, _rows(data.inputs, train),
                                                 data.s[train], data.pairs.dtype)
        return (self._theta() if self._warm(mapping) else theta0), reference

    def _hold_out(self, data):
        """Validation pairs drawn after the start (none here: the split is drawn in
        :meth:`_check_fit_input`, before the start that may be fitted on the training
        rows)."""

    def _objective_for(self, mapping, data, reference, loss, params):
        """The objective of the training pairs (the similar ones only when
        ``similar_only``), with the ``lam`` penalty towards ``reference``."""
        fitted = data.train & (data.s == 1) if self.similar_only else data.train
        return make_objective(loss, mapping, _rows(data.inputs, fitted), data.s[fitted],
                              self.lam, reference, params)

    def _fit_solver(self, mapping, data):
        """(solver, its options): the validation maxDA and training curve scored by
        :meth:`_scorer`."""
        scorer = functools.partial(self._scorer, mapping, data.inputs)
        return self.solver, self._solver_options(mapping.as_attribute, scorer, data.s,
                                                 data.train, data.validation)

    def _unpack_result(self, mapping, result, data):
        self._unpack(mapping, result.x.astype(data.pairs.dtype))

    def _threshold_pairs(self, data):
        """(pairs, s) that calibrate ``threshold_``: every pair, as given."""
        return pairs_as_given(data.pairs), data.s

    def _minimize(self, objective, start, solver, options):
        """The solver's result on ``objective`` from ``start`` (the convergence warning given),
        its step count and curves recorded as ``n_iter_``, ``curves_``: what every preset's fit
        shares between building its objective and unpacking the weights."""
        result = minimize(objective, start, solver=solver, **options)
        self._warn_if_failed(result, solver=solver)
        self.n_iter_ = int(result.nit)
        self.curves_ = getattr(result, "curves", None)
        return result

    def _warm(self, mapping):
        """Warm start only from a previous fit of the same mapping and sizes."""
        return self.warm_start and repr(getattr(self, "mapping_", None)) == repr(mapping)

    def _normalised(self, X):
        return map_pair_vectors(l2_normalize, X) if self.normalize else X

    def _initial_params(self, mapping, pairs, s, dtype):
        """(start, regulariser target). 'auto': the mapping's own start (linear: identity
        rows, the target too, seed 002 eq. 9; others: Glorot-uniform, seed 004 eq. 13, target
        0, i.e. weight decay). 'identity', 'wccn' (matrix mappings) and arrays are both start
        and target. A transformer: its ``components_`` (k, d), fitted here on the training
        pairs and labels (a clone) if it has none yet."""
        init = self.init
        if _Transformer().is_satisfied_by(init) and not hasattr(init, "__array__"):
            if not hasattr(init, "components_"):
                init = clone(init).fit(pairs, s)
            theta0 = self._array_init(mapping, init.components_).astype(dtype)
            return theta0, theta0
        if isinstance(init, str) and init == "auto":
            theta0 = mapping.init(self.random_state).astype(dtype)
            return theta0, (theta0 if mapping.regularise_towards_init else np.zeros_like(theta0))
        if isinstance(init, str) and not mapping.is_matrix:
            raise ValueError(f"init={init!r} needs mapping='linear'; use 'auto' or an array.")
        if isinstance(init, str) and init == "identity":
            theta0 = mapping.init()
        elif isinstance(init, str):  # 'wccn': each similar pair a class (seed 002 III.D)
            wccn = WCCN(n_components=mapping.n_components)
            try:
                wccn = wccn.fit(pairs, s)  # vector or index pairs
            except ValueError:  # WCCN's advice names WCCN's parameters, not this learner's
                raise ValueError(
                    f"init='wccn': the within-class covariance of the {int(np.sum(s == 1))} "
                    f"similar pairs is singular in {mapping.n_features} features. Use "
                    "init='identity', more similar pairs, or fewer features (e.g. WPCA "
                    "first).") from None
            theta0 = wccn.components_.ravel()
        else:
            theta0 = self._array_init(mapping)
        theta0 = theta0.astype(dtype)
        return theta0, theta0

    def _array_init(self, mapping, init=None):
        A0 = np.asarray(self.init if init is None else init, dtype=np.float64)
        expected = np.shape(mapping.as_attribute(np.zeros(mapping.n_params)))
        if A0.shape != expected and mapping.is_matrix:
            raise ValueError(f"init must have shape (n_components, n_features) = {expected}, "
                             f"got {A0.shape}.")
        if A0.shape != expected:
            raise ValueError(f"init must be a flat parameter vector of length {mapping.n_params} "
                             f"for mapping={self.mapping!r}, got shape {A0.shape}.")
        if not np.isfinite(A0).all():
            raise ValueError("init contains NaN or infinity.")
        return A0.ravel()

    def _scorer(self, mapping, inputs, rows):
        """``theta -> scores`` of the pairs ``inputs[rows]`` (gathered once)."""
        pairs = inputs[rows]
        return lambda theta: self._embedded_scores(mapping, theta, pairs)

    # -- the learned map and scores --------------------------------------------------------

    def transform(self, X):
        """Map points (n, d) -> (n, k) or pairs (n, 2, d) -> (n, 2, k) through the mapping."""
        check_is_fitted(self)
        xp = self._device_namespace(X, names=("X", "y"), with_points=False)
        if xp is not None:  # the input's namespace and device
            return transform_on_device(self, xp, X)
        X = check_points_or_pairs(X, n_features=self.n_features_in_)
        return self._map(self._normalised(X))

    def pair_score(self, pairs):
        """Similarity of each pair in the learned space (higher = more similar), as the loss
        scores it; array-API input: an array of its namespace and device."""
        check_is_fitted(self)
        xp = self._device_namespace(pairs)
        if xp is not None:
            return pair_score_on_device(self, xp, pairs)
        return super().pair_score(pairs)

    def _score_embedded(self, a, b):
        loss, params = self._loss()
        return loss.pair_score(a, b, **params)

    def _embedded_scores(self, mapping, theta, pairs):
        return score_pairs(rowwise(mapping, theta), self._score_embedded, pairs)


_LOSS_NAMES = ",\n        ".join(f"'{name}'" for name in PAIR_LOSSES)


class Siamese(SiameseLearner):
    __doc__ = f"""Any siamese metric learner: a pair loss x a mapping x a solver (seed 004 Fig. 1).

    Two copies of one mapping ``f(., W)`` turn each pair into ``a = f(x)``, ``b = f(y)``; the
    mean pair loss ``J(a, b, s)`` plus ``lam/2 |W - W0|^2`` is minimised by L-BFGS or momentum
    SGD. ``TSML``, ``CSML`` and ``DDML`` are presets of it; every other cell of the grid is one
    line, e.g. ``Siamese(loss='contrastive', mapping='mlp', solver='sgd')`` (DrLIM) or
    ``Siamese(loss='square_exponential', mapping=ConvNet((8, 8), 10))`` (seed 000 on
    flattened 8x8 images). Pairs are scored as the loss says (``metricfit.losses.<loss>.
    pair_score``): the cosine for the triangular and cosine losses, minus the squared
    distance for DDML, minus the energy E for the energy losses.

    Parameters
    ----------
    loss : str or PairLoss, default='triangular'
        One of {_LOSS_NAMES} (aliases {', '.join(LOSS_ALIASES)}), or a declared loss
        (:class:`metricfit.losses.PairLoss`; a loss module of :mod:`metricfit.losses` stands
        for its ``SPEC``). Unknown names raise ValueError listing the choices.
    loss_params : dict, default=None
        The loss's hyper-parameters (e.g. ``{{'margin': 2.0, 'energy': 'l1'}}`` for
        'contrastive'; the energy losses also take ``'reducer'``, 'mean' or
        'avg_non_zero'); None: its ``defaults``.{SIAMESE_PARAMETERS}
    Attributes
    ----------{SIAMESE_ATTRIBUTES}
    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.learners import Siamese
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2, 5))
    >>> X[:20, 1] = X[:20, 0] + 0.1 * rng.normal(size=(20, 5))
    >>> y = np.r_[np.ones(20), -np.ones(20)]
    >>> est = Siamese(loss="contrastive", mapping="tanh", n_components=2, random_state=0)
    >>> est.fit(X, y).transform(X[:, 0]).shape
    (40, 2)

    References
    ----------
    - Chopra, Hadsell and LeCun, "Learning a Similarity Metric Discriminatively, with Application to
      Face Verification", CVPR 2005 (seed 000).
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """

    _parameter_constraints = {
        **SiameseLearner._parameter_constraints,
        "loss": [str, object],
        "loss_params": [dict, None],
    }

    def __init__(self, n_components=None, *, loss="triangular", loss_params=None,
                 mapping="linear", n_hidden=None, normalize=False, init="auto", lam=1e-3,
                 similar_only=False, solver="lbfgs", max_iter=None, tol=1e-5,
                 learning_rate=1e-3, momentum=0.9, batch_size=32, validation_fraction=0.1,
                 validation_interval=100, n_iter_no_change=20, random_state=None, verbose=0,
                 warm_start=False, callback=None, preprocessor=None):
        super().__init__(
            n_components, mapping=mapping, n_hidden=n_hidden, normalize=normalize, init=init,
            lam=lam, similar_only=similar_only, solver=solver, max_iter=max_iter, tol=tol,
            learning_rate=learning_rate, momentum=momentum, batch_size=batch_size,
            validation_fraction=validation_fraction, validation_interval=validation_interval,
            n_iter_no_change=n_iter_no_change, random_state=random_state, verbose=verbose,
            warm_start=warm_start, callback=callback, preprocessor=preprocessor)
        self.loss = loss
        self.loss_params = loss_params

    def _loss_spec(self):
        return self.loss, self.loss_params
