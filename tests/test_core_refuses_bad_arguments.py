"""The compiled core refuses what it cannot use with a ValueError, never
a Rust panic (pyo3's PanicException, which is not an Exception subclass)."""

from __future__ import annotations

import numpy as np
import pytest

from hebnb import _core


@pytest.mark.parametrize(
    "categories, offsets",
    [
        (np.array([3, 1, 0]), [0, 3]),  # unsorted: panicked with "capacity overflow"
        (np.array([1, 1]), [0, 2]),
        (np.array([0, 1]), [0, 5]),  # beyond the categories: panicked slicing them
    ],
)
def test_encode_integers_refuses_categories_it_cannot_search(categories, offsets):
    values = np.array([[0, 1, 3]], dtype=np.int64)
    with pytest.raises(ValueError, match="categor"):
        _core.encode_integers(values, None, categories, offsets, 1)
