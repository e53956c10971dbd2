"""CategoricalNB.partial_fit and forgetting (SPEC "Online learning and forgetting").

The references are computed here: a single ``fit`` on the concatenated stream, counts
built with numpy from the raw rows, and the smoothing formula written out."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from hebnb import AODE, CategoricalNB, MixedNB


def _stream(seed=0, n_rows=1200, n_features=4):
    """Rows whose later part holds categories the earlier part never shows."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 12, size=(n_rows, n_features)).astype(object)
    X[n_rows // 2 :, 1] = rng.integers(0, 40, size=n_rows - n_rows // 2)  # vocabulary grows
    y = (X[:, 0].astype(int) % 3 + rng.integers(0, 2, size=n_rows)) % 3
    X[rng.random(X.shape) < 0.05] = None
    return X, np.array(["a", "b", "c"])[y]


def _batches(n_rows, sizes):
    start = 0
    for size in sizes:
        yield slice(start, min(start + size, n_rows))
        start += size


@pytest.mark.parametrize("smoothing", ["heb-m", "heb-u", "laplace", "m-estimate"])
def test_a_sequence_of_partial_fits_is_one_fit(smoothing):
    X, y = _stream()
    weights = np.random.default_rng(1).uniform(0.2, 3.0, size=y.shape[0])
    full = CategoricalNB(smoothing=smoothing).fit(X, y, sample_weight=weights)
    online = CategoricalNB(smoothing=smoothing)
    for rows in _batches(y.shape[0], [50, 300, 1, 400, 449]):
        online.partial_fit(X[rows], y[rows], classes=["c", "a", "b"], sample_weight=weights[rows])
    np.testing.assert_allclose(online.predict_proba(X), full.predict_proba(X), rtol=0, atol=1e-10)
    np.testing.assert_allclose(online.concentration_, full.concentration_, rtol=1e-10)
    np.testing.assert_allclose(online.class_count_, full.class_count_, rtol=1e-12)
    for a, b in zip(online.categories_, full.categories_):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(online.category_count_, full.category_count_):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert online.n_categories_[1] > 12  # the vocabulary grew after the first batches


def test_vocabulary_grows_and_keeps_sorted_order():
    model = CategoricalNB(smoothing="laplace")
    model.partial_fit([["m"], ["c"]], [0, 1])
    assert list(model.categories_[0]) == ["c", "m"]
    model.partial_fit([["a"], ["z"], ["m"]], [1, 0, 0])
    assert list(model.categories_[0]) == ["a", "c", "m", "z"]
    # counts followed their categories: "m" twice in class 0, "c" once in class 1
    np.testing.assert_array_equal(model.category_count_[0], [[0, 0, 2, 1], [1, 1, 0, 0]])
    # values are compared by type and value: the int 3 is a new category, sorted
    # before the strings
    model.partial_fit([[3]], [0])
    assert list(model.categories_[0]) == [3, "a", "c", "m", "z"]


def _numpy_counts(codes, labels, weights, n_classes, n_values):
    counts = np.zeros((n_classes, n_values))
    present = codes >= 0
    np.add.at(counts, (labels[present], codes[present]), weights[present])
    return counts


def test_forgetting_decays_stored_counts_by_gamma_to_the_batch_size():
    rng = np.random.default_rng(3)
    gamma, sizes = 0.97, [40, 25, 60, 10]
    X = rng.integers(0, 5, size=(sum(sizes), 1))
    y = rng.integers(0, 2, size=sum(sizes))
    model = CategoricalNB(smoothing="laplace", learning_rate=gamma)
    expected_counts = np.zeros((2, 5))
    expected_class = np.zeros(2)
    for rows in _batches(y.shape[0], sizes):
        model.partial_fit(X[rows], y[rows], classes=[0, 1])
        n = rows.stop - rows.start
        batch = _numpy_counts(X[rows, 0], y[rows], np.ones(n), 2, 5)
        expected_counts = gamma**n * expected_counts + batch
        expected_class = gamma**n * expected_class + np.bincount(y[rows], minlength=2)
    assert np.all(np.isin(np.arange(5), X[: sizes[0], 0]))  # every value in the first batch
    np.testing.assert_allclose(model.category_count_[0], expected_counts, rtol=1e-13)
    np.testing.assert_allclose(model.class_count_, expected_class, rtol=1e-13)
    # Laplace on fractional counts: the pseudo-count 1 per cell did not decay
    theta = (expected_counts + 1.0) / (expected_counts.sum(axis=1, keepdims=True) + 5.0)
    np.testing.assert_allclose(np.exp(model.feature_log_prob_[0]), theta, rtol=1e-13)
    prior = (expected_class + 1.0) / (expected_class.sum() + 2.0)
    np.testing.assert_allclose(np.exp(model.class_log_prior_), prior, rtol=1e-13)


def test_forgetting_equals_a_fit_with_decayed_weights():
    """gamma^(rows after a row's batch) as sample weights gives the same HEB-M model."""
    X, y = _stream(seed=5, n_rows=900)
    gamma, sizes = 0.995, [200, 300, 150, 250]
    online = CategoricalNB(smoothing="heb-m", learning_rate=gamma)
    weights = np.empty(y.shape[0])
    for rows in _batches(y.shape[0], sizes):
        online.partial_fit(X[rows], y[rows], classes=["a", "b", "c"])
        weights[rows] = gamma ** (y.shape[0] - rows.stop)
    assert weights.min() < 0.1
    weighted = CategoricalNB(smoothing="heb-m").fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(online.concentration_, weighted.concentration_, rtol=1e-8)
    np.testing.assert_allclose(online.predict_proba(X), weighted.predict_proba(X), atol=1e-10)


def test_strong_forgetting_returns_to_the_prior_not_to_nothing():
    model = CategoricalNB(smoothing="laplace", learning_rate=0.5)
    model.partial_fit([[0]] * 50 + [[1]] * 50, [0] * 50 + [1] * 50)
    for _ in range(30):
        model.partial_fit([[2], [2]], [0, 1])
    proba = model.predict_proba([[0], [1], [2]])
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba[:2], 0.5, atol=1e-6)  # old evidence is gone


def test_class_declaration_rules():
    X = [[0], [1], [1]]
    # taken from the first batch when not declared
    model = CategoricalNB().partial_fit(X, [1, 0, 1])
    np.testing.assert_array_equal(model.classes_, [0, 1])
    with pytest.raises(ValueError, match="not in classes"):
        model.partial_fit(X, [0, 2, 1])
    with pytest.raises(ValueError, match="not the same"):
        model.partial_fit(X, [0, 1, 1], classes=[0, 1, 2])
    model.partial_fit(X, [0, 1, 1], classes=[1, 0])  # the same set, in any order
    # a class declared up front may appear later
    model = CategoricalNB(smoothing="laplace").partial_fit(X, [0, 0, 0], classes=[0, 1])
    assert model.class_count_.tolist() == [3.0, 0.0]
    model.partial_fit([[1]], [1])
    assert model.class_count_.tolist() == [3.0, 1.0]
    with pytest.raises(ValueError, match="greater than one"):
        CategoricalNB().partial_fit(X, [0, 0, 0])
    with pytest.raises(ValueError, match="not in classes"):
        CategoricalNB().partial_fit(X, [0, 1, 5], classes=[0, 1])


def test_errors_and_resets():
    X, y = _stream(seed=2, n_rows=200)
    for bad in [0.0, 1.5, -0.1, "fast", True, np.nan]:
        with pytest.raises(ValueError, match="learning_rate"):
            CategoricalNB(learning_rate=bad).partial_fit(X, y)
    model = CategoricalNB().partial_fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.partial_fit(X[:, :2], y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        model.partial_fit(X, y[:-1])
    # fit starts over: it forgets what partial_fit added
    model.partial_fit(X, y)
    refit = model.fit(X, y)
    np.testing.assert_allclose(refit.class_count_, CategoricalNB().fit(X, y).class_count_)


def test_partial_fit_after_pickling_and_with_dataframes():
    X, y = _stream(seed=4, n_rows=600)
    frame = pd.DataFrame(X, columns=["f0", "f1", "f2", "f3"])
    model = CategoricalNB().partial_fit(frame.iloc[:300], y[:300])
    model = pickle.loads(pickle.dumps(model))
    model.partial_fit(frame.iloc[300:], y[300:])
    full = CategoricalNB().fit(frame, y)
    np.testing.assert_allclose(model.predict_proba(frame), full.predict_proba(frame), atol=1e-10)
    with pytest.raises(ValueError, match="feature names"):
        model.partial_fit(frame.rename(columns={"f0": "g"}), y)


def _read_only_copy(model, how, tmp_path):
    """The model as a memory-mapped joblib file or pickle protocol-5 buffers load it:
    its arrays read-only."""
    if how == "joblib-mmap":
        joblib = pytest.importorskip("joblib")
        joblib.dump(model, tmp_path / "model.joblib")
        return joblib.load(tmp_path / "model.joblib", mmap_mode="r")
    buffers = []
    data = pickle.dumps(model, protocol=5, buffer_callback=buffers.append)
    return pickle.loads(data, buffers=[bytes(b.raw()) for b in buffers])


@pytest.mark.parametrize("how", ["joblib-mmap", "pickle-buffers"])
@pytest.mark.parametrize(
    "make",
    [
        CategoricalNB,
        lambda: CategoricalNB(learning_rate=0.99),
        AODE,
        lambda: AODE(learning_rate=0.99),
        lambda: MixedNB(models=[("c", CategoricalNB(), [0, 1, 2, 3])]),
    ],
)
@pytest.mark.parametrize("start", ["fit", "partial_fit"])
def test_a_model_loaded_read_only_streams_on(make, how, start, tmp_path):
    """A batch added into read-only count tables raised "The given array is not
    writeable": the stream takes its own copies and goes on as the model in memory."""
    X, y = _stream(seed=5, n_rows=400)
    X = np.where(pd.isna(X), -1, X).astype(np.int64)  # MixedNB: integer columns
    model = getattr(make(), start)(X[:200], y[:200])
    loaded = _read_only_copy(model, how, tmp_path)
    # what the test is about: the loaded model's arrays are read-only
    assert any(isinstance(v, np.ndarray) and not v.flags.writeable for v in vars(loaded).values())
    loaded.partial_fit(X[200:], y[200:])
    model.partial_fit(X[200:], y[200:])
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


@pytest.mark.parametrize(
    "make",
    [
        CategoricalNB,
        lambda: CategoricalNB(learning_rate=0.99),
        AODE,
        lambda: MixedNB(models=[("c", CategoricalNB(), [0, 1, 2, 3])]),
    ],
)
@pytest.mark.parametrize("start", ["fit", "partial_fit"])
def test_a_model_loaded_from_its_own_pickle_buffers_streams_on_alone(make, start):
    """Out-of-band pickle buffers loaded in the same process are the pickled model's
    memory, writeable: a stream added its batch into the original's count tables too."""
    X, y = _stream(seed=6, n_rows=400)
    X = np.where(pd.isna(X), -1, X).astype(np.int64)  # MixedNB: integer columns
    model = getattr(make(), start)(X[:200], y[:200])
    before = model.predict_proba(X)
    state = pickle.dumps(model)
    buffers = []
    data = pickle.dumps(model, protocol=5, buffer_callback=buffers.append)
    loaded = pickle.loads(data, buffers=buffers)  # zero-copy: the original's memory
    loaded.partial_fit(X[200:], y[200:])
    np.testing.assert_array_equal(model.predict_proba(X), before)
    assert pickle.dumps(model) == state
    model.partial_fit(X[200:], y[200:])
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_numeric_columns_grow_like_one_fit(dtype):
    rng = np.random.default_rng(7)
    X = rng.integers(-5, 5, size=(600, 3)).astype(dtype)
    X[300:, 0] = rng.integers(-50, 50, size=300)  # new values on both sides of the old ones
    if dtype is np.float64:
        X[rng.random(X.shape) < 0.1] = np.nan
    y = (rng.random(600) < 0.4).astype(int)
    online = CategoricalNB()
    for rows in _batches(600, [100, 200, 300]):
        online.partial_fit(X[rows], y[rows])
    full = CategoricalNB().fit(X, y)
    np.testing.assert_array_equal(online.categories_[0], full.categories_[0])
    assert online.categories_[0].dtype == full.categories_[0].dtype
    np.testing.assert_allclose(online.predict_proba(X), full.predict_proba(X), atol=1e-10)
    np.testing.assert_allclose(online.concentration_, full.concentration_, rtol=1e-10)


def _aode_stream(seed=0, n_rows=1500):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(n_rows, 4)).astype(float)
    X[n_rows // 2 :, 1] = rng.integers(-5, 30, size=n_rows - n_rows // 2)  # vocabulary grows
    y = ((X[:, 0] + X[:, 2] > 7) ^ (rng.random(n_rows) < 0.2)).astype(int)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"smoothing": "laplace"},
        {"prior": "pooled"},
        {"parent_smoothing": "heb"},
        {"max_parent_cardinality": 10},  # feature 1 outgrows the cap halfway
        {"max_joint_cells": 300},
    ],
)
def test_aode_partial_fits_are_one_fit(params):
    X, y = _aode_stream()
    weights = np.random.default_rng(1).uniform(0.2, 2.0, size=y.shape[0])
    full = AODE(**params).fit(X, y, sample_weight=weights)
    online = AODE(**params)
    for rows in _batches(y.shape[0], [300, 1, 450, 749]):
        online.partial_fit(X[rows], y[rows], classes=[0, 1], sample_weight=weights[rows])
    np.testing.assert_allclose(online.predict_proba(X), full.predict_proba(X), atol=1e-10)
    np.testing.assert_allclose(online.concentration_, full.concentration_, rtol=1e-10)
    np.testing.assert_array_equal(online.capped_, full.capped_)
    np.testing.assert_array_equal(online.pair_indptr_, full.pair_indptr_)
    np.testing.assert_array_equal(online.pair_indices_, full.pair_indices_)
    np.testing.assert_allclose(online.pair_counts_, full.pair_counts_, rtol=1e-12)


def test_aode_forgetting_equals_a_fit_with_decayed_weights():
    X, y = _aode_stream(seed=2)
    gamma, sizes = 0.998, [500, 400, 600]
    online = AODE(learning_rate=gamma)
    weights = np.empty(y.shape[0])
    for rows in _batches(y.shape[0], sizes):
        online.partial_fit(X[rows], y[rows], classes=[0, 1])
        weights[rows] = gamma ** (y.shape[0] - rows.stop)
    weighted = AODE().fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(online.pair_counts_, weighted.pair_counts_, rtol=1e-12)
    np.testing.assert_allclose(online.class_count_, weighted.class_count_, rtol=1e-12)
    np.testing.assert_allclose(online.concentration_, weighted.concentration_, rtol=1e-8)
    np.testing.assert_allclose(online.predict_proba(X), weighted.predict_proba(X), atol=1e-10)
    with pytest.raises(ValueError, match="not the same"):
        online.partial_fit(X[:5], y[:5], classes=[0, 1, 2])


@pytest.mark.parametrize("estimator", [CategoricalNB, AODE])
def test_a_failed_batch_leaves_the_model_unchanged(estimator):
    X = np.array([["a", "x"], ["b", "y"], ["a", "y"], ["b", "x"]], dtype=object)
    y = np.array([0, 1, 0, 1])
    model = estimator().partial_fit(X, y)
    before = model.predict_proba(X)
    categories = [c.copy() for c in model.categories_]
    # feature 0 brings a new category, feature 1 a value that cannot be a category
    bad = np.array([["c", "w"], ["a", "x"]], dtype=object)
    bad[0, 1] = [3]
    with pytest.raises(ValueError, match="cannot be categories"):
        model.partial_fit(bad, [0, 1])
    with pytest.raises(ValueError, match="not in classes"):
        model.partial_fit(np.array([["c", "z"]], dtype=object), [7])
    for now, then in zip(model.categories_, categories):
        np.testing.assert_array_equal(now, then)
    np.testing.assert_array_equal(model.predict_proba(X), before)
    model.partial_fit(np.array([["c", "z"]], dtype=object), [1])  # and it still learns
    assert list(model.categories_[0]) == ["a", "b", "c"]


def test_aode_cells_forgotten_to_zero_are_dropped():
    """gamma ** n underflows to 0: the stored cells go, as a fit with weight 0 drops them."""
    X, y = _aode_stream(seed=3, n_rows=600)
    online = AODE(learning_rate=0.01).partial_fit(X[:300], y[:300])
    online.partial_fit(X[300:], y[300:])
    weights = np.r_[np.zeros(300), np.ones(300)]
    refit = AODE().fit(X, y, sample_weight=weights)
    np.testing.assert_array_equal(online.pair_indptr_, refit.pair_indptr_)
    np.testing.assert_array_equal(online.pair_indices_, refit.pair_indices_)
    np.testing.assert_array_equal(online.pair_counts_, refit.pair_counts_)
    np.testing.assert_allclose(online.predict_proba(X), refit.predict_proba(X), atol=1e-10)


@pytest.mark.parametrize("estimator", [CategoricalNB, AODE])
def test_a_stream_keeps_the_categories_it_started_with(estimator):
    """set_params(categories=...) between batches was ignored silently: a value outside
    the new declaration joined, n_categories_ followed the old one. A changed declaration
    is refused (the model as it was); the same one, given again, is not a change."""
    X = np.array([[0, 0], [1, 1], [2, 2], [0, 1]])
    y = [0, 1, 0, 1]
    for first, then in (("auto", [[0, 1, 2, 3], [0, 1, 2]]), ([[0, 1, 2], [0, 1, 2]], "auto")):
        model = estimator(categories=first).partial_fit(X, y)
        before = model.predict_proba(X)
        model.set_params(categories=then)
        with pytest.raises(ValueError, match="categories changed since the first partial_fit"):
            model.partial_fit(np.array([[0, 2]]), [0])
        np.testing.assert_array_equal(model.predict_proba(X), before)
    same = [np.array([0, 1, 2]), [0, 1, 2]]
    model = estimator(categories=same).partial_fit(X, y)
    model.set_params(categories=[[0, 1, 2], np.array([0, 1, 2])]).partial_fit(X[:1], y[:1])
    assert model.n_categories_.tolist() == [3, 3]


def _type_ii_maximiser(counts: np.ndarray, mean: np.ndarray, low: float, high: float) -> float:
    """argmax over m in [low, high] of the Dirichlet-multinomial evidence (SPEC eq. 5),
    from scipy's gammaln: a grid in ln m, then a bounded search around its best point."""
    from scipy.optimize import minimize_scalar
    from scipy.special import gammaln

    seen = counts > 0

    def minus_evidence(t: float) -> float:
        m = np.exp(t)
        cells = gammaln(counts[seen] + m * mean[seen]) - gammaln(m * mean[seen])
        return -(gammaln(m) - gammaln(counts.sum() + m) + cells.sum())

    grid = np.linspace(np.log(low), np.log(high), 2001)
    values = [minus_evidence(t) for t in grid]
    best = int(np.argmin(values))
    around = (grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)])
    refined = minimize_scalar(
        minus_evidence, bounds=around, method="bounded", options={"xatol": 1e-12}
    )
    return float(np.exp(refined.x))


@pytest.mark.parametrize("how", ["forgetting", "weights"])
def test_a_category_forgetting_has_all_but_erased_keeps_its_place_in_the_evidence(how):
    """A category seen once and decayed for 40,000 rows has a count of ~1e-175 and a
    pooled mean ~1e-178: normal numbers, whose product in the digamma difference's
    recurrence underflowed to 0. The gradient at the upper bound came out +inf and the
    class's concentration 1e4 (the evidence peaks near 34); every probability moved."""
    rng = np.random.default_rng(0)

    def batch(n):
        y = rng.integers(0, 2, n)
        x = np.where(
            y == 0, rng.choice(3, n, p=[0.6, 0.2, 0.2]), rng.choice(3, n, p=[0.2, 0.4, 0.4])
        )
        return x[:, None], y

    if how == "forgetting":
        model = CategoricalNB(learning_rate=0.99)
        X, y = batch(1000)
        X[0], y[0] = 9, 0  # category 9: seen once, in the first batch only
        model.partial_fit(X, y, classes=[0, 1])
        for _ in range(40):
            model.partial_fit(*batch(1000))
    else:
        X, y = batch(1000)
        X[0], y[0] = 9, 0
        weights = np.ones(1000)
        weights[0] = 1e-250
        model = CategoricalNB().fit(X, y, sample_weight=weights)
    counts, mean = model.category_count_[0], model.prior_mean_[0]
    assert 0 < counts[0, -1] < 1e-170 and model.categories_[0][-1] == 9
    low, high = model.concentration_bounds
    for c in range(2):
        expected = _type_ii_maximiser(counts[c], mean, low, high)
        assert model.concentration_[c, 0] == pytest.approx(expected, rel=1e-6)
