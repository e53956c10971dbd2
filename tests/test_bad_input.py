"""Bad input gets a clear Python exception naming the problem, never a crash."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from hebnb import AODE, CategoricalNB, EmpiricalBayesDirichletClassifier, MixedNB

X = np.array([[0, 1], [1, 1], [2, 0], [0, 0]])
y = np.array([0, 1, 0, 1])


@pytest.mark.parametrize(
    "X_bad, y_bad, weights, message",
    [
        (X, y[:3], None, "inconsistent numbers of samples"),
        (X, y, np.ones(3), "sample_weight.shape"),
        (X[:, 0], y, None, "Expected 2D array, got 1D"),
        (X[:, :, None], y, None, "Expected 2D array, got 3D"),
        (np.empty((0, 2)), np.empty(0), None, "0 sample"),
        (np.empty((4, 0)), y, None, "0 feature"),
        (X, np.zeros(4), None, "greater than one"),
        (X, np.array([0.0, 1.0, np.nan, 1.0]), None, "missing labels"),
        (X, np.array([0, 1, None, 1], dtype=object), None, "missing labels"),
        (X, pd.to_datetime(["2020", None, "2020", "2021"]), None, "missing labels"),
        (X, np.array([1, "NaT", 1, 2], dtype="timedelta64[D]"), None, "missing labels"),
        (X, y, np.array([1.0, -1.0, 1.0, 1.0]), "Negative values"),
        (X, y, np.array([1.0, np.nan, 1.0, 1.0]), "NaN or infinite"),
        (X, y, np.array([1.0, np.inf, 1.0, 1.0]), "NaN or infinite"),
        (X, y, np.zeros(4), "sums to zero"),
        (X + 0.5, y, None, "fractional part"),
        (np.array([[0, 1.5], [1, 2]], dtype=object), y[:2], None, "fractional part"),
        (np.array([[np.inf], [1.0], [2.0], [1.0]]), y, None, "infinite"),
        (X, np.array([0.5, 1.5, 0.25, 1.0]), None, "Unknown label type"),
    ],
)
def test_fit_rejects(X_bad, y_bad, weights, message):
    with pytest.raises(ValueError, match=message):
        CategoricalNB().fit(X_bad, y_bad, sample_weight=weights)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"smoothing": "bogus"}, "'smoothing' parameter"),
        ({"smoothing": "lidstone", "alpha": 0.0}, "'alpha' parameter"),
        ({"alpha": -1.0}, "'alpha' parameter"),
        ({"m": 0.0}, "'m' parameter"),
        ({"m": np.nan}, "'m' parameter"),
        ({"min_count": -1}, "'min_count' parameter"),
        ({"concentration_bounds": (0.0, 10.0)}, "concentration_bounds"),
        ({"concentration_bounds": (10.0, 1.0)}, "concentration_bounds"),
        ({"concentration_bounds": (1.0, np.inf)}, "concentration_bounds"),
        ({"concentration_bounds": 5}, "concentration_bounds"),
        ({"handle_unknown": "skip"}, "'handle_unknown' parameter"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"class_prior": [0.5, 0.2, 0.3]}, "Number of priors"),
        ({"class_prior": [0.9, 0.3]}, "'class_prior' parameter"),
    ],
)
def test_invalid_parameters_are_named(params, message):
    with pytest.raises(ValueError, match=message):
        CategoricalNB(**params).fit(X, y)


def test_predict_checks_features_and_fitting():
    with pytest.raises(NotFittedError):
        CategoricalNB().predict(X)
    model = CategoricalNB().fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but CategoricalNB is expecting 2"):
        model.predict(np.zeros((2, 3), dtype=int))
    frame = pd.DataFrame(X, columns=["a", "b"])
    named = CategoricalNB().fit(frame, y)
    with pytest.raises(ValueError, match="feature names should match"):
        named.predict(frame.rename(columns={"b": "z"}))
    with pytest.raises(ValueError, match="fractional part"):
        model.predict(X + 0.25)


def test_cardinality_beyond_memory_is_a_memory_error(monkeypatch):
    from hebnb import _encoding

    monkeypatch.setattr(_encoding, "memory_budget_bytes", lambda: 10 * 8 * _encoding.TABLE_COPIES)
    with pytest.raises(MemoryError, match="beyond what memory allows"):
        CategoricalNB().fit(np.arange(12).reshape(-1, 1), np.arange(12) % 2)


def test_core_rejects_bad_codes_with_value_error():
    """The Rust kernels check what they are given: a bad code never reads out of bounds."""
    from hebnb import _core

    codes = np.array([[0, 5]], dtype=np.int32)
    with pytest.raises(ValueError, match="category code 5 outside"):
        _core.count_categories(codes, np.array([0, 1]), np.ones(2), [0, 2], 2, 1)
    with pytest.raises(ValueError, match="class index 7"):
        _core.count_categories(codes * 0, np.array([0, 7]), np.ones(2), [0, 2], 2, 1)


def test_table_larger_than_the_machine_is_refused_before_allocation():
    from hebnb._encoding import TABLE_COPIES
    from hebnb._memory import memory_budget_bytes

    n_categories = 400_000
    # one class too many for this machine
    n_classes = memory_budget_bytes() // (8 * TABLE_COPIES) // n_categories + 1
    X = np.arange(n_categories).reshape(-1, 1)
    y = np.arange(n_categories) % n_classes
    with pytest.raises(MemoryError, match="beyond what memory allows"):
        CategoricalNB().fit(X, y)


@pytest.mark.parametrize("estimator", [CategoricalNB, AODE])
def test_ragged_rows_are_named(estimator):
    """A list of rows of different lengths got numpy's "inhomogeneous shape" message."""
    with pytest.raises(ValueError, match=r"rows of different lengths \(1, 2 values\)"):
        estimator().fit([[1, 2], [2], [1, 1]], [0, 1, 0])
    model = estimator().fit([[1, 2], [2, 1]], [0, 1])
    with pytest.raises(ValueError, match="rows of different lengths"):
        model.predict_proba([[1, 2], [2]])


@pytest.mark.parametrize("estimator", [CategoricalNB, AODE])
@pytest.mark.parametrize("one", ["auto", "abc", b"abc", 5])
def test_a_declared_category_list_that_is_not_a_list_is_named(estimator, one):
    """A string (such as "auto" for one feature) where a feature's list belongs was a
    TypeError from numpy's iteration."""
    X = np.array([[0, 1], [1, 0], [0, 0], [1, 1]])
    with pytest.raises(ValueError, match=r"categories\[0\] must be a 1-D list of values"):
        estimator(categories=[one, [0, 1]]).fit(X, [0, 1, 0, 1])


@pytest.mark.parametrize(
    "declared, repeated",
    [
        ([0, 1, 2, 1], True),
        ([0, 1, 2, 1.0], True),  # 1.0 is the integer 1
        (["a", "b", "a"], True),
        ([0, 1, 2, "1"], False),  # a string is another category
        ([0, 1, 2, True], False),
    ],
)
def test_declared_categories_that_repeat_a_value_are_refused(declared, repeated):
    model = CategoricalNB(categories=[declared, [0, 1]])
    X_declared = np.array([[0, 1], [1, 1], [2, 0], [0, 0]], dtype=object)
    if declared[0] == "a":
        X_declared[:, 0] = ["a", "b", "a", "b"]
    if repeated:
        with pytest.raises(ValueError, match=r"categories\[0\] holds duplicate values"):
            model.fit(X_declared, y)
    else:
        assert model.fit(X_declared, y).n_categories_[0] == len(declared)


def _lazy_frame():
    polars = pytest.importorskip("polars")
    return polars.DataFrame({"a": [0, 1, 2, 0]}).lazy()


#: Not tables: numpy made each one object ("Expected 2D array, got 0D array").
NOT_TABLES = {
    "LazyFrame": (_lazy_frame, r"got a polars LazyFrame: call \.collect\(\) first"),
    "dict": (lambda: {"a": [0, 1, 2, 0]}, r"got a dict: pass a DataFrame"),
    "generator": (lambda: ([v] for v in [0, 1, 2, 0]), r"got a generator: pass a list of rows"),
    "iterator": (lambda: iter([[0], [1], [2], [0]]), r"got a list_iterator: pass a list"),
    "set": (lambda: {0, 1, 2}, r"got a set: pass a list of rows"),
}


@pytest.mark.parametrize("kind", list(NOT_TABLES))
@pytest.mark.parametrize(
    "estimator",
    [
        CategoricalNB,
        AODE,
        MixedNB,
        lambda: EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}),
    ],
    ids=["CategoricalNB", "AODE", "MixedNB", "EmpiricalBayesDirichletClassifier"],
)
def test_what_is_no_table_is_named_with_what_to_pass(estimator, kind):
    make, message = NOT_TABLES[kind]
    with pytest.raises(TypeError, match=f"Expected a 2D table, {message}"):
        estimator().fit(make(), y)
    fitted = estimator().fit(X[:, :1], y)
    with pytest.raises(TypeError, match=f"Expected a 2D table, {message}"):
        fitted.predict(make())


def test_arrays_keep_their_shape_messages():
    """A scalar is still numpy's 0-D array (only what is no table at all is named)."""
    with pytest.raises(ValueError, match="Expected 2D array, got 0D array"):
        CategoricalNB().fit(5, [0])
