"""PLDA with the shared pair API: ``pair_score`` is the closed-form log-likelihood ratio."""

import warnings
from copy import deepcopy
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._array_api import device_of, get_namespace, to_numpy
from .._validation import (
    Interval,
    PointOutputMixin,
    StrOptions,
    check_feature_names,
    user_stacklevel,
    validate_params,
)
from ..backend import plda as core
from ..backend import plda_array_api as device_plda
from ..backend.plda_adapt import adapt_two_covariance
from ..pairs import check_pair_labels, check_pairs, check_points
from ..pairs.checks import check_representable, identity_codes, largest_magnitude, scale_exponent
from ..pairs.index import check_pair_input, pairs_as_given, similar_pair_classes
from ._base import PairLearnerMixin

DISSIMILAR = ("ignore", "singletons")
IDENTITIES = ("pairs", "components")


def _cannot_fit(scatter):
    """The error of a fit whose EM or basis broke down on a singular within-class scatter."""
    return ValueError(f"PLDA cannot be fitted: {core.singular_within_message(scatter)}.")


class PLDA(PointOutputMixin, ClassNamePrefixFeaturesOutMixin, PairLearnerMixin, BaseEstimator):
    """Gaussian PLDA (two-covariance, or simplified with ``n_components``), trained by EM,
    scoring pairs by the closed-form same-vs-different log-likelihood ratio.

    See :mod:`metricfit.backend.plda` for the model, the EM updates (Kaldi's initialisation
    ``W = B = I`` and 10 iterations by default, or EM to convergence with ``tol``) and the
    LLR.

    Training data (``fit``):

    - labelled points ``fit(X, labels)`` with X of shape (n_samples, n_features) (also
      :meth:`fit_points`): identities are the labels, the unrestricted setting; the MkNN
      convention.
    - vector pairs ``fit(pairs, y)`` (n_pairs, 2, n_features), the restricted setting: each
      *similar* pair is a class of two. The images of dissimilar pairs carry no identity;
      with ``dissimilar_pairs='ignore'`` (default) they are not used; with
      ``'singletons'`` each of their images is a class of one, which informs the total
      covariance ``B + W`` (eq. 1 with n = 1) but not W alone. An image appearing in several
      similar pairs counts once per pair (pairs carry no image identity), unless
      ``identities='components'``: then equal vectors are one image and the classes are
      the connected components, as for index pairs.
    - index pairs ``fit(index_pairs, y)`` (n_pairs, 2) into the ``preprocessor`` points:
      as vector pairs, except that an image is one point: the identities are the connected
      components of the similar pairs (so an image in several similar pairs counts once).

    Parameters
    ----------
    n_components : int or None, default=None
        None: two-covariance PLDA (full-rank B). An int q: simplified PLDA, ``B = V V^T``
        with V of rank q (the speaker / identity subspace).
    n_iter : int, default=10
        EM iterations (Kaldi's default); with ``tol``, the most iterations.
    dissimilar_pairs : {'ignore', 'singletons'}, default='ignore'
    preprocessor : array-like of shape (n_points, n_features), default=None
        The points of index pairs.
    tol : float > 0 or None, default=None
        None: exactly ``n_iter`` EM iterations (Kaldi). A float: EM to convergence, stopping
        after the first iteration whose log-likelihood gain per training point,
        ``(L_t - L_{t-1}) / n_samples`` of eq. (2), is below ``tol`` (scikit-learn's
        ``GaussianMixture`` criterion); a ``ConvergenceWarning`` if ``n_iter`` iterations
        did not get there. With classes of two (vector pairs), EM from ``W = B = I`` needs
        hundreds of iterations: ``tol=1e-4`` took 230 on LFW pixels (WPCA-100).
    identities : {'pairs', 'components'}, default='pairs'
        Vector pairs only: 'pairs', each similar pair is a class of two; 'components', the
        distinct vectors are the images and the classes the connected components of the
        similar pairs over them (an image in several pairs counts once), as for index
        pairs, which always give components.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
    between_covariance_, within_covariance_ : ndarray of shape (n_features, n_features)
    components_ : ndarray of shape (k, n_features)
        T restricted to its k directions of positive psi: ``transform(X) = (X - mean_) T^T``.
    psi_ : ndarray of shape (k,)
        Between-class variances in that basis (within-class variance 1).
    scorer_ : metricfit.backend.plda.PLDAScorer
        The LLR of ``psi_`` in that basis (a read-only view, built from ``psi_``): what
        :meth:`pair_score`, :meth:`score_sets` and the back-end's cohort scores use.
    log_likelihood_ : list of float
        Eq. (2) after initialisation and after every iteration (non-decreasing: EM).
    n_iter_ : int
        EM iterations run: ``n_iter``, or fewer where ``tol`` stopped EM.
    threshold_ : float
        Pairs: calibrated for accuracy on the training pairs. Points: 0, the Bayes decision
        at P_target = 0.5 for a calibrated LLR.
    classes_ : ndarray, [-1, 1]
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import PLDA
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat(np.arange(50), 4)
    >>> X = 3 * rng.normal(size=(50, 5))[labels] + rng.normal(size=(200, 5))
    >>> plda = PLDA().fit(X, labels)
    >>> pairs = np.stack([X[[0, 0]], X[[1, 4]]], axis=1)  # same identity, then not
    >>> plda.predict(pairs)
    array([ 1, -1])
    >>> np.round(plda.pair_score(pairs), 2)  # log-likelihood ratios
    array([  3.54, -10.61])

    In the PLDA basis the within-class covariance is I and the between-class one
    ``diag(psi_)``; EM recorded the log-likelihood after each iteration:

    >>> plda.transform(X).shape, np.round(plda.psi_, 1)
    ((200, 5), array([15.8, 12.9, 12.2,  7.4,  4.4]))
    >>> len(plda.log_likelihood_), bool(np.all(np.diff(plda.log_likelihood_) >= 0))
    (11, True)

    EM to convergence: ``n_iter`` is the most iterations, ``tol`` the log-likelihood gain
    per point below which EM stops (here after 5 iterations):

    >>> converged = PLDA(n_iter=1000, tol=1e-4).fit(X, labels)
    >>> converged.n_iter_, len(converged.log_likelihood_)
    (5, 6)

    On vector pairs each similar pair is a class of two (300 classes here); on index pairs
    into ``preprocessor`` the classes are the connected components of the similar pairs
    (here the 50 identities, hence the same model as the fit on labelled points):

    >>> from metricfit.pairs import sample_pairs
    >>> index, y = sample_pairs(labels, 300, 300, random_state=0)
    >>> on_pairs = PLDA().fit(X[index], y)
    >>> on_index = PLDA(preprocessor=X).fit(index, y)
    >>> on_pairs.n_identities_, on_index.n_identities_
    (300, 50)
    >>> np.round(on_pairs.pair_score(pairs), 2), np.round(on_index.pair_score(pairs), 2)
    (array([  3.54, -10.56]), array([  3.54, -10.61]))

    Simplified PLDA: the between-class covariance has rank ``n_components``:

    >>> simplified = PLDA(n_components=2).fit(X, labels)
    >>> int(np.linalg.matrix_rank(simplified.between_covariance_)), simplified.psi_.shape
    (2, (2,))
    """

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None), None],
        "n_iter": [Interval(Integral, 0, None)],
        "dissimilar_pairs": [StrOptions(set(DISSIMILAR))],
        "preprocessor": ["array-like", None],
        "tol": [Interval(Real, 0, None, closed="neither"), None],
        "identities": [StrOptions(set(IDENTITIES))],
    }

    def __init__(self, n_components=None, n_iter=core.KALDI_N_ITER, dissimilar_pairs="ignore",
                 preprocessor=None, tol=None, identities="pairs"):
        self.n_components = n_components
        self.n_iter = n_iter
        self.dissimilar_pairs = dissimilar_pairs
        self.preprocessor = preprocessor
        self.tol = tol
        self.identities = identities

    def fit(self, X, y):
        """Fit on labelled points (n, d) + identities, vector pairs (n, 2, d) + pair labels,
        or index pairs (n, 2) into ``preprocessor`` + pair labels."""
        validate_params(self)
        xp, dispatched = get_namespace(X, names=["X"])
        if (X.ndim if dispatched else np.ndim(X)) == 2 and self.preprocessor is None:
            return self.fit_points(X, y)
        pairs = check_pair_input(to_numpy(X) if dispatched else X, self.preprocessor)
        self.__dict__.pop("feature_names_in_", None)  # pairs carry no column names
        s = check_pair_labels(y, pairs.shape[0], require_both=False)
        if not np.any(s == 1):
            raise ValueError("PLDA needs similar pairs to train on: every pair is dissimilar.")
        self._fit_classes(*similar_pair_classes(
            pairs, s, singletons=self.dissimilar_pairs == "singletons",
            components=self.identities == "components"))
        if np.unique(s).size == 2:
            return self.calibrate_threshold(pairs_as_given(pairs), s)._adopt_coding(y)
        self.threshold_ = 0.0
        return self

    def fit_points(self, X, labels):
        """Fit on points (n_samples, n_features) with identity labels (n_samples,).

        With array-API dispatch on (:func:`metricfit.array_api_dispatch`) and X a torch /
        CuPy / array_api_strict array, the two-covariance model's statistics and EM run on
        X's namespace and device (:mod:`metricfit.backend.plda_array_api`); the labels may stay
        a NumPy array on the host. The fitted attributes are NumPy arrays either way.
        """
        validate_params(self)
        xp, dispatched = get_namespace(X, names=["X"])
        if dispatched and self.n_components is None:
            self._fit_on_device(xp, X, labels if isinstance(labels, (list, tuple, np.ndarray))
                                else to_numpy(labels))
            self.threshold_ = 0.0
            return self
        given, X = X, check_points(to_numpy(X) if dispatched else X)
        check_feature_names(self, given, reset=True)
        _, codes = identity_codes(labels, "labels", X.shape[0])
        self._fit_classes(X, codes)
        self.threshold_ = 0.0
        return self

    def _fit_on_device(self, xp, X, labels):
        """The statistics and EM in X's namespace, on its device; the basis on the host."""
        if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
            raise ValueError(f"X must be a 2-D array of points (n_samples >= 2, n_features "
                             f">= 1), got shape {tuple(X.shape)}.")
        if not xp.isdtype(X.dtype, "real floating"):
            X = xp.astype(X, xp.float64)
        if not bool(xp.all(xp.isfinite(X))):
            raise ValueError("X contains NaN or infinity.")
        self.__dict__.pop("feature_names_in_", None)
        _, codes = identity_codes(labels, "labels", X.shape[0])
        device = device_of(X)
        counts, mu, groups, scatter = device_plda.device_class_statistics(xp, X, codes, device)
        history = []
        try:
            B, W = device_plda.device_fit_two_covariance(
                xp, counts, groups, scatter, self.n_iter,
                lambda it, ll: history.append(ll), device, tol=self.tol)
        except np.linalg.LinAlgError:
            raise _cannot_fit(to_numpy(scatter)) from None
        self._set_model(to_numpy(B), to_numpy(W), counts, to_numpy(mu), history,
                        to_numpy(scatter), X.shape, 0, np.dtype(str(X.dtype).rsplit(".")[-1]),
                        float(xp.max(xp.abs(X))))
        self._warn_if_not_converged(history, float(np.sum(counts)))

    def _fit_classes(self, X, codes):
        largest = largest_magnitude(X)
        e = scale_exponent(largest)  # 0 (bit-identical) unless |X| is beyond ~1e+-77
        counts, means, mu, scatter = core.class_statistics(
            np.ldexp(X.astype(np.float64), -e) if e else X, codes)
        history = []

        def record(it, B, W, log_likelihood):
            history.append(log_likelihood)

        self._check_n_components(X.shape[1])
        try:
            if self.n_components is None:
                B, W = core.fit_two_covariance(counts, means, scatter, self.n_iter, record,
                                               tol=self.tol)
            else:
                B, W, _ = core.fit_simplified(counts, means, scatter, self.n_components,
                                              self.n_iter, record, tol=self.tol)
        except np.linalg.LinAlgError:
            raise _cannot_fit(scatter) from None
        self._set_model(B, W, counts, mu, history, scatter, X.shape, e, X.dtype, largest)
        self._warn_if_not_converged(history, float(np.sum(counts)))

    def _check_n_components(self, d):
        if self.n_components is not None and self.n_components > d:
            raise ValueError(f"n_components={self.n_components} must be <= n_features={d}.")

    def _set_model(self, B, W, counts, mu, history, scatter, shape, e, dtype, largest):
        """The fitted attributes from (B, W) on the host (X was scaled by 2**-e)."""
        n, d = shape
        try:
            T, psi = core.plda_basis(B, W)
        except np.linalg.LinAlgError:
            raise _cannot_fit(scatter) from None
        core.warn_if_singular_within(W)
        keep = psi > 1e-10 * max(psi.max(), np.finfo(float).tiny)
        self.n_features_in_ = d
        self.mean_ = np.ldexp(mu, e)  # back in X's units from X 2**-e (exact)
        self.between_covariance_, self.within_covariance_ = (check_representable(
            C, np.float64, "its covariances (between_covariance_, within_covariance_)",
            largest, exponent=2 * e) for C in (B, W))
        self.components_ = check_representable(
            T[keep], np.float64, "the PLDA basis (components_)", largest, exponent=-e)
        self.psi_ = psi[keep]  # a ratio of variances: scale-free
        # densities of X 2**-e are 2**(n d e) times those of X
        self.log_likelihood_ = [ll - n * d * e * np.log(2.0) for ll in history]
        self.n_iter_ = len(history) - 1
        self.n_identities_ = counts.size
        self.classes_ = np.array([-1, 1])
        self._dtype = dtype

    def _warn_if_not_converged(self, history, n_points):
        """A ConvergenceWarning where ``tol`` is set and ``n_iter`` iterations did not reach
        a gain per point below it (:func:`metricfit.backend.plda.converged`)."""
        if self.tol is None or core.converged(history, n_points, self.tol):
            return
        gain = (history[-1] - history[-2]) / n_points if len(history) > 1 else np.inf
        warnings.warn(f"PLDA: EM did not converge in n_iter={self.n_iter} iterations (the last "
                      f"gained {gain:.2e} per point, tol={self.tol:g}); raise n_iter or tol.",
                      ConvergenceWarning, stacklevel=user_stacklevel())

    def transform(self, X):
        """Points (n, d) or pairs (n, 2, d) in the PLDA basis, ``(X - mean_) T^T`` (k dims;
        there the within-class covariance is I and the between-class one ``diag(psi_)``).

        Points give a DataFrame with columns ``get_feature_names_out()`` ('plda0', ...)
        under ``set_output(transform='pandas' | 'polars')``; pairs stay an ndarray.
        """
        Z = self._embed(X)
        check_feature_names(self, X, reset=False)
        return self._wrap_output(Z, X)

    @property
    def _n_features_out(self):
        """k, the directions of positive psi: ``get_feature_names_out`` gives 'plda0', ..."""
        return self.components_.shape[0]

    def _embed(self, X):
        check_is_fitted(self, "components_")
        if np.ndim(X) == 3:
            X = check_pairs(X, n_features=self.n_features_in_)
            return self._embed(X.reshape(-1, X.shape[2])).reshape(X.shape[0], 2, -1)
        X = check_points(X, n_features=self.n_features_in_)
        T = self.components_.astype(X.dtype, copy=False)
        return (X - self.mean_.astype(X.dtype, copy=False)) @ T.T

    def _check_pairs(self, pairs, reject_zero=False):
        return super()._check_pairs(pairs, reject_zero=False)

    @property
    def scorer_(self):
        """The fitted LLR, :class:`~metricfit.backend.plda.PLDAScorer` of ``psi_``."""
        check_is_fitted(self, "psi_")
        return core.PLDAScorer(self.psi_)

    def _score_embedded(self, a, b):
        return self.scorer_.pair_llr(a, b)

    def pair_score(self, pairs):
        """The log-likelihood ratio log p(pair | same) / p(pair | different) of each pair.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2)
            With array-API dispatch on, vector pairs may be a torch / CuPy / array_api_strict
            array: the LLRs are computed on its device and returned in its namespace.

        Returns
        -------
        llr : ndarray of shape (n_pairs,), float64
        """
        xp, dispatched = get_namespace(pairs, names=["pairs"])
        if dispatched:
            return self._device_pair_score(xp, pairs)
        return super().pair_score(pairs)

    def decision_function(self, pairs):
        """``pair_score(pairs) - threshold_`` (in the pairs' namespace under dispatch)."""
        xp, dispatched = get_namespace(pairs, names=["pairs"])
        if dispatched:
            return self._device_pair_score(xp, pairs) - self.threshold_
        return super().decision_function(pairs)

    def _device_pair_score(self, xp, pairs):
        check_is_fitted(self, "components_")
        if pairs.ndim != 3 or pairs.shape[1] != 2 or pairs.shape[2] != self.n_features_in_:
            raise ValueError(f"pairs must have shape (n_pairs, 2, {self.n_features_in_}) on "
                             f"the array-API path, got {tuple(pairs.shape)}.")
        if not xp.isdtype(pairs.dtype, "real floating"):
            pairs = xp.astype(pairs, xp.float64)
        scores = device_plda.device_pair_llr(xp, pairs, self.mean_, self.components_,
                                             self.psi_, device_of(pairs))
        if not bool(xp.all(xp.isfinite(scores))):
            raise ValueError("pairs contain NaN or infinity, or their LLRs overflow.")
        return scores

    def score_sets(self, enrol, test):
        """N-vs-M LLR in closed form: ``enrol[i]`` (n_i, d) against ``test[i]`` (m_i, d)
        (lists of the same length; a 2-D array is one sample per row).

        Examples
        --------
        Identity 0 enrolled from 3 samples and tested with its 4th, then with a sample of
        identity 1; one enrolment sample against one test sample is ``pair_score``:

        >>> import numpy as np
        >>> from metricfit import PLDA
        >>> rng = np.random.default_rng(0)
        >>> labels = np.repeat(np.arange(50), 4)
        >>> X = 3 * rng.normal(size=(50, 5))[labels] + rng.normal(size=(200, 5))
        >>> plda = PLDA().fit(X[8:], labels[8:])  # identities 2..49
        >>> np.round(plda.score_sets([X[0:3], X[0:3]], [X[3], X[4]]), 2)
        array([  4.23, -20.43])
        >>> one = plda.score_sets([X[0]], [X[3]])
        >>> bool(np.allclose(one, plda.pair_score(X[[[0, 3]]])))
        True
        """
        check_is_fitted(self, "components_")
        if len(enrol) != len(test):
            raise ValueError(f"enrol and test hold {len(enrol)} and {len(test)} sets: one "
                             "test set per enrolment set.")
        stats = []
        for sets, what in ((enrol, "enrol"), (test, "test")):
            means, sizes = [], []
            for i, rows in enumerate(sets):
                rows = np.atleast_2d(rows)
                rows = check_points(rows, n_features=self.n_features_in_, what=f"{what}[{i}]")
                means.append(rows.mean(axis=0))
                sizes.append(rows.shape[0])
            stats.append((self._embed(np.asarray(means)), np.asarray(sizes)))
        (a, n), (b, m) = stats
        return self.scorer_.pair_llr(a, b, n, m)

    def adapt(self, X, mean_diff_scale=1.0, within_covar_scale=0.3, between_covar_scale=0.7):
        """A new PLDA adapted to unlabelled in-domain points X by Kaldi's unsupervised
        adaptation (:func:`metricfit.backend.adapt_two_covariance`; Kaldi's default scales).

        The adapted ``(B, W)`` and the mean of X go through the same code path as ``fit``
        (basis, ``components_``, ``psi_``, the singular-W warning); ``log_likelihood_`` and
        ``n_identities_`` stay those of the training fit, ``threshold_`` becomes 0 (the
        Bayes decision at P_target = 0.5 for a calibrated LLR; recalibrate on in-domain
        pairs with :meth:`calibrate_threshold`). This estimator is left unchanged.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Unlabelled adaptation points (n_samples >= 2).
        mean_diff_scale, within_covar_scale, between_covar_scale : float >= 0

        Returns
        -------
        PLDA
            A fitted copy with the adapted model.

        Examples
        --------
        Trained where the identity lives in the first axis; in the new domain the second
        axis varies 9 times more (total variance 1 -> 9), and the adapted model gives the
        excess to W (0.3) and B (0.7):

        >>> import numpy as np
        >>> from metricfit import PLDA
        >>> rng = np.random.default_rng(0)
        >>> labels = np.repeat(np.arange(200), 4)
        >>> X = rng.normal(size=(200, 2))[labels] * [3, 0.1] + rng.normal(size=(800, 2))
        >>> plda = PLDA().fit(X, labels)
        >>> def diagonals(m):
        ...     return np.round([np.diag(m.within_covariance_), np.diag(m.between_covariance_)], 2)
        >>> diagonals(plda)  # W, then B
        array([[1.03, 0.91],
               [8.64, 0.08]])
        >>> adapted = plda.adapt(X * [1, 3])
        >>> diagonals(adapted)
        array([[1.04, 3.21],
               [8.65, 5.45]])
        >>> np.round(adapted.psi_, 2)
        array([8.36, 1.7 ])
        """
        check_is_fitted(self, "components_")
        X = check_points(X, n_features=self.n_features_in_, what="X (the adaptation points)")
        B, W, mean = adapt_two_covariance(self.between_covariance_, self.within_covariance_,
                                          self.mean_, X, mean_diff_scale, within_covar_scale,
                                          between_covar_scale)
        new = deepcopy(self)
        new._set_model(B, W, np.zeros(self.n_identities_), mean, self.log_likelihood_, W,
                       X.shape, 0, self._dtype, largest_magnitude(X))
        new.threshold_ = 0.0
        return new

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        return tags

    def __metricfit_tags__(self):
        tags = super().__metricfit_tags__()
        tags.score_kind = "llr"
        return tags
