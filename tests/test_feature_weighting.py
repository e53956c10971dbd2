"""``feature_weighting="sqrt-mi"`` (SPEC "Feature weighting"): w_f = sqrt of the plug-in
mutual information (nats) of the training counts where x_f is present, unnormalised."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import mutual_info_score

from hebnb import CategoricalNB


def _data(seed=0, n_rows=800):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n_rows)
    informative = (y + (rng.random(n_rows) < 0.3) * rng.integers(0, 3, size=n_rows)) % 3
    noise = rng.integers(0, 6, size=n_rows)
    weak = np.where(rng.random(n_rows) < 0.8, rng.integers(0, 4, size=n_rows), y)
    X = np.column_stack([informative, noise, weak]).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    return X, y


def _weighted_information(x, y, weights):
    """sum p(c, v) ln(p(c, v) / (p(c) p(v))) over the weighted table of the present rows."""
    present = ~np.isnan(x)
    values, codes = np.unique(x[present], return_inverse=True)
    table = np.zeros((3, values.shape[0]))
    np.add.at(table, (y[present], codes), weights[present])
    joint = table / table.sum()
    independent = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True)
    cells = joint > 0
    return float(np.sum(joint[cells] * np.log(joint[cells] / independent[cells])))


@pytest.mark.parametrize("smoothing", ["laplace", "heb-m"])
def test_weights_are_sqrt_plug_in_mutual_information(smoothing):
    X, y = _data()
    weights = np.random.default_rng(1).uniform(0.5, 2.0, size=y.shape[0])
    model = CategoricalNB(smoothing=smoothing, feature_weighting="sqrt-mi").fit(
        X, y, sample_weight=weights
    )
    expected = [np.sqrt(_weighted_information(X[:, f], y, weights)) for f in range(3)]
    np.testing.assert_allclose(model.feature_weights_, expected, rtol=1e-10)
    # unweighted rows: scikit-learn's mutual_info_score (nats) on the present rows
    model = CategoricalNB(smoothing=smoothing, feature_weighting="sqrt-mi").fit(X, y)
    for f in range(3):
        present = ~np.isnan(X[:, f])
        information = mutual_info_score(y[present], X[present, f])
        assert model.feature_weights_[f] == pytest.approx(np.sqrt(information), rel=1e-10)
    assert model.feature_weights_[0] > model.feature_weights_[2] > model.feature_weights_[1]
    assert model.feature_weights_.sum() != pytest.approx(1.0)  # not normalised


def test_scores_weight_each_feature_term():
    X, y = _data(seed=2)
    model = CategoricalNB(smoothing="heb-m", feature_weighting="sqrt-mi").fit(X, y)
    rows = X[:50]
    joint = np.tile(model.class_log_prior_, (rows.shape[0], 1))
    for f in range(3):
        present = ~np.isnan(rows[:, f])
        codes = np.searchsorted(model.categories_[f], rows[present, f])
        joint[present] += model.feature_weights_[f] * model.feature_log_prob_[f][:, codes].T
    np.testing.assert_allclose(model.predict_joint_log_proba(rows), joint, rtol=1e-12)
    # the weights flatten the posterior compared with the unweighted model
    plain = CategoricalNB(smoothing="heb-m").fit(X, y)
    np.testing.assert_array_equal(plain.feature_weights_, np.ones(3))
    assert model.predict_proba(X).max(axis=1).mean() < plain.predict_proba(X).max(axis=1).mean()


def test_weights_follow_partial_fit_and_a_feature_never_present_weighs_nothing():
    X, y = _data(seed=3)
    X[:, 1] = np.nan
    X[0, 1] = 1.0  # present once: MI of a single row is 0
    online = CategoricalNB(feature_weighting="sqrt-mi")
    for start in range(0, 800, 200):
        online.partial_fit(X[start : start + 200], y[start : start + 200], classes=[0, 1, 2])
    full = CategoricalNB(feature_weighting="sqrt-mi").fit(X, y)
    np.testing.assert_allclose(online.feature_weights_, full.feature_weights_, rtol=1e-12)
    assert full.feature_weights_[1] == 0.0


def test_unknown_weighting_is_rejected():
    X, y = _data()
    with pytest.raises(ValueError, match="feature_weighting"):
        CategoricalNB(feature_weighting="gain-ratio").fit(X, y)
