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


METRICS = [
    accuracy,
    f1_macro,
    log_loss,
    brier_score,
    auc_ovr_macro,
    expected_calibration_error,
    reliability_bins,
    all_metrics,
]


@pytest.mark.parametrize("metric", METRICS, ids=lambda metric: metric.__name__)
def test_shapes_are_checked_before_anything_is_computed(metric):
    """accuracy, the ECE and all_metrics took the argmax / max before the shape check:
    numpy's AxisError for 1-D probabilities, "argmax of an empty sequence" for no
    column; a scalar ``classes`` raised an IndexError while the message was built."""
    with pytest.raises(ValueError, match=r"proba of shape \(2,\) needs one column per class"):
        metric([0, 1], [0.2, 0.8], [0, 1])
    with pytest.raises(ValueError, match=r"proba of shape \(2, 0\) needs one column per class"):
        metric([0, 1], np.zeros((2, 0)), [0, 1])
    with pytest.raises(ValueError, match=r"classes must be a one-dimensional array.*shape \(\)"):
        metric([0, 1], [[0.5, 0.5], [0.5, 0.5]], 0)
    with pytest.raises(ValueError, match=r"y_true must be a one-dimensional array"):
        metric([[0], [1]], [[0.5, 0.5], [0.5, 0.5]], [0, 1])


@pytest.mark.parametrize("metric", METRICS, ids=lambda metric: metric.__name__)
def test_values_that_are_not_probabilities_are_refused(metric):
    """Rows [1, 1] and [0.9, 0.9] gave a log-loss of 0.053 and an accuracy of 0.5, and
    negative values were scored too."""
    with pytest.raises(ValueError, match=r"outside \[0, 1\] \(from -0.5 to 1.5\)"):
        metric([0, 1], [[-0.5, 1.5], [0.5, 0.5]], [0, 1])
    with pytest.raises(ValueError, match="2 rows of proba do not sum to 1 .*sums to 2.0"):
        metric([0, 1], [[1.0, 1.0], [0.9, 0.9]], [0, 1])


@pytest.mark.parametrize("offset", [0.0, 1e-12, 1e-9, 1e-8, 3e-8, 1e-7, 1e-4])
def test_the_row_sum_tolerance_is_scikit_learns(offset):
    """A row is refused exactly where scikit-learn's log_loss finds that the values do not
    sum to one (it warns; here it is an error)."""
    import warnings

    y, proba, classes = random_predictions(40, 3, seed=8)
    proba = proba.copy()
    proba[5, 1] += offset  # one row sums to 1 + offset (the others to 1 within rounding)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sk.log_loss(y, proba, labels=classes)
    scikit_learn_refuses = any("do not sum to one" in str(w.message) for w in caught)
    assert scikit_learn_refuses == (offset > 2.5e-8)  # rtol sqrt(eps) + atol 1e-8
    if scikit_learn_refuses:
        with pytest.raises(ValueError, match="1 rows of proba do not sum to 1 .row 5 sums"):
            log_loss(y, proba, classes)
    else:
        assert log_loss(y, proba, classes) == pytest.approx(sk.log_loss(y, proba, labels=classes))


def test_float32_probabilities_are_checked_at_float32_precision():
    """A float32 softmax over ten classes sums to 1 within float32's rounding (1e-7), which
    float64's tolerance (1.5e-8) refused on most rows; scikit-learn takes the tolerance
    from the probabilities' own dtype and scores them, and so does this module."""
    import warnings

    rng = np.random.default_rng(4)
    scores = rng.normal(size=(500, 10)).astype(np.float32)
    proba = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    classes = np.arange(10)
    y = rng.integers(0, 10, 500)
    assert not np.allclose(proba.astype(np.float64).sum(axis=1), 1.0, rtol=1.5e-8, atol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scikit-learn does not find the sums off either
        expected = sk.log_loss(y, proba, labels=classes)
    assert log_loss(y, proba, classes) == pytest.approx(expected, rel=1e-6)
    off = proba.copy()
    off[3, 0] += np.float32(1e-2)
    with pytest.raises(ValueError, match="row 3 sums"):
        log_loss(y, off, classes)


def reference_bin(confidence: float, n_bins: int) -> int:
    """The bin of a top-1 confidence by the documented rule, one comparison at a time:
    the first bin is [0, 1/n], bin b is (b/n, (b+1)/n] with b/n the double nearest it."""
    return sum(confidence > k / n_bins for k in range(1, n_bins))


@pytest.mark.parametrize("n_bins", [3, 7, 10, 20])
def test_ece_bins_at_their_edges(n_bins):
    """numpy.linspace(0, 1, 11) puts three edges one ulp above 0.3, 0.6 and 0.7, so a
    confidence of 0.1 + 0.2 = 0.30000000000000004 (> 0.3) fell into (0.2, 0.3]."""
    confidences = []
    for k in range(1, n_bins + 1):
        edge = k / n_bins
        confidences += [np.nextafter(edge, 0.0), edge, np.nextafter(edge, 2.0)]
    confidences += [0.1 + 0.2, 0.3, 0.6, 0.7, 3 * (1 / n_bins)]
    confidences = np.array([c for c in confidences if 1 / 41 < c <= 1.0])
    # one row per confidence: that value in column 0, the rest spread over 40 columns
    proba = np.empty((confidences.shape[0], 41))
    proba[:, 0] = confidences
    proba[:, 1:] = ((1.0 - confidences) / 40)[:, None]
    classes = np.arange(41)
    y = np.where(np.arange(confidences.shape[0]) % 3 == 0, 1, 0)  # some wrong
    expected_bin = np.array([reference_bin(c, n_bins) for c in confidences])
    count, confidence, accuracy_in_bin = reliability_bins(y, proba, classes, n_bins)
    assert count.tolist() == np.bincount(expected_bin, minlength=n_bins).tolist()
    correct = y == 0
    gaps = [
        np.sum(expected_bin == b)
        / len(y)
        * abs(correct[expected_bin == b].mean() - confidences[expected_bin == b].mean())
        for b in range(n_bins)
        if np.any(expected_bin == b)
    ]
    ece = expected_calibration_error(y, proba, classes, n_bins)
    assert ece == pytest.approx(sum(gaps), rel=1e-12, abs=1e-15)
    for b in range(n_bins):
        if np.any(expected_bin == b):
            assert confidence[b] == pytest.approx(confidences[expected_bin == b].mean())
            assert accuracy_in_bin[b] == pytest.approx(correct[expected_bin == b].mean())
