"""GaussianNB equal to scikit-learn (fit, partial_fit, weights, priors); MixedNB equal to
the sum of its parts, its column selectors and automatic split, bad input."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn.naive_bayes as skl
from scipy import stats
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, clone
from sklearn.compose import make_column_selector

from hebnb import BernoulliNB, CategoricalNB, ComplementNB, GaussianNB, MixedNB, MultinomialNB


def continuous(seed=0, n_rows=300, n_features=6):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n_rows)
    centres = rng.normal(scale=2.0, size=(3, n_features))
    X = centres[y] + rng.normal(
        scale=rng.uniform(0.5, 3.0, size=n_features), size=(n_rows, n_features)
    )
    return X, y


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("var_smoothing", [1e-9, 1e-2])
def test_gaussian_equals_scikit_learn(weighted, var_smoothing):
    X, y = continuous()
    weights = np.random.default_rng(1).uniform(0.1, 3.0, size=y.shape[0]) if weighted else None
    ours = GaussianNB(var_smoothing=var_smoothing).fit(X, y, sample_weight=weights)
    ref = skl.GaussianNB(var_smoothing=var_smoothing).fit(X, y, sample_weight=weights)
    for name in ("theta_", "var_", "class_count_", "class_prior_"):
        np.testing.assert_allclose(getattr(ours, name), getattr(ref, name), rtol=1e-12, atol=1e-14)
    assert ours.epsilon_ == pytest.approx(ref.epsilon_, rel=1e-12)
    X_test, _ = continuous(seed=2, n_rows=80)
    np.testing.assert_allclose(
        ours.predict_joint_log_proba(X_test), ref.predict_joint_log_proba(X_test), rtol=1e-12
    )
    np.testing.assert_allclose(ours.predict_proba(X_test), ref.predict_proba(X_test), atol=1e-10)


@pytest.mark.parametrize("estimator", ["GaussianNB", "MultinomialNB"])
def test_an_overflowing_row_is_named_by_its_place_in_x_when_scored_in_chunks(
    estimator, monkeypatch
):
    """A long X is scored a chunk of rows at a time: the refused row is named by its row
    in X, not in its chunk (row 25238 of a chunk was reported for row 200000)."""
    import hebnb

    monkeypatch.setattr(hebnb._base, "PREDICT_CHUNK_CELLS", 64)  # chunks of 10 rows here
    rng = np.random.default_rng(0)
    X = rng.poisson(0.5, size=(200, 6)).astype(float)
    y = rng.integers(0, 3, 200)
    model = getattr(hebnb, estimator)().fit(X, y)
    far = X.copy()
    far[137] = 1e200 if estimator == "GaussianNB" else 1e308
    with pytest.raises(ValueError, match="in row 137: the posterior"):
        model.predict_proba(far)


def test_a_row_whose_distances_overflow_for_every_class_is_refused():
    """|x| ~ 1e200 squares to inf under every class: the row got probabilities of 0 each
    (scikit-learn's gives NaN). One class overflowing alone is a probability of 0."""
    X, y = continuous(seed=3)
    model = GaussianNB().fit(X, y)
    far = X[:3].copy()
    far[1, 0] = 1e200
    with pytest.raises(ValueError, match="in row 1: the posterior is not determined"):
        model.predict_proba(far)
    near = X[:3].copy()
    near[1, 0] = 1e150  # finite squares: the nearest mean wins outright
    proba = model.predict_proba(near)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert proba[1, np.argmax(model.theta_[:, 0])] == 1.0


def test_gaussian_partial_fit_equals_scikit_learn():
    X, y = continuous(seed=3, n_rows=500)
    weights = np.random.default_rng(4).uniform(0.2, 2.0, size=500)
    ours, ref = GaussianNB(), skl.GaussianNB()
    for start in range(0, 500, 90):
        rows = slice(start, start + 90)
        ours.partial_fit(X[rows], y[rows], classes=[0, 1, 2], sample_weight=weights[rows])
        ref.partial_fit(X[rows], y[rows], classes=[0, 1, 2], sample_weight=weights[rows])
    np.testing.assert_allclose(ours.var_, ref.var_, rtol=1e-10)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-10)
    # and the moments equal those of one pass over all rows (independent numpy)
    for c in range(3):
        rows = y == c
        mean = np.average(X[rows], axis=0, weights=weights[rows])
        np.testing.assert_allclose(ours.theta_[c], mean, rtol=1e-10)


def test_gaussian_priors_zero_variance_and_bad_input():
    X, y = continuous()
    ours = GaussianNB(class_prior=[0.5, 0.25, 0.25]).fit(X, y)
    ref = skl.GaussianNB(priors=[0.5, 0.25, 0.25]).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-10)
    uniform = GaussianNB(fit_prior=False).fit(X, y)
    np.testing.assert_allclose(uniform.class_prior_, np.full(3, 1 / 3))
    # a feature constant within a class gets the variance floor
    X_const = X.copy()
    X_const[y == 0, 1] = 7.0
    model = GaussianNB().fit(X_const, y)
    assert model.var_[0, 1] == pytest.approx(model.epsilon_)
    assert np.all(np.isfinite(model.predict_proba(X_const)))
    with pytest.raises(ValueError, match="variance"):
        GaussianNB().fit(np.ones((10, 2)), np.arange(10) % 2)
    with pytest.raises(TypeError, match="[Ss]parse"):
        GaussianNB().fit(sp.csr_matrix(X), y)
    broken = X.copy()
    broken[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        GaussianNB().fit(broken, y)
    with pytest.raises(ValueError, match="features"):
        GaussianNB().fit(X, y).predict(X[:, :3])


def test_gaussian_row_by_row_stream_equals_scikit_learn():
    """A stream fed one row at a time starts with zero variances (a one-row batch has a
    floor of 0): partial_fit accepts them, scoring refuses them while they last, and the
    finished model is scikit-learn's."""
    X, y = continuous(seed=5, n_rows=40)
    ours, ref = GaussianNB(), skl.GaussianNB()
    for i in range(X.shape[0]):
        ours.partial_fit(X[i : i + 1], y[i : i + 1], classes=[0, 1, 2])
        ref.partial_fit(X[i : i + 1], y[i : i + 1], classes=[0, 1, 2])
        if i == 0:
            with pytest.raises(ValueError, match="zero variance"):
                ours.predict_proba(X[:1])
    np.testing.assert_allclose(ours.var_, ref.var_, rtol=1e-10)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-10)


def pooled_log_density(X_train, X, floor):
    """ln N(x; mean, variance + floor) of every row of ``X`` under the moments of all the
    training rows (scipy, from the rows themselves)."""
    mean, var = X_train.mean(axis=0), X_train.var(axis=0) + floor
    return stats.norm.logpdf(X, loc=mean, scale=np.sqrt(var)).sum(axis=1)


@pytest.mark.parametrize("var_smoothing", [0.0, 1e-9])
def test_a_class_without_rows_has_its_prior_share(var_smoothing):
    """A declared class with no rows is scored with the moments of all the rows, not with
    a normal of mean 0 and the floor as variance (which took every probability near the
    origin inside MixedNB, whose class prior gives such a class a share)."""
    X, y = continuous(seed=6, n_rows=200)
    y = np.minimum(y, 1)
    X_test = np.vstack([np.zeros((1, X.shape[1])), X[:20]])
    prior = np.array([0.5, 0.3, 0.2])
    ours = GaussianNB(var_smoothing=var_smoothing, class_prior=prior)
    ours.partial_fit(X, y, classes=[0, 1, 2])
    expected = np.column_stack(
        [
            np.log(prior[c])
            + stats.norm.logpdf(
                X_test,
                loc=X[y == c].mean(axis=0),
                scale=np.sqrt(X[y == c].var(axis=0) + ours.epsilon_),
            ).sum(axis=1)
            for c in (0, 1)
        ]
        + [np.log(prior[2]) + pooled_log_density(X, X_test, ours.epsilon_)]
    )
    expected = np.exp(expected - logsumexp(expected, axis=1, keepdims=True))
    np.testing.assert_allclose(ours.predict_proba(X_test), expected, rtol=1e-9, atol=1e-12)
    # under the learned prior it gets nothing, as in scikit-learn
    learned = GaussianNB(var_smoothing=var_smoothing).partial_fit(X, y, classes=[0, 1, 2])
    assert np.all(learned.predict_proba(X_test)[:, 2] == 0.0)
    # and inside MixedNB its share follows (N_c + 1) / (S + C), whatever the row
    mixed = MixedNB(models=[("g", GaussianNB(), list(range(X.shape[1])))])
    mixed.partial_fit(X, y, classes=[0, 1, 2])
    assert np.all(mixed.predict_proba(X_test)[:, 2] < 3.0 / (X.shape[0] + 3))


@pytest.mark.parametrize(
    ("scale", "uniform", "offset"),
    [
        (1e-9, False, 0.0),
        # subnormal weights (few significant bits: uniform ones, which they hold exactly)
        (2.0**-1074, True, 0.0),
        (2.0**-1060, True, 0.0),
        # 2.6e297 (totals below the 1e300 limit) beside a feature of 1e10; a power of two,
        # so that the scaled weights are the same numbers
        (2.0**988, False, 1e10),
    ],
)
@pytest.mark.parametrize("partial", [False, True])
def test_gaussian_weights_of_any_scale_give_the_same_model(scale, uniform, offset, partial):
    """Weights scaled by 1e-9 (below scikit-learn's ``isclose`` cut, which drops such a
    class) fit the model of the unscaled weights; so do subnormal weights, whose products
    with the values underflowed (5e-324 gave class means of 0), and weights of 2.6e297,
    whose products with a feature of 1e10 overflowed (an infinite mean, then a refusal
    blaming X), in one fit or batch by batch."""
    X, y = continuous(seed=7, n_rows=120)
    X[:, 1] += offset
    rng = np.random.default_rng(8)
    weights = np.ones(y.shape[0]) if uniform else rng.uniform(0.5, 2.0, size=y.shape[0])

    def fitted(w):
        if not partial:
            return GaussianNB().fit(X, y, sample_weight=w)
        model = GaussianNB()
        for rows in np.array_split(np.arange(y.shape[0]), 3):
            model.partial_fit(X[rows], y[rows], classes=[0, 1, 2], sample_weight=w[rows])
        return model

    reference, scaled = fitted(weights), fitted(weights * scale)
    assert np.all(np.isfinite(scaled.theta_)) and np.all(np.isfinite(scaled.var_))
    np.testing.assert_allclose(scaled.theta_, reference.theta_, rtol=1e-10)
    np.testing.assert_allclose(scaled.var_, reference.var_, rtol=1e-10)
    np.testing.assert_allclose(scaled.predict_proba(X), reference.predict_proba(X), atol=1e-12)


def mixed_frame(seed=0, n_rows=400):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n_rows)
    frame = pd.DataFrame(
        {
            "colour": np.where(rng.random(n_rows) < 0.3 + 0.4 * y, "red", "blue"),
            "size": rng.normal(loc=y, size=n_rows),
            "code": rng.integers(0, 5, size=n_rows) + 2 * y,
            "weight": rng.gamma(2.0, 1.0 + y, size=n_rows),
            "tok_a": rng.poisson(1.0 + y, size=n_rows),
            "tok_b": rng.poisson(2.0 - y, size=n_rows),
            "flag": pd.Categorical(rng.choice(["x", "y"], size=n_rows)),
        }
    )
    return frame, y


def test_mixed_equals_the_sum_of_its_parts():
    X, y = mixed_frame()
    weights = np.random.default_rng(5).uniform(0.5, 2.0, size=y.shape[0])
    models = [
        ("cat", CategoricalNB(smoothing="heb-m"), ["colour", "code", "flag"]),
        ("gauss", GaussianNB(), make_column_selector(dtype_include=np.floating)),
        ("tokens", MultinomialNB(smoothing="heb-u"), ["tok_a", "tok_b"]),
    ]
    mixed = MixedNB(models=models).fit(X, y, sample_weight=weights)
    parts = [
        CategoricalNB(smoothing="heb-m").fit(
            X[["colour", "code", "flag"]], y, sample_weight=weights
        ),
        GaussianNB().fit(X[["size", "weight"]], y, sample_weight=weights),
        # MixedNB fits its parts under a uniform class prior, which the leave-one-out
        # posterior power of a MultinomialNB part sees too
        MultinomialNB(smoothing="heb-u", fit_prior=False).fit(
            X[["tok_a", "tok_b"]], y, sample_weight=weights
        ),
    ]
    columns = [["colour", "code", "flag"], ["size", "weight"], ["tok_a", "tok_b"]]
    counts = np.bincount(y, weights)
    prior = np.log(counts + 1.0) - np.log(counts.sum() + 2.0)
    want = prior + sum(
        part.predict_joint_log_proba(X[cols]) - part.class_log_prior_
        for part, cols in zip(parts[:2], columns[:2])
    )
    # the token part's likelihood from its tables: tau sum_v x_v ln theta_cv, no prior
    tokens = parts[2]
    assert tokens.posterior_power_ != 1.0  # tempered: its joint scales its prior too
    want += tokens.posterior_power_ * (X[columns[2]].to_numpy() @ tokens.feature_log_prob_.T)
    np.testing.assert_allclose(mixed.predict_joint_log_proba(X), want, rtol=1e-12)
    np.testing.assert_allclose(mixed.class_log_prior_, prior, rtol=1e-12)
    assert [cols for _, _, cols in mixed.models_] == [[0, 2, 6], [1, 3], [4, 5]]
    assert list(mixed.feature_names_in_) == list(X.columns)


def test_mixed_default_split_and_selectors():
    X, y = mixed_frame(seed=1)
    model = MixedNB().fit(X, y)
    kinds = {name: cols for name, _, cols in model.models_}
    assert kinds == {"categorical": [0, 2, 4, 5, 6], "gaussian": [1, 3]}
    by_index = MixedNB(models=[("b", BernoulliNB(), [4, 5]), ("g", GaussianNB(), slice(1, 2))]).fit(
        X, y
    )
    assert [cols for _, _, cols in by_index.models_] == [[4, 5], [1]]
    array_model = MixedNB().fit(X[["size", "weight"]].to_numpy(), y)
    assert [name for name, _, _ in array_model.models_] == ["gaussian"]


def test_mixed_partial_fit_equals_fit_and_pickles():
    X, y = mixed_frame(seed=2, n_rows=600)
    models = [
        ("cat", CategoricalNB(), ["colour", "code"]),
        ("gauss", GaussianNB(), ["size"]),
        # the leave-one-out power follows the latest batch: compare the untempered model
        ("tokens", MultinomialNB(posterior_power=1.0), ["tok_a", "tok_b"]),
    ]
    whole = MixedNB(models=models).fit(X, y)
    online = MixedNB(models=models)
    for start in range(0, 600, 200):
        online.partial_fit(X.iloc[start : start + 200], y[start : start + 200], classes=[0, 1])
    np.testing.assert_allclose(online.class_count_, whole.class_count_)
    # the Gaussian variance floor follows each batch (as scikit-learn), so compare loosely
    np.testing.assert_allclose(online.predict_proba(X), whole.predict_proba(X), atol=1e-6)
    restored = pickle.loads(pickle.dumps(whole))
    np.testing.assert_array_equal(restored.predict_proba(X), whole.predict_proba(X))
    fresh = clone(whole)
    assert not hasattr(fresh, "models_") and len(fresh.models) == 3


def test_mixed_groups_that_forget_age_the_class_prior_alike():
    """Groups forgetting at one rate: the stream equals one CategoricalNB over their
    columns with that rate (class prior included); rates that differ are refused before
    any group learns the batch."""
    X, y = mixed_frame(seed=3, n_rows=600)
    columns = ["colour", "code"]
    models = [
        ("first", CategoricalNB(learning_rate=0.995), ["colour"]),
        ("second", CategoricalNB(learning_rate=0.995), ["code"]),
    ]
    mixed, single = MixedNB(models=models), CategoricalNB(learning_rate=0.995)
    for start in range(0, 600, 150):
        rows = slice(start, start + 150)
        mixed.partial_fit(X.iloc[rows], y[rows], classes=[0, 1])
        single.partial_fit(X.iloc[rows][columns], y[rows], classes=[0, 1])
    np.testing.assert_allclose(mixed.class_count_, single.class_count_, rtol=1e-12)
    assert mixed.class_count_.sum() < 150 + 450 * 0.995  # the old rows weigh less
    np.testing.assert_allclose(
        mixed.predict_proba(X),
        single.predict_proba(X[columns]),
        rtol=1e-10,
    )

    for unequal in (
        [("c", CategoricalNB(learning_rate=0.9), ["colour"]), ("g", GaussianNB(), ["size"])],
        [
            ("a", CategoricalNB(learning_rate=0.9), ["colour"]),
            ("b", CategoricalNB(learning_rate=0.8), ["code"]),
        ],
    ):
        model = MixedNB(models=unequal)
        with pytest.raises(ValueError, match="forget at one rate"):
            model.partial_fit(X, y)
        assert not hasattr(model, "models_")
    # fit forgets nothing, so any rates fit
    MixedNB(models=unequal).fit(X, y)


def test_mixed_group_parameters_set_mid_stream_apply_to_the_next_batch():
    """set_params(name__param=...) between partial_fit calls reaches the group's next
    batch, as a plain estimator's own set_params does; changing the groups is refused."""
    X, y = mixed_frame(seed=4, n_rows=400)
    tokens = ["tok_a", "tok_b"]
    mixed = MixedNB(models=[("m", MultinomialNB(), tokens)])
    plain = MultinomialNB(fit_prior=False)
    for model, data in ((mixed, X), (plain, X[tokens])):
        model.partial_fit(data.iloc[:200], y[:200], classes=[0, 1])
        model.set_params(**{("m__" if model is mixed else "") + "smoothing": "laplace"})
        model.partial_fit(data.iloc[200:], y[200:])
    group = mixed.models_[0][1]
    assert group.smoothing == "laplace"
    np.testing.assert_array_equal(group.feature_log_prob_, plain.feature_log_prob_)
    assert group.posterior_power_ == plain.posterior_power_

    mixed.set_params(models=[("m", MultinomialNB(), ["tok_a"])])
    with pytest.raises(ValueError, match="differ from those the stream began with"):
        mixed.partial_fit(X.iloc[:10], y[:10])


def test_mixed_bad_input():
    X, y = mixed_frame()
    overlap = [("a", GaussianNB(), ["size"]), ("b", GaussianNB(), ["size", "weight"])]
    with pytest.raises(ValueError, match="both"):
        MixedNB(models=overlap).fit(X, y)
    with pytest.raises(TypeError, match="ComplementNB"):
        MixedNB(models=[("c", ComplementNB(), ["tok_a"])]).fit(X, y)
    with pytest.raises(ValueError, match="tuple"):
        MixedNB(models=[GaussianNB()]).fit(X, y)
    with pytest.raises(ValueError, match="no col"):
        MixedNB(models=[("g", GaussianNB(), [])]).fit(X, y)
    model = MixedNB().fit(X, y)
    with pytest.raises(ValueError, match="feature"):
        model.predict(X.drop(columns="size"))


@pytest.mark.parametrize(
    "names, message",
    [
        (["g", "g"], r"must be unique: \['g'\] repeat"),
        (["fit_prior", "g"], r"\['fit_prior'\] are parameters of MixedNB"),
        (["a__b", "g"], "must not contain '__'"),
    ],
)
def test_mixed_refuses_names_that_would_address_the_wrong_object(names, message):
    """Duplicate names made ``g__smoothing`` set one of the two groups only; a group
    named like a parameter of MixedNB was what get_params gave for that parameter, and
    set_params(fit_prior=False) replaced the group's model with False."""
    X, y = mixed_frame()
    models = [
        (names[0], CategoricalNB(), ["colour"]),
        (names[1], CategoricalNB(), ["code"]),
    ]
    for method in ("fit", "partial_fit"):
        with pytest.raises(ValueError, match=message):
            getattr(MixedNB(models=models), method)(X, y)


@pytest.mark.parametrize("form", ["polars", "pyarrow"])
def test_mixed_keeps_the_column_names_of_polars_and_arrow_tables(form):
    """A polars DataFrame or pyarrow Table became a bare array: no feature_names_in_, no
    selection by name, and its columns reordered at predict were scored silently."""
    frame, y = mixed_frame()
    frame = frame[["colour", "size", "code", "weight"]]
    if form == "polars":
        table = pytest.importorskip("polars").from_pandas(frame)
        reordered = table.select(["size", "colour", "code", "weight"])
    else:
        pa = pytest.importorskip("pyarrow")
        table = pa.Table.from_pandas(frame, preserve_index=False)
        reordered = table.select(["size", "colour", "code", "weight"])
    model = MixedNB().fit(table, y)
    np.testing.assert_array_equal(model.feature_names_in_, frame.columns)
    np.testing.assert_allclose(
        model.predict_proba(table), MixedNB().fit(frame, y).predict_proba(frame), rtol=1e-12
    )
    with pytest.raises(ValueError, match="feature names"):
        model.predict(reordered)
    named = MixedNB(
        models=[("c", CategoricalNB(), ["colour", "code"]), ("g", GaussianNB(), ["size", "weight"])]
    ).fit(table, y)
    np.testing.assert_allclose(named.predict_proba(table), model.predict_proba(table), rtol=1e-12)


@pytest.mark.parametrize("form", ["polars", "pyarrow"])
def test_an_integer_column_with_nulls_in_an_arrow_table_is_categorical(form):
    """pandas' default conversion of an Arrow integer (or boolean) column with a null is
    float64 with NaN: the automatic split sent it to GaussianNB, which refused the NaN.
    It is categorical, as the same column in pandas' nullable Int64 is."""
    pa = pytest.importorskip("pyarrow")
    frame, y = mixed_frame()
    codes = [None if i % 10 == 0 else int(c) for i, c in enumerate(frame["code"])]
    flags = [None if i % 7 == 0 else f == "x" for i, f in enumerate(frame["flag"])]
    nullable = pd.DataFrame(
        {
            "code": pd.array(codes, dtype="Int64"),
            "flag": pd.array(flags, dtype="boolean"),
            "size": frame["size"],
        }
    )
    table = pa.table(
        {"code": pa.array(codes, pa.int64()), "flag": pa.array(flags), "size": frame["size"]}
    )
    if form == "polars":
        table = pytest.importorskip("polars").from_arrow(table)
    model = MixedNB().fit(table, y)
    assert [(name, cols) for name, _, cols in model.models_] == [
        ("categorical", [0, 1]),
        ("gaussian", [2]),
    ]
    expected = MixedNB().fit(nullable, y)
    np.testing.assert_allclose(
        model.predict_proba(table), expected.predict_proba(nullable), rtol=1e-12
    )


def test_the_group_models_parameters_are_nested_parameters():
    """``name__parameter`` reaches a group's model, as in ColumnTransformer, so a search
    can tune it; ``set_params(name=...)`` replaces the model; clone copies them all."""
    from sklearn.model_selection import GridSearchCV

    frame, y = mixed_frame()
    frame = frame[["colour", "code", "size"]]
    model = MixedNB(
        models=[("cat", CategoricalNB(), ["colour", "code"]), ("num", GaussianNB(), ["size"])]
    )
    params = model.get_params(deep=True)
    assert params["cat__smoothing"] == "heb-m" and params["num__var_smoothing"] == 1e-9
    assert "cat__smoothing" not in model.get_params(deep=False)
    model.set_params(cat__smoothing="laplace", num=GaussianNB(var_smoothing=1e-3))
    assert model.models[0][1].smoothing == "laplace"
    assert model.models[1][1].var_smoothing == 1e-3
    expected = MixedNB(
        models=[
            ("cat", CategoricalNB(smoothing="laplace"), ["colour", "code"]),
            ("num", GaussianNB(var_smoothing=1e-3), ["size"]),
        ]
    ).fit(frame, y)
    np.testing.assert_array_equal(
        clone(model).fit(frame, y).predict_proba(frame), expected.predict_proba(frame)
    )
    grid = {"cat__smoothing": ["laplace", "heb-m"], "num__var_smoothing": [1e-9, 1e-2]}
    search = GridSearchCV(model, grid, cv=3, scoring="neg_log_loss").fit(frame, y)
    assert set(search.best_params_) == set(grid)
    with pytest.raises(ValueError, match="Invalid parameter"):
        model.set_params(nope__smoothing="laplace")


def test_a_table_without_its_names_warns_once():
    """MixedNB fitted on a DataFrame and given an array warned three times: its own
    warning and one from each group's model."""
    import warnings

    frame, y = mixed_frame()
    frame = frame[["colour", "code", "size"]]
    model = MixedNB().fit(frame, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.predict(frame.to_numpy())
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert "MixedNB" in messages[0]


def test_rows_mixing_types_split_as_their_table_does():
    """A list of rows mixing numbers and strings became an array of strings: every column
    went to CategoricalNB, floats included. And a column with no value at all went to
    GaussianNB, which refused its NaN."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    rows = [
        [int(rng.integers(0, 3)), str(rng.choice(["a", "b"])), float(rng.normal() + 3 * c)]
        for c in y
    ]
    from_rows = MixedNB().fit(rows, y)
    from_frame = MixedNB().fit(pd.DataFrame(rows), y)
    assert [(n, c) for n, _, c in from_rows.models_] == [("categorical", [0, 1]), ("gaussian", [2])]
    np.testing.assert_allclose(
        from_rows.predict_proba(rows), from_frame.predict_proba(pd.DataFrame(rows))
    )
    empty = pd.DataFrame(
        {"colour": rng.choice(["r", "g"], 200), "empty": np.nan, "n": rng.normal(size=200)}
    )
    model = MixedNB().fit(empty, y)
    assert [(n, c) for n, _, c in model.models_] == [("categorical", [0, 1]), ("gaussian", [2])]
    expected = MixedNB().fit(empty[["colour", "n"]], y).predict_proba(empty[["colour", "n"]])
    np.testing.assert_allclose(model.predict_proba(empty), expected, rtol=1e-12)


def test_a_part_that_refuses_a_batch_leaves_the_parts_before_it_unchanged():
    """MixedNB updates its parts in place one after the other: when a later part refuses
    the batch (negative token counts), the parts already updated are rolled back."""
    X, y = mixed_frame(seed=3, n_rows=300)
    models = [("cat", CategoricalNB(), ["colour", "code"]), ("tokens", MultinomialNB(), ["tok_a"])]
    online = MixedNB(models=models).partial_fit(X, y, classes=[0, 1])
    reference = pickle.loads(pickle.dumps(online))
    bad = X.copy()
    bad.loc[bad.index[-1], "tok_a"] = -1
    with pytest.raises(ValueError, match="Negative values"):
        online.partial_fit(bad, y)
    categorical, reference_categorical = online.models_[0][1], reference.models_[0][1]
    np.testing.assert_array_equal(categorical.class_count_, reference_categorical.class_count_)
    for mine, theirs in zip(categorical.category_count_, reference_categorical.category_count_):
        np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(online.class_count_, reference.class_count_)
    np.testing.assert_array_equal(online.predict_proba(X), reference.predict_proba(X))


@pytest.mark.parametrize("form", ["polars", "pyarrow"])
def test_an_arrow_dictionary_declares_no_categories_in_mixed(form):
    """MixedNB read an Arrow dictionary (a polars Enum or Categorical) through pandas,
    which made it a category column declaring every dictionary entry: an unused entry
    became a category of the group's CategoricalNB, unlike the same table given to
    CategoricalNB alone (README: an Arrow dictionary declares nothing)."""
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    values = np.array(list("abc"), dtype=object)[rng.integers(0, 3, 200)]
    y = np.where(rng.random(200) < 0.8, 0, 1)
    size = rng.normal(size=200)
    if form == "polars":
        pl = pytest.importorskip("polars")
        table = pl.DataFrame(
            {"x": pl.Series(values.tolist(), dtype=pl.Enum(["a", "b", "c", "unused"])), "z": size}
        )
    else:
        dictionary = pa.array(["a", "b", "c", "unused"])
        indices = pa.array([{"a": 0, "b": 1, "c": 2}[v] for v in values], pa.int32())
        table = pa.table({"x": pa.DictionaryArray.from_arrays(indices, dictionary), "z": size})
    groups = [("c", CategoricalNB(smoothing="laplace"), ["x"]), ("g", GaussianNB(), ["z"])]
    model = MixedNB(models=groups).fit(table, y)
    assert model.models_[0][1].categories_[0].tolist() == ["a", "b", "c"]
    frame = pd.DataFrame({"x": values, "z": size})
    expected = MixedNB(models=groups).fit(frame, y).predict_proba(frame)
    np.testing.assert_array_equal(model.predict_proba(table), expected)


def test_booleans_beside_numbers_in_a_list_of_rows_stay_booleans_in_mixed():
    """A list of rows with a boolean column beside a float column became all floats in
    numpy: the booleans were read as the numbers 0 and 1."""
    rows = [[bool(i % 2), float(i % 7) / 3.0] for i in range(60)]
    y = [(i % 2) ^ (i % 5 == 0) for i in range(60)]
    objects = np.empty((60, 2), dtype=object)
    objects[:] = rows
    model = MixedNB().fit(rows, y)
    expected = MixedNB().fit(objects, y)
    assert [(name, cols) for name, _, cols in model.models_] == [
        (name, cols) for name, _, cols in expected.models_
    ]
    assert model.models_[0][1].categories_[0].tolist() == [False, True]
    np.testing.assert_array_equal(model.predict_proba(objects), expected.predict_proba(objects))


def _object_rows(*columns):
    rows = np.empty((len(columns[0]), len(columns)), dtype=object)
    for j, column in enumerate(columns):
        rows[:, j] = column
    return rows


@pytest.mark.parametrize("text", ["objects", "unicode"])
def test_a_lone_surrogate_is_refused_by_its_column_in_mixed(text):
    """The automatic split built a DataFrame, whose string inference (through pyarrow)
    failed with UnicodeEncodeError; CategoricalNB would number the column within its
    group (feature 0 here, column 1 of X)."""
    strings = ["x", "\ud800", "y"] * 4
    y = [0, 1, 0] * 4
    floats = [1.5, 2.5, 0.5] * 4
    X = _object_rows(floats, strings) if text == "objects" else np.array([strings]).T
    column = 1 if text == "objects" else 0
    with pytest.raises(ValueError, match=rf"column {column} holds a string that is not valid"):
        MixedNB().fit(X, y)


@pytest.mark.parametrize("dtype", ["V4", [("a", "i4"), ("b", "f8")]], ids=["void", "structured"])
@pytest.mark.parametrize("form", ["array", "frame"])
def test_void_and_structured_columns_are_refused_by_name_in_mixed(dtype, form):
    """numpy's ``isnan`` failed on a void column ("ufunc 'isnan' not supported") and
    pandas on a structured one ("Data must be 1-dimensional")."""
    y = [0, 1, 0]
    if form == "array":
        X, named = np.zeros((3, 1), dtype=dtype), "0"
    else:
        X, named = pd.DataFrame({"v": [1.5, 2.5, 0.5], "r": np.zeros(3, dtype=dtype)}), "'r'"
    with pytest.raises(ValueError, match=rf"column {named} has unsupported dtype"):
        MixedNB().fit(X, y)
    # named at predict time too, by a fitted model
    fitted = MixedNB().fit(np.array([[1.5], [2.5], [0.5]]), y)
    with pytest.raises(ValueError, match="column 0 has unsupported dtype"):
        fitted.predict(np.zeros((3, 1), dtype=dtype))


def test_a_polars_object_column_is_refused_in_mixed():
    """Arrow holds a polars Object column as fixed_size_binary[8], the objects'
    addresses: MixedNB modelled those bytes as categories, silently."""
    pl = pytest.importorskip("polars")
    pytest.importorskip("pyarrow")
    X = pl.DataFrame({"o": pl.Series([(1,), (2,)] * 30, dtype=pl.Object), "v": [0.5] * 60})
    with pytest.raises(TypeError, match="column 'o' has polars type Object"):
        MixedNB().fit(X, [0, 1] * 30)


def test_the_automatic_split_of_an_object_array_is_that_of_its_frame():
    """The split reads an array's columns without pandas' string inference, and splits
    them as before: floats (also among ints) to GaussianNB, all else to CategoricalNB."""
    import datetime
    from decimal import Decimal

    n = 6
    X = _object_rows(
        ["a", None, "c"] * 2,
        [1.5, 2.0, 2.5] * 2,
        [1, 2.5, 3] * 2,
        [None] * n,
        [datetime.date(2020, 1, i + 1) for i in range(n)],
        [Decimal(i) for i in range(n)],
        ["a", 1, None, True, b"b", "c"],
        [float(i % 3) for i in range(n)],
    )
    y = [0, 1] * 3
    expected = [("categorical", [0, 3, 4, 5, 6]), ("gaussian", [1, 2, 7])]
    split = [(name, columns) for name, _, columns in MixedNB().fit(X, y).models_]
    assert split == expected
    frame = pd.DataFrame(X, dtype=object)
    assert [(name, c) for name, _, c in MixedNB().fit(frame, y).models_] == expected


@pytest.mark.skipif(
    not hasattr(BaseEstimator, "_get_params_html"),
    reason="scikit-learn's HTML display lists parameters from 1.7",
)
def test_the_html_display_marks_only_the_parameters_set():
    """scikit-learn's HTML display marks the parameters that differ from ``__init__``'s
    defaults; MixedNB's group-model keys (``cat__alpha``, ...) are not among its
    arguments, so all of them were marked although only ``models`` was set."""
    from sklearn.utils import estimator_html_repr

    model = MixedNB(models=[("cat", CategoricalNB(), [0, 1])], fit_prior=False)
    html = estimator_html_repr(model)
    marked = re.findall(
        r'<tr class="user-set">.*?<td class="param">(?:<a[^>]*>)?\s*(\w+)', html, re.DOTALL
    )
    assert sorted(marked) == ["fit_prior", "models"], marked
    # the deep parameters themselves are unchanged (a search still tunes the groups)
    assert model.get_params()["cat__smoothing"] == CategoricalNB().smoothing
