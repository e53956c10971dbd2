"""BernoulliNB: equal to scikit-learn under Laplace / Lidstone (dense and sparse, any
threshold), the absent-feature correction without densifying, HEB concentrations equal
to an independent beta-binomial maximisation, bad input."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.naive_bayes as skl

from hebnb import BernoulliNB
from text_reference import assert_is_maximiser, smoothed_log


def count_data(seed=0, n_rows=300, n_features=40):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n_rows)
    rates = rng.gamma(0.4, 1.0, size=(3, n_features))
    X = rng.poisson(rates[y]).astype(np.float64)
    X[:, -2] = 0.0  # never present
    X[:, -1] = 1.0 + rng.integers(0, 3, size=n_rows)  # always present
    return X, y


@pytest.mark.parametrize("binarize", [0.0, 1.0, 2.5])
@pytest.mark.parametrize("fmt", ["dense", "csr", "csc"])
@pytest.mark.parametrize("smoothing, alpha", [("laplace", 1.0), ("lidstone", 0.2)])
def test_fixed_smoothing_equals_scikit_learn(binarize, fmt, smoothing, alpha):
    X, y = count_data()
    weights = np.random.default_rng(1).uniform(0.2, 2.0, size=y.shape[0])
    data = {"dense": X, "csr": sp.csr_matrix(X), "csc": sp.csc_matrix(X)}[fmt]
    ours = BernoulliNB(smoothing=smoothing, alpha=alpha, binarize=binarize)
    ours.fit(data, y, sample_weight=weights)
    ref = skl.BernoulliNB(alpha=alpha, binarize=binarize).fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(ours.feature_count_, ref.feature_count_, rtol=1e-12)
    np.testing.assert_allclose(ours.feature_log_prob_, ref.feature_log_prob_, atol=1e-10)
    X_test, _ = count_data(seed=4, n_rows=60)
    test = {"dense": X_test, "csr": sp.csr_matrix(X_test), "csc": sp.csc_matrix(X_test)}[fmt]
    np.testing.assert_allclose(
        ours.predict_joint_log_proba(test), ref.predict_joint_log_proba(X_test), atol=1e-9
    )
    np.testing.assert_allclose(ours.predict_proba(test), ref.predict_proba(X_test), atol=1e-10)


def test_binary_input_without_threshold():
    X, y = count_data()
    B = (X > 0).astype(np.float64)
    ours = BernoulliNB(smoothing="laplace", binarize=None).fit(sp.csr_matrix(B), y)
    ref = skl.BernoulliNB(binarize=None).fit(B, y)
    np.testing.assert_allclose(ours.predict_proba(B), ref.predict_proba(B), atol=1e-10)
    with pytest.raises(ValueError, match="binary"):
        BernoulliNB(binarize=None).fit(X, y)


@pytest.mark.parametrize("smoothing", ["heb-m", "heb-u"])
def test_heb_concentrations_are_the_beta_binomial_maximisers(smoothing):
    X, y = count_data(seed=5, n_rows=400)
    model = BernoulliNB(smoothing=smoothing).fit(sp.csr_matrix(X), y)
    present = X > 0
    for c in range(3):
        rows = y == c
        n_c = rows.sum()
        for f in range(X.shape[1]):
            on = present[rows, f].sum()
            cells = np.array([n_c - on, on], dtype=np.float64)
            if smoothing == "heb-m":
                rate = present[:, f].mean()
                mean = np.array([1.0 - rate, rate])
            else:
                mean = np.array([0.5, 0.5])
            assert model.prior_mean_[f] == pytest.approx(mean[1], rel=1e-12)
            if 0.0 < mean[1] < 1.0:
                m = model.concentration_[c, f]
                assert_is_maximiser(m, cells, mean)
                want = smoothed_log(cells, mean, m)[1]
                assert model.feature_log_prob_[c, f] == pytest.approx(want, rel=1e-12)


def test_absent_features_are_scored_without_densifying():
    X, y = count_data(seed=6)
    model = BernoulliNB(smoothing="heb-m").fit(X, y)
    present = (X[:50] > 0).astype(np.float64)
    log_on = model.feature_log_prob_
    with np.errstate(divide="ignore"):
        log_off = np.log1p(-np.exp(log_on))
    # the features present in no / every training row carry no evidence (skipped)
    keep = np.isfinite(log_on).all(axis=0) & np.isfinite(log_off).all(axis=0)
    assert not keep[-2] and not keep[-1] and keep[:-2].all()
    want = (
        present[:, keep] @ log_on[:, keep].T
        + (1.0 - present[:, keep]) @ log_off[:, keep].T
        + model.class_log_prior_
    )
    np.testing.assert_allclose(
        model.predict_joint_log_proba(sp.csr_matrix(X[:50])), want, rtol=1e-9
    )


def test_duplicate_entries_are_summed_before_binarising():
    X, y = count_data(seed=7, n_rows=80)
    X = np.minimum(X, 1.0)
    csr = sp.csr_matrix(X)
    # each stored 1 split into two halves: the sum 1 exceeds 0.6, each half does not
    raw = _duplicated(csr)
    assert not raw.has_canonical_format
    whole = BernoulliNB(smoothing="laplace", binarize=0.6).fit(csr, y)
    dup = BernoulliNB(smoothing="laplace", binarize=0.6).fit(raw, y)
    np.testing.assert_allclose(dup.feature_count_, whole.feature_count_)
    np.testing.assert_allclose(dup.predict_proba(raw), whole.predict_proba(csr), atol=1e-12)


def _duplicated(csr):
    indptr, indices, data = [0], [], []
    for s in range(csr.shape[0]):
        start, end = csr.indptr[s], csr.indptr[s + 1]
        for col, val in zip(csr.indices[start:end], csr.data[start:end]):
            indices += [col, col]
            data += [val / 2.0, val / 2.0]
        indptr.append(len(indices))
    return sp.csr_matrix((data, indices, indptr), shape=csr.shape)


def test_partial_fit_pickle_and_bad_input():
    X, y = count_data(seed=8, n_rows=400)
    whole = BernoulliNB().fit(X, y)
    online = BernoulliNB()
    for start in range(0, 400, 150):
        online.partial_fit(X[start : start + 150], y[start : start + 150], classes=[0, 1, 2])
    np.testing.assert_allclose(online.predict_proba(X), whole.predict_proba(X), atol=1e-12)
    restored = pickle.loads(pickle.dumps(whole))
    np.testing.assert_array_equal(restored.predict_proba(X), whole.predict_proba(X))
    for data in (X, sp.csr_matrix(X)):
        with pytest.raises(ValueError, match="binarize"):
            BernoulliNB(binarize=-1.0).fit(data, y)
    broken = X.copy()
    broken[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        BernoulliNB().fit(broken, y)
    with pytest.raises(ValueError, match="features"):
        whole.predict(X[:, :5])
