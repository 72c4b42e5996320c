"""Shared fixtures. Real data comes from $METRICFIT_DATA (default: ../shared/data beside the
repository root); tests that need it skip cleanly when it is absent."""

import os
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def data_dir():
    return Path(os.environ.get("METRICFIT_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def lfw_dir():
    path = data_dir() / "lfw"
    if not (path / "pairs.txt").is_file():
        pytest.skip(f"LFW data not found under {path} (set METRICFIT_DATA)")
    return path
