"""The paper's HEB-AODE experiment on amazon-employee (Table 3, Table 8), reproduced.

Stratified subsample of 20,000 rows (seed 42), stratified 10-fold CV (seed 42), all nine
columns categorical. For AODE and HEB-AODE (both priors), with the paper's memory cap
(max_parent_cardinality=200, max_joint_cells=5e7) and without it: log-loss, accuracy,
top-1 ECE, Brier, and fit / predict time per fold. Also the class prior alone and
HEB-M Naive Bayes as yardsticks.

Run from the repository root after ``maturin develop --release``:

    python benches/aode_amazon.py                 # 10 folds, n_jobs=2
    python benches/aode_amazon.py --folds 5 --n-jobs 1
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.model_selection import StratifiedKFold, train_test_split
from tqdm import tqdm

from common import load_shared
from hebnb import AODE, CategoricalNB
from hebnb.metrics import brier_score, expected_calibration_error, log_loss

CAP = {"max_parent_cardinality": 200, "max_joint_cells": 5e7}


def models(n_jobs: int, extra: dict) -> dict:
    """The configurations compared, by name."""
    out = {
        "AODE (Laplace), capped": AODE(
            parent_smoothing="laplace", smoothing="laplace", **CAP, n_jobs=n_jobs
        ),
        "HEB-AODE pooled (paper), capped": AODE(
            parent_smoothing="laplace", prior="pooled", **CAP, n_jobs=n_jobs
        ),
        "HEB-AODE two-level, capped": AODE(
            parent_smoothing="laplace", prior="two-level", **CAP, n_jobs=n_jobs
        ),
        "AODE (Laplace), uncapped": AODE(
            parent_smoothing="laplace", smoothing="laplace", n_jobs=n_jobs
        ),
        "HEB-AODE pooled (paper), uncapped": AODE(
            parent_smoothing="laplace", prior="pooled", n_jobs=n_jobs
        ),
        "HEB-AODE two-level, uncapped": AODE(
            parent_smoothing="laplace", prior="two-level", n_jobs=n_jobs
        ),
        "HEB-AODE two-level, EB parent, capped": AODE(parent_smoothing="heb", **CAP, n_jobs=n_jobs),
        "HEB-AODE two-level, EB parent, uncapped": AODE(parent_smoothing="heb", n_jobs=n_jobs),
        "HEB-M Naive Bayes": CategoricalNB(smoothing="heb-m", n_jobs=n_jobs),
    }
    for name, params in extra.items():
        out[name] = AODE(**{"parent_smoothing": "laplace", **params}, n_jobs=n_jobs)
    return out


def load(rows: int, seed: int):
    frame = load_shared("amazon-employee")
    X, y = frame.drop(columns="class").to_numpy(), frame["class"].to_numpy()
    if rows < len(y):
        X, _, y, _ = train_test_split(X, y, train_size=rows, stratify=y, random_state=seed)
    return X, y


def evaluate(X, y, folds: int, seed: int, n_jobs: int, extra: dict | None = None) -> dict:
    """Per configuration, the mean over folds of each metric and time."""
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    splits = list(splitter.split(X, y))
    results: dict[str, dict[str, list[float]]] = {}
    configs = models(n_jobs, extra or {})
    for train, test in tqdm(splits, desc="folds"):
        classes = np.unique(y[train])
        prior = (np.bincount(np.searchsorted(classes, y[train])) + 1) / (len(train) + 2)
        proba = np.tile(prior, (len(test), 1))
        row = results.setdefault("class prior alone", {})
        row.setdefault("log-loss", []).append(log_loss(y[test], proba, classes))
        row.setdefault("accuracy", []).append(np.mean(classes[proba.argmax(1)] == y[test]))
        row.setdefault("ECE", []).append(expected_calibration_error(y[test], proba, classes))
        row.setdefault("Brier", []).append(brier_score(y[test], proba, classes))
        for name, model in configs.items():
            start = time.perf_counter()
            model.fit(X[train], y[train])
            fit_time = time.perf_counter() - start
            start = time.perf_counter()
            proba = model.predict_proba(X[test])
            predict_time = time.perf_counter() - start
            row = results.setdefault(name, {})
            row.setdefault("log-loss", []).append(log_loss(y[test], proba, model.classes_))
            row.setdefault("accuracy", []).append(
                np.mean(model.classes_[proba.argmax(1)] == y[test])
            )
            row.setdefault("ECE", []).append(
                expected_calibration_error(y[test], proba, model.classes_)
            )
            row.setdefault("Brier", []).append(brier_score(y[test], proba, model.classes_))
            row.setdefault("fit s", []).append(fit_time)
            row.setdefault("predict s", []).append(predict_time)
    return {name: {k: float(np.mean(v)) for k, v in row.items()} for name, row in results.items()}


def markdown(results: dict) -> str:
    columns = ["log-loss", "accuracy", "ECE", "Brier", "fit s", "predict s"]
    lines = ["| model | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, row in results.items():
        cells = [f"{row[c]:.4f}" if c in row else "" for c in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument(
        "--min-parent-count",
        type=float,
        nargs="*",
        default=[],
        help="also run two-level HEB-AODE with these super-parent frequency limits",
    )
    args = parser.parse_args()
    X, y = load(args.rows, args.seed)
    extra = {
        f"HEB-AODE two-level, uncapped, min_parent_count={m:g}": {"min_parent_count": m}
        for m in args.min_parent_count
    }
    results = evaluate(X, y, args.folds, args.seed, args.n_jobs, extra)
    print(
        f"amazon-employee: {len(y)} rows, {args.folds}-fold stratified CV (seed {args.seed}), "
        f"n_jobs={args.n_jobs}\n"
    )
    print(markdown(results))


if __name__ == "__main__":
    main()
