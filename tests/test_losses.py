"""Loss kernels: finite differences, NumPy twins, prepared vs stateless, chunking, dtypes,
zero vectors, properties."""

import numpy as np
import pytest
from _reference import (
    central_differences,
    csml_cost_grad_ref,
    relative_error,
    tsml_cost_grad_ref,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from metricfit.losses import csml, tsml

LOSSES = {"tsml": (tsml, tsml_cost_grad_ref), "csml": (csml, csml_cost_grad_ref)}
SHAPES = [(2, 5), (5, 3), (4, 4), (1, 6)]  # (k, d), k != d in most
LABELS = ["similar", "dissimilar", "mixed"]


def make_problem(k, d, labels, n=9, seed=0):
    rng = np.random.default_rng(seed)
    X1 = rng.normal(size=(n, d))
    X2 = rng.normal(size=(n, d))
    s = {"similar": np.ones(n), "dissimilar": -np.ones(n), "mixed": rng.choice([-1, 1], n)}
    A = rng.normal(size=(k, d))
    A0 = rng.normal(size=(k, d))
    return A, X1, X2, s[labels], A0


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("k, d", SHAPES)
@pytest.mark.parametrize("labels", LABELS)
@pytest.mark.parametrize("lam", [0.0, 0.7])
@pytest.mark.parametrize("path", ["cost_grad", "objective"])
def test_gradient_matches_central_differences(name, k, d, labels, lam, path):
    module, _ = LOSSES[name]
    A, X1, X2, s, A0 = make_problem(k, d, labels)
    if path == "cost_grad":
        f = lambda A: module.cost_grad(A, X1, X2, s, lam=lam, A0=A0)  # noqa: E731
    else:
        f = module.objective(X1, X2, s, lam=lam, A0=A0)
    J, G = f(A)
    num = central_differences(lambda A: f(A)[0], A)
    assert G.shape == A.shape and G.dtype == np.float64
    assert relative_error(G, num, J) < 1e-6


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("k, d", SHAPES)
@pytest.mark.parametrize("labels", LABELS)
def test_kernels_match_numpy_twin(name, k, d, labels):
    module, reference = LOSSES[name]
    A, X1, X2, s, A0 = make_problem(k, d, labels, seed=1)
    J_ref, G_ref = reference(A, X1, X2, s, lam=0.3, A0=A0)
    for J, G in (module.cost_grad(A, X1, X2, s, lam=0.3, A0=A0),
                 module.objective(X1, X2, s, lam=0.3, A0=A0)(A)):
        np.testing.assert_allclose(J, J_ref, rtol=1e-12)
        np.testing.assert_allclose(G, G_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", LOSSES)
def test_chunking_does_not_change_the_result(name):
    module, _ = LOSSES[name]
    A, X1, X2, s, A0 = make_problem(3, 7, "mixed", n=50, seed=2)
    J, G = module.cost_grad(A, X1, X2, s, lam=0.1, A0=A0)
    for chunk_size in (1, 7, 49):
        Jc, Gc = module.cost_grad(A, X1, X2, s, lam=0.1, A0=A0, chunk_size=chunk_size)
        Jo, Go = module.objective(X1, X2, s, lam=0.1, A0=A0, chunk_size=chunk_size)(A)
        np.testing.assert_allclose([Jc, Jo], J, rtol=1e-12)
        np.testing.assert_allclose(Gc, G, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(Go, G, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("name", LOSSES)
def test_float32_matches_float64(name):
    module, _ = LOSSES[name]
    A, X1, X2, s, A0 = make_problem(6, 10, "mixed", n=200, seed=3)
    J64, G64 = module.objective(X1, X2, s, lam=0.2, A0=A0)(A)
    f32 = module.objective(X1.astype(np.float32), X2.astype(np.float32), s, lam=0.2,
                           A0=A0.astype(np.float32))
    J32, G32 = f32(A.astype(np.float32))
    J32s, G32s = module.cost_grad(A.astype(np.float32), X1.astype(np.float32),
                                  X2.astype(np.float32), s, lam=0.2, A0=A0)
    assert J32.dtype == G32.dtype == J32s.dtype == G32s.dtype == np.float32
    for J, G in ((J32, G32), (J32s, G32s)):
        assert abs(J - J64) / abs(J64) < 1e-4
        assert relative_error(G, G64) < 1e-4


@pytest.mark.parametrize("name", LOSSES)
def test_flat_parameters_for_scipy(name):
    module, _ = LOSSES[name]
    A, X1, X2, s, A0 = make_problem(3, 4, "mixed")
    f = module.objective(X1, X2, s, lam=0.5, A0=A0)
    J, G = f(A)
    J_flat, G_flat = f(A.ravel())
    assert G_flat.shape == (12,)
    np.testing.assert_array_equal(G_flat, G.ravel())
    assert J_flat == J


@pytest.mark.parametrize("name", LOSSES)
def test_generic_composition_equals_prepared_objective(name):
    """Truth path: loss on embeddings + linear backward by hand; fast path: objective."""
    module, _ = LOSSES[name]
    A, X1, X2, s, _ = make_problem(4, 6, "mixed", n=30, seed=4)
    J, dJda, dJdb = module.embedding_cost_grad(X1 @ A.T, X2 @ A.T, s)
    G = dJda.T @ X1 + dJdb.T @ X2
    Jf, Gf = module.objective(X1, X2, s)(A)
    np.testing.assert_allclose(Jf, J, rtol=1e-12)
    np.testing.assert_allclose(Gf, G, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("name", LOSSES)
def test_zero_vectors_and_zero_diagonal_are_finite(name):
    module, reference = LOSSES[name]
    A, X1, X2, s, A0 = make_problem(3, 5, "mixed", n=6, seed=5)
    X1[0] = 0.0  # a zero input vector
    X2[1] = -X1[1]  # c = A(x + y) = 0 for a similar pair
    s[1] = 1
    X2[2] = X1[2]  # c = A(x - y) = 0 for a dissimilar pair
    s[2] = -1
    A[:, :] = A[:, :]
    for J, G in (module.cost_grad(A, X1, X2, s, lam=0.1, A0=A0),
                 module.objective(X1, X2, s, lam=0.1, A0=A0)(A),
                 module.cost_grad(np.zeros_like(A), X1, X2, s)):
        assert np.isfinite(J) and np.isfinite(G).all()
    J_ref, G_ref = reference(A, X1, X2, s, lam=0.1, A0=A0)
    J, G = module.objective(X1, X2, s, lam=0.1, A0=A0)(A)
    np.testing.assert_allclose(J, J_ref, rtol=1e-12)
    np.testing.assert_allclose(G, G_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", LOSSES)
def test_bad_input_raises(name):
    module, _ = LOSSES[name]
    A, X1, X2, s, A0 = make_problem(3, 5, "mixed")
    with pytest.raises(ValueError, match="same shape"):
        module.cost_grad(A, X1, X2[:, :4], s)
    with pytest.raises(ValueError, match="NaN"):
        module.cost_grad(A, np.where(X1 > 1, np.nan, X1), X2, s)
    with pytest.raises(ValueError, match="labels"):
        module.cost_grad(A, X1, X2, s * 2)
    with pytest.raises(ValueError, match=r"shape \(k, 5\)"):
        module.cost_grad(A[:, :4], X1, X2, s)
    with pytest.raises(ValueError, match="lam"):
        module.objective(X1, X2, s, lam=-1.0)


finite = st.floats(-10, 10, allow_nan=False, allow_subnormal=False, width=64)


@settings(max_examples=50, deadline=None)
@given(
    X=arrays(np.float64, (6, 2, 3), elements=finite),
    A=arrays(np.float64, (2, 3), elements=finite),
    s=arrays(np.int8, 6, elements=st.sampled_from([-1, 1])),
)
def test_tsml_cost_is_nonnegative(X, A, s):
    """J_i = 1/2(|a|-1)^2 + 1/2(|b|-1)^2 + |a| + |b| - |c| >= 0 by the triangle inequality."""
    J, G = tsml.cost_grad(A, X[:, 0], X[:, 1], s)
    assert J >= -1e-9 and np.isfinite(G).all()


@settings(max_examples=50, deadline=None)
@given(
    X=arrays(np.float64, (6, 2, 3), elements=finite),
    A=arrays(np.float64, (2, 3), elements=finite),
    s=arrays(np.int8, 6, elements=st.sampled_from([-1, 1])),
)
def test_csml_cost_is_a_mean_cosine(X, A, s):
    J, G = csml.cost_grad(A, X[:, 0], X[:, 1], s)
    assert -1 - 1e-12 <= J <= 1 + 1e-12 and np.isfinite(G).all()


@pytest.mark.parametrize("name", LOSSES)
def test_batch_is_the_objective_on_a_subset(name):
    module, _ = LOSSES[name]
    A, X1, X2, s, A0 = make_problem(3, 5, "mixed", n=40, seed=6)
    f = module.objective(X1, X2, s, lam=0.4, A0=A0)
    idx = np.array([3, 17, 17, 25, 39])
    J, G = f.batch(A, idx)
    J_sub, G_sub = module.objective(X1[idx], X2[idx], s[idx], lam=0.4, A0=A0)(A)
    np.testing.assert_allclose(J, J_sub, rtol=1e-12)
    np.testing.assert_allclose(G, G_sub, rtol=1e-10, atol=1e-13)
    J_flat, G_flat = f.batch(A.ravel(), idx)
    np.testing.assert_array_equal(G_flat, G.ravel())
    np.testing.assert_array_equal(f.labels, s)
    assert f.n_pairs == 40
