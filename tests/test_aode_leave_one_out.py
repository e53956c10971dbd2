"""AODE's super-parent terms of its training rows with each row left out of the tables
(``AODE(weighting_rows="leave-one-out")``, src/aode/leave_one_out.rs): against the same
terms counted in numpy without the row (tests/aode_left_out_reference.py) for every
smoothing, against a refit without the row where the plug-in is exact (Laplace AODE),
and the weights fitted on them against the objective minimised by scipy."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone as clone_of

from aode_left_out_reference import left_out_terms
from hebnb import AODE, _core


def _table(seed=3, n_rows=160):
    """Strings with missing values, a few values seen on one row only, and classes
    carried by single features and by a pair."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n_rows)
    a = (y + rng.integers(0, 2, n_rows)) % 4
    b = np.where(rng.random(n_rows) < 0.5, a, rng.integers(0, 6, n_rows))
    c = rng.integers(0, 9, n_rows)
    d = (c + y) % 5
    X = pd.DataFrame({"a": a, "b": b, "c": c, "d": d}).astype(str).astype(object)
    X.iloc[::9, 1] = None
    X.iloc[::13, 3] = None
    X.iloc[5, 2] = "seen once"
    X.iloc[7, 0] = "also once"
    return X, y


def _left_out(model, X, y, sample_weight=None, n_jobs=2):
    codes, _ = model._encode(X)
    labels = np.searchsorted(model.classes_, y)
    weights = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, float)
    return model._leave_one_out_terms(codes, labels, weights, n_jobs)


@pytest.mark.parametrize(
    "smoothing,prior,parent_smoothing,fit_prior,weighted",
    [
        case
        for case in itertools.product(
            ["laplace", "heb"],
            ["two-level", "pooled"],
            ["heb", "laplace"],
            [True, False],
            [False, True],
        )
        if not (case[0] == "laplace" and case[1] == "pooled")
    ],
)
def test_left_out_terms_are_the_tables_counted_without_the_row(
    smoothing, prior, parent_smoothing, fit_prior, weighted
):
    X, y = _table()
    weights = np.random.default_rng(1).uniform(0.5, 2.0, len(y)) if weighted else None
    model = AODE(
        smoothing=smoothing,
        prior=prior,
        parent_smoothing=parent_smoothing,
        fit_prior=fit_prior,
        min_count=2,  # both the solved and the fallback concentrations occur
        max_joint_cells=100,  # and capped orientations (the Naive Bayes child)
    ).fit(X, y, sample_weight=weights)
    assert 0 < model.capped_.sum() < 12
    terms = _left_out(model, X, y, weights)
    np.testing.assert_allclose(terms, left_out_terms(model, X, y, weights), rtol=1e-12, atol=1e-12)
    # the rows' own counts matter: in-sample terms differ
    codes, _ = model._encode(X)
    assert np.abs(terms - model._parent_terms(codes, 1)).max() > 0.05


@pytest.mark.parametrize("smoothing", ["laplace", "heb"])
@pytest.mark.parametrize("max_parents", [1, 3])
def test_left_out_terms_with_fewer_super_parents(smoothing, max_parents):
    """Super-parents chosen by mutual information: concentrations by parent rank, every
    feature a child."""
    X, y = _table(seed=12, n_rows=200)
    model = AODE(smoothing=smoothing, max_parents=max_parents, max_joint_cells=100).fit(X, y)
    terms = _left_out(model, X, y)
    assert terms.shape == (len(y), max_parents, 3)
    np.testing.assert_allclose(terms, left_out_terms(model, X, y), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fit_prior", [True, False])
def test_laplace_aode_left_out_terms_are_those_of_a_refit_without_the_row(fit_prior):
    """With Laplace tables the plug-in is exact: a refit on the other rows scores the row
    alike, its values seen nowhere else being unknown to that refit too (a row weighing 2
    is left out whole). Only the fallback's class prior (fit_prior) stays the fitted one,
    so there the rows where a parent falls back are compared with the fitted prior."""
    X, y = _table(seed=5, n_rows=120)
    weights = np.where(np.arange(len(y)) % 4 == 0, 2.0, 1.0)
    params = {"smoothing": "laplace", "parent_smoothing": "laplace", "fit_prior": fit_prior}
    model = AODE(**params).fit(X, y, sample_weight=weights)
    terms = _left_out(model, X, y, weights)
    for s in range(len(y)):
        others = np.arange(len(y)) != s
        refit = AODE(**params).fit(X[others], y[others], sample_weight=weights[others])
        codes, _ = refit._encode(X.iloc[[s]])
        expected = refit._parent_terms(codes, 1)[0]
        if fit_prior:
            # a parent that does not qualify scores the fallback, whose prior is the fit's
            falls_back = ~next(refit._parent_cells(codes, 1))[2][0]
            expected[falls_back] += model.class_log_prior_ - refit.class_log_prior_
        np.testing.assert_allclose(terms[s], expected, rtol=1e-10, atol=1e-10, err_msg=str(s))


def test_a_row_that_weighs_nothing_keeps_its_in_sample_terms():
    X, y = _table(seed=6)
    weights = np.where(np.arange(len(y)) % 3 == 0, 0.0, 1.5)
    model = AODE().fit(X, y, sample_weight=weights)
    terms = _left_out(model, X, y, weights)
    codes, _ = model._encode(X)
    in_sample = model._parent_terms(codes, 1)
    unweighed = weights == 0
    # (a value only rows of weight 0 have is unknown either way: no row has counted it)
    np.testing.assert_allclose(terms[unweighed], in_sample[unweighed], rtol=1e-12, atol=1e-12)
    assert np.abs(terms[~unweighed] - in_sample[~unweighed]).max() > 0.05


@pytest.mark.parametrize(
    "smoothing,parent_smoothing,fit_prior",
    [
        ("laplace", "laplace", True),
        ("heb", "heb", True),
        ("heb", "heb", False),
        ("heb", "laplace", False),
    ],
)
def test_left_out_terms_stay_finite_under_extreme_weights(smoothing, parent_smoothing, fit_prior):
    """A left-out count is a difference of large numbers, kept at its prior part where
    rounding would take it to zero or below: with weights from 1e-9 to 1e15 or 1 to 1e18
    every term is finite (the counts themselves lose their last digits there, in any order
    of summation); from 1e-3 to 1e3 they are those counted without the row."""
    X, y = _table(seed=11, n_rows=300)
    rng = np.random.default_rng(2)
    params = {"smoothing": smoothing, "parent_smoothing": parent_smoothing}
    for (low, high), tolerance in [((-9, 15), None), ((0, 18), None), ((-3, 3), 1e-6)]:
        weights = 10.0 ** rng.uniform(low, high, len(y))
        model = AODE(**params, fit_prior=fit_prior).fit(X, y, sample_weight=weights)
        terms = _left_out(model, X, y, weights)
        assert np.all(np.isfinite(terms))
        if tolerance is not None:
            expected = left_out_terms(model, X, y, weights)
            np.testing.assert_allclose(terms, expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("scale", [1e4, 1e6, 1e8])
@pytest.mark.parametrize(
    "smoothing,prior", [("heb", "two-level"), ("heb", "pooled"), ("laplace", "two-level")]
)
def test_left_out_terms_keep_their_digits_under_large_weights(smoothing, prior, scale):
    """A cell's left-out count was rebuilt from its log-probability before the row's
    weight came off it; with a row holding most of its cell's weight that cancelled: off
    by 3.5e-4 at 1e4 per row and by nats at 1e6. Such cells read their exact counts
    (sums of counts that large keep about 1e-8 of their digits in any order, hence 1e-6)."""
    X, y = _table()
    weights = scale * np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    model = AODE(smoothing=smoothing, prior=prior, min_count=2, max_joint_cells=100).fit(
        X, y, sample_weight=weights
    )
    terms = _left_out(model, X, y, weights)
    np.testing.assert_allclose(terms, left_out_terms(model, X, y, weights), rtol=1e-6, atol=1e-6)


def test_left_out_terms_do_not_depend_on_threads_or_batches(monkeypatch):
    X, y = _table(seed=7, n_rows=3000)
    model = AODE().fit(X, y)
    one, three = _left_out(model, X, y, n_jobs=1), _left_out(model, X, y, n_jobs=3)
    np.testing.assert_array_equal(one, three)
    # the cell-weight inputs read them in batches of rows
    monkeypatch.setattr(AODE, "_cell_batch_entries", 700)
    codes, _ = model._encode(X)
    labels = np.searchsorted(model.classes_, y)
    left_out = model._left_out_rows(labels, np.ones(len(y)))
    batches = [terms for _, terms, _, _ in model._parent_cells(codes, 2, left_out)]
    assert len(batches) > 10
    np.testing.assert_array_equal(np.concatenate(batches), one)


def test_the_core_refuses_bad_left_out_rows():
    X, y = _table(seed=8, n_rows=60)
    model = AODE().fit(X, y)
    codes, _ = model._encode(X)
    labels = np.searchsorted(model.classes_, y)
    good = model._left_out_rows(labels, np.ones(len(y)))

    def call(left_out):
        return _core.aode_parent_terms(
            codes,
            model._model,
            model._pair_tables(),
            offsets=list(model._encoder.offsets),
            min_parent_count=1.0,
            cells=False,
            n_jobs=1,
            left_out=left_out,
        )

    call(good)
    bad = [
        ({"labels": labels[:-1]}, "labels"),
        ({"labels": np.where(labels == 0, 3, labels)}, "class index"),
        ({"weights": -np.ones(len(y))}, "non-negative"),
        ({"weights": np.full(len(y), np.nan)}, "finite"),
        ({"counts": good["counts"][:, :-1]}, "single counts"),
        ({"class_count": good["class_count"][:-1]}, "class counts"),
        ({"parent_smoothing": "add-one"}, "parent smoothing"),
    ]
    for change, message in bad:
        with pytest.raises(ValueError, match=message):
            call({**good, **change})
    with pytest.raises(KeyError, match="labels"):
        call({key: value for key, value in good.items() if key != "labels"})


def test_auto_rows_leave_laplace_tables_out_and_cross_fit_heb_ones():
    X, y = _table(seed=9, n_rows=200)
    assert AODE().weighting_rows == "auto"
    for smoothing, rows in [("laplace", "leave-one-out"), ("heb", "cross-fitted")]:
        auto = AODE(smoothing=smoothing, weighting="cll-value").fit(X, y)
        same = AODE(smoothing=smoothing, weighting="cll-value", weighting_rows=rows).fit(X, y)
        np.testing.assert_array_equal(auto.predict_proba(X), same.predict_proba(X))
    left = AODE(weighting="cll-value", weighting_rows="leave-one-out").fit(X, y)
    crossed = AODE(weighting="cll-value", weighting_rows="cross-fitted").fit(X, y)
    assert np.abs(left.predict_proba(X) - crossed.predict_proba(X)).max() > 1e-3


def test_old_pickles_keep_cross_fitting():
    """A model pickled before the parameter existed was fitted on cross-fitted terms."""
    X, y = _table(seed=9, n_rows=200)
    crossed = AODE(smoothing="laplace", weighting="cll-value", weighting_rows="cross-fitted").fit(
        X, y
    )
    state = crossed.__getstate__()
    del state["weighting_rows"]
    old = AODE.__new__(AODE)
    old.__setstate__(state)
    assert old.get_params()["weighting_rows"] == "cross-fitted"
    np.testing.assert_array_equal(old.predict_proba(X), crossed.predict_proba(X))
    refit = clone_of(old).fit(X, y)
    np.testing.assert_array_equal(refit.predict_proba(X), crossed.predict_proba(X))
    left = AODE(smoothing="laplace", weighting="cll-value").fit(X, y)
    again = pickle.loads(pickle.dumps(left))
    np.testing.assert_array_equal(again.predict_proba(X), left.predict_proba(X))
    with pytest.raises(ValueError, match="weighting_rows"):
        AODE(weighting="cll-feature", weighting_rows="in-sample").fit(X, y)
