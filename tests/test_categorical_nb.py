"""CategoricalNB against SPEC: an independent numpy/scipy computation, scikit-learn where
the models coincide, and the Type-II ML solver against scipy's bounded minimiser."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.naive_bayes import CategoricalNB as SklearnCategoricalNB

from hebnb import CategoricalNB
from reference_nb import ReferenceNB, log_evidence, type2_concentration

SMOOTHERS = ["laplace", "lidstone", "kt", "m-estimate", "target-encoding", "heb-u", "heb-m"]


def random_rows(rng, n_rows, cardinalities, missing_rate=0.1, n_classes=3):
    """Object rows of mixed ints and strings with missing values; over-dispersed by class."""
    y = rng.integers(0, n_classes, size=n_rows)
    rows = []
    for s in range(n_rows):
        row = []
        for f, k in enumerate(cardinalities):
            if rng.random() < missing_rate:
                row.append(None if f % 2 else np.nan)
                continue
            # class-dependent skew so the concentrations are interior
            value = int(min(k - 1, rng.geometric(0.25 + 0.2 * y[s] / n_classes) - 1))
            row.append(f"v{value}" if f % 2 else value)
        rows.append(row)
    return rows, y


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    cardinalities = [2, 5, 9, 14]
    rows, y = random_rows(rng, 400, cardinalities)
    test_rows, _ = random_rows(rng, 80, cardinalities)
    # unknown categories at predict time
    test_rows[0][0] = 99
    test_rows[1][1] = "never-seen"
    weights = rng.uniform(0.2, 3.0, size=len(rows))
    weights[:5] = 0.0
    X = np.empty((len(rows), 4), dtype=object)
    X[:] = rows
    X_test = np.empty((len(test_rows), 4), dtype=object)
    X_test[:] = test_rows
    return X, y, weights, X_test


@pytest.mark.parametrize("smoothing", SMOOTHERS)
@pytest.mark.parametrize("weighted", [False, True])
def test_predict_proba_matches_reference(data, smoothing, weighted):
    X, y, weights, X_test = data
    w = weights if weighted else None
    model = CategoricalNB(smoothing=smoothing, alpha=0.3).fit(X, y, sample_weight=w)
    reference = ReferenceNB(smoothing, alpha=0.3).fit(X, y, w)
    np.testing.assert_allclose(model.concentration_, reference.concentration, rtol=1e-9)
    np.testing.assert_allclose(
        model.predict_joint_log_proba(X_test), reference.joint_log_likelihood(X_test), rtol=1e-10
    )
    np.testing.assert_allclose(
        model.predict_proba(X_test), reference.predict_proba(X_test), rtol=1e-10
    )
    for f in range(X.shape[1]):
        np.testing.assert_allclose(model.feature_log_prob_[f], reference.tables[f], rtol=1e-10)
        np.testing.assert_array_equal(model.category_count_[f], reference.counts[f])


@pytest.mark.parametrize("smoothing", ["heb-u", "heb-m"])
def test_concentrations_match_scipy_bounded_minimiser(data, smoothing):
    X, y, weights, _ = data
    model = CategoricalNB(smoothing=smoothing).fit(X, y, sample_weight=weights)
    low, high = model.concentration_bounds
    n_interior = 0
    for c in range(len(model.classes_)):
        for f in range(X.shape[1]):
            counts, mean = model.category_count_[f][c], model.prior_mean_[f]
            found = model.concentration_[c, f]
            if not low < found < high:
                continue
            n_interior += 1
            result = minimize_scalar(
                lambda t, counts=counts, mean=mean: -log_evidence(np.exp(t), counts, mean),
                bounds=(np.log(low), np.log(high)),
                method="bounded",
                options={"xatol": 1e-12, "maxiter": 2000},
            )
            best = np.exp(result.x)
            ours, theirs = log_evidence(found, counts, mean), log_evidence(best, counts, mean)
            assert abs(found - best) <= 1e-6 * best or ours >= theirs - 1e-9 * abs(theirs)
            # and the root of the derivative, found independently, to far tighter accuracy
            assert found == pytest.approx(type2_concentration(counts, mean, low, high), rel=1e-9)
    assert n_interior >= 4


def test_vertex_case_gives_the_lower_bound():
    # class 0 always shows value 0 of a 4-valued feature: counts (N, 0, 0, 0)
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 50)
    x = np.where(y == 0, 0, rng.integers(0, 4, size=100))
    model = CategoricalNB(smoothing="heb-u", concentration_bounds=(1e-2, 1e4)).fit(x[:, None], y)
    assert model.concentration_[0, 0] == 1e-2
    model = CategoricalNB(smoothing="heb-m").fit(x[:, None], y)
    assert model.concentration_[0, 0] == 1e-2


@pytest.mark.parametrize("smoothing", ["heb-u", "heb-m"])
def test_a_feature_seen_once_in_a_class_gives_the_lower_bound(smoothing):
    """A class of ten rows with the feature present in one: l(m) = ln mu_v for every m, a
    flat evidence. SPEC reports m_min where l is flat; the solver followed its gradient's
    rounding instead and answered m_max (the prior mean, the row ignored) for heb-u and
    m_min for heb-m. Both give m_min now, its evidence ln mu_v (numpy)."""
    X = np.array([[0.0]] + [[np.nan]] * 9 + [[v] for v in (0, 1, 2, 1, 2, 0, 1, 2, 1, 2)])
    y = np.array(["a"] * 10 + ["b"] * 10)
    model = CategoricalNB(smoothing=smoothing).fit(X, y)
    assert model.concentration_[0, 0] == 1e-2
    assert model.n_iter_[0, 0] == 0
    mean = model.prior_mean_[0][0] if smoothing == "heb-m" else 1.0 / 3.0
    np.testing.assert_allclose(model.log_evidence_[0, 0], np.log(mean), rtol=1e-12)


def test_no_overdispersion_gives_the_upper_bound():
    # both classes have counts exactly proportional to the pooled marginal
    values = np.array([0] * 20 + [1] * 10 + [2] * 10 + [0] * 40 + [1] * 20 + [2] * 20)
    y = np.array([0] * 40 + [1] * 80)
    model = CategoricalNB(smoothing="heb-m").fit(values[:, None], y)
    np.testing.assert_array_equal(model.concentration_[:, 0], [1e4, 1e4])
    # the general criterion sum_v n_v (n_v - 1) / mu_v <= N (N - 1) under a uniform mean
    counts = np.array([7, 6, 7, 6])  # under-dispersed relative to 1/4 each
    N, mu = counts.sum(), np.full(4, 0.25)
    assert np.sum(counts * (counts - 1) / mu) <= N * (N - 1)
    x = np.repeat(np.arange(4), counts)
    x = np.concatenate([x, np.repeat(np.arange(4), [20, 1, 1, 1])])
    y = np.array([0] * N + [1] * 23)
    model = CategoricalNB(smoothing="heb-u").fit(x[:, None], y)
    assert model.concentration_[0, 0] == 1e4
    assert model.concentration_[1, 0] < 1e4


def test_low_count_classes_fall_back_to_k():
    x = np.array([0, 1, 2, 3, 4, 0, 1, 1, 1, 2, 2, 2] * 3 + [0, 1, 2])
    y = np.array([0] * 36 + [1] * 3)
    model = CategoricalNB(smoothing="heb-m", min_count=10).fit(x[:, None], y)
    assert model.concentration_[1, 0] == 5.0
    assert model.n_iter_[1, 0] == 0
    assert model.concentration_[0, 0] != 5.0


@pytest.mark.parametrize("alpha", [1.0, 0.25, 3.0])
def test_lidstone_tables_equal_scikit_learn(alpha):
    rng = np.random.default_rng(3)
    X = rng.integers(0, 6, size=(300, 5))
    X[:6] = np.arange(6)[:, None]  # every category seen, so both know the same K_f
    y = rng.integers(0, 3, size=300)
    ours = CategoricalNB(smoothing="lidstone", alpha=alpha).fit(X, y)
    theirs = SklearnCategoricalNB(alpha=alpha).fit(X, y)
    for f in range(5):
        np.testing.assert_allclose(
            ours.feature_log_prob_[f], theirs.feature_log_prob_[f], rtol=1e-12
        )
        np.testing.assert_array_equal(ours.category_count_[f], theirs.category_count_[f])
    if alpha == 1.0:
        laplace = CategoricalNB(smoothing="laplace").fit(X, y)
        for f in range(5):
            np.testing.assert_allclose(
                laplace.feature_log_prob_[f], theirs.feature_log_prob_[f], rtol=1e-12
            )


def test_heb_u_with_k_concentration_is_laplace():
    rng = np.random.default_rng(4)
    X = rng.integers(0, 7, size=(200, 3))
    y = rng.integers(0, 2, size=200)
    laplace = CategoricalNB(smoothing="laplace").fit(X, y)
    recovered = CategoricalNB(smoothing="heb-u", min_count=1e9).fit(
        X, y
    )  # every class falls back to K_f
    np.testing.assert_allclose(recovered.predict_proba(X), laplace.predict_proba(X), rtol=1e-12)


def test_heb_m_endpoints_are_mle_and_marginal():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 4, size=(500, 2))
    y = rng.integers(0, 2, size=500)
    tiny = CategoricalNB(smoothing="heb-m", concentration_bounds=(1e-9, 1e-9)).fit(X, y)
    huge = CategoricalNB(smoothing="heb-m", concentration_bounds=(1e9, 1e9)).fit(X, y)
    for f in range(2):
        counts = tiny.category_count_[f]
        mle = counts / counts.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(np.exp(tiny.feature_log_prob_[f]), mle, rtol=1e-8)
        marginal = counts.sum(axis=0) / counts.sum()
        np.testing.assert_allclose(
            np.exp(huge.feature_log_prob_[f]), np.tile(marginal, (2, 1)), rtol=1e-6
        )


@pytest.mark.parametrize("smoothing", SMOOTHERS)
def test_rows_sum_to_one_and_scores_stay_finite_with_many_features(smoothing):
    rng = np.random.default_rng(6)
    X = rng.integers(0, 3, size=(60, 10_000))
    y = rng.integers(0, 2, size=60)
    model = CategoricalNB(smoothing=smoothing).fit(X, y)
    joint = model.predict_joint_log_proba(X)
    proba = model.predict_proba(X)
    assert np.all(np.isfinite(joint)) and np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)


def test_zero_mean_category_is_skipped_like_unknown():
    # value 9 is seen only with weight 0: a known category with pooled mean 0
    X = np.array([[0], [1], [0], [1], [9]] * 4)
    y = np.array([0, 1, 0, 0, 1] * 4)
    w = np.array([1.0, 1.0, 1.0, 1.0, 0.0] * 4)
    model = CategoricalNB(smoothing="heb-m").fit(X, y, sample_weight=w)
    assert 9 in model.categories_[0]
    assert np.all(np.isneginf(model.feature_log_prob_[0][:, 2]))
    np.testing.assert_array_equal(model.predict_joint_log_proba([[9]]), [model.class_log_prior_])


@pytest.mark.parametrize("seed", range(6))
def test_solver_on_many_random_distributions(seed):
    """Fractional and whole counts, sparse and dense, over-dispersed or not: the learned
    concentration is the root found independently by scipy on the evidence's derivative."""
    rng = np.random.default_rng(100 + seed)
    n_classes, n_features = 3, 8
    cardinalities = rng.integers(2, 400, size=n_features)
    columns = []
    for k in cardinalities:
        popularity = rng.dirichlet(np.full(k, rng.choice([0.05, 0.5, 5.0])))
        columns.append(rng.choice(k, size=900, p=popularity))
    X = np.column_stack(columns)
    y = rng.integers(0, n_classes, size=900)
    weights = rng.choice([1.0, 0.5, 2.25, rng.uniform(0.01, 3.0)], size=900)
    for smoothing in ("heb-u", "heb-m"):
        model = CategoricalNB(smoothing=smoothing).fit(X, y, sample_weight=weights)
        for c in range(n_classes):
            for f in range(n_features):
                counts, mean = model.category_count_[f][c], model.prior_mean_[f]
                expected = type2_concentration(counts, mean, 1e-2, 1e4)
                assert model.concentration_[c, f] == pytest.approx(expected, rel=1e-8)
