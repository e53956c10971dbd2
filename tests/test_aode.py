"""AODE / HEB-AODE against SPEC eqs. 7-12 and the two-level prior, written here in plain numpy."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import test_bad_input  # the CategoricalNB bad-input cases, beside this file
from scipy.optimize import minimize_scalar
from scipy.special import gammaln, logsumexp
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from hebnb import AODE

CARDINALITY = (3, 5, 8, 2)
N_CLASSES = 3


def make_data(
    seed: int,
    n_rows: int = 400,
    missing: float = 0.1,
    cardinality=CARDINALITY,
    n_classes: int = N_CLASSES,
):
    """Dependent categorical features (each a noisy function of the previous one and y),
    as floats with NaN for missing values."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n_rows)
    X = np.empty((n_rows, len(cardinality)))
    previous = y
    for f, k in enumerate(cardinality):
        noise = rng.integers(0, k, n_rows)
        X[:, f] = np.where(rng.random(n_rows) < 0.6, (previous * 2 + y) % k, noise)
        previous = X[:, f].astype(int)
    X[rng.random(X.shape) < missing] = np.nan
    return X, y


def make_test_rows(seed: int):
    """Test rows with missing and unknown values, including rows with no super-parent."""
    X, _ = make_data(seed + 100, n_rows=60, missing=0.2)
    X[0] = np.nan  # nothing present: Naive Bayes fallback (class prior only)
    X[1] = [99, np.nan, 77, np.nan]  # only unknown values: fallback again
    X[2, 0] = 42  # one unknown value
    return X


# --------------------------------------------------------------------------------------
# The reference: SPEC written straight out with dense tables
# --------------------------------------------------------------------------------------


def codes_of(X, categories):
    """-1 for missing or unknown, else the index of the value in the training categories."""
    codes = np.full(X.shape, -1, dtype=int)
    for f, cats in enumerate(categories):
        for s, value in enumerate(X[:, f]):
            hits = np.flatnonzero(cats == value)
            if hits.size:
                codes[s, f] = hits[0]
    return codes


def dense_tables(codes, y, w, K, C):
    F = len(K)
    single = [np.zeros((C, K[f])) for f in range(F)]
    joint = {}
    for f in range(F):
        for s in np.flatnonzero(codes[:, f] >= 0):
            single[f][y[s], codes[s, f]] += w[s]
    for i in range(F):
        for j in range(F):
            if i == j:
                continue
            table = np.zeros((C, K[i], K[j]))
            for s in np.flatnonzero((codes[:, i] >= 0) & (codes[:, j] >= 0)):
                table[y[s], codes[s, i], codes[s, j]] += w[s]
            joint[i, j] = table
    return single, joint


def reference_joint(model, X_train, y_train, X_test, w=None):
    """ln P(y, x) of SPEC eq. 7 with eqs. 8-10 / the two-level prior; the concentrations
    come from the model (they are checked against scipy separately)."""
    categories = model.categories_
    K = [len(c) for c in categories]
    F, C = len(K), len(model.classes_)
    y = np.searchsorted(model.classes_, y_train)
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=float)
    single, joint = dense_tables(codes_of(X_train, categories), y, w, K, C)
    heb = model.smoothing == "heb"
    mean = [(s.sum(0) / s.sum() if heb else np.full(k, 1.0 / k)) for s, k in zip(single, K)]
    # Naive Bayes child (fallback rows and capped pairs)
    theta = []
    for f in range(F):
        m = model.marginal_concentration_[:, f][:, None] if heb else K[f]
        theta.append((single[f] + m * mean[f]) / (single[f].sum(1, keepdims=True) + m))
    # parent term: eq. 8, or P(u) P(y | u) with P(y | u) shrunk toward the class
    # distribution pi of the rows where x_i is present (parent_smoothing="heb")
    parent = [(s + 1.0) / (s.sum() + C * k) for s, k in zip(single, K)]
    if model.parent_smoothing == "heb":
        for i, s in enumerate(single):
            pi = (s.sum(1, keepdims=True) + 1.0) / (s.sum() + C)
            m, value_total = model.parent_concentration_[i], s.sum(0)
            p_value = (value_total + C) / (s.sum() + C * K[i])
            parent[i] = p_value * (s + m * pi) / (value_total + m)
    if not model.fit_prior or model.class_prior is not None:
        # the class marginal replaced: pi'_y P(x_i = u | y)
        class_prior = (
            np.full(C, 1.0 / C) if model.class_prior is None else np.asarray(model.class_prior)
        )
        parent = [class_prior[:, None] * p / p.sum(1, keepdims=True) for p in parent]
    # child conditionals, eqs. 9-10 and the two-level prior
    child = {}
    rank = np.cumsum(model.super_parents_) - 1  # diagnostics: one row per super-parent
    for (i, j), table in joint.items():
        if not model.super_parents_[i]:
            continue
        r = rank[i]
        if model.capped_[i, j]:
            child[i, j] = np.broadcast_to(theta[j][:, None, :], table.shape)
            continue
        totals = table.sum(2, keepdims=True)
        if not heb:
            child[i, j] = (table + 1.0) / (totals + K[j])
            continue
        m = model.concentration_[:, r, j][:, None, None]
        if model.prior == "pooled":
            mu = mean[j][None, None, :]
        else:
            a = model.pooled_concentration_[r, j]
            pooled = table.sum(0)
            mu = ((pooled + a * mean[j]) / (pooled.sum(1, keepdims=True) + a))[None]
        child[i, j] = (table + m * mu) / (totals + m)
    n_parent = [s.sum(0) for s in single]
    log_prior = np.log(np.bincount(y, weights=w, minlength=C) + 1) - np.log(w.sum() + C)
    if not model.fit_prior or model.class_prior is not None:
        log_prior = np.log(class_prior)

    codes = codes_of(X_test, categories)
    out = np.empty((len(codes), C))
    with np.errstate(divide="ignore"):
        for s, x in enumerate(codes):
            usable = [j for j in range(F) if x[j] >= 0 and mean[j][x[j]] > 0]
            parents = [
                i
                for i in range(F)
                if x[i] >= 0
                and n_parent[i][x[i]] >= model.min_parent_count
                and model.super_parents_[i]
            ]
            if not parents:
                out[s] = log_prior + sum(np.log(theta[j][:, x[j]]) for j in usable)
                continue
            terms = []
            for i in parents:
                t = np.log(parent[i][:, x[i]])
                for j in usable:
                    if j != i:
                        t = t + np.log(child[i, j][:, x[i], x[j]])
                terms.append(t)
            out[s] = logsumexp(np.array(terms), axis=0) - np.log(len(parents))
    return out


def softmax(joint):
    return np.exp(joint - logsumexp(joint, axis=1, keepdims=True))


# --------------------------------------------------------------------------------------
# Against the reference
# --------------------------------------------------------------------------------------

CASES = [
    {"smoothing": "laplace"},
    {"smoothing": "heb", "prior": "pooled"},
    {"smoothing": "heb", "prior": "two-level"},
    {"smoothing": "laplace", "max_parent_cardinality": 4, "max_joint_cells": 100},
    {"smoothing": "heb", "prior": "pooled", "max_parent_cardinality": 4, "max_joint_cells": 100},
    {"smoothing": "heb", "prior": "two-level", "max_parent_cardinality": 4, "max_joint_cells": 100},
    {"smoothing": "heb", "prior": "two-level", "min_parent_count": 15},
    {"smoothing": "heb", "prior": "two-level", "parent_smoothing": "heb"},
    {"smoothing": "heb", "prior": "pooled", "parent_smoothing": "heb", "min_parent_count": 15},
    {"smoothing": "laplace", "parent_smoothing": "heb", "fit_prior": False},
    {"smoothing": "heb", "parent_smoothing": "heb", "class_prior": [0.2, 0.5, 0.3]},
    {"smoothing": "heb", "class_prior": [0.2, 0.5, 0.3]},
    {"smoothing": "laplace", "max_parents": 1},
    {"smoothing": "heb", "prior": "two-level", "max_parents": 2},
    {"smoothing": "heb", "prior": "pooled", "max_parents": 3, "max_parent_cardinality": 4},
]


@pytest.mark.parametrize("params", CASES, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_predict_proba_matches_the_spec(params):
    X, y = make_data(0)
    X_test = make_test_rows(0)
    model = AODE(**params).fit(X, y)
    if "max_joint_cells" in params:
        assert model.capped_.any() and not model.capped_.all()
    expected = reference_joint(model, X, y, X_test)
    np.testing.assert_allclose(model.predict_joint_log_proba(X_test), expected, rtol=1e-10)
    np.testing.assert_allclose(model.predict_proba(X_test), softmax(expected), atol=1e-10)


# (3, 5): dense tables; (40, 45), (45, 60), (40, 60) with three classes: K_a K_b C > 4096,
# sparse (evaluated from the pair counts at scoring)
WIDE_CARDINALITY = (3, 40, 45, 5, 60)


@pytest.mark.parametrize(
    "params",
    [
        {"smoothing": "laplace"},
        {"smoothing": "heb", "prior": "pooled"},
        {"smoothing": "heb", "prior": "two-level"},
        {"smoothing": "heb", "prior": "two-level", "max_parent_cardinality": 50},
        {"smoothing": "laplace", "max_parent_cardinality": 42, "min_parent_count": 3},
        {"smoothing": "heb", "prior": "pooled", "max_parents": 2, "parent_smoothing": "heb"},
    ],
    ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()),
)
def test_dense_and_sparse_pairs_match_the_spec(params):
    """High-cardinality pairs keep no per-cell log-probabilities (the scorer evaluates them
    from the pair counts), small ones keep whole dense tables: both give SPEC's numbers,
    for seen and unseen value pairs, half-capped pairs included."""
    X, y = make_data(3, n_rows=1500, cardinality=WIDE_CARDINALITY)
    X_test, _ = make_data(4, n_rows=300, missing=0.2, cardinality=WIDE_CARDINALITY)
    X_test[:5, 2] = 99  # unknown
    model = AODE(**params).fit(X, y)
    expected = reference_joint(model, X, y, X_test)
    np.testing.assert_allclose(model.predict_joint_log_proba(X_test), expected, rtol=1e-10)
    layout = _storage(model, len(y))
    assert layout["dense"] > 0 or "max_parents" in params
    assert layout["sparse"] > 0


@pytest.mark.parametrize("n_classes", [2, 4, 5, 7, 10, 12])
@pytest.mark.parametrize("params", [{"smoothing": "laplace"}, {"prior": "two-level"}])
def test_every_number_of_classes_scores_as_the_spec(n_classes, params):
    """The scorer is compiled for 2 to 10 classes (its class loops unrolled) and loops over
    any other number: each gives SPEC's joint, dense and sparse pairs alike."""
    X, y = make_data(5, n_rows=1500, cardinality=WIDE_CARDINALITY, n_classes=n_classes)
    X_test, _ = make_data(6, n_rows=200, missing=0.2, cardinality=WIDE_CARDINALITY)
    model = AODE(**params).fit(X, y)
    assert model.classes_.shape == (n_classes,)
    expected = reference_joint(model, X, y, X_test)
    np.testing.assert_allclose(model.predict_joint_log_proba(X_test), expected, rtol=1e-10)
    layout = _storage(model, len(y))
    assert layout["dense"] > 0 and layout["sparse"] > 0


def _storage(model, n_rows):
    """Dense elements and sparse rows a model keeps, by the documented rule: per pair,
    dense tables (K_a K_b C numbers per modelled orientation) when K_a K_b C <= 4096 and
    K_a K_b <= 2 cells + 64, else one header row and K_parent rows per modelled orientation."""
    k = model.n_categories_
    C = len(model.classes_)
    F = len(k)
    modelled = ~model.capped_ & model.super_parents_[:, None]
    np.fill_diagonal(modelled, False)
    # only the pairs modelled in some orientation are stored, in order
    stored = [(a, b) for a, b in _pairs(F) if modelled[a, b] or modelled[b, a]]
    assert [tuple(pair) for pair in model.pair_features_] == stored
    rows = np.concatenate([[0], np.cumsum([k[a] for a, b in stored])]).astype(np.int64)
    assert model.pair_indptr_.shape == (rows[-1] + 1,)
    dense = sparse = 0
    for p, (a, b) in enumerate(stored):
        cells = model.pair_indptr_[rows[p + 1]] - model.pair_indptr_[rows[p]]
        is_dense = k[a] * k[b] * C <= 4096 and k[a] * k[b] <= 2 * cells + 64
        for parent, child in [(a, b), (b, a)]:
            if modelled[parent, child]:
                if is_dense:
                    dense += k[a] * k[b] * C
                else:
                    sparse += k[parent] + 1
    assert model._model["dense_log_prob"].shape == (dense,)
    assert model._model["sparse_rows"].shape == (sparse, C + 1)
    return {"dense": dense, "sparse": sparse}


def test_sample_weights_count_everywhere():
    X, y = make_data(1)
    w = np.random.default_rng(1).uniform(0.2, 2.0, len(y))
    w[:5] = 0.0
    model = AODE(prior="two-level").fit(X, y, sample_weight=w)
    X_test = make_test_rows(1)
    expected = reference_joint(model, X, y, X_test, w)
    np.testing.assert_allclose(model.predict_proba(X_test), softmax(expected), atol=1e-10)


def test_rows_without_super_parent_use_naive_bayes():
    X, y = make_data(2)
    model = AODE().fit(X, y)
    proba = model.predict_proba(np.full((1, 4), np.nan))
    prior = (np.bincount(y, minlength=3) + 1) / (len(y) + 3)
    np.testing.assert_allclose(proba[0], prior, rtol=1e-12)


# --------------------------------------------------------------------------------------
# Concentrations against scipy on the multi-document evidence (SPEC eq. 11)
# --------------------------------------------------------------------------------------


def evidence(m, table, mean):
    """Sum over documents u of the Dirichlet-multinomial log evidence of table[u]
    (mean[u] its prior mean; only non-zero cells contribute)."""
    mean = np.broadcast_to(mean, table.shape)
    nz = table > 0
    totals = table.sum(1)
    return np.sum(gammaln(m) - gammaln(totals[totals > 0] + m)) + np.sum(
        gammaln(table[nz] + m * mean[nz]) - gammaln(m * mean[nz])
    )


def scipy_argmax(table, mean, low=1e-2, high=1e4):
    result = minimize_scalar(
        lambda t: -evidence(np.exp(t), table, mean),
        bounds=(np.log(low), np.log(high)),
        method="bounded",
        options={"xatol": 1e-12, "maxiter": 2000},
    )
    return np.exp(result.x)


def assert_same_maximiser(found, expected, table, mean):
    if abs(found - expected) <= 1e-6 * expected:
        return
    # where the evidence is flat, the maximum itself must agree (SPEC accuracy contract)
    best, got = evidence(expected, table, mean), evidence(found, table, mean)
    assert got >= best - 1e-9 * abs(best), (found, expected)


@pytest.mark.parametrize("prior", ["pooled", "two-level"])
def test_concentrations_match_scipy_and_the_fallback(prior):
    X, y = make_data(3, n_rows=250)
    model = AODE(prior=prior, min_count=25).fit(X, y)
    K = [len(c) for c in model.categories_]
    single, joint = dense_tables(codes_of(X, model.categories_), y, np.ones(len(y)), K, 3)
    n_fallback = n_solved = 0
    for (i, j), table in joint.items():
        mean = single[j].sum(0) / single[j].sum()
        if prior == "two-level":
            pooled = table.sum(0)
            a = scipy_argmax(pooled, mean)
            assert_same_maximiser(model.pooled_concentration_[i, j], a, pooled, mean)
            mean = (pooled + a * mean) / (pooled.sum(1, keepdims=True) + a)
        for c in range(3):
            found = model.concentration_[c, i, j]
            if single[i][c].max() < 25:  # max_u N^{(i)}_{c,u} < N0: m = K_j
                assert found == K[j] and model.n_iter_[c, i, j] == 0
                n_fallback += 1
            else:
                assert_same_maximiser(found, scipy_argmax(table[c], mean), table[c], mean)
                n_solved += 1
    assert n_fallback > 0 and n_solved > 0
    assert np.isnan(model.concentration_[:, range(4), range(4)]).all()
    assert model.converged_.all()


@pytest.mark.parametrize("prior", ["pooled", "two-level"])
@pytest.mark.parametrize(
    ("cardinality", "weighted"),
    [(CARDINALITY, False), ((20, 4, 3), False), (CARDINALITY, True)],
    ids=["stack-solver", "many-parent-values", "fractional-weights"],
)
def test_log_evidence_is_the_evidence_at_the_fitted_concentration(prior, cardinality, weighted):
    # computed on first access, after the fit: eq. 11 at m[c, i, j], with the two-level
    # cell means from the fitted a[i, j]; small whole-count tables (the stack solver),
    # more than 16 parent values and fractional counts (the general terms) alike
    X, y = make_data(7, n_rows=300, cardinality=cardinality)
    w = np.random.default_rng(7).uniform(0.5, 2.0, len(y)) if weighted else np.ones(len(y))
    model = AODE(prior=prior, min_count=25).fit(X, y, sample_weight=w if weighted else None)
    assert "_log_evidence" not in vars(model)
    K = [len(c) for c in model.categories_]
    single, joint = dense_tables(codes_of(X, model.categories_), y, w, K, 3)
    found = model.log_evidence_
    assert found.shape == model.concentration_.shape
    for (i, j), table in joint.items():
        mean = single[j].sum(0) / single[j].sum()
        if prior == "two-level":
            a = model.pooled_concentration_[i, j]
            pooled = table.sum(0)
            mean = (pooled + a * mean) / (pooled.sum(1, keepdims=True) + a)
        for c in range(3):
            expected = evidence(model.concentration_[c, i, j], table[c], mean)
            assert found[c, i, j] == pytest.approx(expected, rel=1e-10, abs=1e-10)
    assert np.isnan(found[:, range(len(K)), range(len(K))]).all()
    # kept, pickled with the model, and dropped when partial_fit refits
    assert model.log_evidence_ is found
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.log_evidence_, found)
    model.partial_fit(X[:50], y[:50])
    assert not np.array_equal(model.log_evidence_, found, equal_nan=True)


def test_log_evidence_has_one_row_per_super_parent():
    X, y = make_data(9, n_rows=300)
    model = AODE(max_parents=2, min_count=0).fit(X, y)
    K = [len(c) for c in model.categories_]
    single, joint = dense_tables(codes_of(X, model.categories_), y, np.ones(len(y)), K, 3)
    parents = np.flatnonzero(model.super_parents_)
    assert model.log_evidence_.shape == (3, 2, len(K))
    for r, i in enumerate(parents):
        for j in range(len(K)):
            if j == i:
                assert np.isnan(model.log_evidence_[:, r, j]).all()
                continue
            a = model.pooled_concentration_[r, j]
            pooled = joint[i, j].sum(0)
            marginal = single[j].sum(0) / single[j].sum()
            mean = (pooled + a * marginal) / (pooled.sum(1, keepdims=True) + a)
            for c in range(3):
                expected = evidence(model.concentration_[c, r, j], joint[i, j][c], mean)
                assert model.log_evidence_[c, r, j] == pytest.approx(expected, rel=1e-10)


def test_log_evidence_is_nan_for_laplace_smoothing_and_needs_a_fit():
    X, y = make_data(8)
    model = AODE(smoothing="laplace")
    assert not hasattr(model, "log_evidence_")
    assert np.isnan(model.fit(X, y).log_evidence_).all()


# --------------------------------------------------------------------------------------
# A hand computation, invariances, persistence
# --------------------------------------------------------------------------------------


def test_parent_concentrations_match_scipy():
    X, y = make_data(4, n_rows=300)
    model = AODE(parent_smoothing="heb").fit(X, y)
    K = [len(c) for c in model.categories_]
    single, _ = dense_tables(codes_of(X, model.categories_), y, np.ones(len(y)), K, 3)
    for i, counts in enumerate(single):  # counts[c, u]: documents are the values u
        pi = (counts.sum(1) + 1.0) / (counts.sum() + 3)
        expected = scipy_argmax(counts.T, pi)
        assert_same_maximiser(model.parent_concentration_[i], expected, counts.T, pi)
    # the shrinkage is real: not the Laplace parent term's C
    assert not np.allclose(model.parent_concentration_, 3.0)
    laplace = AODE(parent_smoothing="laplace").fit(X, y)
    np.testing.assert_array_equal(laplace.parent_concentration_, np.full(len(K), 3.0))


def test_one_pair_by_hand():
    X = [[0, 0], [0, 1], [1, 1], [1, 1]]
    model = AODE(smoothing="laplace", parent_smoothing="laplace").fit(X, [0, 0, 1, 1])
    # parent x0 = 0: P(y, x0) = 3/8, 1/8; P(x1 = 1 | y, x0 = 0) = 2/4, 1/2
    # parent x1 = 1: P(y, x1) = 2/8, 3/8; P(x0 = 0 | y, x1 = 1) = 2/3, 1/4
    joint = np.array([3 / 8 * 1 / 2 + 2 / 8 * 2 / 3, 1 / 8 * 1 / 2 + 3 / 8 * 1 / 4]) / 2
    np.testing.assert_allclose(model.predict_joint_log_proba([[0, 1]])[0], np.log(joint))
    np.testing.assert_allclose(model.predict_proba([[0, 1]])[0], [34 / 49, 15 / 49])
    # the pair table: one CSR row per value of x0, cells (u, v) -> class counts
    np.testing.assert_array_equal(model.pair_features_, [[0, 1]])
    np.testing.assert_array_equal(model.pair_indptr_, [0, 2, 3])
    np.testing.assert_array_equal(model.pair_indices_, [0, 1, 1])
    np.testing.assert_array_equal(model.pair_counts_, [[1, 0], [1, 0], [0, 2]])


@pytest.mark.parametrize("params", [{"smoothing": "laplace"}, {"prior": "pooled"}, {}])
def test_results_do_not_depend_on_n_jobs(params):
    X, y = make_data(4, n_rows=600)
    X_test = make_test_rows(4)
    one = AODE(**params, n_jobs=1).fit(X, y)
    two = AODE(**params, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.concentration_, two.concentration_)
    np.testing.assert_array_equal(one.pair_counts_, two.pair_counts_)
    np.testing.assert_array_equal(one.predict_proba(X_test), two.predict_proba(X_test))


@pytest.mark.parametrize("max_parents", [None, 7])
def test_wide_fits_do_not_depend_on_n_jobs(max_parents):
    """Enough pairs (780) that pair counting and child fitting cut their work differently
    for 1, 2 and 3 threads (both size their tasks by the thread count): the same tables,
    diagnostics and probabilities; and the diagnostics, which the threads gather into
    place, where the super-parent ranks say (a sample checked against scipy)."""
    rng = np.random.default_rng(11)
    X = rng.integers(0, 3, size=(300, 40))
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, 300)) % 2
    fits = [
        AODE(prior="pooled", max_parents=max_parents, min_count=0, n_jobs=n).fit(X, y)
        for n in (1, 2, 3)
    ]
    for other in fits[1:]:
        for name in ("concentration_", "n_iter_", "converged_", "pair_indptr_", "pair_counts_"):
            np.testing.assert_array_equal(getattr(fits[0], name), getattr(other, name))
        np.testing.assert_array_equal(fits[0].predict_proba(X), other.predict_proba(X))
    two_level = [AODE(max_parents=max_parents, min_count=0, n_jobs=n).fit(X, y) for n in (1, 3)]
    for name in ("pooled_concentration_", "concentration_"):
        np.testing.assert_array_equal(getattr(two_level[0], name), getattr(two_level[1], name))
    model = fits[1]
    parents = np.flatnonzero(model.super_parents_)
    K = [3] * 40
    single, joint = dense_tables(X, y, np.ones(len(y)), K, 2)
    for _ in range(30):
        c, r, j = rng.integers(2), rng.integers(len(parents)), rng.integers(40)
        i = parents[r]
        if i == j:
            assert np.isnan(model.concentration_[c, r, j])
            continue
        mean = single[j].sum(0) / single[j].sum()
        table = joint[i, j][c]
        assert_same_maximiser(model.concentration_[c, r, j], scipy_argmax(table, mean), table, mean)


def test_pickle_and_clone():
    X, y = make_data(5)
    model = AODE(prior="pooled", min_parent_count=3, n_jobs=2).fit(X, y)
    restored = pickle.loads(pickle.dumps(model))
    X_test = make_test_rows(5)
    np.testing.assert_array_equal(restored.predict_proba(X_test), model.predict_proba(X_test))
    fresh = clone(model)
    assert fresh.get_params() == model.get_params()
    assert not hasattr(fresh, "classes_")


@pytest.mark.parametrize(
    "params", [{}, {"max_parents": 2}, {"max_parents": 3, "max_parent_cardinality": 40}]
)
def test_a_pickle_of_the_all_pairs_layout_loads(params):
    """A model pickled when the pair tables kept rows for every pair (empty for pairs no
    orientation models) and the diagnostics were (C, F, F) loads onto the stored-pairs
    layout: the same tables and diagnostics as a fresh fit, the same probabilities."""
    X, y = make_data(6, n_rows=500, cardinality=WIDE_CARDINALITY)
    model = AODE(**params).fit(X, y)
    k, n_features = model.n_categories_, X.shape[1]
    # the old layout, written out pair by pair (the tables were then public attributes
    # in the encoder's codes)
    old = dict(model.__getstate__())
    tables = old.pop("_pairs")
    stored = {(int(a), int(b)): p for p, (a, b) in enumerate(tables["pairs"])}
    rows = np.concatenate([[0], np.cumsum([k[a] for a, _ in tables["pairs"]])])
    indptr = [0]
    for a, b in _pairs(n_features):
        if (a, b) in stored:
            p = stored[(a, b)]
            indptr.extend(tables["indptr"][rows[p] + 1 : rows[p + 1] + 1])
        else:
            indptr.extend([indptr[-1]] * k[a])
    assert "pair_features_" not in old
    old["pair_indptr_"] = np.asarray(indptr, dtype=np.int64)
    # (and float64 counts: the tables held no other type then)
    old["pair_indices_"] = tables["indices"]
    old["pair_counts_"] = tables["counts"].astype(np.float64)
    old["_model"] = dict(old["_model"])
    parents = model.super_parents_
    for name, key, fill in [
        ("concentration_", "concentration", np.nan),
        ("log_evidence_", "log_evidence", np.nan),
        ("n_iter_", "n_iter", 0),
        ("converged_", "converged", True),
    ]:
        wide = np.full(
            (len(model.classes_), n_features, n_features), fill, getattr(model, name).dtype
        )
        wide[:, parents] = getattr(model, name)
        old[name] = old["_model"][key] = wide
    wide = np.full((n_features, n_features), np.nan)
    wide[parents] = model.pooled_concentration_
    old["pooled_concentration_"] = old["_model"]["pooled_concentration"] = wide
    restored = AODE.__new__(AODE)
    restored.__setstate__(old)
    for name in ["pair_features_", "pair_indptr_", "pair_indices_", "pair_counts_", "n_iter_"]:
        np.testing.assert_array_equal(getattr(restored, name), getattr(model, name))
    for name in ["concentration_", "log_evidence_", "pooled_concentration_", "converged_"]:
        np.testing.assert_array_equal(getattr(restored, name), getattr(model, name))
    X_test, _ = make_data(7, n_rows=80, missing=0.2, cardinality=WIDE_CARDINALITY)
    np.testing.assert_array_equal(restored.predict_proba(X_test), model.predict_proba(X_test))


# --------------------------------------------------------------------------------------
# Stored count type: uint32 whole counts, float64 otherwise
# --------------------------------------------------------------------------------------


def _pair_tally(model, X, y, w):
    """The pair tables as a numpy tally of the rows, in the layout of ``pair_counts_``:
    per stored pair (a, b), per value u of a, the seen values v of b (sorted), (cells, C)."""
    codes = codes_of(X, model.categories_)
    k, C = model.n_categories_, len(model.classes_)
    _, joint = dense_tables(codes, y, w, k, C)
    cells = []
    for a, b in model.pair_features_:
        table = joint[int(a), int(b)].transpose(1, 2, 0)  # (K_a, K_b, C)
        for u in range(k[a]):
            cells.extend(table[u, v] for v in range(k[b]) if table[u, v].any())
    return np.asarray(cells).reshape(-1, C)


@pytest.mark.parametrize(
    ("weighting", "stored"),
    [
        ("none", np.uint32),
        ("whole", np.uint32),
        ("fractional", np.float64),
        ("whole beyond uint32", np.float64),  # their sum does not fit a uint32
    ],
)
def test_whole_weights_store_uint32_counts_and_others_float64(weighting, stored):
    X, y = make_data(8, n_rows=300)
    rng = np.random.default_rng(8)
    w = {
        "none": np.ones(len(y)),
        "whole": rng.integers(0, 4, len(y)).astype(float),
        "fractional": rng.uniform(0.2, 2.0, len(y)),
        "whole beyond uint32": np.full(len(y), 2.0**31),
    }[weighting]
    model = AODE().fit(X, y, sample_weight=None if weighting == "none" else w)
    assert model._pairs["counts"].dtype == stored
    assert model.pair_counts_.dtype == np.float64
    np.testing.assert_array_equal(model.pair_counts_, _pair_tally(model, X, y, w))


@pytest.mark.parametrize(
    "params", [{"smoothing": "laplace"}, {}, {"prior": "pooled"}, {"max_parents": 2}]
)
def test_uint32_and_float64_counts_give_the_same_model(params):
    """Every reader of the pair tables (the fit, the log evidence, the scorer, the
    weights' per-parent terms) takes uint32 counts as the float64 counts they equal."""
    X, y = make_data(9, n_rows=1500, cardinality=WIDE_CARDINALITY)
    X_test, _ = make_data(10, n_rows=200, missing=0.2, cardinality=WIDE_CARDINALITY)
    whole = AODE(**params).fit(X, y)
    assert whole._pairs["counts"].dtype == np.uint32
    floats = copy.deepcopy(whole)
    floats._pairs = {**whole._pairs, "counts": whole._pairs["counts"].astype(np.float64)}
    floats._solve(2)
    for name in ["concentration_", "pooled_concentration_", "n_iter_", "log_evidence_"]:
        np.testing.assert_array_equal(getattr(floats, name), getattr(whole, name))
    for name in ["dense_log_prob", "sparse_rows"]:
        np.testing.assert_array_equal(floats._model[name], whole._model[name])
    np.testing.assert_array_equal(
        floats.predict_joint_log_proba(X_test), whole.predict_joint_log_proba(X_test)
    )
    codes, threads = whole._encode(X_test)
    np.testing.assert_array_equal(
        floats._parent_terms(codes, threads), whole._parent_terms(codes, threads)
    )


def test_a_pickle_keeps_uint32_counts_and_one_with_float64_counts_loads():
    """A pickle of this build keeps the uint32 counts; one of the build before (float64
    counts in the same layout) loads, predicts the same and streams on as uint32."""
    X, y = make_data(11, n_rows=600)
    X_test = make_test_rows(11)
    model = AODE().fit(X, y)
    restored = pickle.loads(pickle.dumps(model))
    assert restored._pairs["counts"].dtype == np.uint32
    np.testing.assert_array_equal(restored.predict_proba(X_test), model.predict_proba(X_test))
    np.testing.assert_array_equal(restored.pair_counts_, model.pair_counts_)
    old = dict(model.__getstate__())
    old["_pairs"] = {**old["_pairs"], "counts": old["_pairs"]["counts"].astype(np.float64)}
    previous = AODE.__new__(AODE)
    previous.__setstate__(pickle.loads(pickle.dumps(old)))
    assert previous._pairs["counts"].dtype == np.float64
    np.testing.assert_array_equal(previous.predict_proba(X_test), model.predict_proba(X_test))
    np.testing.assert_array_equal(previous.pair_counts_, model.pair_counts_)
    more, y_more = make_data(12, n_rows=200)
    previous.partial_fit(more, y_more)
    both = AODE().fit(np.vstack([X, more]), np.concatenate([y, y_more]))
    assert previous._pairs["counts"].dtype == np.uint32
    np.testing.assert_array_equal(previous.pair_counts_, both.pair_counts_)
    np.testing.assert_allclose(
        previous.predict_proba(X_test), both.predict_proba(X_test), atol=1e-12
    )


def test_pair_counts_of_another_type_are_a_value_error():
    from hebnb import _core

    X, y = make_data(13)
    model = AODE().fit(X, y)
    codes, _ = model._encode(make_test_rows(13))
    tables = {**model._pairs, "counts": model._pairs["counts"].astype(np.int64)}
    with pytest.raises(ValueError, match="uint32 or float64"):
        _core.aode_joint_log_likelihood(
            codes,
            model._model,
            tables,
            offsets=model._encoder.offsets,
            min_parent_count=0.0,
            n_jobs=1,
        )


def _bad_cells(tables: dict, how: str) -> dict:
    """A copy of pair tables with one fault of kind ``how`` among its cells."""
    indptr, indices = tables["indptr"].copy(), tables["indices"].copy()
    lengths = np.diff(indptr)
    row = int(np.flatnonzero(lengths >= 2)[0])
    first = int(indptr[row])
    if how == "unsorted":
        indices[first], indices[first + 1] = indices[first + 1], indices[first]
    elif how == "out of range":
        indices[first + 1] = 10_000  # above every child's cardinality
    else:  # a row pointer that falls, the ends kept
        indptr[row + 1] = indptr[row + 2] + 1
    return {**tables, "indptr": indptr, "indices": indices}


@pytest.mark.parametrize("how", ["unsorted", "out of range", "falling row pointers"])
def test_pair_tables_with_bad_cells_are_refused_checked_scored_or_loaded(how):
    """Bad cells are a ValueError from the check, from a score not told the cells were
    checked, and from loading a pickle that holds them (which the scorers then trust)."""
    from hebnb import _core

    X, y = make_data(14)
    model = AODE().fit(X, y)
    codes, _ = model._encode(make_test_rows(14))
    bad = _bad_cells(model._pairs, how)
    message = "child values out of range or unsorted|row pointers must rise"
    offsets, n_classes = list(model._encoder.offsets), model.classes_.shape[0]
    _core.check_aode_pair_tables(model._pairs, offsets=offsets, n_classes=n_classes)
    with pytest.raises(ValueError, match=message):
        _core.check_aode_pair_tables(bad, offsets=offsets, n_classes=n_classes)
    with pytest.raises(ValueError, match=message):
        _core.aode_joint_log_likelihood(
            codes, model._model, bad, offsets=offsets, min_parent_count=0.0, n_jobs=1
        )
    state = pickle.loads(pickle.dumps(model.__getstate__()))
    AODE.__new__(AODE).__setstate__(state)  # the good tables load
    with pytest.raises(ValueError, match=message):
        AODE.__new__(AODE).__setstate__({**state, "_pairs": bad})


@pytest.mark.parametrize(
    ("key", "table"),
    [
        ("indices", lambda t: t.astype(np.int64)),
        ("pairs", lambda t: t.ravel()),
        ("indptr", lambda t: t.astype(np.float64)),
    ],
)
def test_a_pickle_with_pair_tables_of_another_type_is_a_value_error_naming_them(key, table):
    model = AODE().fit(*make_data(16))
    state = model.__getstate__()
    bad = {**state["_pairs"], key: table(state["_pairs"][key])}
    with pytest.raises(ValueError, match=f'pair tables are invalid: "{key}": .*mismatch'):
        AODE.__new__(AODE).__setstate__({**state, "_pairs": bad})


def test_a_fitted_models_pair_tables_are_read_only():
    """The scorers trust the pair tables checked when they were made or loaded, so the
    model's own (which its public views can share) cannot be written, after a fit, a
    partial_fit or a pickle, and the model scores as before an attempt to write."""
    rng = np.random.default_rng(15)
    # values first seen in sorted order: the public views are the stored tables
    X = np.vstack([np.tile(np.arange(4.0), (3, 1)).T, rng.integers(0, 4, (300, 3))])
    y = np.concatenate([[0, 1, 0, 1], rng.integers(0, 2, 300)])
    weights = rng.uniform(0.5, 2.0, y.shape[0])  # float64 counts: no uint32 copy
    fitted = AODE().fit(X, y, sample_weight=weights)
    streamed = AODE().partial_fit(X[:100], y[:100], classes=[0, 1], sample_weight=weights[:100])
    streamed.partial_fit(X[100:], y[100:], sample_weight=weights[100:])
    for model in (fitted, streamed, pickle.loads(pickle.dumps(fitted))):
        before = model.predict_proba(X)
        stored = {key: table.copy() for key, table in model._pairs.items()}
        assert all(not table.flags.writeable for table in model._pairs.values())
        views = {"pair_features_": "pairs", "pair_indptr_": "indptr"}
        views.update({"pair_indices_": "indices", "pair_counts_": "counts"})
        for name, key in views.items():
            view = getattr(model, name)
            assert np.shares_memory(view, model._pairs[key])
            with pytest.raises(ValueError, match="read-only"):
                view[0] = view[0] + 1
        for key, table in model._pairs.items():
            np.testing.assert_array_equal(table, stored[key])
        np.testing.assert_array_equal(model.predict_proba(X), before)


def test_planned_pair_tables_take_the_stored_count_type():
    """The planned pair tables: per bounded cell, 4 + 8 C bytes for counting's blocks and
    4 + 4 C (uint32) or 4 + 8 C (float64) for the stored tables, as the weights decide."""
    from hebnb import _core

    k = np.array(WIDE_CARDINALITY)
    F, C, S = len(k), 3, 500
    offsets = [0, *np.cumsum(k).tolist()]
    capped, parents = np.zeros((F, F), dtype=bool), np.ones(F, dtype=bool)
    plan = {
        name: _core.aode_planned_bytes(
            offsets=offsets,
            capped=capped,
            parents=parents,
            n_rows=S,
            n_classes=C,
            stored_cells=0,
            weights=weights,
        )
        for name, weights in [
            ("unknown", None),
            ("whole", np.ones(S)),
            ("fractional", np.full(S, 0.5)),
        ]
    }
    bound = sum(min(S, k[a] * k[b]) for a, b in _pairs(F))
    assert plan["unknown"] == plan["fractional"]
    assert plan["unknown"]["pair_tables"] - plan["whole"]["pair_tables"] == bound * 4 * C
    X, y = make_data(14, n_rows=S, cardinality=WIDE_CARDINALITY)
    model = AODE().fit(X, y)
    held = sum(a.nbytes for a in model._pairs.values())
    assert model._pairs["counts"].dtype == np.uint32
    assert held <= plan["whole"]["pair_tables"]


def test_strings_and_dataframes():
    pd = pytest.importorskip("pandas")
    X, y = make_data(6)
    frame = pd.DataFrame(
        {
            f"f{f}": pd.Series(X[:, f]).map(lambda v: None if np.isnan(v) else f"v{v:.0f}")
            for f in range(4)
        }
    )
    labels = np.array(["a", "b", "c"])[y]
    by_frame = AODE().fit(frame, labels)
    by_array = AODE().fit(X, y)
    np.testing.assert_allclose(
        by_frame.predict_proba(frame.iloc[:20]), by_array.predict_proba(X[:20]), rtol=1e-12
    )
    assert list(by_frame.classes_) == ["a", "b", "c"]


# --------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {"smoothing": "heb-m"},
        {"prior": "global"},
        {"min_parent_count": -1},
        {"min_count": np.nan},
        {"concentration_bounds": (0, 1)},
        {"max_parent_cardinality": 0},
        {"max_parent_cardinality": 2.5},
        {"max_joint_cells": -5},
        {"handle_unknown": "skip"},
        {"n_jobs": 0},
        {"parent_smoothing": "m-estimate"},
    ],
)
def test_bad_parameters_are_value_errors(params):
    X, y = make_data(7, n_rows=50)
    with pytest.raises(ValueError):
        AODE(**params).fit(X, y)


def test_bad_data():
    X, y = make_data(8, n_rows=50)
    with pytest.raises(ValueError, match="greater than one"):
        AODE().fit(X, np.zeros(50))
    with pytest.raises(ValueError, match="fractional"):
        AODE().fit(X + 0.5, y)
    model = AODE(handle_unknown="error").fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])
    with pytest.raises(ValueError, match="unknown categories"):
        model.predict(np.full((1, 4), 99.0))


#: Checks that feed continuous floats (fractional values, which are not categories and
#: are refused with a clear error): as for CategoricalNB (tests/test_estimator_api.py).
#: What they protect is tested on categorical data here and there (weights, one class).
CONTINUOUS_ONLY_CHECKS = {
    "check_positive_only_tag_during_fit": "continuous floats are not categories",
    "check_sample_weight_equivalence_on_dense_data": "continuous floats are not categories",
    "check_classifiers_one_label_sample_weights": "continuous floats are not categories",
}


@parametrize_with_checks(
    [AODE(), AODE(smoothing="laplace", max_parent_cardinality=3)],
    expected_failed_checks=lambda estimator: CONTINUOUS_ONLY_CHECKS,
)
def test_scikit_learn_conformance(estimator, check):
    check(estimator)


def _cases_of(test_function) -> list:
    """The parameter sets of a parametrized CategoricalNB test, to run them on AODE too."""
    return [pytest.param(*case) for case in test_function.pytestmark[0].args[1]]


@pytest.mark.parametrize(
    "X_bad, y_bad, weights, message", _cases_of(test_bad_input.test_fit_rejects)
)
def test_same_fit_errors_as_categorical_nb(X_bad, y_bad, weights, message):
    with pytest.raises(ValueError, match=message):
        AODE().fit(X_bad, y_bad, sample_weight=weights)


def test_same_predict_errors_and_memory_limit_as_categorical_nb(monkeypatch):
    from sklearn.exceptions import NotFittedError

    from hebnb import _core, _encoding

    X, y = test_bad_input.X, test_bad_input.y
    with pytest.raises(NotFittedError):
        AODE().predict(X)
    with pytest.raises(ValueError, match="X has 3 features, but AODE is expecting 2"):
        AODE().fit(X, y).predict(np.zeros((2, 3), dtype=int))
    with pytest.raises(ValueError, match="summing to 1"):
        AODE(class_prior=[0.9, 0.3]).fit(X, y)
    # the pair kernel checks its codes too: a bad code never reads out of bounds
    codes = np.array([[0, 1], [0, 5]], dtype=np.int32)
    with pytest.raises(ValueError, match="category code 5 outside"):
        _core.count_pairs(
            codes,
            np.array([0, 1]),
            np.ones(2),
            offsets=[0, 2, 4],
            n_classes=2,
            capped=np.zeros((2, 2), dtype=bool),
            parents=np.ones(2, dtype=bool),
            n_jobs=1,
        )
    monkeypatch.setattr(_encoding, "memory_budget_bytes", lambda: 10 * 8 * _encoding.TABLE_COPIES)
    with pytest.raises(MemoryError, match="beyond what memory allows"):
        AODE().fit(np.arange(12).reshape(-1, 1), np.arange(12) % 2)


def test_bimodal_evidence_gets_the_global_maximum():
    # The evidence is not always unimodal. Class 0: parent value 0 with child (17, 17), value 1 with (2, 0), value 2 with (4, 0);
    # class 1 only sets the child's marginal. The evidence of class 0 rises toward
    # m_max = 1e4 but peaks higher near m = 1.1.
    rows = [(0, 0, 0)] * 17 + [(0, 0, 1)] * 17 + [(0, 1, 0)] * 2 + [(0, 2, 0)] * 4
    rows += [(1, 0, 0)] * 14 + [(1, 0, 1)] * 27
    y = np.array([r[0] for r in rows])
    X = np.array([[r[1], r[2]] for r in rows])
    model = AODE(prior="pooled").fit(X, y)
    table = np.array([[17.0, 17.0], [2.0, 0.0], [4.0, 0.0]])
    mean = np.bincount(X[:, 1]) / len(X)
    grid = np.exp(np.linspace(np.log(1e-2), np.log(1e4), 2000))
    best = max(evidence(m, table, mean) for m in grid)
    assert evidence(model.concentration_[0, 0, 1], table, mean) >= best - 1e-9 * abs(best)


def test_partial_fit_checks_parameters_on_every_call():
    rng = np.random.default_rng(0)
    X, y = rng.integers(0, 4, (100, 3)), rng.integers(0, 2, 100)
    model = AODE().partial_fit(X[:50], y[:50])
    with pytest.raises(ValueError, match="'smoothing' parameter"):
        model.set_params(smoothing="bogus").partial_fit(X[50:], y[50:])
    model = AODE().partial_fit(X[:50], y[:50])
    with pytest.raises(ValueError, match="min_parent_count"):
        model.set_params(min_parent_count=-3).partial_fit(X[50:], y[50:])


def test_a_pair_capped_once_stays_capped():
    """Lifting the cap mid-stream cannot model a pair whose earlier rows were never
    counted: the pair stays capped, and the model equals one capped fit on all rows."""
    rng = np.random.default_rng(0)
    X, y = rng.integers(0, 4, (200, 3)), rng.integers(0, 3, 200)
    streamed = AODE(max_parent_cardinality=2).fit(X, y)
    streamed.set_params(max_parent_cardinality=None).partial_fit(X[:10], y[:10])
    whole = AODE(max_parent_cardinality=2).fit(np.vstack([X, X[:10]]), np.concatenate([y, y[:10]]))
    np.testing.assert_array_equal(streamed.capped_, whole.capped_)
    np.testing.assert_allclose(streamed.predict_proba(X), whole.predict_proba(X), rtol=1e-10)


def test_pair_tables_beyond_memory_are_a_memory_error(tmp_path):
    """3,000 features give 4.5 million pairs: under a 3 GB address-space limit the fit is
    refused with MemoryError before allocating, instead of aborting the interpreter."""
    import subprocess
    import sys

    script = tmp_path / "wide.py"
    script.write_text(
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))\n"
        "import numpy as np\n"
        "from hebnb import AODE\n"
        "X = np.random.default_rng(0).integers(0, 3, (10, 3000))\n"
        "try:\n"
        "    AODE().fit(X, np.arange(10) % 2)\n"
        "except MemoryError as error:\n"
        "    print('MemoryError:', error)\n"
    )
    result = subprocess.run(
        [sys.executable, str(script)], check=False, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "MemoryError: the pair tables of 3000 features" in result.stdout


def test_max_parents_keeps_the_features_most_informative_about_the_class():
    """The super-parents are the k features of highest plug-in mutual information with
    the class (scikit-learn's mutual_info_score on the rows where the feature is present),
    ties to the lower index; pairs of two non-parents are not even stored, and the
    diagnostics have one row per super-parent."""
    from sklearn.metrics import mutual_info_score

    X, y = make_data(3, n_rows=600)
    information = []
    for f in range(X.shape[1]):
        present = ~np.isnan(X[:, f])
        information.append(mutual_info_score(y[present], X[present, f]))
    for k in (1, 2, 3, 4, 10):
        model = AODE(max_parents=k).fit(X, y)
        expected = np.zeros(X.shape[1], dtype=bool)
        expected[np.argsort(-np.asarray(information), kind="stable")[:k]] = True
        np.testing.assert_array_equal(model.super_parents_, expected)
        parents = np.flatnonzero(expected)
        n_features = X.shape[1]
        assert model.concentration_.shape == (len(model.classes_), len(parents), n_features)
        assert model.pooled_concentration_.shape == (len(parents), n_features)
        # row r is parent parents[r]: NaN on its own column only (nothing capped)
        for r, i in enumerate(parents):
            assert np.isnan(model.concentration_[:, r, i]).all()
            others = np.delete(model.concentration_[:, r], i, axis=1)
            assert np.isfinite(others).all()
        # the stored pairs: those with a super-parent, no pair of two non-parents
        stored = [(a, b) for a, b in _pairs(n_features) if expected[a] or expected[b]]
        assert [tuple(pair) for pair in model.pair_features_] == stored
        assert len(parents) == min(k, n_features)


def _pairs(n):
    return [(a, b) for a in range(n) for b in range(a + 1, n)]


@pytest.mark.parametrize("cardinality", [CARDINALITY, WIDE_CARDINALITY])
def test_a_capped_model_stores_only_what_scoring_reads(cardinality):
    """Child tables exist only for orientations that read a pair table (dense tables or
    sparse rows, by cardinality), none for capped ones or non-parents, so a model whose
    every pair is capped keeps none; the planned bytes bound what the model holds, within
    a sane factor."""
    from hebnb import _core

    X, y = make_data(5, n_rows=500, cardinality=cardinality)
    cases = [{}, {"max_parent_cardinality": 4}, {"max_parents": 2}, {"max_joint_cells": 1}]
    for params in cases + [{"max_parent_cardinality": 42}]:
        model = AODE(**params).fit(X, y)
        stored = _storage(model, len(y))
        if "max_joint_cells" in params:  # every pair capped
            assert model.capped_.sum() == len(cardinality) * (len(cardinality) - 1)
            assert stored == {"dense": 0, "sparse": 0}
            assert model.pair_indices_.size == 0
            # no pair is stored: not even row pointers
            assert model.pair_features_.shape == (0, 2)
            np.testing.assert_array_equal(model.pair_indptr_, [0])
        k = model.n_categories_
        planned = _core.aode_planned_bytes(
            offsets=list(np.concatenate([[0], np.cumsum(k)])),
            capped=model.capped_,
            parents=model.super_parents_,
            n_rows=500,
            n_classes=3,
            stored_cells=0,
        )
        held = sum(
            a.nbytes
            for a in [model.pair_indptr_, model.pair_indices_, model.pair_counts_]
            + [v for v in model._model.values() if isinstance(v, np.ndarray)]
        )
        assert planned["total"] >= held
        # an upper bound, not a gross overestimate of what is kept (the scorer's
        # per-thread buffers are a fixed allowance)
        assert planned["total"] - planned["scoring"] <= 40 * held + 2**20


def test_an_allocation_beyond_the_address_space_is_a_memory_error(tmp_path):
    """The core's own allocations are fallible: with the Python-side check bypassed and
    the address space limited to a little more than what is in use, fitting 1,000
    features, every one a super-parent (64 MB of dense child tables, 16 MB per (C, F, F)
    diagnostic table) raises MemoryError instead of aborting the interpreter (SIGABRT)."""
    import subprocess
    import sys

    script = tmp_path / "limited.py"
    script.write_text(
        "import resource\n"
        "import numpy as np\n"
        "from hebnb import _core\n"
        "F, S = 1000, 20\n"
        "codes = np.random.default_rng(0).integers(0, 2, (F, S)).astype(np.int32)\n"
        "labels = (np.arange(S) % 2).astype(np.int64)\n"
        "offsets = list(range(0, 2 * F + 1, 2))\n"
        "capped = np.zeros((F, F), dtype=bool)\n"
        "parents = np.ones(F, dtype=bool)\n"
        "class_count, counts = _core.count_categories(codes, labels, np.ones(S), offsets, 2, 1)\n"
        "tables = _core.count_pairs(codes, labels, np.ones(S), offsets=offsets, n_classes=2,\n"
        "    capped=capped, parents=parents, n_jobs=1)\n"
        "with open('/proc/self/statm') as f:\n"
        "    in_use = int(f.read().split()[0]) * resource.getpagesize()\n"
        "limit = in_use + 48 * 2**20\n"
        "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
        "try:\n"
        "    _core.fit_aode(class_count, counts, tables, offsets=offsets, capped=capped,\n"
        "        parents=parents, smoothing='laplace', parent_smoothing='laplace',\n"
        "        min_count=10.0, concentration_bounds=(1e-2, 1e4),\n"
        "        class_log_prior=[-0.7, -0.7], replace_class_prior=False, n_jobs=1)\n"
        "    print('fitted')\n"
        "except MemoryError as error:\n"
        "    print('MemoryError:', error)\n"
    )
    result = subprocess.run(
        [sys.executable, str(script)], check=False, capture_output=True, text=True
    )
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "MemoryError: cannot allocate" in result.stdout, result.stdout


def test_the_benchmarks_numpy_laplace_aode_is_the_same_model():
    """benches/numpy_aode.py, the plain-numpy Laplace AODE that benches/aode_dense_tables.py
    times hebnb against, gives hebnb's probabilities to 1e-12 (dense and sparse pairs in
    both, unknown values at predict)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))
    try:
        from numpy_aode import NumpyLaplaceAODE
    finally:
        sys.path.pop(0)
    rng = np.random.default_rng(7)
    for cardinality in [(3, 5, 8, 2), (60, 200, 4, 150)]:
        X = np.stack([rng.integers(0, k, 2000) for k in cardinality], axis=1)
        y = (X[:, 0] + X[:, 1] * (X[:, 2] + 1) + rng.integers(0, 3, 2000)) % 3
        X_test = np.stack([rng.integers(0, k + 2, 300) for k in cardinality], axis=1)
        ours = AODE(smoothing="laplace", parent_smoothing="laplace").fit(X, y)
        theirs = NumpyLaplaceAODE().fit(X, y)
        np.testing.assert_allclose(
            ours.predict_joint_log_proba(X_test),
            theirs.joint_log_likelihood(X_test),
            rtol=1e-12,
            atol=1e-12,
        )
        np.testing.assert_allclose(
            ours.predict_proba(X_test), theirs.predict_proba(X_test), rtol=0, atol=1e-12
        )


def test_tied_super_parents_do_not_depend_on_the_row_order():
    """Two features with the same counts tie on mutual information in every row order
    (the sum over values used to follow the order categories were first seen in, one ulp
    apart), so the lower index wins, as documented."""
    X = np.array([[3, 3], [1, 0], [3, 3], [0, 2], [1, 1], [2, 1], [1, 1]])
    y = np.array([0, 0, 0, 0, 0, 0, 1])
    reference = AODE(max_parents=1).fit(X, y)
    np.testing.assert_array_equal(reference.super_parents_, [True, False])
    for seed in range(40):
        order = np.random.default_rng(seed).permutation(len(y))
        model = AODE(max_parents=1).fit(X[order], y[order])
        np.testing.assert_array_equal(model.super_parents_, reference.super_parents_)
        np.testing.assert_allclose(
            model.predict_proba(X), reference.predict_proba(X), rtol=1e-12, atol=1e-15
        )


def test_a_flat_parent_evidence_gives_the_lower_bound():
    """Each value of each super-parent seen in one row: the parent term's evidence is flat
    in m (every document one row). It gave m_max for one feature and m_min for the other,
    as its gradient's rounding fell; SPEC's m_min for both now."""
    X = np.array([[12, np.nan], [18, 5], [np.nan, 4], [np.nan, 3], [np.nan, np.nan]])
    y = np.array([1, 0, 2, 1, 1])
    model = AODE(parent_smoothing="heb").fit(X, y)
    np.testing.assert_array_equal(model.parent_concentration_, [1e-2, 1e-2])
