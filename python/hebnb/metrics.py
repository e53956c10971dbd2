"""Classification and probability-quality metrics as SPEC ("Metrics") defines them.

Accuracy, macro F1, natural-log log-loss with probabilities clipped to [1e-15, 1],
multi-class Brier, macro one-vs-rest AUC and top-1 ECE with 10 equal-width bins whose
first bin is [0, 0.1] and the others (lo, hi]. Every function takes the true labels, the
probability matrix (one column per class) and ``classes``, the labels of those columns
sorted as ``numpy.unique`` sorts them, and checks them before computing anything (a
ValueError says what is wrong): the rows must hold probabilities, values in [0, 1]
summing to 1 within scikit-learn's ``log_loss`` tolerance. The predicted class is the
argmax of the probabilities, ties going to the lowest class index. The ECE's inner bin
edges are the doubles nearest k / 10.
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


def row_sum_rtol(proba: np.ndarray) -> float:
    """How far a row of probabilities may sum from 1: scikit-learn's ``log_loss`` check,
    ``numpy.isclose(row_sum, 1, rtol=sqrt(eps))`` (with isclose's absolute 1e-8), ``eps``
    that of ``proba``'s own floating dtype (float32 probabilities sum to 1 within
    float32's rounding), float64's otherwise."""
    dtype = getattr(proba, "dtype", None)
    floating = dtype is not None and np.issubdtype(dtype, np.floating)
    return float(np.sqrt(np.finfo(dtype if floating else np.float64).eps))


def _checked(
    y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """``proba`` as a float matrix and the column of each row's true class, after
    checking everything the metrics assume, before any of them computes a thing.

    ``classes`` must be one-dimensional, sorted, distinct and hold every label;
    ``proba`` must have one row per label (at least one) and one column per class, and
    hold probabilities: finite values in [0, 1] whose rows sum to 1 (as scikit-learn's
    ``log_loss`` checks them; it only warns of the sums).
    """
    rtol = row_sum_rtol(np.asarray(proba))
    matrix, labels, truth = np.asarray(proba, dtype=float), np.asarray(classes), np.asarray(y_true)
    if labels.ndim != 1:
        raise ValueError(
            f"classes must be a one-dimensional array of labels, got shape {labels.shape}"
        )
    if matrix.ndim != 2 or matrix.shape[1] != labels.shape[0]:
        raise ValueError(
            f"proba of shape {matrix.shape} needs one column per class: {labels.shape[0]} "
            "classes given"
        )
    if truth.ndim != 1:
        raise ValueError(
            f"y_true must be a one-dimensional array of labels, got shape {truth.shape}"
        )
    if truth.shape[0] != matrix.shape[0]:
        raise ValueError(f"{truth.shape[0]} labels for the {matrix.shape[0]} rows of proba")
    if labels.shape[0] == 0:
        raise ValueError("classes is empty")
    if matrix.shape[0] == 0:
        raise ValueError("no rows to score: proba and y_true are empty")
    if not np.all(np.isfinite(matrix)):
        raise ValueError("proba holds NaN or infinite values")
    if matrix.min() < 0.0 or matrix.max() > 1.0:
        raise ValueError(
            f"proba holds values outside [0, 1] (from {float(matrix.min())!r} to "
            f"{float(matrix.max())!r}): it must hold probabilities"
        )
    sums = matrix.sum(axis=1)
    off = ~np.isclose(sums, 1.0, rtol=rtol)
    if np.any(off):
        raise ValueError(
            f"{int(off.sum())} rows of proba do not sum to 1 (row {int(np.argmax(off))} sums "
            f"to {float(sums[np.argmax(off)])!r}): it must hold probabilities"
        )
    if np.any(labels[1:] <= labels[:-1]):
        raise ValueError("classes must be distinct and sorted, as numpy.unique returns them")
    index = np.searchsorted(labels, truth)
    index = np.clip(index, 0, labels.shape[0] - 1)
    if not np.all(labels[index] == truth):
        raise ValueError("y_true holds labels that are not in classes")
    return matrix, index


def log_loss(y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike) -> float:
    """Mean negative natural log of the probability given to the true class."""
    matrix, index = _checked(y_true, proba, classes)
    p = np.clip(matrix[np.arange(matrix.shape[0]), index], 1e-15, 1.0)
    return float(-np.mean(np.log(p)))


def brier_score(y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike) -> float:
    """Mean over rows of sum_c (p_c - 1[y = c])^2 (multi-class Brier score).

    The paper's macro one-vs-rest Brier is this value divided by the number of classes,
    so on one dataset both variants rank methods identically.
    """
    matrix, index = _checked(y_true, proba, classes)
    onehot = np.zeros_like(matrix)
    onehot[np.arange(matrix.shape[0]), index] = 1.0
    return float(np.mean(np.sum((matrix - onehot) ** 2, axis=1)))


def predicted_index(proba: ArrayLike) -> np.ndarray:
    """Column of the largest probability per row (ties: the lowest index)."""
    matrix = np.asarray(proba, dtype=float)
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise ValueError(f"proba of shape {matrix.shape} needs rows of one column per class")
    index: np.ndarray = np.argmax(matrix, axis=1)
    return index


def accuracy(y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike) -> float:
    """Fraction of rows whose most probable class is the true class."""
    matrix, truth = _checked(y_true, proba, classes)
    return float(np.mean(predicted_index(matrix) == truth))


def f1_macro(y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike) -> float:
    """Unweighted mean over classes of F1 = 2 TP / (2 TP + FP + FN).

    The mean runs over the classes that occur in ``y_true`` or among the predictions
    (scikit-learn's ``f1_score(average="macro")`` without ``labels``).
    """
    matrix, truth = _checked(y_true, proba, classes)
    predicted = predicted_index(matrix)
    n_classes = matrix.shape[1]
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
    matrix, truth = _checked(y_true, proba, classes)
    areas = []
    for c in range(matrix.shape[1]):
        positive = truth == c
        n_positive = int(positive.sum())
        n_negative = positive.shape[0] - n_positive
        if n_positive == 0 or n_negative == 0:
            continue
        ranks = rankdata(matrix[:, c])
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
    matrix, truth = _checked(y_true, proba, classes)
    confidence = matrix.max(axis=1)
    correct = predicted_index(matrix) == truth
    # the inner edges k / n_bins, each the double nearest it: numpy.linspace(0, 1, 11)
    # gives 3 * 0.1 = 0.30000000000000004 (and 0.6, 0.7 one ulp high), so confidences
    # just above 0.3 fell into (0.2, 0.3]
    edges = np.arange(1, n_bins) / n_bins
    bins = np.digitize(confidence, edges, right=True)
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
