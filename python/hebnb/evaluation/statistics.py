"""Comparing methods over several datasets (Demsar 2006), with scipy and scikit-posthocs.

- Friedman ranks: on every dataset the methods are ranked, 1 = best, ties sharing the
  mean rank; the mean rank per method summarises a metric over datasets.
- Friedman omnibus test: ``scipy.stats.friedmanchisquare``.
- Nemenyi post-hoc test: pairwise p-values from ``scikit_posthocs.posthoc_nemenyi_friedman``
  and the critical difference CD = q_alpha sqrt(k (k + 1) / (6 N)), q_alpha the
  studentized-range quantile for k methods over sqrt(2).
- Two methods: the paired Wilcoxon signed-rank test (``scipy.stats.wilcoxon``), tied
  datasets dropped (``zero_method="wilcox"``), as in the paper.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scikit_posthocs
from scipy import stats


def complete_blocks(scores: pd.DataFrame) -> pd.DataFrame:
    """The datasets (rows) where every method (column) has a finite score."""
    complete: pd.DataFrame = scores[np.isfinite(scores.to_numpy(dtype=float)).all(axis=1)]
    return complete


def rank_table(scores: pd.DataFrame, higher_is_better: bool) -> pd.DataFrame:
    """Rank of every method on every dataset (1 = best; ties get their mean rank).

    Parameters
    ----------
    scores : DataFrame of shape (n_datasets, n_methods)
        One score per dataset (row) and method (column).
    higher_is_better : bool
        Whether a larger score is better (accuracy) or worse (log-loss).
    """
    oriented = -scores if higher_is_better else scores
    ranks: np.ndarray = stats.rankdata(oriented.to_numpy(dtype=float), axis=1)
    table: pd.DataFrame = pd.DataFrame(ranks, index=scores.index, columns=scores.columns)
    return table


def check_alpha(alpha: float) -> float:
    """The significance level as a float, or a ValueError when it is not a number in
    (0, 1) (0 gave an infinite CD, 1 or more and NaN a NaN one)."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be a number between 0 and 1 (exclusive), got {alpha!r}")
    return float(alpha)


def nemenyi_critical_difference(n_methods: int, n_datasets: int, alpha: float = 0.05) -> float:
    """CD = q_alpha sqrt(k (k + 1) / (6 N)) of the Nemenyi test (Demsar 2006, eq. 5).

    Raises
    ------
    ValueError
        Fewer than two methods (no pair to compare: NaN), fewer than one dataset (a
        division by zero), or ``alpha`` outside (0, 1).
    """
    for name, value, least in (("n_methods", n_methods, 2), ("n_datasets", n_datasets, 1)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
            raise ValueError(f"{name} must be an integer of at least {least}, got {value!r}")
    alpha = check_alpha(alpha)
    q_alpha = stats.studentized_range.ppf(1.0 - alpha, n_methods, np.inf) / np.sqrt(2.0)
    return float(q_alpha * np.sqrt(n_methods * (n_methods + 1) / (6.0 * n_datasets)))


@dataclass
class FriedmanResult:
    """Friedman-Nemenyi analysis of one metric.

    Attributes
    ----------
    mean_ranks : Series
        Mean rank per method over the datasets used (1 = best), sorted best first.
    statistic, p_value : float
        Friedman chi-square and its p-value (NaN with fewer than three methods).
    critical_difference : float
        Nemenyi CD at ``alpha``: mean ranks further apart differ significantly.
    nemenyi_p : DataFrame
        Pairwise Nemenyi p-values (methods x methods).
    n_datasets : int
        Datasets with a finite score for every method (the others are left out).
    alpha : float
    """

    mean_ranks: pd.Series
    statistic: float
    p_value: float
    critical_difference: float
    nemenyi_p: pd.DataFrame
    n_datasets: int
    alpha: float


def friedman_nemenyi(
    scores: pd.DataFrame, higher_is_better: bool, alpha: float = 0.05
) -> FriedmanResult:
    """Mean ranks, Friedman test and Nemenyi post-hoc test of one metric.

    Parameters
    ----------
    scores : DataFrame of shape (n_datasets, n_methods)
    higher_is_better : bool
    alpha : float, default=0.05

    Raises
    ------
    ValueError
        Fewer than two methods, fewer than two datasets with complete scores, or
        ``alpha`` outside (0, 1).
    """
    alpha = check_alpha(alpha)
    blocks = complete_blocks(scores)
    n_datasets, n_methods = blocks.shape
    if n_methods < 2 or n_datasets < 2:
        raise ValueError(
            f"a rank analysis needs two methods and two datasets, got {n_methods} and {n_datasets}"
        )
    mean_ranks = rank_table(blocks, higher_is_better).mean().sort_values()
    if n_methods >= 3:
        columns = [blocks[name].to_numpy(dtype=float) for name in blocks.columns]
        statistic, p_value = stats.friedmanchisquare(*columns)
    else:
        statistic, p_value = np.nan, np.nan
    nemenyi = scikit_posthocs.posthoc_nemenyi_friedman(blocks.to_numpy(dtype=float))
    nemenyi.index = nemenyi.columns = blocks.columns
    return FriedmanResult(
        mean_ranks=mean_ranks,
        statistic=float(statistic),
        p_value=float(p_value),
        critical_difference=nemenyi_critical_difference(n_methods, n_datasets, alpha),
        nemenyi_p=nemenyi,
        n_datasets=n_datasets,
        alpha=alpha,
    )


@dataclass
class WilcoxonResult:
    """Paired Wilcoxon signed-rank test of method ``first`` against ``second``.

    Attributes
    ----------
    first, second : str
    first_wins, second_wins, ties : int
        Datasets where each method scores better, and where they are equal.
    p_value : float
        Two-sided p-value over the untied datasets (NaN when all are tied).
    """

    first: str
    second: str
    first_wins: int
    second_wins: int
    ties: int
    p_value: float


def paired_wilcoxon(
    scores: pd.DataFrame, first: str, second: str, higher_is_better: bool
) -> WilcoxonResult:
    """Wins, losses and the Wilcoxon signed-rank p-value of two methods over datasets.

    Raises
    ------
    ValueError
        ``first`` and ``second`` are the same method (every dataset a tie: nothing to
        test), or one of them is not a column of ``scores``.
    """
    if first == second:
        raise ValueError(f"paired_wilcoxon compares two methods; got {first!r} twice")
    missing = [name for name in (first, second) if name not in scores.columns]
    if missing:
        raise ValueError(
            f"no scores of {', '.join(map(repr, missing))}; the methods are: "
            f"{', '.join(map(str, scores.columns))}"
        )
    blocks = complete_blocks(scores[[first, second]])
    difference = blocks[first].to_numpy(dtype=float) - blocks[second].to_numpy(dtype=float)
    if not higher_is_better:
        difference = -difference
    first_wins = int(np.sum(difference > 0))
    second_wins = int(np.sum(difference < 0))
    ties = int(np.sum(difference == 0))
    if first_wins + second_wins == 0:
        p_value = np.nan
    else:
        p_value = stats.wilcoxon(difference, zero_method="wilcox").pvalue
    return WilcoxonResult(first, second, first_wins, second_wins, ties, float(p_value))
