"""Input validation and category encoding.

Every estimator sees its input through this module: tables become feature-major integer
codes ``(F, S)`` with ``-1`` for a missing value (None, NaN, pandas NA) or a category not
seen in training, labels become class indices, weights become a checked float vector.
Encoding is hash-based (pandas factorisation), never a Python loop over rows, and never
mutates the caller's data.
"""

from __future__ import annotations

import numbers
import os
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets

from . import _core


def memory_budget_bytes() -> int:
    """The memory this process may use: installed memory (16 GiB where the platform
    does not say), or less where an address-space limit (``ulimit -v``) is set."""
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        physical = 16 * 2**30
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        limit = -1
    return physical if limit < 0 else min(physical, limit)


#: Largest (classes x categories) table one fit may build before refusing with
#: MemoryError: a fit holds about four float64 copies of it (counts, log-probabilities,
#: their transpose, a temporary), so a quarter of the memory budget in 8-byte cells.
MAX_TABLE_CELLS = memory_budget_bytes() // 32


#: Largest total sample weight of one batch. Counts are summed again (over classes, values
#: and batches, and into sums like N + m), so a total near the float64 maximum (1.8e308)
#: turns into inf and NaN probabilities; this leaves eight orders of magnitude of headroom.
MAX_TOTAL_WEIGHT = 1e300


def _columns_of(X) -> tuple[list[np.ndarray], np.ndarray | None]:
    """Splits a 2-D table into 1-D columns and returns the column names of a DataFrame.

    Raises on a table without rows or without columns.
    """
    columns, names, n_rows = _split_columns(X)
    if n_rows == 0:
        raise ValueError(
            f"Found array with 0 sample(s) (shape=(0, {len(columns)})) while a minimum of 1 "
            "is required."
        )
    if not columns:
        raise ValueError(f"0 feature(s) (shape=({n_rows}, 0)) while a minimum of 1 is required.")
    return columns, names


def _split_columns(X) -> tuple[list[np.ndarray], np.ndarray | None, int]:
    if isinstance(X, pd.DataFrame):
        names = np.asarray([str(c) for c in X.columns], dtype=object)
        if not all(isinstance(c, str) for c in X.columns):
            names = None
        return [_column_array(column) for _, column in X.items()], names, X.shape[0]
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise TypeError("sparse input is not supported: categorical features must be dense")
    array = X if isinstance(X, np.ndarray) else np.asarray(X, dtype=None)
    if array.dtype.kind == "U" and not isinstance(X, np.ndarray):
        # mixed lists become strings in numpy: keep the Python values instead
        array = np.asarray(X, dtype=object)
    if array.ndim != 2:
        raise ValueError(
            f"Expected 2D array, got {array.ndim}D array instead. Reshape your data either "
            "using array.reshape(-1, 1) if your data has a single feature or "
            "array.reshape(1, -1) if it contains a single sample."
        )
    if array.dtype.kind == "c":
        raise ValueError("Complex data not supported")
    return [array[:, j] for j in range(array.shape[1])], None, array.shape[0]


def _column_array(series: pd.Series) -> np.ndarray:
    """A DataFrame column as a numpy array whose missing values pandas recognises."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return np.asarray(series.astype(object))
    if isinstance(series.dtype, np.dtype):
        return series.to_numpy()
    return series.to_numpy(dtype=object, na_value=np.nan)


def _integer_values(column: np.ndarray, feature: int):
    """``(int64 values, missing mask or None)`` of a numeric column, or None if not numeric.

    Whole floats are integers here (NaN is missing); a fractional or infinite float is an
    error, never truncated.
    """
    kind = column.dtype.kind
    if kind == "i" or (kind == "u" and column.dtype.itemsize < 8):
        return column.astype(np.int64, copy=False), None
    if kind == "u" and (column.size == 0 or column.max() <= np.iinfo(np.int64).max):
        return column.astype(np.int64), None
    if kind != "f":
        return None
    missing = np.isnan(column)
    present = column[~missing]
    if not np.all(np.isfinite(present)):
        raise ValueError(f"feature {feature} holds infinite values, which are not categories")
    if np.any(present != np.floor(present)):
        raise ValueError(
            f"feature {feature} holds floats with a fractional part, which are not "
            "categories: bin numeric columns first (e.g. sklearn's KBinsDiscretizer)"
        )
    if present.size and np.abs(present).max() >= 2.0**63:
        return None
    return np.where(missing, 0.0, column).astype(np.int64), (missing if missing.any() else None)


def _integer_block(X) -> tuple[np.ndarray, np.ndarray | None] | None:
    """Feature-major ``(F, S)`` int64 values and missing mask of a numeric 2-D array in one
    transposing copy, or None when ``X`` is not such an array (then columns go one by one)."""
    if not (isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype.kind in "iuf" and X.size):
        return None
    if X.dtype.kind == "u" and X.dtype.itemsize == 8 and X.max() > np.iinfo(np.int64).max:
        return None
    if X.dtype.kind in "iu":
        # the core reads the (F, S) view and makes a feature-major copy faster than numpy
        return X.astype(np.int64, copy=False).T, None
    values = np.ascontiguousarray(X.T)
    missing = np.isnan(values)
    present = values[~missing] if missing.any() else values
    if not np.all(np.isfinite(present)) or np.any(present != np.floor(present)):
        for f in range(X.shape[1]):
            _integer_values(X[:, f], f)  # raises, naming the first offending feature
    if present.size and np.abs(present).max() >= 2.0**63:
        return None
    block = np.where(missing, 0.0, values).astype(np.int64)
    return block, (missing if missing.any() else None)


def _object_values(column: np.ndarray, feature: int) -> tuple[np.ndarray, np.ndarray]:
    """``(object values, missing mask)`` of a column coded by value; rejects fractional floats.

    Numbers arrive here too: integers beyond int64 (uint64 >= 2**63, whole floats >= 2**63)
    and numeric columns of a feature whose training values were not numbers (they are
    then compared with those values as Python objects, so an int never equals a string).
    """
    if column.dtype.kind not in "OUSbmMiuf":
        raise ValueError(f"feature {feature} has unsupported dtype {column.dtype}")
    if column.dtype.kind in "mM":
        # numpy gives ints for datetime64[ns] but datetime objects for coarser units, so one
        # date would be two categories: pandas' Timestamp / Timedelta are unit-free
        column = pd.Series(column).astype(object).to_numpy()
    elif column.dtype.kind != "O":
        column = column.astype(object)
    missing = np.asarray(pd.isna(column), dtype=bool)
    # pandas' type inference is a C loop: only columns that may hold floats are looked at
    # value by value (a million strings took 0.2 s here before)
    inferred = pd.api.types.infer_dtype(column, skipna=True)
    if inferred == "floating":
        floats = column[~missing].astype(np.float64)
    elif inferred in ("mixed-integer-float", "mixed-integer", "mixed"):
        kept = [v for v in column[~missing] if isinstance(v, (float, np.floating))]
        floats = np.asarray(kept, dtype=np.float64)
    else:
        floats = np.empty(0)
    if not np.all(np.isfinite(floats)) or np.any(floats != np.floor(floats)):
        raise ValueError(
            f"feature {feature} holds floats with a fractional part (or infinite), "
            "which are not categories: bin numeric columns first"
        )
    return column, missing


def _within_int64(low, high) -> bool:
    """Whether the sorted integers from ``low`` to ``high`` fit the core's int64 codes."""
    return int(np.iinfo(np.int64).min) <= int(low) and int(high) <= int(np.iinfo(np.int64).max)


def _hashed(feature: int, operation, values: np.ndarray):
    """``operation(values)`` of a hash table operation, with unhashable values (lists,
    dicts, arrays) reported as a ValueError naming the feature instead of a bare
    ``TypeError: unhashable type``."""
    try:
        return operation(values)
    except TypeError as error:
        raise ValueError(
            f"feature {feature} holds values that cannot be categories ({error}): categories "
            "must be hashable, such as strings, numbers or tuples"
        ) from None


def _stack(columns: list[np.ndarray], masks: list[np.ndarray | None]):
    """Feature-major int64 values and the missing mask (None when nothing is missing)."""
    values = np.stack(columns) if columns else np.empty((0, 0), dtype=np.int64)
    if all(m is None for m in masks):
        return values, None
    n_rows = values.shape[1]
    return values, np.stack([np.zeros(n_rows, bool) if m is None else m for m in masks])


@dataclass
class EncodedTable:
    """Feature-major codes of a table: ``-1`` where a value is missing or unknown."""

    codes: np.ndarray  # (F, S) int32


class CategoryEncoder:
    """Learns each feature's categories (sorted distinct non-missing values) and codes tables.

    Integer and whole-float columns are factorised in the Rust core (parallel over
    columns); other columns (strings, booleans, objects) by pandas' hash tables.
    """

    def __init__(self) -> None:
        self.categories: list[np.ndarray] = []
        self.numeric: list[bool] = []
        self.feature_names: np.ndarray | None = None
        self._indexes: dict[int, pd.Index] = {}
        self._integer_cache: dict[tuple[int, ...], tuple[np.ndarray, list[int]]] = {}

    @property
    def cardinalities(self) -> list[int]:
        return [len(c) for c in self.categories]

    @property
    def offsets(self) -> list[int]:
        return np.concatenate([[0], np.cumsum(self.cardinalities)]).astype(int).tolist()

    def fit_transform(self, X, *, n_threads: int = 1) -> np.ndarray:
        """Learns the categories of ``X`` and returns its codes ``(F, S)``."""
        columns, self.feature_names = _columns_of(X)
        n_features, n_rows = len(columns), columns[0].shape[0]
        block = _integer_block(X)
        if block is not None:
            codes, flat, offsets = _core.factorize_integers(*block, n_threads)
            as_float = X.dtype.kind == "f"
            self.categories = [
                flat[offsets[f] : offsets[f + 1]].astype(np.float64 if as_float else np.int64)
                for f in range(n_features)
            ]
            self.numeric = [True] * n_features
            self._indexes, self._integer_cache = {}, {}
            return codes
        codes = np.empty((n_features, n_rows), dtype=np.int32)
        self.categories = [np.empty(0)] * n_features
        self.numeric = [False] * n_features
        numeric, values, masks = [], [], []
        for f, column in enumerate(columns):
            integers = _integer_values(column, f)
            if integers is not None:
                numeric.append(f)
                values.append(integers[0])
                masks.append(integers[1])
                continue
            objects, missing = _object_values(column, f)
            present = objects[~missing]
            uniques = _hashed(f, pd.unique, present)
            try:
                categories = uniques[np.argsort(uniques, kind="stable")]
            except TypeError as error:
                raise ValueError(
                    f"feature {f} mixes values that cannot be ordered "
                    f"(e.g. numbers and strings): {error}"
                ) from None
            codes[f] = pd.Index(categories).get_indexer(objects)
            codes[f][missing] = -1
            self.categories[f] = np.asarray(categories)
        if numeric:
            block, mask = _stack(values, masks)
            numeric_codes, flat, offsets = _core.factorize_integers(block, mask, n_threads)
            codes[numeric] = numeric_codes
            for i, f in enumerate(numeric):
                categories = flat[offsets[i] : offsets[i + 1]]
                self.categories[f] = (
                    categories.astype(np.float64) if columns[f].dtype.kind == "f" else categories
                )
                self.numeric[f] = True
        self._indexes, self._integer_cache = {}, {}
        return codes

    def transform(
        self, X, *, handle_unknown: str = "ignore", n_threads: int = 1, owner: str = "the estimator"
    ) -> EncodedTable:
        """Codes ``X`` with the learned categories; unknown values become -1 (or an error).

        ``owner`` names the estimator in error messages.
        """
        if not isinstance(handle_unknown, str) or handle_unknown not in ("ignore", "error"):
            raise ValueError(
                f"handle_unknown must be one of ['error', 'ignore'], got {handle_unknown!r}"
            )
        columns, names = _columns_of(X)
        self.check_features(len(columns), names, owner)
        block = _integer_block(X) if all(self.numeric) else None
        if block is not None:
            flat, offsets = self._integer_categories(tuple(range(len(columns))))
            codes = _core.encode_integers(*block, flat, offsets, n_threads)
            return EncodedTable(codes=self._resolve_unknown(codes, columns, handle_unknown))
        codes = np.empty((len(columns), columns[0].shape[0]), dtype=np.int32)
        numeric, values, masks = [], [], []
        for f, column in enumerate(columns):
            integers = _integer_values(column, f) if self.numeric[f] else None
            if integers is not None:
                numeric.append(f)
                values.append(integers[0])
                masks.append(integers[1])
                continue
            objects, missing = _object_values(column, f)
            codes[f] = _hashed(f, self._index(f).get_indexer, objects)
            codes[f][(codes[f] < 0) & ~missing] = -2
            codes[f][missing] = -1
        if numeric:
            block, mask = _stack(values, masks)
            flat, offsets = self._integer_categories(tuple(numeric))
            codes[numeric] = _core.encode_integers(block, mask, flat, offsets, n_threads)
        return EncodedTable(codes=self._resolve_unknown(codes, columns, handle_unknown))

    @staticmethod
    def _resolve_unknown(codes: np.ndarray, columns, handle_unknown: str) -> np.ndarray:
        """Unknown values (code -2) become -1 (skipped), or an error naming them."""
        unknown = codes == -2
        if unknown.any():
            if handle_unknown == "error":
                f = int(np.flatnonzero(unknown.any(axis=1))[0])
                examples = pd.unique(columns[f][unknown[f]])[:5].tolist()
                raise ValueError(
                    f"Found unknown categories {examples} in feature {f} during "
                    "transform (handle_unknown='error')"
                )
            codes[unknown] = -1
        return codes

    def _integer_categories(self, features: tuple[int, ...]) -> tuple[np.ndarray, list[int]]:
        """The int64 categories of ``features`` side by side and their offsets (cached)."""
        if features not in self._integer_cache:
            flat = np.concatenate([self.categories[f].astype(np.int64) for f in features])
            sizes = [len(self.categories[f]) for f in features]
            self._integer_cache[features] = (flat, [0, *np.cumsum(sizes).tolist()])
        return self._integer_cache[features]

    def extend(
        self, X, *, n_threads: int = 1, owner: str = "the estimator"
    ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """Adds the categories of ``X`` not seen before and returns its codes ``(F, S)``.

        The vocabulary only grows and stays sorted, so it equals what ``fit_transform`` of
        all the data seen so far would have learned. Also returns, per feature, the new code
        of every old category (``None`` where the feature gained nothing), so that count
        tables can follow their categories.

        Nothing changes unless every column is valid, and the containers are replaced, never
        mutated, so a shallow copy of the encoder can be extended without touching the
        original (what ``partial_fit`` relies on to stay unchanged when a batch fails).
        """
        columns, names = _columns_of(X)
        self.check_features(len(columns), names, owner)
        moved: list[np.ndarray | None] = []
        categories, numeric = list(self.categories), list(self.numeric)
        for f, column in enumerate(columns):
            old = self.categories[f]
            integers = _integer_values(column, f) if self.numeric[f] else None
            if integers is not None:
                values, missing = integers
                present = np.unique(values if missing is None else values[~missing])
                unseen = present[~np.isin(present, old.astype(np.int64), assume_unique=True)]
                if unseen.shape[0] == 0:
                    moved.append(None)
                    continue
                merged = np.union1d(old.astype(np.int64), unseen).astype(old.dtype)
                moved.append(np.searchsorted(merged, old))
            else:
                objects, missing = _object_values(column, f)
                present = objects[~missing]
                unseen = pd.unique(present[_hashed(f, self._index(f).get_indexer, present) < 0])
                if unseen.shape[0] == 0:
                    moved.append(None)
                    continue
                merged = np.concatenate([old.astype(object), np.asarray(unseen, dtype=object)])
                try:
                    order = np.argsort(merged, kind="stable")
                except TypeError as error:
                    raise ValueError(
                        f"feature {f} mixes values that cannot be ordered "
                        f"(e.g. numbers and strings): {error}"
                    ) from None
                position = np.empty_like(order)
                position[order] = np.arange(order.shape[0])
                moved.append(position[: old.shape[0]])
                merged = merged[order]
                integers = pd.api.types.infer_dtype(merged) == "integer"
                if self.numeric[f] and integers and _within_int64(merged[0], merged[-1]):
                    merged = merged.astype(old.dtype)  # integers held in an object column
                else:
                    numeric[f] = False
            categories[f] = merged
        if any(m is not None for m in moved):
            unchanged = {f: i for f, i in self._indexes.items() if moved[f] is None}
            self.categories, self.numeric = categories, numeric
            self._indexes, self._integer_cache = unchanged, {}
        codes = self.transform(X, n_threads=n_threads, owner=owner).codes
        return codes, moved

    def _index(self, f: int) -> pd.Index:
        """A hash index of feature ``f``'s categories, built on first use."""
        if f not in self._indexes:
            self._indexes[f] = pd.Index(self.categories[f])
        return self._indexes[f]

    def check_features(self, n_features: int, names: np.ndarray | None, owner: str) -> None:
        """Raises unless the table has the training number (and names) of features; warns,
        as scikit-learn does, when only one of the two tables has names (columns are then
        matched by position, which a reordered table would silently break)."""
        if n_features != len(self.categories):
            raise ValueError(
                f"X has {n_features} features, but {owner} is expecting "
                f"{len(self.categories)} features as input."
            )
        if (self.feature_names is None) != (names is None):
            warnings.warn(
                f"X has feature names, but {owner} was fitted without feature names"
                if self.feature_names is None
                else f"X does not have valid feature names, but {owner} was fitted with "
                "feature names",
                UserWarning,
                stacklevel=4,
            )
        named = self.feature_names is not None and names is not None
        if named and not np.array_equal(names, self.feature_names):
            raise ValueError(
                "The feature names should match those that were passed during fit: "
                f"expected {list(self.feature_names)}, got {list(names)}"
            )

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_indexes"], state["_integer_cache"] = {}, {}
        return state


def encode_labels(y, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted class labels and the class index of every row; rejects missing labels."""
    y = np.asarray(y.to_numpy() if isinstance(y, (pd.Series, pd.Index)) else y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change the "
            "shape of y to (n_samples,), for example using ravel().",
            DataConversionWarning,
            stacklevel=3,
        )
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array, got an array of shape {y.shape} instead.")
    if y.shape[0] != n_samples:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: X has {n_samples} "
            f"rows, y has {y.shape[0]}"
        )
    if y.dtype.kind in "fcO" and np.any(pd.isna(y)):
        raise ValueError("y contains missing labels (NaN or None): every row needs a class")
    if y.dtype.kind == "O":
        inferred = pd.api.types.infer_dtype(y, skipna=False)
        if inferred in ("integer", "boolean", "floating", "mixed-integer-float"):
            # numbers held as objects (a pandas object column): scikit-learn's target check
            # calls them "Unknown label type: unknown", yet they are labels like any other
            y = np.asarray(y.tolist())
        elif inferred in ("mixed", "mixed-integer"):
            raise ValueError(
                "y mixes labels of different types (e.g. numbers and strings), which "
                f"cannot be ordered: {pd.unique(y)[:5].tolist()}"
            )
    check_classification_targets(y)
    try:
        classes, indices = np.unique(y, return_inverse=True)
    except TypeError:
        raise ValueError("y mixes label types that cannot be ordered (e.g. ints and strings)")
    return classes, indices.astype(np.int64).reshape(-1)


def check_sample_weight(sample_weight, n_samples: int) -> np.ndarray:
    """Float64 weights, one per row, finite and non-negative with a positive sum."""
    if sample_weight is None:
        return np.ones(n_samples, dtype=np.float64)
    dtype = getattr(sample_weight, "dtype", None)
    if dtype is None and isinstance(sample_weight, (list, tuple, complex)):
        dtype = np.asarray(sample_weight).dtype
    if getattr(dtype, "kind", None) == "c":  # numpy would drop the imaginary part
        raise ValueError("sample_weight must hold real numbers, got complex values")
    try:
        if isinstance(sample_weight, numbers.Real):
            weights = np.full(n_samples, float(sample_weight))
        else:
            weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"sample_weight must hold real numbers: {error}") from None
    if weights.ndim != 1 or weights.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight.shape == {weights.shape}, expected ({n_samples},): one weight per row"
        )
    if not np.all(np.isfinite(weights)):
        raise ValueError("sample_weight contains NaN or infinite values")
    if np.any(weights < 0):
        raise ValueError("Negative values in data passed to sample_weight")
    with np.errstate(over="ignore"):
        total = weights.sum()
    if not total > 0:
        raise ValueError("sample_weight sums to zero: at least one row needs positive weight")
    if not total <= MAX_TOTAL_WEIGHT:
        raise ValueError(
            f"sample_weight sums to {total:.3g}, beyond {MAX_TOTAL_WEIGHT:.0e}: counts that "
            "large overflow float64 sums; rescale the weights"
        )
    return np.ascontiguousarray(weights)


def check_table_size(n_classes: int, n_columns: int) -> None:
    """Refuses with MemoryError a (classes x categories) table beyond ``MAX_TABLE_CELLS``."""
    cells = n_classes * n_columns
    if cells > MAX_TABLE_CELLS:
        raise MemoryError(
            f"{n_classes} classes x {n_columns} categories = {cells} table cells is beyond "
            f"what memory allows (limit {MAX_TABLE_CELLS}): the cardinality is too high"
        )
