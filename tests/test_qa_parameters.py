"""QA regressions: parameter values that were accepted and silently misread, or refused
with an error that did not name the parameter."""

from __future__ import annotations

import os

import numpy as np
import pytest

from hebnb import AODE, CategoricalNB
from hebnb._base import n_threads

X = np.random.default_rng(3).integers(0, 3, size=(80, 2))
y = (X[:, 0] == 1).astype(int) ^ (np.arange(80) % 5 == 0)
ESTIMATORS = [CategoricalNB, AODE]


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(
    "params, message",
    [
        # "no" is truthy: it used to mean fit_prior=True
        ({"fit_prior": "no"}, "fit_prior must be a bool"),
        ({"fit_prior": None}, "fit_prior must be a bool"),
        ({"fit_prior": 0}, "fit_prior must be a bool"),
        ({"class_prior": "ab"}, "class_prior must be an array of probabilities"),
        # bools and strings were converted with float(); a dict was read by its keys
        ({"concentration_bounds": (True, 2.0)}, "pair of real numbers"),
        ({"concentration_bounds": (1.0, "2")}, "pair of real numbers"),
        ({"concentration_bounds": {1.0: 1, 2.0: 2}}, "pair of real numbers"),
        ({"n_jobs": True}, "n_jobs must be a non-zero integer"),
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
    """Only the first partial_fit call checked the parameters: a later smoothing="bogus"
    raised KeyError('bogus') and a negative min_count was used as given."""
    model = CategoricalNB().partial_fit(X[:40], y[:40])
    before = model.predict_proba(X)
    model.set_params(smoothing="bogus")
    with pytest.raises(ValueError, match="smoothing must be one of"):
        model.partial_fit(X[40:], y[40:])
    model.set_params(smoothing="heb-m", min_count=-5)
    with pytest.raises(ValueError, match="min_count must be"):
        model.partial_fit(X[40:], y[40:])
    np.testing.assert_array_equal(model.predict_proba(X), before)  # nothing was added


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_handle_unknown_changed_after_fit_is_checked_at_predict(estimator):
    """set_params(handle_unknown="bogus") after fit was read as "ignore"."""
    model = estimator().fit(X, y).set_params(handle_unknown="bogus")
    with pytest.raises(ValueError, match="handle_unknown must be one of"):
        model.predict(X + 10)


def test_thread_count_never_exceeds_the_cores():
    """The core keeps one thread pool per count: n_jobs=2000 started 2000 threads (and kept
    them); results do not depend on the count, so more threads than cores buy nothing."""
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
        # numpy made these the strings '0', '1', 'a', so the integer labels never matched
        ([0, 1, "a"], "mixes strings and numbers"),
        (np.array([0, 1, "a"], dtype=object), "cannot be ordered"),
        ([[0, 1]], "1-D array"),
    ],
)
def test_partial_fit_checks_the_declared_classes(estimator, classes, message):
    with pytest.raises(ValueError, match=message):
        estimator().partial_fit(X, y, classes=classes)
