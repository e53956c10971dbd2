"""Friedman ranks, Nemenyi CD and Wilcoxon on small hand-made tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hebnb.evaluation.statistics import (
    friedman_nemenyi,
    nemenyi_critical_difference,
    paired_wilcoxon,
    rank_table,
)

# accuracy of three methods on four datasets
SCORES = pd.DataFrame(
    {"A": [0.90, 0.80, 0.70, 0.60], "B": [0.85, 0.80, 0.75, 0.50], "C": [0.80, 0.70, 0.60, 0.55]},
    index=["d1", "d2", "d3", "d4"],
)


def test_ranks_by_hand():
    ranks = rank_table(SCORES, higher_is_better=True)
    # d1: A 1, B 2, C 3; d2: A and B tie for 1-2 (1.5 each), C 3; d3: B 1, A 2, C 3;
    # d4: A 1, C 2, B 3
    expected = [[1, 2, 3], [1.5, 1.5, 3], [2, 1, 3], [1, 3, 2]]
    np.testing.assert_array_equal(ranks.to_numpy(), expected)
    # lower is better flips the order
    np.testing.assert_array_equal(rank_table(SCORES, higher_is_better=False).iloc[0], [3, 2, 1])


def test_friedman_mean_ranks_and_p_value():
    result = friedman_nemenyi(SCORES, higher_is_better=True)
    assert result.mean_ranks.to_dict() == pytest.approx({"A": 1.375, "B": 1.875, "C": 2.75})
    assert list(result.mean_ranks.index) == ["A", "B", "C"]  # best first
    # Friedman chi-square with the tie correction, by hand:
    # sum of squared rank sums = 5.5^2 + 7.5^2 + 11^2 = 207.5, N = 4, k = 3
    # uncorrected: 12 / (N k (k + 1)) * 207.5 - 3 N (k + 1) = 3.875; ties: one pair in d2
    # -> divide by 1 - sum(t^3 - t) / (N (k^3 - k)) = 1 - 6 / 96
    assert result.statistic == pytest.approx(3.875 / (1 - 6 / 96))
    assert 0 < result.p_value < 1
    assert result.n_datasets == 4
    assert result.nemenyi_p.loc["A", "A"] == 1.0
    assert result.nemenyi_p.loc["A", "C"] == pytest.approx(result.nemenyi_p.loc["C", "A"])


def test_datasets_with_a_missing_score_are_left_out():
    scores = SCORES.copy()
    scores.loc["d5"] = [0.5, np.nan, 0.4]
    assert friedman_nemenyi(scores, higher_is_better=True).n_datasets == 4


def test_nemenyi_critical_difference_matches_the_paper():
    # the paper: k = 7 methods, N = 31 datasets, CD = 1.62 (Demsar's q_0.05 = 2.949)
    assert nemenyi_critical_difference(7, 31) == pytest.approx(1.62, abs=0.005)


def test_paired_wilcoxon_counts_and_drops_ties():
    result = paired_wilcoxon(SCORES, "A", "B", higher_is_better=True)
    assert (result.first_wins, result.second_wins, result.ties) == (2, 1, 1)
    assert 0 < result.p_value <= 1
    lower = paired_wilcoxon(SCORES, "A", "B", higher_is_better=False)
    assert (lower.first_wins, lower.second_wins) == (1, 2)


def test_a_method_that_failed_on_some_folds_of_a_dataset_leaves_it_out_of_the_ranks():
    """Its mean over fewer folds is not comparable: the dataset drops out of Friedman,
    Nemenyi and Wilcoxon, and the mean ± std table says how many folds failed."""
    from hebnb.evaluation.report import (
        RANKED_METRICS,
        comparable_scores,
        mean_std_table,
        rank_analysis,
    )

    rows = []
    for d, dataset in enumerate(["d0", "d1", "d2", "d3"]):
        for method, score, failed in (("a", 0.5, 0), ("b", 0.4 - 0.3 * (d == 0), 2 * (d == 0))):
            row = {"dataset": dataset, "method": method, "failed_folds": failed}
            for metric in RANKED_METRICS:
                row[metric] = score + 0.01 * d
                row[f"{metric}_std"] = 0.01
            rows.append(row)
    summary = pd.DataFrame(rows)
    scores = comparable_scores(summary, "log_loss", ["a", "b"])
    assert np.isnan(scores.loc["d0", "b"]) and scores.loc["d0", "a"] == 0.5
    analysis = rank_analysis(summary, ["a", "b"])["log_loss"]
    assert analysis.n_datasets == 3
    # on the three complete datasets b (lower log-loss) is always first
    assert analysis.mean_ranks["b"] == 1.0
    table = mean_std_table(summary, "log_loss", ["a", "b"])
    assert table.iloc[0, 1] == "0.1000 ± 0.0100 (2 folds failed)"
    assert "failed" not in table.iloc[1, 1]


def test_paired_wilcoxon_refuses_one_method_against_itself_and_unknown_methods():
    """``paired_wilcoxon(scores, "a", "a")`` counted every dataset twice as a tie (12 ties
    over 6 datasets) and gave p = NaN instead of saying that there is no pair."""
    with pytest.raises(ValueError, match="compares two methods; got 'A' twice"):
        paired_wilcoxon(SCORES, "A", "A", higher_is_better=True)
    with pytest.raises(ValueError, match="no scores of 'Z'; the methods are: A, B, C"):
        paired_wilcoxon(SCORES, "A", "Z", higher_is_better=True)


@pytest.mark.parametrize("alpha", [0.0, 1.0, 1.5, -0.05, float("nan"), True, "0.05"])
def test_a_significance_level_outside_zero_one_is_refused(alpha):
    """alpha = 0 gave an infinite CD, 1 or more and NaN a NaN one; rank_analysis, which
    leaves out the metrics an analysis is impossible for, dropped every metric."""
    from hebnb.evaluation.report import rank_analysis

    with pytest.raises(ValueError, match="alpha must be a number between 0 and 1"):
        nemenyi_critical_difference(3, 10, alpha)
    with pytest.raises(ValueError, match="alpha must be a number between 0 and 1"):
        friedman_nemenyi(SCORES, higher_is_better=True, alpha=alpha)
    summary = SCORES.stack().rename("accuracy").rename_axis(["dataset", "method"]).reset_index()
    for metric in ("f1_macro", "log_loss", "brier", "auc_ovr", "ece"):
        summary[metric] = summary["accuracy"]
    summary["failed_folds"] = 0
    assert set(rank_analysis(summary, ["A", "B", "C"], 0.05)) >= {"accuracy", "ece"}
    with pytest.raises(ValueError, match="alpha must be a number between 0 and 1"):
        rank_analysis(summary, ["A", "B", "C"], alpha)


@pytest.mark.parametrize(
    ("n_methods", "n_datasets", "message"),
    [
        (1, 10, "n_methods must be an integer of at least 2, got 1"),
        (0, 10, "n_methods must be an integer of at least 2, got 0"),
        (3, 0, "n_datasets must be an integer of at least 1, got 0"),
        (3, -2, "n_datasets must be an integer of at least 1, got -2"),
        (3.5, 10, "n_methods must be an integer"),
    ],
)
def test_nemenyi_critical_difference_refuses_sizes_without_a_test(n_methods, n_datasets, message):
    """One method gave NaN, no dataset a ZeroDivisionError."""
    with pytest.raises(ValueError, match=message):
        nemenyi_critical_difference(n_methods, n_datasets)


@pytest.mark.parametrize(("n_methods", "q_alpha"), [(2, 1.960), (3, 2.343), (10, 3.164)])
def test_the_smallest_sizes_give_demsars_critical_difference(n_methods, q_alpha):
    # Demsar (2006), table 5(a): q_0.05; one dataset is the smallest N with a CD
    for n_datasets in (1, np.int64(4)):
        expected = q_alpha * np.sqrt(n_methods * (n_methods + 1) / (6.0 * n_datasets))
        assert nemenyi_critical_difference(n_methods, n_datasets) == pytest.approx(
            expected, rel=1e-3
        )
