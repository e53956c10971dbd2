"""Hash-based replacements for ``np.unique`` where sorting every value costs more than the
rest of the caller (pandas' ``factorize`` hashes instead of sorting)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd


def first_occurrences(
    values: npt.NDArray[Any],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """``(codes, first)``: each value's code, codes numbered in the order the values first
    appear, and the index of each code's first appearance (``values[first[codes]] ==
    values``)."""
    codes, _ = pd.factorize(values)
    codes = codes.astype(np.intp, copy=False)
    if codes.size == 0:
        return codes, np.zeros(0, dtype=np.intp)
    # codes appear in increasing order: a code is new where it exceeds all before it
    new = np.empty(codes.size, dtype=bool)
    new[0] = True
    np.greater(codes[1:], np.maximum.accumulate(codes)[:-1], out=new[1:])
    return codes, np.flatnonzero(new)


def sorted_unique(
    values: npt.NDArray[Any],
) -> tuple[npt.NDArray[Any], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """``np.unique(values, return_index=True, return_inverse=True)`` of a 1-D array: the
    sorted distinct values, the first index of each, and each value's rank among them;
    only the distinct values are sorted."""
    codes, first = first_occurrences(values)
    order = np.argsort(values[first], kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return values[first[order]], first[order], rank[codes]
