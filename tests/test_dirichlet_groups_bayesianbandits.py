"""EmpiricalBayesDirichletClassifier side by side with bayesianbandits' own (>= 1.5, where
``learning_rate`` is spelled ``forgetting=StabilizedForgetting(learning_rate)``)."""

from __future__ import annotations

import numpy as np
import pytest

from hebnb import EmpiricalBayesDirichletClassifier

bayesianbandits = pytest.importorskip("bayesianbandits")
if not hasattr(bayesianbandits, "StabilizedForgetting"):  # the >= 1.5 API (no __version__)
    pytest.skip("bayesianbandits >= 1.5 is needed for the comparison", allow_module_level=True)

ALPHAS = {"lo": 1.0, "mid": 1.0, "hi": 1.0}


def _grouped_data(seed, n_groups, n_rows, alpha=(4.0, 1.5, 0.5)):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(alpha, size=n_groups)
    groups = rng.integers(0, n_groups, size=n_rows)
    labels = (rng.random(n_rows)[:, None] > np.cumsum(theta[groups], axis=1)).sum(axis=1)
    return groups.reshape(-1, 1), np.array(["lo", "mid", "hi"])[labels]


def _prior_of(bb_model):
    return np.array(list(bb_model.alphas.values()))


def test_documented_misspecified_prior_example_matches_bayesianbandits():
    rng = np.random.default_rng(42)
    true_alpha = np.array([3.0, 1.0])
    theirs = bayesianbandits.EmpiricalBayesDirichletClassifier({1: 1.0, 2: 5.0}, random_state=0)
    ours = EmpiricalBayesDirichletClassifier({1: 1.0, 2: 5.0}, random_state=0)
    for g in range(200):
        theta = rng.dirichlet(true_alpha)
        obs = rng.choice([1, 2], size=rng.poisson(10) + 1, p=theta)
        X = np.full((len(obs), 1), g)
        theirs.partial_fit(X, obs)
        ours.partial_fit(X, obs)
        np.testing.assert_allclose(ours.prior_, _prior_of(theirs), rtol=1e-8)
        assert ours.log_evidence_ == pytest.approx(theirs.log_evidence_, rel=1e-8)
    queries = np.arange(-3, 203).reshape(-1, 1)
    np.testing.assert_allclose(
        ours.predict_proba(queries), theirs.predict_proba(queries), atol=1e-10
    )
    np.testing.assert_array_equal(ours.predict(queries), theirs.predict(queries))
    base_measure = ours.prior_ / ours.prior_.sum()
    np.testing.assert_allclose(base_measure, [0.75, 0.25], atol=0.05)


def test_fit_on_random_data_matches_bayesianbandits():
    X, y = _grouped_data(seed=8, n_groups=300, n_rows=4000)
    weights = np.random.default_rng(9).uniform(0.0, 2.0, size=y.shape[0])
    for alphas in [ALPHAS, {"hi": 0.2, "lo": 7.0, "mid": 1.0}]:
        theirs = bayesianbandits.EmpiricalBayesDirichletClassifier(dict(alphas)).fit(X, y, weights)
        ours = EmpiricalBayesDirichletClassifier(alphas).fit(X, y, weights)
        np.testing.assert_allclose(ours.prior_, _prior_of(theirs), rtol=1e-8)
        assert ours.log_evidence_ == pytest.approx(theirs.log_evidence_, rel=1e-8)
        assert ours.eb_converged_ == theirs.eb_converged_
        np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-10)


def test_forgetting_matches_bayesianbandits_stabilized_forgetting():
    X, y = _grouped_data(seed=10, n_groups=40, n_rows=3000)
    forgetting = bayesianbandits.StabilizedForgetting(0.97)
    theirs = bayesianbandits.EmpiricalBayesDirichletClassifier(dict(ALPHAS), forgetting=forgetting)
    ours = EmpiricalBayesDirichletClassifier(ALPHAS, learning_rate=0.97)
    for start in range(0, 3000, 250):
        rows = slice(start, start + 250)
        theirs.partial_fit(X[rows], y[rows])
        ours.partial_fit(X[rows], y[rows])
        np.testing.assert_allclose(ours.prior_, _prior_of(theirs), rtol=1e-8)
        np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-10)
    theirs.decay(bayesianbandits.StabilizedForgetting(0.8), steps=4)
    ours.decay(4, decay_rate=0.8)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-10)
