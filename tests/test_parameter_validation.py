"""Every parameter is checked by scikit-learn's machinery before any work, bad values are
refused naming the parameter, and the keyword-only signature keeps positional
``smoothing`` working for one release with a FutureWarning."""

from __future__ import annotations

import inspect
import os

import numpy as np
import pandas as pd
import pytest
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_param_validation

from hebnb import (
    AODE,
    BernoulliNB,
    CategoricalNB,
    ComplementNB,
    EmpiricalBayesDirichletClassifier,
    GaussianNB,
    MixedNB,
    MultinomialNB,
)
from hebnb._base import n_threads

X = np.random.default_rng(3).integers(0, 3, size=(80, 2))
y = (X[:, 0] == 1).astype(int) ^ (np.arange(80) % 5 == 0)
ESTIMATORS = [CategoricalNB, AODE]


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(
    "params, message",
    [
        # "no" is truthy: only a bool may set fit_prior
        ({"fit_prior": "no"}, "'fit_prior' parameter"),
        ({"fit_prior": None}, "'fit_prior' parameter"),
        ({"fit_prior": 0}, "'fit_prior' parameter"),
        ({"class_prior": "ab"}, "'class_prior' parameter"),
        # bools, strings and a dict (read by its keys) are not pairs of reals
        ({"concentration_bounds": (True, 2.0)}, "pair of real numbers"),
        ({"concentration_bounds": (1.0, "2")}, "pair of real numbers"),
        ({"concentration_bounds": {1.0: 1, 2.0: 2}}, "pair of real numbers"),
        ({"n_jobs": True}, "'n_jobs' parameter"),
    ],
)
def test_invalid_parameters_are_named(estimator, params, message):
    with pytest.raises(ValueError, match=message):
        estimator(**params).fit(X, y)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_valid_spellings_still_fit(estimator):
    reference = estimator().fit(X, y).predict_proba(X)
    for params in (
        {"fit_prior": np.True_},
        {"concentration_bounds": [1e-2, 1e4]},
        {"concentration_bounds": np.array([1e-2, 1e4])},
        {"concentration_bounds": (np.float32(1e-2), 10_000)},
    ):
        proba = estimator(**params).fit(X, y).predict_proba(X)
        np.testing.assert_allclose(proba, reference, rtol=1e-6)


def test_partial_fit_checks_parameters_changed_mid_stream():
    """Every partial_fit call checks the parameters (set_params may change them between
    calls), and a refused batch adds nothing."""
    model = CategoricalNB().partial_fit(X[:40], y[:40])
    before = model.predict_proba(X)
    model.set_params(smoothing="bogus")
    with pytest.raises(ValueError, match="'smoothing' parameter"):
        model.partial_fit(X[40:], y[40:])
    model.set_params(smoothing="heb-m", min_count=-5)
    with pytest.raises(ValueError, match="'min_count' parameter"):
        model.partial_fit(X[40:], y[40:])
    np.testing.assert_array_equal(model.predict_proba(X), before)  # nothing was added


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_handle_unknown_changed_after_fit_is_checked_at_predict(estimator):
    """set_params(handle_unknown="bogus") after fit is refused at predict, not read as
    "ignore"."""
    model = estimator().fit(X, y).set_params(handle_unknown="bogus")
    with pytest.raises(ValueError, match="handle_unknown must be one of"):
        model.predict(X + 10)


def test_thread_count_never_exceeds_the_cores():
    """The core keeps one thread pool per count, so n_jobs=2000 must not start 2000
    threads; results do not depend on the count, so more threads than cores buy nothing."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert n_threads(2000) <= max(cores, 1)
    assert n_threads(None) == 1
    assert n_threads(-1) >= 1
    many = CategoricalNB(n_jobs=2000).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(many, CategoricalNB().fit(X, y).predict_proba(X))


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(
    "classes, message",
    [
        ([0, 1, None], "missing labels"),
        ([0.0, 1.0, np.nan], "missing labels"),
        (pd.to_datetime(["2020", "2021", None]), "missing labels"),
        # numpy made these the strings '0', '1', 'a', so the integer labels never matched
        ([0, 1, "a"], "mixes strings and numbers"),
        (np.array([0, 1, "a"], dtype=object), "cannot be ordered"),
        ([[0, 1]], "1-D array"),
    ],
)
def test_partial_fit_checks_the_declared_classes(estimator, classes, message):
    with pytest.raises(ValueError, match=message):
        estimator().partial_fit(X, y, classes=classes)


# scikit-learn's parameter machinery -------------------------------------------------


ALL_ESTIMATORS = [
    CategoricalNB(),
    AODE(),
    EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}),
    MultinomialNB(),
    ComplementNB(),
    BernoulliNB(),
    GaussianNB(),
    MixedNB(),
]


@pytest.mark.parametrize("estimator", ALL_ESTIMATORS, ids=lambda e: type(e).__name__)
def test_every_parameter_is_declared_and_keyword_only(estimator):
    """``_parameter_constraints`` names exactly the constructor's parameters, and every
    parameter with a default is keyword-only (``alphas``, required, stays positional)."""
    assert set(estimator._parameter_constraints) == set(estimator.get_params(deep=False))
    signature = inspect.signature(type(estimator).__init__)
    for name, parameter in signature.parameters.items():
        if name == "self" or parameter.default is inspect.Parameter.empty:
            continue
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, name


@pytest.mark.parametrize(
    "estimator, params",
    [
        (CategoricalNB, {"fit_prior": "no"}),
        (CategoricalNB, {"class_prior": [0.2, 0.2]}),
        (CategoricalNB, {"class_prior": [0.2, 0.3, 0.5]}),  # three priors for two classes
        (CategoricalNB, {"learning_rate": 0.0}),
        (CategoricalNB, {"feature_weighting": "mi"}),
        (AODE, {"fit_prior": 1}),
        (AODE, {"class_prior": [0.2, 0.3, 0.5]}),
        (AODE, {"max_joint_cells": np.inf}),
    ],
)
def test_parameters_are_checked_before_any_counting(monkeypatch, estimator, params):
    """A bad fit_prior or class_prior is refused before the core is ever called (not after
    counting and solving)."""
    from hebnb import _core

    def must_not_run(*args, **kwargs):
        raise AssertionError("the core was called before the parameters were checked")

    for kernel in ("count_categories", "count_pairs", "fit_concentrations"):
        monkeypatch.setattr(_core, kernel, must_not_run)
    with pytest.raises(ValueError, match="parameter|Number of priors"):
        estimator(**params).fit(X, y)
    with pytest.raises(ValueError, match="parameter|Number of priors"):
        estimator(**params).partial_fit(X, y)


@pytest.mark.parametrize(
    "estimator, params",
    [
        (CategoricalNB, {"alpha": True}),
        (CategoricalNB, {"m": np.inf}),
        (CategoricalNB, {"min_count": np.nan}),
        (CategoricalNB, {"learning_rate": True}),
        (AODE, {"max_parent_cardinality": True}),
        (AODE, {"min_parent_count": np.inf}),
        (AODE, {"n_jobs": np.True_}),
    ],
)
def test_bools_and_infinities_are_not_numbers_here(estimator, params):
    """scikit-learn's plain ``Interval`` accepts True (a bool is an int) and inf."""
    with pytest.raises(InvalidParameterError, match=f"'{next(iter(params))}' parameter"):
        estimator(**params).fit(X, y)


@pytest.mark.parametrize(
    "estimator, params",
    [
        (CategoricalNB, {"alpha": 10**400}),
        (CategoricalNB, {"min_count": -(10**400)}),
        (AODE, {"max_joint_cells": 10**400}),
    ],
)
def test_an_int_beyond_the_floats_is_refused_by_name(estimator, params):
    """numpy's isfinite made such an int an object array and raised a TypeError that
    named no parameter."""
    with pytest.raises(InvalidParameterError, match=f"'{next(iter(params))}' parameter"):
        estimator(**params).fit(X, y)


@pytest.mark.parametrize(
    "estimator, params, same",
    [
        (CategoricalNB, {"alpha": 2**64}, {"alpha": float(2**64)}),
        (AODE, {"max_parents": 2**64}, {"max_parents": None}),
        (AODE, {"max_parent_cardinality": 2**70}, {"max_parent_cardinality": None}),
    ],
)
def test_an_int_beyond_64_bits_within_the_floats_is_a_number(estimator, params, same):
    """Accepted as the same number would be as a float, or as no cap at all."""
    model = estimator(**params).fit(X, y)
    np.testing.assert_allclose(model.predict_proba(X), estimator(**same).fit(X, y).predict_proba(X))


def test_the_group_classifier_checks_every_parameter():
    for params in (
        {"n_eb_iter": -1},
        {"n_eb_iter": 2.5},
        {"eb_tol": np.nan},
        {"learning_rate": 1.5},
        {"random_state": "seed"},
        {"n_jobs": 0},
    ):
        model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}, **params)
        with pytest.raises(InvalidParameterError, match=f"'{next(iter(params))}' parameter"):
            model.fit(X[:, :1], y)


@pytest.mark.parametrize("estimator", [CategoricalNB, AODE])
def test_positional_smoothing_still_works_with_a_future_warning(estimator):
    with pytest.warns(FutureWarning, match="smoothing positionally"):
        positional = estimator("laplace")
    assert positional.get_params() == estimator(smoothing="laplace").get_params()
    np.testing.assert_array_equal(
        positional.fit(X, y).predict_proba(X),
        estimator(smoothing="laplace").fit(X, y).predict_proba(X),
    )
    with pytest.raises(TypeError, match="multiple values"):
        estimator("laplace", smoothing="laplace")
    with pytest.raises(TypeError, match="at most 1 positional"):
        estimator("laplace", 2.0)


@pytest.mark.parametrize("estimator", ALL_ESTIMATORS, ids=lambda e: type(e).__name__)
def test_scikit_learn_parameter_validation_check(estimator):
    """scikit-learn's own check: each parameter given a value of a wrong type or outside
    its constraints makes fit (and partial_fit) raise InvalidParameterError."""
    check_param_validation(type(estimator).__name__, estimator)
