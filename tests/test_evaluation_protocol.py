"""The data protocol: column typing, subsampling, and binning fitted on training folds only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.preprocessing import KBinsDiscretizer

from hebnb.evaluation.protocol import (
    DataError,
    FoldBinner,
    plan_columns,
    read_table,
    split_target,
    stratified_folds,
    stratified_subsample,
)
from hebnb.evaluation.runner import prepare_dataset


def mixed_frame(n_rows: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "amount": rng.normal(size=n_rows),  # numeric, many values
            "small_int": rng.integers(0, 5, n_rows),  # numeric, few values
            "user_id": rng.integers(0, 60, n_rows),  # ID-like name
            "colour": rng.choice(["red", "green", "blue"], n_rows),  # strings
            "row_key": [f"r{i}" for i in range(n_rows)],  # one value per row
            "class": rng.integers(0, 2, n_rows),
        }
    )


def test_column_typing():
    X, _ = split_target(mixed_frame(), "class")
    with pytest.warns(UserWarning, match="row_key"):
        plan = plan_columns(X)
    assert plan.binned == ["amount"]
    assert plan.categorical == ["small_int", "user_id", "colour"]
    assert list(plan.dropped) == ["row_key"]


def test_categorical_all_and_list_prevent_binning():
    X, _ = split_target(mixed_frame().drop(columns="row_key"), "class")
    X["code"] = np.arange(200) % 40 * 7  # 40 integer codes: binned unless forced
    assert plan_columns(X).binned == ["amount", "code"]
    assert plan_columns(X, ["code"]).binned == ["amount"]
    # forced categorical, a continuous column has one value per row: dropped
    with pytest.warns(UserWarning, match="'amount' dropped"):
        assert plan_columns(X, "all").binned == []
    with pytest.raises(DataError, match="unknown columns: nope"):
        plan_columns(X, ["nope"])


def test_schema_json_beside_the_file_is_read(tmp_path):
    frame = mixed_frame().drop(columns="row_key")
    frame["big_code"] = np.arange(200) % 50 * 1000
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert "big_code" in prepare_dataset(tmp_path / "data.csv").plan.binned
    (tmp_path / "schema.json").write_text('{"categorical": ["big_code"]}')
    dataset = prepare_dataset(tmp_path / "data.csv")
    assert "big_code" in dataset.plan.categorical
    assert dataset.name == tmp_path.name


def test_stratified_subsample_keeps_class_proportions():
    X, y = split_target(mixed_frame(1000), "class")
    X_small, y_small = stratified_subsample(X, y, 100, seed=42)
    assert X_small.shape[0] == 100
    assert abs(y_small.mean() - y.mean()) < 0.01
    assert stratified_subsample(X, y, None, seed=42)[0].shape[0] == 1000


def test_binning_is_fitted_on_the_training_fold_only():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"x": rng.exponential(size=300)})
    y = rng.integers(0, 2, 300)
    plan = plan_columns(X)
    train, test = stratified_folds(y, 5, seed=42)[0]
    # make the test rows extreme: if they leaked into the fit, the edges would move
    X.loc[test, "x"] = X.loc[test, "x"] * 1000 + 1e6
    binner = FoldBinner(plan).fit(X.iloc[train])
    reference = KBinsDiscretizer(
        n_bins=10, encode="ordinal", strategy="quantile", quantile_method="averaged_inverted_cdf"
    ).fit(X.iloc[train][["x"]].to_numpy())
    np.testing.assert_allclose(binner.edges_["x"], reference.bin_edges_[0])
    assert binner.edges_["x"].max() < 1e6
    np.testing.assert_array_equal(
        binner.transform(X.iloc[train])["x"],
        reference.transform(X.iloc[train][["x"]].to_numpy())[:, 0],
    )
    # test values beyond the training range land in the last bin
    assert (binner.transform(X.iloc[test])["x"] == 9).all()


def test_binning_keeps_missing_values_missing():
    X = pd.DataFrame({"x": np.r_[np.arange(50.0), np.nan]})
    binner = FoldBinner(plan_columns(X)).fit(X)
    out = binner.transform(X)["x"]
    assert np.isnan(out.iloc[-1]) and out.iloc[:-1].notna().all()


def test_infinite_values_go_to_the_outer_bins_and_leave_the_edges_alone():
    rng = np.random.default_rng(4)
    finite = rng.normal(size=200)
    X = pd.DataFrame({"x": np.r_[finite, np.inf, -np.inf, np.nan]})
    binner = FoldBinner(plan_columns(X)).fit(X)
    reference = KBinsDiscretizer(
        n_bins=10, encode="ordinal", strategy="quantile", quantile_method="averaged_inverted_cdf"
    ).fit(finite.reshape(-1, 1))
    np.testing.assert_allclose(binner.edges_["x"], reference.bin_edges_[0])
    out = binner.transform(X)["x"].to_numpy()
    assert out[-3] == 9 and out[-2] == 0 and np.isnan(out[-1])
    # a column of infinities alone is one bin
    only = pd.DataFrame({"x": np.r_[np.full(30, np.inf), np.arange(30.0)]})
    edges = FoldBinner(plan_columns(only)).fit(only.iloc[:30]).edges_["x"]
    np.testing.assert_array_equal(edges, [-np.inf, np.inf])


def test_bad_tables(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match="is empty"):
        read_table(tmp_path / "empty.csv")
    with pytest.raises(DataError, match="no such file"):
        read_table(tmp_path / "absent.csv")
    frame = mixed_frame()
    with pytest.raises(DataError, match="target column 'label' not found"):
        split_target(frame, "label")
    frame["class"] = 1
    with pytest.raises(DataError, match="1 class"):
        split_target(frame, "class")


def test_parquet_is_read(tmp_path):
    pytest.importorskip("pyarrow")
    frame = mixed_frame(50)
    frame.to_parquet(tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(read_table(tmp_path / "t.parquet"), frame)


def test_only_empty_cells_are_missing(tmp_path):
    (tmp_path / "t.csv").write_text("region,x,class\nNA,1,a\nEU,,b\nNone,3,a\n")
    frame = read_table(tmp_path / "t.csv")
    assert frame["region"].tolist() == ["NA", "EU", "None"]
    assert frame["x"].isna().tolist() == [False, True, False]


def test_an_id_column_with_a_blank_cell_is_still_an_id():
    """An integer column with an empty cell reads as floats: it was binned, and a file
    sorted by class leaked the label through it (accuracy 0.995 for 0.525)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"user_id": np.arange(200.0), "c": rng.choice(list("xyz"), 200), "class": ["a", "b"] * 100}
    )
    frame.loc[5, "user_id"] = np.nan
    with pytest.warns(UserWarning, match="column 'user_id' dropped: 199 distinct values"):
        plan = plan_columns(frame.drop(columns="class"))
    assert "user_id" in plan.dropped and "user_id" not in plan.binned
    frame["user_id"] += 0.5  # not whole: a measurement, binned
    assert "user_id" in plan_columns(frame.drop(columns="class")).binned


def test_datasets_that_share_a_name_are_refused_before_any_fit(monkeypatch):
    """Two DataFrames both named "data" had their folds merged: summary.csv averaged six
    "folds" of two datasets, reliability.csv held two sets of bins per method."""
    from hebnb.evaluation import runner

    rng = np.random.default_rng(0)

    def frame():
        table = pd.DataFrame({"a": rng.integers(0, 3, 60), "c": rng.integers(0, 4, 60)})
        table["class"] = (table["a"] + rng.integers(0, 2, 60) > 1).astype(int)
        return table

    fits = []
    build = runner.make_estimator
    monkeypatch.setattr(
        runner, "make_estimator", lambda name, **kw: fits.append(name) or build(name, **kw)
    )
    twins = [prepare_dataset(frame()), prepare_dataset(frame()), prepare_dataset(frame(), name="x")]
    with pytest.raises(DataError, match="more than one dataset is named 'data'"):
        runner.run_protocol(twins, "laplace,kt", folds=3, progress=False)
    assert fits == []
    twins[1].name = "y"
    result = runner.run_protocol(twins, "laplace,kt", folds=3, progress=False)
    assert result.folds.groupby(["dataset", "method"]).size().eq(3).all()
    assert sorted(set(result.folds["dataset"])) == ["data", "x", "y"]


def test_a_subsample_that_keeps_a_single_class_is_the_one_class_error():
    """A class of one row cannot be stratified: the draw of --max-rows rows could keep
    the other class alone, and every fit then failed (exit code 1, not the documented
    one-class error)."""
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 3, 60), "b": rng.normal(size=60)})
    frame["class"] = ["A"] * 59 + ["B"]
    X, y = split_target(frame, "class")
    # the unstratified draw of 10 rows with seed 0 misses the one "B" row
    _, _, y_drawn, _ = train_test_split(X, y, train_size=10, random_state=0)
    assert set(y_drawn) == {"A"}
    with pytest.raises(DataError, match="keeps 1 class of the 2; at least two are needed"):
        stratified_subsample(X, y, 10, seed=0)
    with pytest.raises(DataError, match="keeps 1 class of the 2"):
        prepare_dataset(frame, max_rows=10, seed=0)
    # a draw that keeps "B" is used as it is
    seed = next(
        s for s in range(200) if "B" in train_test_split(y, train_size=10, random_state=s)[0]
    )
    X_kept, y_kept = stratified_subsample(X, y, 10, seed=seed)
    assert X_kept.shape[0] == 10 and set(y_kept) == {"A", "B"}


def test_column_names_that_mix_strings_and_numbers_are_refused_up_front():
    """The encoder refuses mixed names (as scikit-learn does) with a TypeError, which
    aborted the run at its first fit."""
    from hebnb.evaluation import evaluate

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"a": rng.integers(0, 3, 90), 1: rng.integers(0, 3, 90), "class": rng.integers(0, 2, 90)}
    )
    with pytest.raises(DataError, match="column names mix strings and other types .the int name 1"):
        evaluate(frame, methods="laplace", folds=3, progress=False)
    # string names, or none, are evaluated
    for names in (["a", "b", "class"], [0, 1, 2]):
        table = frame.set_axis(names, axis=1)
        result = evaluate(table, target=names[2], methods="laplace", folds=3, progress=False)
        assert result.folds["error"].eq("").all() and result.folds.shape[0] == 3
    # a number-named column that is dropped (one value per row) leaves string names
    frame[1] = np.arange(90).astype(str)
    with pytest.warns(UserWarning, match="column 1 dropped"):
        result = evaluate(frame, methods="laplace", folds=3, progress=False)
    assert result.folds["error"].eq("").all()
