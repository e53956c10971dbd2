"""Parameter machinery the estimators share.

Every estimator declares its parameters in scikit-learn's ``_parameter_constraints``;
``sklearn.base._fit_context`` checks them all before ``fit`` does any work and raises
``InvalidParameterError`` (a ``ValueError`` and a ``TypeError``) naming the parameter. This
module adds the constraints scikit-learn does not spell (finite reals that are not bools,
the concentration interval, a vector of class probabilities, the group classifier's
``alphas``) and the one-release deprecation of positional parameters.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, TypeVar, cast

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, Options, StrOptions, validate_params
from sklearn.utils.metaestimators import available_if

from ._warnings import warn

__all__ = [
    "N_JOBS",
    "ClassProbabilities",
    "ConcentrationBounds",
    "Interval",
    "PriorConcentrations",
    "StrOptions",
    "StrictInterval",
    "fit_context",
    "keyword_only",
    "meta_fit_context",
    "offered_if",
    "validated_arguments",
]


def _is_number(value: object) -> bool:
    """A real number that is not a bool (``True`` is not a count, a rate or a bound)."""
    return isinstance(value, Real) and not isinstance(value, (bool, np.bool_))


class StrictInterval(Interval):
    """scikit-learn's ``Interval`` without bools and infinities.

    ``Interval(Real, 0, None)`` accepts ``True`` (a bool is an int) and ``inf``; neither is a
    meaningful concentration, count threshold or rate.
    """

    def is_satisfied_by(self, val: object) -> bool:
        if not _is_number(val):
            return False
        try:
            # math, not numpy: numpy makes an int beyond 64 bits an object and fails
            finite = math.isfinite(val)  # type: ignore[arg-type]
        except OverflowError:  # an int beyond the floats: no meaningful parameter
            return False
        return finite and bool(super().is_satisfied_by(val))

    def __str__(self) -> str:
        described = str(super().__str__())
        return (
            described if self.type is Integral else described.replace("a float", "a finite float")
        )


class _Predicate(Options):
    """Base of the constraints that are a check rather than a list of options.

    scikit-learn's ``make_constraint`` accepts only its own constraint classes, so these
    derive from ``Options`` (with no options) and override its check and description.
    """

    def __init__(self) -> None:
        super().__init__(object, set())

    def is_satisfied_by(self, val: object) -> bool:
        raise NotImplementedError

    def __str__(self) -> str:
        raise NotImplementedError


class ConcentrationBounds(_Predicate):
    """``concentration_bounds``: a pair of real numbers ``0 < low <= high < inf``."""

    def is_satisfied_by(self, val: object) -> bool:
        if not isinstance(val, (tuple, list, np.ndarray)) or len(val) != 2:
            return False
        if not all(_is_number(bound) for bound in val):
            return False
        low, high = float(val[0]), float(val[1])
        return 0.0 < low <= high < np.inf

    def __str__(self) -> str:
        return "a pair of real numbers (low, high) with 0 < low <= high < inf"


class ClassProbabilities(_Predicate):
    """``class_prior``: a 1-D array of non-negative finite probabilities summing to 1 (its
    length is checked against the classes once they are known, still before any counting)."""

    def is_satisfied_by(self, val: object) -> bool:
        if isinstance(val, (str, bytes, dict)):
            return False
        try:
            prior = np.asarray(val, dtype=np.float64)
        except (TypeError, ValueError):
            return False
        return bool(
            prior.ndim == 1
            and prior.size >= 1
            and np.all(np.isfinite(prior))
            and np.all(prior >= 0)
            and np.isclose(prior.sum(), 1.0)
        )

    def __str__(self) -> str:
        return "an array of class probabilities (non-negative, finite, summing to 1)"


class PriorConcentrations(_Predicate):
    """``alphas``: a dict of at least two classes, each mapped to a positive real, with a
    finite sum (a total beyond float64 would make every probability ``alpha / inf = 0``)."""

    def is_satisfied_by(self, val: object) -> bool:
        if not isinstance(val, dict) or len(val) < 2:
            return False
        values = list(val.values())
        if not all(_is_number(a) for a in values):
            return False
        prior = np.array([float(a) for a in values])
        with np.errstate(over="ignore"):
            total = prior.sum()
        return bool(np.all(np.isfinite(prior) & (prior > 0)) and np.isfinite(total))

    def __str__(self) -> str:
        return "a dict of at least two classes, each mapped to a positive real, with a finite sum"


#: scikit-learn's ``n_jobs``: None (one thread), a positive count, or -1, -2, ... (all
#: cores, all but one, ...). Zero and bools are refused.
N_JOBS: list[object] = [
    StrictInterval(Integral, None, -1, closed="right"),
    StrictInterval(Integral, 1, None, closed="left"),
    None,
]

InitT = TypeVar("InitT", bound=Callable[..., None])
MethodT = TypeVar("MethodT", bound=Callable[..., Any])


def fit_context(method: MethodT) -> MethodT:
    """scikit-learn's ``_fit_context`` for ``fit`` and ``partial_fit``: every parameter is
    checked against ``_parameter_constraints`` before the method runs (for ``partial_fit``
    only while the model is unfitted), and nested scikit-learn calls skip their checks."""
    return cast(MethodT, _fit_context(prefer_skip_nested_validation=True)(method))


def offered_if(check: Callable[[Any], bool]) -> Callable[[MethodT], MethodT]:
    """scikit-learn's ``available_if``, typed: the method exists on an instance only
    while ``check(instance)`` holds (an ``AttributeError`` it raises says why not)."""
    return cast(Callable[[MethodT], MethodT], available_if(check))


def validated_arguments(constraints: dict[str, list[Any]]) -> Callable[[MethodT], MethodT]:
    """scikit-learn's ``validate_params`` for a public function, typed: each argument is
    checked against its constraints before the call, and named in the error."""
    return cast(
        Callable[[MethodT], MethodT],
        validate_params(constraints, prefer_skip_nested_validation=True),
    )


def meta_fit_context(method: MethodT) -> MethodT:
    """``fit_context`` for an estimator made of estimators the user passes (``MixedNB``):
    their parameters are checked too when they are fitted inside."""
    return cast(MethodT, _fit_context(prefer_skip_nested_validation=False)(method))


def keyword_only(*names: str, removed_in: str) -> Callable[[InitT], InitT]:
    """Lets an ``__init__`` whose parameters are keyword-only still take ``names``
    positionally, in that order, with a ``FutureWarning``, until version ``removed_in``.

    The wrapped function keeps its keyword-only signature (``inspect.signature`` follows
    ``__wrapped__``), which is what ``get_params`` and ``clone`` read.
    """

    def decorate(init: InitT) -> InitT:
        parameters = inspect.signature(init).parameters
        unknown = [name for name in names if name not in parameters]
        if unknown:
            raise TypeError(f"{init.__qualname__} has no parameters {unknown}")

        @functools.wraps(init)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
            if len(args) > len(names):
                raise TypeError(
                    f"{type(self).__name__}() takes at most {len(names)} positional "
                    f"argument(s) ({', '.join(names)}), got {len(args)}"
                )
            passed = names[: len(args)]
            for name in passed:
                if name in kwargs:
                    raise TypeError(f"{type(self).__name__}() got multiple values for {name!r}")
            if args:
                spelled = ", ".join(f"{name}={value!r}" for name, value in zip(passed, args))
                warn(
                    f"Passing {', '.join(passed)} positionally to {type(self).__name__} is "
                    f"deprecated and stops working in hebnb {removed_in}: write "
                    f"{type(self).__name__}({spelled}).",
                    FutureWarning,
                )
            init(self, **dict(zip(passed, args)), **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
