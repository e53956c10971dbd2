"""Probability-quality metrics as SPEC defines them (natural-log log-loss with
probabilities clipped to [1e-15, 1], multi-class Brier, top-1 ECE with 10 equal-width
bins whose first bin is [0, 0.1] and the others (lo, hi])."""

from __future__ import annotations

import numpy as np


def _true_class_index(y_true, classes) -> np.ndarray:
    classes = np.asarray(classes)
    index = np.searchsorted(classes, y_true)
    index = np.clip(index, 0, classes.shape[0] - 1)
    if not np.all(classes[index] == np.asarray(y_true)):
        raise ValueError("y_true holds labels that are not in classes")
    return index


def log_loss(y_true, proba, classes) -> float:
    """Mean negative natural log of the probability given to the true class."""
    proba = np.asarray(proba, dtype=float)
    index = _true_class_index(y_true, classes)
    p = np.clip(proba[np.arange(proba.shape[0]), index], 1e-15, 1.0)
    return float(-np.mean(np.log(p)))


def brier_score(y_true, proba, classes) -> float:
    """Mean over rows of sum_c (p_c - 1[y = c])^2 (multi-class Brier score)."""
    proba = np.asarray(proba, dtype=float)
    onehot = np.zeros_like(proba)
    onehot[np.arange(proba.shape[0]), _true_class_index(y_true, classes)] = 1.0
    return float(np.mean(np.sum((proba - onehot) ** 2, axis=1)))


def expected_calibration_error(y_true, proba, classes, n_bins: int = 10) -> float:
    """Top-1 ECE: confidence vs accuracy of the argmax class over equal-width bins."""
    proba = np.asarray(proba, dtype=float)
    confidence = proba.max(axis=1)
    predicted = np.asarray(classes)[np.argmax(proba, axis=1)]
    correct = predicted == np.asarray(y_true)
    # bins (lo, hi]; the first bin also takes confidence 0
    bins = np.digitize(confidence, np.linspace(0.0, 1.0, n_bins + 1)[1:-1], right=True)
    ece = 0.0
    for b in range(n_bins):
        in_bin = bins == b
        if in_bin.any():
            ece += in_bin.mean() * abs(correct[in_bin].mean() - confidence[in_bin].mean())
    return float(ece)
