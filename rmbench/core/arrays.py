"""The array types of the pure layer's signatures (numpy's ``NDArray`` of one dtype)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
"""Rewards, gaps, metric values: float64."""
IntArray = NDArray[np.int64]
"""Indices, group and unit numbers, draws: int64."""
BoolArray = NDArray[np.bool_]
"""Masks over pairs."""
AnyArray = NDArray[Any]
"""An array of any dtype (what a caller may pass where the callee converts it)."""
