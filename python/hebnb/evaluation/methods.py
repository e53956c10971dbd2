"""Method names of the evaluation -> the estimators they build.

The Naive Bayes smoothers are :class:`hebnb.CategoricalNB` with the paper's settings
(Lidstone alpha = 0.1, m-estimate m = 2, target encoding k0 = 10). Other values are
written ``NAME:VALUE`` (``lidstone:0.01``, ``m-estimate:5``, ``target-encoding:20``), as
for the paper's Lidstone sweep (Table 6). AODE, HEB-AODE and the feature-weighted
variants (CAWNB, HEB-M+GR) complete the registry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._base import CategoricalClassifier
from .._text import NaiveBayesClassifier
from ..aode import AODE
from ..bernoulli import BernoulliNB
from ..multinomial import ComplementNB, MultinomialNB
from ..naive_bayes import CategoricalNB
from .protocol import comma_separated


class UnknownMethodError(ValueError):
    """A method name that is not in :data:`METHODS`."""


@dataclass(frozen=True)
class Method:
    """One evaluated method.

    Attributes
    ----------
    name : str
        The name used on the command line and in the results.
    label : str
        How reports and plots show it (with the fixed parameters).
    estimator : str
        ``"CategoricalNB"`` or ``"AODE"``: the hebnb class to build.
    params : dict
        Constructor keyword arguments.
    """

    name: str
    label: str
    estimator: str
    params: dict[str, Any] = field(default_factory=dict)


METHODS = {
    method.name: method
    for method in (
        Method("laplace", "Laplace (alpha=1)", "CategoricalNB", {"smoothing": "laplace"}),
        Method(
            "lidstone",
            "Lidstone (alpha=0.1)",
            "CategoricalNB",
            {"smoothing": "lidstone", "alpha": 0.1},
        ),
        Method("kt", "KT (alpha=0.5)", "CategoricalNB", {"smoothing": "kt"}),
        Method(
            "m-estimate",
            "m-estimate (m=2)",
            "CategoricalNB",
            {"smoothing": "m-estimate", "m": 2.0},
        ),
        Method(
            "target-encoding",
            "TE (k0=10)",
            "CategoricalNB",
            {"smoothing": "target-encoding", "m": 10.0},
        ),
        Method("heb-u", "HEB-U", "CategoricalNB", {"smoothing": "heb-u"}),
        Method("heb-m", "HEB-M", "CategoricalNB", {"smoothing": "heb-m"}),
        Method(
            "cawnb",
            "CAWNB (Laplace + sqrt-MI)",
            "CategoricalNB",
            {"smoothing": "laplace", "feature_weighting": "sqrt-mi"},
        ),
        Method(
            "heb-m+gr",
            "HEB-M+GR (HEB-M + sqrt-MI)",
            "CategoricalNB",
            {"smoothing": "heb-m", "feature_weighting": "sqrt-mi"},
        ),
        Method(
            "heb-m-posterior",
            "HEB-M, posterior-averaged concentration",
            "CategoricalNB",
            {"smoothing": "heb-m", "concentration_estimate": "posterior-average"},
        ),
        Method(
            "heb-m+cll-feature",
            "HEB-M + CLL feature weights (WANBIA-C)",
            "CategoricalNB",
            {"smoothing": "heb-m", "weighting": "cll-feature"},
        ),
        Method(
            "heb-m+cll-value",
            "HEB-M + CLL value weights (ALR)",
            "CategoricalNB",
            {"smoothing": "heb-m", "weighting": "cll-value"},
        ),
        Method(
            "laplace+cll-value",
            "Laplace + CLL value weights (ALR)",
            "CategoricalNB",
            {"smoothing": "laplace", "weighting": "cll-value"},
        ),
        Method("aode", "AODE", "AODE", {"smoothing": "laplace", "parent_smoothing": "laplace"}),
        Method("heb-aode", "HEB-AODE", "AODE", {"smoothing": "heb", "parent_smoothing": "laplace"}),
        Method(
            "heb-aode-eb-parent",
            "HEB-AODE, empirical-Bayes parent term",
            "AODE",
            {"smoothing": "heb", "parent_smoothing": "heb"},
        ),
        Method(
            "heb-aode+cll-feature",
            "HEB-AODE (EB parent term) + CLL super-parent weights",
            "AODE",
            {"smoothing": "heb", "parent_smoothing": "heb", "weighting": "cll-feature"},
        ),
        Method(
            "heb-aode+cll-value",
            "HEB-AODE (EB parent term) + CLL super-parent and cell weights (ALR)",
            "AODE",
            {"smoothing": "heb", "parent_smoothing": "heb", "weighting": "cll-value"},
        ),
        Method(
            "aode+cll-value",
            "AODE (Laplace child tables, EB parent term) + CLL super-parent and cell weights",
            "AODE",
            {"smoothing": "laplace", "parent_smoothing": "heb", "weighting": "cll-value"},
        ),
        Method(
            "aode+cll-value+counts",
            "AODE (Laplace child tables, EB parent term) + CLL cell and count weights",
            "AODE",
            {
                "smoothing": "laplace",
                "parent_smoothing": "heb",
                "weighting": "cll-value",
                "count_features": True,
            },
        ),
        Method(
            "aode-capped",
            "AODE (paper's cap)",
            "AODE",
            {
                "smoothing": "laplace",
                "parent_smoothing": "laplace",
                "max_parent_cardinality": 200,
                "max_joint_cells": 50_000_000,
            },
        ),
        Method(
            "heb-aode-paper",
            "HEB-AODE (paper's prior and cap)",
            "AODE",
            {
                "smoothing": "heb",
                "prior": "pooled",
                "parent_smoothing": "laplace",
                "max_parent_cardinality": 200,
                "max_joint_cells": 50_000_000,
            },
        ),
    )
}

#: Methods on token counts (``hebnb evaluate --text COLUMN``: a CountVectorizer fitted
#: on each training fold turns the text column into counts).
TEXT_METHODS = {
    method.name: method
    for method in (
        Method("mnb-heb-m", "MultinomialNB HEB-M", "MultinomialNB", {"smoothing": "heb-m"}),
        Method("mnb-heb-u", "MultinomialNB HEB-U", "MultinomialNB", {"smoothing": "heb-u"}),
        Method(
            "mnb-laplace",
            "MultinomialNB Laplace (alpha=1)",
            "MultinomialNB",
            {"smoothing": "laplace"},
        ),
        Method(
            "mnb-lidstone",
            "MultinomialNB Lidstone (alpha=0.1)",
            "MultinomialNB",
            {"smoothing": "lidstone", "alpha": 0.1},
        ),
        Method("cnb-heb-m", "ComplementNB HEB-M", "ComplementNB", {"smoothing": "heb-m"}),
        Method(
            "cnb-laplace",
            "ComplementNB Laplace (alpha=1)",
            "ComplementNB",
            {"smoothing": "laplace"},
        ),
        Method("bnb-heb-m", "BernoulliNB HEB-M", "BernoulliNB", {"smoothing": "heb-m"}),
        Method(
            "bnb-laplace", "BernoulliNB Laplace (alpha=1)", "BernoulliNB", {"smoothing": "laplace"}
        ),
    )
}
METHODS.update(TEXT_METHODS)

#: The classes ``Method.estimator`` names.
ESTIMATORS: dict[str, type[CategoricalClassifier | NaiveBayesClassifier]] = {
    "CategoricalNB": CategoricalNB,
    "AODE": AODE,
    "MultinomialNB": MultinomialNB,
    "ComplementNB": ComplementNB,
    "BernoulliNB": BernoulliNB,
}

#: Methods whose fixed parameter can be set as ``NAME:VALUE``: name -> parameter.
TUNABLE = {"lidstone": "alpha", "m-estimate": "m", "target-encoding": "m", "mnb-lidstone": "alpha"}

#: The seven smoothers of the paper's main Friedman-Nemenyi comparison (Table 1).
PAPER_SMOOTHERS = (
    "heb-m",
    "heb-u",
    "lidstone",
    "m-estimate",
    "kt",
    "laplace",
    "target-encoding",
)


def resolve_method(name: str) -> Method:
    """The :class:`Method` of a name: a key of :data:`METHODS` or ``NAME:VALUE``.

    Raises
    ------
    UnknownMethodError
        Neither a known name nor a valid ``NAME:VALUE`` of :data:`TUNABLE`.
    """
    if name in METHODS:
        return METHODS[name]
    base, _, value = name.partition(":")
    if base in TUNABLE and value:
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not number > 0 or number == float("inf"):
            raise UnknownMethodError(f"method {name!r}: {value!r} is not a positive number")
        parameter = TUNABLE[base]
        template = METHODS[base]
        # the shortest text that gives the number back: two values never share a label
        # (and the default's value is the default method: check_methods keeps one of them)
        shown = repr(number).removesuffix(".0")
        label = template.label.split(" (")[0] + f" ({parameter}={shown})"
        return Method(name, label, template.estimator, {**template.params, parameter: number})
    raise UnknownMethodError(
        f"unknown method(s): {name}; known: {', '.join(METHODS)}, or {'/'.join(TUNABLE)}:VALUE"
    )


def settings_of(method: Method) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """What a method fits: its estimator and constructor arguments (``lidstone`` and
    ``lidstone:0.10`` give the same)."""
    return method.estimator, tuple(sorted(method.params.items()))


def check_methods(names: str | Sequence[str]) -> list[str]:
    """Validates method names (a list or a comma-separated string); returns the list.

    Names of one method are kept once, under the first of them: a name given twice, and
    names that give the same settings (``lidstone``, ``lidstone:0.1`` and
    ``lidstone:0.10``; ``m-estimate`` and ``m-estimate:2``), which would be fitted twice
    and share a label in the report's tables and plots.

    Raises
    ------
    UnknownMethodError
        A name is not in :data:`METHODS` (the message lists the known ones).
    """
    if isinstance(names, str):
        names = comma_separated(names)
    unique = list(dict.fromkeys(names))
    if not unique:
        raise UnknownMethodError("no method given")
    unknown = [
        name for name in unique if name not in METHODS and name.partition(":")[0] not in TUNABLE
    ]
    if unknown:
        raise UnknownMethodError(
            f"unknown method(s): {', '.join(unknown)}; known: {', '.join(METHODS)}, or "
            f"{'/'.join(TUNABLE)}:VALUE"
        )
    first_of_settings: dict[tuple[str, tuple[tuple[str, Any], ...]], str] = {}
    for name in unique:  # NAME:VALUE must carry a positive number
        first_of_settings.setdefault(settings_of(resolve_method(name)), name)
    return list(first_of_settings.values())


def make_estimator(name: str, **overrides: Any) -> CategoricalClassifier | NaiveBayesClassifier:
    """A new, unfitted estimator for a method name.

    Parameters
    ----------
    name : str
        A key of :data:`METHODS`, or ``NAME:VALUE`` for a method of :data:`TUNABLE`.
    **overrides
        Constructor arguments to add or replace (for example ``n_jobs``).
    """
    check_methods([name])
    method = resolve_method(name)
    return ESTIMATORS[method.estimator](**{**method.params, **overrides})
