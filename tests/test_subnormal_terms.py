"""No float32 subnormal reaches a product after a loss's per-pair gradients.

LDML's and DDML's per-pair gradients carry a sigmoid's weight; deep in its tail ``w_i delta_i``
lies below float32's smallest normal number. Over index pairs a point whose pairs all lie there
got a row of subnormals in R, the scatter of the pass, and the GEMM ``R^T X`` after it ran many
times slower on x86 (a DDML float32 evaluation 42x, measured); so did a mapping's products
after ``dJ/da / n``, the mean's division. The terms are written as 0 instead, the rule of the
pairs of vectors' kernels. Each point here is in one pair, so that a row of R is one pair's
term.
"""

import numpy as np
import pytest

import metricfit
from metricfit.losses import _index, _rows, ddml, ldml
from metricfit.losses._linear import embedding_cost_grad
from metricfit.pairs.index import IndexChunk

TINY = float(np.finfo(np.float32).tiny)
N_PAIRS, D = 300, 6


def _single_pairs(scale, seed):
    """Points (2 N_PAIRS, D) float32, each in exactly one pair of ``index``."""
    rng = np.random.default_rng(seed)
    points = (scale * rng.standard_normal((2 * N_PAIRS, D))).astype(np.float32)
    return points, rng.permutation(2 * N_PAIRS).reshape(N_PAIRS, 2)


def _sigmoid(t):
    e = np.exp(-np.abs(t))
    return np.where(t >= 0, 1 / (1 + e), e / (1 + e))


def _scatter_twin(points, index, w, sign_second):
    """R of the plain-NumPy twin: ``w_i (x_p - x_q)`` in float64, terms under float32's
    smallest normal number as 0, onto row p and (times ``sign_second``) row q."""
    X = points.astype(np.float64)
    terms = w[:, None] * (X[index[:, 0]] - X[index[:, 1]])
    assert np.any((terms != 0) & (np.abs(terms) < TINY)), "the data must reach the tail"
    assert np.any(np.abs(terms) >= TINY), "and keep some terms of normal size"
    terms[np.abs(terms) < TINY] = 0.0
    R = np.zeros(points.shape, dtype=np.float32)
    R[index[:, 0]] = terms.astype(np.float32)
    R[index[:, 1]] = (sign_second * terms).astype(np.float32)
    return R


def _check(R, twin):
    assert not np.any((R != 0) & (np.abs(R) < TINY)), "a subnormal reached R"
    near = np.abs(np.abs(twin.astype(np.float64)) / TINY - 1) < 1e-5  # at the threshold
    np.testing.assert_allclose(R[~near], twin[~near], rtol=1e-5, atol=0)


def _ldml_pass(points, index, s, b):
    E = ldml.metric_embedding(points, np.eye(D, dtype=np.float32))  # [X M, X], M = I
    R = np.zeros(points.shape, dtype=np.float32)
    ldml._index_pair_block(E, IndexChunk(index), s, R, b)
    return R


def _ddml_pass(points, index, s, kernel):
    R = np.zeros(points.shape, dtype=np.float32)
    _index.linear_pair_block(points, IndexChunk(index), s, R, kernel)
    return R


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_ldml_index_pass_adds_no_subnormal(threads):
    """Similar pairs with ``b`` 95 above the median distance: weights near e^-95."""
    points, index = _single_pairs(1.0, seed=0)
    s = np.ones(N_PAIRS, dtype=np.float32)
    X = points.astype(np.float64)
    dist = np.sum((X[index[:, 0]] - X[index[:, 1]]) ** 2, axis=1)
    b = float(np.median(dist)) + 95.0
    twin = _scatter_twin(points, index, s * _sigmoid(s * (dist - b)), -1.0)
    with metricfit.threads(1):
        R1 = _ldml_pass(points, index, s, b)  # one thread: the fused kernel
    with metricfit.threads(threads):
        R = _ldml_pass(points, index, s, b)  # several: weights, then the scatter by point
    _check(R, twin)
    assert R.tobytes() == R1.tobytes()


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_ddml_index_pass_and_rows_kernel_add_no_subnormal(threads):
    """Dissimilar pairs at ``T z`` near -95 (T = 10, tau = 1: |a - b|^2 near 10.5), through
    the index pass and the rows kernel on gathered rows (the composition's kernel)."""
    T, tau = 10.0, 1.0
    points, index = _single_pairs(np.sqrt(10.5 / (2 * D)), seed=1)
    s = -np.ones(N_PAIRS, dtype=np.float32)
    X = points.astype(np.float64)
    dd = np.sum((X[index[:, 0]] - X[index[:, 1]]) ** 2, axis=1)
    twin = _scatter_twin(points, index, s * _sigmoid(T * (1 - s * (tau - dd))), -1.0)
    kernel = ddml._bind(T, tau)
    with metricfit.threads(threads):
        R = _ddml_pass(points, index, s, kernel)
        R_gathered = _ddml_pass(points, index, s, _rows.PairKernel(kernel.rows, *kernel.extra))
    _check(R, twin)
    assert R.tobytes() == R_gathered.tobytes()


def test_the_mean_of_ddml_embedding_gradients_carries_no_subnormal():
    """``dJ/da / n`` (what a mapping back-propagates): terms of normal size that the mean's
    division takes below the smallest normal number are 0, the others the NumPy twin's."""
    T, tau = 10.0, 1.0
    points, index = _single_pairs(np.sqrt(10.5 / (2 * D)), seed=2)
    a, b = points[index[:, 0]], points[index[:, 1]]
    s = -np.ones(N_PAIRS, dtype=np.float32)
    kernel = ddml._bind(T, tau)
    _, Ga, Gb = embedding_cost_grad(kernel, a, b, s)
    diff = a.astype(np.float64) - b
    w = s * _sigmoid(T * (1 - s * (tau - np.sum(diff ** 2, axis=1))))
    terms = (w[:, None] * diff).astype(np.float32) / np.float32(N_PAIRS)
    assert np.any((terms != 0) & (np.abs(terms) < TINY)), "the mean must reach the tail"
    terms[np.abs(terms) < TINY] = 0.0
    _check(Ga, terms)
    _check(Gb, -terms)


def test_zero_subnormals_equals_its_numpy_twin():
    """Subnormals of either sign become 0; zeros keep their sign; normal numbers, infinities
    and NaN are untouched; any shape, float32 and float64."""
    for dtype in (np.float32, np.float64):
        tiny = np.finfo(dtype).tiny
        values = np.array([tiny / 3, -tiny / 5, tiny, -tiny, 0.0, -0.0, 1.5, -2e-30,
                           np.inf, -np.inf, np.nan, tiny * (1 - np.finfo(dtype).eps)],
                          dtype=dtype)
        G = np.tile(values, (3, 1))
        twin = G.copy()
        twin[(np.abs(twin) > 0) & (np.abs(twin) < tiny)] = 0.0
        _rows.zero_subnormals(G)
        assert G.tobytes() == twin.tobytes()
        assert np.signbit(G[:, 5]).all() and not np.signbit(G[:, 1]).any()
