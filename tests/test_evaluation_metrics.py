"""The evaluation metrics against scikit-learn's and against a hand computation (ECE)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as sk

from hebnb.metrics import (
    accuracy,
    all_metrics,
    auc_ovr_macro,
    brier_score,
    expected_calibration_error,
    f1_macro,
    log_loss,
    reliability_bins,
)


def random_predictions(n_rows: int, n_classes: int, seed: int):
    rng = np.random.default_rng(seed)
    classes = np.arange(n_classes) * 10  # labels that are not column indices
    y = classes[rng.integers(0, n_classes, n_rows)]
    y[:n_classes] = classes  # every class present
    logits = rng.normal(size=(n_rows, n_classes)) * 2
    logits[np.arange(n_rows), np.searchsorted(classes, y)] += 1.5  # better than chance
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return y, proba, classes


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_accuracy_f1_log_loss_match_scikit_learn(n_classes):
    y, proba, classes = random_predictions(300, n_classes, seed=n_classes)
    predicted = classes[proba.argmax(axis=1)]
    assert accuracy(y, proba, classes) == pytest.approx(sk.accuracy_score(y, predicted))
    assert f1_macro(y, proba, classes) == pytest.approx(sk.f1_score(y, predicted, average="macro"))
    assert log_loss(y, proba, classes) == pytest.approx(sk.log_loss(y, proba, labels=classes))


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_auc_matches_scikit_learn(n_classes):
    y, proba, classes = random_predictions(300, n_classes, seed=10 + n_classes)
    proba = np.round(proba, 2)  # ties between scores, handled as one half
    proba = proba / proba.sum(axis=1, keepdims=True)
    if n_classes == 2:
        expected = sk.roc_auc_score(y == classes[1], proba[:, 1])
    else:
        expected = sk.roc_auc_score(y, proba, multi_class="ovr", average="macro", labels=classes)
    assert auc_ovr_macro(y, proba, classes) == pytest.approx(expected)


def test_auc_leaves_out_classes_absent_from_the_fold():
    y, proba, classes = random_predictions(200, 3, seed=5)
    keep = y != classes[2]
    present = auc_ovr_macro(y[keep], proba[keep], classes)
    by_hand = np.mean([sk.roc_auc_score(y[keep] == classes[c], proba[keep, c]) for c in (0, 1)])
    assert present == pytest.approx(by_hand)


def test_brier_binary_matches_scikit_learn_times_two():
    y, proba, classes = random_predictions(250, 2, seed=7)
    # multi-class Brier sums over both columns: twice the binary Brier of scikit-learn
    assert brier_score(y, proba, classes) == pytest.approx(
        2 * sk.brier_score_loss(y == classes[1], proba[:, 1])
    )


def test_argmax_ties_go_to_the_lowest_class_index():
    proba = np.array([[0.5, 0.5], [0.5, 0.5]])
    assert accuracy(np.array(["a", "b"]), proba, np.array(["a", "b"])) == 0.5


def test_expected_calibration_error_by_hand():
    classes = np.array([0, 1])
    # top-1 confidences 0.95, 0.95, 0.65, 0.65, 0.55, 0.9
    proba = np.array(
        [
            [0.95, 0.05],
            [0.05, 0.95],
            [0.65, 0.35],
            [0.35, 0.65],
            [0.55, 0.45],
            [0.1, 0.9],
        ]
    )
    y = np.array([0, 0, 0, 0, 1, 1])
    # bins: (0.9, 1]: rows 0, 1 -> accuracy 1/2, confidence 0.95 -> gap 0.45, weight 2/6
    #       (0.8, 0.9]: row 5 -> accuracy 1, confidence 0.9 -> gap 0.1, weight 1/6
    #       (0.6, 0.7]: rows 2, 3 -> accuracy 1/2, confidence 0.65 -> gap 0.15, weight 2/6
    #       (0.5, 0.6]: row 4 -> accuracy 0, confidence 0.55 -> gap 0.55, weight 1/6
    expected = (2 * 0.45 + 1 * 0.1 + 2 * 0.15 + 1 * 0.55) / 6
    assert expected_calibration_error(y, proba, classes) == pytest.approx(expected)
    count, confidence, accuracy_in_bin = reliability_bins(y, proba, classes)
    assert count.tolist() == [0, 0, 0, 0, 0, 1, 2, 0, 1, 2]
    assert confidence[9] == pytest.approx(0.95) and accuracy_in_bin[9] == 0.5
    assert np.isnan(confidence[0])


def test_ece_bin_edges_are_closed_on_the_right():
    classes = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    proba = np.full((1, 10), 0.1)  # confidence exactly 0.1: the first bin [0, 0.1]
    count, _, _ = reliability_bins(np.array([0]), proba, classes)
    assert count[0] == 1


@pytest.mark.parametrize("n_bins", [0, -1, 2.5, True, "10"])
@pytest.mark.parametrize("metric", [reliability_bins, expected_calibration_error])
def test_a_bin_count_that_is_not_a_positive_integer_is_refused(metric, n_bins):
    """0 bins made one bin of every row (an ECE where there are no bins), -1 failed in
    numpy's bincount."""
    y, proba, classes = random_predictions(20, 3, seed=2)
    with pytest.raises(ValueError, match="n_bins must be a positive integer"):
        metric(y, proba, classes, n_bins)


def test_one_bin_is_the_gap_between_mean_confidence_and_accuracy():
    y, proba, classes = random_predictions(50, 3, seed=3)
    confidence = proba.max(axis=1)
    accuracy = np.mean(classes[proba.argmax(axis=1)] == y)
    one = expected_calibration_error(y, proba, classes, np.int64(1))
    assert one == pytest.approx(abs(accuracy - confidence.mean()), rel=1e-12)


def test_all_metrics_names():
    y, proba, classes = random_predictions(50, 3, seed=1)
    assert set(all_metrics(y, proba, classes)) == {
        "accuracy",
        "f1_macro",
        "log_loss",
        "brier",
        "auc_ovr",
        "ece",
    }


@pytest.mark.parametrize(
    "name", ["log_loss", "brier_score", "accuracy", "f1_macro", "auc_ovr_macro", "ece"]
)
def test_mismatched_labels_probabilities_and_classes_are_refused(name):
    """A probability matrix whose columns do not match ``classes``, or whose rows do not
    match the labels, is a ValueError (it used to give a number or an IndexError)."""
    metric = {
        "log_loss": log_loss,
        "brier_score": brier_score,
        "accuracy": accuracy,
        "f1_macro": f1_macro,
        "auc_ovr_macro": auc_ovr_macro,
        "ece": expected_calibration_error,
    }[name]
    proba = np.array([[0.5, 0.5], [0.1, 0.9], [0.7, 0.3]])
    with pytest.raises(ValueError, match="one column per class"):
        metric([0, 1, 0], proba, [0, 1, 2])
    with pytest.raises(ValueError, match="labels for the 3 rows"):
        metric([0, 1], proba, [0, 1])
    with pytest.raises(ValueError, match="not in classes"):
        metric([0, 2, 1], proba, [0, 1])
    with pytest.raises(ValueError, match="sorted"):
        metric([0, 1, 0], proba, [1, 0])


@pytest.mark.parametrize(
    "metric",
    [log_loss, brier_score, accuracy, f1_macro, auc_ovr_macro, expected_calibration_error],
)
def test_non_finite_probabilities_and_empty_input_are_refused(metric):
    """A NaN row used to count as a correct prediction (argmax of NaN is 0) while the
    log-loss was NaN, and empty input gave an ECE of 0."""
    proba = np.array([[np.nan, np.nan], [0.1, 0.9]])
    with pytest.raises(ValueError, match="NaN or infinite"):
        metric([0, 1], proba, [0, 1])
    with pytest.raises(ValueError, match="NaN or infinite"):
        metric([0, 1], np.array([[np.inf, 0.0], [0.1, 0.9]]), [0, 1])
    with pytest.raises(ValueError, match="no rows"):
        metric([], np.empty((0, 2)), [0, 1])
