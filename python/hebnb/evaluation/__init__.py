"""The paper's evaluation protocol as a library: cross-validated metrics, Friedman ranks,
Nemenyi critical differences, Wilcoxon tests, reliability and CD diagrams.

>>> from hebnb.evaluation import evaluate, write_report          # doctest: +SKIP
>>> result = evaluate("data.csv", target="class", methods="laplace,heb-m")  # doctest: +SKIP
>>> write_report(result, "results/")                              # doctest: +SKIP
"""

from .methods import METHODS, PAPER_SMOOTHERS, available_methods, make_estimator
from .protocol import DataError
from .report import rank_analysis, summarise, write_report
from .runner import (
    DEFAULT_METHODS,
    EvaluationResult,
    evaluate,
    evaluate_suite,
    prepare_dataset,
    run_protocol,
)
from .statistics import friedman_nemenyi, nemenyi_critical_difference, paired_wilcoxon

__all__ = [
    "DEFAULT_METHODS", "METHODS", "PAPER_SMOOTHERS", "DataError", "EvaluationResult",
    "available_methods", "evaluate", "evaluate_suite", "friedman_nemenyi",
    "make_estimator", "nemenyi_critical_difference", "paired_wilcoxon", "prepare_dataset",
    "rank_analysis", "run_protocol", "summarise", "write_report",
]
