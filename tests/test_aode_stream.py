"""AODE.partial_fit at the cost of the batch: the batches kept between calls and merged
into the stored tables, the model solved on first use (SPEC "Online learning and
forgetting").

The references are one ``fit`` on the concatenated rows and pair counts tallied with
numpy from the raw rows."""

from __future__ import annotations

import copy
import itertools
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

import hebnb.aode
from hebnb import AODE


def _rows(seed, n_rows=1200, late=True):
    """Four columns: ints whose vocabulary grows late (feature 1), strings (feature 2,
    new ones in the last quarter), missing values everywhere; y depends on two columns."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, size=(n_rows, 4)).astype(object)
    if late:
        X[n_rows // 2 :, 1] = rng.integers(-8, 40, size=n_rows - n_rows // 2)
    words = np.array(["ant", "bee", "cat", "dog", "eel"], dtype=object)
    X[:, 2] = words[rng.integers(0, 5, size=n_rows)]
    if late:
        X[3 * n_rows // 4 :, 2] = np.array([f"w{k}" for k in rng.integers(0, 30, n_rows // 4)])
    y = ((X[:, 0].astype(int) + X[:, 3].astype(int) > 5) ^ (rng.random(n_rows) < 0.2)).astype(int)
    X[rng.random(X.shape) < 0.05] = None
    return pd.DataFrame(X, columns=["a", "b", "c", "d"]), y


def _random_splits(n_rows, rng, largest=200):
    """Random batch boundaries, batches of 1 to ``largest`` rows."""
    sizes = []
    while sum(sizes) < n_rows:
        sizes.append(int(rng.integers(1, largest + 1)))
    bounds = np.minimum(np.cumsum([0, *sizes]), n_rows)
    return [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds) if b > a]


def _same_model(online, full, *, atol=1e-10):
    X_test, _ = _rows(99, n_rows=300)
    np.testing.assert_allclose(
        online.predict_proba(X_test), full.predict_proba(X_test), rtol=0, atol=atol
    )
    np.testing.assert_allclose(online.concentration_, full.concentration_, rtol=1e-10)
    np.testing.assert_allclose(online.class_count_, full.class_count_, rtol=1e-12)
    np.testing.assert_array_equal(online.capped_, full.capped_)
    np.testing.assert_array_equal(online.super_parents_, full.super_parents_)
    for a, b in zip(online.categories_, full.categories_):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(online.pair_features_, full.pair_features_)
    np.testing.assert_array_equal(online.pair_indptr_, full.pair_indptr_)
    np.testing.assert_array_equal(online.pair_indices_, full.pair_indices_)
    np.testing.assert_allclose(online.pair_counts_, full.pair_counts_, rtol=1e-12)


PARAMS = [
    {},
    {"smoothing": "laplace", "parent_smoothing": "laplace"},
    {"prior": "pooled"},
    {"max_parents": 2},
    {"max_parent_cardinality": 12},  # feature 1 outgrows the cap halfway
    {"max_joint_cells": 400},
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("params", PARAMS)
def test_random_batches_are_one_fit(params, seed):
    X, y = _rows(seed)
    rng = np.random.default_rng(seed + 10)
    weights = rng.uniform(0.2, 3.0, size=y.shape[0])
    full = AODE(**params).fit(X, y, sample_weight=weights)
    online = AODE(**params)
    splits = _random_splits(y.shape[0], rng)
    if "max_parents" in params:
        # the super-parents are those of the first batch: one large enough to agree
        splits = [slice(0, 400), *_random_splits(y.shape[0] - 400, rng)]
        splits[1:] = [slice(s.start + 400, s.stop + 400) for s in splits[1:]]
    for rows in splits:
        online.partial_fit(X.iloc[rows], y[rows], classes=[0, 1], sample_weight=weights[rows])
    assert online.n_categories_[1] > 6 and online.n_categories_[2] > 5  # grew late
    _same_model(online, full)


@pytest.mark.parametrize("params", PARAMS[:3])
def test_whole_counts_stay_uint32_through_a_stream_until_forgotten(params):
    """Whole sample weights are stored as uint32 counts, and merging whole batches without
    forgetting keeps them uint32 (the same model as one fit); forgetting makes them
    fractional, stored as float64."""
    X, y = _rows(7)
    rng = np.random.default_rng(7)
    whole = rng.integers(0, 4, size=y.shape[0]).astype(float)
    full = AODE(**params).fit(X, y, sample_weight=whole)
    online = AODE(**params)
    for rows in _random_splits(y.shape[0], rng, largest=150):
        online.partial_fit(X.iloc[rows], y[rows], classes=[0, 1], sample_weight=whole[rows])
    _same_model(online, full)
    assert full._pairs["counts"].dtype == np.uint32
    assert online._pairs["counts"].dtype == np.uint32
    np.testing.assert_array_equal(online.pair_counts_, full.pair_counts_)
    assert online.pair_counts_.dtype == np.float64
    online.set_params(learning_rate=0.99)
    online.partial_fit(X.iloc[:50], y[:50])
    assert online._pairs["counts"].dtype == np.float64
    weights = whole * 0.99**50
    weights[:50] += 1.0
    forgotten = AODE(**params).fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(online.pair_counts_, forgotten.pair_counts_, rtol=1e-12)
    _same_model(online, forgotten, atol=1e-9)


def test_batches_are_kept_and_merged_geometrically():
    """Small batches are kept, not counted, until their counting costs as much as the
    stored tables; nothing is solved until used."""
    X, y = _rows(3, n_rows=2000)
    online = AODE()
    kept, merges = [], 0
    for rows in _random_splits(y.shape[0], np.random.default_rng(0), largest=20):
        before = online.__dict__.get("_stream")
        online.partial_fit(X.iloc[rows], y[rows], classes=[0, 1])
        stream = online.__dict__["_stream"]
        assert "concentration_" not in online.__dict__ and "_model" not in online.__dict__
        kept.append(len(stream.pending))
        merges += before is not None and not stream.pending
    assert max(kept) >= 5  # batches waited
    assert 2 <= merges <= len(kept) / 3  # ... and were merged now and then, not every call
    _same_model(online, AODE().fit(X, y))


def test_fitted_attributes_are_exact_between_calls():
    X, y = _rows(4)
    online = AODE(prior="pooled")
    splits = _random_splits(y.shape[0], np.random.default_rng(4), largest=150)
    for k, rows in enumerate(splits):
        online.partial_fit(X.iloc[rows], y[rows], classes=[0, 1])
        if k % 3 == 0:
            seen = slice(0, rows.stop)
            full = AODE(prior="pooled").fit(X.iloc[seen], y[seen])
            read = ["pair_counts_", "n_iter_", "log_evidence_", "marginal_concentration_"]
            np.testing.assert_allclose(
                getattr(online, read[k % 4]), getattr(full, read[k % 4]), rtol=1e-10
            )
            _same_model(online, full)


def _decayed_pair_counts(X, y, weights, model):
    """N[c, u, v] of every stored pair, tallied with numpy from the raw rows, in the
    layout of ``pair_counts_`` (categories in sorted order)."""
    ranks = []
    for f, categories in enumerate(model.categories_):
        column = X.iloc[:, f]
        rank = np.full(len(column), -1)
        for r, value in enumerate(categories):
            rank[(column == value).to_numpy()] = r
        ranks.append(rank)
    cells = []
    for a, b in model.pair_features_:
        table = np.zeros((model.n_categories_[a], model.n_categories_[b], 2))
        both = (ranks[a] >= 0) & (ranks[b] >= 0)
        np.add.at(table, (ranks[a][both], ranks[b][both], y[both]), weights[both])
        u, v = np.nonzero(table.sum(axis=2) > 0)
        cells.append(table[u, v])
    return np.concatenate(cells)


def test_forgetting_is_the_decayed_counts():
    X, y = _rows(5)
    online = AODE(learning_rate=0.997)
    weights = np.empty(y.shape[0])
    splits = _random_splits(y.shape[0], np.random.default_rng(5), largest=120)
    for k, rows in enumerate(splits):
        if k == len(splits) // 2:
            online.set_params(learning_rate=0.99)  # a new gamma from here on
        online.partial_fit(X.iloc[rows], y[rows], classes=[0, 1])
    # the weight of a row: the product of gamma ** n over the batches after its own
    decay = [0.997 if k < len(splits) // 2 else 0.99 for k in range(len(splits))]
    for k, rows in enumerate(splits):
        later = [decay[j] ** (s.stop - s.start) for j, s in enumerate(splits) if j > k]
        weights[rows] = np.prod(later)
    np.testing.assert_allclose(
        online.pair_counts_, _decayed_pair_counts(X, y, weights, online), rtol=1e-9
    )
    class_count = np.bincount(y, weights=weights, minlength=2)
    np.testing.assert_allclose(online.class_count_, class_count, rtol=1e-9)
    weighted = AODE().fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(online.concentration_, weighted.concentration_, rtol=1e-8)
    np.testing.assert_allclose(
        online.predict_proba(X), weighted.predict_proba(X), rtol=0, atol=1e-10
    )


def test_a_failed_batch_among_kept_ones_changes_nothing(monkeypatch):
    X, y = _rows(6)
    model = AODE()
    for rows in _random_splits(600, np.random.default_rng(6), largest=30):
        model.partial_fit(X.iloc[rows], y[rows], classes=[0, 1])
    assert model.__dict__["_stream"].pending  # batches wait
    stream, categories = model.__dict__["_stream"], [c.copy() for c in model.categories_]
    bad = X.iloc[600:620].astype(object)
    bad.iloc[0, 2] = [3]  # not a category
    with pytest.raises(ValueError, match="cannot be categories"):
        model.partial_fit(bad, y[600:620])
    with pytest.raises(ValueError, match="not in classes"):
        model.partial_fit(X.iloc[600:620], np.full(20, 7))
    # a batch the memory budget refuses (it is checked with the kept batches)
    monkeypatch.setattr(hebnb.aode, "memory_budget_bytes", lambda: 1000)
    with pytest.raises(MemoryError, match="pair tables"):
        model.partial_fit(X.iloc[600:1200], y[600:1200])
    monkeypatch.undo()
    assert model.__dict__["_stream"] is stream
    for now, then in zip(model.categories_, categories):
        np.testing.assert_array_equal(now, then)
    _same_model(model, AODE().fit(X.iloc[:600], y[:600]))
    model.partial_fit(X.iloc[600:], y[600:])  # and it still learns
    _same_model(model, AODE().fit(X, y))


def test_pickle_copy_and_clone_mid_stream():
    X, y = _rows(7)
    model = AODE(max_parent_cardinality=20)
    for rows in _random_splits(900, np.random.default_rng(7), largest=40):
        model.partial_fit(X.iloc[rows], y[rows], classes=[0, 1])
    assert model.__dict__.get("_unsolved")
    restored = pickle.loads(pickle.dumps(model))
    duplicate = copy.deepcopy(model)
    assert "pair_counts_" not in restored.__dict__  # views are not pickled
    full = AODE(max_parent_cardinality=20).fit(X.iloc[:900], y[:900])
    for other in (restored, duplicate, model):
        _same_model(other, full)
    for other in (restored, duplicate):  # and each goes on learning on its own
        other.partial_fit(X.iloc[900:], y[900:])
        _same_model(other, AODE(max_parent_cardinality=20).fit(X, y))
    _same_model(model, full)
    fresh = clone(model)
    assert fresh.get_params() == model.get_params() and not hasattr(fresh, "classes_")


def test_a_model_coded_by_sorted_rank_streams_on(monkeypatch):
    """A model whose codes are ranks among the sorted categories (pickled before AODE
    coded by first appearance, or fitted by hebnb.dask) is recoded once by its first
    partial_fit, then streams as any other."""
    X, y = _rows(8)
    monkeypatch.setattr(AODE, "_code_order", "sorted")
    old = AODE().fit(X.iloc[:500], y[:500])
    monkeypatch.undo()
    assert old._encoder.order == "sorted"
    old_state = old.__getstate__()
    for key in ("pair_features_", "pair_indptr_", "pair_indices_", "pair_counts_"):
        old_state[key] = getattr(old, key)  # the old pickles kept them, not _pairs
    del old_state["_pairs"]
    restored = AODE.__new__(AODE)
    restored.__setstate__(old_state)
    _same_model(restored, AODE().fit(X.iloc[:500], y[:500]))
    for rows in _random_splits(y.shape[0] - 500, np.random.default_rng(8)):
        restored.partial_fit(X.iloc[500:].iloc[rows], y[500:][rows])
    assert restored._encoder.order == "insertion"
    _same_model(restored, AODE().fit(X, y))
    assert old._encoder.order == "sorted"  # the pickled model itself is left alone


def test_fit_after_partial_fit_starts_over():
    X, y = _rows(9)
    model = AODE()
    model.partial_fit(X.iloc[:300], y[:300])
    model.partial_fit(X.iloc[300:400], y[300:400])
    model.fit(X.iloc[400:], y[400:])
    assert "_stream" not in model.__dict__
    _same_model(model, AODE().fit(X.iloc[400:], y[400:]))
