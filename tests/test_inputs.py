"""Every accepted input form gives the model a plain integer array would give."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from hebnb import CategoricalNB, _core


@pytest.fixture(scope="module")
def ints():
    rng = np.random.default_rng(11)
    X = rng.integers(0, 6, size=(300, 4))
    y = rng.integers(0, 3, size=300)
    return X, y


def proba(X, y, X_test=None, **params):
    model = CategoricalNB(**params).fit(X, y)
    return model.predict_proba(X if X_test is None else X_test)


def test_array_layouts_and_byte_orders_agree(ints):
    X, y = ints
    expected = proba(X, y)
    fortran = np.asfortranarray(X)
    readonly = X.copy()
    readonly.setflags(write=False)
    wide = np.zeros((300, 8), dtype=X.dtype)
    wide[:, ::2] = X
    strided = wide[:, ::2]
    big_endian = X.astype(">i8")
    int8 = X.astype(np.int8)
    for variant in (fortran, readonly, strided, big_endian, int8, X.tolist()):
        np.testing.assert_allclose(proba(variant, y), expected, rtol=1e-12)
    assert readonly.flags.writeable is False


def test_strings_objects_bools_and_whole_floats_agree(ints):
    X, y = ints
    expected = proba(X, y)
    as_str = X.astype(str)
    as_obj = X.astype(object)
    as_float = X.astype(float)
    for variant in (as_str, as_obj, as_float):
        np.testing.assert_allclose(proba(variant, y), expected, rtol=1e-12)
    bools = X % 2 == 0
    np.testing.assert_allclose(proba(bools, y), proba(bools.astype(int), y), rtol=1e-12)
    # a model fitted on whole floats predicts ints and vice versa
    fitted_on_floats = CategoricalNB().fit(as_float, y)
    np.testing.assert_allclose(fitted_on_floats.predict_proba(X), expected, rtol=1e-12)
    assert fitted_on_floats.categories_[0].dtype.kind == "f"


def test_dataframe_with_mixed_column_types(ints):
    X, y = ints
    names = ["a", "b", "c", "d"]
    frame = pd.DataFrame(
        {
            "a": X[:, 0],
            "b": pd.Series(X[:, 1].astype(str), dtype="string"),
            "c": pd.Categorical(X[:, 2]),
            "d": X[:, 3] == 2,
        }
    )
    reference = np.column_stack([X[:, 0], X[:, 1], X[:, 2], X[:, 3] == 2]).astype(int)
    model = CategoricalNB().fit(frame, y)
    np.testing.assert_array_equal(model.feature_names_in_, names)
    np.testing.assert_allclose(model.predict_proba(frame), proba(reference, y), rtol=1e-12)
    # string labels give the same probabilities, columns in sorted label order
    labels = np.array(["low", "mid", "high"])[y]
    by_name = CategoricalNB().fit(frame, labels)
    assert list(by_name.classes_) == ["high", "low", "mid"]
    np.testing.assert_allclose(
        by_name.predict_proba(frame), proba(reference, y)[:, [2, 0, 1]], rtol=1e-12
    )


def test_every_missing_marker_pandas_knows_is_missing(ints):
    """None, float and numpy NaN, pandas NA and NaT, Decimal('NaN') and complex NaN are
    all missing (the last two were categories), as ``pandas.isna`` says of them."""
    X, y = ints
    reference = X.astype(object)
    reference[::3, 1] = None
    expected = CategoricalNB().fit(reference, y)
    markers = [None, np.nan, np.float32("nan"), pd.NA, pd.NaT, Decimal("NaN"), complex("nan")]
    marked = X.astype(object)
    for k, row in enumerate(range(0, X.shape[0], 3)):
        marked[row, 1] = markers[k % len(markers)]
    assert all(pd.isna(marker) for marker in markers)
    model = CategoricalNB().fit(marked, y)
    assert [c.tolist() for c in model.categories_] == [c.tolist() for c in expected.categories_]
    np.testing.assert_array_equal(model.predict_proba(marked), expected.predict_proba(reference))


def test_missing_values_do_not_count_or_score(ints):
    X, y = ints
    X_missing = X.astype(object)
    X_missing[::7, 1] = None
    X_missing[::5, 2] = np.nan
    X_missing[::11, 3] = pd.NA
    model = CategoricalNB().fit(X_missing, y)
    # counts: rows with a missing value are absent from that feature's counts
    present = X_missing[:, 1] != None
    expected = np.array(
        [[np.sum((y == c) & present & (X[:, 1] == v)) for v in range(6)] for c in range(3)]
    )
    np.testing.assert_array_equal(model.category_count_[1], expected)
    # scoring: a missing value contributes nothing, exactly like dropping the feature
    row = np.array([[X[0, 0], None, X[0, 2], X[0, 3]]], dtype=object)
    joint = model.predict_joint_log_proba(row)
    manual = model.class_log_prior_ + sum(
        model.feature_log_prob_[f][:, list(model.categories_[f]).index(X[0, f])] for f in (0, 2, 3)
    )
    np.testing.assert_allclose(joint[0], manual, rtol=1e-12)
    # float NaN columns behave the same as object None columns
    floats = X.astype(float)
    floats[::7, 1] = np.nan
    np.testing.assert_allclose(CategoricalNB().fit(floats, y).category_count_[1], expected)


def test_unknown_categories_are_skipped_or_rejected(ints):
    X, y = ints
    model = CategoricalNB().fit(X, y)
    unknown = X[:3].copy()
    unknown[:, 2] = 99
    known_only = model.class_log_prior_ + sum(
        model.feature_log_prob_[f][:, X[:3, f]].T for f in (0, 1, 3)
    )
    np.testing.assert_allclose(model.predict_joint_log_proba(unknown), known_only, rtol=1e-12)
    strict = CategoricalNB(handle_unknown="error").fit(X, y)
    with pytest.raises(ValueError, match=r"unknown categories \[99\] in feature 2"):
        strict.predict(unknown)
    strings = CategoricalNB(handle_unknown="error").fit(X.astype(str), y)
    with pytest.raises(ValueError, match="unknown categories.*'zz'"):
        strings.predict(np.array([["zz", "1", "1", "1"]]))


def test_one_million_distinct_values_fit_in_proportional_memory(tmp_path):
    """A feature with 1,000,000 distinct values in 1,000,000 rows: peak memory measured in a
    fresh interpreter stays within a small multiple of the data itself."""
    import subprocess
    import sys

    script = tmp_path / "fit.py"
    script.write_text(
        "import resource, numpy as np\n"
        "from hebnb import CategoricalNB\n"
        "n = 1_000_000\n"
        "rng = np.random.default_rng(0)\n"
        "X = rng.permutation(n).reshape(-1, 1) * 7\n"
        "y = rng.integers(0, 2, size=n)\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "model = CategoricalNB().fit(X, y)\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "assert model.n_categories_[0] == n\n"
        "print((after - before) * 1024)\n"
    )
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True
    )
    grown = int(result.stdout.strip())
    # the non-zero cells are 1e6 (one per row): a few float64 tables of C x K = 2e6 cells
    # (counts, log table and its transpose) plus codes and the hash table: < 200 bytes a row
    assert grown < 200 * 1_000_000, f"fit grew the process by {grown / 1e6:.0f} MB"


@pytest.mark.parametrize("smoothing", ["heb-m", "heb-u", "laplace", "lidstone", "kt", "m-estimate"])
def test_feature_missing_in_every_training_row(smoothing):
    """A column never observed has no categories: it neither counts nor scores, and the
    model equals one fitted without it."""
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, size=(60, 2)).astype(object)
    y = rng.integers(0, 2, size=60)
    with_empty = np.column_stack([X, np.full(60, None, dtype=object)])
    model = CategoricalNB(smoothing=smoothing).fit(with_empty, y)
    assert model.n_categories_[2] == 0
    assert np.all(np.isnan(model.concentration_[:, 2]))
    without = CategoricalNB(smoothing=smoothing).fit(X, y)
    test = with_empty.copy()
    test[:5, 2] = 7  # unknown at predict: skipped as well
    np.testing.assert_allclose(model.predict_proba(test), without.predict_proba(X), rtol=1e-12)


def test_the_cells_normalised_before_coding_are_those_the_core_cannot_hash():
    """``_core.cells_to_normalize`` lists the cells of an object column that are neither
    str, bytes, bool, int64, float nor None (they are normalised in Python first); a
    fractional float is not listed: coding it raises the error."""
    cells = ["a", b"b", True, 3, 2**70, -(2**63), 1.0, 1.5, np.float64(2.0), None]
    cells += [np.int64(4), pd.NA, (1, 2), np.str_("s"), Decimal(1), pd.Timestamp(0)]
    values = np.empty(len(cells), dtype=object)
    values[:] = cells

    def hashed_as_it_is(value):
        if value is None or isinstance(value, (str, bytes, bool, float)):
            return True
        return isinstance(value, int) and -(2**63) <= value < 2**63

    expected = [i for i, value in enumerate(cells) if not hashed_as_it_is(value)]
    assert _core.cells_to_normalize(values).tolist() == expected
