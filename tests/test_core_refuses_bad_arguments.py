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


def test_saving_and_restoring_counts_refuse_cells_outside_the_tables():
    tables = [np.zeros((2, 3)), np.zeros((2, 2))]
    codes = np.array([[0, 2], [1, 1]], dtype=np.int32)
    labels = np.array([0, 1], dtype=np.int64)
    saved = _core.touched_counts(tables, codes, labels)
    assert saved.shape == (4,)
    with pytest.raises(ValueError, match="saved cells"):
        _core.restore_counts(tables, codes, labels, saved[:3])
    with pytest.raises(ValueError):
        _core.touched_counts(tables, np.array([[0, 3], [1, 1]], dtype=np.int32), labels)
    with pytest.raises(ValueError):
        _core.touched_counts(tables, codes, np.array([0, 2], dtype=np.int64))  # no class 2


def test_integer_block_coding_writes_into_its_output_and_refuses_another_shape():
    vocabulary = _core.Vocabulary(2)
    values = np.array([[7, 5, 7], [1, 1, 2]], dtype=np.int64)
    codes = np.full((2, 5), 99, dtype=np.int32)
    # a column block of a longer table's codes (strided rows), as the encoder passes
    vocabulary.encode_int_block(values, None, grow=True, n_jobs=2, out=codes[:, 1:4])
    np.testing.assert_array_equal(codes, [[99, 0, 1, 0, 99], [99, 0, 0, 1, 99]])
    for out in (np.zeros((2, 2), dtype=np.int32), np.zeros((3, 3), dtype=np.int32)):
        with pytest.raises(ValueError, match="shape"):
            vocabulary.encode_int_block(values, None, grow=False, n_jobs=1, out=out)
    assert vocabulary.lengths() == [2, 2]
    assert [vocabulary.length(f) for f in range(2)] == [2, 2]
    with pytest.raises(ValueError, match="feature 2 outside the 2 features"):
        vocabulary.length(2)
