"""scikit-learn conventions: conformance checks, pickling, cloning, thread invariance."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from hebnb import AODE, CategoricalNB
from hebnb.datasets import make_high_cardinality

#: The scikit-learn checks that cannot apply, and why: each feeds continuous floats
#: (fractional values), which are not categories. hebnb refuses them with a clear error
#: instead of truncating them (bin numeric columns first). What these checks protect is
#: tested below on categorical data: weights as repetitions
#: (test_integer_weights_equal_repeated_rows), one class left after weighting
#: (test_zero_weight_class_is_kept), negative category codes (test_negative_codes).
CONTINUOUS_ONLY_CHECKS = {
    "check_positive_only_tag_during_fit": "continuous floats are not categories",
    "check_sample_weight_equivalence_on_dense_data": "continuous floats are not categories",
    "check_classifiers_one_label_sample_weights": "continuous floats are not categories",
}


@parametrize_with_checks(
    [
        CategoricalNB(),
        CategoricalNB(smoothing="laplace"),
        CategoricalNB(feature_weighting="sqrt-mi"),
        CategoricalNB(concentration_estimate="posterior-average"),
        CategoricalNB(weighting="cll-feature"),
        CategoricalNB(weighting="cll-value"),
        AODE(),
        AODE(smoothing="laplace"),
        AODE(weighting="cll-feature"),
        AODE(smoothing="laplace", count_features=True, weighting="cll-value"),
    ],
    expected_failed_checks=lambda estimator: CONTINUOUS_ONLY_CHECKS,
)
def test_scikit_learn_conformance(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def data():
    X, y = make_high_cardinality(3_000, 6, n_classes=3, max_cardinality=300, random_state=1)
    return X, y


@pytest.mark.parametrize("smoothing", ["heb-m", "heb-u", "laplace", "m-estimate"])
def test_integer_weights_equal_repeated_rows(data, smoothing):
    X, y = data
    weights = np.random.default_rng(0).integers(0, 4, size=len(y))
    weighted = CategoricalNB(smoothing=smoothing).fit(X, y, sample_weight=weights)
    repeated = CategoricalNB(smoothing=smoothing).fit(
        np.repeat(X, weights, axis=0), np.repeat(y, weights)
    )
    # categories seen only with weight 0 are still categories (SPEC): compare on the rest
    kept = [np.isin(weighted.categories_[f], repeated.categories_[f]) for f in range(X.shape[1])]
    for f in range(X.shape[1]):
        np.testing.assert_array_equal(
            weighted.category_count_[f][:, kept[f]], repeated.category_count_[f]
        )
    if smoothing in ("heb-m", "m-estimate"):  # pooled means ignore zero-weight categories
        np.testing.assert_allclose(weighted.concentration_, repeated.concentration_, rtol=1e-12)
        np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X), rtol=1e-10)


def test_zero_weight_class_is_kept():
    X = np.array([[0], [1], [1], [0]])
    y = np.array([0, 1, 1, 2])
    model = CategoricalNB().fit(X, y, sample_weight=[1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])
    np.testing.assert_array_equal(model.class_count_, [1.0, 2.0, 0.0])
    assert np.all(np.isfinite(model.predict_log_proba(X)))


def test_negative_codes():
    X = np.array([[-3, -1], [-3, 5], [7, -1], [7, 5]] * 5)
    y = np.array([0, 1, 1, 0] * 5)
    model = CategoricalNB(smoothing="laplace").fit(X, y)
    np.testing.assert_array_equal(model.categories_[0], [-3, 7])
    np.testing.assert_allclose(
        model.predict_proba(X),
        CategoricalNB(smoothing="laplace").fit(X + 10, y).predict_proba(X + 10),
    )


def test_pickle_round_trip_and_clone(data):
    X, y = data
    model = CategoricalNB(n_jobs=2).fit(X, y)
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))
    np.testing.assert_array_equal(restored.concentration_, model.concentration_)
    for f in range(X.shape[1]):
        np.testing.assert_array_equal(restored.categories_[f], model.categories_[f])
    fresh = clone(model)
    assert fresh.get_params() == model.get_params()
    assert not hasattr(fresh, "classes_")
    np.testing.assert_array_equal(fresh.fit(X, y).predict_proba(X), model.predict_proba(X))


@pytest.mark.parametrize("smoothing", ["heb-m", "heb-u", "laplace"])
def test_thread_count_does_not_change_results(data, smoothing):
    X, y = data
    one = CategoricalNB(smoothing=smoothing, n_jobs=1).fit(X, y)
    two = CategoricalNB(smoothing=smoothing, n_jobs=2).fit(X, y)
    every = CategoricalNB(smoothing=smoothing, n_jobs=-1).fit(X, y)
    for other in (two, every):
        np.testing.assert_array_equal(other.concentration_, one.concentration_)
        np.testing.assert_array_equal(
            other.predict_joint_log_proba(X), one.predict_joint_log_proba(X)
        )
        np.testing.assert_array_equal(other.predict_proba(X), one.predict_proba(X))


def test_solver_diagnostics(data):
    X, y = data
    model = CategoricalNB().fit(X, y)
    assert model.converged_.all()
    assert model.n_iter_.shape == model.concentration_.shape == (3, 6)
    low, high = model.concentration_bounds
    assert np.all((model.concentration_ >= low) & (model.concentration_ <= high))
    assert np.all(np.isfinite(model.log_evidence_))


def _fit_in_child(queue, X, y):
    model = CategoricalNB(n_jobs=2).fit(X, y)
    queue.put(model.predict_proba(X[:5]))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork with live threads (3.12+)
def test_thread_pools_survive_fork(data):
    """A forked child builds its own thread pool instead of waiting on the parent's."""
    import multiprocessing

    X, y = data
    parent = CategoricalNB(n_jobs=2).fit(X, y)  # the parent now holds a 2-thread pool
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_fit_in_child, args=(queue, X, y))
    child.start()
    result = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    np.testing.assert_array_equal(result, parent.predict_proba(X[:5]))


@pytest.mark.parametrize(
    ("make", "changes"),
    [
        (CategoricalNB, {"smoothing": "laplace", "class_prior": [0.9, 0.1]}),
        (CategoricalNB, {"min_count": 1e6, "concentration_bounds": (5.0, 5.0)}),
        (AODE, {"smoothing": "laplace", "min_parent_count": 1000}),
        (AODE, {"prior": "pooled", "fit_prior": False}),
    ],
)
@pytest.mark.parametrize("update", ["fit", "partial_fit"])
def test_set_params_after_an_update_changes_only_the_next_one(make, changes, update):
    """As in scikit-learn, a fitted model is the one its last fit made: set_params
    afterwards changes the next fit. After partial_fit the model is solved when first
    used, and that solve read the parameters of that moment; AODE's scorer read
    ``min_parent_count`` at every prediction."""
    rng = np.random.default_rng(13)
    X, y = rng.integers(0, 4, size=(100, 3)), rng.integers(0, 2, size=100)
    reference = getattr(make(), update)(X, y).predict_proba(X)
    model = getattr(make(), update)(X, y)
    model.set_params(**changes)
    np.testing.assert_array_equal(model.predict_proba(X), reference)
    # and the next update uses them, as a fresh fit with them would
    refitted = model.fit(X, y).predict_proba(X)
    np.testing.assert_allclose(refitted, make(**changes).fit(X, y).predict_proba(X))
    assert np.abs(refitted - reference).max() > 1e-3


def test_an_invalid_parameter_set_after_partial_fit_fails_at_the_next_update():
    rng = np.random.default_rng(14)
    X, y = rng.integers(0, 4, size=(60, 2)), rng.integers(0, 2, size=60)
    model = CategoricalNB().partial_fit(X, y)
    expected = CategoricalNB().partial_fit(X, y).predict_proba(X)
    model.set_params(smoothing="bogus")
    np.testing.assert_array_equal(model.predict_proba(X), expected)
    with pytest.raises(ValueError, match="smoothing"):
        model.partial_fit(X, y)
