"""Input forms a scikit-learn user passes (uint64, huge whole floats, dates, mixed
tables, unhashable values) are categories like any other, or refused by name.

Each test compares against a model fitted on an input already known to work (small ints
with the same category structure), since Naive Bayes only sees which rows share a value.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from hebnb import AODE, CategoricalNB, MixedNB

ESTIMATORS = [CategoricalNB, AODE]


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 3, size=(60, 2))
    y = rng.integers(0, 2, size=60)
    return X, y


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_uint64_beyond_int64_is_a_category_like_any_other(estimator, small):
    """uint64 values >= 2**63 do not fit int64: they are categories all the same."""
    X, y = small
    big = X.astype(np.uint64) + np.uint64(2**63)
    expected = estimator().fit(X, y).predict_proba(X)
    model = estimator().fit(big, y)
    np.testing.assert_allclose(model.predict_proba(big), expected, rtol=1e-12)
    assert model.categories_[0].tolist() == [2**63, 2**63 + 1, 2**63 + 2]


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_whole_floats_beyond_int64_are_the_integers_they_equal(estimator):
    """1e19 is the integer 10**19, as 1.0 is 1: a float column, an object column of
    Python ints and a mixed one give the same categories_, sorted by value, and the
    same tables."""
    y = [0, 1, 0, 1, 1]
    floats = np.array([[-1e19], [5.0], [-1e19], [7.0], [np.nan]])
    ints = np.array([[-(10**19)], [5], [-(10**19)], [7], [None]], dtype=object)
    mixed = np.array([[-1e19], [5], [-(10**19)], [7.0], [None]], dtype=object)
    models = [estimator().fit(X, y) for X in (floats, ints, mixed)]
    for model in models:
        assert model.categories_[0].tolist() == [-(10**19), 5, 7]
        np.testing.assert_array_equal(model.predict_proba(floats), models[0].predict_proba(ints))
    if estimator is CategoricalNB:
        for model in models[1:]:
            np.testing.assert_array_equal(model.category_count_[0], models[0].category_count_[0])


@pytest.mark.parametrize("without_pyarrow", [False, True])
@pytest.mark.parametrize("form", ["pyarrow", "polars"])
def test_arrow_uint64_beyond_int64_with_nulls_are_exact_integers(
    small, form, without_pyarrow, monkeypatch
):
    """An Arrow or polars uint64 column with values >= 2**63 and a null: each value its
    own category (through pandas or numpy they were float64, where all four became one,
    2**64), the null missing, and the probabilities of the same column without nulls."""
    if form == "pyarrow" and without_pyarrow:
        pytest.skip("a pyarrow table needs pyarrow")
    pa = pytest.importorskip("pyarrow")
    pl = pytest.importorskip("polars") if form == "polars" else None
    X, y = small
    values = [2**64 - 10 + int(v) for v in X[:, 0]]
    with_null = values[:-1] + [None]

    def table(column):
        if form == "pyarrow":
            return pa.table({"a": pa.array(column, pa.uint64())})
        return pl.DataFrame({"a": pl.Series(column, dtype=pl.UInt64)})

    reference = np.array([[v] for v in with_null], dtype=object)
    expected = CategoricalNB().fit(reference, y)
    if without_pyarrow:
        monkeypatch.setitem(__import__("sys").modules, "pyarrow", None)
    model = CategoricalNB(handle_unknown="error").fit(table(with_null), y)
    assert model.categories_[0].tolist() == sorted(set(values))
    np.testing.assert_allclose(
        model.predict_proba(table(with_null)), expected.predict_proba(reference), rtol=1e-12
    )
    # at predict, a null beside known values leaves them what they are
    np.testing.assert_allclose(
        model.predict_proba(table(values[:2] + [None])),
        expected.predict_proba(reference[:2].tolist() + [[None]]),
        rtol=1e-12,
    )


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(("dtype", "offset"), [("UInt8", 0), ("UInt64", 2**53), ("UInt64", 2**63)])
def test_nullable_unsigned_columns_are_exact_integers(estimator, small, dtype, offset):
    """pandas' nullable unsigned columns keep every integer exact: 2**53 and 2**53 + 1
    are two categories (they went through float64, where they are one), and the
    categories are those of the numpy column of the same values."""
    X, y = small
    values = X.astype(np.uint64) + np.uint64(offset)
    frame = pd.DataFrame({f"f{j}": pd.array(values[:, j], dtype=dtype) for j in range(2)})
    frame.iloc[::7, 1] = pd.NA
    reference = pd.DataFrame({f"f{j}": values[:, j] for j in range(2)}).astype(object)
    reference.iloc[::7, 1] = None
    expected = estimator().fit(reference, y)
    model = estimator(handle_unknown="error").fit(frame, y)
    np.testing.assert_allclose(model.predict_proba(frame), expected.predict_proba(reference))
    assert [c.tolist() for c in model.categories_] == [c.tolist() for c in expected.categories_]
    assert model.categories_[0].tolist() == sorted({int(v) for v in values[:, 0]})
    assert all(type(v) is int for c in model.categories_ for v in c.tolist())  # not floats
    # at predict, a value is its own category, not a float neighbour's
    known = pd.DataFrame({"f0": pd.array(values[:3, 0], dtype=dtype), "f1": frame["f1"][:3]})
    np.testing.assert_allclose(
        model.predict_proba(known), expected.predict_proba(reference[:3]), rtol=1e-12
    )


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_whole_floats_beyond_int64_are_categories(estimator, small):
    X, y = small
    huge = (X + 1).astype(np.float64) * 1e19
    expected = estimator().fit(X, y).predict_proba(X)
    np.testing.assert_allclose(estimator().fit(huge, y).predict_proba(huge), expected, rtol=1e-12)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_numbers_at_predict_for_a_feature_trained_on_other_values(estimator, small):
    """A numeric column at predict time for a feature whose training values were not
    numpy numbers is coded by value like any other."""
    X, y = small
    # trained on a categorical column of ints: plain ints at predict are the same values
    frame = pd.DataFrame({"a": pd.Categorical(X[:, 0]), "b": X[:, 1]})
    model = estimator().fit(frame, y)
    plain = pd.DataFrame({"a": X[:, 0], "b": X[:, 1]})
    np.testing.assert_allclose(model.predict_proba(plain), model.predict_proba(frame), rtol=1e-12)
    # trained on strings: the ints 0, 1, 2 are not the strings "0", "1", "2", so they are
    # unknown, scored like missing values
    strings = estimator().fit(X.astype(str), y)
    as_ints = np.column_stack([X[:, 0], X[:, 1].astype(str)]).astype(object)
    as_ints[:, 0] = X[:, 0]
    missing = as_ints.copy()
    missing[:, 0] = None
    np.testing.assert_allclose(
        strings.predict_proba(as_ints), strings.predict_proba(missing), rtol=1e-12
    )
    np.testing.assert_allclose(
        strings.predict_proba(pd.DataFrame(X)),
        strings.predict_proba(np.full(X.shape, None, dtype=object)),
        rtol=1e-12,
    )


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("form", ["int64", "float64", "object"])
def test_the_least_int64_is_one_category_as_an_int_and_as_a_float(estimator, small, form):
    """-2**63 fits int64 and is exact in float64, so the float is the integer it equals
    (as 1.0 is 1), like every other whole float of int64's range: the int and the float
    are one category, at fit and at predict, whatever the array holds."""
    X, y = small
    values = np.where(X == 0, -(2**63), X).astype(np.int64)
    model = estimator(handle_unknown="error").fit(values, y)
    expected = estimator().fit(X, y).predict_proba(X)
    mixed = values.astype(object)
    mixed[::2] = values[::2].astype(np.float64).astype(object)  # floats and ints together
    table = {"int64": values, "float64": values.astype(np.float64), "object": mixed}[form]
    np.testing.assert_allclose(model.predict_proba(table), expected, rtol=1e-12)
    refitted = estimator(handle_unknown="error").fit(table, y)
    assert [c.size for c in refitted.categories_] == [3, 3]
    np.testing.assert_allclose(refitted.predict_proba(values), expected, rtol=1e-12)


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(
    "batch",
    [
        np.array([[2**63, 0], [1, 1]], dtype=np.uint64),
        np.array([[2**64, 0], [-(2**63) - 1, 1]], dtype=object),
    ],
)
def test_partial_fit_with_integers_beyond_int64_for_an_integer_feature(estimator, small, batch):
    """A batch bringing integers beyond int64 to an integer feature: the feature is coded
    by value, like one fit on all the rows (never cast back to int64)."""
    X, y = small
    model = estimator().fit(X, y).partial_fit(batch, [0, 1])
    everything = np.vstack([X.astype(object), batch.astype(object)])
    reference = estimator().fit(everything, np.r_[y, 0, 1])
    np.testing.assert_allclose(
        model.predict_proba(everything), reference.predict_proba(everything), rtol=1e-12
    )


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("fit_unit, predict_unit", [("us", "ns"), ("ns", "s"), ("s", "ms")])
def test_a_date_is_one_category_whatever_the_datetime64_unit(estimator, fit_unit, predict_unit):
    """numpy turns datetime64[ns] into ints but coarser units into datetime objects, so a
    model fitted on dates read from strings (unit "us") must still know every date of a
    "ns" column: a date is one category whatever its unit."""
    days = np.array(["2020-01-01", "2020-01-02", "2020-01-03", "NaT"] * 10, dtype="datetime64[D]")
    hours = (np.arange(40) % 3).astype("timedelta64[h]")
    y = (np.arange(40) % 3 == 0).astype(int)

    def table(unit):
        return pd.DataFrame(
            {
                "day": days.astype(f"datetime64[{unit}]"),
                "wait": hours.astype(f"timedelta64[{unit}]"),
            }
        )

    model = estimator(handle_unknown="error").fit(table(fit_unit), y)
    expected = model.predict_proba(table(fit_unit))
    np.testing.assert_allclose(model.predict_proba(table(predict_unit)), expected, rtol=1e-12)
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        unnamed = model.predict_proba(table(predict_unit).to_numpy())
    np.testing.assert_allclose(unnamed, expected, rtol=1e-12)
    # the same model as integer codes of the days and hours (NaT missing)
    codes = np.column_stack(
        [np.where(np.isnat(days), np.nan, np.arange(40) % 4), np.arange(40) % 3]
    )
    reference = estimator().fit(codes, y).predict_proba(codes)
    np.testing.assert_allclose(expected, reference, rtol=1e-12)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_mixing_named_and_unnamed_tables_warns_like_scikit_learn(estimator, small):
    """Fitted on a DataFrame and given an array (or the reverse), columns can only be
    matched by position: hebnb warns as scikit-learn does."""
    X, y = small
    frame = pd.DataFrame(X, columns=["a", "b"])
    named = estimator().fit(frame, y)
    with pytest.warns(UserWarning, match="X does not have valid feature names, but"):
        named.predict(X)
    unnamed = estimator().fit(X, y)
    with pytest.warns(UserWarning, match="X has feature names, but .* fitted without"):
        unnamed.predict(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        named.predict(frame)
        unnamed.predict(X)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_unhashable_values_are_named_as_such(estimator):
    """A list in an object column is named as unhashable by fit, predict and partial_fit
    (not as "values that cannot be ordered", nor as a bare TypeError)."""
    y = np.array([0, 1] * 3)
    strings = np.array([["a"], ["b"]] * 3, dtype=object)
    with_list = strings.copy()
    with_list[0, 0] = [1]
    message = "feature 0 holds values that cannot be categories .*unhashable"
    with pytest.raises(ValueError, match=message):
        estimator().fit(with_list, y)
    model = estimator().fit(strings, y)
    with pytest.raises(ValueError, match=message):
        model.predict(with_list)
    with pytest.raises(ValueError, match=message):
        model.partial_fit(with_list, y)


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(
    "make", [pd.Series, lambda values: pytest.importorskip("polars").Series(values)]
)
def test_a_series_as_x_is_refused_as_one_dimensional(estimator, make, small):
    """A pandas or polars Series is one column without its table: named so, where it
    used to fail inside pyarrow ("ArrowSchema describes non-struct type int64")."""
    X, y = small
    with pytest.raises(ValueError, match="got a 1D Series: pass series.to_frame"):
        estimator().fit(make(X[:, 0]), y)
    model = estimator().fit(X[:, :1], y)
    with pytest.raises(ValueError, match="got a 1D Series"):
        model.predict(make(X[:, 0]))


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_a_one_dimensional_arrow_array_is_refused_as_one_dimensional(estimator, small):
    """An Arrow array or chunked array is one column without its table: named so, where
    pyarrow said "ArrowSchema describes non-struct type"."""
    pa = pytest.importorskip("pyarrow")
    X, y = small
    for column in (pa.array(X[:, 0]), pa.chunked_array([X[:, 0]])):
        with pytest.raises(ValueError, match=f"got a 1D {type(column).__name__}: pass pa.table"):
            estimator().fit(column, y)
    model = estimator().fit(X[:, :1], y)
    with pytest.raises(ValueError, match="got a 1D ChunkedArray"):
        model.predict(pa.chunked_array([X[:, 0]]))


def test_an_arrow_stream_that_is_not_a_table_is_named(small):
    """Any other object exporting a one-column Arrow stream of non-struct values."""
    pa = pytest.importorskip("pyarrow")
    X, y = small

    class Stream:
        def __arrow_c_stream__(self, requested_schema=None):
            return pa.chunked_array([X[:, 0]]).__arrow_c_stream__(requested_schema)

    with pytest.raises(ValueError, match="got a Stream whose Arrow stream is not a table"):
        CategoricalNB().fit(Stream(), y)


def test_half_precision_floats_are_categories_without_warnings(small):
    """float16 codes: no overflow warning from comparing them with 2**63."""
    X, y = small
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = CategoricalNB().fit(X.astype(np.float16), y)
    np.testing.assert_array_equal(
        model.predict_proba(X), CategoricalNB().fit(X, y).predict_proba(X)
    )


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_numpy_variable_width_strings_are_strings(estimator):
    """numpy 2's StringDType columns are the strings they hold (they were refused as an
    unsupported dtype)."""
    if not hasattr(getattr(np, "dtypes", None), "StringDType"):
        pytest.skip("numpy < 2 has no StringDType")
    strings = np.dtypes.StringDType()
    X = np.array([["a", "x"], ["b", "y"], ["a", "x"], ["c", "y"], ["b", "x"]], dtype=object)
    y = [0, 1, 0, 1, 1]
    expected = estimator().fit(X, y)
    model = estimator().fit(X.astype(strings), y)
    assert [c.tolist() for c in model.categories_] == [c.tolist() for c in expected.categories_]
    np.testing.assert_array_equal(model.predict_proba(X.astype(strings)), expected.predict_proba(X))


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(
    "dtype, values",
    [("Object", [(1,), (2,)]), ("List", [[1], [2]]), ("Struct", [{"a": 1}, {"a": 2}])],
)
def test_a_polars_type_that_is_not_categorical_is_named_by_its_polars_type(
    estimator, dtype, values
):
    """polars exports an Object column to Arrow as fixed_size_binary[8] (the objects'
    addresses), a type the user never used: the message named that Arrow type."""
    polars = pytest.importorskip("polars")
    pytest.importorskip("pyarrow")
    series = polars.Series(values * 30, dtype=polars.Object if dtype == "Object" else None)
    X = polars.DataFrame({"a": series})
    with pytest.raises(TypeError, match=rf"column 'a'\) has polars type {dtype}") as error:
        estimator().fit(X, [0, 1] * 30)
    assert "Arrow type" not in str(error.value)


def test_a_polars_type_arrow_cannot_hold_is_named():
    polars = pytest.importorskip("polars")
    X = polars.DataFrame({"a": polars.Series([1, 2, 1, 2], dtype=polars.Int128)})
    with pytest.raises(TypeError, match="polars type Int128"):
        CategoricalNB().fit(X, [0, 1, 0, 1])


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_python_dates_are_the_categories_arrow_dates_are(estimator):
    """A pandas object column of ``datetime.date`` (what SQL readers and Arrow's
    ``to_pylist`` give) coded its dates as ``date`` objects, and the same dates as an Arrow
    ``date32`` column as Timestamps: a model fitted on one form found every value of the
    other unknown. Both are Timestamps now."""
    import datetime

    pa = pytest.importorskip("pyarrow")
    dates = [datetime.date(2020, 1, 1), datetime.date(2021, 6, 1), datetime.date(3000, 1, 1)]
    column = [dates[i % 3] for i in range(60)]
    y = np.array([int(i % 3 == 0) for i in range(60)])
    frame = pd.DataFrame({"d": pd.Series(column, dtype=object)})
    table = pa.table({"d": pa.array(column, pa.date32())})
    from_frame = estimator(handle_unknown="error").fit(frame, y)
    from_arrow = estimator(handle_unknown="error").fit(table, y)
    assert from_frame.categories_[0].tolist() == from_arrow.categories_[0].tolist()
    assert [type(c) for c in from_frame.categories_[0]] == [pd.Timestamp] * 3
    expected = (
        estimator().fit(np.arange(60)[:, None] % 3, y).predict_proba(np.arange(60)[:, None] % 3)
    )
    for model in (from_frame, from_arrow):
        for X in (frame, table, frame.astype("date32[pyarrow]")):
            np.testing.assert_array_equal(model.predict_proba(X), expected)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_booleans_beside_numbers_in_a_list_of_rows_stay_booleans(estimator):
    """numpy makes a list of rows mixing booleans and numbers an array of numbers, so
    ``True`` became the category ``1``; the same rows as an object array or a DataFrame
    keep ``True`` (README: ``1`` and ``True`` are different categories)."""
    rows = [[bool(i % 2), i % 3, float(i % 4 == 0)] for i in range(60)]
    y = [(i % 2) ^ (i % 5 == 0) for i in range(60)]
    objects = np.empty((60, 3), dtype=object)
    objects[:] = rows
    from_list = estimator(handle_unknown="error").fit(rows, y)
    from_objects = estimator(handle_unknown="error").fit(objects, y)
    assert from_list.categories_[0].tolist() == [False, True]
    assert [type(c) for c in from_list.categories_[0]] == [bool, bool]
    for got, want in zip(from_list.categories_, from_objects.categories_, strict=True):
        assert got.tolist() == want.tolist()
    np.testing.assert_array_equal(
        from_list.predict_proba(objects), from_objects.predict_proba(objects)
    )
    np.testing.assert_array_equal(
        from_objects.predict_proba(rows), from_objects.predict_proba(objects)
    )


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_decimals_are_the_numbers_they_equal(estimator, small):
    """A decimal column (pyarrow's, polars', a database's) is numbers: a whole Decimal
    was another category than the integer it equals, and a fractional one was accepted
    where the same value as a float is refused."""
    from decimal import Decimal

    pa = pytest.importorskip("pyarrow")
    X, y = small
    decimals = pa.table({"a": pa.array([Decimal(int(v)) for v in X[:, 0]])})
    model = estimator(handle_unknown="error").fit(decimals, y)
    assert [type(c) for c in model.categories_[0].tolist()] == [int] * 3
    expected = estimator().fit(X[:, :1], y).predict_proba(X[:, :1])
    np.testing.assert_array_equal(model.predict_proba(pa.table({"a": X[:, 0]})), expected)
    huge = np.array([[Decimal(2**70)], [Decimal(1)]] * 30, dtype=object)
    as_ints = np.array([[2**70], [1]] * 30, dtype=object)
    np.testing.assert_array_equal(
        estimator().fit(huge, y).predict_proba(as_ints),
        estimator().fit(as_ints, y).predict_proba(as_ints),
    )
    # beyond the floats' range a whole Decimal stays a Decimal (int() of 1E+3000000 would
    # take minutes); within it, the integer it equals
    beyond = np.array([[Decimal("1E+400")], [Decimal("1E+300")]] * 30, dtype=object)
    assert estimator().fit(beyond, y).categories_[0].tolist() == [10**300, Decimal("1E+400")]
    fractional = pa.table({"a": pa.array([Decimal("1.5"), Decimal(2)] * 30)})
    with pytest.raises(ValueError, match=r"column 'a'.*fractional part"):
        estimator().fit(fractional, y)


@pytest.mark.parametrize("estimator", [CategoricalNB, AODE, MixedNB])
def test_a_matrix_is_the_array_it_holds(estimator):
    """np.matrix (a 2-D array whose columns stay 2-D): strings or integers, the model of
    the plain array. Taking a column of an object matrix failed inside the encoder."""
    X = np.array([["a", "b"], ["b", "a"], ["a", "a"], ["b", "b"], ["b", "b"]] * 4, dtype=object)
    y = [0, 1, 0, 1, 1] * 4
    for values in (X, (X == "a").astype(int)):
        plain = estimator().fit(values, y).predict_proba(values)
        with warnings.catch_warnings():  # numpy's own advice against matrices
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            matrix = np.asmatrix(values)
        np.testing.assert_array_equal(estimator().fit(matrix, y).predict_proba(matrix), plain)
        np.testing.assert_array_equal(estimator().fit(values, y).predict_proba(matrix), plain)


class _ArrowStream:
    """An object exporting only the Arrow C stream interface (as a DuckDB or ADBC
    result does): no length, no shape, and readable once."""

    def __init__(self, table):
        self.table = table
        self.read = False

    def __arrow_c_stream__(self, requested_schema=None):
        assert not self.read, "the stream was read twice"
        self.read = True
        return self.table.__arrow_c_stream__(requested_schema)


@pytest.mark.parametrize("estimator", [CategoricalNB, AODE, MixedNB])
def test_an_arrow_stream_is_read_once_by_fit_and_partial_fit(estimator):
    """fit, partial_fit and predict_proba take an Arrow C stream as the Table it holds;
    partial_fit counted its rows first (with len or .shape: refused), MixedNB took it as
    one object ("Expected 2D array, got scalar array")."""
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"a": ["x", "y", "x", "y", "y"] * 4, "b": ["p", "p", "q", "q", "p"] * 4})
    y = [0, 1, 0, 1, 1] * 4
    expected = estimator().fit(table, y).predict_proba(table)
    fitted = estimator().fit(_ArrowStream(table), y)
    np.testing.assert_array_equal(fitted.predict_proba(_ArrowStream(table)), expected)
    streamed = estimator().partial_fit(_ArrowStream(table), y, classes=[0, 1])
    np.testing.assert_allclose(streamed.predict_proba(table), expected, rtol=1e-12)


def test_mixed_reads_arrow_types_pandas_has_no_numpy_type_for():
    """A pandas column of ArrowDtype(string_view) (pandas' own float check raises
    NotImplementedError on it) goes to the categorical group, as its strings do."""
    pa = pytest.importorskip("pyarrow")
    text = ["x", "y", "x", "y", "y"] * 4
    y = [0, 1, 0, 1, 1] * 4
    floats = np.linspace(0.0, 1.0, 20)
    view = pd.array(pa.array(text, pa.string_view()), dtype=pd.ArrowDtype(pa.string_view()))
    frame = pd.DataFrame({"a": view, "f": floats})
    plain = pd.DataFrame({"a": np.array(text, dtype=object), "f": floats})
    expected = MixedNB().fit(plain, y).predict_proba(plain)
    for X in (frame, pa.Table.from_pandas(frame)):
        np.testing.assert_allclose(MixedNB().fit(X, y).predict_proba(X), expected, rtol=1e-12)


def test_arrow_binary_of_fixed_size_is_binary():
    """fixed_size_binary values are the bytes they hold, as binary's are (it was refused
    as not categorical)."""
    pa = pytest.importorskip("pyarrow")
    values = [b"ab", b"cd", None, b"ab", b"cd"] * 4
    y = [0, 1, 0, 1, 1] * 4
    fixed = pa.table({"a": pa.array(values, pa.binary(2))})
    varying = pa.table({"a": pa.array(values, pa.binary())})
    model = CategoricalNB(handle_unknown="error").fit(fixed, y)
    assert model.categories_[0].tolist() == [b"ab", b"cd"]
    np.testing.assert_array_equal(
        model.predict_proba(fixed), CategoricalNB().fit(varying, y).predict_proba(varying)
    )


def test_times_beyond_microseconds_are_refused_by_name():
    """time64[ns] values that are not whole microseconds (polars' Time) have no Python
    object to be: a ValueError naming the column (it was pyarrow's own ArrowInvalid);
    whole microseconds read as datetime.time."""
    pa = pytest.importorskip("pyarrow")
    y = [0, 1] * 4
    table = pa.table({"t": pa.array([1, 2, 1001, 1002] * 2, pa.time64("ns"))})
    with pytest.raises(ValueError, match=r"column 't'.*time64\[ns\].*cast the column"):
        CategoricalNB().fit(table, y)
    whole = pa.table({"t": pa.array([1000, 2000] * 4, pa.time64("ns"))})
    assert [t.microsecond for t in CategoricalNB().fit(whole, y).categories_[0]] == [1, 2]
