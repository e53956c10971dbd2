"""Classification and probability-quality metrics as SPEC ("Metrics") defines them.

Accuracy, macro F1, natural-log log-loss with probabilities clipped to [1e-15, 1],
multi-class Brier, macro one-vs-rest AUC and top-1 ECE with 10 equal-width bins whose
first bin is [0, 0.1] and the others (lo, hi]. Every function takes the true labels, the
probability matrix (one column per class) and ``classes``, the labels of those columns
sorted as ``numpy.unique`` sorts them. The predicted class is the argmax of the
probabilities, ties going to the lowest class index.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import rankdata

#: Metric name -> True when a larger value is better (used to rank methods).
HIGHER_IS_BETTER = {
    "accuracy": True,
    "f1_macro": True,
    "log_loss": False,
    "brier": False,
    "auc_ovr": True,
    "ece": False,
}


def _true_class_index(y_true: ArrayLike, classes: ArrayLike, proba: np.ndarray) -> np.ndarray:
    """Column of each row's true class, after checking that ``proba`` has one row per
    label and one column per class, at least one row and only finite values, and that
    ``classes`` is sorted and holds every label."""
    classes, y_true = np.asarray(classes), np.asarray(y_true)
    if proba.ndim != 2 or classes.ndim != 1 or proba.shape[1] != classes.shape[0]:
        raise ValueError(
            f"proba of shape {proba.shape} needs one column per class: {classes.shape[0]} "
            "classes given"
        )
    if y_true.ndim != 1 or y_true.shape[0] != proba.shape[0]:
        raise ValueError(f"{y_true.shape[0]} labels for the {proba.shape[0]} rows of proba")
    if classes.shape[0] == 0:
        raise ValueError("classes is empty")
    if proba.shape[0] == 0:
        raise ValueError("no rows to score: proba and y_true are empty")
    if not np.all(np.isfinite(proba)):
        raise ValueError("proba holds NaN or infinite values")
    if np.any(classes[1:] <= classes[:-1]):
        raise ValueError("classes must be distinct and sorted, as numpy.unique returns them")
    index = np.searchsorted(classes, y_true)
    index = np.clip(index, 0, classes.shape[0] - 1)
    if not np.all(classes[index] == y_true):
        raise ValueError("y_true holds labels that are not in classes")
    return index


def log_loss(y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike) -> float:
    """Mean negative natural log of the probability given to the true class."""
    proba = np.asarray(proba, dtype=float)
    index = _true_class_index(y_true, classes, proba)
    p = np.clip(proba[np.arange(proba.shape[0]), index], 1e-15, 1.0)
    return float(-np.mean(np.log(p)))


def brier_score(y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike) -> float:
    """Mean over rows of sum_c (p_c - 1[y = c])^2 (multi-class Brier score).

    The paper's macro one-vs-rest Brier is this value divided by the number of classes,
    so on one dataset both variants rank methods identically.
    """
    proba = np.asarray(proba, dtype=float)
    onehot = np.zeros_like(proba)
    onehot[np.arange(proba.shape[0]), _true_class_index(y_true, classes, proba)] = 1.0
    return float(np.mean(np.sum((proba - onehot) ** 2, axis=1)))


def predicted_index(proba: ArrayLike) -> np.ndarray:
    """Column of the largest probability per row (ties: the lowest index)."""
    index: np.ndarray = np.argmax(np.asarray(proba, dtype=float), axis=1)
    return index


def accuracy(y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike) -> float:
    """Fraction of rows whose most probable class is the true class."""
    proba = np.asarray(proba, dtype=float)
    return float(np.mean(predicted_index(proba) == _true_class_index(y_true, classes, proba)))


def f1_macro(y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike) -> float:
    """Unweighted mean over classes of F1 = 2 TP / (2 TP + FP + FN).

    The mean runs over the classes that occur in ``y_true`` or among the predictions
    (scikit-learn's ``f1_score(average="macro")`` without ``labels``).
    """
    proba = np.asarray(proba, dtype=float)
    truth = _true_class_index(y_true, classes, proba)
    predicted = predicted_index(proba)
    n_classes = np.asarray(classes).shape[0]
    true_positive = np.bincount(truth[truth == predicted], minlength=n_classes)
    actual = np.bincount(truth, minlength=n_classes)
    forecast = np.bincount(predicted, minlength=n_classes)
    present = (actual + forecast) > 0
    f1 = 2.0 * true_positive[present] / (actual[present] + forecast[present])
    return float(np.mean(f1))


def auc_ovr_macro(y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike) -> float:
    """Unweighted mean over classes of the one-vs-rest ROC AUC of ``proba[:, c]``.

    Each class's AUC is the Mann-Whitney statistic (ties count one half). Classes absent
    from ``y_true``, for which the AUC is undefined, are left out of the mean; NaN when
    no class is left (a single class in ``y_true``). For two classes this equals the
    binary AUC of either column.
    """
    proba = np.asarray(proba, dtype=float)
    truth = _true_class_index(y_true, classes, proba)
    areas = []
    for c in range(proba.shape[1]):
        positive = truth == c
        n_positive = int(positive.sum())
        n_negative = positive.shape[0] - n_positive
        if n_positive == 0 or n_negative == 0:
            continue
        ranks = rankdata(proba[:, c])
        u = ranks[positive].sum() - n_positive * (n_positive + 1) / 2.0
        areas.append(u / (n_positive * n_negative))
    return float(np.mean(areas)) if areas else float("nan")


def reliability_bins(
    y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike, n_bins: int = 10
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-1 confidence against accuracy in equal-width bins (the data of ECE).

    Returns
    -------
    count : ndarray of shape (n_bins,)
        Rows whose top-1 confidence falls in each bin ([0, 1/n_bins], then (lo, hi]).
    confidence : ndarray of shape (n_bins,)
        Mean top-1 confidence in each bin (NaN for empty bins).
    accuracy : ndarray of shape (n_bins,)
        Fraction of those rows whose top-1 class is right (NaN for empty bins).
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    proba = np.asarray(proba, dtype=float)
    confidence = proba.max(axis=1)
    correct = predicted_index(proba) == _true_class_index(y_true, classes, proba)
    bins = np.digitize(confidence, np.linspace(0.0, 1.0, n_bins + 1)[1:-1], right=True)
    count = np.bincount(bins, minlength=n_bins).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_confidence = np.bincount(bins, weights=confidence, minlength=n_bins) / count
        mean_accuracy = np.bincount(bins, weights=correct, minlength=n_bins) / count
    return count, mean_confidence, mean_accuracy


def expected_calibration_error(
    y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike, n_bins: int = 10
) -> float:
    """Top-1 ECE: sum over bins of (rows in bin / rows) * |accuracy - mean confidence|."""
    count, confidence, accuracy_in_bin = reliability_bins(y_true, proba, classes, n_bins)
    filled = count > 0
    gaps = np.abs(accuracy_in_bin[filled] - confidence[filled])
    return float(np.sum(count[filled] / count.sum() * gaps))


def all_metrics(y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike) -> dict[str, float]:
    """Every metric of :data:`HIGHER_IS_BETTER` for one set of predictions."""
    return {
        "accuracy": accuracy(y_true, proba, classes),
        "f1_macro": f1_macro(y_true, proba, classes),
        "log_loss": log_loss(y_true, proba, classes),
        "brier": brier_score(y_true, proba, classes),
        "auc_ovr": auc_ovr_macro(y_true, proba, classes),
        "ece": expected_calibration_error(y_true, proba, classes),
    }
