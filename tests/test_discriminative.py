"""Discriminative weighting (``weighting="cll-feature"`` / ``"cll-value"``,
hebnb.weighting): the weights against the same penalised conditional log-likelihood
written here in numpy (one-hot matrices) and minimised by scipy, and ``"cll-value"``
without a penalty on Laplace tables against one-hot logistic regression."""

from __future__ import annotations

import numpy as np
import pytest
import threadpoolctl
from scipy.optimize import check_grad, minimize
from scipy.special import log_softmax, logsumexp
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import OneHotEncoder

from hebnb import CategoricalNB


def _data(seed=0, n_rows=300, n_classes=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n_rows)
    strong = (y + (rng.random(n_rows) < 0.4) * rng.integers(0, 3, size=n_rows)) % 4
    copy = (strong + (rng.random(n_rows) < 0.2)) % 4  # a near-copy: NB double-counts it
    noise = rng.integers(0, 5, size=n_rows)
    pair = (y + noise) % 3
    X = np.column_stack([strong, copy, noise, pair]).astype(float)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y


def _one_hot(model, X):
    """(S, sum K_f) indicator of each row's category per feature (missing: no column)."""
    blocks = []
    for f, categories in enumerate(model.categories_):
        column = X[:, f]
        blocks.append((column[:, None] == categories[None, :]).astype(float))
    return np.hstack(blocks)


class Reference:
    """J = -sum_i s_i ln softmax(a * ln pi + sum_f W[f, x_if] * ln theta_i[f, x_if])_{y_i}
    + penalty / 2 (||a - 1||^2 + ||w - 1||^2 + ||d * ln theta||^2) with the cell weights
    W = w[f] (+ d[c, f, v] for "cll-value"), in plain numpy. theta = [a (C), w (F),
    d (P * C, "cll-value" only)]. Row i scores its own class's cells leave-one-out,
    ln theta_i = ln((N + m mu - s_i) / (N_f + m - s_i)), computed here from the public
    counts, concentrations and prior means."""

    def __init__(self, model, X, y, kind, penalty, sample_weight=None, held_out=True):
        n_rows = len(y)
        self.one_hot = _one_hot(model, X)
        self.log_table = np.hstack(model.feature_log_prob_).T  # (P, C)
        self.log_prior = model.class_log_prior_
        labels = np.searchsorted(model.classes_, y)
        self.targets = np.eye(len(model.classes_))[labels]
        self.sample_weight = np.ones(n_rows) if sample_weight is None else sample_weight
        self.kind = kind
        self.penalty = penalty
        self.n_classes = len(model.classes_)
        sizes = [len(c) for c in model.categories_]
        self.n_features = len(sizes)
        # (P, F) indicator of the feature each cell belongs to
        self.feature_of_cell = np.repeat(np.eye(len(sizes)), sizes, axis=0)
        # the log-probability each row sees in each cell: (S, P, C)
        self.row_log_table = np.broadcast_to(self.log_table, (n_rows, *self.log_table.shape)).copy()
        start = 0
        for f, size in enumerate(sizes):
            counts = model.category_count_[f]  # (C, K_f)
            m = model.concentration_[:, f][:, None]
            numerator = counts + m * model.prior_mean_[f][None, :]
            denominator = counts.sum(axis=1, keepdims=True) + m
            np.testing.assert_allclose(
                np.log(numerator / denominator), model.feature_log_prob_[f], rtol=1e-10
            )
            for i in range(n_rows if held_out else 0):
                c, s = labels[i], self.sample_weight[i]
                v = np.flatnonzero(self.one_hot[i, start : start + size])
                if len(v):
                    v = v[0]
                    held = (numerator[c, v] - s) / (denominator[c, 0] - s)
                    self.row_log_table[i, start + v, c] = np.log(held)
            start += size

    def split(self, theta):
        c, f = self.n_classes, self.n_features
        a, w = theta[:c], theta[c : c + f]
        d = theta[c + f :].reshape(self.log_table.shape) if self.kind == "cll-value" else 0.0
        return a, w, d

    def cell_weights(self, theta):
        _, w, d = self.split(theta)
        return (self.feature_of_cell @ w)[:, None] * np.ones(self.n_classes) + d

    def __call__(self, theta):
        a, w, d = self.split(theta)
        # (S, P, C): each row's weighted entries, summed over its cells
        weighted = self.one_hot[:, :, None] * self.cell_weights(theta) * self.row_log_table
        scores = a * self.log_prior + weighted.sum(axis=1)
        log_p = log_softmax(scores, axis=1)
        loss = -np.sum(self.sample_weight * np.sum(self.targets * log_p, axis=1))
        residual = self.sample_weight[:, None] * (np.exp(log_p) - self.targets)
        grad_a = residual.sum(axis=0) * self.log_prior
        cell_grad = np.einsum("ip,ic,ipc->pc", self.one_hot, residual, self.row_log_table)
        grad_w = self.feature_of_cell.T @ cell_grad.sum(axis=1)
        value = loss + 0.5 * self.penalty * (np.sum((a - 1) ** 2) + np.sum((w - 1) ** 2))
        grads = [grad_a + self.penalty * (a - 1), grad_w + self.penalty * (w - 1)]
        if self.kind == "cll-value":
            value += 0.5 * self.penalty * np.sum((d * self.log_table) ** 2)
            grads.append((cell_grad + self.penalty * d * self.log_table**2).ravel())
        return value, np.concatenate(grads)

    def minimise(self):
        n_cells = self.log_table.size if self.kind == "cll-value" else 0
        start = np.concatenate([np.ones(self.n_classes + self.n_features), np.zeros(n_cells)])
        assert check_grad(lambda t: self(t)[0], lambda t: self(t)[1], start + 0.1) < 1e-4
        result = minimize(
            self, start, jac=True, method="BFGS", options={"gtol": 1e-11, "maxiter": 20000}
        )
        return result.x


@pytest.mark.parametrize("kind", ["cll-feature", "cll-value"])
@pytest.mark.parametrize("smoothing,penalty", [("heb-m", 1.0), ("laplace", 0.3)])
@pytest.mark.parametrize("rows", ["leave-one-out", "in-sample"])
def test_weights_minimise_the_penalised_conditional_likelihood(kind, smoothing, penalty, rows):
    X, y = _data()
    sample_weight = np.random.default_rng(5).uniform(0.5, 2.0, size=y.shape[0])
    model = CategoricalNB(
        smoothing=smoothing,
        weighting=kind,
        penalty=penalty,
        weighting_tol=1e-12,
        weighting_rows=rows,
    ).fit(X, y, sample_weight=sample_weight)
    generative = CategoricalNB(smoothing=smoothing).fit(X, y, sample_weight=sample_weight)
    held_out = rows == "leave-one-out"
    expected = Reference(
        generative, X, y, kind, penalty, sample_weight, held_out=held_out
    ).minimise()
    n_classes, n_features = len(model.classes_), X.shape[1]
    reference = Reference(generative, X, y, kind, penalty)
    np.testing.assert_allclose(model.class_weights_, expected[:n_classes], atol=1e-6)
    np.testing.assert_allclose(
        model.feature_weights_, expected[n_classes : n_classes + n_features], atol=1e-6
    )
    if kind == "cll-feature":
        learned = model.feature_weights_
    else:
        learned = np.hstack(model.value_weights_).T.ravel()
        np.testing.assert_allclose(learned, reference.cell_weights(expected).ravel(), atol=1e-6)
    # the generative tables are untouched; the scores use the weights
    for mine, theirs in zip(model.feature_log_prob_, generative.feature_log_prob_):
        np.testing.assert_array_equal(mine, theirs)
    scores = model.class_weights_ * reference.log_prior + reference.one_hot @ (
        reference.cell_weights(expected) * reference.log_table
    )
    np.testing.assert_allclose(model.predict_log_proba(X), log_softmax(scores, axis=1), atol=1e-5)
    assert not np.allclose(learned, 1.0)  # the data moved them


def test_unpenalised_cll_value_on_laplace_tables_is_one_hot_logistic_regression():
    X, y = _data(seed=3, n_rows=400, n_classes=2)
    X = np.nan_to_num(X, nan=9.0)  # the same columns for both models
    model = CategoricalNB(
        smoothing="laplace",
        weighting="cll-value",
        weighting_rows="in-sample",
        penalty=0.0,
        weighting_tol=1e-10,
    ).fit(X, y)
    one_hot = OneHotEncoder(sparse_output=False).fit_transform(X)
    regression = LogisticRegression(C=np.inf, tol=1e-12, max_iter=100_000).fit(one_hot, y)
    mine = model.predict_proba(X)
    theirs = regression.predict_proba(one_hot)
    log_likelihood = np.mean(np.log(mine[np.arange(len(y)), y]))
    optimum = np.mean(np.log(theirs[np.arange(len(y)), y]))
    assert log_likelihood == pytest.approx(optimum, abs=1e-7)
    np.testing.assert_allclose(mine, theirs, atol=1e-4)
    # and the generative starting point is worse: the weights did the work
    start = CategoricalNB(smoothing="laplace").fit(X, y).predict_proba(X)
    assert np.mean(np.log(start[np.arange(len(y)), y])) < optimum - 1e-3


@pytest.mark.parametrize("kind", ["cll-feature", "cll-value"])
def test_weights_do_not_depend_on_n_jobs(kind):
    X, y = _data(seed=4, n_rows=5000)
    one = CategoricalNB(weighting=kind, n_jobs=1).fit(X, y)
    two = CategoricalNB(weighting=kind, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.class_weights_, two.class_weights_)
    np.testing.assert_array_equal(one.predict_proba(X), two.predict_proba(X))


def test_integer_sample_weights_equal_repeated_rows():
    # in-sample only: leave-one-out removes a row's whole weight, and one of several
    # repeated rows leaves the others behind (test_weights_minimise_... covers its weights)
    X, y = _data(seed=6, n_rows=200)
    counts = np.random.default_rng(7).integers(1, 4, size=y.shape[0])
    model = CategoricalNB(weighting="cll-value", weighting_rows="in-sample", weighting_tol=1e-12)
    weighted = clone(model).fit(X, y, sample_weight=counts.astype(float))
    repeated = clone(model).fit(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    np.testing.assert_allclose(weighted.class_weights_, repeated.class_weights_, atol=1e-6)
    for a, b in zip(weighted.value_weights_, repeated.value_weights_):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_refit_without_weighting_drops_the_weights():
    X, y = _data(seed=8)
    model = CategoricalNB(weighting="cll-value").fit(X, y)
    assert hasattr(model, "value_weights_")
    model.set_params(weighting=None).fit(X, y)
    assert not hasattr(model, "value_weights_") and not hasattr(model, "class_weights_")
    np.testing.assert_array_equal(
        model.predict_proba(X), CategoricalNB().fit(X, y).predict_proba(X)
    )


@pytest.mark.parametrize(
    "params,message",
    [
        ({"weighting": "cll"}, "'weighting' parameter"),
        ({"weighting": "cll-value", "penalty": -1.0}, "'penalty' parameter"),
        ({"weighting": "cll-value", "penalty": float("nan")}, "'penalty' parameter"),
        ({"weighting": "cll-value", "penalty": True}, "'penalty' parameter"),
        ({"weighting": "cll-value", "weighting_tol": 0.0}, "'weighting_tol' parameter"),
        ({"weighting": "cll-feature", "feature_weighting": "sqrt-mi"}, "cannot be combined"),
        ({"weighting": "cll-value", "class_prior": [1.0, 0.0, 0.0]}, "class prior"),
    ],
)
def test_bad_parameters_are_value_errors(params, message):
    X, y = _data(seed=9, n_rows=60)
    with pytest.raises(ValueError, match=message):
        CategoricalNB(**params).fit(X, y)


def test_partial_fit_is_not_offered_with_weighting():
    # as scikit-learn hides what a configuration cannot do (available_if)
    X, y = _data(seed=10, n_rows=60)
    model = CategoricalNB(weighting="cll-feature")
    assert not hasattr(model, "partial_fit")
    with pytest.raises(AttributeError) as raised:
        model.partial_fit(X, y, classes=[0, 1, 2])
    assert "partial_fit does not support weighting" in str(raised.value.__cause__)
    # a model updated online loses partial_fit when weighting is set, and gets it back
    model = CategoricalNB().partial_fit(X, y)
    assert not hasattr(model.set_params(weighting="cll-value"), "partial_fit")
    model.set_params(weighting=None).partial_fit(X, y)
    np.testing.assert_allclose(model.class_count_, 2 * np.bincount(y))


@pytest.mark.parametrize("kind", ["cll-feature", "cll-value"])
@pytest.mark.parametrize("rows", ["leave-one-out", "in-sample"])
def test_huge_sample_weights_give_the_weights_of_their_limit(kind, rows):
    """Under Laplace tables, weights of 1e150 to 1e297 a row make the pseudo-counts and
    the penalty negligible: one model, whatever the scale. The weight fit used to
    overflow from a total of about 1e154 (the weights came out wrong without a warning)."""
    rng = np.random.default_rng(17)
    X = rng.integers(0, 5, size=(300, 3))
    y = (X[:, 0] + rng.integers(0, 2, 300)) % 2
    fits = [
        CategoricalNB(smoothing="laplace", weighting=kind, weighting_rows=rows).fit(
            X, y, sample_weight=np.full(300, scale)
        )
        for scale in (1e150, 1e200, 1e297)
    ]
    for model in fits[1:]:
        np.testing.assert_allclose(model.class_weights_, fits[0].class_weights_, rtol=1e-6)
        np.testing.assert_allclose(
            model.predict_proba(X), fits[0].predict_proba(X), rtol=1e-6, atol=1e-9
        )


@pytest.mark.parametrize("kind", ["cll-feature", "cll-value"])
def test_weights_do_not_depend_on_the_blas_threads(kind):
    """The weight fit runs numpy's BLAS on one thread whatever the process's BLAS limit,
    so its sums over the rows (long enough for BLAS to split them across threads) round
    alike on any machine, and the limit is back as it was after the fit."""
    X, y = _data(seed=7, n_rows=30_000)
    fitted = []
    for limit in (1, 2):
        with threadpoolctl.threadpool_limits(limits=limit, user_api="blas"):
            fitted.append(CategoricalNB(weighting=kind).fit(X, y))
            after = threadpoolctl.threadpool_info()
        assert all(pool["num_threads"] == limit for pool in after if pool["user_api"] == "blas")
    np.testing.assert_array_equal(fitted[0].predict_proba(X), fitted[1].predict_proba(X))


def test_the_blas_limit_lasts_until_the_last_of_overlapping_fits_ends(monkeypatch):
    """Two threads inside ``blas_in_one_thread`` at once: the limit is set once, by the
    first to enter, and restored once, when the last leaves (restored when the first
    left, BLAS would run on all its threads under the second; restored by each, the
    second would put back the first's limit of 1 for good). The BLAS libraries are
    replaced by a recorder of the calls."""
    import threading

    from hebnb import weighting

    calls = []

    class Limiter:
        def restore_original_limits(self):
            calls.append("restore")

    class Controller:
        def limit(self, *, limits, user_api):
            calls.append(f"limit {user_api} to {limits}")
            return Limiter()

    monkeypatch.setattr(weighting, "_blas_controller", Controller)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with weighting.blas_in_one_thread():
            first_in.set()
            second_in.wait(5)
        calls.append("first left")
        first_out.set()

    def second():
        first_in.wait(5)
        with weighting.blas_in_one_thread():
            second_in.set()
            first_out.wait(5)
        calls.append("second left")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert calls == ["limit blas to 1", "first left", "restore", "second left"]
    with weighting.blas_in_one_thread():
        assert calls[-1] == "limit blas to 1"
    assert calls[-1] == "restore"


@pytest.mark.parametrize("kind", ["cll-feature", "cll-value"])
def test_the_preconditioner_is_the_hessian_diagonal_in_one_features_memory(kind):
    """The L-BFGS preconditioner against its definition written out per cell, class and
    feature; it kept every feature's (rows, classes) score terms at once (681 MB for
    10,000 rows, 40 features and 200 classes): now one feature's at a time."""
    import tracemalloc

    from hebnb.weighting import _diagonal_curvature

    rng = np.random.default_rng(12)
    n_rows, n_features, n_classes, k = 4000, 30, 50, 6
    codes = rng.integers(-1, k, size=(n_features, n_rows)).astype(np.int32)
    offsets = list(range(0, k * n_features + 1, k))
    tables = rng.dirichlet(np.ones(k), size=(n_features, n_classes))  # (F, C, K)
    log_table = np.log(tables.transpose(0, 2, 1).reshape(n_features * k, n_classes))
    prior = np.log(rng.dirichlet(np.ones(n_classes)))
    weights = rng.uniform(0.5, 2.0, size=n_rows)
    tracemalloc.start()
    got = _diagonal_curvature(kind, codes, weights, log_table, prior, offsets)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 * n_rows * n_classes * 8  # a few (rows, classes) arrays, not F of them
    # the definition: p from the generative scores; class and cell weights scale one
    # class's term (s p (1 - p) g^2), a feature weight all its classes' (s Var_p(g))
    g = np.where(codes[:, :, None] >= 0, log_table[np.array(offsets[:-1])[:, None] + codes], 0.0)
    scores = prior + g.sum(axis=0)
    p = np.exp(scores - logsumexp(scores, axis=1, keepdims=True))
    spread = weights[:, None] * p * (1 - p)
    expected = [spread.sum(axis=0) * prior**2]
    mean = np.einsum("ic,fic->fi", p, g)
    variance = np.einsum("ic,fic->fi", p, g**2) - mean**2
    expected.append(np.maximum(variance, 0.0) @ weights)
    if kind == "cll-value":
        cells = np.zeros((n_features * k, n_classes))
        for f in range(n_features):
            for i in np.flatnonzero(codes[f] >= 0):
                cells[offsets[f] + codes[f, i]] += spread[i]
        expected.append((cells * log_table**2).ravel())
    np.testing.assert_allclose(got, np.concatenate(expected), rtol=1e-9)


@pytest.mark.parametrize("kind", ["cll-feature", "cll-value"])
@pytest.mark.parametrize("empty", [0, 1, 2])
def test_a_feature_with_every_value_missing_weighs_nothing_wherever_it_is(kind, empty):
    """A feature whose values are all missing has no category: the leave-one-out parts
    summed the features' counts by reduceat, which read past the table for the last
    feature (IndexError) and gave an earlier one its neighbour's sum. The weights are
    those of the table without that feature."""
    rng = np.random.default_rng(13)
    X = rng.integers(0, 3, size=(80, 3)).astype(float)
    y = (X[:, 0] + rng.integers(0, 2, 80) > 2).astype(int)
    X[:, empty] = np.nan
    model = CategoricalNB(weighting=kind).fit(X, y)
    without = CategoricalNB(weighting=kind).fit(np.delete(X, empty, axis=1), y)
    np.testing.assert_allclose(
        model.predict_proba(X), without.predict_proba(np.delete(X, empty, axis=1)), rtol=1e-7
    )
