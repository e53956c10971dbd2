"""Input validation and category encoding.

Every estimator sees its input through this module: tables become feature-major integer
codes ``(F, S)`` with ``-1`` for a missing value (None, NaN, pandas NA) or a category not
seen in training, labels become class indices, weights become a checked float vector.
Encoding goes through the vocabulary in the Rust core (``_core.Vocabulary``), never a
Python loop over rows, and never mutates the caller's data.
"""

from __future__ import annotations

import cmath
import dataclasses
import datetime
import itertools
import numbers
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets

from . import _core
from ._memory import memory_budget_bytes
from ._warnings import warn


def aligned_arrays(value: Any) -> Any:
    """``value`` with every numpy array in it (through dicts, lists, tuples and dataclass
    instances) at an aligned address. Arrays unpickled from byte frames (Dask ships
    models and count tables between processes so) may sit at an odd offset, which the
    Rust kernels refuse to borrow; those are copied, and the rest is returned as it is."""
    if isinstance(value, np.ndarray):
        return value if value.flags.aligned else np.require(value, requirements=["A"])
    if type(value) is dict:
        items = {key: aligned_arrays(item) for key, item in value.items()}
        return value if all(items[k] is value[k] for k in value) else items
    if type(value) in (list, tuple):
        items_list = [aligned_arrays(item) for item in value]
        if all(new is old for new, old in zip(items_list, value)):
            return value
        return type(value)(items_list)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}
        changed = {name: aligned_arrays(item) for name, item in fields.items()}
        if any(changed[name] is not fields[name] for name in fields):
            return dataclasses.replace(value, **changed)
    return value


#: How many float64 copies of its (classes x categories) table a fit holds at its peak
#: (counts, log-probabilities, their transpose, a temporary): the largest table is that
#: share of the memory budget (:func:`check_table_size`).
TABLE_COPIES = 4


#: Largest total sample weight of one batch. Counts are summed again (over classes, values
#: and batches, and into sums like N + m), so a total near the float64 maximum (1.8e308)
#: turns into inf and NaN probabilities; this leaves eight orders of magnitude of headroom.
MAX_TOTAL_WEIGHT = 1e300
#: The largest int64, as a Python int.
INT64_MAX = int(np.iinfo(np.int64).max)

#: One column as the encoder reads it: ``("ints", values, missing, floats)``,
#: ``("objects", values)``, ``("arrow", chunked array)``, ``("category", codes, categories)``
#: or ``("stream", source, fallback)`` (an object exporting ``__arrow_c_stream__``, read in
#: Rust; ``fallback()`` gives the spec to read it by where its type is not read there).
ColumnSpec = tuple[Any, ...]


def _normalize(value: object) -> object:
    """A value the core would code as an object (see :func:`_normalized`): numpy
    scalars become their Python value, pandas' missing markers None; anything else is
    returned as it is and coded as a hashable Python object."""
    if value is pd.NA or value is pd.NaT:
        return None
    if (isinstance(value, Decimal) and value.is_nan()) or (
        isinstance(value, complex) and cmath.isnan(value)
    ):
        return None  # Decimal('NaN') and complex NaNs are missing, as for floats
    if isinstance(value, Decimal):
        # a number, as a float is: whole, the integer it equals (exactly, as a whole float
        # beyond int64 is); otherwise the float, refused as a fractional or infinite float
        # is. Beyond the floats' range (1e308) it stays a Decimal: int() of 1E+3000000
        # would take minutes
        if not value.is_finite() or value.adjusted() > _LARGEST_FLOAT_EXPONENT:
            return value if value.is_finite() else float(value)
        return int(value) if value == value.to_integral_value() else float(value)
    if type(value) is datetime.date:  # exactly a date: a datetime is a date too
        # the Timestamp an Arrow or numpy date becomes (see _encode_arrow), so that
        # the same dates code alike in every form
        try:
            return pd.Timestamp(value)
        except (ValueError, OverflowError):  # beyond the Timestamps this pandas holds
            return value
    if isinstance(value, np.generic):
        if isinstance(value, np.datetime64):
            return None if np.isnat(value) else pd.Timestamp(value)
        if isinstance(value, np.timedelta64):
            return None if np.isnat(value) else pd.Timedelta(value)
        return value.item()
    return value


#: The decimal exponent of the largest float64 (1.8e308).
_LARGEST_FLOAT_EXPONENT = 308


def _normalized(values: np.ndarray) -> np.ndarray:
    """``values`` (a 1-D object array) with the cells the core cannot hash as they are
    replaced by :func:`_normalize`'s value (a copy; ``values`` itself when there are
    none). Normalising here rather than as a callback from the core keeps Python code out
    from under its frames, where a daemon thread stopped at interpreter exit would abort
    the process (``_core.cells_to_normalize``)."""
    positions = _core.cells_to_normalize(values)
    if positions.size == 0:
        return values
    values = values.copy()
    # one conversion per distinct value (a column of a million dates holds a few
    # thousand), where the value can be a key
    seen: dict[Any, object] = {}
    for position in positions.tolist():
        value = values[position]
        key = (type(value), value)
        try:
            normal = seen.get(key, seen)
        except (TypeError, ValueError):  # unhashable (the core names it), or a hash that fails
            values[position] = _normalize(value)
            continue
        if normal is seen:
            normal = seen[key] = _normalize(value)
        values[position] = normal
    return values


@dataclass
class _Table:
    """A table read for encoding, without copying its values where it can be helped.

    ``block`` holds a numeric 2-D array ``(S, F)`` as given (coded all features at once,
    by blocks of rows: see ``CategoryEncoder._encode``); otherwise ``columns`` holds one
    column per feature (see ``ColumnSpec``).
    """

    columns: list[ColumnSpec]
    block: np.ndarray | None
    labels: list[Any] | None
    names: np.ndarray | None
    n_rows: int
    floats: list[bool]

    @property
    def n_features(self) -> int:
        return len(self.floats)


#: Cells of a numeric array coded per block of rows: a block's int64 copy (32 MiB) and
#: codes are all that coding needs beside the table's codes, and the vocabulary holds
#: the GIL (single-threaded coding) for one block at a time, so other threads and Ctrl-C
#: wait at most that long.
ENCODE_BLOCK_CELLS = 1 << 22

#: Values of one column coded per call into the vocabulary (same reasons).
ENCODE_BLOCK_ROWS = 1 << 20

#: DataFrames of at most this many rows are read as one object array when they are coded
#: against a known vocabulary (scoring a row or a few): the same codes as column by
#: column, without building a pandas Series per column.
SMALL_FRAME_ROWS = 64


def _read_table(X: Any, *, known: bool = False) -> _Table:
    """Reads a 2-D table (numpy array, nested list, pandas or polars DataFrame, pyarrow
    Table or RecordBatch, or any object exporting ``__arrow_c_stream__``); raises on a table
    without rows or without columns. ``known``: the table is coded against a vocabulary
    that will not grow (declared categories of a ``category`` column do not matter)."""
    if known and isinstance(X, pd.DataFrame) and 0 < X.shape[0] <= SMALL_FRAME_ROWS:
        labels, names = _labels_of(X.columns)
        columns = [_small_column(array, f) for f, array in enumerate(_column_arrays(X))]
        floats = [False] * len(columns)
        return _Table(columns, None, labels, names, X.shape[0], floats)
    table = _split_table(X)
    if table.n_rows == 0:
        raise ValueError(
            f"Found array with 0 sample(s) (shape=(0, {table.n_features})) while a minimum "
            "of 1 is required."
        )
    if table.n_features == 0:
        raise ValueError(
            f"0 feature(s) (shape=({table.n_rows}, 0)) while a minimum of 1 is required."
        )
    return table


#: The column labels last read by ``_labels_of``: (Index, labels, names).
_LAST_LABELS: dict[str, tuple[pd.Index, list[Any], np.ndarray | None]] = {}


def _labels_of(columns: pd.Index) -> tuple[list[Any], np.ndarray | None]:
    """``(labels, feature names)`` of a DataFrame's columns, reusing those of the last
    call for equal columns: scoring rows one at a time reads the same labels each time,
    and listing a pandas 3 ``str`` Index costs tens of microseconds."""
    cached = _LAST_LABELS.get("last")
    if cached is not None and (
        columns is cached[0] or (columns.dtype == cached[0].dtype and columns.equals(cached[0]))
    ):
        return cached[1], cached[2]
    labels = columns.tolist()
    names = _column_names(labels)
    _LAST_LABELS["last"] = (columns, labels, names)
    return labels, names


def _column_arrays(X: pd.DataFrame) -> list[Any]:
    """The arrays (numpy or pandas extension arrays) of a DataFrame's columns, without a
    Series per column where pandas allows it."""
    iterate = getattr(X, "_iter_column_arrays", None)  # pandas 1.3 to 3: no Series built
    if iterate is not None:
        arrays = list(iterate())
        if len(arrays) == X.shape[1]:
            return arrays
    return [column.array for _, column in X.items()]


def _small_column(array: Any, feature: int) -> ColumnSpec:
    """The column spec of one column array of a small DataFrame being scored (see
    ``_read_table``): numpy, categorical and Arrow-backed arrays as they are, other
    extension arrays through a Series."""
    if isinstance(array, np.ndarray):
        return _array_column(array, feature)
    if isinstance(array, pd.Categorical):
        return ("category", array.codes, array.categories)
    arrow = _arrow_text(array)
    if arrow is not None:  # a few strings: as Python objects, cheaper than their buffers
        values = np.empty(len(arrow), dtype=object)
        values[:] = arrow.to_pylist()
        return ("objects", values)
    return _frame_column(array, feature)


def _small_objects(column: ColumnSpec) -> np.ndarray | None:
    """The values of a column spec of a few rows as Python objects (None missing), coded
    as the spec itself would be; None for a spec read otherwise."""
    kind = column[0]
    if kind == "objects":
        return np.asarray(column[1])
    values = np.empty(len(column[1]), dtype=object)
    if kind == "ints":
        values[:] = column[1].tolist()
        if column[2] is not None:
            values[column[2]] = None
        return values
    if kind != "category":
        return None
    codes, categories = np.asarray(column[1]), column[2]
    array = categories.array
    text = _arrow_text(array)
    if text is not None:
        values[:] = [text[k].as_py() if k >= 0 else None for k in codes.tolist()]
        return values
    if isinstance(array, np.ndarray) and array.dtype.kind in "iuOU":
        values[:] = array[np.maximum(codes, 0)].tolist()
        values[codes < 0] = None
        return values
    return None


def _arrow_text(array: Any) -> Any:
    """The Arrow (chunked) array of an Arrow-backed pandas array or Index values of
    strings, else None."""
    to_arrow = getattr(array, "__arrow_array__", None)
    if to_arrow is None:
        return None
    dtype = array.dtype
    if getattr(dtype, "storage", None) != "pyarrow" and not isinstance(dtype, pd.ArrowDtype):
        return None
    arrow = to_arrow()
    return arrow if arrow.type.id in _text_type_ids() else None


def _text_type_ids() -> set[int]:
    """Arrow type ids of utf8, large_utf8 and string_view."""
    if not _TEXT_TYPE_IDS:
        pa = _pyarrow("Arrow columns")
        _TEXT_TYPE_IDS.update(t.id for t in (pa.string(), pa.large_string(), pa.string_view()))
    return _TEXT_TYPE_IDS


_TEXT_TYPE_IDS: set[int] = set()


def _column_names(labels: list[Any]) -> np.ndarray | None:
    """``feature_names_in_`` of a table's column labels: all strings, or None when none
    is a string; mixed labels are refused as scikit-learn refuses them."""
    kinds = {isinstance(label, str) for label in labels}
    if kinds == {True}:
        return np.asarray(labels, dtype=object)
    if kinds == {True, False}:
        types = sorted({type(label).__name__ for label in labels})
        raise TypeError(
            "Feature names are only supported if all input features have string names, "
            f"but your input has {types} as feature name / column name types. If you want "
            "feature names to be stored and validated, you must convert them all to strings, "
            "by using X.columns = X.columns.astype(str) for example. Otherwise you can remove "
            "feature / column names from your input data, or convert them all to a "
            "non-string data type."
        )
    return None


def _module_of(X: object) -> str:
    return type(X).__module__.split(".")[0]


def refuse_non_table(X: Any) -> None:
    """Refuses, by what it is, an ``X`` that is no table at all, which numpy would take
    as one object ("Expected 2D array, got 0D array"): a polars LazyFrame, a dict (or
    any mapping), a set, or a generator (or any other one-pass iterator). A sparse matrix
    (a ``dok_matrix`` is a dict) is left to the caller's own refusal of sparse input."""
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        return
    kind = type(X).__name__
    if _module_of(X) == "polars" and hasattr(X, "collect"):
        raise TypeError(
            f"Expected a 2D table, got a polars {kind}: call .collect() first to pass its DataFrame"
        )
    if isinstance(X, Mapping):
        raise TypeError(
            f"Expected a 2D table, got a {kind}: pass a DataFrame (pandas.DataFrame(X) "
            "for a dict of columns) or a 2-D array"
        )
    if isinstance(X, (Iterator, AbstractSet)):
        raise TypeError(
            f"Expected a 2D table, got a {kind}: pass a list of rows (list(X)), a "
            "DataFrame or a 2-D array"
        )


def rows_as_array(X: Any) -> np.ndarray:
    """A table given as a list of rows (anything not an array) as an array, each value
    keeping its own type where numpy would merge them: rows mixing numbers and strings
    (all strings in numpy) and booleans beside numbers (all numbers in numpy: ``True``
    would become the category ``1``) become an object array. Rows of different lengths
    are named as such (numpy 2 speaks of an "inhomogeneous shape", numpy 1 makes an
    array of lists)."""
    if isinstance(X, np.matrix):
        # (a matrix stays 2-D when a column is taken from it)
        return np.asarray(X)
    if isinstance(X, np.ndarray):
        return X
    if isinstance(X, (list, tuple)):
        lengths = {len(row) for row in X if isinstance(row, (list, tuple, np.ndarray))}
        if len(lengths) > 1:
            raise ValueError(
                f"X has rows of different lengths ({', '.join(map(str, sorted(lengths)))} "
                "values): every row needs one value per feature (None or NaN where a value "
                "is missing)"
            )
    array = np.asarray(X, dtype=None)
    if array.dtype.kind == "U" or (array.dtype.kind in "iuf" and _holds_booleans(X)):
        array = np.asarray(X, dtype=object)
    return array


def _holds_booleans(X: Any) -> bool:
    """Whether a list of rows (or of values) holds a Python or numpy boolean."""
    if not isinstance(X, (list, tuple)):
        return False
    rows = (row if isinstance(row, (list, tuple)) else (row,) for row in X)
    # the set of the values' types: one pass in C, a fifth of an isinstance test per value
    types = set(map(type, itertools.chain.from_iterable(rows)))
    return any(issubclass(kind, (bool, np.bool_)) for kind in types)


def _numbered(f: int, labels: list[Any]) -> str:
    """How messages name feature ``f`` of a table with column labels."""
    return f"feature {f} (column {labels[f]!r})"


def _described(feature: int | str) -> str:
    """How messages name a feature given by its number or by its name (:func:`_numbered`)."""
    return feature if isinstance(feature, str) else f"feature {feature}"


def _split_table(X: Any) -> _Table:
    if isinstance(X, pd.DataFrame):
        labels = X.columns.tolist()
        columns = [
            _frame_column(array, _numbered(f, labels)) for f, array in enumerate(_column_arrays(X))
        ]
        floats = [_is_float(column) for column in columns]
        return _Table(columns, None, labels, _column_names(labels), X.shape[0], floats)
    module = _module_of(X)
    if isinstance(X, pd.Series) or (module == "polars" and hasattr(X, "to_frame")):
        raise ValueError(
            f"Expected a 2D table, got a 1D {type(X).__name__}: pass series.to_frame() "
            "if it is a single feature"
        )
    if module == "polars" and hasattr(X, "get_columns"):
        labels = list(X.columns)
        columns = [
            _polars_column(series, _numbered(f, labels)) for f, series in enumerate(X.get_columns())
        ]
        floats = [_is_float(column) for column in columns]
        return _Table(columns, None, labels, _column_names(labels), X.height, floats)
    if module == "pyarrow" or (hasattr(X, "__arrow_c_stream__") and not isinstance(X, np.ndarray)):
        pa = _pyarrow("an Arrow table")
        if isinstance(X, (pa.Array, pa.ChunkedArray)):
            raise ValueError(
                f"Expected a 2D table, got a 1D {type(X).__name__}: pass "
                "pa.table({'name': array}) if it is a single feature"
            )
        if not isinstance(X, (pa.Table, pa.RecordBatch)):
            X = _arrow_table(X)
        labels = list(X.column_names)
        columns = [("arrow", _chunked(X.column(i))) for i in range(X.num_columns)]
        floats = [pa.types.is_floating(X.schema.field(i).type) for i in range(X.num_columns)]
        return _Table(columns, None, labels, _column_names(labels), X.num_rows, floats)
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise TypeError("sparse input is not supported: categorical features must be dense")
    refuse_non_table(X)
    array = rows_as_array(X)
    if array.ndim != 2:
        raise ValueError(
            f"Expected 2D array, got {array.ndim}D array instead. Reshape your data either "
            "using array.reshape(-1, 1) if your data has a single feature or "
            "array.reshape(1, -1) if it contains a single sample."
        )
    if array.dtype.kind == "c":
        raise ValueError("Complex data not supported")
    n_rows, n_features = array.shape
    floats = [array.dtype.kind == "f"] * n_features
    if array.dtype.kind in "iuf":
        return _Table([], array, None, None, n_rows, floats)
    columns = [_array_column(array[:, j], j) for j in range(n_features)]
    return _Table(columns, None, None, None, n_rows, floats)


def _arrow_table(X: Any) -> Any:
    """A pyarrow Table read from an object's Arrow C stream."""
    pa = _pyarrow("an Arrow stream")
    try:
        return pa.table(X)
    except pa.ArrowInvalid as error:
        raise ValueError(
            f"Expected a 2D table, got a {type(X).__name__} whose Arrow stream is not a "
            f"table of columns ({error})"
        ) from error


def stream_as_table(X: Any) -> Any:
    """An object that only exports the Arrow C stream interface (a DuckDB or ADBC
    result, a nanoarrow stream: no length, and perhaps readable only once) as a pyarrow
    Table, read once, so that its rows can be counted before they are encoded;
    anything else as it is."""
    if (
        hasattr(X, "__arrow_c_stream__")
        and not hasattr(X, "shape")
        and not hasattr(X, "__len__")
        and _module_of(X) not in ("pyarrow", "polars", "pandas")
    ):
        return _arrow_table(X)
    return X


def _is_float(column: ColumnSpec) -> bool:
    """Whether a column holds floats (its whole values are then shown as floats)."""
    if column[0] == "arrow":
        return bool(_pyarrow("Arrow columns").types.is_floating(column[1].type))
    return bool(column[0] == "ints" and column[3])


def _pyarrow(what: str) -> Any:
    try:
        import pyarrow
    except ImportError:  # pragma: no cover - pyarrow is a test dependency
        raise ImportError(f"reading {what} needs pyarrow (pip install pyarrow)") from None
    return pyarrow


def _chunked(array: Any) -> Any:
    pa = _pyarrow("Arrow columns")
    return array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array])


def _array_column(column: np.ndarray, feature: int | str) -> ColumnSpec:
    """One column of a numpy array as a column spec (see ``_Table``); ``feature`` is
    the feature's number, or its name in messages (:func:`_numbered`)."""
    integers = _integer_values(column, feature)
    if integers is not None:
        return ("ints", integers[0], integers[1], column.dtype.kind == "f")
    if column.dtype.kind not in "OUSTbmMiuf":  # (T: numpy 2's variable-width strings)
        raise ValueError(f"{_described(feature)} has unsupported dtype {column.dtype}")
    if column.dtype.kind in "mM":
        # numpy gives ints for datetime64[ns] but datetime objects for coarser units, so one
        # date would be two categories: pandas' Timestamp / Timedelta are unit-free
        return ("objects", pd.Series(column).astype(object).to_numpy())
    if column.dtype.kind == "f":
        # whole floats beyond int64 (the others were ints above): the Python ints they
        # equal, as an object column of those ints gives them (NaN stays missing)
        whole = np.empty(column.shape[0], dtype=object)
        whole[:] = [None if np.isnan(v) else int(v) for v in column.tolist()]
        return ("objects", whole)
    return ("objects", column if column.dtype.kind == "O" else column.astype(object))


def _pandas_column(series: pd.Series, feature: int) -> ColumnSpec:
    """One column of a DataFrame (feature number ``feature``, for messages) as a column spec."""
    return _frame_column(series.array, feature)


def _frame_column(array: Any, feature: int | str) -> ColumnSpec:
    """One column array of a DataFrame (a numpy array or a pandas extension array, as
    ``_column_arrays`` gives them) as a column spec, without building a Series."""
    if isinstance(array, np.ndarray):
        return _array_column(array, feature)
    dtype = array.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return ("category", array.codes, dtype.categories)
    if isinstance(dtype, np.dtype):
        return _array_column(array.to_numpy(), feature)
    arrow_backed = isinstance(dtype, pd.ArrowDtype) or (
        isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"
    )
    if arrow_backed and hasattr(array, "__arrow_array__"):
        return ("arrow", _chunked(array.__arrow_array__()))
    if dtype.kind in "iu":  # pandas' nullable integers
        missing = np.asarray(array.isna(), dtype=bool)
        if dtype.kind == "u" and dtype.itemsize == 8:
            unsigned = array.to_numpy(dtype=np.uint64, na_value=0)
            if unsigned.size and int(unsigned.max()) > INT64_MAX:
                # exact Python ints, as a numpy uint64 column beyond int64 gives them
                return ("objects", array.to_numpy(dtype=np.object_, na_value=None))
        values = array.to_numpy(dtype=np.int64, na_value=0)
        return ("ints", values, missing if missing.any() else None, False)
    if dtype.kind == "f":
        return _array_column(array.to_numpy(dtype=np.float64, na_value=np.nan), feature)
    return ("objects", array.to_numpy(dtype=np.object_, na_value=None))


def _polars_column(series: Any, feature: int | str) -> ColumnSpec:
    try:
        import pyarrow
    except ImportError:
        dtype = series.dtype
        if hasattr(series, "__arrow_c_stream__") and (
            dtype.is_integer() or dtype.base_type().__name__ in _POLARS_STREAM_TYPES
        ):
            # read in Rust through the Arrow C stream interface ("stream" spec), numpy
            # values where its type turns out not to be read there
            return ("stream", series, lambda: _array_column(_polars_values(series), feature))
        return _array_column(_polars_values(series), feature)
    import polars

    # polars' own layout (string views): no copy, where the default converts to large_string
    newest = getattr(getattr(polars, "CompatLevel", None), "newest", None)
    try:
        arrow = series.to_arrow() if newest is None else series.to_arrow(compat_level=newest())
    except (pyarrow.ArrowException, ValueError, TypeError) as error:  # (Int128, ...)
        raise TypeError(
            f"{_described(feature)} has polars type {series.dtype}, which cannot be read: {error}"
        ) from None
    if series.dtype == polars.Object or not _arrow_categorical(arrow.type):
        # named by its polars type: the Arrow type polars exports it as (an Object column
        # as fixed_size_binary[8], its objects' addresses) is not one the user chose
        hint = (
            " (X.to_pandas() makes it a pandas object column, read as its Python objects)"
            if series.dtype == polars.Object
            else ""
        )
        raise TypeError(
            f"{_described(feature)} has polars type {series.dtype}, which is not categorical: "
            f"{_CATEGORICAL_TYPES}{hint}"
        )
    return ("arrow", _chunked(arrow))


def _polars_values(series: Any) -> np.ndarray:
    """A polars column as numpy values, without pyarrow: integers with nulls as Python
    ints and None (``to_numpy`` makes them float64, exact only below 2**53)."""
    if series.dtype.is_integer() and series.null_count():
        values = np.empty(len(series), dtype=object)
        values[:] = series.to_list()
        return values
    return np.asarray(series.to_numpy())


#: polars types read through the Arrow C stream interface without pyarrow (integers too).
_POLARS_STREAM_TYPES = {"String", "Categorical", "Enum", "Boolean", "Null"}


def _fits_int64(whole: np.ndarray) -> bool:
    """Whether every whole float fits int64, ``-2**63`` (exact in float64) included."""
    return not whole.size or (float(whole.min()) >= -(2.0**63) and float(whole.max()) < 2.0**63)


def _integer_values(
    column: np.ndarray, feature: int | str
) -> tuple[np.ndarray, np.ndarray | None] | None:
    """``(int64 values, missing mask or None)`` of a numeric column, or None if not numeric.

    Whole floats are integers here (NaN is missing); a fractional or infinite float is an
    error, never truncated.
    """
    kind = column.dtype.kind
    if kind == "i" or (kind == "u" and column.dtype.itemsize < 8):
        return column.astype(np.int64, copy=False), None
    # compared as Python ints: numpy 1.x compares uint64 with int64 through float64, where
    # 2**63 equals the int64 maximum
    if kind == "u" and (column.size == 0 or int(column.max()) <= INT64_MAX):
        return column.astype(np.int64), None
    if kind != "f":
        return None
    missing = np.isnan(column)
    present = column[~missing]
    if not np.all(np.isfinite(present)):
        raise ValueError(f"{_described(feature)} holds infinite values, which are not categories")
    if np.any(present != np.floor(present)):
        raise ValueError(
            f"{_described(feature)} holds floats with a fractional part, which are not "
            "categories: bin numeric columns first (e.g. sklearn's KBinsDiscretizer)"
        )
    if not _fits_int64(present):
        return None
    return np.where(missing, 0.0, column).astype(np.int64), (missing if missing.any() else None)


def _integer_block(X: np.ndarray) -> tuple[np.ndarray, np.ndarray | None] | None:
    """Feature-major ``(F, S)`` int64 values and missing mask of a numeric 2-D array (a
    view of an integer array, one copy of a float one), or None when ``X`` is not such an
    array (then columns go one by one)."""
    if not (X.dtype.kind in "iuf" and X.size):
        return None
    if X.dtype.kind == "u" and X.dtype.itemsize == 8 and int(X.max()) > INT64_MAX:
        return None
    if X.dtype.kind in "iu":
        return X.astype(np.int64, copy=False).T, None
    values = np.ascontiguousarray(X.T)
    missing = np.isnan(values)
    present = values[~missing] if missing.any() else values
    if not np.all(np.isfinite(present)) or np.any(present != np.floor(present)):
        for f in range(X.shape[1]):
            _integer_values(X[:, f], f)  # raises, naming the first offending feature
    if not _fits_int64(present):
        return None
    block = np.where(missing, 0.0, values).astype(np.int64)
    return block, (missing if missing.any() else None)


def _encode_category_codes(
    vocabulary: _core.Vocabulary,
    feature: int,
    categories: Any,
    codes: np.ndarray,
    grow: bool,
    name: str,
    declared: bool,
) -> np.ndarray:
    """Vocabulary codes of a column given as category codes (-1 missing) into
    ``categories`` (a pandas ``category`` column or an Arrow dictionary): through the
    categories' own codes, or, scoring fewer rows than there are categories, through
    the rows' values alone."""
    if not grow and codes.size < len(categories):
        rows = np.maximum(codes, 0).astype(np.int64)
        text = _arrow_text(categories.array if isinstance(categories, pd.Index) else None)
        if text is not None and codes.size <= SMALL_FRAME_ROWS:
            values = np.empty(codes.size, dtype=object)  # a few rows: their strings
            values[:] = [text[k].as_py() for k in rows.tolist()]
            column: ColumnSpec = ("objects", values)
            out = _encode_column(vocabulary, feature, column, False, name)
        else:
            column = _values_column(categories, feature)
            out = _encode_column(vocabulary, feature, column, False, name, positions=rows)
        out[codes < 0] = MISSING_CODE
        return out
    mapped = _category_map(vocabulary, feature, categories, codes, grow, name, declared=declared)
    # code -1 (missing) takes the last entry, MISSING_CODE
    coded: np.ndarray = np.append(mapped, np.int32(MISSING_CODE))[codes]
    return coded


def _category_map(
    vocabulary: _core.Vocabulary,
    feature: int,
    categories: Any,
    codes: np.ndarray,
    grow: bool,
    name: str,
    *,
    declared: bool,
) -> np.ndarray:
    """Vocabulary code of every category of a pandas ``category`` column (or an Arrow
    dictionary), -2 for those not in the vocabulary. Growing, the categories used by the
    rows join in order of first appearance, as the values themselves would, and then the
    declared ones never used (``declared``) in their order."""
    n = len(categories)
    mapped = np.full(n, UNKNOWN, dtype=np.int32)
    if not grow:
        if n:
            mapped[:] = _encode_column(
                vocabulary, feature, _values_column(categories, feature), grow, name
            )
        return mapped
    order = _core.first_appearance(np.asarray(codes, dtype=np.int64), n_categories=n)
    if declared:
        unused = np.ones(n, dtype=bool)
        unused[order] = False
        order = np.concatenate([order, np.flatnonzero(unused)])
    if order.size:
        mapped[order] = _encode_column(
            vocabulary, feature, _values_column(categories, feature), grow, name, positions=order
        )
    return mapped


def _values_column(categories: Any, feature: int) -> ColumnSpec:
    """The column spec of the categories of a pandas ``category`` column (an Index) or of
    an Arrow dictionary (an array)."""
    if isinstance(categories, pd.Index):
        array = categories.array
        return _frame_column(array, feature)
    return ("arrow", _chunked(categories))


def _encode_column(
    vocabulary: _core.Vocabulary,
    feature: int,
    column: ColumnSpec,
    grow: bool,
    name: str,
    *,
    positions: np.ndarray | None = None,
) -> np.ndarray:
    """Vocabulary codes (int32) of one column spec: -1 missing, -2 unknown (not growing);
    only of the rows ``positions`` (int64), in that order, when given.

    Integer, object and Arrow columns are coded by blocks of at most ``ENCODE_BLOCK_ROWS``
    rows written into one output (the core holds the GIL, or cannot see Ctrl-C, while it
    codes a block); on an error or Ctrl-C between blocks the vocabulary keeps none of the
    column's categories."""
    kind = column[0]
    if positions is not None or kind == "category":
        return _encode_rows(vocabulary, feature, column, grow, name, positions)
    if kind in ("arrow", "stream") and hasattr(column[1], "__arrow_c_stream__"):
        # read in Rust through the Arrow C stream interface: no pyarrow call per chunk
        capsule = column[1].__arrow_c_stream__()
        coded = vocabulary.encode_arrow_stream(feature, capsule, grow=grow, name=name)
        if coded is not None:
            return coded
    if kind == "stream":  # a type the Rust reader does not read: as numpy values
        return _encode_column(vocabulary, feature, column[2](), grow, name)
    if kind == "arrow":
        pieces = [
            chunk.slice(start, ENCODE_BLOCK_ROWS)
            for chunk in column[1].chunks
            for start in range(0, len(chunk), ENCODE_BLOCK_ROWS)
        ]
        lengths = [len(piece) for piece in pieces]
    else:
        n_rows = column[1].shape[0]
        pieces = [
            tuple(
                a[start : start + ENCODE_BLOCK_ROWS] if isinstance(a, np.ndarray) else a
                for a in column
            )
            for start in range(0, n_rows, ENCODE_BLOCK_ROWS)
        ]
        lengths = [
            min(ENCODE_BLOCK_ROWS, n_rows - start) for start in range(0, n_rows, ENCODE_BLOCK_ROWS)
        ]
    if len(pieces) == 1:
        return _encode_piece(vocabulary, feature, kind, pieces[0], grow, name)
    mark = vocabulary.mark() if grow else None
    try:
        codes = np.empty(sum(lengths), dtype=np.int32)
        start = 0
        for piece, length in zip(pieces, lengths):
            codes[start : start + length] = _encode_piece(
                vocabulary, feature, kind, piece, grow, name
            )
            start += length
    except BaseException:
        if mark is not None:
            vocabulary.truncate(mark)
        raise
    return codes


def _encode_piece(
    vocabulary: _core.Vocabulary, feature: int, kind: str, piece: Any, grow: bool, name: str
) -> np.ndarray:
    """Codes of one block of a column: an Arrow array, or an ``ints`` / ``objects`` spec."""
    if kind == "ints":
        return vocabulary.encode_ints(feature, piece[1], piece[2], grow=grow)
    if kind == "objects":
        values = _normalized(piece[1])
        return vocabulary.encode_objects(feature, values, grow=grow, name=name)
    return _encode_arrow(vocabulary, feature, piece, grow, name)


def _encode_rows(
    vocabulary: _core.Vocabulary,
    feature: int,
    column: ColumnSpec,
    grow: bool,
    name: str,
    positions: np.ndarray | None,
) -> np.ndarray:
    """Codes of a ``category`` column, or of the rows ``positions`` of any column (the
    categories of a ``category`` column or an Arrow dictionary: a few), in one call."""
    kind = column[0]
    if kind == "ints":
        values, missing = column[1], column[2]
        if positions is not None:
            values = values[positions]
            missing = None if missing is None else missing[positions]
        return vocabulary.encode_ints(feature, values, missing, grow=grow)
    if kind == "objects":
        values = _normalized(column[1] if positions is None else column[1][positions])
        return vocabulary.encode_objects(feature, values, grow=grow, name=name)
    if kind == "category":
        codes = np.asarray(column[1])
        if positions is not None:
            codes = codes[positions]
        return _encode_category_codes(vocabulary, feature, column[2], codes, grow, name, True)
    chunked = column[1]  # Arrow, with positions
    chunk = chunked.chunk(0) if chunked.num_chunks == 1 else chunked.combine_chunks()
    return _encode_arrow(vocabulary, feature, chunk, grow, name, positions=positions)


MISSING_CODE = -1
UNKNOWN = -2


def _encode_arrow(
    vocabulary: _core.Vocabulary,
    feature: int,
    chunk: Any,
    grow: bool,
    name: str,
    *,
    positions: np.ndarray | None = None,
) -> np.ndarray:
    """Codes one Arrow array (only the rows ``positions``, in that order, when given):
    strings straight from its buffers, dictionaries through their (small) dictionary,
    integers as int64 with the validity as missing."""
    pa = _pyarrow("Arrow columns")
    types = pa.types
    kind = chunk.type
    text = types.is_string(kind) or types.is_large_string(kind) or types.is_string_view(kind)
    if positions is not None and not text:
        chunk = _arrow_take(chunk, positions)
    if types.is_dictionary(kind):
        # (int64 indices come as a read-only view of the Arrow buffer)
        indices = np.asarray(chunk.indices.fill_null(0), dtype=np.int64)
        if chunk.null_count:
            indices = np.where(np.asarray(chunk.is_null(), dtype=bool), -1, indices)
        return _encode_category_codes(
            vocabulary, feature, chunk.dictionary, indices, grow, name, False
        )
    if types.is_string_view(kind):
        start, n = chunk.offset, len(chunk)
        if not n:
            return np.empty(0, dtype=np.int32)
        validity, view_buffer, *data_buffers = chunk.buffers()
        views = np.frombuffer(view_buffer, dtype=np.uint8)[16 * start : 16 * (start + n)]
        buffers = [
            np.frombuffer(b, dtype=np.uint8) if b is not None else np.empty(0, np.uint8)
            for b in data_buffers
        ]
        bitmap = np.frombuffer(validity, dtype=np.uint8) if chunk.null_count else None
        return vocabulary.encode_utf8_views(
            feature, views, buffers, bitmap, start, grow=grow, name=name, positions=positions
        )
    if types.is_string(kind) or types.is_large_string(kind):
        validity, offset_buffer, data = chunk.buffers()[:3]
        start, n = chunk.offset, len(chunk)
        if not n:
            return np.empty(0, dtype=np.int32)
        offsets: np.ndarray = (
            np.frombuffer(offset_buffer, dtype=np.int32)
            if types.is_string(kind)
            else np.frombuffer(offset_buffer, dtype=np.int64)
        )[start : start + n + 1]
        # a buffer unpickled from a byte stream (Dask ships partitions so) may be unaligned
        offsets = np.require(offsets, requirements=["A"])
        data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, np.uint8)
        bitmap = np.frombuffer(validity, dtype=np.uint8) if chunk.null_count else None
        return vocabulary.encode_utf8(
            feature, offsets, data, bitmap, start, grow=grow, name=name, positions=positions
        )
    if types.is_integer(kind):
        if types.is_uint64(kind) and len(chunk) and (pa.compute.max(chunk).as_py() or 0) >= 2**63:
            # as Python ints (to_pandas would make a column with nulls float64, in which
            # values this large collapse into one)
            values = np.empty(len(chunk), dtype=object)
            values[:] = chunk.to_pylist()
            return _encode_column(vocabulary, feature, ("objects", values), grow, name)
        nulls = np.asarray(chunk.is_null(), dtype=bool) if chunk.null_count else None
        values = np.asarray(chunk.fill_null(0) if chunk.null_count else chunk).astype(np.int64)
        return vocabulary.encode_ints(feature, values, nulls, grow=grow)
    if types.is_floating(kind):
        values = np.asarray(chunk.cast(pa.float64()).fill_null(np.nan), dtype=np.float64)
        column = _array_column(values, name)
        return _encode_column(vocabulary, feature, column, grow, name)
    if types.is_null(kind):
        return np.full(len(chunk), MISSING_CODE, dtype=np.int32)
    if types.is_date(kind):
        # the Timestamps numpy's datetime64 dates (and polars' without pyarrow) become,
        # not datetime.date objects, which would be other categories
        chunk = chunk.cast(pa.timestamp("ms"))
    if _arrow_categorical(kind):  # booleans, binaries, the other temporals, decimals
        try:
            values = _arrow_objects(chunk)
        except pa.ArrowInvalid as error:  # time64[ns] beyond datetime.time's microseconds
            raise ValueError(
                f"{name} has Arrow type {kind}, whose values cannot be read as Python "
                f"objects ({error}): cast the column first (to int64 or to strings)"
            ) from None
        return _encode_column(vocabulary, feature, ("objects", values), grow, name)
    raise TypeError(f"{name} has Arrow type {kind}, which is not categorical: {_CATEGORICAL_TYPES}")


#: What messages say columns of categories may hold.
_CATEGORICAL_TYPES = (
    "categories are strings, integers, booleans, dictionaries (categoricals) or whole floats"
)


def _arrow_categorical(kind: Any) -> bool:
    """Whether :func:`_encode_arrow` reads an Arrow array of type ``kind``."""
    types = _pyarrow("Arrow columns").types
    readable = (
        types.is_dictionary,
        types.is_string,
        types.is_large_string,
        types.is_string_view,
        types.is_integer,
        types.is_floating,
        types.is_null,
        types.is_boolean,
        types.is_binary,
        types.is_large_binary,
        types.is_binary_view,
        types.is_fixed_size_binary,
        types.is_temporal,
        types.is_decimal,
    )
    return any(check(kind) for check in readable)


def _arrow_take(array: Any, positions: np.ndarray) -> Any:
    """``array.take(positions)``, the view layouts included: pyarrow has no take kernel
    for ``string_view`` / ``binary_view`` (polars' strings), whose values are taken
    through the large layouts instead."""
    pa = _pyarrow("Arrow columns")
    large = {pa.string_view(): pa.large_string(), pa.binary_view(): pa.large_binary()}
    if array.type in large:
        array = array.cast(large[array.type])
    return array.take(positions)


def _arrow_objects(chunk: Any) -> np.ndarray:
    values = np.empty(len(chunk), dtype=object)
    values[:] = (
        chunk.to_pylist()
        if not hasattr(chunk, "to_pandas")
        else list(chunk.to_pandas(types_mapper=None))
    )
    return values


@dataclass
class EncodedTable:
    """Feature-major codes of a table: ``-1`` where a value is missing or unknown."""

    codes: np.ndarray  # (F, S) int32


class CategoryEncoder:
    """Learns each feature's categories and codes tables through a grow-only vocabulary
    in the Rust core (``_core.Vocabulary``).

    ``order="insertion"`` gives every category the code of its first appearance (codes
    never change as the vocabulary grows, and any one-to-one relabelling of the data
    gives the same codes); ``order="sorted"`` gives its rank among the sorted categories
    (codes move as categories join). ``categories`` is ``"auto"`` (learned from the data)
    or one list of declared categories per feature, as in scikit-learn's
    ``OrdinalEncoder``: a value outside them is then an error.

    Values are compared by type and value: 1, "1", b"1" and True are four categories
    (whole floats are the integers they equal). ``categories`` (the sorted view) orders
    them by type (booleans, integers, strings, bytes, other objects) then by value.
    """

    def __init__(self, *, order: str = "insertion", categories: Any = "auto") -> None:
        self.order = order
        self.declared = categories
        self.vocabulary = _core.Vocabulary(0)  # replaced by fit_transform
        self.floats: list[bool] = []
        self.feature_names: np.ndarray | None = None
        self.column_labels: list[Any] | None = None
        self._views: dict[int, tuple[int, np.ndarray, np.ndarray, np.ndarray]] = {}

    # ------------------------------------------------------------------ the vocabulary
    @property
    def n_features(self) -> int:
        return len(self.floats)

    @property
    def cardinalities(self) -> list[int]:
        return list(self.vocabulary.lengths())

    @property
    def offsets(self) -> list[int]:
        return [0, *itertools.accumulate(self.vocabulary.lengths())]

    @property
    def categories(self) -> list[np.ndarray]:
        """The sorted categories of every feature."""
        return [self._view(f)[0] for f in range(self.n_features)]

    def sorted_categories(self, f: int) -> np.ndarray:
        """The sorted categories of feature ``f`` (``categories[f]`` without building
        every other feature's)."""
        return self._view(f)[0]

    def sorted_order(self, f: int) -> np.ndarray:
        """The code of each category of feature ``f`` in sorted order."""
        return self._view(f)[1]

    def first_appearance_categories(self, f: int) -> np.ndarray:
        """The categories of feature ``f`` in the vocabulary's order (first appearance:
        element k has vocabulary code k), with the types of :attr:`categories`, without
        sorting them."""
        integers = self.vocabulary.int_values(f)
        if integers is not None:
            return integers.astype(np.float64) if self.floats[f] else integers
        n = self.vocabulary.length(f)
        return np.fromiter(self.vocabulary.values(f), dtype=np.object_, count=n)

    def _view(self, f: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(sorted categories, their codes, rank of every code)`` of feature ``f``,
        cached until the feature grows."""
        n = self.vocabulary.length(f)
        cached = self._views.get(f)
        if cached is not None and cached[0] == n:
            return cached[1:]
        order = self.vocabulary.sorted_order(f)
        values = self.first_appearance_categories(f)
        if values.dtype == np.object_ and self.vocabulary.has_objects(f):
            try:  # Python values (ints beyond int64, tuples, ...) sorted by Python
                order = np.asarray(
                    sorted(range(n), key=lambda k: (_type_rank(values[k]), values[k])),
                    dtype=np.int64,
                )
            except TypeError:
                pass  # objects that cannot be ordered keep their first appearance
        categories = values[order]
        rank = np.empty(n, dtype=np.int32)
        rank[order] = np.arange(n, dtype=np.int32)
        self._views[f] = (n, categories, order, rank)
        return categories, order, rank

    # ------------------------------------------------------------------ coding
    def fit_transform(self, X: Any, *, n_threads: int = 1) -> np.ndarray:
        """Learns the categories of ``X`` and returns its codes ``(F, S)``."""
        table = _read_table(X)
        self.vocabulary = _core.Vocabulary(table.n_features)
        self.floats = list(table.floats)
        self.feature_names, self.column_labels = table.names, table.labels
        self._views = {}
        declared = self._declare(table)
        codes = self._encode(table, grow=not declared, n_threads=n_threads)
        if declared:
            self._refuse_undeclared(codes, table, "fit")
        return self._in_order(codes)

    def transform(
        self,
        X: Any,
        *,
        handle_unknown: str = "ignore",
        n_threads: int = 1,
        owner: str = "the estimator",
    ) -> EncodedTable:
        """Codes ``X`` with the learned categories; unknown values become -1 (or an error).

        ``owner`` names the estimator in error messages.
        """
        if not isinstance(handle_unknown, str) or handle_unknown not in ("ignore", "error"):
            raise ValueError(
                f"handle_unknown must be one of ['error', 'ignore'], got {handle_unknown!r}"
            )
        table = _read_table(X, known=True)
        self.check_features(table, owner)
        codes = self._encode(table, grow=False, n_threads=n_threads)
        unknown = codes == UNKNOWN
        if unknown.any():
            if handle_unknown == "error":
                f = int(np.flatnonzero(unknown.any(axis=1))[0])
                raise ValueError(
                    f"Found unknown categories {_examples(table, f, unknown[f])} in feature {f} "
                    "during transform (handle_unknown='error')"
                )
            codes[unknown] = MISSING_CODE
        return EncodedTable(codes=self._in_order(codes))

    def extend(
        self, X: Any, *, n_threads: int = 1, owner: str = "the estimator"
    ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """Adds the categories of ``X`` not seen before and returns its codes ``(F, S)``.

        Also returns, per feature, the new code of every old code (``None`` where the
        feature gained nothing, and always with ``order="insertion"``, where new
        categories only join at the end), so that count tables can follow their
        categories.
        On an error nothing is added; ``undo(mark)`` with a ``mark()`` taken before also
        forgets the batch's categories when a later step fails.
        """
        table = _read_table(X)
        self.check_features(table, owner)
        before = self.cardinalities
        old_orders = (
            [self._view(f)[1] for f in range(self.n_features)] if self.order == "sorted" else None
        )
        mark = self.vocabulary.mark()
        declared = not isinstance(self.declared, str)
        try:
            codes = self._encode(table, grow=not declared, n_threads=n_threads)
            if declared:
                self._refuse_undeclared(codes, table, "partial_fit")
        except BaseException:
            self.vocabulary.truncate(mark)
            raise
        moved: list[np.ndarray | None] = []
        for f, (old, new) in enumerate(zip(before, self.cardinalities)):
            if old == new or self.order == "insertion":
                moved.append(None)  # (by first appearance, old codes never move)
            else:
                assert old_orders is not None  # kept for the sorted order
                moved.append(self._view(f)[2][old_orders[f]].astype(np.int64))
        return self._in_order(codes), moved

    def mark(self) -> list[tuple[int, int]]:
        """A point ``undo`` returns the vocabulary to."""
        return self.vocabulary.mark()

    def undo(self, mark: list[tuple[int, int]]) -> None:
        """Forgets every category added since ``mark``."""
        self.vocabulary.truncate(mark)

    def _encode(self, table: _Table, *, grow: bool, n_threads: int) -> np.ndarray:
        """Vocabulary codes ``(F, S)`` of a table (-2 where unknown and not growing)."""
        if table.block is not None:
            return self._encode_numeric(table.block, grow=grow, n_threads=n_threads)
        if not grow and table.n_rows <= SMALL_FRAME_ROWS:
            # a few rows (a row of a DataFrame): as Python objects, in one call
            objects = [_small_objects(spec) for spec in table.columns]
            if all(small is not None for small in objects):
                values = np.empty((table.n_features, table.n_rows), dtype=object)
                for f, small in enumerate(objects):
                    values[f] = small
                    values[f] = _normalized(values[f])
                names = [_name(table, f) for f in range(table.n_features)]
                return self.vocabulary.encode_object_block(values, names=names)
        codes = np.empty((table.n_features, table.n_rows), dtype=np.int32)
        for f, column in enumerate(table.columns):
            codes[f] = _encode_column(self.vocabulary, f, column, grow, _name(table, f))
        return codes

    def _encode_numeric(self, array: np.ndarray, *, grow: bool, n_threads: int) -> np.ndarray:
        """Vocabulary codes ``(F, S)`` of a numeric array ``(S, F)``, coded by blocks of
        ``ENCODE_BLOCK_CELLS`` cells straight into one output: a long table needs its codes
        and one block's int64 copy, not a multiple of itself. Atomic: on an error (or
        Ctrl-C) the vocabulary keeps none of the table's categories."""
        n_rows, n_features = array.shape
        step = max(1, ENCODE_BLOCK_CELLS // n_features)
        codes = np.empty((n_features, n_rows), dtype=np.int32)
        if n_rows <= step:
            self._encode_row_block(array, codes, grow=grow, n_threads=n_threads)
            return codes
        mark = self.vocabulary.mark() if grow else None
        try:
            for start in range(0, n_rows, step):
                part = array[start : start + step]
                out = codes[:, start : start + part.shape[0]]
                self._encode_row_block(part, out, grow=grow, n_threads=n_threads)
        except BaseException:
            if mark is not None:
                self.vocabulary.truncate(mark)
            raise
        return codes

    def _encode_row_block(
        self, part: np.ndarray, out: np.ndarray, *, grow: bool, n_threads: int
    ) -> None:
        """Writes the codes ``(F, n)`` of one block of rows of a numeric array into
        ``out``: all features at once as int64, or column by column when the block holds
        integers beyond int64."""
        block = _integer_block(part)
        if block is not None:
            values, missing = block
            self.vocabulary.encode_int_block(values, missing, grow=grow, n_jobs=n_threads, out=out)
            return
        for f in range(part.shape[1]):
            column = _array_column(part[:, f], f)
            out[f] = _encode_column(self.vocabulary, f, column, grow, f"feature {f}")

    def _in_order(self, codes: np.ndarray) -> np.ndarray:
        """Codes in this encoder's order (ranks among the sorted categories if sorted)."""
        if self.order == "sorted":
            for f in range(codes.shape[0]):
                rank = self._view(f)[2]
                row = codes[f]
                present = row >= 0
                row[present] = rank[row[present]]
        return codes

    # ------------------------------------------------------------------ declared
    def _declare(self, table: _Table) -> bool:
        """Puts the declared categories (``categories=`` lists) into the vocabulary."""
        if isinstance(self.declared, str):
            if self.declared != "auto":
                raise ValueError(
                    f"categories must be 'auto' or a list of arrays, got {self.declared!r}"
                )
            return False
        declared = list(self.declared)
        if len(declared) != table.n_features:
            raise ValueError(
                f"categories has {len(declared)} lists but X has {table.n_features} features"
            )
        for f, values in enumerate(declared):
            if isinstance(values, (str, bytes)):
                # one string is a category, not a list of them ("auto" is for all features);
                # a ValueError, as for any other bad parameter value
                raise ValueError(  # noqa: TRY004
                    f"categories[{f}] must be a 1-D list of values, got the string {values!r}"
                )
            if isinstance(values, (list, tuple)):
                # the values as given: numpy would make [0, 1, True] the ints [0, 1, 1]
                # and [0, "a"] the strings ["0", "a"]
                given = values
                values = np.empty(len(given), dtype=object)
                for k, value in enumerate(given):  # a tuple stays one value
                    values[k] = value
            values = np.asarray(values, dtype=None)
            if values.dtype.kind == "U":
                values = np.asarray(list(np.asarray(declared[f], dtype=object)), dtype=object)
            if values.ndim != 1:
                raise ValueError(f"categories[{f}] must be a 1-D list of values")
            column = _array_column(values, f)
            known = self.vocabulary.length(f)
            codes = _encode_column(self.vocabulary, f, column, True, _name(table, f))
            if np.any(codes < 0):
                raise ValueError(f"categories[{f}] holds missing values (None or NaN)")
            # each new value took a new code: fewer new codes than values is a repeat
            # (counted by the vocabulary, not by np.unique: that took seconds on millions
            # of categories, deaf to Ctrl-C)
            if self.vocabulary.length(f) - known != codes.size:
                raise ValueError(f"categories[{f}] holds duplicate values")
            if column[0] == "ints" and not column[3]:
                self.floats[f] = False
        return True

    def _refuse_undeclared(self, codes: np.ndarray, table: _Table, step: str) -> None:
        unknown = codes == UNKNOWN
        if unknown.any():
            f = int(np.flatnonzero(unknown.any(axis=1))[0])
            raise ValueError(
                f"Found unknown categories {_examples(table, f, unknown[f])} in feature {f} "
                f"during {step}: they are not among the declared categories"
            )

    # ------------------------------------------------------------------ checks
    def check_features(self, table: _Table, owner: str) -> None:
        """Raises unless the table has the training number (and names) of features; warns,
        as scikit-learn does, when only one of the two tables has names (columns are then
        matched by position, which a reordered table would silently break). Tables with
        non-string column labels (integers) are checked against the training labels too."""
        n_features, names = table.n_features, table.names
        if n_features != self.n_features:
            raise ValueError(
                f"X has {n_features} features, but {owner} is expecting "
                f"{self.n_features} features as input."
            )
        if (self.feature_names is None) != (names is None):
            warn(
                f"X has feature names, but {owner} was fitted without feature names"
                if self.feature_names is None
                else f"X does not have valid feature names, but {owner} was fitted with "
                "feature names",
                UserWarning,
            )
        named = self.feature_names is not None and names is not None
        if (
            self.feature_names is not None
            and names is not None
            and names is not self.feature_names
            and names.tolist() != self.feature_names.tolist()
        ):
            raise ValueError(
                "The feature names should match those that were passed during fit: "
                f"expected {list(self.feature_names)}, got {list(names)}"
            )
        if (
            self.column_labels is not None
            and table.labels is not None
            and not named
            and list(table.labels) != list(self.column_labels)
        ):
            raise ValueError(
                "The column labels should match those that were passed during fit: "
                f"expected {list(self.column_labels)}, got {list(table.labels)}"
            )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_views"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "vocabulary" not in state:
            state = _upgrade_state(state)
        self.__dict__.update(state)


def _upgrade_state(state: dict[str, Any]) -> dict[str, Any]:
    """An encoder saved before the vocabulary (format 0: sorted categories, codes their
    ranks) as the vocabulary in sorted order, which gives every category its old code."""
    categories = state.get("categories")
    if categories is None:
        raise ValueError("cannot load this model: its encoder state has no known format")
    vocabulary = _core.Vocabulary(len(categories))
    for f, values in enumerate(categories):
        column = _array_column(np.asarray(values), f)
        _encode_column(vocabulary, f, column, True, f"feature {f}")
    return {
        "order": "sorted",
        "declared": "auto",
        "vocabulary": vocabulary,
        "floats": [np.asarray(c).dtype.kind == "f" for c in categories],
        "feature_names": state.get("feature_names"),
        "column_labels": None,
        "_views": {},
    }


def _type_rank(value: object) -> int:
    """Where a category's type sorts: booleans, numbers (a whole float is the integer it
    equals), strings, bytes, the rest."""
    if isinstance(value, (bool, np.bool_)):
        return 0
    if isinstance(value, (int, np.integer)):
        return 1
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and value == int(value):
        return 1
    if isinstance(value, str):
        return 2
    if isinstance(value, bytes):
        return 3
    return 4


def _name(table: _Table, f: int) -> str:
    """How errors name feature ``f``."""
    if table.labels is None:
        return f"feature {f}"
    return _numbered(f, table.labels)


def _examples(table: _Table, f: int, where: np.ndarray) -> list[Any]:
    """Up to five distinct values of feature ``f`` at the rows ``where`` (for messages)."""
    rows = np.flatnonzero(where)[:1000]
    if table.block is not None:
        values = table.block[rows, f]
    else:
        column = table.columns[f]
        if column[0] in ("ints", "objects"):
            values = column[1][rows]
        elif column[0] == "category":
            values = np.asarray(column[2].take(np.asarray(column[1])[rows]))
        elif column[0] == "stream":
            values = np.asarray(column[1].to_numpy(), dtype=object)[rows]
        else:
            values = np.asarray(_arrow_take(column[1], rows).to_pylist(), dtype=object)
    examples: list[Any] = pd.unique(np.asarray(values))[:5].tolist()
    return examples


def labels_as_array(y: Any) -> np.ndarray:
    """``y`` as a numpy array, a column vector (n, 1) raveled with scikit-learn's
    warning."""
    labels: np.ndarray = np.asarray(y.to_numpy() if isinstance(y, (pd.Series, pd.Index)) else y)
    if labels.ndim == 2 and labels.shape[1] == 1:
        warn(
            "A column-vector y was passed when a 1d array was expected. Please change the "
            "shape of y to (n_samples,), for example using ravel().",
            DataConversionWarning,
        )
        labels = labels.ravel()
    return labels


def encode_labels(y: Any, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted class labels and the class index of every row; rejects missing labels."""
    y = labels_as_array(y)
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array, got an array of shape {y.shape} instead.")
    if y.shape[0] != n_samples:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: X has {n_samples} "
            f"rows, y has {y.shape[0]}"
        )
    # NaT is missing too: a datetime or timedelta label column can hold it
    if y.dtype.kind in "fcOMm" and np.any(pd.isna(y)):
        raise ValueError("y contains missing labels (NaN, None or NaT): every row needs a class")
    if y.dtype.kind == "O":
        inferred = pd.api.types.infer_dtype(y, skipna=False)
        if inferred == "string":
            # strings are always class labels (scikit-learn's target check has nothing to
            # refuse): pandas' hash-based factorize sorts the distinct labels only, where
            # np.unique sorts every row's Python string; same classes, same order
            indices, classes = pd.factorize(y, sort=True)
            return np.asarray(classes, dtype=object), indices.astype(np.int64)
        if inferred in ("integer", "boolean", "floating", "mixed-integer-float"):
            # numbers held as objects (a pandas object column): scikit-learn's target check
            # calls them "Unknown label type: unknown", yet they are labels like any other
            y = np.asarray(y.tolist())
        elif inferred in ("mixed", "mixed-integer"):
            kinds = {type(label).__name__ for label in y}
            if len(kinds) == 1:
                raise ValueError(
                    f"y holds labels of type {kinds.pop()}, which are not class labels "
                    f"(numbers, strings or booleans): {pd.unique(y)[:5].tolist()}"
                )
            raise ValueError(
                "y mixes labels of different types (e.g. numbers and strings), which "
                f"cannot be ordered: {pd.unique(y)[:5].tolist()}"
            )
    if y.dtype.kind not in "iub":  # integer and boolean labels are always classes
        check_classification_targets(y)
    try:
        classes, indices = np.unique(y, return_inverse=True)
    except TypeError:
        raise ValueError("y mixes label types that cannot be ordered (e.g. ints and strings)")
    return classes, indices.astype(np.int64).reshape(-1)


def check_sample_weight(
    sample_weight: Any, n_samples: int, *, positive_total: bool = True
) -> np.ndarray:
    """Float64 weights, one per row, finite and non-negative, in an aligned contiguous
    array the core can borrow (arrays unpickled from the frames Dask ships between
    processes may sit at any byte offset: those are copied). ``positive_total``: the sum
    must be positive (a whole training set; one partition of one may weigh nothing)."""
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
            weights = np.require(sample_weight, dtype=np.float64, requirements=["C", "A"])
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
    if positive_total and not total > 0:
        raise ValueError("sample_weight sums to zero: at least one row needs positive weight")
    check_weight_total(total)
    return weights


def check_weight_total(total: float) -> None:
    """ValueError when the weights of a training set sum beyond :data:`MAX_TOTAL_WEIGHT`
    (or to NaN)."""
    if not total <= MAX_TOTAL_WEIGHT:
        raise ValueError(
            f"sample_weight sums to {total:.3g}, beyond {MAX_TOTAL_WEIGHT:.0e}: counts that "
            "large overflow float64 sums; rescale the weights"
        )


def check_table_size(
    n_classes: int, n_columns: int, *, copies: int = TABLE_COPIES, columns: str = "categories"
) -> None:
    """Refuses with MemoryError a (classes x ``columns``) table of which a fit holds
    ``copies`` float64 copies at its peak, when they exceed the memory budget (read at
    each call, so that a limit set after import counts)."""
    cells = n_classes * n_columns
    limit = memory_budget_bytes() // (8 * copies)
    if cells > limit:
        raise MemoryError(
            f"{n_classes} classes x {n_columns} {columns} = {cells} table cells is beyond "
            f"what memory allows (limit {limit}, as a fit holds {copies} copies): too many "
            f"{columns} for this machine"
        )
