"""Prepared objectives keep their per-call products in per-thread scratch arrays
(metricfit.losses._scratch): the same bits as fresh arrays, call after call, from concurrent
threads, after pickling; the gradient stays a new array."""

import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from metricfit.losses import csml, ddml, ldml, tsml
from metricfit.losses._scratch import Scratch, add_product, product


def _data(dtype, n=300, d=7, k=5, seed=0):
    rng = np.random.default_rng(seed)
    X1, X2 = (rng.standard_normal((n, d)).astype(dtype) for _ in range(2))
    s = np.where(rng.random(n) < 0.5, 1.0, -1.0).astype(dtype)
    return X1, X2, s, [rng.standard_normal((k, d)).astype(dtype) for _ in range(3)]


def _objective(name, X1, X2, s, chunk_size):
    if name == "ldml":
        return ldml.objective(X1, X2, s, chunk_size=chunk_size)
    return {"tsml": tsml, "csml": csml, "ddml": ddml}[name].objective(X1, X2, s,
                                                                     chunk_size=chunk_size)


def _params(name, A):
    if name != "ldml":
        return A
    d = A.shape[1]
    return ldml.pack(np.eye(d, dtype=A.dtype) + 0.01 * (A.T @ A), 1.0).astype(A.dtype)


def _bits(result):
    J, G = result
    return float(J), np.asarray(G).tobytes()


@pytest.mark.parametrize("chunk_size", [64, 8192])  # several chunks / one
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["tsml", "csml", "ddml", "ldml"])
def test_scratch_arrays_give_the_fresh_arrays_bits(name, dtype, chunk_size):
    X1, X2, s, As = _data(dtype)
    params = [_params(name, A) for A in As]
    f = _objective(name, X1, X2, s, chunk_size)
    expected = [_bits(_objective(name, X1, X2, s, chunk_size)(p)) for p in params]  # fresh
    first = [f(p) for p in params]
    assert [_bits(r) for r in first] == expected  # one objective, call after call
    assert len({id(G) for _, G in first}) == 3  # each gradient is a new array
    with ThreadPoolExecutor(3) as pool:  # concurrent calls: each thread its own arrays
        for _ in range(4):
            assert [_bits(r) for r in pool.map(f, params)] == expected
    copy = pickle.loads(pickle.dumps(f))
    assert [_bits(copy(p)) for p in params] == expected
    if name != "ldml":  # the stateless composition, no scratch: the same numbers
        G = {"tsml": tsml, "csml": csml, "ddml": ddml}[name].cost_grad(
            As[0], X1, X2, s, chunk_size=chunk_size)[1]
        assert np.allclose(G, first[0][1], rtol=1e-4 if dtype == "float32" else 1e-10,
                           atol=1e-5 if dtype == "float32" else 1e-12)


def test_scratch_rows_reuse_and_regrow():
    scratch = Scratch()
    a = scratch.rows("P", 5, 3, np.float32)
    assert scratch.rows("P", 5, 3, np.float32) is not a  # a view each time ...
    assert np.shares_memory(scratch.rows("P", 2, 3, np.float32), a)  # ... of one array
    assert not np.shares_memory(scratch.rows("P", 9, 3, np.float32), a)  # grown
    assert scratch.rows("P", 2, 4, np.float32).shape == (2, 4)  # another width
    assert scratch.rows("P", 2, 4, np.float64).dtype == np.float64  # another dtype


def test_product_and_add_product_are_the_plain_products():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((6, 4)), rng.standard_normal((4, 3))
    scratch = Scratch()
    assert np.array_equal(product(a, b, scratch, "x"), a @ b)
    assert np.array_equal(product(a, b, None, "x"), a @ b)
    total = add_product(None, a, b, scratch)
    again = add_product(total.copy(), a, b, scratch)
    assert np.array_equal(total, a @ b) and np.array_equal(again, (a @ b) + (a @ b))
