"""Strict JSON output of the ``metricfit`` command."""

import json
import math

import numpy as np


def strict_json(value):
    """``value`` with NaN / infinity as None (JSON null) and NumPy scalars and arrays as
    Python numbers and lists: what ``json.dump(..., allow_nan=False)`` accepts."""
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return strict_json(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _write_json(path, report):
    with open(path, "w") as out:
        json.dump(strict_json(report), out, indent=1, allow_nan=False)
