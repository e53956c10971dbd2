"""The paper's evaluation protocol as a library: cross-validated metrics, Friedman ranks,
Nemenyi critical differences, Wilcoxon tests, reliability and CD diagrams.

The statistics and the report need the ``evaluate`` extra (scikit-posthocs,
matplotlib); they are imported on first use, so the protocol and the method registry
work without it.

>>> from hebnb.evaluation import evaluate, write_report          # doctest: +SKIP
>>> result = evaluate("data.csv", target="class", methods="laplace,heb-m")  # doctest: +SKIP
>>> write_report(result, "results/")                              # doctest: +SKIP
"""

from importlib import import_module

from .methods import METHODS, PAPER_SMOOTHERS, make_estimator
from .protocol import DataError
from .runner import (
    DEFAULT_METHODS,
    EvaluationResult,
    evaluate,
    evaluate_suite,
    prepare_dataset,
    run_protocol,
)

#: Names served lazily: name -> the submodule that defines it.
_LAZY = {
    "rank_analysis": "report",
    "read_result": "report",
    "summarise": "report",
    "write_report": "report",
    "friedman_nemenyi": "statistics",
    "nemenyi_critical_difference": "statistics",
    "paired_wilcoxon": "statistics",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_METHODS",
    "METHODS",
    "PAPER_SMOOTHERS",
    "DataError",
    "EvaluationResult",
    "evaluate",
    "evaluate_suite",
    "friedman_nemenyi",
    "make_estimator",
    "nemenyi_critical_difference",
    "paired_wilcoxon",
    "prepare_dataset",
    "rank_analysis",
    "read_result",
    "run_protocol",
    "summarise",
    "write_report",
]
