"""The paper's data protocol (section 5.1): load, subsample, type columns, split, bin.

- Tables are CSV or Parquet files (or DataFrames); empty cells are missing values.
- A stratified subsample keeps at most ``max_rows`` rows.
- Column typing needs no labels, so it is decided once per dataset: a numeric column
  with more than ``max_distinct`` (20) distinct values is *binned*, every other column
  is *categorical* (its values are the categories). Integer columns whose names look
  like identifiers (``*_id``, ``*hash*``, ``url``, ``impression``) and the columns the
  user names (``categorical="all"`` or a list, or a dataset folder's ``schema.json``)
  stay categorical. Categorical columns with (nearly) one value per row, and columns
  with no values at all, are dropped with a warning.
- Binned columns get 10 quantile bins (scikit-learn's ``KBinsDiscretizer``) fitted on
  the training fold only, then applied to the test fold.
- Missing values are kept as missing: the estimators skip them when counting and when
  scoring, so no imputation is needed.
"""

from __future__ import annotations

import json
import os
import re
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.preprocessing import KBinsDiscretizer
from sklearn.utils.multiclass import type_of_target

from .._warnings import warn

#: Names of integer columns that hold identifiers, not quantities.
ID_LIKE_NAME = re.compile(r"(^id$|_id$|hash|url|impression)", re.IGNORECASE)


def check_evaluate_requirements() -> None:
    """Raises ImportError naming what the ``evaluate`` extra adds and this environment
    lacks: tqdm, and scikit-learn >= 1.7 (``KBinsDiscretizer(quantile_method=...)``)."""
    import importlib.util

    import sklearn

    if importlib.util.find_spec("tqdm") is None:
        raise ImportError("hebnb evaluate needs tqdm")
    version = tuple(int(part) for part in re.findall(r"\d+", sklearn.__version__)[:2])
    if version < (1, 7):
        raise ImportError(f"hebnb evaluate needs scikit-learn >= 1.7, found {sklearn.__version__}")


class DataError(ValueError):
    """The input table cannot be evaluated (the message says why)."""


#: Seeds numpy's and scikit-learn's generators accept.
MAX_SEED = 2**32 - 1


def check_seed(seed: object) -> int:
    """A seed in ``0..2**32 - 1``, or a DataError naming ``--seed``."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        value = int(seed)
        if 0 <= value <= MAX_SEED:
            return value
    raise DataError(f"--seed must be an integer from 0 to {MAX_SEED}, got {seed!r}")


def _first_line(error: BaseException) -> str:
    """An exception's message cut to its first line (parsers add multi-line context)."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Reads a CSV or Parquet file; empty cells become missing values.

    Raises
    ------
    DataError
        The file does not exist, is empty, or is neither CSV nor Parquet.
    """
    file = Path(path)
    if file.is_dir():
        raise DataError(
            f"{file} is a folder, not a data file (a folder of dataset folders goes to --suite)"
        )
    if not file.is_file():
        raise DataError(f"no such file: {file}")
    suffix = file.suffix.lower()
    if suffix not in {".parquet", ".pq", ".csv", ".txt", ".gz"}:
        raise DataError(f"{file}: expected a .csv or .parquet file")
    try:
        if suffix in {".parquet", ".pq"}:
            frame = pd.read_parquet(file)
        else:
            # only empty cells are missing: "NA" or "None" can be real categories
            frame = pd.read_csv(file, keep_default_na=False, na_values=[""])
    except pd.errors.EmptyDataError:
        raise DataError(f"{file} is empty") from None
    except UnicodeDecodeError as error:
        raise DataError(
            f"{file} is not UTF-8 text ({error.reason} at byte {error.start}): save it as "
            "UTF-8 CSV or Parquet"
        ) from None
    except pd.errors.ParserError as error:
        raise DataError(f"{file} is not a well-formed CSV table: {_first_line(error)}") from None
    except (OSError, EOFError, zlib.error, ValueError) as error:
        # a corrupt or truncated gzip or Parquet file (pyarrow's errors are ValueError
        # and OSError subclasses)
        raise DataError(f"{file} cannot be read: {_first_line(error)}") from None
    if frame.shape[0] == 0:
        raise DataError(f"{file} has a header but no rows")
    return frame


def read_schema(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The optional ``schema.json`` of a dataset folder ({} when there is none).

    Recognised key: ``"categorical"``: ``"all"`` or a list of column names forced to be
    categorical (for example integer-coded IDs that must not be binned).
    """
    path = Path(folder) / "schema.json"
    if not path.is_file():
        return {}
    try:
        with path.open(encoding="utf-8") as handle:
            schema: dict[str, Any] = json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise DataError(f"{path} is not valid JSON: {_first_line(error)}") from None
    except OSError as error:
        raise DataError(f"{path} cannot be read: {error.strerror or error}") from None
    if not isinstance(schema, dict):
        raise DataError(f"{path} must hold a JSON object, got {type(schema).__name__}")
    categorical = schema.get("categorical")
    names = isinstance(categorical, list) and all(isinstance(c, str) for c in categorical)
    if categorical is not None and not (categorical == "all" or names):
        raise DataError(
            f'{path}: "categorical" must be "all" or a list of column names, got {categorical!r}'
        )
    return schema


def comma_separated(value: str) -> list[str]:
    """The names of a comma-separated command-line list, stripped, empty items dropped
    (``" a , b,"`` is ``["a", "b"]``)."""
    return [name.strip() for name in value.split(",") if name.strip()]


def parse_categorical(value: str | Sequence[str] | None) -> str | list[str] | None:
    """``--categorical`` as given on the command line (``all``, ``A,B,C`` or nothing), or
    a list of column names as ``schema.json`` holds it."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return "all" if value.strip().lower() == "all" else comma_separated(value)
    return list(value)


def split_target(frame: pd.DataFrame, target: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Features and labels; rows with a missing label are dropped.

    Raises
    ------
    DataError
        The target column is absent, holds fractional numbers (a regression target), or
        fewer than two classes remain.
    """
    if target not in frame.columns:
        shown = ", ".join(map(str, frame.columns[:20]))
        raise DataError(f"target column {target!r} not found; the columns are: {shown}")
    labelled = frame[frame[target].notna()]
    y = labelled[target].to_numpy()
    n_classes = pd.unique(y).shape[0]
    try:
        kind = type_of_target(y) if n_classes >= 2 else "one class"
    except TypeError:
        raise DataError(
            f"target column {target!r} mixes labels of different types (e.g. numbers and "
            "strings): convert it to one type"
        ) from None
    except ValueError as error:
        raise DataError(f"target column {target!r}: {error}") from None
    if kind == "continuous":
        fractional = next(v for v in pd.unique(y) if not float(v).is_integer())
        raise DataError(
            f"target column {target!r} holds fractional numbers (e.g. {fractional}), not class "
            "labels: classification needs a column of classes (bin a numeric target first)"
        )
    if n_classes < 2:
        raise DataError(f"target column {target!r} has {n_classes} class; at least two are needed")
    X = labelled.drop(columns=[target]).reset_index(drop=True)
    if X.shape[1] == 0:
        raise DataError("the table has no feature column besides the target")
    return X, y


def stratified_subsample(
    X: pd.DataFrame, y: np.ndarray, max_rows: int | None, seed: int
) -> tuple[pd.DataFrame, np.ndarray]:
    """At most ``max_rows`` rows, drawn with the class proportions kept (where every
    class can keep a row on both sides of the draw).

    Raises
    ------
    DataError
        ``max_rows`` is below the number of classes, or the draw keeps a single class
        (a class of one row cannot be stratified, and a small draw can miss the others):
        there is nothing to classify, as for a table of one class.
    """
    check_seed(seed)
    if max_rows is None or X.shape[0] <= max_rows:
        return X, y
    _, counts = np.unique(y, return_counts=True)
    n_classes = counts.shape[0]
    if max_rows < n_classes:
        raise DataError(
            f"--max-rows {max_rows} keeps fewer rows than the {n_classes} classes of the data"
        )
    stratifiable = counts.min() >= 2 and X.shape[0] - max_rows >= n_classes
    stratify = y if stratifiable else None
    X_kept, _, y_kept, _ = train_test_split(
        X, y, train_size=max_rows, stratify=stratify, random_state=seed
    )
    n_kept = np.unique(y_kept).shape[0]
    if n_kept < 2:
        raise DataError(
            f"the subsample of --max-rows {max_rows} rows keeps {n_kept} class of the "
            f"{n_classes}; at least two are needed: raise --max-rows (0 keeps every row)"
        )
    return X_kept.reset_index(drop=True), y_kept


@dataclass
class ColumnPlan:
    """How each feature column is used.

    Attributes
    ----------
    binned : list of str
        Numeric columns cut into quantile bins inside each fold.
    categorical : list of str
        Columns used as they are (their values are the categories).
    dropped : dict of str to str
        Columns left out, with the reason.
    """

    binned: list[str] = field(default_factory=list)
    categorical: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)

    @property
    def kept(self) -> list[str]:
        """The columns the estimators see: the binned ones, then the categorical ones."""
        return self.binned + self.categorical


def plan_columns(
    X: pd.DataFrame,
    categorical: str | list[str] | None = None,
    *,
    max_distinct: int = 20,
    near_unique: float = 0.9,
    named_by: str = "--categorical",
) -> ColumnPlan:
    """Decides, without looking at labels, which columns are binned, kept or dropped.

    Parameters
    ----------
    X : DataFrame
        The feature columns.
    categorical : "all", list of str or None
        Columns forced to be categorical.
    max_distinct : int, default=20
        Numeric columns with more distinct values than this are binned.
    near_unique : float, default=0.9
        Categorical columns with at least this many distinct values per non-missing row
        carry no class information that generalises (an ID per row): they are dropped.
    named_by : str, default="--categorical"
        Where ``categorical`` came from, for the error naming unknown columns (the
        option, or a dataset's ``schema.json``).

    Raises
    ------
    DataError
        A column named in ``categorical`` does not exist, a column holds nested values
        (lists, dicts), no column is left, or the names of the kept columns mix strings
        and other types (the estimators take all-string names or no string name, as
        scikit-learn does: every fit would fail).
    """
    forced = set()
    if categorical == "all":
        forced = set(X.columns)
    elif categorical:
        unknown = [name for name in categorical if name not in X.columns]
        if unknown:
            raise DataError(f"{named_by} names unknown columns: {', '.join(unknown)}")
        forced = set(categorical)
    plan = ColumnPlan()
    for name in X.columns:
        column = X[name]
        present = column.dropna()
        if present.shape[0] == 0:
            plan.dropped[name] = "no values"
            continue
        try:
            n_distinct = present.nunique()
        except TypeError:  # lists, dicts or arrays (nested Parquet types) are unhashable
            kind = type(present.iloc[0]).__name__
            raise DataError(
                f"column {name!r} holds {kind} values, which are neither categories nor "
                "numbers: flatten nested columns first"
            ) from None
        numeric = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
        # integers, or whole floats (an integer column with a blank cell reads as float)
        whole = pd.api.types.is_integer_dtype(column) or (
            pd.api.types.is_float_dtype(column)
            and _holds_whole_numbers(present.to_numpy(dtype=float))
        )
        id_like = whole and bool(ID_LIKE_NAME.search(str(name)))
        if numeric and n_distinct > max_distinct and name not in forced and not id_like:
            plan.binned.append(name)
        elif present.shape[0] > 10 and n_distinct >= near_unique * present.shape[0]:
            plan.dropped[name] = f"{n_distinct} distinct values in {present.shape[0]} rows"
        else:
            plan.categorical.append(name)
    for name, reason in plan.dropped.items():
        warn(f"column {name!r} dropped: {reason}", UserWarning)
    if not plan.kept:
        raise DataError("no feature column is left after dropping the unusable ones")
    not_text = [name for name in plan.kept if not isinstance(name, str)]
    if 0 < len(not_text) < len(plan.kept):
        shown = ", ".join(f"the {type(name).__name__} name {name!r}" for name in not_text[:5])
        raise DataError(
            f"column names mix strings and other types ({shown}): name every column with a "
            "string (frame.columns = frame.columns.astype(str)) or none"
        )
    return plan


def _holds_whole_numbers(present: np.ndarray) -> bool:
    """Whether a float column's present (non-missing) values are all finite whole
    numbers."""
    return bool(np.all(np.isfinite(present)) and np.all(present == np.floor(present)))


def whole_categories(X: pd.DataFrame, plan: ColumnPlan) -> pd.DataFrame:
    """``X`` with every categorical float column that holds fractional or infinite values
    (a few distinct values such as 0.5 and 1.5, not binned) as text, so that its values
    are categories; whole floats stay numbers (they are the integers they equal).

    Decided on the whole table, without labels, so that every fold codes a value alike.
    """
    changed = {}
    for name in plan.categorical:
        column = X[name]
        if not pd.api.types.is_float_dtype(column):
            continue
        values = column.to_numpy(dtype=float, na_value=np.nan)
        if _holds_whole_numbers(values[~np.isnan(values)]):
            continue
        text = np.array([None if np.isnan(v) else str(v) for v in values], dtype=object)
        changed[name] = pd.Series(text, index=X.index, dtype=object)
    if not changed:
        return X
    X = X.copy()
    for name, series in changed.items():  # assign(**changed) needs string column names
        X[name] = series
    return X


class FoldBinner:
    """Quantile bins of the numeric columns, fitted on one training fold.

    Parameters
    ----------
    plan : ColumnPlan
    n_bins : int, default=10

    Attributes
    ----------
    edges_ : dict of str to ndarray
        The bin edges of every binned column, learnt from the training rows only.
    """

    def __init__(self, plan: ColumnPlan, n_bins: int = 10):
        self.plan = plan
        self.n_bins = n_bins

    def fit(self, X_train: pd.DataFrame) -> FoldBinner:
        """Learns the bin edges of each binned column from its finite values (an infinite
        value lies beyond every edge: it goes to the first or last bin)."""
        self.edges_ = {}
        for name in self.plan.binned:
            values = X_train[name].to_numpy(dtype=float)
            values = values[np.isfinite(values)].reshape(-1, 1)
            if values.shape[0] == 0:
                self.edges_[name] = np.array([-np.inf, np.inf])
                continue
            binner = KBinsDiscretizer(
                n_bins=self.n_bins,
                encode="ordinal",
                strategy="quantile",
                quantile_method="averaged_inverted_cdf",
                random_state=0,
            )
            with warnings.catch_warnings():
                # skewed columns merge duplicate quantiles into fewer bins: expected
                warnings.filterwarnings("ignore", message=".*[Bb]ins whose width are too small")
                binner.fit(values)
            self.edges_[name] = binner.bin_edges_[0]
        return self

    def transform(self, X: pd.DataFrame) -> pd.DataFrame:
        """The kept columns, binned ones replaced by their bin index (missing stays missing).

        Values outside the training range fall into the first or last bin, as in
        ``KBinsDiscretizer``.
        """
        out: pd.DataFrame = X[self.plan.kept].copy()
        for name in self.plan.binned:
            values = X[name].to_numpy(dtype=float)
            inner = self.edges_[name][1:-1]
            index = np.searchsorted(inner, values, side="right").astype(float)
            index[np.isnan(values)] = np.nan
            out[name] = index
        return out


def stratified_folds(y: np.ndarray, n_folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Train/test index pairs of a shuffled stratified K-fold split.

    Raises
    ------
    DataError
        Fewer than two folds, or no class with at least ``n_folds`` rows.
    """
    check_seed(seed)
    if n_folds < 2:
        raise DataError(f"--folds must be at least 2, got {n_folds}")
    _, counts = np.unique(y, return_counts=True)
    if counts.max() < n_folds:
        raise DataError(
            f"{n_folds} folds need a class with at least {n_folds} rows; "
            f"the largest has {counts.max()}"
        )
    splitter = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    with warnings.catch_warnings():
        # rare classes (fewer rows than folds) are absent from some test folds: expected
        warnings.filterwarnings("ignore", message="The least populated class")
        return list(splitter.split(np.zeros((y.shape[0], 1)), y))
