"""Arrays and Arrow buffers at unaligned addresses, as partitions unpickled from Dask's
byte frames arrive on a worker: the fit reads them as it reads aligned ones."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hebnb import CategoricalNB

pa = pytest.importorskip("pyarrow")


def _unaligned_strings(values: list[str | None]) -> pa.Array:
    """A string array whose offsets buffer starts one byte past an aligned address."""
    aligned = pa.array(values, type=pa.string())
    validity, offsets, data = aligned.buffers()
    shifted = pa.py_buffer(b"\x00" + offsets.to_pybytes())[1:]
    assert shifted.address % 4 != 0
    return pa.StringArray.from_buffers(len(values), shifted, data, validity, aligned.null_count)


def test_strings_in_unaligned_arrow_buffers_fit_as_aligned_ones():
    rng = np.random.default_rng(0)
    values = [str(v) if v < 5 else None for v in rng.integers(0, 6, size=300)]
    y = rng.integers(0, 2, size=300)
    column = pd.array(_unaligned_strings(values), dtype=pd.ArrowDtype(pa.string()))
    unaligned = CategoricalNB().fit(pd.DataFrame({"a": column}), y)
    reference = CategoricalNB().fit(pd.DataFrame({"a": pd.Series(values, dtype=object)}), y)
    np.testing.assert_array_equal(unaligned.category_count_[0], reference.category_count_[0])
    rows = pd.DataFrame({"a": ["0", "3", None]})
    np.testing.assert_allclose(unaligned.predict_proba(rows), reference.predict_proba(rows))
