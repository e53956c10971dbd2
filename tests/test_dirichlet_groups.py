"""EmpiricalBayesDirichletClassifier: against scipy transcriptions of the evidence and of
stabilized forgetting, and side by side with bayesianbandits' own implementation."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import digamma, gammaln
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from hebnb import EmpiricalBayesDirichletClassifier


def _evidence(counts, alpha):
    """Dirichlet-multinomial log evidence of the groups with data (scipy's gammaln)."""
    counts = counts[counts.sum(axis=1) > 0]
    s = alpha.sum()
    per_group = gammaln(s) - gammaln(counts.sum(axis=1) + s)
    return float(np.sum(per_group + np.sum(gammaln(counts + alpha) - gammaln(alpha), axis=1)))


def _grouped_data(seed=0, n_groups=60, n_rows=2500, alpha=(4.0, 1.5, 0.5)):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(alpha, size=n_groups)
    groups = rng.integers(0, n_groups, size=n_rows)
    labels = (rng.random(n_rows)[:, None] > np.cumsum(theta[groups], axis=1)).sum(axis=1)
    return groups.reshape(-1, 1), np.array(["lo", "mid", "hi"])[labels]


ALPHAS = {"lo": 1.0, "mid": 1.0, "hi": 1.0}


def test_fit_maximises_the_evidence():
    X, y = _grouped_data()
    model = EmpiricalBayesDirichletClassifier(ALPHAS, n_eb_iter=5000, eb_tol=1e-13).fit(X, y)
    assert model.eb_converged_ and 1 < model.n_eb_iterations_ < 5000
    counts = model.group_counts_

    def negative(log_alpha):
        return -_evidence(counts, np.exp(log_alpha))

    best = minimize(
        negative,
        np.zeros(3),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000},
    )
    np.testing.assert_allclose(model.prior_, np.exp(best.x), rtol=1e-5)
    assert model.log_evidence_ == pytest.approx(_evidence(counts, model.prior_), rel=1e-12)
    # the stationarity conditions, written with scipy's digamma
    s = model.prior_.sum()
    totals = counts.sum(axis=1, keepdims=True)
    gradient = np.sum(
        digamma(s) - digamma(totals + s) + digamma(counts + model.prior_) - digamma(model.prior_),
        axis=0,
    )
    scale = np.sum(digamma(counts + model.prior_) - digamma(model.prior_), axis=0)
    np.testing.assert_allclose(gradient / scale, 0.0, atol=1e-7)


def test_counts_posteriors_and_unseen_groups():
    X, y = _grouped_data(seed=1, n_groups=5, n_rows=40)
    weights = np.random.default_rng(2).uniform(0.1, 2.0, size=40)
    model = EmpiricalBayesDirichletClassifier(ALPHAS).fit(X, y, sample_weight=weights)
    np.testing.assert_array_equal(model.classes_, ["lo", "mid", "hi"])
    expected = np.zeros((5, 3))
    for g, label, w in zip(X[:, 0], y, weights):
        expected[list(model.groups_).index(g), ["lo", "mid", "hi"].index(label)] += w
    np.testing.assert_allclose(model.group_counts_, expected, rtol=1e-14)
    posterior = model.prior_ + expected
    proba = model.predict_proba(np.vstack([model.groups_.reshape(-1, 1), [[999]]]).astype(int))
    np.testing.assert_allclose(proba[:5], posterior / posterior.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(proba[5], model.prior_ / model.prior_.sum())
    assert model.alphas_ == dict(zip(["lo", "mid", "hi"], model.prior_.tolist()))
    # the parameter is not overwritten, so a clone starts from the initial prior
    assert model.alphas == ALPHAS and clone(model).alphas == ALPHAS
    # before fit there is no posterior to report: scikit-learn's NotFittedError
    unfitted = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 3.0})
    for method in (unfitted.predict_proba, unfitted.predict, unfitted.sample):
        with pytest.raises(NotFittedError):
            method([[5]])


def test_stabilized_forgetting_decays_counts_per_group_row():
    rng = np.random.default_rng(3)
    gamma = 0.9
    groups = rng.integers(0, 4, size=120)
    labels = rng.integers(0, 2, size=120)
    model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}, learning_rate=gamma)
    expected = {}
    for start in range(0, 120, 30):
        rows = slice(start, start + 30)
        model.partial_fit(groups[rows].reshape(-1, 1), labels[rows])
        for g, k in zip(groups[rows], labels[rows]):  # each row ages its own group
            counts = expected.setdefault(g, np.zeros(2))
            counts *= gamma
            counts[k] += 1.0
    for g, counts in expected.items():
        np.testing.assert_allclose(model.group_counts_[list(model.groups_).index(g)], counts)
    before = model.predict_proba([[0], [1]])
    model.decay(steps=500, decay_rate=0.5)  # a long silence: back to the prior, not to zero
    np.testing.assert_allclose(
        model.predict_proba([[0], [1]]), [model.prior_ / model.prior_.sum()] * 2
    )
    assert not np.allclose(before, model.predict_proba([[0], [1]]))


def test_iteration_count_is_the_real_one_and_zero_disables_tuning():
    X, y = _grouped_data(seed=4)
    capped = EmpiricalBayesDirichletClassifier(ALPHAS, n_eb_iter=7, eb_tol=0.0).fit(X, y)
    assert capped.n_eb_iterations_ == 7 and not capped.eb_converged_
    loose = EmpiricalBayesDirichletClassifier(ALPHAS, n_eb_iter=50, eb_tol=1e6).fit(X, y)
    assert loose.n_eb_iterations_ == 2 and loose.eb_converged_  # the 1st change is from -inf
    off = EmpiricalBayesDirichletClassifier(ALPHAS, n_eb_iter=0).fit(X, y)
    np.testing.assert_array_equal(off.prior_, [1.0, 1.0, 1.0])
    assert off.log_evidence_ == -np.inf and off.n_eb_iterations_ == 0


def test_thread_count_does_not_change_the_prior():
    X, y = _grouped_data(seed=5, n_groups=3000, n_rows=20000)
    one = EmpiricalBayesDirichletClassifier(ALPHAS, n_jobs=1).fit(X, y)
    two = EmpiricalBayesDirichletClassifier(ALPHAS, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.prior_, two.prior_)
    assert one.log_evidence_ == two.log_evidence_


def test_sample_draws_from_the_posteriors():
    X, y = _grouped_data(seed=6, n_groups=3, n_rows=60)
    model = EmpiricalBayesDirichletClassifier(ALPHAS, random_state=0).fit(X, y)
    draws = model.sample([[0], [1], [42]], size=20000)
    assert draws.shape == (20000, 3, 3)
    np.testing.assert_allclose(draws.sum(axis=2), 1.0)
    np.testing.assert_allclose(draws.mean(axis=0), model.predict_proba([[0], [1], [42]]), atol=0.01)
    first = EmpiricalBayesDirichletClassifier(ALPHAS, random_state=0).fit(X, y)
    second = EmpiricalBayesDirichletClassifier(ALPHAS, random_state=0).fit(X, y)
    np.testing.assert_array_equal(first.sample([[0]], size=3), second.sample([[0]], size=3))


def test_bad_input():
    X, y = _grouped_data(seed=7, n_groups=4, n_rows=20)
    model = EmpiricalBayesDirichletClassifier(ALPHAS)
    with pytest.raises(ValueError, match="not keys of alphas"):
        model.fit(X, np.where(y == "lo", "other", y))
    with pytest.raises(ValueError, match="one grouping column"):
        model.fit(np.hstack([X, X]), y)
    with pytest.raises(ValueError, match="missing groups"):
        model.fit(np.where(X == 0, np.nan, X), y)
    for params in [{"learning_rate": 0.0}, {"n_eb_iter": -1}, {"eb_tol": -1.0}]:
        with pytest.raises(ValueError):
            EmpiricalBayesDirichletClassifier(ALPHAS, **params).fit(X, y)
    for alphas in [{"a": 1.0}, {"a": 1.0, "b": 0.0}, [1.0, 2.0]]:
        with pytest.raises(ValueError, match="alphas"):
            EmpiricalBayesDirichletClassifier(alphas).fit(X, y)


@pytest.mark.parametrize(
    "alphas", [{(0,): 1.0, 1: 1.0}, {(0, 1): 1.0, (1, 0): 1.0}], ids=["tuple", "tuples"]
)
@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_a_class_key_that_is_not_a_scalar_is_refused_by_name(alphas, method):
    """numpy read a tuple key as a row of labels: an "inhomogeneous shape" ValueError,
    or 2-D classes and "Index data must be 1-dimensional"."""
    y = np.empty(2, dtype=object)
    y[:] = list(alphas)
    model = EmpiricalBayesDirichletClassifier(alphas)
    with pytest.raises(ValueError, match=r"keys of alphas .* must be scalars.* a tuple"):
        getattr(model, method)([[1], [2]], y)


def test_groups_lists_the_declared_categories_of_a_category_column_as_documented():
    """A pandas ``category`` column declares its groups (as CategoricalNB reads it): the
    unused ones are listed after those seen, with zero counts and the prior as their
    posterior; the docstring said "the groups seen"."""
    groups = pd.Categorical(["b", "a"] * 30, categories=["a", "never", "b"])
    y = np.array([0, 1] * 30)
    model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).fit(pd.DataFrame({"g": groups}), y)
    assert model.groups_.tolist() == ["b", "a", "never"]
    np.testing.assert_array_equal(model.group_counts_[2], [0.0, 0.0])
    np.testing.assert_allclose(
        model.predict_proba(pd.DataFrame({"g": pd.Categorical(["never"])}))[0],
        model.prior_ / model.prior_.sum(),
    )
    documented = EmpiricalBayesDirichletClassifier.__doc__.split("groups_ :")[1]
    documented = " ".join(documented.split("group_counts_ :")[0].split())
    assert "The groups seen" not in documented
    assert "every category a pandas ``category`` column declares" in documented


def test_pickling_keeps_the_groups_and_partial_fit_continues():
    X, y = _grouped_data(seed=11, n_groups=20, n_rows=400)
    model = EmpiricalBayesDirichletClassifier(ALPHAS).partial_fit(X[:200], y[:200])
    # the first call is fit followed by one step
    fitted = EmpiricalBayesDirichletClassifier(ALPHAS).fit(X[:200], y[:200])
    assert model.n_eb_iterations_ == fitted.n_eb_iterations_ + 1
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))
    restored.partial_fit(X[200:], y[200:])
    model.partial_fit(X[200:], y[200:])
    np.testing.assert_array_equal(restored.prior_, model.prior_)
    assert restored.n_eb_iterations_ == 1


#: scikit-learn's generic checks that cannot apply to this model, and why. The model's
#: input is ONE grouping column and its classes are the keys of ``alphas``; the checks
#: feed tables of several numeric columns and labels of their own choosing.
ONE_GROUP_COLUMN = "X is one grouping column; the check feeds several columns"
GROUP_CHECKS = {
    name: ONE_GROUP_COLUMN
    for name in (
        "check_all_zero_sample_weights_error",
        "check_classifier_data_not_an_array",
        "check_classifiers_classes",
        "check_classifiers_train",
        "check_dict_unchanged",
        "check_dont_overwrite_parameters",
        "check_dtype_object",
        "check_estimators_dtypes",
        "check_estimators_empty_data_messages",
        "check_estimators_fit_returns_self",
        "check_estimators_overwrite_params",
        "check_estimators_pickle",
        "check_f_contiguous_array_estimator",
        "check_fit2d_1sample",
        "check_fit2d_predict1d",
        "check_fit_check_is_fitted",
        "check_fit_idempotent",
        "check_fit_score_takes_y",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_n_features_in",
        "check_n_features_in_after_fitting",
        "check_pipeline_consistency",
        "check_readonly_memmap_input",
        "check_requires_y_none",
        "check_sample_weight_equivalence_on_dense_data",
        "check_sample_weights_list",
        "check_sample_weights_not_an_array",
        "check_sample_weights_not_overwritten",
        "check_sample_weights_shape",
        "check_supervised_y_2d",
        "check_positive_only_tag_during_fit",
        "check_sample_weights_pandas_series",
        "check_estimators_nan_inf",
    )
}
GROUP_CHECKS.update(
    {
        # the classes are the keys of alphas, so any other label is refused by name
        "check_classifiers_regression_target": "labels outside alphas are refused as such",
        "check_fit2d_1feature": "labels outside alphas are refused as such",
        # alphas declares every class, so one label in the data is a valid fit
        "check_classifiers_one_label": "alphas declares the classes; one observed is fine",
        "check_classifiers_one_label_sample_weights": "alphas declares the classes",
        # the classes are alphas' keys: classes= must name them, and the check's differ
        "check_estimators_partial_fit_n_features": "classes= must name alphas' keys",
    }
)


@parametrize_with_checks(
    [EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0})],
    expected_failed_checks=lambda estimator: GROUP_CHECKS,
)
def test_scikit_learn_conformance(estimator, check):
    """What holds of any estimator (cloning, parameters, tags, sparse input refused,
    NotFittedError before fit) passes; what assumes a feature table is expected to fail."""
    check(estimator)


@pytest.mark.parametrize("n_rows", [1, 7])
def test_what_the_skipped_checks_protect_holds_on_one_group_column(n_rows):
    """The properties behind the expected failures, on the input this model takes: fit
    returns self and leaves the parameters alone, pickling keeps predictions, row order
    does not matter, and a sample_weight Series or list equals the array."""
    rng = np.random.default_rng(n_rows)
    X = rng.integers(0, 3, size=(n_rows * 5, 1))
    y = rng.integers(0, 2, size=n_rows * 5)
    weights = rng.uniform(0.5, 2.0, size=n_rows * 5)
    alphas = {0: 1.0, 1: 2.0}
    model = EmpiricalBayesDirichletClassifier(alphas)
    assert model.fit(X, y, sample_weight=weights) is model
    assert model.get_params()["alphas"] == {0: 1.0, 1: 2.0}
    proba = model.predict_proba(X)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(model)).predict_proba(X), proba)
    order = rng.permutation(len(y))
    shuffled = EmpiricalBayesDirichletClassifier(alphas).fit(
        X[order], y[order], sample_weight=weights[order]
    )
    np.testing.assert_allclose(shuffled.predict_proba(X), proba, rtol=1e-10)
    for spelled in (pd.Series(weights), weights.tolist()):
        again = EmpiricalBayesDirichletClassifier(alphas).fit(X, y, sample_weight=spelled)
        np.testing.assert_allclose(again.predict_proba(X), proba, rtol=1e-12)


def test_the_grouping_columns_name_is_recorded_and_checked_as_scikit_learn_does():
    import warnings

    frame = pd.DataFrame({"user": ["a", "b", "a", "c"]})
    labels = [0, 1, 0, 1]
    model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).fit(frame, labels)
    np.testing.assert_array_equal(model.feature_names_in_, ["user"])
    for call in (model.predict_proba, lambda X: model.partial_fit(X, [0])):
        with pytest.raises(ValueError, match="feature names should match"):
            call(pd.DataFrame({"other": ["a"]}))
    unnamed = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).fit(frame.to_numpy(), labels)
    assert not hasattr(unnamed, "feature_names_in_")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unnamed.predict_proba(frame)
    assert any("fitted without feature names" in str(w.message) for w in caught)
    # a refit on unnamed data forgets the name
    assert not hasattr(model.fit(frame.to_numpy(), labels), "feature_names_in_")


def test_long_inputs_are_scored_a_chunk_of_rows_at_a_time(monkeypatch):
    """predict_proba scored a whole batch at once (memory several times the output, and
    Ctrl-C unanswered for seconds on tens of millions of rows): chunks of rows now, with
    the probabilities of one pass."""
    import hebnb._base

    rng = np.random.default_rng(3)
    groups = rng.choice(["a", "b", "c", "d"], size=500).astype(object)
    labels = rng.choice(["s", "f"], size=500)
    model = EmpiricalBayesDirichletClassifier({"s": 1.0, "f": 2.0}).fit(groups[:, None], labels)
    rows = np.concatenate([groups, ["never"] * 7]).astype(object)[:, None]
    whole = model.predict_proba(rows)
    seen = []
    scored = EmpiricalBayesDirichletClassifier._posterior_alphas

    def spy(self, X):
        seen.append(len(X))
        return scored(self, X)

    monkeypatch.setattr(hebnb._base, "PREDICT_CHUNK_CELLS", 64)
    monkeypatch.setattr(EmpiricalBayesDirichletClassifier, "_posterior_alphas", spy)
    np.testing.assert_array_equal(model.predict_proba(rows), whole)
    # 64 cells a chunk, a row's output two of them (one per class)
    assert max(seen) == 64 // 2 and sum(seen) == rows.shape[0]


def test_a_column_vector_y_is_raveled_with_scikit_learns_warning():
    """y of shape (n, 1): scikit-learn's DataConversionWarning and the model of y
    raveled, as every other estimator here (it was a ValueError)."""
    from sklearn.exceptions import DataConversionWarning

    X = np.array([[1], [1], [2], [2], [3], [3]])
    y = np.array([0, 1, 0, 0, 1, 1])
    expected = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).fit(X, y)
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).fit(X, y.reshape(-1, 1))
    np.testing.assert_array_equal(model.predict_proba(X), expected.predict_proba(X))
