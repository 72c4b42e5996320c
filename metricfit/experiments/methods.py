"""The methods ``metricfit verify`` runs: one registry entry per method.

A *method* is an estimator with the pair API (``fit(pairs, y)``, ``decision_function``).
:data:`REGISTRY` holds one :class:`MethodSpec` per method, in the order of the command's
help: how to build it, whether it has a lambda to select, whether it takes image pairs, its
similar-only variant, its short aliases and whether it runs by default. Every list the rest of
the package reads (:data:`METHODS`, :data:`IMAGE_METHODS`, :data:`ALIASES`,
:data:`SIMILAR_ONLY`, :data:`DEFAULT_METHODS`) is derived from it, so adding a method is one
entry here (see ``docs/contributing.rst``).
"""

from dataclasses import dataclass
from typing import Callable

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.pipeline import make_pipeline

from ..backend import LDA, LengthNormalizer
from ..learners import (
    CSML,
    DDML,
    ITML,
    LDML,
    LFDA,
    LMNN,
    MLKR,
    MMC,
    SDML,
    TSML,
    CosineSimilarity,
)
from ..learners.plda import PLDA
from ..learners.siamese_cnn import SiameseCNN
from ..pairs import check_pair_labels, check_pairs
from ..pairs.identity import distinct_rows, index_components
from ..whitening import WCCN

__all__ = ["MethodSpec", "IdentitiesFromPairs", "REGISTRY", "METHODS", "IMAGE_METHODS",
           "CNN_RECIPE", "PLDA_N_ITER", "PLDA_TOL", "PLDA_IDENTITIES", "ALIASES",
           "SIMILAR_ONLY", "DEFAULT_METHODS", "make_method", "resolve_methods", "has_lam",
           "takes_images"]

CNN_RECIPE = dict(loss="contrastive", energy="l2", augment=True, weight_decay=1e-3,
                  learning_rate_schedule="cosine", random_state=0)
"""The convnet recipe chosen on validation subjects (``docs/results/att.md``)."""

PLDA_N_ITER = 1000
"""The most EM iterations of the protocols' PLDA ('plda', 'plda-lnorm'); EM stops before, at
:data:`PLDA_TOL` (about 220 iterations on LFW pixels, WPCA-100)."""

PLDA_TOL = 1e-4
"""EM to convergence for the protocols' PLDA: stop when an iteration gains less than 1e-4
nats of log-likelihood per training point (``PLDA(tol=)``), instead of Kaldi's fixed 10
iterations (the estimator's default). On LFW pixels (WPCA-100, restricted, ten experiments,
the training identities of :data:`PLDA_SETTINGS`) the validation maxDA is level from there:
76.80 % after 10 iterations, 78.13 at 100, 78.22 at tol 1e-4 (about 220), 78.18 at 1e-5
(about 720); test accuracy 75.97, 77.52, 77.58 and 77.57 %."""

PLDA_IDENTITIES = "components"
"""The classes of the protocols' PLDA (``PLDA(identities=)``): the identities of the training
pairs (each image once, the classes the connected components of the similar pairs, as
:class:`IdentitiesFromPairs` gives the labelled-point learners) rather than each similar pair
as a class of two (an image in k pairs counted k times). On LFW pixels (WPCA-100, restricted,
ten experiments, test accuracy at the validation threshold; validation maxDA in brackets):
classes of two 76.47 (77.48) after 100 iterations and 76.57 (77.50) converged; components
77.58 (78.22); after length normalisation 78.00 (79.23) and 78.98 (79.80).

The three settings are read when a method is built: ``PLDA_N_ITER = 100; PLDA_TOL = None;
PLDA_IDENTITIES = 'pairs'`` gives the earlier protocols' PLDA back (10 for Kaldi's)."""


def _plda():
    """The protocols' PLDA (:data:`PLDA_N_ITER`, :data:`PLDA_TOL`, :data:`PLDA_IDENTITIES`)."""
    return PLDA(n_iter=PLDA_N_ITER, tol=PLDA_TOL, identities=PLDA_IDENTITIES)


@dataclass(frozen=True)
class MethodSpec:
    """One method of ``metricfit verify``: its name and how the protocols treat it.

    Parameters
    ----------
    name : str
        The name on the command line (``--methods``) and in the tables.
    build : callable
        ``build(lam, max_iter, params) -> estimator``: a new unfitted estimator with the pair
        API. ``lam`` is None for a method without lambda; ``params`` (a dict or None) is read
        by the image methods only.
    has_lam : bool, default=True
        Whether the protocols select a lambda for it on the validation pairs.
    takes_images : bool, default=False
        Whether it takes pairs of the raw images (n, 2, H, W) rather than of WPCA vectors.
    similar_only : str or None, default=None
        The name of its similar-only variant (``--similar-only``).
    aliases : tuple of str, default=()
        Other names ``--methods`` accepts for it.
    default : bool, default=False
        Whether ``metricfit verify`` runs it without ``--methods``.

    Examples
    --------
    >>> from metricfit.experiments.methods import REGISTRY
    >>> spec = REGISTRY["tsml-i"]
    >>> spec.has_lam, spec.similar_only, spec.aliases
    (True, 'tsml-sim', ('tsml',))
    >>> spec.build(0.1, 50, None)
    TSML(lam=0.1, max_iter=50)
    """

    name: str
    build: Callable
    has_lam: bool = True
    takes_images: bool = False
    similar_only: str = None
    aliases: tuple = ()
    default: bool = False


def _learned(cls, init=None, similar_only=False):
    """``build`` of a learned linear method: ``cls(lam=, max_iter=)``, with ``init`` (a name,
    or a class instantiated anew at each build) and ``similar_only`` when given."""
    def build(lam, max_iter, params):
        settings = {} if init is None else {"init": init if isinstance(init, str) else init()}
        if similar_only:
            settings["similar_only"] = True
        return cls(lam=lam, max_iter=max_iter, **settings)
    return build


def _fixed(factory):
    """``build`` of a method without lambda nor parameters: ``factory()``."""
    return lambda lam, max_iter, params: factory()


def _convnet(lam, max_iter, params):
    """The siamese convnet of seed 000 with :data:`CNN_RECIPE`, overridden by ``params``."""
    return SiameseCNN(**{**CNN_RECIPE, **(params or {})})


class IdentitiesFromPairs(BaseEstimator):
    """A learner of labelled points (LMNN, LFDA, MLKR, NCA, ...) as a pair method: ``fit``
    takes the protocol's training pairs, gives the learner their distinct points with
    identities, and scores pairs through the learner's pair API.

    The identities are the connected components of the similar training pairs (the points
    linked by a chain of similar pairs share one); a point in no similar pair is left out
    (``identities_`` -1).
    Where the pairs are drawn from labelled images (digits, ``--setting unrestricted``,
    AT&T, a labelled ``.npz``) a component never joins two identities; it may split one
    whose images were not chained by the drawn pairs.

    Parameters
    ----------
    learner : estimator
        ``fit(X, y)`` on labelled points, then ``decision_function`` / ``pair_score`` /
        ``calibrate_threshold`` on pairs.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.experiments.methods import IdentitiesFromPairs
    >>> from metricfit.learners import LFDA
    >>> rng = np.random.default_rng(0)
    >>> X = np.repeat(3 * rng.normal(size=(3, 2)), 4, axis=0) + 0.1 * rng.normal(size=(12, 2))
    >>> pairs = X[np.array([[0, 1], [1, 2], [4, 5], [5, 6], [8, 9], [9, 10], [0, 4], [4, 8]])]
    >>> y = np.array([1, 1, 1, 1, 1, 1, -1, -1])
    >>> est = IdentitiesFromPairs(LFDA(k=1)).fit(pairs, y)
    >>> np.unique(est.identities_[est.identities_ >= 0]).size
    3
    """

    def __init__(self, learner):
        self.learner = learner

    def fit(self, pairs, y):
        """Identities from the pairs, the learner fitted on the points, its threshold
        calibrated on the pairs; returns self."""
        pairs = check_pairs(pairs)
        s = check_pair_labels(y, pairs.shape[0], require_both=True)
        points, index = distinct_rows(pairs)
        index = index[s == 1]
        n = points.shape[0]
        identities = index_components(index, n)
        linked = np.zeros(n, dtype=bool)
        linked[index.ravel()] = True  # points in no similar pair carry no identity
        self.identities_ = np.where(linked, identities, -1)
        self.learner_ = clone(self.learner).fit(points[linked], identities[linked])
        self.learner_.calibrate_threshold(pairs, y)
        return self

    def decision_function(self, pairs):
        """The learner's ``decision_function`` of the pairs."""
        return self.learner_.decision_function(pairs)

    def pair_score(self, pairs):
        """The learner's ``pair_score`` of the pairs."""
        return self.learner_.pair_score(pairs)

    def __metricfit_tags__(self):
        return self.learner.__metricfit_tags__()


def _from_identities(factory):
    """``build`` of a labelled-point learner without lambda, as a pair method."""
    return lambda lam, max_iter, params: IdentitiesFromPairs(factory())


def _spec(name, build, **traits):
    return MethodSpec(name, build, **traits)


REGISTRY = {spec.name: spec for spec in (
    # seed 002 Table I
    _spec("baseline", _fixed(CosineSimilarity), has_lam=False, default=True),
    _spec("wccn", _fixed(lambda: make_pipeline(WCCN(), CosineSimilarity())), has_lam=False,
          default=True),
    _spec("csml-i", _learned(CSML), similar_only="csml-sim", aliases=("csml",), default=True),
    _spec("csml-wccn", _learned(CSML, init="wccn")),
    _spec("tsml-i", _learned(TSML), similar_only="tsml-sim", aliases=("tsml",), default=True),
    _spec("tsml-wccn", _learned(TSML, init="wccn"), similar_only="tsml-wccn-sim",
          default=True),
    _spec("tsml-sim", _learned(TSML, similar_only=True), default=True),
    # the linear DDML of seed 004, with the same initialisation and selection
    _spec("ddml-i", _learned(DDML), similar_only="ddml-sim", aliases=("ddml",)),
    _spec("ddml-sim", _learned(DDML, similar_only=True)),
    _spec("ldml", _learned(LDML)),
    # issue 15: seed 002 III.D and III.E together, and the other inits
    _spec("tsml-wccn-sim", _learned(TSML, init="wccn", similar_only=True)),
    _spec("csml-sim", _learned(CSML, similar_only=True)),
    _spec("ddml-wccn", _learned(DDML, init="wccn")),
    # two-covariance PLDA on the identities of the training pairs, EM to convergence
    # (_plda); after length normalisation (centre, whiten, L2-normalise)
    _spec("plda", _fixed(_plda), has_lam=False),
    _spec("plda-lnorm", _fixed(lambda: make_pipeline(LengthNormalizer(), _plda())),
          has_lam=False),
    # started from (and regularised towards) LDA / PLDA's transform, fitted inside each fit
    _spec("tsml-lda", _learned(TSML, init=LDA)),
    _spec("csml-lda", _learned(CSML, init=LDA)),
    _spec("tsml-plda", _learned(TSML, init=PLDA)),
    _spec("csml-plda", _learned(CSML, init=PLDA)),
    # seed 000: the siamese convnet on image pairs
    _spec("cnn", _convnet, has_lam=False, takes_images=True),
    # issue 26: metric-learn's pair learners, their default parameters (no lambda)
    _spec("itml", _fixed(lambda: ITML(random_state=0)), has_lam=False),
    _spec("mmc", _fixed(MMC), has_lam=False),
    _spec("sdml", _fixed(SDML), has_lam=False),
    # issue 26: learners of labelled points, on the identities of the training pairs
    _spec("lmnn", _from_identities(lambda: LMNN(random_state=0)), has_lam=False),
    _spec("lfda", _from_identities(LFDA), has_lam=False),
    _spec("mlkr", _from_identities(lambda: MLKR(random_state=0)), has_lam=False),
)}
"""Every method, by name, in the order of ``metricfit verify --help``."""

METHODS = tuple(REGISTRY)
IMAGE_METHODS = tuple(name for name, spec in REGISTRY.items() if spec.takes_images)
"""Methods that take image pairs (n, 2, H, W) of the data set's raw images, whatever the
features; every other method takes pairs of WPCA-embedded feature vectors (n, 2, k)."""
ALIASES = {alias: name for name, spec in REGISTRY.items() for alias in spec.aliases}
SIMILAR_ONLY = {name: spec.similar_only for name, spec in REGISTRY.items() if spec.similar_only}
DEFAULT_METHODS = tuple(name for name, spec in REGISTRY.items() if spec.default)


def make_method(name, lam=None, max_iter=200, params=None):
    """The estimator of a seed 002 Table I method ('tsml-sim': TSML-I on similar pairs only;
    'ddml-i', 'ddml-sim': the linear DDML of seed 004 with the same initialisation and selection).

    Beyond Table I (issue 15): 'tsml-wccn-sim' is TSML started from WCCN on similar pairs only
    (seed 002 III.D and III.E together), 'csml-sim' CSML-I on similar pairs only, 'ddml-wccn'
    DDML started from WCCN; 'tsml-lda' / 'csml-lda' (and '-plda') are TSML-I / CSML-I started
    from (and regularised towards) the LDA projection (:class:`~metricfit.backend.LDA`) or
    PLDA's simultaneous-diagonalisation transform (``PLDA.components_``), fitted on the same
    training pairs (each similar pair a class of two) inside each fit.

    'cnn' (one of :data:`IMAGE_METHODS`, on image pairs) is the siamese convnet of seed 000
    (:class:`~metricfit.learners.SiameseCNN`) with :data:`CNN_RECIPE`; ``params`` (a dict)
    sets other parameters of it (e.g. ``max_epochs``, ``n_maps``, ``n_jobs``). It has no
    lambda; ``params`` is not read by the other methods."""
    if name not in REGISTRY:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}.")
    return REGISTRY[name].build(lam, max_iter, params)


def resolve_methods(names, similar_only=False):
    """Method names as in :data:`METHODS`: the aliases csml, tsml, ddml become csml-i, tsml-i,
    ddml-i; with ``similar_only`` each method that has a similar-only variant becomes it
    (:data:`SIMILAR_ONLY`: tsml-i, ddml-i, csml-i, tsml-wccn; the others stay); duplicates
    are dropped, order kept."""
    names = [ALIASES.get(name, name) for name in names]
    unknown = [name for name in names if name not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(METHODS)} (aliases: {', '.join(ALIASES)}).")
    return list(dict.fromkeys(SIMILAR_ONLY.get(n, n) if similar_only else n for n in names))


def has_lam(name):
    """Whether method ``name`` has a lambda the protocols select (:attr:`MethodSpec.has_lam`)."""
    return REGISTRY[name].has_lam if name in REGISTRY else True


def takes_images(name):
    """Whether method ``name`` takes image pairs (:data:`IMAGE_METHODS`) rather than vectors."""
    return name in IMAGE_METHODS
