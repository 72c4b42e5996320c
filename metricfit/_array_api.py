"""Array-API dispatch: where the data lives, the work is done (torch, CuPy, array_api_strict).

NumPy input always takes metricfit's NumPy + numba path. Other arrays take the array-API path
when dispatch is on, as in scikit-learn: ``sklearn.set_config(array_api_dispatch=True)`` or
metricfit's own switch :func:`array_api_dispatch` (which needs neither SciPy's
``SCIPY_ARRAY_API`` nor scikit-learn's support of the namespace). With dispatch off, a CPU tensor
is converted to NumPy; an array on another device is refused with a message saying how to turn
dispatch on. ``array_api_compat`` (the optional extra ``metricfit[array-api]``) is imported only
when a non-NumPy array arrives.
"""

import contextlib
import contextvars

import numpy as np

__all__ = ["array_api_dispatch", "dispatch_enabled", "get_namespace", "device_of", "to_numpy",
           "is_numpy_namespace", "namespace_name", "supported_namespace", "SUPPORTED_NAMESPACES"]

SUPPORTED_NAMESPACES = ("torch", "cupy", "array_api_strict")  # what the device paths are tested on

_DISPATCH = contextvars.ContextVar("metricfit_array_api_dispatch", default=None)


@contextlib.contextmanager
def array_api_dispatch(enabled=True):
    """Inside the block, non-NumPy arrays (torch, CuPy, ...) are computed on in their own
    namespace and device (``enabled=False``: converted to NumPy instead)."""
    token = _DISPATCH.set(bool(enabled))
    try:
        yield
    finally:
        _DISPATCH.reset(token)


def dispatch_enabled():
    """Whether array-API dispatch is on: metricfit's switch, else scikit-learn's config."""
    own = _DISPATCH.get()
    if own is not None:
        return own
    import sklearn

    return bool(sklearn.get_config().get("array_api_dispatch", False))


def _is_numpy_like(x):
    return x is None or isinstance(x, (np.ndarray, np.generic, list, tuple, int, float))


def _compat():
    try:
        import array_api_compat
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "array-API dispatch needs the optional package array-api-compat: "
            "pip install 'metricfit[array-api]'") from error
    return array_api_compat


def is_numpy_namespace(xp):
    """True for NumPy itself or array_api_compat's wrapper of NumPy."""
    return xp is np or getattr(xp, "__name__", "").endswith("numpy")


def device_of(x):
    """The device of array ``x`` (``"cpu"`` for NumPy)."""
    if isinstance(x, np.ndarray):
        return "cpu"
    return _compat().device(x)


def _describe(x):
    return f"{type(x).__module__}.{type(x).__name__}"


def get_namespace(*arrays, names=None):
    """``(xp, dispatched)`` for the given arrays (``None`` entries are skipped).

    NumPy input: ``(numpy, False)``. Other arrays with dispatch on: their array-API namespace
    and True; arrays from two namespaces or on two devices raise a ValueError naming the
    arguments (``names``). With dispatch off: ``(numpy, False)`` when every array converts to
    NumPy on the host; an array on an accelerator raises a ValueError saying how to enable
    dispatch.
    """
    names = names or [f"argument {i}" for i in range(len(arrays))]
    present = [(name, x) for name, x in zip(names, arrays, strict=True) if x is not None]
    foreign = [(name, x) for name, x in present if not _is_numpy_like(x)]
    if not foreign:
        return np, False
    if not dispatch_enabled():
        for name, x in foreign:
            dev = str(getattr(x, "device", "cpu"))
            if not dev.startswith("cpu"):
                raise ValueError(
                    f"{name} is a {_describe(x)} on device {dev}; metricfit computes on it only "
                    "with array-API dispatch on: `with metricfit.array_api_dispatch():` or "
                    "sklearn.set_config(array_api_dispatch=True). Or pass a NumPy array.")
        return np, False
    compat = _compat()
    spaces = {}
    for name, x in present:
        space = compat.array_namespace(x)
        spaces.setdefault(space.__name__, []).append(name)
    if len(spaces) > 1:
        listing = "; ".join(f"{', '.join(v)}: {k}" for k, v in spaces.items())
        raise ValueError(f"the arrays come from different array namespaces ({listing}); "
                         "pass them all from one library.")
    devices = {}
    for name, x in present:
        devices.setdefault(str(compat.device(x)), []).append(name)
    if len(devices) > 1:
        listing = "; ".join(f"{', '.join(v)}: {k}" for k, v in devices.items())
        raise ValueError(f"the arrays are on different devices ({listing}); move them to one.")
    xp = compat.array_namespace(*[x for _, x in present])
    if is_numpy_namespace(xp):
        return np, False
    return xp, True


def to_numpy(x, xp=None):
    """``x`` as a NumPy array on the host (one transfer for device arrays)."""
    if isinstance(x, np.ndarray):
        return x
    compat = _compat()
    if compat.is_torch_array(x):
        return x.detach().cpu().numpy()
    if compat.is_cupy_array(x):
        return x.get()
    try:
        return np.asarray(x)
    except (TypeError, ValueError, RuntimeError):
        return np.from_dlpack(x)


def namespace_name(xp):
    """The library of namespace ``xp``: 'torch', 'cupy', 'array_api_strict', 'numpy', ..."""
    name = getattr(xp, "__name__", str(xp))
    for known in SUPPORTED_NAMESPACES + ("numpy", "dask", "jax"):
        if known in name.split("."):
            return known
    return name


def supported_namespace(*arrays, names, supported=SUPPORTED_NAMESPACES, what="metricfit",
                        host=("dask",)):
    """The namespace to compute in, or None for metricfit's NumPy path.

    :func:`get_namespace` over the array arguments (lists, tuples and scalars among them are
    left out: they follow the arrays), then: a library of ``host`` (Dask: metricfit's NumPy
    path reads Dask arrays block by block itself) gives None; an object array_api_compat does
    not know, or a namespace outside ``supported``, raises a ValueError naming the argument
    and the namespaces ``what`` computes in.
    """
    given = [(n, x) for n, x in zip(names, arrays, strict=True)
             if x is not None and not isinstance(x, (list, tuple, int, float))]
    if any(type(x).__module__.split(".")[0] in host for _, x in given):
        return None  # e.g. Dask points: the NumPy path reads them block by block
    try:
        xp, dispatched = get_namespace(*[x for _, x in given], names=[n for n, _ in given])
    except TypeError as error:  # array_api_compat: not an array of a known library
        listing = ", ".join(f"{n}: {_describe(x)}" for n, x in given)
        raise ValueError(f"unsupported array type among {listing} ({error}); {what} takes "
                         f"NumPy arrays or, with array-API dispatch on, arrays of "
                         f"{', '.join(supported)}.") from None
    if not dispatched:
        return None
    library = namespace_name(xp)
    if library not in supported:
        listing = ", ".join(f"{n}: {_describe(x)}" for n, x in given)
        raise ValueError(f"the array namespace {library!r} ({listing}) is not supported by "
                         f"{what}'s array-API path (supported: {', '.join(supported)}); "
                         "pass NumPy arrays.")
    return xp
