"""metricfit._array_api: which namespace a call computes in, and the errors of mixed input."""

import numpy as np
import pytest
import sklearn

import metricfit
from metricfit._array_api import device_of, dispatch_enabled, get_namespace, to_numpy


def test_numpy_input_never_dispatches():
    X = np.ones((3, 2))
    with metricfit.array_api_dispatch():
        assert get_namespace(X, None, [1, 2]) == (np, False)
    assert device_of(X) == "cpu"


def test_switches():
    assert not dispatch_enabled()
    with metricfit.array_api_dispatch():
        assert dispatch_enabled()
        with metricfit.array_api_dispatch(False):
            assert not dispatch_enabled()
    try:
        with sklearn.config_context(array_api_dispatch=True):
            assert dispatch_enabled()
    except (ImportError, RuntimeError) as error:  # scikit-learn's own requirements
        pytest.skip(f"scikit-learn's array_api_dispatch is not available here: {error}")


def test_strict_arrays_dispatch_and_come_back():
    xps = pytest.importorskip("array_api_strict")
    pytest.importorskip("array_api_compat")
    X = xps.asarray(np.arange(6.0).reshape(3, 2))
    with metricfit.array_api_dispatch():
        xp, dispatched = get_namespace(X, names=["X"])
    assert dispatched and "array_api_strict" in xp.__name__
    np.testing.assert_array_equal(to_numpy(X), np.arange(6.0).reshape(3, 2))


def test_torch_cpu_without_dispatch_is_converted_and_mixed_namespaces_are_named():
    torch = pytest.importorskip("torch")
    xps = pytest.importorskip("array_api_strict")
    T = torch.ones(3, 2)
    assert get_namespace(T, names=["X"]) == (np, False)
    with metricfit.array_api_dispatch():
        xp, dispatched = get_namespace(T, names=["X"])
        assert dispatched
        with pytest.raises(ValueError, match="different array namespaces.*X.*y"):
            get_namespace(T, xps.asarray([1.0, 2.0, 3.0]), names=["X", "y"])
    np.testing.assert_array_equal(to_numpy(T), np.ones((3, 2), np.float32))


def test_a_device_array_without_dispatch_names_the_switch():
    torch = pytest.importorskip("torch")
    T = torch.ones(2, 2, device="meta")
    with pytest.raises(ValueError, match="X is a torch.Tensor on device meta.*array_api_dispatch"):
        get_namespace(T, names=["X"])
