"""Sample weights at the edges of float64: overflowing sums are refused, large ones stay finite."""

from __future__ import annotations

import numpy as np
import pytest

from hebnb import AODE, CategoricalNB, EmpiricalBayesDirichletClassifier

X = np.random.default_rng(2).integers(0, 4, size=(200, 2))
y = (X[:, 0] > 1).astype(int) ^ (np.arange(200) % 7 == 0)


def fit(estimator, weights):
    if estimator is EmpiricalBayesDirichletClassifier:
        return estimator({0: 1.0, 1: 1.0}).fit(X[:, :1], y, sample_weight=weights)
    return estimator().fit(X, y, sample_weight=weights)


@pytest.mark.parametrize("estimator", [CategoricalNB, AODE, EmpiricalBayesDirichletClassifier])
def test_weights_whose_sum_overflows_are_refused(estimator):
    """Each weight is finite but the counts overflowed to inf: CategoricalNB returned NaN
    probabilities, AODE rows that did not sum to one."""
    with pytest.raises(ValueError, match="sample_weight sums to inf"):
        fit(estimator, np.full(200, 1e307))
    with pytest.raises(ValueError, match="sample_weight sums to 2e\\+305"):
        fit(estimator, np.full(200, 1e303))


@pytest.mark.parametrize("estimator", [CategoricalNB, AODE])
def test_large_weights_within_the_limit_give_finite_probabilities(estimator):
    """Just below the limit the model is the same as at a moderate scale (the counts
    dominate the smoothing at both)."""
    reference = fit(estimator, np.full(200, 1e200)).predict_proba(X)
    proba = fit(estimator, np.full(200, 4.9e297)).predict_proba(X)
    np.testing.assert_allclose(proba, reference, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("weights", ["a", [1 + 1j] * 200])
def test_weights_that_are_not_real_numbers_are_named(weights):
    with pytest.raises(ValueError, match="sample_weight must hold real numbers"):
        CategoricalNB().fit(X, y, sample_weight=weights)
