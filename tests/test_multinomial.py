"""MultinomialNB and ComplementNB: equal to scikit-learn under Laplace / Lidstone, HEB
concentrations equal to an independent scipy maximisation, sparse input never densified,
online learning, bad input."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.naive_bayes as skl
from sklearn.base import clone

from hebnb import BernoulliNB, ComplementNB, MultinomialNB
from text_reference import assert_is_maximiser, smoothed_log


def token_data(seed=0, n_rows=300, n_features=60, n_classes=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n_rows)
    rates = rng.gamma(0.3, 1.0, size=(n_classes, n_features))
    X = rng.poisson(rates[y])
    X[:, -3:] = 0  # tokens no class counts
    return sp.csr_matrix(X.astype(np.float64)), y


FORMATS = {
    "csr": lambda X: X.tocsr(),
    "csc": lambda X: X.tocsc(),
    "coo": lambda X: X.tocoo(),
    "csr_array": sp.csr_array,
    "dense": lambda X: X.toarray(),
    "int64 csr": lambda X: X.astype(np.int64).tocsr(),
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("smoothing, alpha", [("laplace", 1.0), ("lidstone", 0.05)])
def test_fixed_smoothing_equals_scikit_learn(fmt, smoothing, alpha):
    X, y = token_data()
    weights = np.random.default_rng(1).uniform(0.2, 3.0, size=y.shape[0])
    ours = MultinomialNB(smoothing=smoothing, alpha=alpha).fit(
        FORMATS[fmt](X), y, sample_weight=weights
    )
    ref = skl.MultinomialNB(alpha=1.0 if smoothing == "laplace" else alpha)
    ref.fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(ours.feature_count_, ref.feature_count_, rtol=1e-12)
    np.testing.assert_allclose(ours.class_count_, ref.class_count_, rtol=1e-12)
    np.testing.assert_allclose(ours.feature_log_prob_, ref.feature_log_prob_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.class_log_prior_, ref.class_log_prior_, atol=1e-10)
    X_test, _ = token_data(seed=5, n_rows=50)
    np.testing.assert_allclose(
        ours.predict_joint_log_proba(FORMATS[fmt](X_test)),
        ref.predict_joint_log_proba(X_test),
        rtol=1e-12,
        atol=1e-10,
    )
    np.testing.assert_allclose(ours.predict_proba(X_test), ref.predict_proba(X_test), atol=1e-10)
    np.testing.assert_array_equal(ours.predict(X_test), ref.predict(X_test))


@pytest.mark.parametrize("fit_prior, class_prior", [(False, None), (True, [0.2, 0.5, 0.3])])
def test_class_prior_options_equal_scikit_learn(fit_prior, class_prior):
    X, y = token_data()
    ours = MultinomialNB(smoothing="laplace", fit_prior=fit_prior, class_prior=class_prior).fit(
        X, y
    )
    ref = skl.MultinomialNB(fit_prior=fit_prior, class_prior=class_prior).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-10)


@pytest.mark.parametrize("norm", [False, True])
@pytest.mark.parametrize("smoothing, alpha", [("laplace", 1.0), ("lidstone", 0.3)])
def test_complement_equals_scikit_learn(norm, smoothing, alpha):
    X, y = token_data(seed=3)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, size=y.shape[0])
    ours = ComplementNB(smoothing=smoothing, alpha=alpha, norm=norm).fit(
        X, y, sample_weight=weights
    )
    ref = skl.ComplementNB(alpha=alpha, norm=norm).fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(ours.feature_log_prob_, ref.feature_log_prob_, atol=1e-10)
    np.testing.assert_allclose(ours.feature_all_, ref.feature_all_, rtol=1e-12)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-10)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


@pytest.mark.parametrize("smoothing", ["heb-m", "heb-u"])
def test_heb_concentration_is_the_evidence_maximiser(smoothing):
    X, y = token_data(seed=7, n_rows=400)
    model = MultinomialNB(smoothing=smoothing).fit(X, y)
    counts = X.toarray()
    n_features = counts.shape[1]
    table = np.stack([counts[y == c].sum(axis=0) for c in range(3)])
    if smoothing == "heb-m":
        mean = table.sum(axis=0) / table.sum()
    else:
        mean = np.full(n_features, 1.0 / n_features)
    np.testing.assert_allclose(model.prior_mean_, mean, rtol=1e-12)
    for c in range(3):
        m = model.concentration_[c]
        assert 1e-2 <= m <= 1e4
        assert_is_maximiser(m, table[c], mean)
        np.testing.assert_allclose(
            model.feature_log_prob_[c], smoothed_log(table[c], mean, m), rtol=1e-12
        )
    assert model.converged_.all()
    assert np.all(np.isfinite(model.log_evidence_))


def test_heb_scores_skip_tokens_no_class_counted():
    X, y = token_data(seed=7)
    model = MultinomialNB(smoothing="heb-m").fit(X, y)
    assert np.all(np.isneginf(model.feature_log_prob_[:, -3:]))
    X_test = X[:20].toarray()
    with_unseen = X_test.copy()
    with_unseen[:, -3:] = 4.0
    np.testing.assert_allclose(
        model.predict_joint_log_proba(with_unseen), model.predict_joint_log_proba(X_test)
    )
    # the joint log-probability is the sparse product over the other tokens
    flp = np.where(np.isfinite(model.feature_log_prob_), model.feature_log_prob_, 0.0)
    np.testing.assert_allclose(
        model.predict_joint_log_proba(X_test),
        model.posterior_power_ * (X_test @ flp.T + model.class_log_prior_),
        rtol=1e-12,
    )


@pytest.mark.parametrize("smoothing", ["heb-m", "heb-u"])
def test_complement_heb_uses_the_complement_counts(smoothing):
    X, y = token_data(seed=11, n_rows=400)
    model = ComplementNB(smoothing=smoothing).fit(X, y)
    counts = X.toarray()
    table = np.stack([counts[y == c].sum(axis=0) for c in range(3)])
    complement = table.sum(axis=0) - table
    n_features = table.shape[1]
    if smoothing == "heb-m":
        mean = complement.sum(axis=0) / complement.sum()
    else:
        mean = np.full(n_features, 1.0 / n_features)
    for c in range(3):
        m = model.concentration_[c]
        assert_is_maximiser(m, complement[c], mean)
        logged = smoothed_log(complement[c], mean, m)
        want = np.where(np.isfinite(logged), -logged, 0.0)
        np.testing.assert_allclose(model.feature_log_prob_[c], want, rtol=1e-12)


def test_low_count_classes_fall_back_to_the_vocabulary_size():
    X, y = token_data(seed=4, n_rows=60)
    y = y.copy()
    y[:5] = 3
    y[5:] = np.where(y[5:] == 3, 0, y[5:])
    model = MultinomialNB(smoothing="heb-m").fit(X, y)
    assert model.concentration_[3] == X.shape[1]
    assert model.n_iter_[3] == 0


def test_partial_fit_equals_fit():
    X, y = token_data(seed=2, n_rows=500)
    weights = np.random.default_rng(0).uniform(0.1, 2.0, size=500)
    # the leave-one-out power is fitted on the latest batch (test_multinomial_tempering)
    for make in (lambda: MultinomialNB(posterior_power=1.0), ComplementNB):
        whole = make().fit(X, y, sample_weight=weights)
        online = make()
        for start in range(0, 500, 120):
            rows = slice(start, start + 120)
            online.partial_fit(X[rows], y[rows], classes=[0, 1, 2], sample_weight=weights[rows])
        np.testing.assert_allclose(online.feature_count_, whole.feature_count_, rtol=1e-12)
        np.testing.assert_allclose(online.concentration_, whole.concentration_, rtol=1e-12)
        np.testing.assert_allclose(online.predict_proba(X), whole.predict_proba(X), atol=1e-12)


def test_partial_fit_equals_scikit_learn_under_laplace():
    X, y = token_data(seed=9, n_rows=300)
    ours, ref = MultinomialNB(smoothing="laplace"), skl.MultinomialNB()
    for start in range(0, 300, 100):
        rows = slice(start, start + 100)
        ours.partial_fit(X[rows], y[rows], classes=[0, 1, 2])
        ref.partial_fit(X[rows], y[rows], classes=[0, 1, 2])
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-10)


def test_results_do_not_depend_on_the_thread_count():
    X, y = token_data(seed=8, n_rows=3000, n_features=500)
    weights = np.random.default_rng(3).uniform(0.1, 1.7, size=3000)
    for fmt in ("csr", "csc"):
        data = FORMATS[fmt](X)
        one = MultinomialNB(n_jobs=1).fit(data, y, sample_weight=weights)
        two = MultinomialNB(n_jobs=2).fit(data, y, sample_weight=weights)
        np.testing.assert_array_equal(one.feature_count_, two.feature_count_)
        np.testing.assert_array_equal(one.predict_proba(data), two.predict_proba(data))


def test_pickle_and_clone():
    X, y = token_data()
    for model in (
        MultinomialNB(smoothing="heb-u", n_jobs=2),
        ComplementNB(smoothing="lidstone", alpha=0.2),
    ):
        model.fit(X, y)
        restored = pickle.loads(pickle.dumps(model))
        np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))
        fresh = clone(model)
        assert fresh.get_params() == model.get_params()
        assert not hasattr(fresh, "classes_")


def test_wide_sparse_input_is_never_densified():
    # 4,000 x 2^22 would be 134 GB dense; the model holds (classes x vocabulary) tables
    rng = np.random.default_rng(0)
    n_rows, n_features = 4000, 2**22
    nnz_per_row = 20
    rows = np.repeat(np.arange(n_rows), nnz_per_row)
    cols = rng.integers(0, n_features, size=rows.shape[0])
    X = sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(n_rows, n_features))
    y = rng.integers(0, 2, size=n_rows)
    model = MultinomialNB().fit(X, y)
    assert model.feature_log_prob_.shape == (2, n_features)
    assert model.predict_proba(X[:10]).shape == (10, 2)


def test_fractional_counts_are_weights():
    X, y = token_data()
    X = X.multiply(0.37).tocsr()
    ours = MultinomialNB(smoothing="laplace").fit(X, y)
    ref = skl.MultinomialNB().fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-10)


def test_explicit_zeros_unsorted_and_duplicate_indices_are_sums():
    X, y = token_data(seed=12, n_rows=100)
    X = X.tocsr()
    model = MultinomialNB().fit(X, y)
    # the same matrix with explicit zeros, reversed index order and split duplicates
    indptr, indices, data = [0], [], []
    for s in range(X.shape[0]):
        start, end = X.indptr[s], X.indptr[s + 1]
        cols, vals = X.indices[start:end][::-1], X.data[start:end][::-1]
        for col, val in zip(cols, vals):
            indices += [col, col]
            data += [val / 2.0, val / 2.0]
        indices.append(0)
        data.append(0.0)
        indptr.append(len(indices))
    messy = sp.csr_matrix((data, indices, indptr), shape=X.shape)
    assert not messy.has_canonical_format
    other = MultinomialNB().fit(messy, y)
    np.testing.assert_allclose(other.feature_count_, model.feature_count_, rtol=1e-12)
    np.testing.assert_allclose(other.predict_proba(messy), model.predict_proba(X), atol=1e-12)


def test_an_all_zero_row_scores_the_class_prior():
    X, y = token_data()
    model = MultinomialNB().fit(X, y)
    empty = sp.csr_matrix((1, X.shape[1]))
    np.testing.assert_allclose(
        model.predict_joint_log_proba(empty)[0], model.posterior_power_ * model.class_log_prior_
    )


@pytest.mark.parametrize("cls", [MultinomialNB, ComplementNB])
def test_bad_input_is_a_clear_error(cls):
    X, y = token_data()
    negative = X.copy()
    negative.data[3] = -1.0
    with pytest.raises(ValueError, match="[Nn]egative"):
        cls().fit(negative, y)
    with pytest.raises(ValueError, match="[Nn]egative"):
        cls().fit(negative.toarray(), y)
    for bad in (np.nan, np.inf):
        broken = X.copy()
        broken.data[0] = bad
        with pytest.raises(ValueError, match="NaN|infinity"):
            cls().fit(broken, y)
    model = cls().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :-1])
    with pytest.raises(ValueError, match="[Nn]egative"):
        model.predict(negative)
    with pytest.raises(ValueError, match="features"):
        model.partial_fit(X[:, :-1], y)
    with pytest.raises(ValueError, match="smoothing"):
        cls(smoothing="add-one").fit(X, y)
    with pytest.raises(ValueError, match="alpha"):
        cls(smoothing="lidstone", alpha=0.0).fit(X, y)
    with pytest.raises(ValueError, match="concentration_bounds"):
        cls(concentration_bounds=(10.0, 1.0)).fit(X, y)
    with pytest.raises(ValueError, match="classes"):
        cls().fit(X, np.zeros(X.shape[0]))


def malformed(fmt, X):
    """``X`` as ``fmt`` with one stored index pointing outside the matrix, or with an
    index pointer running past the stored values, built after construction (as a caller
    mutating the arrays would): scipy's constructors would refuse them."""
    bad_index = X.asformat(fmt, copy=True)
    bad_index.indices[1] = bad_index.shape[0 if fmt == "csc" else 1] + 7
    past_end = X.asformat(fmt, copy=True)
    past_end.indptr[-1] = past_end.indices.shape[0] + 5
    wrapping = X.asformat(fmt, copy=True)
    wrapping.indices = wrapping.indices.astype(np.int64)
    wrapping.indices[0] += 2**32  # narrowed to int32 it would be a valid index
    return {"index": bad_index, "pointer": past_end, "wrapping": wrapping}


@pytest.mark.parametrize("cls", [MultinomialNB, ComplementNB, BernoulliNB])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_malformed_sparse_matrices_are_refused_everywhere(cls, fmt):
    """Fit, partial_fit and every scoring method refuse a CSR or CSC matrix whose indices
    or pointers are out of range, before scipy's conversions read them (a CSC matrix with
    a bad row index used to crash the interpreter in predict_proba)."""
    X, y = token_data()
    model = cls().fit(X, y)
    for what, bad in malformed(fmt, X).items():
        calls = {
            "fit": lambda m: cls().fit(m, y),
            "partial_fit": lambda m: clone(model).partial_fit(m, y, classes=np.unique(y)),
            "predict_proba": model.predict_proba,
            "predict_joint_log_proba": model.predict_joint_log_proba,
        }
        for name, call in calls.items():
            with pytest.raises(ValueError, match="malformed sparse matrix"):
                call(bad)
                pytest.fail(f"{name} accepted a matrix with a bad {what}")
