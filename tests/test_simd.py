"""The convnet's vector intrinsics (metricfit._simd) called directly: against NumPy, against
each other bit for bit (eight taps = eight single taps, a group of three outputs = three single
outputs), at every block size the target picks, with a fused multiply-add where the target has
one, and compiled for other targets (AVX2's 16 registers; no FMA) in a child process."""

import os
import platform
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from numba import njit

from metricfit import _simd


@njit(cache=False)
def _dot8(G, X, span, offs, n, g_step, x_step):  # pragma: no cover (compiled)
    out = np.zeros(8, G.dtype)
    _simd.dot_taps_8(G, X, 0, 0, span, offs, 0, n, g_step, x_step, out, 0)
    return out


@njit(cache=False)
def _dot4(G, X, span, offs, n, g_step, x_step):  # pragma: no cover (compiled)
    out = np.zeros(8, G.dtype)
    _simd.dot_taps_4(G, X, 0, 0, span, offs, 0, n, g_step, x_step, out, 0)
    _simd.dot_taps_4(G, X, 0, 0, span, offs, 4, n, g_step, x_step, out, 4)
    return out


@njit(cache=False)
def _dot1(G, X, span, offs, n, g_step, x_step):  # pragma: no cover (compiled)
    out = np.zeros(offs.size, G.dtype)
    for t in range(offs.size):
        _simd.dot_taps_1(G, X, 0, 0, span, offs, t, n, g_step, x_step, out, t)
    return out


@njit(cache=False)
def _sources(src, starts, taps, tap_starts, n_taps, offs, size):  # pragma: no cover
    out = np.full(size, np.nan, src.dtype)
    _simd.correlate_sources(src, starts, taps, tap_starts, n_taps, offs, size, out,
                            np.zeros(1, np.int64))
    return out


def _group(correlate_group, count):
    """A compiled caller of ``correlate_group`` (outputs of ``count`` maps) into a fresh
    (count, size) array."""
    @njit(cache=False)
    def run(src, starts, taps, tap_starts, n_taps, offs, size):  # pragma: no cover
        out = np.full(count * size, np.nan, src.dtype)
        correlate_group(src, starts, taps, tap_starts, n_taps, offs, size, out,
                        np.arange(count) * size)
        return out.reshape(count, size)

    return run


_group3 = _group(_simd.correlate_group_3, 3)
_group5 = _group(_simd.correlate_group_5, 5)


def _dot_case(dtype, span, n, rng):
    """n images of G (span) and X (span + 20), eight tap offsets in [0, 20]."""
    G = rng.normal(size=(n, span)).astype(dtype)
    X = rng.normal(size=(n, span + 20)).astype(dtype)
    offs = np.array([0, 1, 3, 7, 8, 13, 19, 20], np.int64)
    want = np.array([sum(G[i].astype(np.float64) @ X[i, o:o + span] for i in range(n))
                     for o in offs])
    return G.ravel(), X.ravel(), offs, want


LANES = {np.float32: _simd.lanes_of(4), np.float64: _simd.lanes_of(8)}


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-13)])
@pytest.mark.parametrize("vectors, extra, n", [(1, 0, 1), (1, 3, 3), (5, 0, 2), (6, 5, 4)])
def test_eight_taps_are_eight_single_taps_and_the_dot_products(dtype, rtol, vectors, extra, n):
    """A span of whole vectors and one that ends with an overlapping, masked block; one image
    and several. Eight taps at once, two groups of four and eight single taps: the same bits."""
    rng = np.random.default_rng(vectors + extra + n)
    span = vectors * LANES[dtype] + extra
    G, X, offs, want = _dot_case(dtype, span, n, rng)
    eight = _dot8(G, X, span, offs, n, span, span + 20)
    np.testing.assert_array_equal(eight, _dot1(G, X, span, offs, n, span, span + 20))
    np.testing.assert_array_equal(eight, _dot4(G, X, span, offs, n, span, span + 20))
    np.testing.assert_allclose(eight, want, rtol=rtol, atol=rtol * np.abs(want).max())


def _correlation_case(dtype, size, n_src, rng):
    """n_src sources, five outputs' 2x3 kernels over maps of width 9."""
    offs = np.array([0, 1, 2, 9, 10, 11], np.int64)
    src = rng.normal(size=(n_src, size + 11)).astype(dtype)
    taps = rng.normal(size=(5, n_src, offs.size)).astype(dtype)
    starts = np.arange(n_src) * (size + 11)
    tap_starts = (np.arange(5)[:, None] * n_src + np.arange(n_src)) * offs.size
    want = np.array([sum(taps[j, k, t] * src[k, o:o + size].astype(np.float64)
                         for k in range(n_src) for t, o in enumerate(offs))
                     for j in range(5)])
    return src.ravel(), starts, taps.ravel(), tap_starts, offs, want


# sizes in vectors: the narrow block only (sources: 4 <= size < 8 vectors; a group of three or
# five: 2 <= size < 4), exactly the wide block, and more with an overlapping last block
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-13)])
@pytest.mark.parametrize("size_vectors, extra", [(2, 0), (3, 5), (4, 0), (6, 1), (8, 0),
                                                 (11, 7)])
def test_correlations_at_every_block_size(dtype, rtol, size_vectors, extra):
    rng = np.random.default_rng(10 * size_vectors + extra)
    size = size_vectors * LANES[dtype] + extra
    src, starts, taps, tap_starts, offs, want = _correlation_case(dtype, size, 2, rng)
    five = _group5(src, starts, taps, tap_starts.ravel(), offs.size, offs, size)
    np.testing.assert_allclose(five, want, rtol=rtol, atol=rtol * np.abs(want).max())
    three = _group3(src, starts, taps, tap_starts[2:].ravel(), offs.size, offs, size)
    np.testing.assert_array_equal(three, five[2:])  # the same sums in the same order
    if size < _simd.BLOCK_VECTORS * LANES[dtype]:
        return  # under correlate_sources' smallest block
    for j in range(5):
        alone = _sources(src, starts, taps, tap_starts[j], offs.size, offs, size)
        np.testing.assert_array_equal(alone, five[j])


@njit(cache=False)
def _multiply_add(a, b, c):  # pragma: no cover (compiled)
    return np.array([_simd.multiply_add(a, b, c)])  # an array keeps the result's type


@pytest.mark.parametrize("dtype, e", [(np.float32, 13), (np.float64, 27)])
def test_multiply_add_rounds_once_where_the_target_fuses(dtype, e):
    """(1 + 2^-e)(1 - 2^-e) - 1 = -2^-2e exactly; the product alone rounds to 1, so a multiply
    then an add gives 0 and one fused multiply-add gives -2^-2e."""
    from numba.core.registry import cpu_target

    a, b, c = dtype(1 + 2.0 ** -e), dtype(1 - 2.0 ** -e), dtype(-1)
    assert a * b == 1  # the product rounds away the term
    fused = _simd.fused_multiply_add(cpu_target.target_context)
    got = _multiply_add(a, b, c)
    assert got.dtype == dtype and got[0] == (-(2.0 ** (-2 * e)) if fused else 0)
    mixed = _multiply_add(np.float64(a), b, c)  # computed in the widest type
    assert mixed.dtype == np.float64
    if dtype is np.float32:  # the float64 product is exact
        assert mixed[0] == np.float64(a) * np.float64(b) - 1


def _context(triple, features):
    magic = (triple, "cpu", features)
    return SimpleNamespace(codegen=lambda: SimpleNamespace(magic_tuple=lambda: magic))


@pytest.mark.parametrize("triple, features, fma, wide", [
    ("x86_64-unknown-linux-gnu", "+avx,+avx2,+fma,-avx512f", True, False),  # AVX2
    ("x86_64-unknown-linux-gnu", "+avx2,+fma,+avx512f,+avx512bw", True, True),  # AVX-512
    ("x86_64-unknown-linux-gnu", "", False, False),  # NUMBA_CPU_NAME=generic
    ("x86_64-unknown-linux-gnu", "+sse2,-fma,-avx512f", False, False),
    ("aarch64-unknown-linux-gnu", "+neon", True, False),
    ("arm64-apple-darwin", "", True, False),
])
def test_the_target_decides_fma_and_the_block_size(triple, features, fma, wide):
    context = _context(triple, features)
    assert _simd.fused_multiply_add(context) is fma
    assert _simd.wide_registers(context) is wide


def test_the_compiled_code_fuses_exactly_where_the_target_can():
    """The IR of a correlation holds llvm.fma calls on a target with FMA, none without."""
    from numba.core.registry import cpu_target

    rng = np.random.default_rng(0)
    size = 8 * LANES[np.float64]
    src, starts, taps, tap_starts, offs, _ = _correlation_case(np.float64, size, 1, rng)
    _sources(src, starts, taps, tap_starts[0], offs.size, offs, size)
    ir = "".join(_sources.inspect_llvm().values())
    assert ("@llvm.fma.v8f64" in ir) is _simd.fused_multiply_add(cpu_target.target_context)


#: numba keeps the host's features under NUMBA_CPU_NAME alone (AVX-512 on an AVX-512 host), so
#: the features of a Haswell core are named: AVX2 and FMA, 16 vector registers
HASWELL = "+64bit,+avx,+avx2,+fma,+sse4.2,+popcnt,+cx16,+f16c,+bmi,+bmi2,+lzcnt,+movbe,+fxsr"
GABOR_TESTS = Path(__file__).with_name("test_gabor_separable.py")
ROWS_TESTS = Path(__file__).with_name("test_conv_rows.py")  # the convolution's row blocks


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 targets")
@pytest.mark.parametrize("cpu, features, fma", [("haswell", HASWELL, True),
                                                ("generic", None, False)])
def test_the_intrinsics_compiled_for_another_target(cpu, features, fma, tmp_path):
    """haswell: FMA, 16 vector registers (the narrow blocks, eight taps in two passes);
    generic: no FMA (multiply, then add). The tests above, the Gabor passes' (the pair
    intrinsic against its plain twin and the FFT) and the convolution's row blocks against the
    flat ones (blocks of two rows on AVX2), in a child compiled for it."""
    env = dict(os.environ, NUMBA_CPU_NAME=cpu, NUMBA_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CPU_FEATURES", None)
    if features is not None:
        env["NUMBA_CPU_FEATURES"] = features
    seen = subprocess.run(
        [sys.executable, "-c", "from numba.core.registry import cpu_target; "
         "from metricfit import _simd; c = cpu_target.target_context; "
         "print(_simd.fused_multiply_add(c), _simd.wide_registers(c))"],
        env=env, capture_output=True, text=True, timeout=120)
    assert seen.stdout.split() == [str(fma), "False"], seen.stdout + seen.stderr[-2000:]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
         str(GABOR_TESTS), str(ROWS_TESTS), "-k", "not another_target and (not gabor or "
         "plain_correlation or fft_reference) and not pass_is and not gradient_is"], env=env,
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
