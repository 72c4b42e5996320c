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


def digits_protocol_pairs(n_components, n_pairs=150):
    """The digits verification protocol's (train, val, test) pairs, each ``(vectors, y)``, on
    a WPCA of ``n_components`` fitted on all digits (shared by the experiments' tests)."""
    from sklearn.datasets import load_digits

    from metricfit.pairs.splits import digits_split
    from metricfit.whitening import WPCA

    digits = load_digits()
    split = digits_split(digits.target, n_pairs=n_pairs, random_state=0)
    vectors = WPCA(n_components=n_components).fit(digits.data).transform(digits.data)
    return [(vectors[index], y) for index, y in (split[s] for s in ("train", "val", "test"))]
