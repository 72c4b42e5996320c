"""Gabor by separable direct convolution (metricfit.features._gabor_separable, issue 27): its
taps rebuild every kernel of gabor_bank, orientation pairs included; its magnitudes equal the
FFT reference's (metricfit.features._gabor.gabor_magnitudes) on large and small images, odd
banks and overlapping windows; its correlation equals the vector intrinsics' to the bit."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from numpy.testing import assert_allclose

from metricfit import _simd
from metricfit.features import Gabor
from metricfit.features._gabor import gabor_bank, gabor_magnitudes
from metricfit.features._gabor_separable import (
    _correlate_plain,
    separable_bank,
    separable_gabor_magnitudes,
)


def _kernels_of(bank, n_orientations, frequencies):
    """Each kernel rebuilt from the bank's taps: ``u v^T - c e e'^T`` on its support."""
    kernels = {}
    for q, h in enumerate(bank.half):
        s = slice(bank.start[q], bank.start[q] + 2 * h + 1)
        u = bank.col[0, s] + 1j * bank.col[1, s]
        v = bank.row[0, s] + 1j * bank.row[1, s]
        for k, col in ((bank.first[q], u), (bank.second[q], u.conj())):
            if k < 0:
                continue
            g = np.outer(v, col)  # rows: y (v), columns: x (u)
            b = bank.blur_id[k]
            if b >= 0:
                hb = bank.blur_half[b]
                assert hb == h
                t = slice(bank.blur_start[b], bank.blur_start[b] + 2 * hb + 1)
                c = bank.dc[0, k] + 1j * bank.dc[1, k]
                g = g - c * np.outer(bank.blur_row[0, t], bank.blur_col[0, t])
            kernels[k] = g
    assert sorted(kernels) == list(range(len(frequencies) * n_orientations))
    return [kernels[k] for k in sorted(kernels)]


@pytest.mark.parametrize("n_orientations", [1, 2, 3, 4, 7, 8])
@pytest.mark.parametrize("zero_mean", [True, False])
def test_taps_rebuild_the_bank(n_orientations, zero_mean):
    frequencies = [0.25, 0.13, 0.0625]
    bank = separable_bank(frequencies, n_orientations, zero_mean=zero_mean)
    ours = _kernels_of(bank, n_orientations, frequencies)
    for g, ref in zip(ours, gabor_bank(frequencies, n_orientations, zero_mean=zero_mean),
                      strict=True):
        assert g.shape == ref.shape
        assert_allclose(g, ref, rtol=1e-13, atol=1e-13 * np.abs(ref).max())


def test_default_bank_pairs_orientations():
    """8 orientations: 0 and pi/2 alone, (pi/8, 7pi/8), (pi/4, 3pi/4), (3pi/8, 5pi/8)
    paired: 5 units a scale instead of 8."""
    bank = separable_bank(0.25 / np.sqrt(2) ** np.arange(5), 8)
    assert len(bank.half) == 25
    for s in range(5):
        units = {(int(a) - 8 * s, int(b) - 8 * s if b >= 0 else -1)
                 for a, b in zip(bank.first, bank.second, strict=True) if 8 * s <= a < 8 * s + 8}
        assert units == {(0, -1), (1, 7), (2, 6), (3, 5), (4, -1)}


CASES = [  # (frequencies, n_orientations, zero_mean, image shape, block, step)
    ([0.25, 0.177, 0.125, 0.088, 0.0625], 8, True, (62, 47), (10, 10), None),
    ([0.25, 0.1], 8, False, (62, 47), (10, 10), None),
    ([0.25, 0.05], 5, True, (20, 16), (6, 5), (3, 2)),  # overlapping windows
    ([0.3, 0.11], 6, True, (9, 7), (3, 3), None),  # below the intrinsics' sizes: plain loops
    ([0.2], 1, True, (30, 40), (7, 9), None),
    ([0.0625], 3, True, (33, 31), (33, 31), None),  # kernels wider than the image
]


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_magnitudes_equal_the_fft_reference(case, rng):
    frequencies, n_orientations, zero_mean, shape, block, step = case
    images = rng.integers(0, 256, size=(3,) + shape).astype(np.float64)
    ref = gabor_magnitudes(images, gabor_bank(frequencies, n_orientations, zero_mean=zero_mean),
                           block, step)
    ours = separable_gabor_magnitudes(
        images, separable_bank(frequencies, n_orientations, zero_mean=zero_mean), block, step)
    assert ours.shape == ref.shape
    assert_allclose(ours, ref, rtol=1e-11, atol=1e-12 * np.abs(ref).max())


@settings(max_examples=12, deadline=None)
@given(rows=st.integers(5, 40), cols=st.integers(5, 40), n_orientations=st.integers(1, 9),
       frequency=st.floats(0.05, 0.5), zero_mean=st.booleans(), seed=st.integers(0, 2**31))
def test_magnitudes_equal_the_fft_reference_on_any_shape(rows, cols, n_orientations, frequency,
                                                         zero_mean, seed):
    images = np.random.default_rng(seed).normal(size=(2, rows, cols))
    block = (max(1, rows // 3), max(1, cols // 2))
    ref = gabor_magnitudes(images, gabor_bank([frequency], n_orientations, zero_mean=zero_mean),
                           block)
    ours = separable_gabor_magnitudes(
        images, separable_bank([frequency], n_orientations, zero_mean=zero_mean), block)
    assert_allclose(ours, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


def test_transformer_equals_the_fft_reference(rng):
    images = rng.integers(0, 256, size=(4, 62, 47)).astype(np.float64)
    est = Gabor().fit(images)
    ref = gabor_magnitudes(images, gabor_bank(est.frequencies_, 8), (10, 10))
    assert_allclose(est.transform(images), ref, rtol=1e-11, atol=1e-12 * np.abs(ref).max())


def test_bad_block_names_it(rng):
    with pytest.raises(ValueError, match="block"):
        separable_gabor_magnitudes(rng.normal(size=(1, 8, 8)), separable_bank([0.25], 2),
                                   (9, 2))
    with pytest.raises(ValueError, match="3-D"):
        separable_gabor_magnitudes(rng.normal(size=(8, 8)), separable_bank([0.25], 2), (2, 2))


@njit(cache=False)
def _pair(src, starts, taps, tap_starts, n_taps, offs, size, out, out_starts):
    _simd.correlate_group_2(src, starts, taps, tap_starts, n_taps, offs, size, out, out_starts)


@njit(cache=False)
def _one(src, starts, taps, tap_starts, n_taps, offs, size, out, out_starts):
    _simd.correlate_sources(src, starts, taps, tap_starts, n_taps, offs, size, out, out_starts)


@pytest.mark.parametrize("size", [24, 32, 47, 48, 95, 2914])
@pytest.mark.parametrize("n_sources", [1, 2])
def test_plain_correlation_is_the_intrinsics_bit_for_bit(size, n_sources, rng):
    n_taps = 13
    offs = np.arange(n_taps, dtype=np.int64)[::-1].copy() * 3
    src = rng.normal(size=n_sources * (size + 3 * n_taps) + 5)
    starts = np.arange(n_sources, dtype=np.int64) * (size + 3 * n_taps) + 2
    taps = rng.normal(size=2 * n_sources * n_taps)
    tap_starts = np.arange(2 * n_sources, dtype=np.int64) * n_taps
    out_starts = np.array([0, size + 1], dtype=np.int64)
    fast, plain = np.zeros(2 * size + 1), np.zeros(2 * size + 1)
    _pair(src, starts, taps, tap_starts, n_taps, offs, size, fast, out_starts)
    _correlate_plain(src, starts, taps, tap_starts, n_taps, offs, size, plain, out_starts)
    assert np.array_equal(fast, plain)
    ref = [sum(taps[tap_starts[j * n_sources + k] + t] * src[starts[k] + np.arange(size)
                                                                + offs[t]]
               for k in range(n_sources) for t in range(n_taps)) for j in range(2)]
    assert_allclose(fast[:size], ref[0], rtol=1e-12, atol=1e-12)
    assert_allclose(fast[size + 1:], ref[1], rtol=1e-12, atol=1e-12)
    if size >= _simd.BLOCK_VECTORS * _simd.lanes_of(8):
        one, one_plain = np.zeros(size), np.zeros(size)
        first = np.zeros(1, dtype=np.int64)
        _one(src, starts, taps, tap_starts[:n_sources], n_taps, offs, size, one, first)
        _correlate_plain(src, starts, taps, tap_starts[:n_sources], n_taps, offs, size,
                         one_plain, first)
        assert np.array_equal(one, one_plain)
        assert np.array_equal(one, fast[:size])
