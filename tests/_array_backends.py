"""The array-API libraries the CPU tests run on: array_api_strict and torch (CPU), each where
installed, as pytest parameters of their ``asarray``."""

import pytest


def array_backends():
    """``pytest.param(asarray, id=...)`` for each installed library (one skipped param if none)."""
    out = []
    try:
        import array_api_strict

        out.append(pytest.param(array_api_strict.asarray, id="array_api_strict"))
    except ImportError:
        pass
    try:
        import torch

        out.append(pytest.param(torch.asarray, id="torch-cpu"))
    except ImportError:
        pass
    return out or [pytest.param(None, marks=pytest.mark.skip("no array-API library"))]


def cuda_torch():
    """torch where it is installed and sees a CUDA device, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None
