"""The hash-based unique helpers against numpy's sorting ``np.unique``."""

import numpy as np
import pytest

from hebnb._arrays import first_occurrences, sorted_unique


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.float64])
@pytest.mark.parametrize("size", [0, 1, 7, 5000])
def test_sorted_unique_is_numpys_unique(dtype, size):
    rng = np.random.default_rng(size)
    values = rng.integers(0, max(size // 3, 1), size).astype(dtype)
    if dtype is np.uint64 and size:
        values[::5] += np.uint64(2**63)  # beyond the signed range
    distinct, first, inverse = sorted_unique(values)
    expected = np.unique(values, return_index=True, return_inverse=True)
    for found, wanted in zip((distinct, first, inverse), expected):
        np.testing.assert_array_equal(found, wanted.ravel())


def test_first_occurrences_number_values_as_they_first_appear():
    values = np.array([30, 10, 30, 20, 10, 40, 20])
    codes, first = first_occurrences(values)
    np.testing.assert_array_equal(codes, [0, 1, 0, 2, 1, 3, 2])
    np.testing.assert_array_equal(first, [0, 1, 3, 5])
    np.testing.assert_array_equal(values[first[codes]], values)
