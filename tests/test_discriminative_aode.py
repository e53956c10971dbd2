"""AODE with one discriminative weight per super-parent (``AODE(weighting="cll-feature")``,
hebnb.weighting.fit_parent_weights): the parent terms against plain numpy counting, the
weights against the same objective written here and minimised by scipy on cross-fitted
terms computed here, and identical results for any n_jobs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import check_grad, minimize
from scipy.special import log_softmax, logsumexp
from sklearn.model_selection import StratifiedKFold

from hebnb import AODE


def _data(seed=0, n_rows=400, n_classes=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n_rows)
    a = (y + (rng.random(n_rows) < 0.3) * rng.integers(0, 3, size=n_rows)) % 3
    b = (a + y * (rng.random(n_rows) < 0.5)) % 4  # depends on the class through a
    c = rng.integers(0, 3, size=n_rows)
    d = (c + y) % 3  # only the pair (c, d) tells the class
    return np.column_stack([a, b, c, d]), y


def _laplace_terms(X_train, y_train, X, n_classes):
    """T_i(c, x) = ln P(c, x_i) + sum_{j != i} ln P(x_j | c, x_i) of Laplace AODE
    (SPEC eqs. 8-9), counted in numpy; every value present."""
    n_features = X.shape[1]
    cards = X_train.max(axis=0) + 1
    terms = np.zeros((X.shape[0], n_features, n_classes))
    for i in range(n_features):
        for c in range(n_classes):
            in_class = y_train == c
            parent = (np.sum(in_class[:, None] & (X_train[:, [i]] == X[:, i]), axis=0) + 1.0) / (
                len(y_train) + n_classes * cards[i]
            )
            total = np.log(parent)
            for j in range(n_features):
                if j == i:
                    continue
                both = in_class[:, None] & (X_train[:, [i]] == X[:, i])
                joint = np.sum(both & (X_train[:, [j]] == X[:, j]), axis=0)
                total += np.log((joint + 1.0) / (both.sum(axis=0) + cards[j]))
            terms[:, i, c] = total
    return terms


def test_parent_terms_are_the_one_dependence_models():
    X, y = _data()
    model = AODE(smoothing="laplace", parent_smoothing="laplace").fit(X, y)
    codes, threads = model._encode(X)
    terms = model._parent_terms(codes, threads)
    np.testing.assert_allclose(terms, _laplace_terms(X, y, X, 3), rtol=1e-10)
    # and AODE is their average: ln (1/q sum_i exp T_i)
    np.testing.assert_allclose(
        logsumexp(terms, axis=1) - np.log(X.shape[1]),
        model._joint_log_likelihood(X),
        rtol=1e-10,
    )


def _cross_fitted_terms(X, y, params):
    """The training rows' parent terms from models fitted on the other folds."""
    folds = StratifiedKFold(5, shuffle=True, random_state=0).split(X, y)
    terms = np.zeros((X.shape[0], X.shape[1], 3))
    for train, held in folds:
        model = AODE(**params).fit(X[train], y[train])
        codes, threads = model._encode(X[held])
        terms[held] = model._parent_terms(codes, threads)
    return terms


def _reference_weights(terms, y, log_prior, penalty, sample_weight):
    """argmin of -sum_i s_i ln softmax(a ln pi + 1/P sum_p v_p (T_p - ln pi))_{y_i}
    + penalty / 2 (||a - 1||^2 + ||v - 1||^2), numpy + scipy."""
    _, n_parents, n_classes = terms.shape
    likelihood = (terms - log_prior) / n_parents
    targets = np.eye(n_classes)[y]

    def objective(theta):
        a, v = theta[:n_classes], theta[n_classes:]
        log_p = log_softmax(a * log_prior + np.einsum("spc,p->sc", likelihood, v), axis=1)
        residual = sample_weight[:, None] * (np.exp(log_p) - targets)
        value = -np.sum(sample_weight * np.sum(targets * log_p, axis=1))
        value += 0.5 * penalty * np.sum((theta - 1.0) ** 2)
        grad = np.concatenate(
            [residual.sum(axis=0) * log_prior, np.einsum("sc,spc->p", residual, likelihood)]
        )
        return value, grad + penalty * (theta - 1.0)

    start = np.ones(n_classes + n_parents)
    assert check_grad(lambda t: objective(t)[0], lambda t: objective(t)[1], start + 0.1) < 1e-4
    result = minimize(objective, start, jac=True, method="BFGS", options={"gtol": 1e-10})
    return result.x


@pytest.mark.parametrize(
    "params,penalty",
    [
        ({"smoothing": "laplace", "parent_smoothing": "laplace"}, 1.0),
        ({"smoothing": "heb", "parent_smoothing": "heb"}, 0.3),
    ],
)
def test_parent_weights_minimise_the_cross_fitted_conditional_likelihood(params, penalty):
    X, y = _data(seed=1)
    model = AODE(**params, weighting="cll-feature", penalty=penalty, weighting_tol=1e-12).fit(X, y)
    terms = _cross_fitted_terms(X, y, params)
    if params["smoothing"] == "laplace":  # the terms themselves, counted independently
        folds = StratifiedKFold(5, shuffle=True, random_state=0).split(X, y)
        for train, held in folds:
            np.testing.assert_allclose(
                terms[held], _laplace_terms(X[train], y[train], X[held], 3), rtol=1e-10
            )
    expected = _reference_weights(terms, y, model.class_log_prior_, penalty, np.ones(len(y)))
    np.testing.assert_allclose(model.class_weights_, expected[:3], atol=1e-6)
    np.testing.assert_allclose(model.parent_weights_, expected[3:], atol=1e-6)
    assert not np.allclose(model.parent_weights_, 1.0)
    # prediction: the weighted log-linear score of the full model's terms
    full = AODE(**params).fit(X, y)
    codes, threads = full._encode(X)
    full_terms = full._parent_terms(codes, threads)
    scores = expected[:3] * full.class_log_prior_ + np.einsum(
        "spc,p->sc", (full_terms - full.class_log_prior_) / 4, expected[3:]
    )
    np.testing.assert_allclose(model.predict_log_proba(X), log_softmax(scores, axis=1), atol=1e-5)


def test_parent_weights_do_not_depend_on_n_jobs():
    X, y = _data(seed=2, n_rows=3000)
    one = AODE(weighting="cll-feature", n_jobs=1).fit(X, y)
    two = AODE(weighting="cll-feature", n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.parent_weights_, two.parent_weights_)
    np.testing.assert_array_equal(one.predict_proba(X), two.predict_proba(X))


def test_weighting_is_refused_by_partial_fit_and_dropped_by_a_plain_refit():
    X, y = _data(seed=3, n_rows=200)
    with pytest.raises(ValueError, match="partial_fit does not support weighting"):
        AODE(weighting="cll-feature").partial_fit(X, y, classes=[0, 1, 2])
    model = AODE(weighting="cll-feature").fit(X, y)
    assert hasattr(model, "parent_weights_")
    model.set_params(weighting=None).fit(X, y)
    assert not hasattr(model, "parent_weights_")
    np.testing.assert_array_equal(model.predict_proba(X), AODE().fit(X, y).predict_proba(X))


@pytest.mark.parametrize(
    "params,message",
    [
        ({"weighting": "cll-value"}, "'weighting' parameter"),
        ({"weighting": "cll-feature", "penalty": -1.0}, "'penalty' parameter"),
        ({"weighting": "cll-feature", "weighting_tol": 0.0}, "'weighting_tol' parameter"),
    ],
)
def test_bad_weighting_parameters_are_value_errors(params, message):
    X, y = _data(seed=4, n_rows=60)
    with pytest.raises(ValueError, match=message):
        AODE(**params).fit(X, y)
