"""Columns of every form (object and pandas ``str`` strings, ``category``, pyarrow, polars)
give bit-identical models to the int64 codes of the same data; the vocabulary hashes
Unicode, pickles with a format version, streams, and refuses what is not categorical."""

from __future__ import annotations

import pickle
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from hebnb import AODE, CategoricalNB, _core
from hebnb._encoding import MISSING_CODE, UNKNOWN, CategoryEncoder

pa = pytest.importorskip("pyarrow")

ESTIMATORS = [CategoricalNB, AODE]


@pytest.fixture(scope="module")
def data():
    """Integer codes with missing values (-1) in every column, and labels."""
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 12, size=(400, 4))
    codes[:, 2] = rng.integers(0, 3, size=400)
    codes[rng.random((400, 4)) < 0.1] = -1
    y = rng.integers(0, 3, size=400)
    return codes, y


def words(codes: np.ndarray) -> np.ndarray:
    """Zero-padded strings (their sorted order is the integers' order), None if missing."""
    out = np.empty(codes.shape, dtype=object)
    for index, value in np.ndenumerate(codes):
        out[index] = None if value < 0 else f"v{value:03d}"
    return out


def as_float(codes: np.ndarray) -> np.ndarray:
    """The int64 path: whole floats with NaN for the missing values."""
    return np.where(codes < 0, np.nan, codes.astype(np.float64))


NAMES = ["a", "b", "c", "d"]


def object_frame(codes):
    return pd.DataFrame(words(codes), columns=NAMES)


def str_frame(codes):
    return object_frame(codes).astype(pd.StringDtype("pyarrow"))


def python_str_frame(codes):
    return object_frame(codes).astype(pd.StringDtype("python"))


def category_frame(codes):
    return object_frame(codes).astype("category")


def arrow_dictionary_frame(codes):
    table = pa.table({n: pa.array(words(codes)[:, j]) for j, n in enumerate(NAMES)})
    encoded = pa.table({n: table.column(n).dictionary_encode() for n in NAMES})
    return encoded.to_pandas(types_mapper=pd.ArrowDtype)


def arrow_table(codes):
    return pa.table(
        {n: pa.array(words(codes)[:, j], type=pa.string()) for j, n in enumerate(NAMES)}
    )


def large_string_chunked_table(codes):
    """Large strings in several chunks, sliced (non-zero array offsets)."""
    columns = {}
    for j, n in enumerate(NAMES):
        values = list(words(codes)[:, j])
        chunks = [
            pa.array(["pad"] + values[:150], type=pa.large_string()).slice(1),
            pa.array(values[150:], type=pa.large_string()),
        ]
        columns[n] = pa.chunked_array(chunks)
    return pa.table(columns)


def string_view_table(codes):
    return pa.table(
        {n: pa.array(words(codes)[:, j], type=pa.string_view()) for j, n in enumerate(NAMES)}
    )


def polars_frame(codes):
    pl = pytest.importorskip("polars")
    return pl.DataFrame({n: list(words(codes)[:, j]) for j, n in enumerate(NAMES)})


def polars_categorical(codes):
    pl = pytest.importorskip("polars")
    return polars_frame(codes).with_columns(pl.all().cast(pl.Categorical))


def numpy_strings(codes):
    return words(codes)


FORMS = [
    object_frame,
    str_frame,
    python_str_frame,
    category_frame,
    arrow_dictionary_frame,
    arrow_table,
    large_string_chunked_table,
    string_view_table,
    polars_frame,
    polars_categorical,
    numpy_strings,
]


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.__name__)
def test_every_form_is_bit_identical_to_the_int64_path(estimator, form, data):
    codes, y = data
    reference = estimator().fit(as_float(codes), y)
    expected = reference.predict_proba(as_float(codes))
    X = form(codes)
    model = estimator().fit(X, y)
    np.testing.assert_array_equal(model.predict_proba(X), expected)
    np.testing.assert_array_equal(model.n_categories_, reference.n_categories_)
    # and fitted on strings, scored from another form of the same strings
    other = words(codes) if isinstance(X, np.ndarray) else object_frame(codes)
    np.testing.assert_array_equal(model.predict_proba(other), expected)
    for f in range(codes.shape[1]):
        expected_categories = [f"v{v:03d}" for v in reference.categories_[f].astype(int)]
        assert list(model.categories_[f]) == expected_categories


def mixed_frame(codes):
    """Strings, a pandas ``str`` column, a category column and whole floats side by side."""
    frame = object_frame(codes)
    frame["b"] = frame["b"].astype(pd.StringDtype("pyarrow"))
    frame["c"] = frame["c"].astype("category")
    frame["d"] = as_float(codes)[:, 3]
    return frame


def mixed_frame_int_column(codes):
    """An int64 column (no missing values) beside strings."""
    frame = object_frame(codes)
    frame["d"] = np.maximum(codes[:, 3], 0)
    return frame


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(
    "form", [*FORMS, mixed_frame, mixed_frame_int_column], ids=lambda f: f.__name__
)
def test_a_few_rows_are_scored_as_the_whole_table(estimator, form, data):
    """Scoring one row or a few (the small-table path: one object block, a category
    column through the rows' own values) gives the rows of the whole table's result."""
    codes, y = data
    if form is mixed_frame_int_column:
        codes = codes.copy()
        codes[:, 3] = np.maximum(codes[:, 3], 0)
    reference = estimator().fit(as_float(codes), y)
    expected = reference.predict_proba(as_float(codes))
    X = form(codes)
    model = estimator().fit(X, y)
    missing_rows = np.flatnonzero((codes < 0).any(axis=1))[:3]
    for rows in ([0], [5, 6, 7], list(missing_rows), list(range(64)), list(range(65))):
        part = X[rows] if isinstance(X, np.ndarray) else _rows(X, rows)
        np.testing.assert_array_equal(model.predict_proba(part), expected[rows])


def _rows(X, rows):
    if isinstance(X, pd.DataFrame):
        return X.iloc[rows]
    if isinstance(X, pa.Table):  # (no take kernel for string_view)
        return pa.concat_tables([X.slice(r, 1) for r in rows])
    return X[rows]  # polars


def test_category_columns_with_few_rows_map_unknown_and_missing_values():
    """A category column scored with fewer rows than categories: unknown categories
    (declared by the dtype, never seen) and missing values are -1 codes."""
    X = pd.DataFrame({"a": ["x", "y", "x", "z"]})
    y = [0, 1, 0, 1]
    model = CategoricalNB().fit(X, y)
    dtype = pd.CategoricalDtype(["w", "x", "y", "z", "q", "r"])
    rows = pd.DataFrame({"a": pd.Categorical(["q", None, "z"], dtype=dtype)})
    encoded = model._encoder.transform(rows).codes
    expected = model._encoder.transform(pd.DataFrame({"a": [None, None, "z"]})).codes
    np.testing.assert_array_equal(encoded, expected)
    assert encoded[0, 0] == -1 and encoded[0, 2] >= 0


@pytest.mark.parametrize("form", [polars_frame, polars_categorical], ids=lambda f: f.__name__)
def test_polars_without_pyarrow_gives_the_same_probabilities(form, data, monkeypatch):
    """polars without pyarrow installed (simulated: importing pyarrow fails) reads its
    columns through numpy and still gives the int64 path's probabilities."""
    codes, y = data
    X = form(codes)
    expected = CategoricalNB().fit(as_float(codes), y).predict_proba(as_float(codes))
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError):
        import pyarrow  # noqa: F401
    model = CategoricalNB().fit(X, y)
    np.testing.assert_array_equal(model.predict_proba(X), expected)
    assert list(model.feature_names_in_) == NAMES


def test_long_string_views_in_several_buffers_read_as_their_text(data):
    """string_view columns read from their views in Rust: strings inline (up to 12
    bytes) and in data buffers, sliced chunks, nulls, a dictionary of views; the same
    probabilities and categories as the object frame of the same strings."""
    codes, y = data
    text = words(codes)
    long = np.where(
        pd.isna(text),
        None,
        np.char.add("a category name longer than twelve bytes ", text.astype(str)),
    )
    long[:, 1] = text[:, 1]  # short (inline) strings next to long ones
    reference = CategoricalNB().fit(pd.DataFrame(long, columns=NAMES), y)
    expected = reference.predict_proba(pd.DataFrame(long, columns=NAMES))
    columns = {}
    for j, n in enumerate(NAMES):
        values = list(long[:, j])
        chunks = [
            pa.array(["pad"] + values[:150], type=pa.string_view()).slice(1),
            pa.array(values[150:], type=pa.string_view()),
        ]
        columns[n] = pa.chunked_array(chunks)
    table = pa.table(columns)
    assert table.column(0).chunk(1).buffers()[2:]  # data buffers exist
    model = CategoricalNB().fit(table, y)
    np.testing.assert_array_equal(model.predict_proba(table), expected)
    for a, b in zip(model.categories_, reference.categories_):
        np.testing.assert_array_equal(a, b)
    dictionary = pa.table(
        {
            n: pa.DictionaryArray.from_arrays(
                pa.array(np.unique(long[:, j].astype(str), return_inverse=True)[1]),
                pa.array(np.unique(long[:, j].astype(str)), type=pa.string_view()),
            )
            for j, n in enumerate(NAMES)
        }
    )
    by_dictionary = CategoricalNB().fit(dictionary, y)
    no_missing = pd.DataFrame(long.astype(str), columns=NAMES)
    np.testing.assert_array_equal(
        by_dictionary.predict_proba(dictionary),
        CategoricalNB().fit(no_missing, y).predict_proba(no_missing),
    )


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.__name__)
def test_named_forms_record_and_check_their_column_names(form, data):
    codes, y = data
    X = form(codes)
    if isinstance(X, np.ndarray):
        pytest.skip("numpy arrays have no column names")
    model = CategoricalNB().fit(X, y)
    assert list(model.feature_names_in_) == NAMES
    reordered = object_frame(codes)[["b", "a", "c", "d"]]
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict(reordered)


def test_polars_integer_columns_keep_their_fast_path_next_to_strings(data):
    pl = pytest.importorskip("polars")
    codes, y = data
    frame = pl.DataFrame({"ints": np.abs(codes[:, 0]), "text": list(words(codes)[:, 1])})
    model = CategoricalNB().fit(frame, y)
    assert model.categories_[0].dtype == np.int64
    assert model.categories_[1].dtype == object


def test_integer_column_labels_are_checked_and_mixed_labels_refused(data):
    codes, y = data
    X = pd.DataFrame(np.abs(codes))  # labels 0, 1, 2, 3
    model = CategoricalNB().fit(X, y)
    assert not hasattr(model, "feature_names_in_")
    with pytest.raises(ValueError, match="column labels should match"):
        model.predict(X[[1, 0, 2, 3]])
    np.testing.assert_array_equal(model.predict(X), model.predict(np.abs(codes)))
    mixed = X.set_axis(["a", 1, "c", 3], axis=1)
    with pytest.raises(TypeError, match="Feature names are only supported if all"):
        CategoricalNB().fit(mixed, y)


def test_lone_surrogates_are_a_value_error_naming_the_column():
    X = pd.DataFrame({"city": ["a", "b\ud800", "a", "b"], "k": ["x", "y", "x", "y"]}, dtype=object)
    with pytest.raises(ValueError, match=r"column 'city'.*not valid Unicode"):
        CategoricalNB().fit(X, [0, 1, 0, 1])
    model = CategoricalNB().fit(X.assign(city=["a", "b", "a", "b"]), [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"column 'city'.*not valid Unicode"):
        model.predict(X)


@pytest.mark.parametrize(
    "form", ["object array", "str array", "list", "DataFrame", "python strings"]
)
@pytest.mark.parametrize("estimator", [CategoricalNB, AODE])
def test_lone_surrogates_in_every_input_form_are_a_value_error(form, estimator):
    """fit, predict and partial_fit refuse a lone surrogate with a ValueError naming the
    feature (never a UnicodeEncodeError from inside), and a refused batch adds nothing."""
    column = ["a", "b\ud800", "a", "b"]
    rows = [[value, "x"] for value in column]
    X = {
        "object array": lambda: np.array(rows, dtype=object),
        "str array": lambda: np.array(rows),
        "list": lambda: rows,
        "DataFrame": lambda: pd.DataFrame(rows, columns=["city", "k"], dtype=object),
        "python strings": lambda: pd.DataFrame(
            {"city": pd.array(column, dtype="string[python]"), "k": ["x"] * 4}
        ),
    }[form]()
    good = np.array([["a", "x"], ["b", "y"], ["a", "x"], ["b", "y"]], dtype=object)
    y = [0, 1, 0, 1]
    named = form in ("DataFrame", "python strings")
    message = (
        r"feature 0 \(column 'city'\).*not valid Unicode"
        if named
        else r"feature 0 .*not valid Unicode"
    )
    with pytest.raises(ValueError, match=message):
        estimator().fit(X, y)
    model = estimator().fit(good, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # fitted without names
        with pytest.raises(ValueError, match=message):
            model.predict(X)
        stream = estimator().partial_fit(good, y, classes=[0, 1])
        before = [list(c) for c in stream.categories_]
        with pytest.raises(ValueError, match=message):
            stream.partial_fit(X, y)
    assert [list(c) for c in stream.categories_] == before


def test_lone_surrogates_in_declared_categories_and_groups_are_a_value_error():
    from hebnb import EmpiricalBayesDirichletClassifier

    bad = np.array([["a"], ["b\ud800"], ["a"], ["b"]], dtype=object)
    with pytest.raises(ValueError, match="not valid Unicode"):
        CategoricalNB(categories=[["a", "b\ud800"]]).fit(np.array([["a"], ["a"]]), [0, 1])
    groups = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0})
    with pytest.raises(ValueError, match="group column.*not valid Unicode"):
        groups.fit(bad, [0, 1, 0, 1])
    groups.fit(bad[[0, 3]], [0, 1])
    with pytest.raises(ValueError, match="group column.*not valid Unicode"):
        groups.predict_proba(bad)


def test_unicode_empty_and_very_long_strings_hash_as_themselves():
    values = ["", "é", "e\u0301", "😀", "x" * 100_000, "x" * 99_999 + "y", "日本語", "\x00"]
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(values), size=300)
    column = np.array([values[k] for k in picks], dtype=object)
    y = rng.integers(0, 2, size=300)
    for X in (column[:, None], pd.DataFrame({"s": column}).astype(pd.StringDtype("pyarrow"))):
        model = CategoricalNB().fit(X, y)
        assert sorted(model.categories_[0]) == sorted(set(column))
        reference = CategoricalNB().fit(picks[:, None], y)
        np.testing.assert_array_equal(
            model.predict_proba(X), reference.predict_proba(picks[:, None])
        )


def test_types_are_compared_by_type_and_value():
    X = np.array([[1], ["1"], [b"1"], [True], [1.0], [None]], dtype=object)
    model = CategoricalNB(smoothing="laplace").fit(X, [0, 1, 0, 1, 0, 1])
    # True, 1 (and 1.0, the same integer), "1", b"1": booleans, ints, strings, bytes
    assert model.categories_[0].tolist() == [True, 1, "1", b"1"]
    np.testing.assert_array_equal(model.category_count_[0], [[0, 2, 0, 1], [1, 0, 1, 0]])


def test_other_hashable_objects_are_categories_too():
    X = np.empty((6, 1), dtype=object)
    for i, v in enumerate([(1, 2), (3,), (1, 2), pd.Timestamp("2020-01-01"), (3,), None]):
        X[i, 0] = v
    model = CategoricalNB(smoothing="laplace").fit(X, [0, 1, 0, 1, 1, 0])
    assert model.n_categories_[0] == 3
    np.testing.assert_array_equal(model.predict(X[:3]), model.predict(X[[0, 1, 0]]))


@pytest.mark.parametrize(
    "array, error, message",
    [
        (pa.array([0.5, 1.0]), ValueError, "fractional"),
        (pa.array([[1], [2]]), TypeError, "not categorical"),
        (pa.array([{"a": 1}, {"a": 2}]), TypeError, "not categorical"),
    ],
)
def test_arrow_types_that_are_not_categorical_are_refused(array, error, message):
    table = pa.table({"x": array})
    with pytest.raises(error, match=message):
        CategoricalNB().fit(table, [0, 1])


def test_declared_categories(data):
    codes, y = data
    X = np.abs(codes[:, :2])
    declared = [list(range(15)), list(range(13))]
    model = CategoricalNB(categories=declared).fit(X, y)
    np.testing.assert_array_equal(model.n_categories_, [15, 13])
    assert model.categories_[0].tolist() == list(range(15))
    # a declared category never seen is skipped at predict under the pooled mean (SPEC)
    unseen = X[:5].copy()
    unseen[:, 0] = 14
    missing = X[:5].astype(float)
    missing[:, 0] = np.nan
    np.testing.assert_allclose(model.predict_proba(unseen), model.predict_proba(missing))
    with pytest.raises(ValueError, match="not among the declared categories"):
        CategoricalNB(categories=[list(range(5)), list(range(13))]).fit(X, y)
    with pytest.raises(ValueError, match="duplicate"):
        CategoricalNB(categories=[[0, 1, 1], list(range(13))]).fit(X, y)
    with pytest.raises(ValueError, match="2 features"):
        CategoricalNB(categories=[list(range(15))]).fit(X, y)
    with pytest.raises(ValueError, match="not among the declared categories"):
        CategoricalNB(categories=declared).fit(X, y).partial_fit([[20, 0]], [0])


def test_category_dtype_declares_its_categories(data):
    codes, y = data
    frame = category_frame(codes)
    frame["a"] = frame["a"].cat.add_categories(["zzz"])
    model = CategoricalNB().fit(frame, y)
    assert model.n_categories_[0] == len(set(words(codes)[:, 0]) - {None}) + 1
    assert model.categories_[0][-1] == "zzz"


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_partial_fit_in_random_batches_equals_one_fit(estimator, data):
    codes, y = data
    X = object_frame(codes)
    full = estimator().fit(X, y)
    rng = np.random.default_rng(2)
    cuts = np.sort(rng.choice(np.arange(1, 400), size=12, replace=False))
    online = estimator()
    for part in np.split(np.arange(400), cuts):
        online.partial_fit(X.iloc[part], y[part], classes=np.unique(y))
    np.testing.assert_allclose(online.predict_proba(X), full.predict_proba(X), atol=1e-10)
    for a, b in zip(online.categories_, full.categories_):
        np.testing.assert_array_equal(a, b)
    if estimator is CategoricalNB:
        np.testing.assert_allclose(online.concentration_, full.concentration_, rtol=1e-10)
        for a, b in zip(online.category_count_, full.category_count_):
            np.testing.assert_array_equal(a, b)


def test_deferred_solve_is_exact_and_pickles(data):
    codes, y = data
    online = CategoricalNB().partial_fit(as_float(codes[:200]), y[:200], classes=[0, 1, 2])
    online.partial_fit(as_float(codes[200:]), y[200:])
    restored = pickle.loads(pickle.dumps(online))  # pickled before anything was solved
    full = CategoricalNB().fit(as_float(codes), y)
    for model in (online, restored):
        np.testing.assert_allclose(model.concentration_, full.concentration_, rtol=1e-10)
        np.testing.assert_allclose(
            model.predict_proba(as_float(codes)), full.predict_proba(as_float(codes)), atol=1e-10
        )


def overdispersed_stream(n_rows=3000, n_features=5, seed=3):
    """Rows whose per-class category probabilities are Dirichlet draws around a shared
    mean (concentration 30): the Type-II ML concentrations lie inside the bounds, where
    the solver refines them by Newton steps."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n_rows)
    X = np.empty((n_rows, n_features), dtype=np.int64)
    for f in range(n_features):
        k = 4 + 3 * f
        mean = rng.dirichlet(np.full(k, 2.0))
        for c in range(3):
            p = rng.dirichlet(30 * mean)
            rows = y == c
            X[rows, f] = rng.choice(k, size=rows.sum(), p=p)
    return X, y


def test_a_warm_started_stream_solves_as_a_cold_solve():
    """Prequential stream (score each batch, then learn it): every solve after the first
    starts from the previous concentrations; each must be the cold solve's maximiser to
    the solver's tolerance, with fewer Newton steps in total."""
    X, y = overdispersed_stream()
    model = CategoricalNB()
    warm_steps = cold_steps = 0
    for start in range(0, 3000, 250):
        rows = slice(start, start + 250)
        if start:
            model.predict_proba(X[rows])  # solves, then the batch joins warm
        model.partial_fit(X[rows], y[rows], classes=[0, 1, 2])
        cold = CategoricalNB().fit(X[: start + 250], y[: start + 250])
        np.testing.assert_allclose(model.concentration_, cold.concentration_, rtol=1e-9)
        np.testing.assert_allclose(model.log_evidence_, cold.log_evidence_, rtol=1e-12)
        if start:
            warm_steps += int(model.n_iter_.sum())
            cold_steps += int(cold.n_iter_.sum())
    inside = (cold.concentration_ > 0.011) & (cold.concentration_ < 9999)
    assert inside.sum() >= 10  # the refinement is exercised
    assert warm_steps < cold_steps


def test_a_warm_start_of_another_shape_or_no_start_is_ignored():
    X, y = overdispersed_stream(600)
    model = CategoricalNB().partial_fit(X[:300], y[:300], classes=[0, 1, 2])
    model._warm_start = np.ones((2, 2))  # not (classes, features): no guess
    model.partial_fit(X[300:], y[300:])
    cold = CategoricalNB().fit(X, y)
    np.testing.assert_allclose(model.concentration_, cold.concentration_, rtol=1e-9)


def test_pickle_round_trip_of_a_vocabulary_of_a_million_values():
    n = 1_000_000
    column = np.array([f"id{k}" for k in range(n)], dtype=object)
    y = np.arange(n) % 2
    model = CategoricalNB(smoothing="laplace").fit(column[:, None], y)
    restored = pickle.loads(pickle.dumps(model))
    assert restored.n_categories_[0] == n
    probe = column[[0, 17, n - 1]][:, None]
    np.testing.assert_array_equal(restored.predict_proba(probe), model.predict_proba(probe))
    np.testing.assert_array_equal(restored.categories_[0], model.categories_[0])


def test_first_appearance_categories_are_the_categories_in_code_order():
    """What a Dask merge reads instead of the sorted view: element k is the category
    whose code is k, with the types of ``categories`` (floats stay floats; ints beyond
    int64 and tuples stay Python objects)."""
    X = pd.DataFrame(
        {
            "words": ["pear", "apple", None, "fig", "apple"],
            "floats": [2.0, -1.0, 2.0, np.nan, 0.0],
            "ints": [7, -3, 7, 12, 0],
            "objects": [2**70, (1, 2), 3, 2**70, "x"],
        }
    )
    encoder = CategoryEncoder()
    codes = encoder.fit_transform(X)
    for f, column in enumerate(X.columns):
        in_code_order = encoder.first_appearance_categories(f)
        seen = [v for v in X[column] if not (v is None or (isinstance(v, float) and np.isnan(v)))]
        first = list(dict.fromkeys(seen))  # first appearances, in order
        assert in_code_order.tolist() == first
        assert in_code_order.dtype == encoder.categories[f].dtype
        present = codes[f] >= 0
        assert in_code_order[codes[f][present]].tolist() == [
            v for v, keep in zip(X[column], present) if keep
        ]


def test_a_vocabulary_of_another_format_names_its_version():
    vocabulary = CategoryEncoder().fit_transform(np.array([["a"], ["b"]], dtype=object))
    assert vocabulary.shape == (1, 2)
    encoder = CategoryEncoder()
    encoder.fit_transform(np.array([["a"], ["b"]], dtype=object))
    state = encoder.vocabulary.__getstate__()
    state["format"] = 99
    with pytest.raises(ValueError, match="format 99"):
        encoder.vocabulary.__setstate__(state)


def test_an_encoder_saved_before_the_vocabulary_still_loads():
    """Format 0: sorted categories whose ranks were the codes."""
    old = CategoryEncoder.__new__(CategoryEncoder)
    old.__setstate__(
        {
            "categories": [np.array(["a", "c"], dtype=object), np.array([-3, 7])],
            "numeric": [False, True],
            "feature_names": None,
            "_indexes": {},
            "_integer_cache": {},
        }
    )
    X = np.array([["c", 7], ["a", -3], ["z", 7]], dtype=object)
    codes = old.transform(X).codes
    np.testing.assert_array_equal(codes, [[1, 0, -1], [1, 0, 1]])


def test_group_column_of_every_form_gives_the_same_posteriors():
    from hebnb import EmpiricalBayesDirichletClassifier

    rng = np.random.default_rng(3)
    groups = np.array([f"arm{k}" for k in rng.integers(0, 30, 500)], dtype=object)
    y = rng.integers(0, 2, 500)
    expected = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).fit(groups[:, None], y)
    frame = pd.DataFrame({"g": groups})
    probe = np.array([["arm3"], ["never-seen"], ["arm7"]], dtype=object)
    for X in (
        frame.astype(pd.StringDtype("pyarrow")),
        frame.astype("category"),
        frame,
    ):
        model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).fit(X, y)
        np.testing.assert_array_equal(model.groups_, pd.unique(groups))
        named = pd.DataFrame({"g": probe[:, 0]})  # the column it was fitted on
        np.testing.assert_array_equal(model.predict_proba(named), expected.predict_proba(probe))
    with pytest.raises(ValueError, match="missing groups"):
        expected.partial_fit(np.array([["arm3"], [None]], dtype=object), [0, 1])
    assert len(expected.groups_) == len(set(groups))


def test_aode_takes_declared_categories(data):
    codes, y = data
    X = np.abs(codes[:, :3])
    model = AODE(categories=[list(range(14)), list(range(12)), list(range(3))]).fit(X, y)
    np.testing.assert_array_equal(model.n_categories_, [14, 12, 3])
    with pytest.raises(ValueError, match="not among the declared categories"):
        AODE(categories=[list(range(3))] * 3).fit(X, y)


def test_large_predictions_go_by_blocks_with_the_same_numbers():
    rng = np.random.default_rng(4)
    X = rng.integers(0, 50, size=(70_000, 3))
    y = rng.integers(0, 2, size=70_000)
    model = CategoricalNB().fit(X, y)
    whole = model.predict_proba(X)
    parts = np.vstack([model.predict_proba(X[:40_000]), model.predict_proba(X[40_000:])])
    np.testing.assert_array_equal(whole, parts)
    frame = pd.DataFrame(X.astype(str), columns=["a", "b", "c"])
    strings = CategoricalNB().fit(frame, y)
    np.testing.assert_array_equal(strings.predict_log_proba(frame), model.predict_log_proba(X))


@pytest.mark.parametrize("value, message", [(np.inf, "infinite"), (0.5, "fractional")])
def test_dataframe_float_errors_name_the_feature(value, message):
    """A non-categorical float in a DataFrame column names its feature (not "feature -1")
    and its column, as the other errors about a table's columns do."""
    X = pd.DataFrame({"a": [1, 2, 1, 2], "b": [1.0, value, 2.0, 1.0]})
    with pytest.raises(ValueError, match=rf"feature 1 \(column 'b'\) holds .*{message}"):
        CategoricalNB().fit(X, [0, 1, 0, 1])
    pl = pytest.importorskip("polars")
    with pytest.raises(ValueError, match=rf"feature 1 \(column 'b'\) holds .*{message}"):
        CategoricalNB().fit(pl.from_pandas(X), [0, 1, 0, 1])


def test_long_columns_are_coded_by_blocks_with_the_codes_of_one_call(monkeypatch):
    """Tables and columns longer than a block are coded block by block: the codes and
    categories equal those of one call, and a failure in a later block adds nothing."""
    import hebnb._encoding as encoding

    rng = np.random.default_rng(3)
    X = rng.integers(-5, 40, size=(5_000, 3))
    objects = pd.DataFrame({"s": rng.integers(0, 30, 5_000).astype(str).astype(object)})
    y = rng.integers(0, 2, size=5_000)
    strings = pa.table(
        {"s": pa.chunked_array([objects["s"][:2_345].tolist(), objects["s"][2_345:].tolist()])}
    )
    tables = [X, objects, strings]
    whole = [CategoricalNB().fit(table, y) for table in tables]
    monkeypatch.setattr(encoding, "ENCODE_BLOCK_CELLS", 300)
    monkeypatch.setattr(encoding, "ENCODE_BLOCK_ROWS", 70)
    for table, one_call in zip(tables, whole):
        by_blocks = CategoricalNB().fit(table, y)
        for a, b in zip(one_call.categories_, by_blocks.categories_):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(one_call.predict_proba(table), by_blocks.predict_proba(table))
    stream = CategoricalNB().partial_fit(X[:100], y[:100], classes=[0, 1])
    before = [c.copy() for c in stream.categories_]
    bad = X.astype(float)
    bad[4_000, 1] = 0.5  # refused in a late block, after earlier blocks added categories
    bad[:, 0] += 1_000
    with pytest.raises(ValueError, match="feature 1 holds floats with a fractional part"):
        stream.partial_fit(bad, y)
    for ca, cb in zip(stream.categories_, before):
        np.testing.assert_array_equal(ca, cb)


def _python_buffer_codes(array, grow_from=None):
    """Codes of an Arrow array through the pyarrow buffer path (``_encode_arrow``), the
    reference for the Rust reader of the C stream interface."""
    from hebnb import _core
    from hebnb._encoding import _encode_arrow

    vocabulary = _core.Vocabulary(1) if grow_from is None else grow_from.copy()
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    codes = [_encode_arrow(vocabulary, 0, chunk, True, "f") for chunk in chunks]
    return np.concatenate(codes) if codes else np.empty(0, np.int32), vocabulary


def _arrow_arrays():
    """Arrow arrays of every type the Rust reader reads, with nulls, offsets and chunks."""
    rng = np.random.default_rng(3)
    values = [None if rng.random() < 0.15 else f"s{rng.integers(0, 40)}" for _ in range(300)]
    long = [None if v is None else v + " and a tail of more than twelve bytes" for v in values]
    ints = [None if v is None else int(v[1:]) - 20 for v in values]
    out = {}
    for name, kind in [("utf8", pa.string()), ("large_utf8", pa.large_string())]:
        out[name] = pa.array(values, kind)
        out[name + " sliced"] = pa.array(["pad", *values], kind).slice(1, 250)
        out[name + " chunked"] = pa.chunked_array(
            [pa.array(values[:100], kind).slice(3), pa.array(values[100:], kind)]
        )
    out["string_view"] = pa.chunked_array(
        [pa.array(long[:7], pa.string_view()), pa.array(["x", *values], pa.string_view()).slice(1)]
    )
    out["utf8 no nulls"] = pa.array([v or "" for v in values], pa.string())
    out["dictionary int8"] = pa.array(values, pa.string()).dictionary_encode()
    out["dictionary int32 sliced"] = pa.DictionaryArray.from_arrays(
        pa.array([None if v is None else int(v[1:]) for v in values], pa.int32()),
        pa.array([f"d{k}" for k in range(40)]),
    ).slice(5, 200)
    out["dictionary of views chunked"] = pa.chunked_array(
        [
            pa.array(long[:150], pa.string_view()).dictionary_encode(),
            pa.array(long[150:], pa.string_view()).dictionary_encode(),
        ]
    )
    for kind in [
        pa.int8(),
        pa.uint8(),
        pa.int16(),
        pa.uint16(),
        pa.int32(),
        pa.uint32(),
        pa.int64(),
        pa.uint64(),
    ]:
        ok = [
            None if v is None else (abs(v) if pa.types.is_unsigned_integer(kind) else v)
            for v in ints
        ]
        out[str(kind)] = pa.array(ok, kind).slice(2)
    out["bool"] = pa.array([None if v is None else v > 0 for v in ints], pa.bool_()).slice(3)
    out["null"] = pa.nulls(20)
    out["empty"] = pa.chunked_array([], pa.string())
    return out


@pytest.mark.parametrize("name", list(_arrow_arrays()))
def test_the_rust_arrow_reader_codes_as_the_buffer_path(name):
    """Every Arrow type the Rust reader of the C stream interface reads (strings of the
    three layouts, dictionaries, integers of every width, booleans, nulls; sliced arrays,
    several chunks, missing values) codes to the same codes and the same vocabulary as
    the pyarrow buffer path, growing and then scoring against a grown vocabulary."""
    from hebnb import _core

    array = _arrow_arrays()[name]
    expected, reference = _python_buffer_codes(array)
    vocabulary = _core.Vocabulary(1)
    coded = vocabulary.encode_arrow_stream(0, _stream_capsule(array), grow=True, name="f")
    np.testing.assert_array_equal(coded, expected)
    assert vocabulary.values(0) == reference.values(0)
    # scoring: a vocabulary that knows a part of the values (the rest are unknown, -2)
    half = _core.Vocabulary(1)
    part = array.slice(0, len(array) // 3)
    half.encode_arrow_stream(0, _stream_capsule(part), grow=True, name="f")
    scored = half.encode_arrow_stream(0, _stream_capsule(array), grow=False, name="f")
    from hebnb._encoding import _encode_arrow

    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    old = [_encode_arrow(half, 0, chunk, False, "f") for chunk in chunks]
    np.testing.assert_array_equal(scored, np.concatenate(old) if old else np.empty(0, np.int32))


def _stream_capsule(array):
    """The Arrow C stream capsule of ``array`` (as the encoder asks it)."""
    chunked = array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array])
    return chunked.__arrow_c_stream__()


def test_the_rust_arrow_reader_leaves_other_types_to_the_other_paths():
    """Types it does not read (floats, binary, uint64 beyond int64) give None and leave
    the vocabulary as it was; the estimators still read them (through pyarrow)."""
    from hebnb import _core

    vocabulary = _core.Vocabulary(1)
    capsule = pa.chunked_array([pa.array(["a"])]).__arrow_c_stream__()
    vocabulary.encode_arrow_stream(0, capsule, grow=True, name="f")
    for array in [
        pa.array([1.0, 2.0]),
        pa.array([b"x", b"y"]),
        pa.chunked_array([pa.array([1, 2], pa.uint64()), pa.array([2**63], pa.uint64())]),
    ]:
        capsule = _stream_capsule(array)
        assert vocabulary.encode_arrow_stream(0, capsule, grow=True, name="f") is None
        assert vocabulary.values(0) == ["a"]
    y = np.array([0, 1, 0])
    table = pa.table({"u": pa.array([1, 2**63, 1], pa.uint64())})
    frame = pd.DataFrame({"u": np.array([1, 2**63, 1], dtype=np.uint64)})
    np.testing.assert_array_equal(
        CategoricalNB().fit(table, y).predict_proba(table),
        CategoricalNB().fit(frame, y).predict_proba(frame),
    )


def test_polars_without_pyarrow_is_read_in_rust(data, monkeypatch):
    """polars without pyarrow: String, Categorical, Int64 (with nulls) and Boolean
    columns are read through the C stream interface in Rust (the numpy route is made to
    fail), with the probabilities of the pandas frame of the same values."""
    pl = pytest.importorskip("polars")
    codes, y = data
    text = words(codes)
    frame = pl.DataFrame(
        {
            "a": pl.Series(list(text[:, 0]), dtype=pl.String),
            "b": pl.Series(list(text[:, 1]), dtype=pl.Categorical),
            "c": pl.Series([None if v < 0 else int(v) for v in codes[:, 2]], dtype=pl.Int64),
            "d": pl.Series([None if v < 0 else bool(v % 2) for v in codes[:, 3]]),
        }
    )
    reference_frame = pd.DataFrame(
        {
            "a": text[:, 0],
            "b": text[:, 1],
            "c": [None if v < 0 else int(v) for v in codes[:, 2]],
            "d": [None if v < 0 else bool(v % 2) for v in codes[:, 3]],
        }
    )
    reference = CategoricalNB().fit(reference_frame, y)
    expected = reference.predict_proba(reference_frame)
    monkeypatch.setitem(sys.modules, "pyarrow", None)

    def no_numpy(self, *args, **kwargs):
        raise AssertionError("read through numpy")

    monkeypatch.setattr(pl.Series, "to_numpy", no_numpy)
    model = CategoricalNB().fit(frame, y)
    np.testing.assert_array_equal(model.predict_proba(frame), expected)
    np.testing.assert_array_equal(model.predict_proba(frame[5:9]), expected[5:9])
    for ours, theirs in zip(model.categories_, reference.categories_):
        assert list(ours) == list(theirs)


def test_a_broken_arrow_stream_export_is_a_clear_error():
    """An object whose ``__arrow_c_stream__`` gives no stream capsule (another capsule,
    or not a capsule at all) is refused with an error naming the problem, and the
    vocabulary keeps none of it."""
    from hebnb import _core

    class WrongCapsule:
        def __arrow_c_stream__(self, requested_schema=None):
            return pa.array(["a"]).__arrow_c_array__()[0]  # an "arrow_schema" capsule

    class NotACapsule:
        def __arrow_c_stream__(self, requested_schema=None):
            return "a stream"

    vocabulary = _core.Vocabulary(1)
    with pytest.raises(ValueError, match="name"):
        vocabulary.encode_arrow_stream(0, WrongCapsule().__arrow_c_stream__(), grow=True, name="f")
    with pytest.raises(TypeError, match="PyCapsule"):
        vocabulary.encode_arrow_stream(0, NotACapsule().__arrow_c_stream__(), grow=True, name="f")
    assert vocabulary.lengths() == [0]


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_integer_blocks_code_by_first_appearance_whatever_the_span(n_jobs):
    # columns of every span (a few values, thousands, the extremes of int64), negatives
    # and missing cells in each, coded tile by tile over more rows than one tile: the
    # codes must be each value's order of first appearance, and unknown when not growing
    rng = np.random.default_rng(5)
    n_rows = 3000
    columns = [
        rng.integers(0, 3, n_rows),
        rng.integers(-2000, 2000, n_rows),
        rng.zipf(1.3, n_rows) % 50_000,
        rng.choice(np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max]), n_rows),
    ]
    values = np.stack(columns)  # (F, S)
    missing = rng.random(values.shape) < 0.05
    first, later = slice(0, 2000), slice(2000, n_rows)
    vocabulary = _core.Vocabulary(len(columns))
    grown = np.empty((len(columns), 2000), dtype=np.int32)
    vocabulary.encode_int_block(
        values[:, first], missing[:, first], grow=True, n_jobs=n_jobs, out=grown
    )
    known = np.empty((len(columns), n_rows - 2000), dtype=np.int32)
    vocabulary.encode_int_block(
        values[:, later], missing[:, later], grow=False, n_jobs=n_jobs, out=known
    )
    for f in range(len(columns)):
        order: dict[int, int] = {}
        for v, m in zip(values[f, first], missing[f, first]):
            if not m:
                order.setdefault(int(v), len(order))
        expected = [
            MISSING_CODE if m else order[int(v)]
            for v, m in zip(values[f, first], missing[f, first])
        ]
        np.testing.assert_array_equal(grown[f], expected)
        expected = [
            MISSING_CODE if m else order.get(int(v), UNKNOWN)
            for v, m in zip(values[f, later], missing[f, later])
        ]
        np.testing.assert_array_equal(known[f], expected)
    assert (known[1] == UNKNOWN).any() and (known[2] == UNKNOWN).any()


VIEW_FORMS = {
    "string_view": lambda values: pa.table({"c": pa.array(values, pa.string_view())}),
    "polars": lambda values: pytest.importorskip("polars").DataFrame({"c": values}),
    "pandas string_view": lambda values: pd.DataFrame(
        {"c": pd.array(values, dtype=pd.ArrowDtype(pa.string_view()))}
    ),
}


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("form", VIEW_FORMS)
def test_unknown_values_of_string_views_are_named(estimator, form):
    """The error naming unknown or undeclared values took its examples with pyarrow's
    ``take``, which has no kernel for the view layouts polars gives its strings."""
    make = VIEW_FORMS[form]
    y = [0, 1, 0, 1]
    model = estimator(handle_unknown="error").fit(make(["a", "b", "a", "b"]), y)
    with pytest.raises(ValueError, match=r"unknown categories \['zz'\]"):
        model.predict_proba(make(["a", "zz"] * 40))
    with pytest.raises(ValueError, match=r"unknown categories \['zz'\]"):
        estimator(categories=[["a", "b"]]).fit(make(["a", "b", "zz", "a"]), y)


def test_a_dictionary_of_binary_views_is_its_values():
    indices = pa.array([0, 1, 0, 1, 1])
    y = [0, 1, 0, 1, 0]
    views = pa.DictionaryArray.from_arrays(indices, pa.array([b"a", b"b"], pa.binary_view()))
    plain = pa.DictionaryArray.from_arrays(indices, pa.array([b"a", b"b"]))
    model = CategoricalNB().fit(pa.table({"c": views}), y)
    expected = CategoricalNB().fit(pa.table({"c": plain}), y)
    assert model.categories_[0].tolist() == [b"a", b"b"]
    np.testing.assert_array_equal(
        model.predict_proba(pa.table({"c": plain})), expected.predict_proba(pa.table({"c": plain}))
    )


def date_forms():
    import datetime as dt

    days = [dt.date(2020, 1, 1), dt.date(2020, 1, 2), dt.date(2021, 6, 30)] * 4
    forms = {
        "date32": pa.table({"d": pa.array(days, pa.date32())}),
        "date64": pa.table({"d": pa.array(days, pa.date64())}),
        "datetime64[D]": pd.DataFrame({"d": np.array(days, dtype="datetime64[D]")}),
        "datetime64[ns]": pd.DataFrame({"d": np.array(days, dtype="datetime64[ns]")}),
        "pandas date32": pd.DataFrame({"d": pd.array(days, dtype=pd.ArrowDtype(pa.date32()))}),
    }
    try:
        import polars

        forms["polars Date"] = polars.DataFrame({"d": days})
    except ImportError:  # pragma: no cover - polars is a test dependency
        pass
    return forms


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_dates_are_one_category_whatever_their_form(estimator):
    """Arrow dates were ``datetime.date`` categories while numpy's datetime64 dates are
    Timestamps, so a model fitted on one form saw the other's dates as unknown."""
    forms = date_forms()
    y = np.array([0, 1, 1] * 4)
    codes = np.array([[0], [1], [2]] * 4)
    expected = estimator().fit(codes, y).predict_proba(codes)
    for fitted_on, X in forms.items():
        model = estimator(handle_unknown="error").fit(X, y)
        assert [str(c) for c in model.categories_[0]] == [
            "2020-01-01 00:00:00",
            "2020-01-02 00:00:00",
            "2021-06-30 00:00:00",
        ], fitted_on
        for scored_on, other in forms.items():
            np.testing.assert_allclose(
                model.predict_proba(other),
                expected,
                rtol=1e-12,
                err_msg=f"{fitted_on} / {scored_on}",
            )


def test_whole_floats_show_as_floats_in_every_form():
    """``categories_`` of a float column are floats whether the column is numpy, pandas,
    Arrow-backed pandas, a pyarrow table or polars."""
    values = [1.0, 2.0, None, 1.0]
    forms = [
        np.array([values], dtype=float).T,
        pd.DataFrame({"a": values}),
        pd.DataFrame({"a": pd.array(values, dtype="double[pyarrow]")}),
        pa.table({"a": values}),
    ]
    try:
        import polars

        forms.append(polars.DataFrame({"a": values}))
    except ImportError:  # pragma: no cover
        pass
    for X in forms:
        categories = CategoricalNB().fit(X, [0, 1, 0, 1]).categories_[0]
        assert categories.dtype == np.float64, type(X)
        assert categories.tolist() == [1.0, 2.0]
