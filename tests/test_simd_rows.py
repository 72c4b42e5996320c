"""The row dot products of the prepared TSML / DDML / LDML kernels (metricfit.losses._simd_rows):
vector lanes in a fixed order, the same bits as the plain-NumPy twin, on any layout."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from metricfit.losses._rows import row_sumsq
from metricfit.losses._simd_rows import (
    BLOCK,
    dot_lanes_twin,
    pair_dot,
    pair_dot_narrow,
    pair_halves,
    pair_sumsq,
    pair_sumsq_narrow,
    row_dot,
)


@njit
def _all_rows(X, Y):
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        out[i] = row_dot(X, Y, i)
    return out


@njit
def _all_sumsq(X):
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        out[i] = row_sumsq(X, i)
    return out


def _twin(X, Y):
    return np.array([dot_lanes_twin(x, y) for x, y in zip(X, Y, strict=True)])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("k", [0, 1, 7, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 5, 300])
def test_the_compiled_sums_are_the_twin_s_bits(dtype, k):
    rng = np.random.default_rng(k)
    X = (rng.standard_normal((9, k)) * 10.0 ** rng.integers(-6, 6, (9, k))).astype(dtype)
    Y = rng.standard_normal((9, k)).astype(dtype)
    expected = _twin(X, Y)
    assert np.array_equal(_all_rows(X, Y), expected)  # C-contiguous: vector registers
    assert np.array_equal(_all_rows(np.asfortranarray(X), np.asfortranarray(Y)), expected)
    assert np.array_equal(_all_rows(X[:, ::-1].copy()[:, ::-1], Y[:, ::-1].copy()[:, ::-1]),
                          expected)  # strided rows: the scalar form, the same order
    assert np.array_equal(_all_sumsq(X), _twin(X, X))
    assert np.array_equal(np.array([row_dot(X, Y, i) for i in range(9)]), expected)  # Python


def test_the_order_is_fixed_not_left_to_the_compiler():
    """Entries that cancel only in a particular order: lane j mod 16, the lanes folded in
    halves, the tail last (a left-to-right sum gives another number)."""
    x = np.zeros(2 * BLOCK + 2)
    x[0], x[BLOCK], x[1], x[-1] = 1e16, -1e16, 1.0, 1.0  # lane 0 cancels; lane 1; the tail
    X = x[None, :]
    ones = np.ones_like(X)
    assert _all_rows(X, ones)[0] == 2.0
    assert sum(x.tolist()) != 2.0  # in order: 1e16 + 1 loses the 1


@settings(max_examples=40, deadline=None)
@given(k=st.integers(0, 70), seed=st.integers(0, 2 ** 16), scale=st.integers(-30, 30))
def test_any_row_equals_the_twin_and_is_close_to_the_exact_sum(k, seed, scale):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((3, k)) * 2.0 ** scale
    Y = rng.standard_normal((3, k))
    got = _all_rows(X, Y)
    assert np.array_equal(got, _twin(X, Y))
    products = X * Y  # the rounded products the sums add
    exact = np.array([math.fsum(row) for row in products])  # their correctly rounded sum
    bound = 2 * k * np.finfo(np.float64).eps * np.sum(np.abs(products), axis=1)
    assert np.all(np.abs(got - exact) <= bound)


@njit
def _pairs_of_rows(X, first, Y, second, narrow):
    out = np.empty(first.shape[0])
    for t in range(first.shape[0]):
        if narrow:
            out[t] = pair_dot_narrow(X, first[t], Y, second[t])
        else:
            out[t] = pair_dot(X, first[t], Y, second[t])
    return out


@pytest.mark.parametrize("narrow", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_rows_of_two_arrays_by_index_are_the_twin_s_bits(dtype, narrow):
    """pair_dot(X, i, Y, j) (index pairs: rows of one embedding E) and its CSML form with
    products rounded to the rows' dtype first: the twin's bits, vector or scalar form."""
    rng = np.random.default_rng(7)
    E = rng.standard_normal((30, 2 * BLOCK + 3)).astype(dtype)
    first, second = rng.integers(0, 30, 40), rng.integers(0, 30, 40)
    expected = np.array([dot_lanes_twin(E[p], E[q], narrow) for p, q in zip(first, second,
                                                                          strict=True)])
    assert np.array_equal(_pairs_of_rows(E, first, E, second, narrow), expected)
    assert np.array_equal(_pairs_of_rows(np.asfortranarray(E), first, np.asfortranarray(E),
                                         second, narrow), expected)
    if dtype == "float32":  # the two product forms differ in float32 only
        wide = np.array([dot_lanes_twin(E[p], E[q]) for p, q in zip(first, second,
                                                                      strict=True)])
        assert not np.array_equal(expected, wide) if narrow else True


@njit
def _sumsq_pairs(X, first, Y, second, coef, narrow):
    out = np.empty(first.shape[0])
    for t in range(first.shape[0]):
        if narrow:
            out[t] = pair_sumsq_narrow(X, first[t], Y, second[t], coef[t])
        else:
            out[t] = pair_sumsq(X, first[t], Y, second[t], coef[t])
    return out


@pytest.mark.parametrize("narrow", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_squared_combinations_are_the_twin_s_bits(dtype, narrow):
    """``sum_t (x_t + coef y_t)^2`` (TSML's |a + s b|^2 in the rows' dtype, DDML's |a - b|^2
    in float64): the twin's bits, vector or scalar form; close to the plain sum."""
    rng = np.random.default_rng(11)
    E = rng.standard_normal((25, 3 * BLOCK + 7)).astype(dtype)
    first, second = rng.integers(0, 25, 30), rng.integers(0, 25, 30)
    coef = np.where(rng.random(30) < 0.5, 1.0, -1.0).astype(dtype)
    expected = np.array([dot_lanes_twin(E[p], E[q], narrow, c)
                         for p, q, c in zip(first, second, coef, strict=True)])
    assert np.array_equal(_sumsq_pairs(E, first, E, second, coef, narrow), expected)
    F = np.asfortranarray(E)
    assert np.array_equal(_sumsq_pairs(F, first, F, second, coef, narrow), expected)
    plain = [np.sum((E[p].astype(float) + c * E[q].astype(float)) ** 2)
             for p, q, c in zip(first, second, coef, strict=True)]
    assert np.allclose(expected, plain, rtol=1e-5 if dtype == "float32" else 1e-13)


@njit
def _halves_pairs(E, first, second):
    out = np.empty(first.shape[0])
    for t in range(first.shape[0]):
        out[t] = pair_halves(E, first[t], E, second[t])
    return out


@pytest.mark.parametrize("h", [1, 5, BLOCK, 2 * BLOCK + 3, 300])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_products_of_half_row_differences_are_the_twin_s_bits(dtype, h):
    """LDML's ``delta^T M delta`` from rows ``[x M, x]`` of E: ``sum_{t < h} (E[p, t] - E[q,
    t]) (E[p, h + t] - E[q, h + t])``, the twin's bits in either form, close to the plain
    sum."""
    rng = np.random.default_rng(h)
    E = rng.standard_normal((20, 2 * h)).astype(dtype)
    first, second = rng.integers(0, 20, 25), rng.integers(0, 20, 25)
    expected = np.array([dot_lanes_twin(E[p], E[q], halves=True)
                         for p, q in zip(first, second, strict=True)])
    assert np.array_equal(_halves_pairs(E, first, second), expected)
    assert np.array_equal(_halves_pairs(np.asfortranarray(E), first, second), expected)
    Ed = E.astype(float)
    plain = [(Ed[p, :h] - Ed[q, :h]) @ (Ed[p, h:] - Ed[q, h:]) for p, q in zip(first, second,
                                                                             strict=True)]
    assert np.allclose(expected, plain, rtol=1e-12, atol=1e-12)
