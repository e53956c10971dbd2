"""Class labels as pandas hands them over (numbers held as objects, mixed types)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hebnb import AODE, CategoricalNB

X = np.random.default_rng(4).integers(0, 3, size=(40, 2))
y = (X[:, 0] == 1).astype(int) ^ (np.arange(40) % 6 == 0)
ESTIMATORS = [CategoricalNB, AODE]


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(
    "labels",
    [
        pd.Series(y, dtype=object),  # e.g. a column that once held None
        y.astype(object),
        (y == 1).astype(object),
    ],
)
def test_numbers_held_as_objects_are_labels(estimator, labels):
    """scikit-learn's target check refused these as "Unknown label type: unknown"."""
    expected = estimator().fit(X, np.asarray(labels.tolist()))
    model = estimator().fit(X, labels)
    np.testing.assert_array_equal(model.classes_, expected.classes_)
    assert model.classes_.dtype == expected.classes_.dtype
    np.testing.assert_allclose(model.predict_proba(X), expected.predict_proba(X), rtol=1e-12)
    streamed = estimator().partial_fit(X, labels)
    np.testing.assert_allclose(streamed.predict_proba(X), expected.predict_proba(X), rtol=1e-12)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_labels_mixing_numbers_and_strings_are_named(estimator):
    labels = np.array([1, "a"] * 20, dtype=object)
    with pytest.raises(ValueError, match="y mixes labels of different types"):
        estimator().fit(X, labels)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_labels_of_one_unorderable_type_are_named_by_it(estimator):
    """Tuples as labels are one type, not a mix: the error says which type it is."""
    labels = np.empty(40, dtype=object)
    labels[:] = [(1, 2), (3, 4)] * 20
    with pytest.raises(ValueError, match="labels of type tuple, which are not class labels"):
        estimator().fit(X, labels)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_declared_classes_held_as_objects_keep_a_number_dtype(estimator):
    model = estimator().partial_fit(X, y, classes=np.array([0, 1], dtype=object))
    assert model.classes_.dtype == np.int64
    assert model.predict(X[:3]).dtype == np.int64
