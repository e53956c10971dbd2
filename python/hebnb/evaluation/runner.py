"""Running the protocol: datasets x folds x methods, with a progress bar.

:func:`evaluate` runs one table (a file or a DataFrame), :func:`evaluate_suite` every
``*/data.csv`` below a folder. Both return an :class:`EvaluationResult` holding the
per-fold metrics and the pooled reliability-diagram bins; :mod:`.report` writes them.
"""

from __future__ import annotations

import os
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import CountVectorizer

from .._base import CategoricalClassifier, n_threads
from .._text import NaiveBayesClassifier
from .._warnings import warn
from ..metrics import all_metrics, reliability_bins
from .methods import TEXT_METHODS, check_methods, make_estimator
from .protocol import (
    ColumnPlan,
    DataError,
    FoldBinner,
    parse_categorical,
    plan_columns,
    read_schema,
    read_table,
    split_target,
    stratified_folds,
    stratified_subsample,
    whole_categories,
)

if TYPE_CHECKING:
    from tqdm import tqdm

#: Default methods: the seven smoothers of the paper's main comparison.
DEFAULT_METHODS = (
    "laplace",
    "lidstone",
    "kt",
    "m-estimate",
    "target-encoding",
    "heb-u",
    "heb-m",
)
N_CALIBRATION_BINS = 10


@dataclass
class PreparedDataset:
    """One dataset after loading, subsampling and column typing.

    Attributes
    ----------
    name : str
    X : DataFrame
        The feature columns (raw values; binning happens inside each fold).
    y : ndarray
        The labels.
    plan : ColumnPlan
    n_rows_total : int
        Labelled rows before subsampling.
    notes : list of str
        Warnings raised while preparing it (dropped columns).
    text : str or None
        The text column vectorised per fold (``--text``), or None for a categorical table.
    """

    name: str
    X: pd.DataFrame
    y: np.ndarray
    plan: ColumnPlan
    n_rows_total: int
    notes: list[str] = field(default_factory=list)
    text: str | None = None


@dataclass
class EvaluationResult:
    """What an evaluation measured.

    Attributes
    ----------
    folds : DataFrame
        One row per (dataset, method, fold): the metrics of :data:`hebnb.metrics.
        HIGHER_IS_BETTER`, ``fit_seconds``, ``predict_seconds``, row counts, ``error``.
    reliability : DataFrame
        One row per (dataset, method, bin): ``count``, ``confidence``, ``accuracy`` of
        the top-1 predictions pooled over the test folds.
    datasets : DataFrame
        One row per dataset: rows, classes, binned / categorical / dropped columns.
    settings : dict
        The arguments of the run (methods, folds, max_rows, seed, ...).
    """

    folds: pd.DataFrame
    reliability: pd.DataFrame
    datasets: pd.DataFrame
    settings: dict[str, Any]


def prepare_dataset(
    data: str | os.PathLike[str] | pd.DataFrame,
    target: str = "class",
    *,
    name: str | None = None,
    categorical: str | list[str] | None = None,
    max_rows: int | None = 20_000,
    seed: int = 42,
    text: str | None = None,
) -> PreparedDataset:
    """Loads a table and applies the dataset-level steps of the protocol.

    Parameters
    ----------
    data : path-like or DataFrame
        A CSV or Parquet file, or a DataFrame. A ``schema.json`` beside the file supplies
        ``categorical`` when the argument is None.
    target : str, default="class"
    name : str, optional
        Dataset name in the results (default: the folder name for ``data.csv``, else
        the file stem, or ``"data"`` for a DataFrame).
    categorical : "all", list of str, comma-separated str or None
        Columns forced to be categorical.
    max_rows : int or None, default=20000
        Stratified subsample size (None keeps every row).
    seed : int, default=42
    text : str, optional
        A text column: the only feature, turned into token counts by a CountVectorizer
        fitted on each training fold.

    Raises
    ------
    DataError
        Unreadable or empty input, missing target column, a single class, no usable
        feature.
    """
    if isinstance(data, pd.DataFrame):
        frame, folder, default_name = data, None, "data"
    else:
        path = Path(data)
        frame, folder = read_table(path), path.parent
        # made absolute first: the folder of a bare "data.csv" is the working directory
        # (whose name ``Path("data.csv").parent.name``, "", is not)
        named_folder = Path(os.path.abspath(path)).parent.name
        default_name = named_folder if path.stem == "data" else path.stem
    categorical = parse_categorical(categorical)
    named_by = "--categorical"
    if categorical is None and folder is not None:
        categorical = parse_categorical(read_schema(folder).get("categorical"))
        named_by = str(folder / "schema.json")
    X, y = split_target(frame, target)
    n_rows_total = X.shape[0]
    X, y = stratified_subsample(X, y, max_rows, seed)
    if text is not None:
        if text not in X.columns:
            raise DataError(
                f"--text: no column {text!r} (columns: {', '.join(map(str, X.columns))})"
            )
        texts = X[[text]].fillna("").astype(str)
        return PreparedDataset(
            name or default_name, texts, y, ColumnPlan(categorical=[text]), n_rows_total, text=text
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = plan_columns(X, categorical, named_by=named_by)
    notes = [str(w.message) for w in caught]
    for note in notes:
        warn(f"{name or default_name}: {note}", UserWarning)
    X = whole_categories(X, plan)
    return PreparedDataset(name or default_name, X, y, plan, n_rows_total, notes)


def _proba_over(
    classes_all: np.ndarray, model: CategoricalClassifier | NaiveBayesClassifier, proba: np.ndarray
) -> np.ndarray:
    """Probabilities over every class of the dataset (0 for classes absent from training)."""
    if model.classes_.shape[0] == classes_all.shape[0]:
        return proba
    full = np.zeros((proba.shape[0], classes_all.shape[0]))
    full[:, np.searchsorted(classes_all, model.classes_)] = proba
    return full


def _run_dataset(
    dataset: PreparedDataset,
    methods: list[str],
    n_folds: int,
    seed: int,
    n_jobs: int | None,
    progress: tqdm[Any],
    fold_rows: list[dict[str, Any]],
    bin_rows: list[dict[str, Any]],
) -> None:
    """Every (fold, method) of one dataset; appends to the two row lists."""
    classes_all = np.unique(dataset.y)
    pooled = {
        method: np.zeros((3, N_CALIBRATION_BINS)) for method in methods
    }  # rows: count, sum of confidence, sum of correct
    for fold, (train, test) in enumerate(stratified_folds(dataset.y, n_folds, seed)):
        if dataset.text is not None:
            try:
                vectorizer = CountVectorizer().fit(dataset.X[dataset.text].iloc[train])
            except ValueError as error:  # e.g. no token in the column ("empty vocabulary")
                raise DataError(f"--text {dataset.text}: fold {fold}: {error}") from None
            X_train = vectorizer.transform(dataset.X[dataset.text].iloc[train])
            X_test = vectorizer.transform(dataset.X[dataset.text].iloc[test])
        else:
            binner = FoldBinner(dataset.plan).fit(dataset.X.iloc[train])
            X_train = binner.transform(dataset.X.iloc[train])
            X_test = binner.transform(dataset.X.iloc[test])
        y_train, y_test = dataset.y[train], dataset.y[test]
        for method in methods:
            progress.set_postfix_str(f"{dataset.name} fold {fold + 1} {method}", refresh=False)
            row = {
                "dataset": dataset.name,
                "method": method,
                "fold": fold,
                "n_train": len(train),
                "n_test": len(test),
                "error": "",
            }
            try:
                model = make_estimator(method, n_jobs=n_jobs)
                start = time.perf_counter()
                model.fit(X_train, y_train)
                row["fit_seconds"] = time.perf_counter() - start
                start = time.perf_counter()
                proba = model.predict_proba(X_test)
                row["predict_seconds"] = time.perf_counter() - start
                proba = _proba_over(classes_all, model, proba)
                row.update(all_metrics(y_test, proba, classes_all))
                count, confidence, accuracy = reliability_bins(
                    y_test, proba, classes_all, N_CALIBRATION_BINS
                )
                filled = count > 0
                pooled[method][0] += count
                pooled[method][1][filled] += (count * confidence)[filled]
                pooled[method][2][filled] += (count * accuracy)[filled]
            except (ValueError, MemoryError, RuntimeError) as error:
                row["error"] = f"{type(error).__name__}: {error}"
                warn(f"{dataset.name} fold {fold} {method}: {row['error']}", RuntimeWarning)
            fold_rows.append(row)
            progress.update(1)
    for method, (count, confidence_sum, correct_sum) in pooled.items():
        with np.errstate(invalid="ignore", divide="ignore"):
            confidence, accuracy = confidence_sum / count, correct_sum / count
        for b in range(N_CALIBRATION_BINS):
            bin_rows.append(
                {
                    "dataset": dataset.name,
                    "method": method,
                    "bin": b,
                    "lower": b / N_CALIBRATION_BINS,
                    "upper": (b + 1) / N_CALIBRATION_BINS,
                    "count": int(count[b]),
                    "confidence": confidence[b],
                    "accuracy": accuracy[b],
                }
            )


def _describe(dataset: PreparedDataset) -> dict[str, Any]:
    return {
        "dataset": dataset.name,
        "rows_total": dataset.n_rows_total,
        "rows_used": dataset.X.shape[0],
        "classes": np.unique(dataset.y).shape[0],
        "features": len(dataset.plan.kept),
        "binned": len(dataset.plan.binned),
        "categorical": len(dataset.plan.categorical),
        "max_cardinality": max([dataset.X[c].nunique() for c in dataset.plan.categorical] or [0]),
        "dropped": "; ".join(f"{k} ({v})" for k, v in dataset.plan.dropped.items()),
    }


def run_protocol(
    datasets: Sequence[PreparedDataset],
    methods: str | Sequence[str],
    *,
    folds: int = 10,
    seed: int = 42,
    n_jobs: int | None = None,
    progress: bool = True,
    settings: dict[str, Any] | None = None,
) -> EvaluationResult:
    """Cross-validates every method on every prepared dataset.

    Parameters
    ----------
    datasets : list of PreparedDataset
    methods : list of str
        Names from :data:`.methods.METHODS` (checked before anything runs).
    folds : int, default=10
    seed : int, default=42
        Seed of the fold shuffling.
    n_jobs : int or None, default=None
        Threads of each estimator (None: 1, -1: all cores); results do not depend on it.
    progress : bool, default=True
        Show a tqdm bar over datasets x folds x methods.
    settings : dict, optional
        Recorded in the result.

    Raises
    ------
    DataError
        Two datasets share a name (their folds would be merged into one dataset's
        results), or a dataset cannot be split into ``folds`` folds.
    """
    from tqdm.auto import tqdm  # the evaluate extra

    names = check_methods(methods)
    datasets_named = Counter(dataset.name for dataset in datasets)
    shared = [name for name, count in datasets_named.items() if count > 1]
    if shared:
        raise DataError(
            f"more than one dataset is named {' or '.join(map(repr, shared))}: the results "
            "are kept per dataset name, so give each its own (prepare_dataset(..., name=...))"
        )
    try:
        n_threads(n_jobs)
    except ValueError as error:
        raise DataError(f"--n-jobs: {error}") from None
    for dataset in datasets:  # fail before the long loop, not in the middle of it
        try:
            stratified_folds(dataset.y, folds, seed)
        except DataError as error:
            named = f"{dataset.name}: {error}" if len(datasets) > 1 else str(error)
            raise DataError(named) from None
    fold_rows: list[dict[str, Any]] = []
    bin_rows: list[dict[str, Any]] = []
    total = len(datasets) * folds * len(names)
    with tqdm(total=total, disable=not progress, unit="fit", dynamic_ncols=True) as bar:
        for dataset in datasets:
            _run_dataset(dataset, names, folds, seed, n_jobs, bar, fold_rows, bin_rows)
    return EvaluationResult(
        folds=pd.DataFrame(fold_rows),
        reliability=pd.DataFrame(bin_rows),
        datasets=pd.DataFrame([_describe(d) for d in datasets]),
        settings={
            "methods": names,
            "folds": folds,
            "seed": seed,
            "n_jobs": n_jobs,
            **(settings or {}),
        },
    )


def evaluate(
    data: str | os.PathLike[str] | pd.DataFrame,
    target: str = "class",
    methods: str | Sequence[str] = DEFAULT_METHODS,
    *,
    folds: int = 10,
    max_rows: int | None = 20_000,
    seed: int = 42,
    categorical: str | list[str] | None = None,
    name: str | None = None,
    n_jobs: int | None = None,
    progress: bool = True,
    text: str | None = None,
) -> EvaluationResult:
    """Cross-validates Naive Bayes smoothers (and AODE) on one table, as in the paper.

    Parameters
    ----------
    data : path-like or DataFrame
        CSV or Parquet file, or a DataFrame, holding the features and the target.
    target : str, default="class"
        The label column.
    methods : list of str or comma-separated str
        Names from :data:`hebnb.evaluation.METHODS`.
    folds : int, default=10
        Stratified K-fold cross-validation folds.
    max_rows : int or None, default=20000
        Larger tables are subsampled (stratified) to this many rows.
    seed : int, default=42
        Seed of the subsample and of the fold shuffling.
    categorical : "all", list of str, comma-separated str or None
        Columns never binned (also read from a ``schema.json`` beside the file).
    name : str, optional
        The dataset's name in the results.
    n_jobs : int or None, default=None
        Threads of each estimator (None: 1, -1: all cores).
    progress : bool, default=True
        Show a progress bar.
    text : str, optional
        Evaluate on a text column instead: a CountVectorizer fitted on each training
        fold turns it into token counts; ``methods`` must be text methods
        (:data:`hebnb.evaluation.methods.TEXT_METHODS`).

    Returns
    -------
    EvaluationResult

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from hebnb.evaluation import evaluate
    >>> rng = np.random.default_rng(0)
    >>> frame = pd.DataFrame({"a": rng.integers(0, 4, 200), "b": rng.normal(size=200)})
    >>> frame["class"] = (frame["a"] + rng.integers(0, 2, 200) > 2).astype(int)
    >>> result = evaluate(frame, methods="laplace,heb-m", folds=3, progress=False)
    >>> result.folds.groupby("method")["accuracy"].count().to_dict()
    {'heb-m': 3, 'laplace': 3}
    """
    methods = check_methods(methods)
    check_text_methods(methods, text)
    dataset = prepare_dataset(
        data, target, name=name, categorical=categorical, max_rows=max_rows, seed=seed, text=text
    )
    settings = {"target": target, "max_rows": max_rows, "categorical": categorical}
    if text is not None:
        settings["text"] = text
    return run_protocol(
        [dataset],
        methods,
        folds=folds,
        seed=seed,
        n_jobs=n_jobs,
        progress=progress,
        settings=settings,
    )


def check_text_methods(methods: list[str], text: str | None) -> None:
    """Text methods need ``text`` and the others a table without it."""
    is_text = [name.partition(":")[0] in TEXT_METHODS for name in methods]
    if text is not None and not all(is_text):
        wrong = [m for m, t in zip(methods, is_text) if not t]
        raise DataError(
            f"--text needs text methods ({', '.join(TEXT_METHODS)}); got {', '.join(wrong)}"
        )
    if text is None and any(is_text):
        wrong = [m for m, t in zip(methods, is_text) if t]
        raise DataError(f"method(s) {', '.join(wrong)} need --text COLUMN (token counts)")


def find_suite(directory: str | os.PathLike[str]) -> list[Path]:
    """Every ``*/data.csv`` (or ``*/data.parquet``) directly below ``directory``, sorted.

    Raises
    ------
    DataError
        The folder does not exist, holds no dataset, or a dataset folder holds both files
        (one dataset per folder: it was evaluated twice under one name).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(f"no such folder: {directory}")
    paths = sorted([*directory.glob("*/data.csv"), *directory.glob("*/data.parquet")])
    if not paths:
        raise DataError(f"no */data.csv or */data.parquet below {directory}")
    folders = [path.parent for path in paths]
    twice = sorted({folder.name for folder in folders if folders.count(folder) > 1})
    if twice:
        raise DataError(
            f"{', '.join(twice)}: both data.csv and data.parquet in one dataset folder; keep one"
        )
    return paths


def evaluate_suite(
    directory: str | os.PathLike[str],
    target: str = "class",
    methods: str | Sequence[str] = DEFAULT_METHODS,
    *,
    folds: int = 10,
    max_rows: int | None = 20_000,
    seed: int = 42,
    datasets: Sequence[str] | None = None,
    n_jobs: int | None = None,
    progress: bool = True,
    text: str | None = None,
) -> EvaluationResult:
    """:func:`evaluate` on every ``*/data.csv`` below a folder (one dataset per folder).

    Each folder's ``schema.json`` (if any) says which columns are categorical.

    Parameters
    ----------
    directory : path-like
    target, methods, folds, max_rows, seed, n_jobs, progress, text
        As in :func:`evaluate`.
    datasets : list of str, optional
        Only these folder names.
    """
    methods = check_methods(methods)
    check_text_methods(methods, text)
    paths = find_suite(directory)
    if datasets is not None:
        wanted = set(datasets)
        paths = [path for path in paths if path.parent.name in wanted]
        missing = wanted - {path.parent.name for path in paths}
        if missing:
            raise DataError(f"datasets not found below {directory}: {', '.join(sorted(missing))}")
    prepared = []
    for path in paths:
        try:
            prepared.append(prepare_dataset(path, target, max_rows=max_rows, seed=seed, text=text))
        except DataError as error:
            raise DataError(f"{path.parent.name}: {error}") from None
    settings = {"target": target, "max_rows": max_rows, "suite": str(directory)}
    if text is not None:
        settings["text"] = text
    return run_protocol(
        prepared,
        methods,
        folds=folds,
        seed=seed,
        n_jobs=n_jobs,
        progress=progress,
        settings=settings,
    )


__all__ = [
    "DEFAULT_METHODS",
    "DataError",
    "EvaluationResult",
    "PreparedDataset",
    "evaluate",
    "evaluate_suite",
    "find_suite",
    "prepare_dataset",
    "run_protocol",
]
