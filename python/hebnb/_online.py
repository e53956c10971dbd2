"""What the estimators' ``partial_fit`` share (SPEC "Online learning and forgetting"):
the forgetting factor, the class declaration rules, and moving count tables onto a grown
vocabulary.

Every model in hebnb is a sum of counts, so a batch is counted on its own and added to the
stored counts, after they are multiplied by ``learning_rate ** n_rows`` (exponential
forgetting; the smoothing pseudo-counts are not counts and never decay). When a batch
brings new categories, the estimators' encoders give them the next codes (codes by first
appearance), so the stored tables only grow; a table coded by sorted rank (an older
model) has its columns moved with their categories. The result equals one ``fit`` on all
the data seen.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence, Sized

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from . import _core
from ._encoding import encode_labels


def check_learning_rate(learning_rate: object) -> float:
    """The forgetting factor gamma in (0, 1]."""
    if (
        isinstance(learning_rate, numbers.Real)
        and not isinstance(learning_rate, bool)
        and 0.0 < float(learning_rate) <= 1.0
    ):
        return float(learning_rate)
    raise ValueError(f"learning_rate must be a real in (0, 1], got {learning_rate!r}")


def n_rows_of(X: ArrayLike) -> int:
    """Number of rows of a table without converting it."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    if isinstance(X, Sized):
        return len(X)
    raise TypeError(f"X must be a table of rows, got {type(X).__name__}")


def batch_classes(
    y: ArrayLike, n_rows: int, classes: ArrayLike | None, fitted_classes: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``(classes_, class index of every row)`` of a ``partial_fit`` batch.

    The classes are declared on the first call (``fitted_classes`` is None) or, when
    ``classes`` is None there, taken from the batch; later calls may repeat them (in any
    order) but not change them. Raises on a label outside them or fewer than two classes.
    """
    seen, indices = encode_labels(y, n_rows)
    if classes is not None:
        declared = _declared_classes(classes)
        if fitted_classes is not None and not np.array_equal(declared, fitted_classes):
            raise ValueError(
                f"classes={declared.tolist()} is not the same as on the first call to "
                f"partial_fit: {fitted_classes.tolist()}"
            )
    else:
        declared = seen if fitted_classes is None else fitted_classes
    if declared.shape[0] < 2:
        raise ValueError(
            f"The number of classes has to be greater than one; got {declared.shape[0]} "
            "class: declare all of them with classes= on the first call"
        )
    return declared, _positions(seen, declared)[indices]


def _declared_classes(classes: ArrayLike) -> np.ndarray:
    """The sorted distinct labels of ``classes=``, refused when missing, mixed or not 1-D.

    numpy turns a list of numbers and strings into strings, after which no integer label
    would ever match (scikit-learn's ``unique_labels`` refuses such lists too).
    """
    if isinstance(classes, (pd.Series, pd.Index)):
        classes = classes.to_numpy()
    values = np.asarray(classes)
    if values.ndim != 1:
        raise ValueError(f"classes must be a 1-D array of labels, got shape {values.shape}")
    converted = values.dtype.kind == "U" and not isinstance(classes, np.ndarray)
    as_given = np.asarray(classes, dtype=object) if converted else values
    if converted and not all(isinstance(c, str) for c in as_given):
        raise ValueError(f"classes mixes strings and numbers: {as_given.tolist()!r}")
    if values.dtype.kind in "fcOMm" and np.any(pd.isna(values)):
        raise ValueError("classes contains missing labels (NaN, None or NaT)")
    numbers = ("integer", "boolean", "floating", "mixed-integer-float")
    if values.dtype.kind == "O" and pd.api.types.infer_dtype(values) in numbers:
        values = np.asarray(values.tolist())  # as encode_labels does for y
    try:
        return np.unique(values)
    except TypeError:
        raise ValueError(
            f"classes mixes label types that cannot be ordered: {values.tolist()!r}"
        ) from None


def _positions(labels: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Index in ``classes`` (sorted) of every label; ValueError for a label not there."""
    try:
        position = np.clip(np.searchsorted(classes, labels), 0, classes.shape[0] - 1)
        found = classes[position] == labels
    except TypeError:  # labels of a type that cannot be compared with the classes
        position, found = None, np.zeros(labels.shape[0], dtype=bool)
    if position is None or not np.all(found):
        unknown = labels[~found]
        raise ValueError(
            f"y holds labels {unknown[:5].tolist()} that are not in classes {classes.tolist()}"
        )
    return position.astype(np.int64)


def grow_tables(
    tables: list[np.ndarray], cardinalities: Sequence[int], n_classes: int
) -> list[np.ndarray]:
    """Per-feature ``(C, capacity)`` count tables with room for ``cardinalities[f]``
    categories: a table too small is copied into one of twice the size (so a stream pays
    O(1) amortised per new category), the others are kept as they are."""
    grown: list[np.ndarray] = []
    for f, k in enumerate(cardinalities):
        table = tables[f] if f < len(tables) else np.zeros((n_classes, 0))
        if table.shape[1] < k:
            wider = np.zeros((n_classes, max(2 * k, 16)))
            wider[:, : table.shape[1]] = table
            table = wider
        grown.append(table)
    return grown


def undo_of_added_counts(
    tables: list[np.ndarray], codes: np.ndarray, labels: np.ndarray, decay: float
) -> Callable[[], None]:
    """What puts ``tables`` back as they are now after ``_core.add_counts`` adds the batch
    ``codes (F, S)`` / ``labels`` into them in place: the cells the batch touches, saved
    (one number per row and feature), or the whole tables where they are the smaller (a
    long batch of low-cardinality features) or where forgetting ages every count. Saved
    before any change, so an undo restores the exact values, duplicates in the batch
    included."""
    if decay != 1.0 or sum(table.size for table in tables) <= codes.size:
        whole = [table.copy() for table in tables]

        def restore_tables() -> None:
            for table, saved in zip(tables, whole):
                table[...] = saved

        return restore_tables
    saved = _core.touched_counts(tables, codes, labels)
    return lambda: _core.restore_counts(tables, codes, labels, saved)


def new_codes(moved: Sequence[np.ndarray | None], cardinalities: Sequence[int]) -> list[np.ndarray]:
    """Per feature, the new code of every old code (identity where nothing moved)."""
    return [
        np.arange(k) if positions is None else positions
        for positions, k in zip(moved, cardinalities)
    ]


def move_columns(
    counts: np.ndarray,
    old_offsets: Sequence[int],
    new_offsets: Sequence[int],
    moved: Sequence[np.ndarray | None],
) -> np.ndarray:
    """A ``(rows, sum K_f)`` count table on a grown vocabulary: old categories at their new
    codes, new ones 0. Always a new array."""
    if all(m is None for m in moved):
        unchanged: np.ndarray = counts.copy()
        return unchanged
    grown = np.zeros((counts.shape[0], new_offsets[-1]))
    old_sizes = np.diff(old_offsets).tolist()
    for f, positions in enumerate(new_codes(moved, old_sizes)):
        grown[:, new_offsets[f] + positions] = counts[:, old_offsets[f] : old_offsets[f + 1]]
    return grown


def merge_pair_tables(
    old: dict[str, np.ndarray],
    batch: dict[str, np.ndarray],
    old_offsets: Sequence[int],
    offsets: Sequence[int],
    codes_of_old: Sequence[np.ndarray],
    decay: float,
    n_jobs: int,
) -> dict[str, np.ndarray]:
    """AODE's sparse pair tables (dicts of the stored ``pairs`` and their CSR ``indptr``,
    ``indices``, ``counts``, see ``src/pair_counts.rs``) of the stored rows, moved onto
    the grown vocabulary (``codes_of_old[f]``: the new code of every old code of feature
    f) and multiplied by ``decay``, plus those of a batch already counted on it; merged in
    the core.

    The result stores the batch's pairs (those the current structure models): pairs the
    structure no longer models (the memory cap can switch a pair off as cardinalities
    grow, never on) are dropped; cells whose counts all reach 0 are dropped, as counting
    drops them.
    """
    return _core.merge_pair_tables(
        old,
        batch,
        old_offsets=list(old_offsets),
        offsets=list(offsets),
        new_codes=[np.asarray(c, dtype=np.int64).tolist() for c in codes_of_old],
        decay=float(decay),
        n_jobs=n_jobs,
    )


def grow_columns(
    counts: np.ndarray, old_offsets: Sequence[int], offsets: Sequence[int]
) -> np.ndarray:
    """A ``(rows, sum K_f)`` count table laid out by codes in order of first appearance,
    widened onto a grown vocabulary (new categories join at the end of their feature,
    with 0). The table itself when nothing grew."""
    if list(old_offsets) == list(offsets):
        return counts
    sizes = np.diff(np.asarray(old_offsets)).tolist()
    moved = [np.arange(k, dtype=np.int64) for k in sizes]
    return move_columns(counts, old_offsets, offsets, moved)


def recode_pair_tables(
    tables: dict[str, np.ndarray], offsets: Sequence[int], codes: Sequence[np.ndarray]
) -> dict[str, np.ndarray]:
    """AODE's sparse pair tables with every code ``u`` of feature f replaced by
    ``codes[f][u]`` (a permutation of ``range(K_f)``), rows and the cells of every row
    sorted again: e.g. tables coded in order of first appearance seen in the order of the
    sorted categories. O(cells log cells), numpy."""
    pairs, indptr = tables["pairs"], tables["indptr"]
    indices, counts = tables["indices"], tables["counts"]
    start = np.asarray(offsets, dtype=np.int64)
    flat = np.concatenate([np.asarray(c, dtype=np.int64) for c in codes] or [np.zeros(0, np.int64)])
    parent, child = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
    rows_of_pair = np.diff(start)[parent]
    first_row = np.concatenate([[0], np.cumsum(rows_of_pair)]).astype(np.int64)
    n_rows = int(first_row[-1])
    row = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(indptr))
    pair_of_row = np.repeat(np.arange(pairs.shape[0], dtype=np.int64), rows_of_pair)
    pair = pair_of_row[row]
    u = row - first_row[pair]
    new_row = first_row[pair] + flat[start[parent[pair]] + u]
    new_v = flat[start[child[pair]] + indices.astype(np.int64)]
    order = np.lexsort((new_v, new_row))
    new_indptr = np.concatenate([[0], np.cumsum(np.bincount(new_row, minlength=n_rows))])
    return {
        "pairs": pairs,
        "indptr": new_indptr.astype(indptr.dtype),
        "indices": new_v[order].astype(indices.dtype),
        "counts": counts[order],
    }
