"""hebnb.dask on a real cluster: a fit on Dask collections is the local fit.

A ``distributed.LocalCluster`` of two worker processes (one thread each) is started once
for the module. The reference of every fit is the estimator's own ``fit`` on the
concatenated partitions, and the count tables are checked against ``pandas.crosstab`` of
the raw rows. The partitions hold strings, missing values, categories that only one
partition shows, an empty partition and partitions of unequal sizes."""

from __future__ import annotations

import copy
import os
import pickle
import signal
import time

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from sklearn.base import clone

import hebnb.dask as hd
from hebnb import (
    AODE,
    BernoulliNB,
    CategoricalNB,
    ComplementNB,
    EmpiricalBayesDirichletClassifier,
    MultinomialNB,
)

pytestmark = pytest.mark.filterwarnings(
    # the cluster's own chatter (ports, shutdown of worker processes) is not under test
    "ignore::ResourceWarning",
    "ignore::DeprecationWarning",
    "ignore:.*:UserWarning:distributed",
    "ignore::pytest.PytestUnraisableExceptionWarning",
)

SIZES = [37, 0, 120, 5, 64]  # unequal partitions, one empty


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        silence_logs=40,
    )
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


def _partitions(seed=0):
    """Frames and labels of unequal partitions (one empty): strings with missing values,
    integers, and categories only one partition shows."""
    rng = np.random.default_rng(seed)
    X_parts, y_parts = [], []
    for p, n in enumerate(SIZES):
        colour = rng.choice(["red", "green", "blue", None], size=n).astype(object)
        size = rng.integers(0, 4, size=n).astype(float)
        size[rng.random(n) < 0.1] = np.nan
        shape = rng.choice(["square", "round"], size=n).astype(object)
        if p == 2:
            shape[: n // 3] = "star"  # only this partition has stars
        if p == 4:
            colour[:7] = "violet"  # and only this one violet
        y = np.where(
            (size == 2) | (colour == "red"), "yes", np.where(rng.random(n) < 0.3, "maybe", "no")
        ).astype(object)
        if p == 3:
            y[:] = "no"  # a partition seeing one class only
        index = pd.RangeIndex(sum(SIZES[:p]), sum(SIZES[: p + 1]))
        X_parts.append(pd.DataFrame({"colour": colour, "size": size, "shape": shape}, index=index))
        y_parts.append(pd.Series(y, index=index, name="label"))
    return X_parts, y_parts


def _dask(parts, meta):
    return dd.from_map(lambda i: parts[i], range(len(parts)), meta=meta, enforce_metadata=False)


def _collections(X_parts, y_parts):
    X = _dask(X_parts, X_parts[0].iloc[:0])
    y = _dask(y_parts, y_parts[0].iloc[:0])
    return X, y


def _test_rows():
    return pd.DataFrame(
        {
            "colour": ["red", "violet", None, "blue", "unseen", "green"],
            "size": [0.0, 3.0, 1.0, np.nan, 2.0, 9.0],
            "shape": ["star", "round", "square", "star", None, "round"],
        }
    )


def _whole(parts):
    return pd.concat(parts)


CATEGORICAL = [
    CategoricalNB(),
    CategoricalNB(smoothing="heb-u", min_count=0),
    CategoricalNB(smoothing="laplace", feature_weighting="sqrt-mi"),
    AODE(),
    AODE(smoothing="laplace", prior="pooled", parent_smoothing="heb", max_joint_cells=30),
    AODE(max_parents=2),
]


@pytest.mark.parametrize("model", CATEGORICAL, ids=lambda m: repr(m))
def test_a_dask_fit_is_the_local_fit(client, model):
    X_parts, y_parts = _partitions()
    X, y = _collections(X_parts, y_parts)
    local = pytest.importorskip("sklearn.base").clone(model).fit(_whole(X_parts), _whole(y_parts))
    distant = hd.fit(model, X, y)
    assert distant is model
    np.testing.assert_array_equal(distant.classes_, local.classes_)
    np.testing.assert_array_equal(distant.class_count_, local.class_count_)
    for a, b in zip(distant.categories_, local.categories_):
        np.testing.assert_array_equal(a, b)
    rows = _test_rows()
    np.testing.assert_allclose(distant.predict_proba(rows), local.predict_proba(rows), atol=1e-10)
    np.testing.assert_allclose(
        distant.predict_proba(_whole(X_parts)),
        local.predict_proba(_whole(X_parts)),
        atol=1e-10,
    )
    np.testing.assert_allclose(distant.concentration_, local.concentration_, rtol=1e-10)
    if isinstance(model, AODE):
        assert distant.capped_.tolist() == local.capped_.tolist()
        assert distant.super_parents_.tolist() == local.super_parents_.tolist()
        assert distant.pair_counts_.shape == local.pair_counts_.shape
        np.testing.assert_array_equal(distant.pair_indptr_, local.pair_indptr_)
        np.testing.assert_array_equal(distant.pair_indices_, local.pair_indices_)
        np.testing.assert_allclose(distant.pair_counts_, local.pair_counts_, rtol=1e-12)


def test_max_parents_counts_only_the_super_parents_pairs_in_every_partition(monkeypatch):
    """With ``AODE(max_parents=k)`` the partitions count the pairs of the k super-parents
    chosen on the merged counts (O(k F) tables), not every pair: under a memory budget
    that refuses all pairs of one partition but allows k parents' (as on very wide
    data), the Dask fit is the local fit."""
    import dask

    import hebnb.aode
    from hebnb import _core

    rng = np.random.default_rng(3)
    n, n_features, n_values, k = 600, 120, 12, 3
    X = rng.integers(0, n_values, size=(n, n_features))
    y = (X[:, 4] < 6) ^ (X[:, 9] < 3)
    y = np.where(rng.random(n) < 0.1, ~y, y).astype(int)
    offsets = [n_values * f for f in range(n_features + 1)]
    capped = np.zeros((n_features, n_features), dtype=bool)

    def planned(parents):
        return _core.aode_planned_bytes(
            offsets=offsets,
            capped=capped,
            parents=parents,
            n_rows=n // 2,
            n_classes=2,
            stored_cells=0,
        )["total"]

    every = planned(np.ones(n_features, dtype=bool))
    chosen = planned(np.arange(n_features) < k)
    budget = int((every * chosen) ** 0.5)
    monkeypatch.setattr(hebnb.aode, "memory_budget_bytes", lambda: budget)
    with pytest.raises(MemoryError, match="max_parents"):
        AODE().fit(X[: n // 2], y[: n // 2])  # every pair of one partition: refused
    local = AODE(max_parents=k).fit(X, y)
    assert local.super_parents_.sum() == k
    with dask.config.set(scheduler="sync"):  # the patched budget holds in this process
        distant = hd.fit(
            AODE(max_parents=k),
            da.from_array(X, chunks=(n // 2, -1)),
            da.from_array(y, chunks=n // 2),
        )
    np.testing.assert_array_equal(distant.super_parents_, local.super_parents_)
    np.testing.assert_array_equal(distant.pair_indptr_, local.pair_indptr_)
    np.testing.assert_array_equal(distant.pair_indices_, local.pair_indices_)
    np.testing.assert_allclose(distant.pair_counts_, local.pair_counts_, rtol=1e-12)
    np.testing.assert_allclose(distant.predict_proba(X), local.predict_proba(X), atol=1e-12)


def _misaligned(array):
    """A copy of ``array`` at an odd byte offset, as arrays unpickled from Dask's frames
    may arrive."""
    raw = np.zeros(array.nbytes + 1, dtype=np.uint8)
    copy = np.frombuffer(raw.data, dtype=array.dtype, count=array.size, offset=1)
    copy = copy.reshape(array.shape)
    copy[...] = array
    assert not copy.flags.aligned
    return copy


@pytest.mark.parametrize("model", [CategoricalNB(), AODE(), AODE(max_parents=2)], ids=repr)
def test_count_tables_shipped_misaligned_are_solved_as_sent(model):
    """A state that crossed a process boundary may hold misaligned arrays (the Rust
    kernels refuse to borrow those): merge and solve copy them and give the local fit."""
    import dataclasses

    X_parts, y_parts = _partitions()
    X, y = _whole(X_parts), _whole(y_parts)
    family = hd.CategoricalFamily(model)
    state = family.count(X, y, None)
    pairs = None
    if state.pairs is not None:
        pairs = {key: _misaligned(value) for key, value in state.pairs.items()}
    shipped = dataclasses.replace(
        state,
        class_count=_misaligned(state.class_count),
        counts=_misaligned(state.counts),
        pairs=pairs,
    )
    merged = hd._merge_task(family, shipped, None)
    if family.chooses_parents:  # the second pass's pair tables, shipped too
        plan = hd._plan_task(family, shipped)
        tables = family.count_pairs(plan, X, y, None)
        tables = {key: _misaligned(value) for key, value in tables.items()}
        shipped = hd._with_pairs_task(shipped, plan, tables)
        merged = hd._with_pairs_task(merged, plan, hd._pair_merge_task(family, plan, tables, None))
    local = pytest.importorskip("sklearn.base").clone(model).fit(X, y)
    rows = _test_rows()
    for total in (shipped, merged):
        solved = hd._solve_task(family, total)
        np.testing.assert_allclose(
            solved.predict_proba(rows), local.predict_proba(rows), atol=1e-10
        )


def test_object_columns_kept_as_objects_give_the_local_fit():
    """Python objects of mixed types (1, "1", 2.0; an integer beyond int64) are keyed as a
    local fit keys them, once Dask is told not to turn object columns into strings."""
    import dask

    n = 240
    rng = np.random.default_rng(5)
    X = pd.DataFrame(
        {
            "mixed": pd.Series([1, "1", 2.0, None] * (n // 4), dtype=object),
            "big": pd.Series([2**63 + 5, 7, -3, (1, 2)] * (n // 4), dtype=object),
        }
    )
    y = pd.Series(rng.choice(["x", "y", "z"], size=n))
    with dask.config.set({"dataframe.convert-string": False}):
        X_dask, y_dask = dd.from_pandas(X, npartitions=3), dd.from_pandas(y, npartitions=3)
    for model in (CategoricalNB(), AODE()):
        local = pytest.importorskip("sklearn.base").clone(model).fit(X, y)
        with dask.config.set(scheduler="sync"):
            distant = hd.fit(model, X_dask, y_dask)
        assert [list(c) for c in distant.categories_] == [list(c) for c in local.categories_]
        np.testing.assert_allclose(distant.predict_proba(X), local.predict_proba(X), atol=1e-12)


def test_values_that_cannot_be_sorted_are_refused_by_all_parent_aode_by_name():
    """Values Python cannot order (tuples of mixed types) keep their first appearance,
    which differs between partitions, and AODE's pair tables (coded by sorted rank) could
    not be merged: "new codes must increase" from the core. Now the column is named;
    max_parents (pairs counted after the categories are merged) fits the local model."""
    import dask

    tuples = pd.Series([(1,), ("a",), (2, "b"), ("a",), (1,), (2, "b")] * 10, dtype=object)
    X = pd.DataFrame({"t": tuples, "k": [0, 1, 2] * 20})
    y = pd.Series(["u", "v", "u", "v", "v", "u"] * 10)
    parts = [X.iloc[:3], X.iloc[3:]]
    with dask.config.set({"dataframe.convert-string": False}):
        X_dask = dd.from_map(lambda i: parts[i], range(2), meta=X.iloc[:0])
        y_dask = dd.from_pandas(y, npartitions=1).repartition(divisions=[0, 3, 59])
    with dask.config.set(scheduler="sync"):
        with pytest.raises(ValueError, match="feature 't' holds values Python cannot sort"):
            hd.fit(AODE(), X_dask, y_dask)
        distant = hd.fit(AODE(max_parents=1), X_dask, y_dask)
    local = AODE(max_parents=1).fit(X, y)
    np.testing.assert_allclose(distant.predict_proba(X), local.predict_proba(X), atol=1e-12)


def test_the_count_tables_are_the_crosstabs_of_the_rows(client):
    X_parts, y_parts = _partitions(seed=3)
    X, y = _collections(X_parts, y_parts)
    weights = [pd.Series(np.linspace(0.5, 2.0, len(p)), index=p.index) for p in y_parts]
    w = _dask(weights, weights[0].iloc[:0])
    model = hd.fit(CategoricalNB(), X, y, sample_weight=w)
    whole, labels, weight = _whole(X_parts), _whole(y_parts), _whole(weights)
    for f, column in enumerate(whole.columns):
        table = pd.crosstab(labels, whole[column], values=weight, aggfunc="sum").fillna(0.0)
        table.columns = table.columns.astype(object)
        expected = table.reindex(columns=list(model.categories_[f])).to_numpy()
        np.testing.assert_allclose(model.category_count_[f], expected, rtol=1e-12)
    class_weight = weight.groupby(labels).sum().reindex(model.classes_).to_numpy()
    np.testing.assert_allclose(model.class_count_, class_weight, rtol=1e-12)
    local = CategoricalNB().fit(whole, labels, sample_weight=weight)
    np.testing.assert_allclose(
        model.predict_proba(_test_rows()), local.predict_proba(_test_rows()), atol=1e-10
    )


def test_dirichlet_groups_fit_is_the_local_fit(client):
    rng = np.random.default_rng(5)
    alphas = {"click": 1.0, "skip": 2.0, "buy": 0.5}
    X_parts, y_parts = [], []
    for p, n in enumerate(SIZES):
        groups = rng.choice([f"ad{k}" for k in range(6)] + [f"only{p}"], size=n).astype(object)
        index = pd.RangeIndex(sum(SIZES[:p]), sum(SIZES[: p + 1]))
        X_parts.append(pd.DataFrame({"ad": groups}, index=index))
        y_parts.append(pd.Series(rng.choice(list(alphas), size=n).astype(object), index=index))
    X, y = _collections(X_parts, y_parts)
    for learning_rate in (1.0, 0.97):
        model = EmpiricalBayesDirichletClassifier(alphas, learning_rate=learning_rate)
        local = EmpiricalBayesDirichletClassifier(alphas, learning_rate=learning_rate)
        local.fit(_whole(X_parts), _whole(y_parts))
        hd.fit(model, X, y)
        np.testing.assert_array_equal(model.groups_, local.groups_)
        np.testing.assert_allclose(model.group_counts_, local.group_counts_, rtol=1e-12)
        np.testing.assert_allclose(model.prior_, local.prior_, rtol=1e-10)
        np.testing.assert_array_equal(model.feature_names_in_, local.feature_names_in_)
        rows = pd.DataFrame({"ad": ["ad1", "only4", "never"]})
        np.testing.assert_allclose(model.predict_proba(rows), local.predict_proba(rows), atol=1e-10)


def test_a_column_float_in_a_later_partition_has_the_concatenations_categories():
    """Partitions whose dtypes drift (int64 in one Parquet file, float64 with a NaN in the
    next): the categories_ of the local fit of their concatenation are floats; the merge
    kept the first partition's integers."""
    import dask

    first = pd.DataFrame({"k": [0, 1, 2, 1]})
    second = pd.DataFrame({"k": [2.0, np.nan, 0.0, 1.0]}, index=range(4, 8))
    y = pd.Series(["u", "v", "u", "v", "u", "v", "v", "u"])
    X_dask = dd.from_map(
        lambda i: [first, second][i], range(2), meta=first.iloc[:0], enforce_metadata=False
    )
    y_dask = dd.from_pandas(y, npartitions=1).repartition(divisions=[0, 4, 7])
    local = CategoricalNB().fit(pd.concat([first, second]), y)
    with dask.config.set(scheduler="sync"):
        distant = hd.fit(CategoricalNB(), X_dask, y_dask)
    assert local.categories_[0].dtype == np.float64
    assert distant.categories_[0].dtype == local.categories_[0].dtype
    np.testing.assert_array_equal(distant.categories_[0], local.categories_[0])


@pytest.mark.parametrize("learning_rate", [1.0, 0.9])
def test_declared_groups_first_used_in_a_later_partition_keep_the_local_order(learning_rate):
    """A partition lists its category column's unused categories after its own groups.
    Kept in place by the merge, "c" and "d" (first used in the second partition, "d"
    first) came in the first partition's declared order: groups_ [a, b, c, d, e] where
    the local fit has [a, b, d, c, e], and group_counts_'s rows with them."""
    import dask

    declared = pd.CategoricalDtype(["a", "b", "c", "d", "e"])
    X = pd.DataFrame({"g": pd.Series(["a", "b"] * 3 + ["d", "c"] * 3, dtype=declared)})
    y = pd.Series(["s", "f", "s", "s", "f", "f", "s", "f", "f", "f", "s", "s"])
    alphas = {"s": 1.0, "f": 1.0}
    local = EmpiricalBayesDirichletClassifier(alphas, learning_rate=learning_rate).fit(X, y)
    with dask.config.set(scheduler="sync"):
        distant = hd.fit(
            EmpiricalBayesDirichletClassifier(alphas, learning_rate=learning_rate),
            dd.from_pandas(X, npartitions=2),
            dd.from_pandas(y, npartitions=2),
        )
    assert local.groups_.tolist() == ["a", "b", "d", "c", "e"]
    assert distant.groups_.tolist() == local.groups_.tolist()
    np.testing.assert_allclose(distant.group_counts_, local.group_counts_, rtol=1e-12)
    rows = pd.DataFrame({"g": pd.Series(["a", "c", "e"], dtype=declared)})
    np.testing.assert_allclose(distant.predict_proba(rows), local.predict_proba(rows), atol=1e-12)


@pytest.mark.parametrize(
    "model",
    [
        MultinomialNB(posterior_power=0.4),
        MultinomialNB(smoothing="laplace"),
        ComplementNB(),
        BernoulliNB(),
        BernoulliNB(smoothing="laplace", binarize=0.5),
    ],
)
def test_token_models_fit_is_the_local_fit(client, model):
    rng = np.random.default_rng(7)
    n_rows, n_tokens = sum(SIZES), 30
    counts = rng.poisson(0.4, size=(n_rows, n_tokens)).astype(float)
    counts[:40, 25:] = 0.0  # tokens the first partitions never show
    labels = rng.choice([0, 1, 2], size=n_rows)
    labels[:37] = rng.choice([0, 1], size=37)  # the first partition lacks a class
    chunks = tuple(SIZES)
    X = da.from_array(counts, chunks=(chunks, (n_tokens,)))
    y = da.from_array(labels, chunks=(chunks,))
    local = pytest.importorskip("sklearn.base").clone(model).fit(counts, labels)
    hd.fit(model, X, y)
    np.testing.assert_array_equal(model.classes_, local.classes_)
    np.testing.assert_allclose(model.feature_count_, local.feature_count_, rtol=1e-12)
    np.testing.assert_allclose(model.predict_proba(counts), local.predict_proba(counts), atol=1e-10)


def test_parquet_partitions_fused_by_the_optimiser_are_read_as_written(client, tmp_path):
    """docs/scale-out.md's recipe: X and y selected from one ``read_parquet`` frame. The
    optimiser fuses small Parquet partitions by the columns it reads, so y (one column)
    came in 3 blocks and X in 8: "X, y and sample_weight must have the same partitions"."""
    rng = np.random.default_rng(1)
    frames = []
    for part in range(8):
        frame = pd.DataFrame({c: rng.integers(0, 50, 20_000) for c in ("site", "ad", "hour")})
        frame["clicked"] = rng.integers(0, 2, 20_000)
        frame["w"] = rng.uniform(0.5, 2.0, 20_000)
        frame.to_parquet(tmp_path / f"part{part}.parquet", index=False)
        frames.append(frame)
    lazy = dd.read_parquet(tmp_path)
    X, y, w = lazy[["site", "ad", "hour"]], lazy["clicked"], lazy["w"]
    if len(y.to_delayed()) == X.npartitions:  # pragma: no cover - a Dask that does not fuse
        pytest.skip("this Dask does not fuse the one-column reads")
    model = hd.fit(CategoricalNB(), X, y, sample_weight=w)
    whole = pd.concat(frames, ignore_index=True)
    columns = ["site", "ad", "hour"]
    local = CategoricalNB().fit(whole[columns], whole["clicked"], sample_weight=whole["w"])
    np.testing.assert_allclose(model.class_count_, local.class_count_, rtol=1e-12)
    np.testing.assert_allclose(
        model.predict_proba(whole[columns][:500]), local.predict_proba(whole[columns][:500])
    )


@pytest.mark.parametrize("smoothing", ["heb-u", "heb-m"])
def test_the_leave_one_out_power_is_the_local_fits(client, smoothing):
    rng = np.random.default_rng(3)
    counts = rng.poisson(0.4, size=(150, 20)).astype(float)
    labels = rng.choice(["a", "b", "c"], size=150)
    weights = rng.uniform(0.2, 2.0, size=150)
    # uneven partitions, one of them empty
    X = da.from_array(counts, chunks=((60, 0, 50, 40), (20,)))
    y = da.from_array(labels, chunks=((60, 0, 50, 40),))
    w = da.from_array(weights, chunks=((60, 0, 50, 40),))
    model = hd.fit(MultinomialNB(smoothing=smoothing), X, y, sample_weight=w)
    local = MultinomialNB(smoothing=smoothing).fit(counts, labels, sample_weight=weights)
    assert local.posterior_power_ != 1.0
    assert model.posterior_power_ == pytest.approx(local.posterior_power_, rel=1e-10)
    assert model.leave_one_out_log_loss_ == pytest.approx(local.leave_one_out_log_loss_, rel=1e-10)
    np.testing.assert_allclose(model.predict_proba(counts), local.predict_proba(counts), atol=1e-10)
    # and partial_fit continues from every row of the Dask fit, as after a local fit
    more, more_labels = counts[:30], labels[:30]
    np.testing.assert_allclose(
        model.partial_fit(more, more_labels).predict_proba(counts),
        local.partial_fit(more, more_labels).predict_proba(counts),
        atol=1e-10,
    )


def test_predict_on_dask_collections(client):
    X_parts, y_parts = _partitions()
    X, y = _collections(X_parts, y_parts)
    model = hd.fit(CategoricalNB(), X, y)
    whole = _whole(X_parts)
    proba = hd.predict_proba(model, X)
    assert list(proba._meta.columns) == list(model.classes_)
    assert all(proba._meta.dtypes == np.float64)
    computed = proba.compute()
    np.testing.assert_allclose(computed.to_numpy(), model.predict_proba(whole), atol=1e-12)
    assert computed.index.equals(whole.index)
    labels = hd.predict(model, X)
    computed_labels = labels.compute()
    # the declared dtype is the computed one (pandas 3 gives string labels its str dtype)
    assert labels._meta.dtype == computed_labels.dtype
    assert labels._meta.dtype == pd.Series(model.classes_).dtype
    np.testing.assert_array_equal(computed_labels.to_numpy(), model.predict(whole))
    log_proba = hd.predict_log_proba(model, X).compute()
    np.testing.assert_allclose(log_proba.to_numpy(), model.predict_log_proba(whole), atol=1e-10)

    rng = np.random.default_rng(2)
    counts = rng.poisson(0.5, size=(90, 12)).astype(float)
    token_model = MultinomialNB().fit(counts, rng.integers(0, 3, size=90))
    array = da.from_array(counts, chunks=((40, 0, 50), (6, 6)))
    proba = hd.predict_proba(token_model, array)
    assert proba.shape == (90, 3) and proba.dtype == np.float64
    np.testing.assert_allclose(proba.compute(), token_model.predict_proba(counts), atol=1e-12)
    np.testing.assert_array_equal(
        hd.predict(token_model, array).compute(), token_model.predict(counts)
    )


def test_predictions_declare_the_index_of_x(client):
    """The declared (meta) index of predictions is X's, dtype and name: it was an unnamed
    int64 RangeIndex whatever X's index, while the computed one was X's."""
    X_parts, y_parts = _partitions()
    X_parts = [part.set_index(part.index.astype(str).rename("key")) for part in X_parts]
    y_parts = [part.set_axis(X_parts[k].index) for k, part in enumerate(y_parts)]
    X, y = _collections(X_parts, y_parts)
    model = hd.fit(CategoricalNB(), X, y)
    for lazy in (hd.predict_proba(model, X), hd.predict_log_proba(model, X), hd.predict(model, X)):
        computed = lazy.compute()
        assert lazy._meta.index.name == computed.index.name == "key"
        assert lazy._meta.index.dtype == computed.index.dtype
        assert computed.index.equals(_whole(X_parts).index)


def test_partial_fit_streams_the_partitions(client):
    X_parts, y_parts = _partitions(seed=11)
    X, y = _collections(X_parts, y_parts)
    classes = ["maybe", "no", "yes"]
    for model_type in (CategoricalNB, AODE):
        stream = model_type(learning_rate=0.99)
        hd.partial_fit(stream, X, y, classes=classes)
        local = model_type(learning_rate=0.99)
        for Xp, yp in zip(X_parts, y_parts):
            if len(yp):
                local.partial_fit(Xp, yp, classes=classes)
        rows = _test_rows()
        np.testing.assert_allclose(
            stream.predict_proba(rows), local.predict_proba(rows), atol=1e-10
        )
        # at learning_rate=1 the stream is the fit
        stream = hd.partial_fit(model_type(), X, y, classes=classes)
        whole = model_type().fit(_whole(X_parts), _whole(y_parts))
        np.testing.assert_allclose(
            stream.predict_proba(rows), whole.predict_proba(rows), atol=1e-10
        )


def test_a_bad_partition_is_named(client):
    X_parts, y_parts = _partitions()
    y_parts[3] = y_parts[3].copy()
    y_parts[3].iloc[1] = None
    X, y = _collections(X_parts, y_parts)
    with pytest.raises(ValueError, match=r"partition 3 of 5: y contains missing labels"):
        hd.fit(CategoricalNB(), X, y)
    X_parts, y_parts = _partitions()
    X_parts[2] = X_parts[2].copy()
    X_parts[2].loc[X_parts[2].index[4], "size"] = 1.5
    X, y = _collections(X_parts, y_parts)
    with pytest.raises(ValueError) as local:
        AODE().fit(_whole(X_parts), _whole(y_parts))
    assert "fractional part" in str(local.value)
    with pytest.raises(ValueError) as distant:
        hd.fit(AODE(), X, y)
    assert str(distant.value) == f"partition 2 of 5: {local.value}"  # the local fit's error
    with pytest.raises(ValueError, match="smoothing"):
        hd.fit(CategoricalNB(smoothing="nope"), X, y)  # before any task runs
    for weighted in (CategoricalNB(weighting="cll-feature"), AODE(weighting="cll-value")):
        with pytest.raises(ValueError, match="cannot fit weighting="):
            hd.fit(weighted, X, y)  # the weights need the rows: refused, not ignored
    with pytest.raises(ValueError, match="same partitions"):
        hd.fit(CategoricalNB(), X, y.repartition(npartitions=2))
    with pytest.raises(TypeError, match="Dask DataFrame"):
        hd.fit(CategoricalNB(), _whole(X_parts), y)


@pytest.mark.parametrize(
    "model, message",
    [
        (CategoricalNB(smoothing="laplace", concentration_estimate="posterior-average"), "needs"),
        (AODE(count_features=True), "needs weighting='cll-value'"),
    ],
)
def test_parameters_that_exclude_each_other_are_refused_before_any_task(model, message):
    """Only the parameter constraints were checked: a combination a local fit refuses was
    fitted (and its count_features or posterior average silently dropped)."""
    X_parts, y_parts = _partitions()
    X, y = _collections(X_parts, y_parts)
    with pytest.raises(ValueError, match=message):
        clone(model).fit(_whole(X_parts), _whole(y_parts))
    with pytest.raises(ValueError, match=message):
        hd.fit_graph(clone(model), X, y)  # building the graph, before any task runs


def test_the_group_classifier_refuses_weights_that_sum_to_zero():
    """Each partition may weigh nothing; the whole fit may not, as locally."""
    groups = pd.DataFrame({"g": ["a", "b", "a", "c"] * 5})
    labels = pd.Series(["s", "f"] * 10)
    weights = pd.Series(np.zeros(20))
    model = EmpiricalBayesDirichletClassifier({"s": 1.0, "f": 1.0})
    with pytest.raises(ValueError, match="sums to zero"):
        clone(model).fit(groups, labels, sample_weight=weights)
    parts = [dd.from_pandas(c, npartitions=2) for c in (groups, labels, weights)]
    with dask.config.set(scheduler="synchronous"), pytest.raises(ValueError, match="sums to zero"):
        hd.fit(clone(model), *parts)
    weights[3] = 1.0  # one partition weighs something: fitted
    parts[2] = dd.from_pandas(weights, npartitions=2)
    with dask.config.set(scheduler="synchronous"):
        fitted = hd.fit(clone(model), *parts)
    local = clone(model).fit(groups, labels, sample_weight=weights)
    np.testing.assert_allclose(fitted.prior_, local.prior_)


def test_two_streams_and_two_fits_never_share_their_tasks(client):
    """A stream's result depends on the model it starts from: two streams of equal
    parameters over the same partitions, run at once, shared their task keys and the
    second got the first's model. Two fits whose alphas differ only in order (so do
    their classes_) shared theirs too, Dask's token sorting a dict."""
    import threading

    X_parts, y_parts = _partitions(seed=12)
    X = dd.from_map(_slow(X_parts, 0.3), range(len(SIZES)), meta=X_parts[0].iloc[:0])
    y = dd.from_map(_slow(y_parts, 0.0), range(len(SIZES)), meta=y_parts[0].iloc[:0])
    classes = ["maybe", "no", "yes"]
    warm = CategoricalNB().fit(_whole(X_parts)[:40], _whole(y_parts)[:40])
    fresh = CategoricalNB()
    expected = {"warm": copy.deepcopy(warm), "fresh": CategoricalNB()}
    for model in expected.values():
        for Xp, yp in zip(X_parts, y_parts):
            if len(yp):
                model.partial_fit(Xp, yp, classes=classes)
    streams = [
        threading.Thread(target=hd.partial_fit, args=(model, X, y, classes))
        for model in (warm, fresh)
    ]
    for thread in streams:
        thread.start()
        time.sleep(0.1)
    for thread in streams:
        thread.join()
    np.testing.assert_allclose(warm.class_count_, expected["warm"].class_count_)
    np.testing.assert_allclose(fresh.class_count_, expected["fresh"].class_count_)

    groups = pd.DataFrame({"g": ["a", "b", "a", "c"] * 5})
    labels = pd.Series(["s", "f"] * 10)
    parts = [dd.from_pandas(c, npartitions=2) for c in (groups, labels)]
    orders = ({"s": 1.0, "f": 3.0}, {"f": 3.0, "s": 1.0})
    fits = dask.compute(
        *[hd.fit_graph(EmpiricalBayesDirichletClassifier(alphas), *parts) for alphas in orders]
    )
    for fitted, alphas in zip(fits, orders):
        assert fitted.classes_.tolist() == list(alphas)


def test_partitions_that_disagree_are_refused_as_a_local_fit_refuses_them(client):
    """Columns named in another order (Dask's own check turned off), weights beside an
    empty partition, a total weight beyond the limit only the whole set reaches, and
    classes the group classifier's alphas do not name."""
    X_parts, y_parts = _partitions(seed=13)
    swapped = list(X_parts)
    swapped[2] = X_parts[2][["size", "colour", "shape"]]
    for model in (CategoricalNB(), AODE(), AODE(max_parents=2)):
        with pytest.raises(ValueError, match="partitions name their columns differently"):
            hd.fit(model, *_collections(swapped, y_parts))
    X, y = _collections(X_parts, y_parts)
    weights = [pd.Series(np.ones(n), index=part.index) for n, part in zip(SIZES, y_parts)]
    weights[1] = pd.Series(np.ones(3))  # partition 1 holds no row
    w = _dask(weights, weights[0].iloc[:0])
    for call in (hd.fit, hd.partial_fit):
        with pytest.raises(ValueError, match=r"partition 1 of 5: sample_weight.shape == \(3,\)"):
            call(CategoricalNB(), X, y, sample_weight=w)
    heavy = [pd.Series(np.full(n, 0.9e300 / 60), index=p.index) for n, p in zip(SIZES, y_parts)]
    with pytest.raises(ValueError, match=r"beyond 1e\+300"):
        CategoricalNB().fit(_whole(X_parts), _whole(y_parts), sample_weight=_whole(heavy))
    with pytest.raises(ValueError, match=r"beyond 1e\+300"):
        hd.fit(CategoricalNB(), X, y, sample_weight=_dask(heavy, heavy[0].iloc[:0]))
    groups = dd.from_pandas(pd.DataFrame({"g": ["a", "b"] * 5}), npartitions=2)
    labels = dd.from_pandas(pd.Series(["s", "f"] * 5), npartitions=2)
    with pytest.raises(ValueError, match="must name the classes of alphas"):
        hd.partial_fit(
            EmpiricalBayesDirichletClassifier({"s": 1.0, "f": 1.0}), groups, labels, ["x", "y"]
        )


def test_split_every_is_any_integer_of_at_least_two():
    X, y = _collections(*_partitions())
    graph = hd.fit_graph(CategoricalNB(), X, y, split_every=np.int64(2))
    assert len([k for k in graph.dask if str(k).startswith("hebnb-merge")]) == 6
    for bad in (1, True, 2.0, "2"):
        with pytest.raises(ValueError, match="split_every must be an integer >= 2"):
            hd.fit_graph(CategoricalNB(), X, y, split_every=bad)


@pytest.mark.parametrize("unknown", ["X", "y"])
def test_arrays_of_unknown_row_chunks_fit_whichever_is_unknown(unknown):
    """X with unknown chunks beside y with known ones was refused as mismatched (the
    known side was compared with X's NaN chunks), the other way round accepted."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"a": rng.integers(0, 4, 60), "b": rng.integers(0, 3, 60), "y": rng.integers(0, 2, 60)}
    )
    collection = dd.from_pandas(frame, npartitions=3)
    X = collection[["a", "b"]].to_dask_array(lengths=True if unknown != "X" else None)
    y = collection["y"].to_dask_array(lengths=True if unknown != "y" else None)
    assert np.isnan(X.chunks[0][0]) == (unknown == "X")
    with dask.config.set(scheduler="synchronous"):
        fitted = hd.fit(CategoricalNB(), X, y)
    local = CategoricalNB().fit(frame[["a", "b"]].to_numpy(), frame["y"].to_numpy())
    rows = frame[["a", "b"]].to_numpy()
    np.testing.assert_allclose(fitted.predict_proba(rows), local.predict_proba(rows), rtol=1e-12)


def test_the_graph_has_named_tasks():
    X_parts, y_parts = _partitions()
    X, y = _collections(X_parts, y_parts)
    graph = hd.fit_graph(CategoricalNB(), X, y, split_every=2)
    names = {str(key).split("-")[0] + "-" + str(key).split("-")[1] for key in graph.dask}
    assert {"hebnb-count", "hebnb-merge", "hebnb-solve"} <= names
    counts = [k for k in graph.dask if str(k).startswith("hebnb-count")]
    assert len(counts) == len(SIZES)
    # split_every=2 over 5 partitions: 3 + 2 + 1 merges
    assert len([k for k in graph.dask if str(k).startswith("hebnb-merge")]) == 6
    assert not any(str(k).startswith("hebnb-pairs") for k in graph.dask)
    # max_parents: a second pass over the partitions for the chosen parents' pairs
    graph = hd.fit_graph(AODE(max_parents=2), X, y, split_every=2)
    pairs = [k for k in graph.dask if str(k).startswith("hebnb-pairs-")]
    assert len(pairs) == len(SIZES)
    assert len([k for k in graph.dask if str(k).startswith("hebnb-pair-merge")]) == 6
    assert any(str(k).startswith("hebnb-plan-") for k in graph.dask)


def test_the_fitted_model_pickles_across_processes(client):
    X_parts, y_parts = _partitions()
    X, y = _collections(X_parts, y_parts)
    for model in (hd.fit(CategoricalNB(), X, y), hd.fit(AODE(), X, y)):
        rows = _test_rows()
        expected = model.predict_proba(rows)
        on_worker = client.submit(lambda m, r: m.predict_proba(r), model, rows, pure=False)
        np.testing.assert_allclose(on_worker.result(), expected, atol=0)
        back = client.submit(lambda m: pickle.dumps(m), model, pure=False).result()
        np.testing.assert_allclose(pickle.loads(back).predict_proba(rows), expected, atol=0)


def _slow(parts, pause):
    def load(i):
        time.sleep(pause)
        return parts[i]

    return load


def test_a_worker_killed_mid_fit_changes_nothing(client):
    X_parts, y_parts = _partitions(seed=21)
    X_parts, y_parts = X_parts * 4, y_parts * 4  # 20 partitions of 0.3 s each
    X = dd.from_map(_slow(X_parts, 0.3), range(len(X_parts)), meta=X_parts[0].iloc[:0])
    y = dd.from_map(_slow(y_parts, 0.0), range(len(y_parts)), meta=y_parts[0].iloc[:0])
    local = AODE().fit(_whole(X_parts), _whole(y_parts))
    future = client.compute(hd.fit_graph(AODE(), X, y, split_every=3))
    deadline = time.monotonic() + 60
    while not any(
        str(k).startswith("hebnb-merge") for keys in client.has_what().values() for k in keys
    ):
        assert time.monotonic() < deadline, "the fit never got to its reduction"
        time.sleep(0.05)
    assert not future.done()
    victim = max(client.has_what(), key=lambda w: len(client.has_what()[w]))
    pid = client.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)  # the nanny starts a new worker; lost tables are recounted
    fitted = future.result(timeout=120)
    rows = _test_rows()
    np.testing.assert_allclose(fitted.predict_proba(rows), local.predict_proba(rows), atol=1e-10)
    np.testing.assert_allclose(fitted.pair_counts_, local.pair_counts_, rtol=1e-12)
    client.wait_for_workers(2, timeout=60)
    assert pid not in client.run(os.getpid).values()
