"""Input validation and category encoding.

Every estimator sees its input through this module: tables become feature-major integer
codes ``(F, S)`` with ``-1`` for a missing value (None, NaN, pandas NA) or a category not
seen in training, labels become class indices, weights become a checked float vector.
Encoding is hash-based (pandas factorisation), never a Python loop over rows, and never
mutates the caller's data.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.utils.multiclass import check_classification_targets

#: Largest table (in float64 cells) one fit may allocate before refusing with MemoryError.
MAX_TABLE_CELLS = 2**31


def _columns_of(X) -> tuple[list[np.ndarray], np.ndarray | None]:
    """Splits a 2-D table into 1-D columns and returns the column names of a DataFrame."""
    if isinstance(X, pd.DataFrame):
        names = np.asarray([str(c) for c in X.columns], dtype=object)
        if not all(isinstance(c, str) for c in X.columns):
            names = None
        return [_column_array(X.iloc[:, j]) for j in range(X.shape[1])], names
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise TypeError("sparse input is not supported: categorical features must be dense")
    array = X if isinstance(X, np.ndarray) else np.asarray(X, dtype=None)
    if array.dtype.kind == "U" and not isinstance(X, np.ndarray):
        # mixed lists become strings in numpy: keep the Python values instead
        array = np.asarray(X, dtype=object)
    if array.ndim != 2:
        raise ValueError(
            f"Expected 2D array, got {array.ndim}D array instead: reshape your data with "
            "array.reshape(-1, 1) if it has a single feature or array.reshape(1, -1) if "
            "it holds a single sample."
        )
    if array.dtype.kind == "c":
        raise ValueError("Complex data not supported")
    return [array[:, j] for j in range(array.shape[1])], None


def _column_array(series: pd.Series) -> np.ndarray:
    """A DataFrame column as a numpy array whose missing values pandas recognises."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return np.asarray(series.astype(object))
    if isinstance(series.dtype, np.dtype):
        return series.to_numpy()
    return series.to_numpy(dtype=object, na_value=np.nan)


def _missing_and_check(column: np.ndarray, feature: int) -> tuple[np.ndarray, np.ndarray]:
    """Missing-value mask of a column; rejects values that are not categories."""
    kind = column.dtype.kind
    if kind in "biu":
        return column, np.zeros(column.shape[0], dtype=bool)
    if kind == "f":
        missing = np.isnan(column)
        present = column[~missing]
        if not np.all(np.isfinite(present)):
            raise ValueError(f"feature {feature} holds infinite values")
        if np.any(present != np.floor(present)):
            raise ValueError(
                f"feature {feature} holds floats with a fractional part, which are not "
                "categories: bin numeric columns first (e.g. sklearn's KBinsDiscretizer)"
            )
        return column, missing
    if kind in "USO":
        column = column.astype(object) if kind != "O" else column
        missing = np.asarray(pd.isna(column), dtype=bool)
        floats = [v for v in column[~missing] if isinstance(v, (float, np.floating))]
        if floats and any(not np.isfinite(v) or v != np.floor(v) for v in floats):
            raise ValueError(
                f"feature {feature} holds floats with a fractional part (or infinite), "
                "which are not categories: bin numeric columns first"
            )
        return column, missing
    if kind in "mM":
        return column, np.asarray(pd.isna(column), dtype=bool)
    raise ValueError(f"feature {feature} has unsupported dtype {column.dtype}")


@dataclass
class EncodedTable:
    """Feature-major codes of a table and what was learned or found on the way."""

    codes: np.ndarray  # (F, S) int32, -1 missing or unknown
    unknown: np.ndarray | None  # (F, S) bool where a present value was unknown, or None


class CategoryEncoder:
    """Learns each feature's categories (sorted distinct non-missing values) and codes tables."""

    def __init__(self) -> None:
        self.categories: list[np.ndarray] = []
        self.feature_names: np.ndarray | None = None
        self._indexes: list[pd.Index] = []

    @property
    def cardinalities(self) -> list[int]:
        return [len(c) for c in self.categories]

    @property
    def offsets(self) -> list[int]:
        return np.concatenate([[0], np.cumsum(self.cardinalities)]).astype(int).tolist()

    def fit_transform(self, X) -> np.ndarray:
        """Learns the categories of ``X`` and returns its codes ``(F, S)``."""
        columns, self.feature_names = _columns_of(X)
        _check_not_empty(columns)
        codes = np.empty((len(columns), columns[0].shape[0]), dtype=np.int32)
        self.categories, self._indexes = [], []
        for f, column in enumerate(columns):
            values, missing = _missing_and_check(column, f)
            present = values[~missing] if missing.any() else values
            try:
                uniques = pd.unique(present)
                order = np.argsort(uniques, kind="stable")
            except TypeError as error:
                raise ValueError(
                    f"feature {f} mixes values that cannot be ordered "
                    f"(e.g. numbers and strings): {error}"
                ) from None
            categories = uniques[order]
            index = pd.Index(categories)
            codes[f] = index.get_indexer(values)
            codes[f][missing] = -1
            self.categories.append(np.asarray(categories))
            self._indexes.append(index)
        return codes

    def transform(self, X, *, handle_unknown: str = "ignore") -> EncodedTable:
        """Codes ``X`` with the learned categories; unknown values become -1 (or an error)."""
        columns, names = _columns_of(X)
        _check_not_empty(columns)
        self.check_features(len(columns), names)
        codes = np.empty((len(columns), columns[0].shape[0]), dtype=np.int32)
        unknown_any = []
        for f, column in enumerate(columns):
            values, missing = _missing_and_check(column, f)
            codes[f] = self._indexes[f].get_indexer(values)
            unknown = (codes[f] < 0) & ~missing
            if unknown.any() and handle_unknown == "error":
                examples = pd.unique(values[unknown])[:5]
                raise ValueError(
                    f"Found unknown categories {list(examples)} in feature {f} during "
                    "transform (handle_unknown='error')"
                )
            codes[f][missing] = -1
            unknown_any.append(unknown)
        return EncodedTable(codes=codes, unknown=np.asarray(unknown_any))

    def check_features(self, n_features: int, names: np.ndarray | None) -> None:
        """Raises unless the table has the training number (and names) of features."""
        if n_features != len(self.categories):
            raise ValueError(
                f"X has {n_features} features, but the estimator is expecting "
                f"{len(self.categories)} features as input."
            )
        if self.feature_names is not None and names is not None:
            if not np.array_equal(names, self.feature_names):
                raise ValueError(
                    "The feature names should match those that were passed during fit: "
                    f"expected {list(self.feature_names)}, got {list(names)}"
                )

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_indexes")
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._indexes = [pd.Index(c) for c in self.categories]


def _check_not_empty(columns: list[np.ndarray]) -> None:
    if not columns:
        raise ValueError("0 feature(s) (shape=(n, 0)) while a minimum of 1 is required.")
    if columns[0].shape[0] == 0:
        raise ValueError(
            f"Found array with 0 sample(s) (shape=(0, {len(columns)})) while a minimum of 1 "
            "is required."
        )


def encode_labels(y, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted class labels and the class index of every row; rejects missing labels."""
    y = np.asarray(y.to_numpy() if isinstance(y, (pd.Series, pd.Index)) else y)
    if y.ndim == 2 and y.shape[1] == 1:
        raise ValueError(
            "y should be a 1d array, got an array of shape "
            f"{y.shape} instead: use y.ravel() to pass a column vector"
        )
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array, got an array of shape {y.shape} instead.")
    if y.shape[0] != n_samples:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: X has {n_samples} "
            f"rows, y has {y.shape[0]}"
        )
    if y.dtype.kind in "fcO" and np.any(pd.isna(y)):
        raise ValueError("y contains missing labels (NaN or None): every row needs a class")
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
    if isinstance(sample_weight, numbers.Number):
        weights = np.full(n_samples, float(sample_weight))
    else:
        weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.ndim != 1 or weights.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight.shape == {weights.shape}, expected ({n_samples},): one weight per row"
        )
    if not np.all(np.isfinite(weights)):
        raise ValueError("sample_weight contains NaN or infinite values")
    if np.any(weights < 0):
        raise ValueError("Negative values in data passed to sample_weight")
    if not weights.sum() > 0:
        raise ValueError("sample_weight sums to zero: at least one row needs positive weight")
    return np.ascontiguousarray(weights)


def check_table_size(n_classes: int, n_columns: int) -> None:
    """Refuses with MemoryError a (classes x categories) table beyond ``MAX_TABLE_CELLS``."""
    cells = n_classes * n_columns
    if cells > MAX_TABLE_CELLS:
        raise MemoryError(
            f"{n_classes} classes x {n_columns} categories = {cells} table cells is beyond "
            f"what memory allows (limit {MAX_TABLE_CELLS}): the cardinality is too high"
        )
