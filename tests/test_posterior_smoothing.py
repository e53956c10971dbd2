"""``concentration_estimate="posterior-average"``: the predictive averaged over the
posterior of the concentration under the uniform shrinkage prior, against the same
integral done by scipy.integrate.quad, and the issue's small-data case."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad
from scipy.special import gammaln

from hebnb import CategoricalNB


def _averaged_predictive(counts, mean):
    """E[(N_v + m mu_v) / (N + m)] under p(m | N) ~ evidence(m) * p(m), p(m) the density
    of m when B = m / (N + m) is uniform: dB/dm = N / (N + m)^2. Integrated over m."""
    counts, mean = np.asarray(counts, float), np.asarray(mean, float)
    total = counts.sum()
    scale = max(total, 1.0)

    def log_evidence(m):
        return (
            gammaln(m) - gammaln(total + m) + np.sum(gammaln(counts + m * mean) - gammaln(m * mean))
        )

    # the log evidence at its largest on a coarse grid keeps the integrands in range
    shift = max(log_evidence(m) for m in scale * np.logspace(-8, 8, 200))

    def density(m):
        return np.exp(log_evidence(m) - shift) * scale / (scale + m) ** 2

    breaks = list(scale * np.logspace(-8, 8, 33))
    norm = sum(quad(density, a, b, limit=200)[0] for a, b in zip([0.0] + breaks, breaks))
    norm += quad(density, breaks[-1], np.inf, limit=200)[0]
    predictive = []
    for v in range(len(counts)):

        def weighted(m, v=v):
            return density(m) * (counts[v] + m * mean[v]) / (total + m)

        value = sum(quad(weighted, a, b, limit=200)[0] for a, b in zip([0.0] + breaks, breaks))
        value += quad(weighted, breaks[-1], np.inf, limit=200)[0]
        predictive.append(value / norm)
    return np.array(predictive)


def _minimal_case():
    X = pd.DataFrame({"f": ["no"] * 111 + ["yes"] * 3, "g": ["u", "v"] * 57})
    y = ["a"] * 65 + ["b"] * 49
    return X, y


@pytest.mark.parametrize("smoothing", ["heb-m", "heb-u"])
def test_table_is_the_posterior_average_of_the_predictive(smoothing):
    rng = np.random.default_rng(0)
    X = np.column_stack(
        [
            rng.choice(4, size=150, p=[0.7, 0.2, 0.05, 0.05]),
            rng.integers(0, 3, size=150),
        ]
    )
    y = rng.integers(0, 2, size=150)
    X[y == 0, 0] = 0  # class 0 puts every row on one value of feature 0
    model = CategoricalNB(smoothing=smoothing, concentration_estimate="posterior-average").fit(X, y)
    counts = model.category_count_
    for f in range(2):
        for c in range(2):
            expected = _averaged_predictive(counts[f][c], model.prior_mean_[f])
            np.testing.assert_allclose(np.exp(model.feature_log_prob_[f][c]), expected, rtol=2e-3)


def test_minimal_case_keeps_the_class_possible():
    X, y = _minimal_case()
    plug_in = CategoricalNB().fit(X, y)
    assert plug_in.concentration_[0, 0] == pytest.approx(0.01)  # the diagnosis
    row = pd.DataFrame({"f": ["yes"], "g": ["u"]})
    assert plug_in.predict_proba(row)[0, 0] < 1e-3
    averaged = CategoricalNB(concentration_estimate="posterior-average").fit(X, y)
    probability = averaged.predict_proba(row)[0, 0]
    laplace = CategoricalNB(smoothing="laplace").fit(X, y).predict_proba(row)[0, 0]
    # the class stays possible: the same order as Laplace's 0.21, not 0.0002
    assert 0.1 < probability < 0.4
    assert laplace == pytest.approx(0.21, abs=0.01)
    # the rows it has seen keep their probabilities
    np.testing.assert_allclose(
        averaged.predict_proba(X.iloc[:5]), plug_in.predict_proba(X.iloc[:5]), atol=0.02
    )


def test_posterior_average_approaches_type2_ml_on_large_data():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, size=20_000)
    # both features informative: Type-II ML finds an interior m (a feature independent of
    # the class sends it to the upper bound, past which the average keeps going)
    X = np.column_stack(
        [(y + rng.integers(0, 2, size=y.size)) % 5, (3 * y + rng.integers(0, 4, y.size)) % 7]
    )
    plug_in = CategoricalNB().fit(X, y)
    averaged = CategoricalNB(concentration_estimate="posterior-average").fit(X, y)
    for a, b, counts in zip(
        plug_in.feature_log_prob_, averaged.feature_log_prob_, plug_in.category_count_
    ):
        seen = counts > 0
        np.testing.assert_allclose(np.exp(a[seen]), np.exp(b[seen]), rtol=1e-3)
        # a value a class never shows keeps more probability than the plug-in gives it
        assert np.all(b[~seen] >= a[~seen])


def test_low_count_classes_keep_the_fallback():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 3, size=(60, 2))
    y = np.array([0] * 55 + [1] * 5)
    plug_in = CategoricalNB().fit(X, y)
    averaged = CategoricalNB(concentration_estimate="posterior-average").fit(X, y)
    for a, b in zip(plug_in.feature_log_prob_, averaged.feature_log_prob_):
        np.testing.assert_array_equal(a[1], b[1])  # class 1 has 5 < min_count rows


@pytest.mark.parametrize(
    "params,message",
    [
        ({"concentration_estimate": "mean"}, "'concentration_estimate' parameter"),
        ({"smoothing": "laplace", "concentration_estimate": "posterior-average"}, "empirical"),
    ],
)
def test_bad_parameters_are_value_errors(params, message):
    X, y = _minimal_case()
    with pytest.raises(ValueError, match=message):
        CategoricalNB(**params).fit(X, y)
