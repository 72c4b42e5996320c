"""DDML (seed 004 eqs. 5-7) and LDML (seed 001 eqs. 2-4) losses: finite differences, plain-NumPy
twins, prepared vs stateless, batch, chunking, dtypes, extreme inputs, properties, bad input,
and the sign of LDML's gradient."""

import numpy as np
import pytest
from _reference import central_differences, relative_error
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import expit

from metricfit.losses import ddml, ldml

SHAPES = [(2, 5), (5, 3), (4, 4)]  # (k, d), k != d in most
LABELS = ["similar", "dissimilar", "mixed"]


# ---------------------------------------------------------------- plain-NumPy twins, pair by pair


def ddml_cost_grad_ref(A, X1, X2, s, lam=0.0, A0=None, T=10.0, tau=1.0):
    """Seed 004 eqs. 5-8 (eq. 7 as printed, margin tau), pair by pair."""
    J, G = 0.0, np.zeros_like(A)
    for x, y, si in zip(X1, X2, s, strict=True):
        a, b = A @ x, A @ y
        dist2 = (a - b) @ (a - b)
        z = 1 - si * (tau - dist2)  # eq. 6
        J += 0.5 * np.logaddexp(0.0, T * z) / T  # eq. 5, g(z) = log(1 + e^{Tz}) / T
        dJda = si * (a - b) / (1 + np.exp(-T * (1 - si * tau + si * dist2)))  # eq. 7
        G += np.outer(dJda, x) - np.outer(dJda, y)  # d(a - b)/dA
    A0 = np.zeros_like(A) if A0 is None else A0
    n = len(s)
    return J / n + 0.5 * lam * np.sum((A - A0) ** 2), G / n + lam * (A - A0)


def ldml_cost_grad_ref(M, b, X1, X2, s, lam=0.0):
    """-1/n L of seed 001 eq. 3 with p of eq. 2; eq. 4 with the sign of p = sigma(b - W^T X)."""
    L, dLdM, dLdb = 0.0, np.zeros_like(M), 0.0
    for x, y, si in zip(X1, X2, s, strict=True):
        delta = x - y
        Xn = np.outer(delta, delta)  # X_n, so that d_M = W^T X_n
        p = expit(b - np.sum(M * Xn))  # eq. 2
        t = (1 + si) / 2
        L += t * np.log(p) + (1 - t) * np.log1p(-p)  # eq. 3
        dLdM += -(t - p) * Xn  # eq. 4, sign corrected: du/dW = -X_n
        dLdb += t - p
    n = len(s)
    return -L / n + 0.5 * lam * np.sum(M * M), -dLdM / n + lam * M, -dLdb / n


# ---------------------------------------------------------------- problems


def make_ddml_problem(k, d, labels, n=9, seed=0):
    """A scaled so that |A(x - y)|^2 ~ 1, the margin: sigma(T z) is not saturated."""
    rng = np.random.default_rng(seed)
    X1 = rng.normal(size=(n, d))
    X2 = rng.normal(size=(n, d))
    s = {"similar": np.ones(n), "dissimilar": -np.ones(n), "mixed": rng.choice([-1, 1], n)}
    scale = 1 / np.sqrt(2 * k * d)
    A = scale * rng.normal(size=(k, d))
    A0 = scale * rng.normal(size=(k, d))
    return A, X1, X2, s[labels], A0


def make_ldml_problem(d, labels, n=9, seed=0):
    """M non-symmetric, b the median distance: the probabilities are spread out."""
    rng = np.random.default_rng(seed)
    X1 = rng.normal(size=(n, d)) / np.sqrt(d)
    X2 = rng.normal(size=(n, d)) / np.sqrt(d)
    s = {"similar": np.ones(n), "dissimilar": -np.ones(n), "mixed": rng.choice([-1, 1], n)}
    M = np.eye(d) + 0.3 * rng.normal(size=(d, d))
    D = X1 - X2
    b = float(np.median(np.einsum("ij,jk,ik->i", D, M, D)))
    return M, b, X1, X2, s[labels]


def test_the_old_module_registry_is_deprecated():
    import metricfit.losses

    with pytest.warns(FutureWarning, match="metricfit.losses.LOSSES is deprecated"):
        modules = metricfit.losses.LOSSES
    assert modules["ddml"] is ddml and modules["ldml"] is ldml


# ================================================================ DDML


@pytest.mark.parametrize("k, d", SHAPES)
@pytest.mark.parametrize("labels", LABELS)
@pytest.mark.parametrize("lam", [0.0, 0.7])
@pytest.mark.parametrize("T", [1.0, 10.0])
@pytest.mark.parametrize("tau", [1.0, 0.5])
@pytest.mark.parametrize("path", ["cost_grad", "objective", "batch"])
def test_ddml_gradient_matches_central_differences(k, d, labels, lam, T, tau, path):
    A, X1, X2, s, A0 = make_ddml_problem(k, d, labels)
    if path == "cost_grad":
        f = lambda A: ddml.cost_grad(A, X1, X2, s, lam=lam, A0=A0, T=T, tau=tau)  # noqa: E731
    elif path == "objective":
        f = ddml.objective(X1, X2, s, lam=lam, A0=A0, T=T, tau=tau)
    else:  # the generic composition over all pairs (in another order)
        g = ddml.objective(X1, X2, s, lam=lam, A0=A0, T=T, tau=tau)
        f = lambda A: g.batch(A, np.arange(len(s))[::-1])  # noqa: E731
    J, G = f(A)
    num = central_differences(lambda A: f(A)[0], A)
    assert G.shape == A.shape and G.dtype == np.float64
    assert relative_error(G, num) < 1e-6


def test_ddml_problem_is_not_saturated():
    """The FD problems sit at the margin: the weights sigma(T z) take intermediate values."""
    A, X1, X2, s, _ = make_ddml_problem(4, 4, "mixed", n=200)
    dist2 = np.sum(((X1 - X2) @ A.T) ** 2, axis=1)
    sig = expit(10 * (1 - s * (1 - dist2)))
    assert np.mean((sig > 0.01) & (sig < 0.99)) > 0.2


@pytest.mark.parametrize("k, d", SHAPES)
@pytest.mark.parametrize("labels", LABELS)
@pytest.mark.parametrize("T, tau", [(1.0, 1.0), (10.0, 1.0), (10.0, 0.5)])
def test_ddml_kernels_match_numpy_twin(k, d, labels, T, tau):
    A, X1, X2, s, A0 = make_ddml_problem(k, d, labels, seed=1)
    J_ref, G_ref = ddml_cost_grad_ref(A, X1, X2, s, lam=0.3, A0=A0, T=T, tau=tau)
    f = ddml.objective(X1, X2, s, lam=0.3, A0=A0, T=T, tau=tau)
    for J, G in (ddml.cost_grad(A, X1, X2, s, lam=0.3, A0=A0, T=T, tau=tau), f(A),
                 f.batch(A, np.arange(len(s)))):
        np.testing.assert_allclose(J, J_ref, rtol=1e-12)
        np.testing.assert_allclose(G, G_ref, rtol=1e-10, atol=1e-12)


def test_ddml_prepared_equals_stateless_and_generic_composition():
    A, X1, X2, s, _ = make_ddml_problem(4, 6, "mixed", n=30, seed=4)
    J, dJda, dJdb = ddml.embedding_cost_grad(X1 @ A.T, X2 @ A.T, s, T=5.0, tau=0.7)
    np.testing.assert_array_equal(dJdb, -dJda)
    G = dJda.T @ X1 + dJdb.T @ X2
    for Jf, Gf in (ddml.objective(X1, X2, s, T=5.0, tau=0.7)(A),
                   ddml.cost_grad(A, X1, X2, s, T=5.0, tau=0.7)):
        np.testing.assert_allclose(Jf, J, rtol=1e-12)
        np.testing.assert_allclose(Gf, G, rtol=1e-10, atol=1e-13)


def test_ddml_embedding_gradient_matches_central_differences():
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(6, 3)) * 0.4, rng.normal(size=(6, 3)) * 0.4
    s = np.array([1, -1, 1, -1, 1, -1])
    J, Ga, Gb = ddml.embedding_cost_grad(a, b, s, T=3.0, tau=0.8)
    num_a = central_differences(lambda a: ddml.embedding_cost_grad(a, b, s, 3.0, 0.8)[0], a)
    num_b = central_differences(lambda b: ddml.embedding_cost_grad(a, b, s, 3.0, 0.8)[0], b)
    assert relative_error(Ga, num_a) < 1e-6 and relative_error(Gb, num_b) < 1e-6


def test_ddml_chunking_does_not_change_the_result():
    A, X1, X2, s, A0 = make_ddml_problem(3, 7, "mixed", n=50, seed=2)
    J, G = ddml.cost_grad(A, X1, X2, s, lam=0.1, A0=A0)
    for chunk_size in (1, 7, 49, 50, 51):
        Jc, Gc = ddml.cost_grad(A, X1, X2, s, lam=0.1, A0=A0, chunk_size=chunk_size)
        f = ddml.objective(X1, X2, s, lam=0.1, A0=A0, chunk_size=chunk_size)
        Jo, Go = f(A)
        Jb, Gb = f.batch(A, np.arange(50))
        np.testing.assert_allclose([Jc, Jo, Jb], J, rtol=1e-12)
        for Gx in (Gc, Go, Gb):
            np.testing.assert_allclose(Gx, G, rtol=1e-11, atol=1e-13)


def test_ddml_float32_matches_float64():
    A, X1, X2, s, A0 = make_ddml_problem(6, 10, "mixed", n=200, seed=3)
    J64, G64 = ddml.objective(X1, X2, s, lam=0.2, A0=A0)(A)
    X1f, X2f, Af, A0f = (x.astype(np.float32) for x in (X1, X2, A, A0))
    f32 = ddml.objective(X1f, X2f, s, lam=0.2, A0=A0f)
    J32, G32 = f32(Af)
    J32s, G32s = ddml.cost_grad(Af, X1f, X2f, s, lam=0.2, A0=A0)
    J32b, G32b = f32.batch(Af, np.arange(200))
    J32e, Ga32, Gb32 = ddml.embedding_cost_grad(X1f @ Af.T, X2f @ Af.T, s)
    assert type(J32e) is float and J32e == float(np.float32(J32e))  # rounded to float32
    assert Ga32.dtype == Gb32.dtype == np.float32
    for J, G in ((J32, G32), (J32s, G32s), (J32b, G32b)):
        assert J.dtype == G.dtype == np.float32
        assert abs(J - J64) / abs(J64) < 1e-4
        assert relative_error(G, G64) < 1e-4


def test_ddml_flat_parameters_for_scipy():
    A, X1, X2, s, A0 = make_ddml_problem(3, 4, "mixed")
    f = ddml.objective(X1, X2, s, lam=0.5, A0=A0)
    J, G = f(A)
    J_flat, G_flat = f(A.ravel())
    assert G_flat.shape == (12,)
    np.testing.assert_array_equal(G_flat, G.ravel())
    assert J_flat == J


def test_ddml_batch_is_the_objective_on_a_subset():
    A, X1, X2, s, A0 = make_ddml_problem(3, 5, "mixed", n=40, seed=6)
    f = ddml.objective(X1, X2, s, lam=0.4, A0=A0, T=4.0, tau=0.6)
    idx = np.array([3, 17, 17, 25, 39])
    J, G = f.batch(A, idx)
    J_sub, G_sub = ddml.objective(X1[idx], X2[idx], s[idx], lam=0.4, A0=A0, T=4.0, tau=0.6)(A)
    np.testing.assert_allclose(J, J_sub, rtol=1e-12)
    np.testing.assert_allclose(G, G_sub, rtol=1e-10, atol=1e-13)
    J_flat, G_flat = f.batch(A.ravel(), idx)
    np.testing.assert_array_equal(G_flat, G.ravel())
    np.testing.assert_array_equal(f.labels, s)
    assert f.n_pairs == 40


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ddml_extreme_T_z_is_finite_and_asymptotic(dtype):
    """T = 1000 and huge distances: no overflow; J -> mean(max(z, 0)) / 2, weight -> s [z > 0]."""
    rng = np.random.default_rng(8)
    n, k, d = 8, 3, 4
    X1 = (1e3 * rng.normal(size=(n, d))).astype(dtype)
    X2 = (1e3 * rng.normal(size=(n, d))).astype(dtype)
    X2[0] = X1[0]  # zero distance, similar: z = 1 - tau = 0 exactly, J = log(2) / (2T)
    s = np.array([1, 1, 1, 1, -1, -1, -1, -1])
    A = rng.normal(size=(k, d)).astype(dtype)
    T = 1000.0
    J, G = ddml.cost_grad(A, X1, X2, s, T=T)
    Jo, Go = ddml.objective(X1, X2, s, T=T)(A)
    Je, Ga, Gb = ddml.embedding_cost_grad(X1 @ A.T, X2 @ A.T, s, T=T)
    for x in (J, G, Jo, Go, Je, Ga, Gb):
        assert np.isfinite(x).all()
    D = (X1 - X2).astype(np.float64)
    P = D @ A.T.astype(np.float64)
    z = 1 - s * (1 - np.sum(P * P, axis=1))
    J_asym = (0.5 * np.sum(np.maximum(z, 0)) + 0.5 * np.log(2) / T) / n
    w = s * (z > 0) + 0.5 * (z == 0)
    G_asym = (w[:, None] * P).T @ D / n
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    for Jx, Gx in ((J, G), (Jo, Go)):
        np.testing.assert_allclose(Jx, J_asym, rtol=rtol)
        np.testing.assert_allclose(Gx, G_asym, rtol=rtol * 10, atol=rtol * np.abs(G_asym).max())
    # the dissimilar pairs are far beyond the margin: they contribute nothing
    np.testing.assert_array_equal(Ga[4:], 0.0)


def test_ddml_zero_inputs_are_finite():
    A, X1, X2, s, A0 = make_ddml_problem(3, 5, "mixed", n=6, seed=5)
    X1[0] = 0.0
    X2[1] = X1[1]  # delta = 0
    for J, G in (ddml.cost_grad(A, X1, X2, s, lam=0.1, A0=A0),
                 ddml.objective(X1, X2, s, lam=0.1, A0=A0)(A),
                 ddml.cost_grad(np.zeros_like(A), X1, X2, s),
                 ddml.cost_grad(A, X1, X1, s)):
        assert np.isfinite(J) and np.isfinite(G).all()
    # A = 0: every distance is 0, z = 1 - s tau, zero gradient
    J, G = ddml.cost_grad(np.zeros_like(A), X1, X2, s, T=10.0, tau=1.0)
    np.testing.assert_allclose(J, np.mean(0.5 * np.logaddexp(0, 10 * (1 - s)) / 10), rtol=1e-12)
    np.testing.assert_array_equal(G, 0.0)
    J_ref, G_ref = ddml_cost_grad_ref(A, X1, X2, s, lam=0.1, A0=A0)
    J, G = ddml.objective(X1, X2, s, lam=0.1, A0=A0)(A)
    np.testing.assert_allclose(J, J_ref, rtol=1e-12)
    np.testing.assert_allclose(G, G_ref, rtol=1e-10, atol=1e-12)


def test_ddml_descent_pulls_similar_and_pushes_dissimilar():
    """Distances are scores: lower = more similar. Gradient steps shrink similar distances
    and grow dissimilar ones (from A at the margin)."""
    A, X1, X2, s, _ = make_ddml_problem(3, 6, "mixed", n=60, seed=9)
    f = ddml.objective(X1, X2, s, T=10.0)
    dist = lambda A: np.sum(((X1 - X2) @ A.T) ** 2, axis=1)  # noqa: E731
    d0, J0 = dist(A), f(A)[0]
    for _ in range(200):
        A = A - 0.05 * f(A)[1]
    d1 = dist(A)
    assert f(A)[0] < J0
    assert np.mean(d1[s > 0]) < np.mean(d0[s > 0]) and np.mean(d1[s < 0]) > np.mean(d0[s < 0])


def test_ddml_bad_input_raises():
    A, X1, X2, s, A0 = make_ddml_problem(3, 5, "mixed")
    with pytest.raises(ValueError, match="same shape"):
        ddml.cost_grad(A, X1, X2[:, :4], s)
    with pytest.raises(ValueError, match="same shape"):
        ddml.objective(X1, X2[:5], s)
    with pytest.raises(ValueError, match="NaN"):
        ddml.cost_grad(A, np.where(X1 > 1, np.nan, X1), X2, s)
    with pytest.raises(ValueError, match="NaN"):
        ddml.objective(X1, np.where(X2 > 1, np.inf, X2), s)
    with pytest.raises(ValueError, match="labels"):
        ddml.cost_grad(A, X1, X2, s * 2)
    with pytest.raises(ValueError, match="labels"):
        ddml.objective(X1, X2, np.arange(9) % 3 - 1)  # {-1, 0, 1}: mixed codings
    with pytest.raises(ValueError):
        ddml.cost_grad(A, X1, X2, s[:5])
    with pytest.raises(ValueError, match=r"shape \(k, 5\)"):
        ddml.cost_grad(A[:, :4], X1, X2, s)
    with pytest.raises(ValueError, match="A0"):
        ddml.cost_grad(A, X1, X2, s, A0=A0[:2])
    with pytest.raises(ValueError, match="lam"):
        ddml.objective(X1, X2, s, lam=-1.0)
    with pytest.raises(ValueError, match="lam"):
        ddml.cost_grad(A, X1, X2, s, lam=-1.0)
    for T in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="T must"):
            ddml.cost_grad(A, X1, X2, s, T=T)
    with pytest.raises(ValueError, match="tau"):
        ddml.objective(X1, X2, s, tau=np.nan)
    with pytest.raises(ValueError, match="T must"):
        ddml.embedding_cost_grad(X1, X2, s, T=0)


def test_ddml_accepts_01_labels():
    A, X1, X2, s, A0 = make_ddml_problem(3, 5, "mixed")
    J, G = ddml.cost_grad(A, X1, X2, s, lam=0.2, A0=A0)
    J01, G01 = ddml.objective(X1, X2, (s > 0).astype(int), lam=0.2, A0=A0)(A)
    np.testing.assert_allclose(J01, J, rtol=1e-12)
    np.testing.assert_allclose(G01, G, rtol=1e-10, atol=1e-13)


finite = st.floats(-10, 10, allow_nan=False, allow_subnormal=False, width=64)


@settings(max_examples=50, deadline=None)
@given(
    X=arrays(np.float64, (6, 2, 3), elements=finite),
    A=arrays(np.float64, (2, 3), elements=finite),
    s=arrays(np.int8, 6, elements=st.sampled_from([-1, 1])),
    T=st.floats(0.1, 1000.0),
    tau=st.floats(0.0, 2.0),
    lam=st.floats(0.0, 1.0),
)
def test_ddml_cost_is_nonnegative(X, A, s, T, tau, lam):
    """g > 0 and the regulariser >= 0, so J >= 0; the weights are bounded by |s| = 1."""
    J, G = ddml.cost_grad(A, X[:, 0], X[:, 1], s, lam=lam, T=T, tau=tau)
    assert J >= 0 and np.isfinite(J) and np.isfinite(G).all()
    J0, G0 = ddml.cost_grad(A, X[:, 0], X[:, 1], s, T=T, tau=tau)
    P = (X[:, 0] - X[:, 1]) @ A.T
    bound = np.abs(P).T @ np.abs(X[:, 0] - X[:, 1]) / 6  # |w_i| <= 1
    assert np.all(np.abs(G0) <= bound * (1 + 1e-12) + 1e-12)


# ================================================================ LDML


@pytest.mark.parametrize("d", [3, 5])
@pytest.mark.parametrize("labels", LABELS)
@pytest.mark.parametrize("lam", [0.0, 0.7])
@pytest.mark.parametrize("path", ["cost_grad", "objective", "batch"])
def test_ldml_gradient_matches_central_differences(d, labels, lam, path):
    M, b, X1, X2, s = make_ldml_problem(d, labels)
    f = ldml.objective(X1, X2, s, lam=lam)
    if path == "cost_grad":
        def fM(M):
            return ldml.cost_grad(M, b, X1, X2, s, lam=lam)[0]

        def fb(b):
            return ldml.cost_grad(M, b[0], X1, X2, s, lam=lam)[0]

        _, GM, gb = ldml.cost_grad(M, b, X1, X2, s, lam=lam)
        gb = np.array([gb])
    else:
        call = f if path == "objective" else (lambda th: f.batch(th, np.arange(len(s))))

        def fM(M):
            return call(ldml.pack(M, b))[0]

        def fb(b):
            return call(ldml.pack(M, b[0]))[0]

        J, g = call(ldml.pack(M, b))
        assert g.shape == (d * d + 1,) and g.dtype == np.float64
        # the flat theta all at once
        num = central_differences(lambda th: call(th)[0], ldml.pack(M, b))
        assert relative_error(g, num) < 1e-6
        GM, gb = ldml.unpack(g, d)
        gb = np.array([gb])
    num_M = central_differences(fM, M)
    num_b = central_differences(fb, np.array([b]))
    assert GM.shape == (d, d)
    assert relative_error(GM, num_M) < 1e-6
    assert relative_error(gb, num_b) < 1e-6


def test_ldml_problem_probabilities_are_spread():
    M, b, X1, X2, s = make_ldml_problem(5, "mixed", n=200)
    p = ldml.pair_probability(M, b, X1, X2)
    assert 0.2 < np.mean((p > 0.05) & (p < 0.95))


@pytest.mark.parametrize("d", [1, 3, 5])
@pytest.mark.parametrize("labels", LABELS)
def test_ldml_kernels_match_numpy_twin(d, labels):
    M, b, X1, X2, s = make_ldml_problem(d, labels, seed=1)
    J_ref, GM_ref, gb_ref = ldml_cost_grad_ref(M, b, X1, X2, s, lam=0.3)
    J, GM, gb = ldml.cost_grad(M, b, X1, X2, s, lam=0.3)
    f = ldml.objective(X1, X2, s, lam=0.3)
    for Jx, g in ((J, np.append(GM.ravel(), gb)), f(ldml.pack(M, b)),
                  f.batch(ldml.pack(M, b), np.arange(len(s)))):
        np.testing.assert_allclose(Jx, J_ref, rtol=1e-12)
        np.testing.assert_allclose(g[:-1].reshape(d, d), GM_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g[-1], gb_ref, rtol=1e-10, atol=1e-13)
    p_ref = expit(b - np.einsum("ij,jk,ik->i", X1 - X2, M, X1 - X2))
    np.testing.assert_allclose(ldml.pair_probability(M, b, X1, X2), p_ref, rtol=1e-12)


def test_ldml_gradient_in_M_is_symmetric():
    """delta delta^T is symmetric: the data term is, exactly, even for a non-symmetric M;
    only the symmetric part of M enters the cost."""
    M, b, X1, X2, s = make_ldml_problem(5, "mixed", n=40, seed=2)
    assert not np.allclose(M, M.T)
    J, GM, gb = ldml.cost_grad(M, b, X1, X2, s)
    np.testing.assert_array_equal(GM, GM.T)
    J2, GM2, gb2 = ldml.cost_grad(0.5 * (M + M.T), b, X1, X2, s)
    np.testing.assert_allclose([J2, gb2], [J, gb], rtol=1e-12)
    np.testing.assert_allclose(GM2, GM, rtol=1e-10, atol=1e-14)
    _, GMl, _ = ldml.cost_grad(M, b, X1, X2, s, lam=0.5)
    np.testing.assert_allclose(GMl, GM + 0.5 * M, rtol=1e-13, atol=1e-15)


def test_ldml_descent_lowers_the_negative_log_likelihood():
    """The sign check beyond finite differences: stepping along -grad lowers J (raises L),
    while ascending the paper's eq. 4 as printed (theta += eta sum (t - p) X_n) lowers L."""
    M, b, X1, X2, s = make_ldml_problem(4, "mixed", n=80, seed=3)
    f = ldml.objective(X1, X2, s)
    theta = ldml.pack(M, b)
    J0, g = f(theta)
    Js = [J0]
    for _ in range(100):
        theta = theta - 0.2 * f(theta)[1]
        Js.append(f(theta)[0])
    assert np.all(np.diff(Js) < 0) and Js[-1] < 0.9 * J0
    # the paper's printed eq. 4, taken as an ascent direction of L, is -n * (our dJ/dtheta) in
    # M but n * (ours) in b: in M it points the wrong way
    t = (1 + s) / 2
    p = ldml.pair_probability(M, b, X1, X2)
    D = X1 - X2
    eq4_M = np.einsum("i,ij,ik->jk", t - p, D, D)  # sum (t_n - p_n) X_n
    _, GM, gb = ldml.cost_grad(M, b, X1, X2, s)
    np.testing.assert_allclose(eq4_M / len(s), GM, rtol=1e-10, atol=1e-14)  # = +dJ/dM
    np.testing.assert_allclose(np.sum(t - p) / len(s), -gb, rtol=1e-10)  # = -dJ/db
    J_printed = ldml.cost_grad(M + 1e-2 * eq4_M, b, X1, X2, s)[0]
    assert J_printed > J0  # "ascending" eq. 4 as printed raises -L, i.e. lowers L


def test_ldml_prepared_equals_stateless_and_chunking_invariance():
    M, b, X1, X2, s = make_ldml_problem(6, "mixed", n=50, seed=4)
    J, GM, gb = ldml.cost_grad(M, b, X1, X2, s, lam=0.1)
    g = np.append(GM.ravel(), gb)
    theta = ldml.pack(M, b)
    for chunk_size in (1, 7, 49, 50, 51):
        Jc, GMc, gbc = ldml.cost_grad(M, b, X1, X2, s, lam=0.1, chunk_size=chunk_size)
        f = ldml.objective(X1, X2, s, lam=0.1, chunk_size=chunk_size)
        Jo, go = f(theta)
        Jb, gbt = f.batch(theta, np.arange(50))
        np.testing.assert_allclose([Jc, Jo, Jb], J, rtol=1e-12)
        for gx in (np.append(GMc.ravel(), gbc), go, gbt):
            np.testing.assert_allclose(gx, g, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(
            ldml.pair_probability(M, b, X1, X2, chunk_size=chunk_size),
            ldml.pair_probability(M, b, X1, X2), rtol=1e-14)


def test_ldml_batch_is_the_objective_on_a_subset():
    M, b, X1, X2, s = make_ldml_problem(4, "mixed", n=40, seed=6)
    f = ldml.objective(X1, X2, s, lam=0.4)
    theta = ldml.pack(M, b)
    idx = np.array([3, 17, 17, 25, 39])
    J, g = f.batch(theta, idx)
    J_sub, g_sub = ldml.objective(X1[idx], X2[idx], s[idx], lam=0.4)(theta)
    np.testing.assert_allclose(J, J_sub, rtol=1e-12)
    np.testing.assert_allclose(g, g_sub, rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(f.labels, s)
    assert f.n_pairs == 40 and f.n_params == 17


def test_ldml_float32_matches_float64():
    M, b, X1, X2, s = make_ldml_problem(10, "mixed", n=200, seed=3)
    J64, g64 = ldml.objective(X1, X2, s, lam=0.2)(ldml.pack(M, b))
    X1f, X2f = X1.astype(np.float32), X2.astype(np.float32)
    f32 = ldml.objective(X1f, X2f, s, lam=0.2)
    J32, g32 = f32(ldml.pack(M, b).astype(np.float32))
    J32d, g32d = f32(ldml.pack(M, b))  # float64 theta (what the optimizers pass)
    J32s, GM32, gb32 = ldml.cost_grad(M.astype(np.float32), b, X1f, X2f, s, lam=0.2)
    g32s = np.append(GM32.ravel(), gb32)
    assert J32s.dtype == GM32.dtype == gb32.dtype == np.float32
    for J, g in ((J32, g32), (J32d, g32d), (J32s, g32s)):
        assert J.dtype == g.dtype == np.float32
        assert abs(J - J64) / abs(J64) < 1e-4
        assert relative_error(g, g64) < 1e-4
    p32 = ldml.pair_probability(M, b, X1f, X2f)
    assert p32.dtype == np.float32
    np.testing.assert_allclose(p32, ldml.pair_probability(M, b, X1, X2), atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ldml_extreme_inputs_are_finite_and_asymptotic(dtype):
    """Huge distances and bias: no overflow; J -> mean(max(s (dist - b), 0)), p in {0, 1}."""
    rng = np.random.default_rng(8)
    n, d = 8, 4
    X1 = (1e3 * rng.normal(size=(n, d))).astype(dtype)
    X2 = (1e3 * rng.normal(size=(n, d))).astype(dtype)
    s = np.array([1, 1, 1, 1, -1, -1, -1, -1])
    M = np.eye(d, dtype=dtype)
    D = (X1 - X2).astype(np.float64)
    dist = np.sum(D * D, axis=1)
    for b in (-1e8, 0.0, float(np.median(dist)), 1e8):
        J, GM, gb = ldml.cost_grad(M, b, X1, X2, s)
        Jo, g = ldml.objective(X1, X2, s)(ldml.pack(M, b))
        p = ldml.pair_probability(M, b, X1, X2)
        assert np.isfinite([J, gb, Jo]).all() and np.isfinite(GM).all() and np.isfinite(g).all()
        assert np.all((p >= 0) & (p <= 1))
        J_asym = np.mean(np.maximum(s * (dist - b), 0))  # |s (dist - b)| >= ~1e4 here
        rtol = 1e-12 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose([J, Jo], J_asym, rtol=rtol)
        w = s * (s * (dist - b) > 0)
        np.testing.assert_allclose(gb, -np.mean(w), atol=1e-12)
        GM_asym = (w[:, None] * D).T @ D / n
        np.testing.assert_allclose(GM, GM_asym, rtol=rtol * 10,
                                   atol=rtol * max(np.abs(GM_asym).max(), 1))


def test_ldml_zero_inputs_are_finite():
    M, b, X1, X2, s = make_ldml_problem(3, "mixed", n=6, seed=5)
    X2[0] = X1[0]  # delta = 0: p = sigma(b)
    for J, GM, gb in (ldml.cost_grad(M, b, X1, X2, s, lam=0.1),
                      ldml.cost_grad(np.zeros_like(M), 0.0, X1, X2, s),
                      ldml.cost_grad(M, b, X1, X1, s)):
        assert np.isfinite([J, gb]).all() and np.isfinite(GM).all()
    # all distances 0 and b = 0: p = 1/2, J = log 2, GM = 0, gb = mean(1/2 - t)
    J, GM, gb = ldml.cost_grad(M, 0.0, X1, X1, s)
    np.testing.assert_allclose(J, np.log(2), rtol=1e-14)
    np.testing.assert_array_equal(GM, 0.0)
    np.testing.assert_allclose(gb, np.mean(0.5 - (1 + s) / 2), atol=1e-15)


def test_ldml_cost_is_the_mean_negative_log_likelihood_of_the_probabilities():
    M, b, X1, X2, s = make_ldml_problem(4, "mixed", n=30, seed=11)
    p = ldml.pair_probability(M, b, X1, X2)
    t = (1 + s) / 2
    J = ldml.cost_grad(M, b, X1, X2, s)[0]
    np.testing.assert_allclose(J, -np.mean(t * np.log(p) + (1 - t) * np.log1p(-p)), rtol=1e-12)
    J01 = ldml.cost_grad(M, b, X1, X2, t.astype(int))[0]  # {0, 1} labels
    assert J01 == J


def test_ldml_pack_unpack_round_trip():
    rng = np.random.default_rng(0)
    M, b = rng.normal(size=(3, 3)), 0.25
    theta = ldml.pack(M, b)
    assert theta.shape == (10,) and theta[-1] == b
    M2, b2 = ldml.unpack(theta, 3)
    np.testing.assert_array_equal(M2, M)
    assert b2 == b


def test_ldml_bad_input_raises():
    M, b, X1, X2, s = make_ldml_problem(5, "mixed")
    with pytest.raises(ValueError, match="same shape"):
        ldml.cost_grad(M, b, X1, X2[:, :4], s)
    with pytest.raises(ValueError, match="same shape"):
        ldml.objective(X1[:4], X2, s)
    with pytest.raises(ValueError, match="same shape"):
        ldml.pair_probability(M, b, X1, X2[:4])
    with pytest.raises(ValueError, match="NaN"):
        ldml.cost_grad(M, b, np.where(X1 > 0.3, np.nan, X1), X2, s)
    with pytest.raises(ValueError, match="NaN"):
        ldml.objective(X1, np.where(X2 > 0.3, np.nan, X2), s)
    with pytest.raises(ValueError, match="NaN|infinity"):
        ldml.pair_probability(M, b, np.where(X1 > 0.3, np.inf, X1), X2)
    with pytest.raises(ValueError, match="labels"):
        ldml.cost_grad(M, b, X1, X2, s * 2)
    with pytest.raises(ValueError, match="labels"):
        ldml.objective(X1, X2, np.arange(9) % 3 - 1)  # {-1, 0, 1}: mixed codings
    with pytest.raises(ValueError, match="square"):
        ldml.cost_grad(M[:, :4], b, X1, X2, s)
    with pytest.raises(ValueError, match="square"):
        ldml.cost_grad(M[:4, :4], b, X1, X2, s)
    with pytest.raises(ValueError, match="square"):
        ldml.pair_probability(M.ravel(), b, X1, X2)
    with pytest.raises(ValueError, match="square"):
        ldml.pack(M[:, :4], b)
    f = ldml.objective(X1, X2, s)
    with pytest.raises(ValueError, match="length"):
        f(ldml.pack(M, b)[:-1])
    with pytest.raises(ValueError, match="length"):
        f.batch(ldml.pack(M[:4, :4], b), [0, 1])
    with pytest.raises(ValueError, match="length"):
        f(ldml.pack(M, b)[None])
    with pytest.raises(ValueError, match="b must"):
        ldml.cost_grad(M, np.array([1.0, 2.0]), X1, X2, s)
    with pytest.raises(ValueError, match="b must"):
        ldml.cost_grad(M, np.nan, X1, X2, s)
    with pytest.raises(ValueError, match="lam"):
        ldml.objective(X1, X2, s, lam=-1.0)
    with pytest.raises(ValueError, match="lam"):
        ldml.cost_grad(M, b, X1, X2, s, lam=-1.0)


@settings(max_examples=50, deadline=None)
@given(
    X=arrays(np.float64, (6, 2, 3), elements=finite),
    M=arrays(np.float64, (3, 3), elements=finite),
    b=st.floats(-1e3, 1e3),
    s=arrays(np.int8, 6, elements=st.sampled_from([-1, 1])),
    lam=st.floats(0.0, 1.0),
)
def test_ldml_cost_is_nonnegative_and_p_a_probability(X, M, b, s, lam):
    J, GM, gb = ldml.cost_grad(M, b, X[:, 0], X[:, 1], s, lam=lam)
    assert J >= 0 and np.isfinite(J) and np.isfinite(GM).all() and np.isfinite(gb)
    assert -1 <= gb <= 1  # mean of p - t, each in [-1, 1]
    p = ldml.pair_probability(M, b, X[:, 0], X[:, 1])
    assert np.all((p >= 0) & (p <= 1))
