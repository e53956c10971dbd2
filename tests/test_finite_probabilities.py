"""Probabilities are finite and sum to 1 for every accepted input (issue 11, item 4):
mutual-information weights do not depend on the scale of the sample weights, extreme
weights give no NaN rows, the group classifier's posterior samples are finite for tiny
priors and follow the Dirichlet, and out-of-range parameters are refused by name."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hebnb import AODE, CategoricalNB, EmpiricalBayesDirichletClassifier

RNG = np.random.default_rng(7)
X = RNG.integers(0, 4, size=(300, 3))
Y = (X[:, 0] + RNG.integers(0, 2, size=300) > 2).astype(int)
W = RNG.uniform(0.1, 2.0, size=300)


def plug_in_information(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """MI (nats) of the weighted contingency table, written from the definition with
    the weights normalised first."""
    p = w / w.sum()
    table = np.zeros((y.max() + 1, x.max() + 1))
    np.add.at(table, (y, x), p)
    outer = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True)
    nz = table > 0
    return float(np.sum(table[nz] * np.log(table[nz] / outer[nz])))


@pytest.mark.parametrize("scale", [1e-170, 1e-300 / 0.1, 1.0, 1e160, 1e290])
def test_sqrt_mi_weights_do_not_depend_on_the_weight_scale(scale):
    model = CategoricalNB(smoothing="laplace", feature_weighting="sqrt-mi")
    model.fit(X, Y, sample_weight=W * scale)
    expected = [np.sqrt(plug_in_information(X[:, f], Y, W)) for f in range(3)]
    np.testing.assert_allclose(model.feature_weights_, expected, rtol=1e-9)
    assert model.feature_weights_[0] > 0.1  # feature 0 drives the class


@pytest.mark.parametrize("estimator", [CategoricalNB, AODE])
@pytest.mark.parametrize("weighting", [None, "sqrt-mi"])
def test_weights_mixing_1e_minus_300_and_1e200_give_finite_rows(estimator, weighting):
    weights = np.where(RNG.random(300) < 0.5, 1e-300, 1e200)
    params = {"feature_weighting": weighting} if estimator is CategoricalNB else {}
    if weighting and estimator is AODE:
        pytest.skip("AODE has no feature weighting")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = estimator(**params).fit(X, Y, sample_weight=weights)
    proba = model.predict_proba(np.vstack([X, [[9, 9, 9]]]))
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)


def test_a_feature_with_zero_weight_adds_nothing_even_where_its_table_is_minus_inf():
    """sqrt-MI gives an independent feature weight 0; a category one class never saw
    (pooled-marginal mean underflowing under extreme weights) has ln theta = -inf in
    that class only. 0 x -inf made the whole row NaN."""
    from hebnb import _core

    codes = np.array([[0, 1], [1, 0]], dtype=np.int32)  # (features, rows)
    table = np.array([[-0.5, -np.inf], [-0.9, -0.3], [-0.2, -1.0], [-1.5, -0.4]])
    prior = np.log([0.4, 0.6])
    weights = np.array([0.0, 2.0])
    joint = _core.joint_log_likelihood(codes, table, prior, weights, [0, 2, 4], 1)
    # only feature 1 counts: row 0 has its value 1 (table row 3), row 1 value 0 (row 2)
    expected = prior + 2.0 * np.array([table[3], table[2]])
    np.testing.assert_array_equal(joint, expected)


def test_samples_with_tiny_priors_are_finite_and_follow_the_dirichlet():
    """alpha ~ 1e-3: standard gamma draws underflow to 0 and the normalised rows were
    NaN in 23% of draws. Now none is; the share of draws where a component takes
    nearly all the mass matches its Dirichlet probability alpha_k / sum(alpha), as
    numpy's own dirichlet (accurate here: it uses stick breaking for small alphas)."""
    alphas = {0: 1e-3, 1: 3e-3}
    model = EmpiricalBayesDirichletClassifier(alphas, n_eb_iter=0, random_state=0)
    model.fit([[0]], [0])
    draws = model.sample([[5]], size=20000)[:, 0, :]
    assert np.all(np.isfinite(draws))
    np.testing.assert_allclose(draws.sum(axis=1), 1.0)
    numpy_draws = np.random.default_rng(1).dirichlet([1e-3, 3e-3], size=20000)
    ours, theirs = (draws[:, 0] > 0.5).mean(), (numpy_draws[:, 0] > 0.5).mean()
    assert abs(ours - 0.25) < 0.02 and abs(theirs - 0.25) < 0.02


@pytest.mark.parametrize("alpha", [[0.3, 0.7, 2.0], [1.0, 1.0], [5.0, 0.05, 12.0]])
def test_samples_follow_the_dirichlet_where_numpy_is_accurate(alpha):
    """Each component of a Dirichlet draw is Beta(alpha_k, sum - alpha_k): a KS test
    against it, and against numpy's dirichlet, on both our log-space draws."""
    model = EmpiricalBayesDirichletClassifier(dict(enumerate(alpha)), n_eb_iter=0, random_state=3)
    model.fit([[0]], [0])
    # group 5 is unseen: its posterior is the prior itself
    draws = model.sample([[5]], size=4000)[:, 0, :]
    reference = np.random.default_rng(4).dirichlet(alpha, size=4000)
    total = sum(alpha)
    for k, a in enumerate(alpha):
        beta = stats.beta(a, total - a)
        assert stats.kstest(draws[:, k], beta.cdf).pvalue > 1e-3
        assert stats.ks_2samp(draws[:, k], reference[:, k]).pvalue > 1e-3


def test_an_alpha_whose_table_overflows_is_refused_by_name():
    with pytest.raises(ValueError, match="alpha=1e\\+308 is too large"):
        CategoricalNB(smoothing="lidstone", alpha=1e308).fit(X, Y)


def test_complex_sample_weights_are_refused():
    with pytest.raises(ValueError, match="real numbers"):
        CategoricalNB().fit(X, Y, sample_weight=W.astype(complex))
    with pytest.raises(ValueError, match="real numbers"):
        CategoricalNB().fit(X, Y, sample_weight=pd.Series(W + 1j))
