"""A hypothesis fuzzer over the public API (issue 11): random small tables of mixed
value types (None, bool, int, float, str), random sample weights spanning 600 orders of
magnitude, random parameters. For every accepted input the probabilities are finite and
sum to 1; everything else is a clean ValueError/TypeError/MemoryError (never a crash or
a hang: a crash would take the test process down). Threads (n_jobs 1 vs 2) give
identical answers, and partial_fit over batches equals one fit.

CI runs a few hundred examples; ``HEBNB_FUZZ_EXAMPLES=5000 python -m pytest
tests/test_api_fuzz.py`` runs as many as asked.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd
import pytest

hypothesis = pytest.importorskip("hypothesis")
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hebnb import (
    AODE,
    BernoulliNB,
    CategoricalNB,
    ComplementNB,
    EmpiricalBayesDirichletClassifier,
    GaussianNB,
    MultinomialNB,
)

EXAMPLES = int(os.environ.get("HEBNB_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="HEBNB_FUZZ_EXAMPLES" not in os.environ,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: Exceptions that are a clean refusal of an input.
CLEAN = (ValueError, TypeError, MemoryError)

CELLS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, -2.0, float("nan")]),
    st.sampled_from(["a", "b", "c", ""]),
)
WEIGHTS = st.one_of(
    st.sampled_from([1e-300, 1e-170, 1e-20, 0.0, 0.5, 1.0, 3.0, 1e20, 1e160, 1e200]),
    st.floats(0, 10),
)


def labels_and_weights(draw, n_rows):
    """Labels of two or three classes and, half the time, weights, for ``n_rows`` rows."""
    n_classes = draw(st.integers(2, 3))
    y = np.array(draw(st.lists(st.integers(0, n_classes - 1), min_size=n_rows, max_size=n_rows)))
    weights = None
    if draw(st.booleans()):
        weights = np.array(draw(st.lists(WEIGHTS, min_size=n_rows, max_size=n_rows)))
    return y, weights


@st.composite
def tables(draw, max_rows=30, max_features=4):
    n_rows = draw(st.integers(2, max_rows))
    n_features = draw(st.integers(1, max_features))
    kinds = draw(
        st.lists(st.sampled_from(["int", "str", "mixed"]), min_size=n_features, max_size=n_features)
    )
    columns = {}
    for f, kind in enumerate(kinds):
        if kind == "int":
            cell = st.integers(0, 4)
        elif kind == "str":
            cell = st.sampled_from(["x", "y", "z", "w"])
        else:
            cell = CELLS
        columns[f"f{f}"] = draw(st.lists(cell, min_size=n_rows, max_size=n_rows))
    frame = pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in columns.items()})
    return (frame, *labels_and_weights(draw, n_rows))


NB_PARAMS = st.fixed_dictionaries(
    {
        "smoothing": st.sampled_from(
            ["heb-m", "heb-u", "laplace", "lidstone", "kt", "m-estimate", "target-encoding"]
        ),
        "alpha": st.sampled_from([1e-9, 0.5, 1.0, 1e6]),
        "min_count": st.sampled_from([0, 1, 10]),
        "fit_prior": st.booleans(),
        "feature_weighting": st.sampled_from([None, "sqrt-mi"]),
        "concentration_estimate": st.sampled_from(["type2-ml", "posterior-average"]),
        "weighting": st.sampled_from([None, None, "cll-feature", "cll-value"]),
        "penalty": st.sampled_from([None, 0.0, 1.0]),
    }
)
AODE_PARAMS = st.fixed_dictionaries(
    {
        "smoothing": st.sampled_from(["heb", "laplace"]),
        "parent_smoothing": st.sampled_from(["laplace", "heb"]),
        "min_parent_count": st.sampled_from([0, 1, 5]),
        "max_joint_cells": st.sampled_from([None, 8]),
        "prior": st.sampled_from(["two-level", "pooled"]),
        "max_parents": st.sampled_from([None, 1, 2]),
    }
)
TEXT_PARAMS = st.fixed_dictionaries(
    {
        "smoothing": st.sampled_from(["heb-m", "heb-u", "laplace", "lidstone"]),
        "alpha": st.sampled_from([1e-9, 0.5, 1.0, 1e6]),
        "min_count": st.sampled_from([0, 1, 10]),
        "fit_prior": st.booleans(),
    }
)
COUNTS = st.one_of(st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0, 7.0, 1e6, 1e-300, 1e150]))


@st.composite
def count_tables(draw, max_rows=30, max_tokens=6):
    """Token counts (dense or CSR), labels and optional weights."""
    n_rows = draw(st.integers(2, max_rows))
    n_tokens = draw(st.integers(1, max_tokens))
    values = draw(st.lists(COUNTS, min_size=n_rows * n_tokens, max_size=n_rows * n_tokens))
    X = np.array(values, dtype=np.float64).reshape(n_rows, n_tokens)
    if draw(st.booleans()):
        X = sp.csr_matrix(X)
    return (X, *labels_and_weights(draw, n_rows))


def check_probabilities(proba: np.ndarray, n_rows: int, n_classes: int) -> None:
    assert proba.shape == (n_rows, n_classes)
    assert np.all(np.isfinite(proba)), proba
    assert np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-9)


def fit_or_refuse(make, X, y, weights):
    """The fitted model, or None when the input was refused cleanly."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return make().fit(X, y, sample_weight=weights)
    except CLEAN:
        return None


def predict(model, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.predict_proba(X)


@FUZZ
@given(data=tables(), params=NB_PARAMS)
def test_categorical_nb_gives_probabilities_or_refuses(data, params):
    X, y, weights = data
    model = fit_or_refuse(lambda: CategoricalNB(**params), X, y, weights)
    if model is None:
        return
    proba = predict(model, X)
    check_probabilities(proba, X.shape[0], model.classes_.shape[0])
    # identical whatever the thread count
    twin = CategoricalNB(**params, n_jobs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        twin.fit(X, y, sample_weight=weights)
    np.testing.assert_array_equal(predict(twin, X), proba)


@FUZZ
@given(data=tables(max_features=3), params=AODE_PARAMS)
def test_aode_gives_probabilities_or_refuses(data, params):
    X, y, weights = data
    model = fit_or_refuse(lambda: AODE(**params), X, y, weights)
    if model is None:
        return
    proba = predict(model, X)
    check_probabilities(proba, X.shape[0], model.classes_.shape[0])
    twin = AODE(**params, n_jobs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        twin.fit(X, y, sample_weight=weights)
    np.testing.assert_array_equal(predict(twin, X), proba)


@FUZZ
@given(data=tables(max_rows=40), params=NB_PARAMS, cut=st.integers(1, 39))
def test_partial_fit_in_two_batches_equals_one_fit(data, params, cut):
    X, y, weights = data
    cut = min(cut, X.shape[0] - 1)
    model = fit_or_refuse(lambda: CategoricalNB(**params), X, y, weights)
    if model is None:
        return
    online = CategoricalNB(**params)
    if params["weighting"] is not None:
        assert not hasattr(online, "partial_fit")  # learned weights need the whole set
        return
    w1 = None if weights is None else weights[:cut]
    w2 = None if weights is None else weights[cut:]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            online.partial_fit(X.iloc[:cut], y[:cut], classes=np.unique(y), sample_weight=w1)
            online.partial_fit(X.iloc[cut:], y[cut:], sample_weight=w2)
    except CLEAN:
        return  # a batch on its own may be refusable (e.g. weights summing to zero)
    np.testing.assert_allclose(online.class_count_, model.class_count_, rtol=1e-12)
    for got, want in zip(online.category_count_, model.category_count_):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    np.testing.assert_allclose(predict(online, X), predict(model, X), rtol=1e-7, atol=1e-12)


@FUZZ
@given(
    groups=st.lists(st.integers(0, 5), min_size=2, max_size=40),
    alphas=st.lists(st.sampled_from([1e-6, 1e-3, 0.1, 1.0, 50.0]), min_size=2, max_size=3),
    n_eb_iter=st.integers(0, 20),
    data=st.data(),
)
def test_group_classifier_gives_probabilities_and_finite_samples(groups, alphas, n_eb_iter, data):
    n_classes = len(alphas)
    y = data.draw(
        st.lists(st.integers(0, n_classes - 1), min_size=len(groups), max_size=len(groups))
    )
    model = EmpiricalBayesDirichletClassifier(
        dict(enumerate(alphas)), n_eb_iter=n_eb_iter, random_state=0
    )
    X = np.array(groups).reshape(-1, 1)
    try:
        model.fit(X, y)
    except CLEAN:
        return
    queries = np.array([[0], [3], [99]])
    check_probabilities(model.predict_proba(queries), 3, n_classes)
    draws = model.sample(queries, size=50)
    assert np.all(np.isfinite(draws))
    np.testing.assert_allclose(draws.sum(axis=2), 1.0, rtol=1e-9)


TEXT_MODELS = {"multinomial": MultinomialNB, "complement": ComplementNB, "bernoulli": BernoulliNB}


@FUZZ
@given(
    data=count_tables(),
    params=TEXT_PARAMS,
    family=st.sampled_from(sorted(TEXT_MODELS)),
    cut=st.integers(1, 29),
)
def test_text_models_give_probabilities_or_refuse(data, params, family, cut):
    X, y, weights = data
    make = TEXT_MODELS[family]
    if family == "complement" and params["smoothing"] == "heb-u":
        params = {**params, "smoothing": "heb-m"}
    model = fit_or_refuse(lambda: make(**params), X, y, weights)
    if model is None:
        return
    proba = predict(model, X)
    check_probabilities(proba, X.shape[0], model.classes_.shape[0])
    twin = fit_or_refuse(lambda: make(**params, n_jobs=2), X, y, weights)
    np.testing.assert_array_equal(predict(twin, X), proba)
    cut = min(cut, X.shape[0] - 1)
    if "posterior_power" in make().get_params():
        # the leave-one-out power is fitted on a whole training set, 1 in a stream:
        # compare the stream with a fit at that power
        params = {**params, "posterior_power": 1.0}
        proba = predict(fit_or_refuse(lambda: make(**params), X, y, weights), X)
    online = make(**params)
    w1 = None if weights is None else weights[:cut]
    w2 = None if weights is None else weights[cut:]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            online.partial_fit(X[:cut], y[:cut], classes=np.unique(y), sample_weight=w1)
            online.partial_fit(X[cut:], y[cut:], sample_weight=w2)
    except CLEAN:
        return
    np.testing.assert_allclose(predict(online, X), proba, rtol=1e-7, atol=1e-12)


@FUZZ
@given(
    values=st.lists(
        st.sampled_from([0.0, 1.0, -1.0, 1e-300, 1e300, -1e300, 3.5, 1e-8, 2e-8]),
        min_size=4,
        max_size=60,
    ),
    n_features=st.integers(1, 3),
    var_smoothing=st.sampled_from([0.0, 1e-300, 1e-9, 1.0]),
    data=st.data(),
)
def test_gaussian_nb_gives_probabilities_or_refuses(values, n_features, var_smoothing, data):
    n_rows = max(2, len(values) // n_features)
    X = np.resize(np.array(values), n_rows * n_features).reshape(n_rows, n_features)
    y = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n_rows, max_size=n_rows)))
    weights = None
    if data.draw(st.booleans()):
        weights = np.array(data.draw(st.lists(WEIGHTS, min_size=n_rows, max_size=n_rows)))
    model = fit_or_refuse(lambda: GaussianNB(var_smoothing=var_smoothing), X, y, weights)
    if model is None:
        return
    try:
        proba = predict(model, X)
    except CLEAN:
        return  # a refusal at predict time (e.g. overflowing squares) is clean too
    check_probabilities(proba, X.shape[0], model.classes_.shape[0])
