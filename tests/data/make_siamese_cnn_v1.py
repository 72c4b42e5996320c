"""Writes siamese_cnn_v1.npz: a tiny SiameseCNN saved in file format version 1, kept in the
repository so that every later metricfit is tested to load it (tests/test_siamese_cnn.py).
Made once with metricfit 0.1.0; do not regenerate it when the format changes: add a new file.

    PYTHONPATH=. python tests/data/make_siamese_cnn_v1.py
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
from test_siamese_cnn import TINY, make_image_pairs  # noqa: E402

from metricfit.learners.siamese_cnn import SiameseCNN  # noqa: E402


def main():
    """Fit the tiny model and write the file and its scores (never on import: the test suite
    imports every module under tests/ for its doctests)."""
    pairs, y = make_image_pairs(40, seed=7)
    est = SiameseCNN(**dict(TINY, max_epochs=1, dtype="float64")).fit(pairs, y)
    est.save(HERE / "siamese_cnn_v1.npz")
    (HERE / "siamese_cnn_v1_scores.json").write_text(json.dumps(
        {"pairs": "make_image_pairs(40, seed=7)", "pair_score": est.pair_score(pairs).tolist(),
         "threshold": est.threshold_}, indent=1))


if __name__ == "__main__":  # pytest's --doctest-modules imports this file: never rewrite then
    main()
