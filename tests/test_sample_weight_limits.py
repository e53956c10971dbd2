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


def _rare_category_rows():
    rng = np.random.default_rng(7)
    X = rng.integers(0, 3, size=(40, 2))
    y = rng.integers(0, 2, size=40)
    X[0], y[0] = [9, 9], 0  # category 9 of both features: one row, of class 0
    return X, y


def _exact_log_posterior(model, X, y, weights, row):
    """SPEC eq. 1 with ``ln(n + m mu)`` formed in logarithms (``ln mu = ln t - ln S``,
    which no float64 mean underflows) and the add-one class prior."""
    from scipy.special import logsumexp

    totals = np.array([weights[y == c].sum() for c in model.classes_])
    joint = np.log(totals + 1) - np.log(totals.sum() + len(model.classes_))
    for f in range(X.shape[1]):
        here = X[:, f] == row[f]
        counts = np.array([weights[(y == c) & here].sum() for c in model.classes_])
        m = model.concentration_[:, f]
        with np.errstate(divide="ignore"):
            log_mean = np.log(weights[here].sum()) - np.log(weights.sum())
            joint = joint + np.logaddexp(np.log(counts), np.log(m) + log_mean)
        joint = joint - np.log(totals + m)
    return joint - logsumexp(joint)


@pytest.mark.parametrize("smoothing", ["m-estimate", "target-encoding"])
@pytest.mark.parametrize(("rare", "others"), [(1e-300, 1.0), (5e-324, 1.0), (1e-300, 1e30)])
def test_a_category_whose_pooled_mean_underflows_keeps_every_class_possible(
    smoothing, rare, others
):
    """A category whose weight is below ~1e-308 of its feature's has a pooled mean that
    underflows to 0: ``ln(0 + m 0)`` ruled out every class that had not seen it (log
    probability -inf) while the one that had kept a finite score. Its mean's logarithm
    is used instead; the probabilities are those of the formula in logarithms."""
    X, y = _rare_category_rows()
    weights = np.full(40, others)
    weights[0] = rare
    model = CategoricalNB(smoothing=smoothing).fit(X, y, sample_weight=weights)
    found = model.predict_log_proba(X[:1])[0]
    expected = _exact_log_posterior(model, X, y, weights, X[0])
    assert np.all(np.isfinite(found))
    np.testing.assert_allclose(found, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("rare", [1e-310, 1e-320, 5e-324])
def test_a_category_seen_with_almost_no_weight_counts_as_any_rare_category(rare):
    """Where counts and means are both far below 1 the cell's evidence term is
    ``ln m - ln(m + n / mu)`` (``n / mu`` the feature's total for a category of one class),
    whatever the weight: the concentrations and probabilities of a weight of 1e-300 (a
    mean of 2.6e-302) are those of a subnormal weight, whose mean's product with ``m`` ran
    the solver's digamma terms into inf and NaN (concentrations at a bound)."""
    X, y = _rare_category_rows()
    weights = np.ones(40)
    weights[0] = 1e-300
    reference = CategoricalNB().fit(X, y, sample_weight=weights)
    weights[0] = rare
    model = CategoricalNB().fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(model.concentration_, reference.concentration_, rtol=1e-9)
    np.testing.assert_allclose(
        model.predict_proba(X[:5]), reference.predict_proba(X[:5]), rtol=1e-9, atol=1e-12
    )
