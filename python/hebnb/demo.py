"""``hebnb demo``: hebnb against scikit-learn's ``CategoricalNB`` on built-in data, side by
side. No download.

- On digits and on a synthetic high-cardinality set: scikit-learn's ``CategoricalNB``
  (add-one), hebnb's Laplace and HEB-M (smoothing learned by Type-II ML). hebnb's Laplace
  has the same add-one tables; it differs from scikit-learn's only by SPEC's add-one
  class prior and by skipping test values unseen in training, where scikit-learn counts
  them as zeros.
- On a wide table of linked features whose class depends on interactions: HEB-M, the
  Laplace AODE and the two-level HEB-AODE.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import CategoricalNB as ScikitLearnCategoricalNB

from .aode import AODE
from .datasets import make_high_cardinality, make_linked
from .metrics import brier_score, expected_calibration_error, log_loss
from .naive_bayes import CategoricalNB


class _Classifier(Protocol):
    """What the demo calls: scikit-learn's and hebnb's classifiers alike."""

    def fit(self, X: Any, y: Any) -> Any: ...

    def predict_proba(self, X: Any) -> Any: ...


#: method -> what it fits, given the number of categories of every feature (which
#: scikit-learn's ``CategoricalNB`` needs to score values its training split lacks; hebnb
#: skips such values, ``handle_unknown="ignore"``).
MODELS: dict[str, Callable[[np.ndarray], _Classifier]] = {
    "sklearn": lambda n_categories: ScikitLearnCategoricalNB(min_categories=n_categories),
    "laplace": lambda _: CategoricalNB(smoothing="laplace"),
    "heb-m": lambda _: CategoricalNB(),
    "aode": lambda _: AODE(smoothing="laplace", parent_smoothing="laplace", n_jobs=-1),
    "heb-aode": lambda _: AODE(n_jobs=-1),
}


def demo_datasets(seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray, tuple[str, ...]]]:
    """The demo's datasets: name -> (X, y, methods). All built in, no download."""
    digits = load_digits()
    synthetic = make_high_cardinality(
        n_samples=30_000,
        n_features=12,
        n_classes=3,
        max_cardinality=20_000,
        class_dispersion=0.3,
        random_state=seed,
    )
    linked = make_linked(3_000, 200, random_state=seed)
    naive_bayes = ("sklearn", "laplace", "heb-m")
    return {
        "digits (64 features, 17 values, 10 classes)": (
            digits.data.astype(np.int64),
            digits.target,
            naive_bayes,
        ),
        "synthetic high-cardinality (12 features, up to 20,000 values)": (*synthetic, naive_bayes),
        "linked (200 ternary features, interactions)": (*linked, ("heb-m", "aode", "heb-aode")),
    }


def evaluate(X: np.ndarray, y: np.ndarray, method: str, seed: int = 0) -> dict[str, float]:
    """Fits ``method`` on a stratified 70% and scores the held-out 30%."""
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=seed
    )
    model = MODELS[method](X.max(axis=0) + 1)
    start = time.perf_counter()
    fitted = model.fit(X_train, y_train)
    fit_seconds = time.perf_counter() - start
    proba = fitted.predict_proba(X_test)
    classes = fitted.classes_
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
    for name, (X, y, methods) in demo_datasets(seed).items():
        for method in methods:
            result: dict[str, str | float] = {"dataset": name, "method": method}
            result.update(evaluate(X, y, method, seed))
            rows.append(result)
            print(
                f"{name:<62} {method:<8} {result['accuracy']:8.4f} {result['log_loss']:9.4f} "
                f"{result['brier']:7.4f} {result['ece']:7.4f} {result['fit_s']:7.3f}"
            )
    return rows
