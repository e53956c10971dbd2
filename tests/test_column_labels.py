"""Column labels (issue 11, item 7): a DataFrame fitted with integer column labels is
checked against them at predict, so reordered columns raise instead of silently giving
other probabilities; mixed str/int labels are refused as scikit-learn refuses them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hebnb import (
    AODE,
    BernoulliNB,
    CategoricalNB,
    ComplementNB,
    GaussianNB,
    MixedNB,
    MultinomialNB,
)

ESTIMATORS = [CategoricalNB, AODE, MultinomialNB, ComplementNB, BernoulliNB, GaussianNB, MixedNB]


@pytest.fixture
def table():
    rng = np.random.default_rng(11)
    # columns of different scales: reordering them changes every model's probabilities
    X = pd.DataFrame(rng.integers(0, 3, size=(300, 4)) * np.array([1, 2, 3, 5]))
    y = rng.integers(0, 2, size=300)
    return X, y


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
def test_reordered_integer_labels_are_an_error(estimator, table):
    X, y = table
    model = estimator().fit(X, y)
    expected = model.predict_proba(X)
    reordered = X[[1, 0, 2, 3]]
    # the failure: the same columns in another order are other probabilities
    assert not np.allclose(estimator().fit(X, y).predict_proba(reordered.to_numpy()), expected)
    with pytest.raises(ValueError, match="column labels should match"):
        model.predict_proba(reordered)
    with pytest.raises(ValueError, match="column labels should match"):
        model.predict(X.set_axis([4, 5, 6, 7], axis=1))
    # the same labels in the same order, or no labels at all (numpy), are matched by position
    np.testing.assert_array_equal(model.predict_proba(X.copy()), expected)
    np.testing.assert_array_equal(model.predict_proba(X.to_numpy()), expected)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
def test_mixed_labels_are_refused(estimator, table):
    X, y = table
    mixed = X.set_axis(["a", 1, "c", 3], axis=1)
    with pytest.raises(TypeError, match="Feature names are only supported if all"):
        estimator().fit(mixed, y)
    model = estimator().fit(X.set_axis(list("abcd"), axis=1), y)
    with pytest.raises(TypeError, match="Feature names are only supported if all"):
        model.predict_proba(mixed)


@pytest.mark.parametrize(
    "estimator", [CategoricalNB, MultinomialNB, GaussianNB, MixedNB], ids=lambda e: e.__name__
)
def test_partial_fit_keeps_the_first_batchs_labels(estimator, table):
    X, y = table
    model = estimator().partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match="column labels should match"):
        model.partial_fit(X[[3, 2, 1, 0]], y)
    model.partial_fit(X, y)  # the same labels go on
