"""``hebnb demo``: Laplace against HEB-M on built-in data, side by side."""

from __future__ import annotations

import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from .datasets import make_high_cardinality
from .metrics import brier_score, expected_calibration_error, log_loss
from .naive_bayes import CategoricalNB

METHODS = ("laplace", "heb-m")


def demo_datasets(seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The demo's datasets: name -> (X, y). Both built in, no download."""
    digits = load_digits()
    synthetic = make_high_cardinality(
        n_samples=30_000,
        n_features=12,
        n_classes=3,
        max_cardinality=20_000,
        class_dispersion=0.3,
        random_state=seed,
    )
    return {
        "digits (64 features, 17 values, 10 classes)": (
            digits.data.astype(np.int64),
            digits.target,
        ),
        "synthetic high-cardinality (12 features, up to 20,000 values)": synthetic,
    }


def evaluate(X: np.ndarray, y: np.ndarray, smoothing: str, seed: int = 0) -> dict[str, float]:
    """Fits on a stratified 70% and scores the held-out 30%."""
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=seed
    )
    start = time.perf_counter()
    model = CategoricalNB(smoothing=smoothing).fit(X_train, y_train)
    fit_seconds = time.perf_counter() - start
    proba = model.predict_proba(X_test)
    classes = model.classes_
    return {
        "accuracy": float(np.mean(classes[proba.argmax(axis=1)] == y_test)),
        "log_loss": log_loss(y_test, proba, classes),
        "brier": brier_score(y_test, proba, classes),
        "ece": expected_calibration_error(y_test, proba, classes),
        "fit_s": fit_seconds,
    }


def run_demo(seed: int = 0) -> list[dict[str, str | float]]:
    """Prints and returns the comparison table."""
    rows: list[dict[str, str | float]] = []
    header = f"{'dataset':<62} {'method':<8} {'accuracy':>8} {'log-loss':>9} {'Brier':>7} {'ECE':>7} {'fit s':>7}"
    print(header)
    print("-" * len(header))
    for name, (X, y) in demo_datasets(seed).items():
        for method in METHODS:
            result: dict[str, str | float] = {"dataset": name, "method": method}
            result.update(evaluate(X, y, method, seed))
            rows.append(result)
            print(
                f"{name:<62} {method:<8} {result['accuracy']:8.4f} {result['log_loss']:9.4f} "
                f"{result['brier']:7.4f} {result['ece']:7.4f} {result['fit_s']:7.3f}"
            )
    return rows
