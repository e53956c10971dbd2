"""AODE with discriminative weights: one per super-parent (``weighting="cll-feature"``,
hebnb.weighting.fit_parent_weights) and one per cell of every super-parent's tables
(``weighting="cll-value"``, hebnb.weighting.fit_aode_cell_weights). The parent terms and
cells against plain numpy counting, the weights against the same objective written here
and minimised by scipy on cross-fitted and left-out terms computed here, and identical
results for any n_jobs."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from scipy.optimize import check_grad, minimize
from scipy.special import log_softmax, logsumexp
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold

import hebnb.weighting
from aode_left_out_reference import left_out_terms
from hebnb import AODE, CategoricalNB, _core


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


def _scores_with_only_parent(model, codes, threads, parent):
    """The scorer's joint log-likelihood of ``codes`` with every other feature's parent
    counts set to -inf, so that only ``parent`` can qualify."""
    core_model = model._model
    parent_count = np.asarray(core_model["parent_count"], dtype=np.float64)
    offsets = list(model._encoder.offsets)
    own = slice(offsets[parent], offsets[parent + 1])
    only = np.full_like(parent_count, -np.inf)
    only[own] = parent_count[own]
    return _core.aode_joint_log_likelihood(
        codes,
        {**core_model, "parent_count": only},
        model._pair_tables(),
        offsets=offsets,
        min_parent_count=float(model.min_parent_count),
        n_jobs=threads,
    )


def _single_parent_terms(model, codes, threads):
    """Each super-parent's term by the per-parent path: the scorer with only that parent
    able to qualify, one call per super-parent."""
    parents = np.flatnonzero(model.super_parents_)
    terms = [_scores_with_only_parent(model, codes, threads, p) for p in parents]
    return np.stack(terms, axis=1)


def _single_parent_cells(model, codes, threads, parent):
    """Super-parent ``parent``'s cells by the per-parent path: each distinct parent value
    u and each distinct (j, u, v) scored as a synthetic row holding only x_i = u (and
    x_j = v) with ``parent`` the only qualifying parent; ``ln P(y, u) - ln pi_y`` from the
    first score, ``ln P(v | y, u)`` as the difference of the two. Returns (qualifies,
    cells (S, F, C))."""
    n_features, n_rows = codes.shape
    n_classes = model.classes_.shape[0]
    offsets = list(model._encoder.offsets)
    cardinality = np.diff(offsets)
    core_model = model._model
    parent_count = np.asarray(core_model["parent_count"], dtype=np.float64)
    start = offsets[parent]
    values = codes[parent].astype(np.int64)
    qualifies = values >= 0
    qualifies[qualifies] = parent_count[start + values[qualifies]] >= model.min_parent_count
    rows = np.flatnonzero(qualifies)
    cells = np.zeros((n_rows, n_features, n_classes))
    if rows.size == 0:
        return qualifies, cells
    distinct_parents, parent_of_row = np.unique(values[rows], return_inverse=True)
    blocks = [(parent, distinct_parents, None)]
    children = []
    for j in range(n_features):
        if j == parent:
            continue
        child = codes[j, rows].astype(np.int64)
        present = child >= 0
        keys = values[rows] * cardinality[j] + child
        distinct, position = np.unique(keys[present], return_inverse=True)
        blocks.append((j, distinct // cardinality[j], distinct % cardinality[j]))
        children.append((j, present, position))
    synthetic = np.full((n_features, sum(b[1].shape[0] for b in blocks)), -1, dtype=np.int32)
    first = [0]
    for j, parent_codes, child_codes in blocks:
        at = slice(first[-1], first[-1] + parent_codes.shape[0])
        synthetic[parent, at] = parent_codes
        if child_codes is not None:
            synthetic[j, at] = child_codes
        first.append(at.stop)
    scores = _scores_with_only_parent(model, synthetic, threads, parent)
    alone = scores[: distinct_parents.shape[0]]
    cells[rows, parent] = alone[parent_of_row] - model.class_log_prior_
    for block, (j, present, position) in enumerate(children, start=1):
        with_child = scores[first[block] : first[block + 1]]
        difference = with_child - alone[np.searchsorted(distinct_parents, blocks[block][1])]
        column = np.zeros((rows.shape[0], n_classes))
        column[present] = difference[position]
        cells[rows, j] = column
    return qualifies, cells


def _wide_data(seed=4, n_rows=600):
    """_data plus two features of 70 values (their pair is stored sparse) and a column
    whose values are mostly rare."""
    X, y = _data(seed=seed, n_rows=n_rows)
    rng = np.random.default_rng(seed)
    e = (X[:, 0] * 23 + rng.integers(0, 23, n_rows)) % 70
    f = (e + y * rng.integers(0, 2, n_rows) + rng.integers(0, 40, n_rows)) % 70
    g = np.where(rng.random(n_rows) < 0.5, rng.integers(0, 200, n_rows), 0)
    return np.column_stack([X, e, f, g]), y


@pytest.mark.parametrize(
    "params",
    [
        {"smoothing": "laplace", "parent_smoothing": "laplace"},
        {"parent_smoothing": "heb", "min_parent_count": 3},
        {"prior": "pooled", "max_joint_cells": 500, "max_parents": 5},
    ],
)
def test_the_all_parents_pass_equals_the_single_parent_path(params):
    """``_core.aode_parent_terms`` (one pass, every super-parent) against one masked
    scoring call per parent, and its cells against the synthetic-row scores: the same
    numbers bit for bit, for any n_jobs; rows with unknown values and parents that do not
    qualify included."""
    X, y = _wide_data()
    model = AODE(**params).fit(X[:400], y[:400])
    codes, threads = model._encode(X[400:])  # unseen values: code -1
    assert (codes < 0).any()
    parents = np.flatnonzero(model.super_parents_)

    def parent_terms(cells, n_jobs):
        return _core.aode_parent_terms(
            codes,
            model._model,
            model._pair_tables(),
            offsets=list(model._encoder.offsets),
            min_parent_count=float(model.min_parent_count),
            cells=cells,
            n_jobs=n_jobs,
        )

    outputs = [parent_terms(True, n_jobs) for n_jobs in (1, 2)]
    assert set(outputs[0]) == {"terms", "qualifies", "cells", "numbered_cells", "cell_sums"}
    terms, qualifies, cells = (outputs[0][key] for key in ("terms", "qualifies", "cells"))
    for key in outputs[0]:
        np.testing.assert_array_equal(outputs[0][key], outputs[1][key])
    assert cells.shape == (codes.shape[1], parents.shape[0], codes.shape[0], 3)
    np.testing.assert_array_equal(terms, _single_parent_terms(model, codes, threads))
    assert not qualifies.all()
    for rank, i in enumerate(parents):
        expected_qualifies, expected_cells = _single_parent_cells(model, codes, threads, i)
        np.testing.assert_array_equal(qualifies[:, rank], expected_qualifies)
        np.testing.assert_array_equal(cells[:, rank], expected_cells)
    # without cells: the same terms
    alone = parent_terms(False, 1)
    np.testing.assert_array_equal(alone["terms"], terms)
    assert alone["cells"].shape == (0,) + cells.shape[1:]


@pytest.mark.parametrize(
    "params",
    [
        {"smoothing": "laplace", "parent_smoothing": "heb"},
        {"min_parent_count": 3},
        {"prior": "pooled", "max_joint_cells": 500, "max_parents": 5},
    ],
)
@pytest.mark.parametrize("left_out", [None, "equal weights", "unequal weights"])
def test_numbered_cells_are_those_of_the_whole_array(params, left_out):
    """A numbering of the rows' cells (``cell_numbers``, ...) gives each cell's value as
    the whole array has it on every row that uses it (each cell evaluated once), bit for
    bit for any n_jobs, with the same terms and qualification; with left-out rows the terms
    are corrected from these values instead of the scored rows' cells, to the same bits
    (with equal weights and one prior mean, from each cell's parts computed once per
    class). Dense, sparse and capped pairs, rare values and parents that do not qualify
    included."""
    X, y = _wide_data()
    weights = np.ones(400)
    if left_out == "unequal weights":
        weights = np.random.default_rng(7).uniform(0.5, 2.0, 400)
    model = AODE(**params).fit(X[:400], y[:400], sample_weight=weights)
    codes, _ = model._encode(X[:400])
    labels = np.searchsorted(model.classes_, y[:400])
    rows_left_out = model._left_out_rows(labels, weights) if left_out else None
    parents = np.flatnonzero(model.super_parents_)
    keys = hebnb.weighting.aode_cell_keys(codes, parents, model.n_categories_)
    cells, starts, _, first_row = hebnb.weighting.number_cells(keys)
    numbered = {
        "cell_numbers": np.ascontiguousarray(cells.T),
        "cell_column_starts": starts,
        "cell_first_rows": first_row,
    }

    def call(n_jobs, **more):
        return _core.aode_parent_terms(
            codes,
            model._model,
            model._pair_tables(),
            offsets=list(model._encoder.offsets),
            min_parent_count=float(model.min_parent_count),
            n_jobs=n_jobs,
            left_out=rows_left_out,
            **more,
        )

    whole = call(1, cells=True)
    by_column = whole["cells"].reshape(codes.shape[1], cells.shape[1], -1)
    # where the parent qualifies, every use of a cell has the cell's value
    n_features = codes.shape[0]
    qualifying = whole["qualifies"][:, np.arange(cells.shape[1]) // n_features] & (cells >= 0)
    rows, columns = np.nonzero(qualifying)
    for n_jobs in (1, 2):
        some = call(n_jobs, cells=False, **numbered)
        values = some["numbered_cells"]
        assert values.shape == (starts[-1], 3)
        np.testing.assert_array_equal(values[cells[rows, columns]], by_column[rows, columns])
        # and a cell whose parent does not qualify is zero
        column_of_cell = np.repeat(np.arange(cells.shape[1]), np.diff(starts))
        idle = ~whole["qualifies"][first_row, column_of_cell // n_features]
        np.testing.assert_array_equal(values[idle], 0.0)
        np.testing.assert_array_equal(some["terms"], whole["terms"])
        np.testing.assert_array_equal(some["qualifies"], whole["qualifies"])
        assert some["cells"].shape == (0,) + whole["cells"].shape[1:]
        # without the in-sample terms the rows are not scored (left-out terms still are)
        unscored = call(n_jobs, cells=False, in_sample_terms=False, **numbered)
        np.testing.assert_array_equal(unscored["numbered_cells"], values)
        np.testing.assert_array_equal(unscored["qualifies"], whole["qualifies"])
        expected_terms = whole["terms"] if left_out else np.zeros_like(whole["terms"])
        np.testing.assert_array_equal(unscored["terms"], expected_terms)
    assert np.abs(values).sum() > 0
    if "min_parent_count" in params:
        assert idle.any()
    assert call(1, cells=False)["numbered_cells"].shape == (0, 3)
    with pytest.raises(ValueError, match="numbered cells have shape"):
        call(1, cells=False, **{**numbered, "cell_numbers": numbered["cell_numbers"][:, 1:]})
    with pytest.raises(ValueError, match="increasing starts"):
        call(1, cells=False, **{**numbered, "cell_column_starts": starts[:-1]})
    with pytest.raises(ValueError, match="first row 400 is outside the 400 rows"):
        call(1, cells=False, **{**numbered, "cell_first_rows": np.full(starts[-1], 400)})
    with pytest.raises(ValueError, match="not more than one"):
        call(1, cells=True, **numbered)
    with pytest.raises(ValueError, match="go together"):
        call(1, cells=False, cell_numbers=numbered["cell_numbers"])
    # a row's cell outside its column's is refused
    wrong = numbered["cell_numbers"].copy()
    wrong[0, 0] = starts[-1] - 1
    with pytest.raises(ValueError, match="cell .* of row 0 is not one of column 0's cells"):
        call(1, cells=False, **{**numbered, "cell_numbers": wrong})


def _new_rows_cells(count_features=False):
    """A cell-weighted model and one batch of new rows' inputs to the cell lookups: keys
    (s, P F), the model's cell numbering, qualifies (s, P) and cells (s, P F, C)."""
    X, y = _wide_data()
    model = AODE(smoothing="laplace", weighting="cll-value", count_features=count_features).fit(
        X[:400], y[:400]
    )
    codes, threads = model._encode(X[400:])
    parents = np.flatnonzero(model.super_parents_)
    keys = hebnb.weighting.aode_cell_keys(codes, parents, np.diff(model._encoder.offsets))
    rows, terms, qualifies, values = next(model._parent_cells(codes, threads))
    assert rows == slice(0, codes.shape[1])
    return model, codes, keys, qualifies, values.reshape(terms.shape[0], -1, 3)


def test_new_rows_cells_are_those_numpy_looks_up():
    """``_core.seen_cells`` against a search of every column's sorted keys in numpy: the
    same uses in the same order (column by column, rows in order), for any n_jobs."""
    model, codes, keys, qualifies, values = _new_rows_cells()
    n_features = codes.shape[0]
    starts = [0, *np.cumsum([k.shape[0] for k in model._cell_keys]).tolist()]
    row, cell, value = [], [], []
    for k, known in enumerate(model._cell_keys):
        position = np.searchsorted(known, keys[:, k])
        found = (keys[:, k] >= 0) & (position < known.shape[0])
        found[found] = known[position[found]] == keys[found, k]
        used = np.flatnonzero(found & qualifies[:, k // n_features])
        row.append(used)
        cell.append(starts[k] + position[used])
        value.append(values[used, k])
    expected = [np.concatenate(row), np.concatenate(cell), np.concatenate(value)]
    assert expected[0].shape[0] > 1000 and not qualifies.all()
    numbering = _core.CellNumbering(np.concatenate(model._cell_keys), starts)
    assert (numbering.n_columns, numbering.n_cells) == (len(starts) - 1, starts[-1])
    assert numbering.column_starts == starts
    for n_jobs in (1, 2):
        seen = _core.seen_cells(keys.T, numbering, qualifies, values, n_jobs=n_jobs)
        for key, reference in zip(("row", "cell", "value"), expected):
            np.testing.assert_array_equal(seen[key], reference)
    fewer = _core.CellNumbering(np.concatenate(model._cell_keys), starts[:-1])
    with pytest.raises(ValueError, match="do not agree"):
        _core.seen_cells(keys.T, fewer, qualifies, values, n_jobs=1)


@pytest.mark.parametrize("count_features", [False, True])
def test_new_rows_scores_sum_the_weighted_cells_as_before(count_features):
    """The core sums each row's weighted cells as it scores the rows, in column order
    from 0, so the scores of new rows are bit for bit those summed from
    ``_core.seen_cells``' uses (what cross-validating the cell penalty reads at several
    weights), for any n_jobs."""
    model, codes, keys, qualifies, values = _new_rows_cells(count_features)
    starts = [0, *np.cumsum([k.shape[0] for k in model._cell_keys]).tolist()]
    all_keys = np.concatenate(model._cell_keys)
    seen = _core.seen_cells(
        keys.T, _core.CellNumbering(all_keys, starts), qualifies, values, n_jobs=1
    )
    n_parents = qualifies.shape[1]
    terms = model.cell_weights_[seen["cell"]] * (seen["value"] / n_parents)
    expected = np.column_stack(
        [np.bincount(seen["row"], weights=terms[:, c], minlength=keys.shape[0]) for c in range(3)]
    )

    def weighted(n_jobs, weights=model.cell_weights_, starts=starts, codes=codes, **more):
        return hebnb.weighting.aode_parent_cells(
            codes,
            *model._scorer_tables(),
            n_jobs,
            cell_weights=(_core.CellNumbering(all_keys, starts), weights),
            **more,
        )

    for n_jobs in (1, 2):
        _, qualifies_, sums = weighted(n_jobs)
        np.testing.assert_array_equal(sums, expected)
        np.testing.assert_array_equal(qualifies_, qualifies)
    assert np.abs(expected).sum() > 0
    threads = 2
    np.testing.assert_array_equal(
        model._cell_weighted_scores(codes, threads),
        model._score_seen_cells(
            model._seen_cells(codes, threads, model._cell_keys), codes.shape[1]
        ),
    )
    assert weighted(1, codes=np.ascontiguousarray(codes[:, :0]))[2].shape == (0, 3)
    with pytest.raises(ValueError, match="do not agree"):
        weighted(1, weights=model.cell_weights_[:-1])
    with pytest.raises(ValueError, match="do not agree"):
        weighted(1, starts=starts[:-1])
    with pytest.raises(ValueError, match="not increasing"):
        weighted(1, starts=[0, *starts[2:], starts[-1]])
    rows_left_out = model._left_out_rows(
        np.zeros(codes.shape[1], dtype=np.int64), np.ones(codes.shape[1])
    )
    with pytest.raises(ValueError, match="without left-out rows"):
        weighted(1, left_out=rows_left_out)
    with pytest.raises(ValueError, match="not both"):
        no_numbering = (np.zeros((codes.shape[1], 0), dtype=np.int64), [0], np.zeros(0))
        weighted(1, numbered=no_numbering)
    # a numbering without cells: every row's sum is zero, one per class
    no_cells = (np.zeros(0, dtype=np.int64), [0] * len(starts), np.zeros((0, 3)))
    _, _, sums = hebnb.weighting.aode_parent_cells(
        codes,
        *model._scorer_tables(),
        1,
        cell_weights=(_core.CellNumbering(*no_cells[:2]), no_cells[2]),
    )
    np.testing.assert_array_equal(sums, np.zeros((codes.shape[1], 3)))


def test_weighted_cells_of_high_cardinality_columns_are_searched_as_the_dense_ones():
    """Columns whose keys are too sparse for a direct table (high-cardinality pairs) are
    searched: each row's weighted sum equals a sum over the cells numpy finds by
    ``searchsorted``, on data with both kinds of column."""
    rng = np.random.default_rng(3)
    n = 600
    X = np.column_stack(
        [rng.integers(0, 300, n), rng.integers(0, 200, n), rng.integers(0, 3, n)]
    ).astype(str)
    y = (rng.random(n) < 0.5 + 0.3 * (X[:, 2] == "0")).astype(int)
    model = AODE(smoothing="laplace", weighting="cll-value", handle_unknown="ignore").fit(
        X[:400], y[:400]
    )
    codes, threads = model._encode(X[400:])
    parents = np.flatnonzero(model.super_parents_)
    keys = hebnb.weighting.aode_cell_keys(codes, parents, np.diff(model._encoder.offsets))
    _, terms, qualifies, values = next(model._parent_cells(codes, threads))
    values = values.reshape(terms.shape[0], -1, 2)
    starts = [0, *np.cumsum([k.shape[0] for k in model._cell_keys]).tolist()]
    n_features = codes.shape[0]
    expected = np.zeros((codes.shape[1], 2))
    sparse_columns = dense_columns = 0
    for k, known in enumerate(model._cell_keys):
        sparse = known.shape[0] > 0 and known[-1] + 1 > 4 * known.shape[0] + 64
        sparse_columns += sparse
        dense_columns += known.shape[0] > 0 and not sparse
        position = np.searchsorted(known, keys[:, k])
        found = (keys[:, k] >= 0) & (position < known.shape[0])
        found[found] = known[position[found]] == keys[found, k]
        found &= qualifies[:, k // n_features]
        weights = model.cell_weights_[starts[k] + position[found]]
        expected[found] += weights * (values[found, k] / parents.shape[0])
    assert sparse_columns > 0 and dense_columns > 0 and np.abs(expected).sum() > 0
    _, _, sums = hebnb.weighting.aode_parent_cells(
        codes,
        *model._scorer_tables(),
        threads,
        cell_weights=(
            _core.CellNumbering(np.concatenate(model._cell_keys), starts),
            model.cell_weights_,
        ),
    )
    np.testing.assert_array_equal(sums, expected)


def test_the_all_parents_cells_are_the_counted_laplace_cells():
    """The cells of the one pass against Laplace AODE counted in numpy."""
    X, y = _data(seed=3)
    model = AODE(smoothing="laplace", parent_smoothing="laplace").fit(X, y)
    codes, threads = model._encode(X)
    terms, qualifies, cells = hebnb.weighting.aode_parent_cells(
        codes,
        model._model,
        model._pair_tables(),
        list(model._encoder.offsets),
        float(model.min_parent_count),
        threads,
    )
    expected = _laplace_cells(X, y, X, 3)
    assert qualifies.all()
    np.testing.assert_allclose(cells, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(terms, expected.sum(axis=2) + model.class_log_prior_, rtol=1e-10)


def _held_out_splits(X, y, rows):
    """``(training rows, held rows)`` of the weights' held-out terms: the five
    cross-fitting folds, or (``rows="leave-one-out"``) every row alone."""
    if rows == "leave-one-out":
        return [(np.flatnonzero(np.arange(len(y)) != s), np.array([s])) for s in range(len(y))]
    return list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))


def _cross_fitted_terms(X, y, params):
    """The training rows' parent terms from models fitted on the other folds."""
    terms = np.zeros((X.shape[0], X.shape[1], 3))
    for train, held in _held_out_splits(X, y, "cross-fitted"):
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


@pytest.mark.parametrize("rows", ["cross-fitted", "leave-one-out"])
@pytest.mark.parametrize(
    "params,penalty",
    [
        ({"smoothing": "laplace", "parent_smoothing": "laplace"}, 1.0),
        ({"smoothing": "heb", "parent_smoothing": "heb"}, 0.3),
    ],
)
def test_parent_weights_minimise_the_held_out_conditional_likelihood(params, penalty, rows):
    X, y = _data(seed=1)
    model = AODE(
        **params,
        weighting="cll-feature",
        weighting_rows=rows,
        penalty=penalty,
        weighting_tol=1e-12,
    ).fit(X, y)
    full = AODE(**params).fit(X, y)
    if rows == "leave-one-out":
        terms = left_out_terms(full, X, y)
    else:
        terms = _cross_fitted_terms(X, y, params)
    if params["smoothing"] == "laplace":  # the terms themselves, counted independently
        for train, held in _held_out_splits(X, y, rows):
            np.testing.assert_allclose(
                terms[held], _laplace_terms(X[train], y[train], X[held], 3), rtol=1e-10
            )
    expected = _reference_weights(terms, y, model.class_log_prior_, penalty, np.ones(len(y)))
    np.testing.assert_allclose(model.class_weights_, expected[:3], atol=1e-6)
    np.testing.assert_allclose(model.parent_weights_, expected[3:], atol=1e-6)
    assert not np.allclose(model.parent_weights_, 1.0)
    # prediction: the weighted log-linear score of the full model's terms
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


@pytest.mark.parametrize("weighting", ["cll-feature", "cll-value"])
def test_cross_fitted_folds_score_the_full_models_super_parents(weighting):
    """With ``max_parents``, a fold's own choice of super-parents can differ from the full
    model's; the fold models score the full model's, so that each weight is fitted on its
    own feature's held-out terms: the cll-feature weights equal those fitted here on
    terms of fold models with every feature a super-parent, the full model's columns
    kept."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    X = np.column_stack(
        [
            np.where(rng.random(300) < 0.80, y, 1 - y),  # strong
            np.where(rng.random(300) < 0.62, y, 1 - y),  # two near-tied weak features
            np.where(rng.random(300) < 0.62, y, 1 - y),
            rng.integers(0, 3, 300),  # noise
        ]
    )
    model = AODE(max_parents=2, weighting=weighting, weighting_rows="cross-fitted").fit(X, y)
    parents = np.flatnonzero(model.super_parents_)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    chosen = [np.flatnonzero(AODE(max_parents=2).fit(X[t], y[t]).super_parents_) for t, _ in folds]
    assert any(not np.array_equal(c, parents) for c in chosen)  # the case in question
    # every fold model the fit made scores the full model's super-parents
    captured = []
    original = AODE._cross_fitted_models

    def capture(self, *args):
        out = original(self, *args)
        captured.extend(fold.super_parents_ for _, _, fold in out)
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AODE, "_cross_fitted_models", capture)
        AODE(max_parents=2, weighting=weighting, weighting_rows="cross-fitted").fit(X, y)
    assert len(captured) == 5
    for fold_parents in captured:
        np.testing.assert_array_equal(fold_parents, model.super_parents_)
    if weighting == "cll-feature":
        codes, threads = model._encode(X)
        terms = model._parent_terms(codes, threads)
        for train, held in folds:
            fold = AODE().fit(X[train], y[train])
            terms[held] = fold._parent_terms(fold._encode(X[held])[0], threads)[:, parents]
        labels = np.searchsorted(model.classes_, y)
        expected = hebnb.weighting.fit_parent_weights(
            terms,
            labels,
            np.ones(300),
            model.class_log_prior_,
            penalty=hebnb.weighting.resolve_penalty(None),
            tol=1e-4,
        )
        np.testing.assert_allclose(model.parent_weights_, expected.feature_weights, rtol=1e-12)


@pytest.mark.parametrize(
    "params",
    [
        {"weighting": "cll-feature"},
        {"weighting": "cll-value"},
        {"weighting": "cll-value", "smoothing": "laplace", "cell_penalty": "cv"},
    ],
)
def test_rows_of_zero_weight_are_rows_dropped(params):
    """scikit-learn's convention, which the unweighted model keeps: rows of weight zero
    shaped the folds of the cross-fitting and of the cell penalty's cross-validation."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(200, 4))
    y = np.digitize(X[:, 0] + (X[:, 1] == 2) + rng.normal(0, 0.7, 200), [1.0, 2.2])
    weights = (rng.random(200) > 0.3).astype(float)
    kept = weights > 0
    with_zeros = AODE(**params).fit(X, y, sample_weight=weights)
    dropped = AODE(**params).fit(X[kept], y[kept])
    np.testing.assert_allclose(with_zeros.predict_proba(X), dropped.predict_proba(X), atol=1e-12)


def test_weighting_hides_partial_fit_and_is_dropped_by_a_plain_refit():
    X, y = _data(seed=3, n_rows=200)
    assert not hasattr(AODE(weighting="cll-feature"), "partial_fit")
    with pytest.raises(AttributeError) as raised:
        AODE(weighting="cll-feature").partial_fit(X, y, classes=[0, 1, 2])
    assert "partial_fit does not support weighting" in str(raised.value.__cause__)
    model = AODE(weighting="cll-feature").fit(X, y)
    assert hasattr(model, "parent_weights_")
    model.set_params(weighting=None).fit(X, y)
    assert not hasattr(model, "parent_weights_")
    np.testing.assert_array_equal(model.predict_proba(X), AODE().fit(X, y).predict_proba(X))


@pytest.mark.parametrize(
    "params,message",
    [
        ({"weighting": "cll-cell"}, "'weighting' parameter"),
        ({"weighting": "cll-feature", "penalty": -1.0}, "'penalty' parameter"),
        ({"weighting": "cll-feature", "weighting_tol": 0.0}, "'weighting_tol' parameter"),
    ],
)
def test_bad_weighting_parameters_are_value_errors(params, message):
    X, y = _data(seed=4, n_rows=60)
    with pytest.raises(ValueError, match=message):
        AODE(**params).fit(X, y)


def _laplace_cells(X_train, y_train, X, n_classes):
    """Each row's cells of every super-parent i, Laplace AODE counted in numpy (SPEC eqs.
    8-9): ``out[s, i, j] = ln P(x_j | c, x_i)`` for j != i and ``out[s, i, i] =
    ln P(c, x_i) - ln pi_c`` with pi_c = (N_c + 1) / (S + C); every value present."""
    n_rows, n_features = X.shape
    cards = X_train.max(axis=0) + 1
    log_prior = np.log(
        (np.bincount(y_train, minlength=n_classes) + 1.0) / (len(y_train) + n_classes)
    )
    out = np.zeros((n_rows, n_features, n_features, n_classes))
    for i in range(n_features):
        same_parent = X_train[:, [i]] == X[:, i]  # (train, rows)
        for c in range(n_classes):
            both = (y_train == c)[:, None] & same_parent
            parent = (both.sum(axis=0) + 1.0) / (len(y_train) + n_classes * cards[i])
            out[:, i, i, c] = np.log(parent) - log_prior[c]
            for j in range(n_features):
                if j != i:
                    joint = np.sum(both & (X_train[:, [j]] == X[:, j]), axis=0)
                    out[:, i, j, c] = np.log((joint + 1.0) / (both.sum(axis=0) + cards[j]))
    return out


def _count_reference(X_train, X, leave_out):
    """``count_features``' raw features, counted directly: for every pair ``i <= j`` of
    the 4 features (``i = j``: the value alone), ``ln(1 + n)`` of how many
    training rows share the row's values, the row itself left out (``leave_out``)."""
    columns = []
    for i in range(4):
        for j in range(i, 4):
            same = (X_train[:, [i]] == X[:, i]) & (X_train[:, [j]] == X[:, j])
            n = same.sum(axis=0) - (1 if leave_out else 0)
            columns.append(np.log1p(n))
    return np.column_stack(columns)


def _cell_reference(
    X,
    y,
    penalty,
    cell_penalty,
    n_classes=3,
    details=None,
    sample_weight=None,
    gradient=1e-7,
    counts=False,
    rows="cross-fitted",
):
    """The cll-value weights of Laplace AODE, written directly: the super-parent terms
    cross-fitted (``rows="leave-one-out"``: each row's from the other rows), the cells of
    the full model, the objective in numpy, minimised by scipy.
    Returns ``(a, v, {(i, j, x_i, x_j): d[c]})``; a ``details`` dict receives the rows'
    scores at the optimum. ``sample_weight`` weighs the rows' likelihood terms only (the
    tables and cells stay those of every row); ``gradient``: the largest gradient entry
    the scipy optimum may keep. ``counts``: with ``count_features``' weights ``b`` (in
    ``details``, with the features' centre and scale), penalised by ``cell_penalty``
    times their number."""
    if sample_weight is None:
        sample_weight = np.ones(len(y))
    n_rows, n_features = X.shape
    log_prior = np.log((np.bincount(y, minlength=n_classes) + 1.0) / (n_rows + n_classes))
    terms = np.zeros((n_rows, n_features, n_classes))
    for train, held in _held_out_splits(X, y, rows):
        assert all(set(X[train, f]) == set(X[:, f]) for f in range(n_features))
        fold_prior = np.log(
            (np.bincount(y[train], minlength=n_classes) + 1.0) / (len(train) + n_classes)
        )
        terms[held] = _laplace_cells(X[train], y[train], X[held], n_classes).sum(axis=2)
        terms[held] += fold_prior
    likelihood = (terms - log_prior) / n_features
    values = _laplace_cells(X, y, X, n_classes) / n_features  # (S, P, F, C)
    # one cell per (i, j, x_i, x_j) seen in training (x_j = x_i at j = i), per class
    keys = sorted(
        {(i, j, X[s, i], X[s, j]) for s in range(n_rows) for i in range(4) for j in range(4)}
    )
    index = {key: e for e, key in enumerate(keys)}
    cell_of = np.array(
        [
            [[index[(i, j, X[s, i], X[s, j])] for j in range(4)] for i in range(4)]
            for s in range(n_rows)
        ]
    )  # (S, P, F)
    scale = np.zeros((len(keys), n_classes))
    scale[cell_of] = values**2
    scale += 1e-12
    targets = np.eye(n_classes)[y]
    n_head = n_classes + n_features
    n_cell_weights = len(keys) * n_classes
    features = np.zeros((n_rows, 0))
    if counts:
        raw = _count_reference(X, X, leave_out=True)
        centre, spread = raw.mean(axis=0), raw.std(axis=0)
        feature_scale = np.where(spread > 0, 1.0 / np.where(spread > 0, spread, 1.0), 0.0)
        features = (raw - centre) * feature_scale
    n_counted = features.shape[1]

    def objective(theta):
        a, v = theta[:n_classes], theta[n_classes:n_head]
        d = theta[n_head : n_head + n_cell_weights].reshape(len(keys), n_classes)
        b = theta[n_head + n_cell_weights :].reshape(n_counted, n_classes)
        scores = a * log_prior + np.einsum("spc,p->sc", likelihood, v)
        scores += np.sum(d[cell_of] * values, axis=(1, 2))
        scores += features @ b
        log_p = log_softmax(scores, axis=1)
        residual = sample_weight[:, None] * (np.exp(log_p) - targets)
        grad_d = np.zeros_like(d)
        np.add.at(grad_d, cell_of, residual[:, None, None, :] * values)
        value = -np.sum(sample_weight[:, None] * targets * log_p)
        value += 0.5 * penalty * (np.sum((a - 1) ** 2) + np.sum((v - 1) ** 2))
        value += 0.5 * cell_penalty * np.sum(scale * d**2)
        value += 0.5 * cell_penalty * n_counted * np.sum(b**2)
        grad = np.concatenate(
            [
                residual.sum(axis=0) * log_prior + penalty * (a - 1),
                np.einsum("sc,spc->p", residual, likelihood) + penalty * (v - 1),
                (grad_d + cell_penalty * scale * d).ravel(),
                (features.T @ residual + cell_penalty * n_counted * b).ravel(),
            ]
        )
        return value, grad

    start = np.concatenate(
        [np.ones(n_head), np.zeros(n_cell_weights), np.zeros(n_counted * n_classes)]
    )
    assert check_grad(lambda t: objective(t)[0], lambda t: objective(t)[1], start + 0.05) < 1e-4
    # minimised over the deviations in score units, d sqrt(scale): the same minimiser,
    # better conditioned (a cell with a small value has a flat deviation)
    unit = np.concatenate(
        [np.ones(n_head), 1.0 / np.sqrt(scale.ravel()), np.ones(n_counted * n_classes)]
    )

    def scaled(beta):
        value, grad = objective(beta * unit)
        return value, grad * unit

    beta = start
    for _ in range(5):  # restarts, until the gradient is at rounding level
        beta = minimize(
            scaled,
            beta,
            jac=True,
            method="L-BFGS-B",
            options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 20000, "maxcor": 30},
        ).x
        if np.max(np.abs(objective(beta * unit)[1])) < 1e-9:
            break
    theta = beta * unit
    assert np.max(np.abs(objective(theta)[1])) < gradient
    a, v = theta[:n_classes], theta[n_classes:n_head]
    d = theta[n_head : n_head + n_cell_weights].reshape(len(keys), n_classes)
    b = theta[n_head + n_cell_weights :].reshape(n_counted, n_classes)
    if details is not None:
        scores = a * log_prior + np.einsum("spc,p->sc", likelihood, v)
        scores += np.sum(d[cell_of] * values, axis=(1, 2)) + features @ b
        details.update(scores=scores)
        if counts:
            details.update(count_weights=b, centre=centre, feature_scale=feature_scale)
    return a, v, {key: d[e] for key, e in index.items()}


def _model_cell_weights(model):
    """The model's cell weights keyed by (i, j, x_i, x_j) in the original values."""
    n_features = model.n_features_in_
    cards = model.n_categories_
    # the category of every code (codes by first appearance, categories_ sorted)
    value = [np.empty(k, dtype=object) for k in cards]
    for f, k in enumerate(cards):
        value[f][np.asarray(model._encoder.sorted_order(f))] = list(model.categories_[f])
    out, e = {}, 0
    for k, keys in enumerate(model._cell_keys):
        i, j = divmod(k, n_features)
        for key in keys:
            u, v = (key, key) if i == j else divmod(int(key), int(cards[j]))
            raw = (i, j, value[i][u], value[j][v])
            out[raw] = model.cell_weights_[e]
            e += 1
    return out


def test_cell_weights_minimise_the_cross_fitted_conditional_likelihood():
    X, y = _data(seed=1, n_rows=300)
    params = {"smoothing": "laplace", "parent_smoothing": "laplace"}
    model = AODE(
        **params,
        weighting="cll-value",
        weighting_rows="cross-fitted",
        penalty=0.5,
        cell_penalty=2.0,
        weighting_tol=1e-12,
    ).fit(X, y)
    a, v, weights = _cell_reference(X, y, penalty=0.5, cell_penalty=2.0)
    np.testing.assert_allclose(model.class_weights_, a, atol=1e-6)
    np.testing.assert_allclose(model.parent_weights_, v, atol=1e-6)
    fitted = _model_cell_weights(model)
    assert fitted.keys() == weights.keys()
    for key, expected in weights.items():
        np.testing.assert_allclose(fitted[key], expected, atol=1e-6, err_msg=str(key))
    assert np.ptp(model.cell_weights_) > 0.1  # the cells moved apart
    assert not np.allclose(model.parent_weights_, 1.0)
    # prediction: the weighted terms of the full model plus d times each seen cell
    rng = np.random.default_rng(5)
    X_new = np.column_stack([rng.integers(0, k, 50) for k in X.max(axis=0) + 1])
    X_new[0, 1] = X[:, 1].max() + 1  # an unknown value: no parent, no child
    cells = _laplace_cells(X, y, X_new, 3)
    log_prior = np.log((np.bincount(y, minlength=3) + 1.0) / (len(y) + 3))
    cells[0, :, 1] = 0.0
    terms = cells.sum(axis=2) + log_prior
    # row 0's parent 1 does not qualify: its term is the Naive Bayes score
    terms[0, 1] = log_prior + sum(
        np.log(
            (np.sum((y[:, None] == np.arange(3)) & (X[:, [j]] == X_new[0, j]), axis=0) + 1.0)
            / (np.bincount(y, minlength=3) + X[:, j].max() + 1)
        )
        for j in (0, 2, 3)
    )
    scores = a * log_prior + np.einsum("spc,p->sc", (terms - log_prior) / 4, v)
    for s in range(len(X_new)):
        for i in range(4):
            for j in range(4):
                key = (i, j, X_new[s, i], X_new[s, j])
                if key in weights and not (s == 0 and i == 1):
                    scores[s] += weights[key] * cells[s, i, j] / 4
    np.testing.assert_allclose(
        model.predict_log_proba(X_new), log_softmax(scores, axis=1), atol=1e-6
    )


def test_cell_weights_minimise_the_left_out_conditional_likelihood():
    """The default rows over Laplace tables: every training row's super-parent terms from
    the other rows (a refit on them, counted here), the cells the full model's."""
    X, y = _data(seed=1, n_rows=300)
    model = AODE(
        smoothing="laplace",
        parent_smoothing="laplace",
        weighting="cll-value",
        penalty=0.5,
        cell_penalty=2.0,
        weighting_tol=1e-12,
    ).fit(X, y)
    a, v, weights = _cell_reference(X, y, penalty=0.5, cell_penalty=2.0, rows="leave-one-out")
    np.testing.assert_allclose(model.class_weights_, a, atol=1e-6)
    np.testing.assert_allclose(model.parent_weights_, v, atol=1e-6)
    fitted = _model_cell_weights(model)
    assert fitted.keys() == weights.keys()
    for key, expected in weights.items():
        np.testing.assert_allclose(fitted[key], expected, atol=1e-6, err_msg=str(key))
    crossed = _cell_reference(X, y, penalty=0.5, cell_penalty=2.0)[1]
    assert np.abs(crossed - v).max() > 1e-3  # the rows' terms matter


@pytest.mark.parametrize("n_classes", [3, 2])
def test_count_features_minimise_the_objective_with_the_rows_counts(n_classes):
    """``count_features=True``: the weights of ``ln(1 + n)`` of every value
    and pair of values, n counted among the other training rows and standardised, minimise
    the cell objective plus their own term (numpy and scipy, every count written
    directly); a new row is scored with its counts among all the training rows. With two
    classes the fit has one weight per cell, its change of the score difference
    (src/two_class_weight_fit.rs), split back into the classes' weights: the same
    minimiser."""
    X, y = _data(seed=1 if n_classes == 3 else 3, n_rows=300, n_classes=n_classes)
    params = {"smoothing": "laplace", "parent_smoothing": "laplace"}
    model = AODE(
        **params,
        weighting="cll-value",
        weighting_rows="cross-fitted",
        count_features=True,
        penalty=0.5,
        cell_penalty=2.0,
        weighting_tol=1e-12,
    ).fit(X, y)
    details = {}
    a, v, weights = _cell_reference(
        X, y, 0.5, 2.0, n_classes=n_classes, details=details, counts=True
    )
    np.testing.assert_array_equal(
        model.count_columns_, [(i, j) for i in range(4) for j in range(i, 4)]
    )
    np.testing.assert_allclose(model.class_weights_, a, atol=1e-6)
    np.testing.assert_allclose(model.parent_weights_, v, atol=1e-6)
    np.testing.assert_allclose(model.count_weights_, details["count_weights"], atol=1e-6)
    fitted = _model_cell_weights(model)
    assert fitted.keys() == weights.keys()
    for key, expected in weights.items():
        np.testing.assert_allclose(fitted[key], expected, atol=1e-6, err_msg=str(key))
    assert np.abs(model.count_weights_).max() > 0.01  # the counts carry weight
    assert np.ptp(model.cell_weights_) > 0.1  # the cells moved apart
    # a new row: the weighted terms, its seen cells and its counts among all training rows
    rng = np.random.default_rng(5)
    X_new = np.column_stack([rng.integers(0, k, 50) for k in X.max(axis=0) + 1])
    cells = _laplace_cells(X, y, X_new, n_classes)
    log_prior = np.log((np.bincount(y, minlength=n_classes) + 1.0) / (len(y) + n_classes))
    scores = a * log_prior + np.einsum("spc,p->sc", cells.sum(axis=2) / 4, v)
    for s in range(len(X_new)):
        for i in range(4):
            for j in range(4):
                key = (i, j, X_new[s, i], X_new[s, j])
                if key in weights:
                    scores[s] += weights[key] * cells[s, i, j] / 4
    features = (_count_reference(X, X_new, leave_out=False) - details["centre"]) * details[
        "feature_scale"
    ]
    scores += features @ details["count_weights"]
    np.testing.assert_allclose(
        model.predict_log_proba(X_new), log_softmax(scores, axis=1), atol=1e-6
    )
    # without the counts the model is another one
    plain = AODE(
        **params, weighting="cll-value", penalty=0.5, cell_penalty=2.0, weighting_tol=1e-12
    ).fit(X, y)
    assert np.abs(plain.predict_log_proba(X_new) - model.predict_log_proba(X_new)).max() > 1e-3


def test_the_numbering_finds_each_rows_cells_as_a_search_does():
    """``CellNumbering.cells`` (what the count features of new rows read) against
    numpy's ``searchsorted`` over each column's sorted keys: columns dense enough for a
    direct table and sparse ones, missing (negative) and unknown keys, any subset and
    order of columns, any strides of the keys, one and two threads."""
    rng = np.random.default_rng(12)
    column_keys = [
        np.unique(rng.integers(0, 40, 25)),  # dense: a direct table
        np.unique(rng.integers(0, 10**9, 300)),  # sparse: searched
        np.array([], dtype=np.int64),  # no cell
        np.unique(rng.integers(0, 5, 9)),
    ]
    numbering = _core.CellNumbering(
        np.concatenate(column_keys).astype(np.int64),
        [0, *np.cumsum([len(k) for k in column_keys]).tolist()],
    )
    starts = numbering.column_starts
    n_rows = 5000
    keys = np.empty((n_rows, 4), dtype=np.int64)
    for k, known in enumerate(column_keys):
        pool = np.concatenate([known, rng.integers(0, 10**9, 20), [-1, -5]])
        keys[:, k] = rng.choice(pool, n_rows)

    def searched(column, k):
        known = column_keys[k]
        position = np.searchsorted(known, column)
        found = (position < len(known)) & (column >= 0)
        found[found] = known[position[found]] == column[found]
        return np.where(found, starts[k] + position, -1)

    for columns in ([0, 1, 2, 3], [3, 1], [1, 1, 0], []):
        expected = np.column_stack(
            [searched(keys[:, k], k) for k in columns] or [np.empty((n_rows, 0), np.int64)]
        )
        for threads in (1, 2):
            got = numbering.cells(keys.T, columns, n_jobs=threads)
            np.testing.assert_array_equal(got, expected)
            np.testing.assert_array_equal(
                numbering.cells(np.ascontiguousarray(keys.T), columns, n_jobs=threads), expected
            )
    assert (numbering.cells(keys.T, [0, 1], n_jobs=1) >= 0).mean() > 0.5
    with pytest.raises(ValueError, match="column 4 is outside"):
        numbering.cells(keys.T, [4], n_jobs=1)
    with pytest.raises(ValueError, match="keys of 3 columns"):
        numbering.cells(keys.T[:3], [0], n_jobs=1)


@pytest.mark.parametrize("cell_penalty", [3.0, "cv"])
def test_two_class_cell_weights_equal_the_general_fit(monkeypatch, cell_penalty):
    """The two-class fit and the general one (both weights of every cell) reach the same
    optimum: sample weights, HEB tables, merged cells, count features and a constant column
    (its cells are 0 in both classes and move no score: their weights stay 0)."""
    X, y = _wide_data()
    y = y % 2
    X = np.column_stack([X, np.zeros(len(y), dtype=X.dtype)])
    weight = np.random.default_rng(8).uniform(0.2, 3.0, len(y))
    params = {
        "weighting": "cll-value",
        "count_features": True,
        "cell_penalty": cell_penalty,
        "weighting_tol": 1e-11,
    }
    two_class = AODE(**params).fit(X, y, sample_weight=weight)
    solve = hebnb.weighting.solve_aode_cell_weights
    calls = []

    def general(*args, **kwargs):
        calls.append(kwargs)
        return solve(*args, **kwargs, two_class=False)

    monkeypatch.setattr(hebnb.weighting, "solve_aode_cell_weights", general)
    both = AODE(**params).fit(X, y, sample_weight=weight)
    assert calls  # the general fit did run
    for name in ("class_weights_", "parent_weights_", "count_weights_", "cell_weights_"):
        np.testing.assert_allclose(
            getattr(two_class, name), getattr(both, name), atol=2e-5, err_msg=name
        )
    np.testing.assert_allclose(two_class.predict_proba(X), both.predict_proba(X), atol=1e-6)
    # the constant column's cells as a child: both values 0, so no weight
    n_features = X.shape[1]
    parents = np.flatnonzero(two_class.super_parents_)
    starts = np.cumsum([0] + [len(keys) for keys in two_class._cell_keys])
    children = [
        two_class.cell_weights_[starts[k] : starts[k + 1]]
        for k in range(len(two_class._cell_keys))
        if k % n_features == n_features - 1 and parents[k // n_features] != n_features - 1
    ]
    assert children and all(np.all(d == 0.0) for d in children)
    assert np.abs(two_class.cell_weights_).max() > 0.1


@pytest.mark.parametrize("block_rows", [None, 7])
def test_count_features_leave_each_row_out_by_its_sample_weight(monkeypatch, block_rows):
    """A training row's count of a value or pair is the total sample weight of the other
    training rows that share it (pandas' group sums less the row's own weight), a new
    row's the total of all of them; the same when the features are computed a few rows
    at a time (``block_rows``)."""
    import pandas as pd

    from hebnb.aode import _count_features

    if block_rows is not None:
        monkeypatch.setattr(hebnb.aode, "_COUNT_FEATURE_ROWS", block_rows)

    X, y = _data(seed=2, n_rows=120)
    weights = np.random.default_rng(3).uniform(0.2, 3.0, len(y))
    model = AODE(weighting="cll-value", count_features=True).fit(X, y, sample_weight=weights)
    codes = model._encode(X)[0]
    parents = np.flatnonzero(model.super_parents_)
    keys = hebnb.weighting.aode_cell_keys(codes, parents, model.n_categories_)
    cells, _, _, _ = hebnb.weighting.number_cells(keys)
    counts = model._count_encoding
    for own in (weights, None):
        raw = _count_features(cells[:, counts.columns], counts.cell_counts, own)
        for g, (i, j) in enumerate(model.count_columns_):
            frame = pd.DataFrame({"i": X[:, i], "j": X[:, j], "w": weights})
            total = frame.groupby(["i", "j"])["w"].transform("sum").to_numpy()
            others = total - (0.0 if own is None else weights)
            others[others < 1e-9] = 0.0
            np.testing.assert_allclose(raw[:, g], np.log1p(others), rtol=1e-12, atol=0)
    # some value pairs are held by one row only: their leave-one-out count is zero
    raw = _count_features(cells[:, counts.columns], counts.cell_counts, weights)
    assert (raw == 0.0).any() and (raw > 1.0).any()


def test_count_features_standardise_by_sample_weight():
    """The count features are centred and scaled over the rows as their sample weights
    weigh them: rows of weight 0 (copies of other rows, so that the vocabulary is the
    same) change nothing, as they change none of the counts. An unweighted mean and
    spread over all the rows moved the fit by up to 1e-3 in probability."""
    X, y = _data(seed=6, n_rows=200)
    rng = np.random.default_rng(7)
    copies = rng.choice(len(y), size=80, replace=False)
    X_more = np.vstack([X, X[copies]])
    y_more = np.concatenate([y, (y[copies] + 1) % 3])  # other labels: they would matter
    weights = rng.uniform(0.5, 2.0, len(y))
    params = {
        "smoothing": "laplace",
        "weighting": "cll-value",
        "weighting_rows": "leave-one-out",
        "count_features": True,
        "weighting_tol": 1e-10,
    }
    kept = AODE(**params).fit(X, y, sample_weight=weights)
    padded = AODE(**params).fit(
        X_more, y_more, sample_weight=np.concatenate([weights, np.zeros(len(copies))])
    )
    np.testing.assert_allclose(padded._count_encoding.center, kept._count_encoding.center)
    np.testing.assert_allclose(padded._count_encoding.scale, kept._count_encoding.scale)
    np.testing.assert_allclose(padded.predict_proba(X), kept.predict_proba(X), atol=1e-8)
    # and the centre is the weighted mean of the training rows' features
    from hebnb.aode import _count_features

    codes = kept._encode(X)[0]
    parents = np.flatnonzero(kept.super_parents_)
    keys = hebnb.weighting.aode_cell_keys(codes, parents, kept.n_categories_)
    cells, _, _, _ = hebnb.weighting.number_cells(keys)
    counts = kept._count_encoding
    raw = _count_features(cells[:, counts.columns], counts.cell_counts, weights)
    np.testing.assert_allclose(counts.center, np.average(raw, axis=0, weights=weights))


def test_count_features_constant_over_the_rows_change_nothing():
    """A full factorial design (every value and pair of values equally frequent, like the
    car dataset): every count feature is constant, its spread only rounding, so it is
    left out rather than scaled up to one (that gave weights of order 1e14 and a
    log-loss of 3.5 on car), and the model is the one without counts."""
    import itertools

    grid = np.array(list(itertools.product(range(3), range(4), range(3), range(2))))
    X = np.repeat(grid, 3, axis=0)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + np.arange(len(X)) % 2) % 3
    common = {"weighting": "cll-value", "smoothing": "laplace", "weighting_tol": 1e-10}
    counted = AODE(**common, count_features=True).fit(X, y)
    assert np.all(counted._count_encoding.scale == 0.0)
    np.testing.assert_array_equal(counted.count_weights_, 0.0)
    np.testing.assert_allclose(
        counted.predict_proba(X), AODE(**common).fit(X, y).predict_proba(X), atol=1e-10
    )


def test_count_features_need_cell_weights_and_refits_drop_them():
    X, y = _data(seed=4, n_rows=80)
    for weighting in (None, "cll-feature"):
        with pytest.raises(ValueError, match="count_features=True needs weighting='cll-value'"):
            AODE(weighting=weighting, count_features=True).fit(X, y)
    model = AODE(weighting="cll-value", count_features=True).fit(X, y)
    assert hasattr(model, "count_weights_") and hasattr(model, "count_columns_")
    model.set_params(count_features=False).fit(X, y)
    assert not hasattr(model, "count_weights_") and not hasattr(model, "count_columns_")
    np.testing.assert_array_equal(
        model.predict_proba(X), AODE(weighting="cll-value").fit(X, y).predict_proba(X)
    )


def test_set_params_of_count_features_changes_nothing_until_the_next_fit():
    """The count weights were fitted jointly with the others: a fitted model scores with
    them whatever ``count_features`` says now, as with every other parameter."""
    X, y = _data(seed=5, n_rows=300)
    model = AODE(weighting="cll-value", count_features=True).fit(X, y)
    before = model.predict_proba(X)
    model.set_params(count_features=False)
    np.testing.assert_array_equal(model.predict_proba(X), before)
    model.fit(X, y)
    assert not hasattr(model, "count_weights_")


def test_count_features_do_not_depend_on_n_jobs_or_pickling():
    X, y = _wide_data()
    models = [
        AODE(weighting="cll-value", count_features=True, max_parents=4, n_jobs=n).fit(X, y)
        for n in (1, 2)
    ]
    np.testing.assert_array_equal(models[0].count_weights_, models[1].count_weights_)
    np.testing.assert_array_equal(models[0].predict_proba(X), models[1].predict_proba(X))
    copy = pickle.loads(pickle.dumps(models[0]))
    np.testing.assert_array_equal(copy.predict_proba(X), models[0].predict_proba(X))
    # a cll-value model pickled before the parameter existed scores as it did
    plain = AODE(weighting="cll-value", max_parents=4).fit(X, y)
    state = plain.__getstate__()
    del state["count_features"]
    old = AODE.__new__(AODE)
    old.__setstate__(state)
    assert old.count_features is False
    np.testing.assert_array_equal(old.predict_proba(X), plain.predict_proba(X))
    # with max_parents a pair of two super-parents is counted once, every other pair of a
    # super-parent once, each super-parent's own value once
    parents = np.flatnonzero(models[0].super_parents_)
    expected = [
        (i, j) for i in parents for j in range(X.shape[1]) if j == i or j not in parents or i < j
    ]
    np.testing.assert_array_equal(models[0].count_columns_, expected)


def test_cell_keys_are_the_parent_and_child_values_combined():
    """``aode_cell_keys`` (the core's) against the keys written out in numpy: ``u K_j + v``
    per (super-parent, child) column, ``u`` on the parent's own column, -1 where either
    value is missing; the same for any n_jobs."""
    rng = np.random.default_rng(1)
    cardinality = np.array([3, 1, 40, 7, 2])
    codes = np.stack([rng.integers(-1, k, 500) for k in cardinality]).astype(np.int32)
    parents = np.array([0, 2, 4])
    expected = np.full((500, parents.shape[0] * cardinality.shape[0]), -1, dtype=np.int64)
    for p, i in enumerate(parents):
        for j in range(cardinality.shape[0]):
            u, v = codes[i].astype(np.int64), codes[j].astype(np.int64)
            key = u if j == i else u * cardinality[j] + v
            expected[:, p * cardinality.shape[0] + j] = np.where((u >= 0) & (v >= 0), key, -1)
    for n_threads in (1, 3):
        keys = hebnb.weighting.aode_cell_keys(codes, parents, cardinality, n_threads)
        np.testing.assert_array_equal(keys, expected)
        assert keys.T.flags.c_contiguous  # each column contiguous
    assert (expected == -1).any() and (expected > 100).any()
    with pytest.raises(ValueError, match="cardinalities"):
        hebnb.weighting.aode_cell_keys(codes, np.array([5]), cardinality)
    with pytest.raises(ValueError, match="cardinalities"):
        hebnb.weighting.aode_cell_keys(codes, parents, cardinality[:-1])
    # a code beyond its cardinality, or keys beyond int64, would leave their column's range
    with pytest.raises(ValueError, match="feature 0 has a code at or beyond its cardinality 2"):
        hebnb.weighting.aode_cell_keys(codes, parents, cardinality - 1)
    with pytest.raises(ValueError, match="feature 2 has cardinality 2147483649, beyond"):
        hebnb.weighting.aode_cell_keys(codes, parents, [3, 1, 2**31 + 1, 7, 2])


def test_cells_are_numbered_as_np_unique_numbers_each_column():
    """``number_cells`` numbers each column's keys as ``np.unique`` does, the columns one
    after another."""
    rng = np.random.default_rng(0)
    cardinality = np.array([3, 1, 40, 7])
    codes = np.stack([rng.integers(-1, k, 300) for k in cardinality]).astype(np.int32)
    parents = np.array([0, 2, 3])
    keys = hebnb.weighting.aode_cell_keys(codes, parents, cardinality)
    assert keys.shape == (300, 12)
    keys[:, 5] = -1  # a column without a key
    cells, starts, column_keys, first_row = hebnb.weighting.number_cells(keys)
    start = 0
    for k in range(keys.shape[1]):
        present = np.flatnonzero(keys[:, k] >= 0)
        distinct, first, inverse = np.unique(
            keys[present, k], return_index=True, return_inverse=True
        )
        assert starts[k] == start
        np.testing.assert_array_equal(column_keys[k], distinct)
        np.testing.assert_array_equal(cells[present, k], start + inverse)
        np.testing.assert_array_equal(cells[keys[:, k] < 0, k], -1)
        np.testing.assert_array_equal(first_row[start : start + len(distinct)], present[first])
        start += len(distinct)
    assert starts[-1] == start and start > 100


@pytest.mark.parametrize("n_jobs", [1, 3])
def test_cell_row_sums_add_each_cells_rows_in_order(n_jobs):
    """``_core.cell_row_sums`` (the preconditioner's curvature of every cell) equals
    ``np.bincount`` over the used entries, which adds each cell's rows in order: to the
    bit."""
    rng = np.random.default_rng(3)
    cardinality = np.array([2, 5, 1, 30])
    codes = np.stack([rng.integers(-1, k, 500) for k in cardinality]).astype(np.int32)
    keys = hebnb.weighting.aode_cell_keys(codes, np.arange(4), cardinality)
    keys[:, 3] = -1  # a column without a cell
    cells, starts, _, _ = hebnb.weighting.number_cells(keys)
    row_values = rng.gamma(0.5, size=(500, 3))
    sums = _core.cell_row_sums(np.ascontiguousarray(cells.T), starts, row_values, n_jobs=n_jobs)
    used = cells >= 0
    rows = np.broadcast_to(np.arange(500)[:, None], cells.shape)[used]
    expected = np.stack(
        [
            np.bincount(cells[used], weights=row_values[rows, c], minlength=starts[-1])
            for c in range(3)
        ],
        axis=1,
    )
    assert sums.shape == (starts[-1], 3) and starts[-1] > 50
    np.testing.assert_array_equal(sums, expected)
    with pytest.raises(ValueError, match="outside its cells"):
        _core.cell_row_sums(np.ascontiguousarray(cells.T[::-1]), starts, row_values, n_jobs=1)
    with pytest.raises(ValueError, match="cell rows"):
        _core.cell_row_sums(np.ascontiguousarray(cells.T), starts, row_values[:-1], n_jobs=1)


def test_cell_weighted_scores_do_not_depend_on_the_scoring_batches(monkeypatch):
    """Scored in batches of a few rows (each batch's terms and cells apart), the rows get
    the scores of one batch."""
    X, y = _data(seed=4, n_rows=400)
    model = AODE(weighting="cll-value").fit(X, y)
    whole = model.predict_log_proba(X)
    n_entries = int(np.count_nonzero(model.super_parents_)) * 3  # a row's terms
    monkeypatch.setattr(AODE, "_cell_batch_entries", 7 * n_entries)  # 7 rows a batch
    np.testing.assert_array_equal(model.predict_log_proba(X), whole)


def test_cell_weights_do_not_depend_on_n_jobs():
    X, y = _data(seed=2, n_rows=3000)
    one = AODE(weighting="cll-value", n_jobs=1).fit(X, y)
    two = AODE(weighting="cll-value", n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.cell_weights_, two.cell_weights_)
    np.testing.assert_array_equal(one.predict_proba(X), two.predict_proba(X))


def test_cell_weights_at_zero_give_the_cll_feature_model():
    """With ``d = 0`` the cll-value score is the cll-feature score of the same ``a, v``."""
    X, y = _data(seed=6, n_rows=500)
    model = AODE(weighting="cll-value").fit(X, y)
    reference = AODE(weighting="cll-feature").fit(X, y)
    model.class_weights_ = reference.class_weights_
    model.parent_weights_ = reference.parent_weights_
    model.cell_weights_ = np.zeros_like(model.cell_weights_)
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X), rtol=1e-12)


@pytest.mark.parametrize(
    "make, what",
    [
        (lambda: CategoricalNB(weighting="cll-feature"), "cll-feature weights"),
        (lambda: AODE(weighting="cll-feature"), "AODE parent weights"),
        (lambda: AODE(weighting="cll-value"), "AODE cell weights"),
    ],
)
def test_weights_stopped_early_warn_that_they_did_not_converge(monkeypatch, make, what):
    X, y = _data(seed=3)
    monkeypatch.setattr(hebnb.weighting, "MAX_ITER", 1)
    with pytest.warns(ConvergenceWarning, match=f"the {what} did not converge in 1 L-BFGS"):
        make().fit(X, y)


def _noisy_data(seed, n_rows, noise):
    """``_data`` with a share ``noise`` of the labels redrawn at random."""
    X, y = _data(seed=seed, n_rows=n_rows)
    rng = np.random.default_rng(seed)
    return X, np.where(rng.random(n_rows) < noise, rng.integers(0, 3, n_rows), y)


def _cv_splits(y):
    """``cell_penalty="cv"``'s folds: stratified 3-fold over the rows of the classes with
    at least 3 rows; the rows of the others are in every fold's training rows."""
    counts = np.bincount(y)
    scored, rare = np.flatnonzero(counts[y] >= 3), np.flatnonzero(counts[y] < 3)
    folds = StratifiedKFold(hebnb.weighting.CV_FOLDS, shuffle=True, random_state=0)
    for kept, out in folds.split(X=np.zeros(len(scored)), y=y[scored]):
        yield np.sort(np.concatenate([scored[kept], rare])), scored[out]


@pytest.mark.parametrize(
    "weighted, rare",
    [(False, 0), (True, 0), (False, 1), (True, 2)],
    ids=["plain", "weighted", "one-row class", "two-row class, weighted"],
)
def test_cv_cell_penalty_is_the_best_of_its_grid_on_held_out_rows(weighted, rare):
    """``cell_penalty="cv"``: the held-out log-loss of every penalty, and the penalty
    whose held rows score the highest conditional log-likelihood, each fold's score
    computed here by a plain ``AODE(weighting="cll-value", cell_penalty=p)`` fitted on
    the fold's training rows alone and its ``predict_proba`` on the held rows; the final
    model is the fixed penalty's fit on every row. On these noisy labels the held-out
    rows choose the largest penalty of the grid; scored with the held rows' own counts
    in the cells (the first version of "cv") they chose the smallest. A class with fewer
    than 3 rows is never held out (the first version fell back to the default penalty)."""
    X, y = _noisy_data(seed=3, n_rows=150, noise=0.4)
    y[:rare] = 3
    weight = np.random.default_rng(5).integers(1, 4, size=150).astype(float) if weighted else None
    params = {"smoothing": "laplace", "parent_smoothing": "laplace", "penalty": 0.5}
    grid = (1.0, 10.0, 100.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hebnb.weighting, "CV_CELL_PENALTIES", grid)
        model = AODE(**params, weighting="cll-value", cell_penalty="cv")
        model.fit(X, y, sample_weight=weight)
    weight_or_one = np.ones(len(y)) if weight is None else weight
    loss, total = np.zeros(len(grid)), 0.0
    for train, held in _cv_splits(y):
        assert rare == 0 or np.all(np.isin(np.arange(rare), train))
        total += weight_or_one[held].sum()
        for k, cell_penalty in enumerate(grid):
            fold = AODE(**params, weighting="cll-value", cell_penalty=cell_penalty)
            fold.fit(X[train], y[train], sample_weight=None if weight is None else weight[train])
            assert fold.classes_.shape[0] == 3 + (rare > 0)
            log_p = np.log(fold.predict_proba(X[held])[np.arange(len(held)), y[held]])
            loss[k] -= log_p @ weight_or_one[held]
    np.testing.assert_allclose(model.cell_penalty_cv_loss_, loss / total, rtol=1e-10)
    assert np.all(np.diff(np.sort(loss)) > 1e-3 * loss.min())  # no near ties
    expected = grid[int(np.argmin(loss))]
    assert model.cell_penalty_ == expected
    if not weighted:
        assert expected == 100.0
    fixed = AODE(**params, weighting="cll-value", cell_penalty=expected)
    fixed.fit(X, y, sample_weight=weight)
    np.testing.assert_array_equal(fixed.predict_proba(X), model.predict_proba(X))
    assert fixed.cell_penalty_ == expected


def test_cv_cell_penalty_scores_the_same_with_the_held_cells_kept_or_looked_up(monkeypatch):
    """A fold's held rows are scored at every penalty: from their cells kept after the
    first look-up, or, beyond the memory budget, looked up again each time."""
    X, y = _noisy_data(seed=2, n_rows=200, noise=0.2)
    kept = AODE(weighting="cll-value", cell_penalty="cv").fit(X, y)
    monkeypatch.setattr(AODE, "_kept_cell_entries", 0)
    looked_up = AODE(weighting="cll-value", cell_penalty="cv").fit(X, y)
    np.testing.assert_array_equal(kept.cell_penalty_cv_loss_, looked_up.cell_penalty_cv_loss_)
    assert np.ptp(kept.cell_penalty_cv_loss_) > 0


def test_cv_cell_penalty_does_not_depend_on_n_jobs():
    X, y = _noisy_data(seed=1, n_rows=300, noise=0.2)
    one = AODE(weighting="cll-value", cell_penalty="cv", n_jobs=1).fit(X, y)
    two = AODE(weighting="cll-value", cell_penalty="cv", n_jobs=2).fit(X, y)
    assert one.cell_penalty_ == two.cell_penalty_
    np.testing.assert_array_equal(one.cell_weights_, two.cell_weights_)
    np.testing.assert_array_equal(one.predict_proba(X), two.predict_proba(X))


def test_cv_cell_penalty_falls_back_to_the_default_without_a_class_of_three_rows():
    X = np.array([[0, 1], [1, 0], [0, 0], [1, 1]])
    y = np.array([0, 0, 1, 1])  # two rows a class: no fold can hold a class out
    model = AODE(weighting="cll-value", cell_penalty="cv").fit(X, y)
    assert model.cell_penalty_ == hebnb.weighting.DEFAULT_CELL_PENALTY
    assert not hasattr(model, "cell_penalty_cv_loss_")
    fixed = AODE(weighting="cll-value").fit(X, y)
    np.testing.assert_array_equal(fixed.predict_proba(X), model.predict_proba(X))


@pytest.mark.parametrize(
    "params",
    [
        {"weighting": "cll-feature"},
        {"weighting": "cll-value"},
        {"weighting": "cll-value", "cell_penalty": "cv"},
    ],
)
def test_folds_whose_training_rows_weigh_nothing_are_left_out(params):
    """With one row of positive weight, the cross-fitting and penalty folds without it
    weigh nothing; they are left out (as folds lacking a class are) instead of failing
    the whole fit with "sample_weight sums to zero"."""
    X, y = _noisy_data(seed=4, n_rows=60, noise=0.2)
    weight = np.zeros(len(y))
    weight[0] = 1.0
    model = AODE(**params).fit(X, y, sample_weight=weight)
    proba = model.predict_proba(X)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    if params.get("cell_penalty") == "cv":
        # the fold holding row 0 out weighs nothing and the others score no weighted row:
        # no evidence for any penalty, so the default
        assert model.cell_penalty_ == hebnb.weighting.DEFAULT_CELL_PENALTY
        fixed = AODE(weighting="cll-value").fit(X, y, sample_weight=weight)
        np.testing.assert_array_equal(fixed.predict_proba(X), proba)


@pytest.mark.parametrize("cell_penalty", [None, "cv"])
@pytest.mark.parametrize("weighting", ["cll-feature", "cll-value"])
def test_array_likes_that_only_offer_their_array_fit_weights(weighting, cell_penalty):
    """The cross-fitting folds indexed the raw X and y: an object with only __array__
    (scikit-learn's check_classifier_data_not_an_array) was a TypeError."""
    if weighting == "cll-feature" and cell_penalty is not None:
        pytest.skip("cell_penalty is a cll-value parameter")

    class ArrayOnly:
        def __init__(self, values):
            self.values = np.asarray(values)

        def __array__(self, dtype=None, copy=None):
            return self.values

    X, y = _noisy_data(seed=5, n_rows=120, noise=0.2)
    params = {"weighting": weighting} | ({"cell_penalty": cell_penalty} if cell_penalty else {})
    expected = AODE(**params).fit(X, y).predict_proba(X)
    model = AODE(**params).fit(ArrayOnly(X), ArrayOnly(y))
    np.testing.assert_array_equal(model.predict_proba(X), expected)


def test_the_cell_numbering_is_built_by_the_fit_and_rebuilt_on_loading():
    """The weighted cells' numbering is built by the fit and kept for every prediction (a
    one-row prediction does not rebuild it); a pickle leaves it out and the load builds
    its own, and a new fit builds a new one."""
    X, y = _data(seed=3, n_rows=400)
    model = AODE(weighting="cll-value").fit(X, y)
    numbering = model.__dict__["_cell_numbering"]
    first = model.predict_proba(X)
    np.testing.assert_array_equal(model.predict_proba(X[:5]), first[:5])
    assert model.__dict__["_cell_numbering"] is numbering
    assert "_cell_numbering" not in model.__getstate__()
    restored = pickle.loads(pickle.dumps(model))
    assert restored.__dict__["_cell_numbering"] is not numbering
    np.testing.assert_array_equal(restored.predict_proba(X), first)
    np.testing.assert_array_equal(copy.deepcopy(model).predict_proba(X), first)
    model.fit(X[:300], y[:300])
    assert model.__dict__["_cell_numbering"] is not numbering
    refitted = AODE(weighting="cll-value").fit(X[:300], y[:300])
    np.testing.assert_array_equal(model.predict_proba(X), refitted.predict_proba(X))


def test_rows_of_left_out_folds_keep_their_in_sample_terms():
    """The cell weights' super-parent terms are the cross-fitted folds' where a fold has a
    model and the in-sample ones on the rows of the folds that have none (a class missing
    from their training rows): the core is asked for in-sample terms only then."""
    X, y = _data(seed=6, n_rows=200)
    y = np.array([f"c{label}" for label in y], dtype=object)
    y[17] = "rare"  # a class of one row: the fold holding it out has no model
    model = AODE(weighting="cll-value").fit(X, y)
    codes, threads = model._encode(X)
    labels = np.searchsorted(model.classes_, y)
    weights = np.ones(len(y))
    folds = model._held_out_models(X, y, None, labels, weights)
    held = np.zeros(len(y), dtype=bool)
    for rows, _, _ in folds:
        held[rows] = True
    assert 0 < np.count_nonzero(~held) < len(y) and not held[17]
    inputs, _ = model._cell_weight_inputs(codes, labels, weights, threads, folds)
    n_parents = int(np.count_nonzero(model.super_parents_))
    terms = inputs[0] * n_parents + model.class_log_prior_
    in_sample = model._parent_terms(codes, threads)
    np.testing.assert_allclose(terms[~held], in_sample[~held], rtol=1e-12, atol=1e-12)
    for rows, fold_codes, fold_model in folds:
        expected = fold_model._parent_terms(fold_codes, threads)
        np.testing.assert_allclose(terms[rows], expected, rtol=1e-12, atol=1e-12)
    # every fold with a model: the in-sample terms are not computed at all, and the
    # weights are those the fit finds
    without_rare = np.flatnonzero(y != "rare")
    full = AODE(weighting="cll-value").fit(X[without_rare], y[without_rare])
    assert np.all(np.isfinite(full.cell_weights_))


@pytest.mark.parametrize("params", [{}, {"count_features": True}, {"smoothing": "laplace"}])
def test_predicting_with_cell_weights_leaves_the_model_unchanged(params):
    """The cells' numbering for look-ups was built by the first predict and kept in the
    model's __dict__ (scikit-learn's check_dict_unchanged failed); it is built by the fit
    and by unpickling, and predictions are those of a model never predicted with."""
    from sklearn.utils.estimator_checks import check_dict_unchanged

    check_dict_unchanged("AODE", AODE(weighting="cll-value", **params))
    rng = np.random.default_rng(11)
    X, y = rng.integers(0, 4, size=(300, 4)), rng.integers(0, 2, size=300)
    model = AODE(weighting="cll-value", **params).fit(X, y)
    for fitted in (model, pickle.loads(pickle.dumps(model))):
        before = dict(fitted.__dict__)
        proba = fitted.predict_proba(X)
        assert fitted.__dict__.keys() == before.keys()
        np.testing.assert_array_equal(proba, model.predict_proba(X))
