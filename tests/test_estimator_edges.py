"""Issue 24, estimator edges: no silent wrong answer from a parameter, a scale or a split.

- every float parameter of every estimator refuses NaN and +-inf (one ValueError naming it);
- WPCA, WCCN, MkNN, LDA, LengthNormalizer and PLDA give the same result on data scaled by
  1e+-100 .. 1e+-300 (exact power-of-two rescaling inside), or a ValueError naming X when a
  fitted attribute cannot be stored; NCA refuses such data;
- SGD's validation split says how many pairs it has and needs, and what to change;
- NCA and PLDA have ``get_feature_names_out`` and ``set_output`` like WPCA.
"""

import warnings
from numbers import Real

import numpy as np
import pytest
from estimator_registry import (
    REGISTRY,
    Case,
    identity_points,
    image_pairs,
    index_pairs_of,
    vector_pairs,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import config_context

from metricfit import LDML, NCA, PLDA, TSML, WCCN, WPCA, MkNN, Siamese, SiameseCNN
from metricfit.backend import LDA, LengthNormalizer
from metricfit.learners._base import validation_split

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

BACKEND = {"WPCA": WPCA, "WCCN": WCCN, "LDA": LDA, "LengthNormalizer": LengthNormalizer}


def _float_params(est):
    """Names of the parameters declared with a Real interval."""
    return sorted(name for name, constraints in getattr(est, "_parameter_constraints",
                                                        {}).items()
                  if any(getattr(c, "kind", None) is Real for c in constraints))


def _fit(est, case):
    if case is None:  # a back-end transformer: labelled points
        return est.fit(*identity_points())
    return est.fit(*case.fit_data())


def _estimators():
    for name, entry in REGISTRY.items():
        if name != "ScoreFusion":  # no Interval-declared float (C is checked in fusion.py)
            yield name, entry.factory, Case(name)
    for name, cls in BACKEND.items():
        yield name, cls, None


CASES = [(name, factory, case, param) for name, factory, case in _estimators()
         for param in _float_params(factory())]


def test_the_walk_covers_every_float_parameter():
    """Every parameter whose default is a float is declared with a Real interval (so it is
    walked below); ScoreFusion's C is checked in fusion.py (its own test_fusion.py)."""
    for name, factory, _ in _estimators():
        est = factory()
        floats = {k for k, v in est.get_params(deep=False).items()
                  if isinstance(v, float) and not isinstance(v, bool)}
        assert floats <= set(_float_params(est)), name
    names = {(name, param) for name, _, _, param in CASES}
    assert ("LDML", "lam") in names and ("DDML", "tau") in names
    assert ("SiameseCNN", "weight_decay") in names and ("WPCA", "reg") in names
    assert len(CASES) > 60


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan, np.float32("inf"), 10 ** 400])
@pytest.mark.parametrize("name, factory, case, param", CASES,
                         ids=[f"{n}-{p}" for n, _, _, p in CASES])
def test_float_parameters_refuse_nan_and_infinity(name, factory, case, param, bad):
    est = factory()
    if case is not None and case.kind == "index_pairs":
        est.set_params(preprocessor=case.points)
    est.set_params(**{param: bad})
    with pytest.raises(ValueError, match=rf"'{param}' parameter of \w+ must be a finite"):
        _fit(est, case)


def test_loss_params_refuse_nan_and_infinity():
    pairs, y = vector_pairs()
    for value in (np.inf, np.nan):
        with pytest.raises(ValueError, match=r"loss_params\['margin'\] must be a finite"):
            Siamese(loss="contrastive", loss_params={"margin": value}).fit(pairs, y)


def test_finite_float_parameters_still_accepted():
    pairs, y = vector_pairs()
    LDML(lam=np.float32(1e3), max_iter=5).fit(pairs, y)  # also a NumPy float
    assert TSML(lam=10 ** 3, max_iter=5).fit(pairs, y).n_iter_ >= 1  # and a large int


# -- scale: WPCA, WCCN, MkNN, LDA, LengthNormalizer, PLDA ------------------------------------

def _points():
    return identity_points()


def _wpca(X, ids, Q):
    return WPCA().fit(X).transform(Q)


def _wpca_reg(X, ids, Q):
    return WPCA(n_components=3, reg=1e-3 * np.max(np.abs(X)) ** 2).fit(X).transform(Q)


def _wccn(X, ids, Q):
    return WCCN().fit(X, ids).transform(Q)


def _wccn_pairs(X, ids, Q):
    pairs, y = vector_pairs()
    scale = X[0, 0] / identity_points()[0][0, 0]
    return WCCN().fit(scale * pairs, y).transform(Q)


def _wccn_index(X, ids, Q):
    index, y = index_pairs_of(ids, 120, 0)
    return WCCN().fit_index_pairs(X, index, y).transform(Q)


def _lda(X, ids, Q):
    return LDA().fit(X, ids).transform(Q)


def _length_norm(X, ids, Q):
    return LengthNormalizer().fit(X).transform(Q)


def _length_norm_plain(X, ids, Q):
    return LengthNormalizer(whiten=False).fit(X).transform(Q)


def _mknn(X, ids, Q):
    est = MkNN(n_neighbors=4).fit(X, ids)
    return np.r_[est.pair_score(Q[:60].reshape(30, 2, -1)), est.threshold_]


def _plda(X, ids, Q):
    est = PLDA().fit(X, ids)
    return est.pair_score(Q[:60].reshape(30, 2, -1))


INVARIANT = {"WPCA": _wpca, "WPCA-reg": _wpca_reg, "WCCN": _wccn, "WCCN-pairs": _wccn_pairs,
             "WCCN-index": _wccn_index, "LDA": _lda, "LengthNormalizer": _length_norm,
             "LengthNormalizer-plain": _length_norm_plain, "MkNN": _mknn}
UNREPRESENTABLE = ("WPCA", "WPCA-reg", "WCCN", "WCCN-pairs", "WCCN-index")  # variances stored


def _outcome(fit, scale):
    X, ids = _points()
    try:
        return fit(scale * X, ids, scale * X)
    except ValueError as error:
        message = str(error)
        assert message.startswith(("X has entries", "points have entries")), message
        assert "Rescale" in message, message
        return None


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e-100, 1e-50, 1e50, 1e100, 1e200, 1e300])
@pytest.mark.parametrize("name", list(INVARIANT))
def test_results_are_invariant_to_the_scale_of_the_data(name, scale):
    """Whitened / normalised output and MkNN's scores do not depend on the data's scale; where
    the variances (a fitted attribute) cannot be stored, a ValueError names X."""
    if name == "WPCA-reg" and not 1e-150 < scale < 1e150:
        pytest.skip("reg (in X's units squared) is beyond the float range")
    fit = INVARIANT[name]
    reference = fit(*_points(), _points()[0])
    result = _outcome(fit, scale)
    if result is None:
        assert name in UNREPRESENTABLE and not 1e-150 < scale < 1e150
        return
    assert_allclose(result, reference, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["MkNN", "LDA", "LengthNormalizer", "LengthNormalizer-plain"])
@settings(max_examples=15, deadline=None)
@given(exponent=st.integers(-1000, 1000))
def test_scale_invariance_over_random_powers(name, exponent):
    """At any power-of-two scale whose data is normal float64 the result is the same."""
    fit = INVARIANT[name]
    X, ids = _points()
    Xs = np.ldexp(X, exponent)
    assert_allclose(fit(Xs, ids, Xs), fit(X, ids, X), rtol=1e-9, atol=1e-9)


@settings(max_examples=15, deadline=None)
@given(exponent=st.integers(-1000, 1000))
def test_whitening_invariant_or_refused_at_any_power(exponent):
    X, ids = _points()
    Xs = np.ldexp(X, exponent)
    for fit in (_wpca, _wccn):
        try:
            result = fit(Xs, ids, Xs)
        except ValueError as error:
            assert abs(exponent) > 490 and "Rescale X" in str(error)
            continue
        assert_allclose(result, fit(X, ids, X), rtol=1e-9, atol=1e-9)


def test_wpca_at_1e200_names_x_instead_of_a_lapack_error():
    X, _ = _points()
    with pytest.raises(ValueError, match=r"X has entries up to 7\.87e\+200.*"
                                         r"explained_variance_.*Rescale X"):
        WPCA().fit(1e200 * X)


def test_wpca_attributes_follow_the_scale():
    X, _ = _points()
    a, b = WPCA().fit(X), WPCA().fit(1e100 * X)
    assert_allclose(b.explained_variance_, 1e200 * a.explained_variance_, rtol=1e-9)
    assert_allclose(b.components_, 1e-100 * a.components_, rtol=1e-9)
    assert_allclose(b.mean_, 1e100 * a.mean_, rtol=1e-12)


def test_wpca_reg_beyond_the_rescaled_range_dominates():
    """Data 1e-150 (rescaled by ~2**498 inside) with reg 1e10: reg in the rescaled units
    overflows; the rows are then v / sqrt(reg) (the variances ~1e-300 are negligible)."""
    X, _ = _points()
    est = WPCA(reg=1e10).fit(1e-150 * X)
    assert_allclose(np.linalg.norm(est.components_, axis=1), 1e-5, rtol=1e-12)
    assert_allclose(est.explained_variance_, 1e-300 * WPCA().fit(X).explained_variance_,
                    rtol=1e-9)


def test_whitening_ordinary_data_bit_identical_to_the_unscaled_formula():
    """Within 1e+-77 nothing is rescaled: the fit is the plain one, bit for bit."""
    X, _ = _points()
    est = WPCA().fit(X)
    Xc = X - X.mean(axis=0)
    assert_array_equal(est.mean_, X.mean(axis=0))
    assert_allclose(est.transform(X), Xc @ est.components_.T, rtol=0, atol=1e-12)


def test_mknn_refuses_pairs_far_beyond_the_training_scale():
    X, ids = _points()
    pairs, _ = vector_pairs()
    est = MkNN(n_neighbors=4).fit(X, ids)
    with pytest.raises(ValueError, match="Rescale the pairs"):
        est.pair_score(1e200 * pairs)


def test_mknn_tiny_data_is_not_all_ties():
    """1e-200 points: squared distances underflowed to 0 and every pair scored alike."""
    X, ids = _points()
    pairs, _ = vector_pairs()
    scores = MkNN(n_neighbors=4).fit(1e-200 * X, ids).pair_score(1e-200 * pairs)
    assert_array_equal(scores, MkNN(n_neighbors=4).fit(X, ids).pair_score(pairs))
    assert np.unique(scores).size > 3


@pytest.mark.parametrize("exponent", [-700, -400, 400, 700])
def test_plda_scores_at_extreme_powers_are_those_of_the_rescaled_data(exponent):
    """PLDA's fit (Kaldi's start W = B = I) is not scale-invariant, so data beyond 1e+-77 is
    fitted as the exactly rescaled data it is; its scores are those of that fit, and no
    silent constant score (1e-200) or LAPACK error (1e200) comes out."""
    X, ids = _points()
    Xs = np.ldexp(X, exponent)
    e = int(np.frexp(np.max(np.abs(Xs)))[1])
    reference = PLDA().fit(np.ldexp(Xs, -e), ids)
    pairs = Xs[:60].reshape(30, 2, -1)
    try:
        est = PLDA().fit(Xs, ids)
    except ValueError as error:  # its covariances cannot be stored
        assert abs(exponent) > 500 and "Rescale X" in str(error)
        return
    assert_allclose(est.pair_score(pairs), reference.pair_score(np.ldexp(pairs, -e)),
                    rtol=1e-12, atol=1e-12)
    assert_allclose(est.between_covariance_, np.ldexp(reference.between_covariance_, 2 * e))
    assert_allclose(est.log_likelihood_, np.array(reference.log_likelihood_)
                    - X.size * e * np.log(2.0), rtol=1e-12)


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_plda_at_1e200_and_1e_200_names_x(scale):
    X, ids = _points()
    with pytest.raises(ValueError, match=r"X has entries up to .*covariances.*Rescale X"):
        PLDA().fit(scale * X, ids)


@pytest.mark.parametrize("scale", [1e-200, 1e-100, 1e100, 1e200])
def test_nca_refuses_data_beyond_its_scale(scale):
    X, ids = _points()
    with pytest.raises(ValueError, match="X has entries up to .*Rescale X"):
        NCA(n_components=2, max_iter=5).fit(scale * X, ids)


# -- SGD's validation split --------------------------------------------------------------------

def _few(pairs, y, n_similar, n_dissimilar):
    rows = np.r_[np.flatnonzero(y == 1)[:n_similar], np.flatnonzero(y == -1)[:n_dissimilar]]
    return pairs[rows], y[rows]


@pytest.mark.parametrize("counts", [(1, 1), (1, 2), (2, 2), (3, 3), (9, 1)])
@pytest.mark.parametrize("make", [
    lambda: TSML(solver="sgd", max_iter=20, random_state=0),
    lambda: LDML(solver="sgd", max_iter=20, random_state=0)])
def test_sgd_with_too_few_pairs_says_what_it_needs(make, counts):
    pairs, y = _few(*vector_pairs(), *counts)
    n = sum(counts)
    with pytest.raises(ValueError, match=rf"validation_fraction=0.1 of the {n} pairs "
                                         rf"\({counts[0]} similar, {counts[1]} dissimilar\).*"
                                         r"one similar and one dissimilar.*solver='lbfgs'"):
        make().fit(pairs, y)


def test_sgd_with_just_enough_pairs_fits():
    pairs, y = _few(*vector_pairs(), 10, 10)  # 2 validation pairs, one of each
    TSML(solver="sgd", max_iter=20, random_state=0).fit(pairs, y)


def test_siamese_cnn_too_few_pairs_names_its_own_parameters():
    pairs, y = _few(*image_pairs(), 3, 3)
    est = SiameseCNN(n_components=4, n_maps=(3, 6, 8), batch_size=2, max_epochs=1,
                     random_state=0)
    with pytest.raises(ValueError, match=r"of the 6 pairs.*early_stopping=False"):
        est.fit(pairs, y)
    est.set_params(early_stopping=False).fit(pairs, y)  # the advice works


def test_validation_split_refuses_a_side_without_both_kinds():
    s = np.r_[np.ones(30), -np.ones(2)]  # 4 validation pairs: stratified, 0 dissimilar
    with pytest.raises(ValueError, match="32 pairs .30 similar, 2 dissimilar.: 4 for"):
        validation_split(s, 0.1, 0, "advice")


# -- set_output / get_feature_names_out: NCA, PLDA (LDA, LengthNormalizer already) ------------

OUTPUT = {"NCA": (lambda: NCA(n_components=2, max_iter=10), ["nca0", "nca1"]),
          "PLDA": (PLDA, [f"plda{i}" for i in range(6)]),
          "LDA": (lambda: LDA(n_components=2), ["lda0", "lda1"]),
          "LengthNormalizer": (LengthNormalizer, [f"f{i}" for i in range(6)])}


@pytest.mark.parametrize("name", list(OUTPUT))
def test_set_output_pandas_and_polars(name):
    pd = pytest.importorskip("pandas")
    make, columns = OUTPUT[name]
    X, ids = _points()
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)], index=np.arange(72) + 100)
    est = make().set_output(transform="pandas").fit(frame, ids)
    assert list(est.feature_names_in_) == list(frame.columns)
    assert list(est.get_feature_names_out()) == columns
    Z = est.transform(frame)
    assert isinstance(Z, pd.DataFrame) and list(Z.columns) == columns
    assert_array_equal(Z.index, frame.index)
    plain = make().fit(X, ids).transform(X)
    assert_array_equal(Z.to_numpy(), plain)
    pl = pytest.importorskip("polars")
    assert isinstance(est.set_output(transform="polars").transform(frame), pl.DataFrame)


@pytest.mark.parametrize("name", ["NCA", "PLDA"])
def test_pair_methods_ignore_the_output_container(name):
    make, _ = OUTPUT[name]
    X, ids = _points()
    pairs, y = vector_pairs()
    expected = make().fit(X, ids).pair_score(pairs)
    with config_context(transform_output="pandas"):
        est = make().fit(X, ids)
        assert_array_equal(est.pair_score(pairs), expected)
        assert est.transform(pairs).shape == (120, 2, len(OUTPUT[name][1]))  # pairs: ndarray
    if name == "PLDA":
        sets = est.set_output(transform="polars").score_sets([X[:3]], [X[3:5]])
        assert np.isfinite(sets).all()


def test_refit_on_pairs_forgets_the_column_names():
    pd = pytest.importorskip("pandas")
    X, ids = _points()
    est = PLDA().fit(pd.DataFrame(X, columns=list("abcdef")), ids)
    est.fit(*vector_pairs())
    assert not hasattr(est, "feature_names_in_")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.transform(X)
