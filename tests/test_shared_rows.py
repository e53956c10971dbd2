"""The AODE cell fit with the cells that the same rows use merged into one weight
(hebnb._shared_rows): the groups against a grouping by Python sets, and the merged fit's
weights and objective against the fit of every cell apart and against the objective
written here in numpy."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from scipy.special import log_softmax

import hebnb.aode
import hebnb.weighting
from hebnb import AODE
from hebnb._shared_rows import group_cells_by_rows, merge_cells_sharing_rows


def _cell_matrix(seed, n_rows=300, n_columns=6):
    """(S, K) cells: column ``k`` has its own cell range; values from a few frequent and
    many rare categories, and some columns copying others (so that cells share rows)."""
    rng = np.random.default_rng(seed)
    raw = np.empty((n_rows, n_columns), dtype=np.int64)
    for k in range(n_columns):
        if k >= 2 and k % 2 == 0:
            raw[:, k] = raw[:, k - 2] * 3 + (rng.random(n_rows) < 0.1)  # nearly a copy
        else:
            frequent = rng.integers(0, 4, n_rows)
            raw[:, k] = np.where(rng.random(n_rows) < 0.5, frequent, rng.integers(4, 400, n_rows))
    raw[rng.random(raw.shape) < 0.05] = -1  # missing
    cells = np.full(raw.shape, -1, dtype=np.int64)
    starts = [0]
    for k in range(n_columns):
        present = raw[:, k] >= 0
        values, index = np.unique(raw[present, k], return_inverse=True)
        cells[present, k] = starts[-1] + index
        starts.append(starts[-1] + len(values))
    return cells, starts


def _groups_by_sets(cells, n_cells):
    """Each cell's group, cells with equal row sets together, numbered by first cell."""
    rows = defaultdict(set)
    for s, k in zip(*np.nonzero(cells >= 0)):
        rows[int(cells[s, k])].add(int(s))
    number, group = {}, np.empty(n_cells, dtype=np.int64)
    for e in range(n_cells):
        key = frozenset(rows[e]) if rows[e] else ("unused", e)
        group[e] = number.setdefault(key, len(number))
    return group


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_groups_are_the_cells_with_equal_row_sets(seed):
    cells, starts = _cell_matrix(seed)
    cells[:, 5][cells[:, 5] == starts[5]] = -1  # a cell no row uses
    expected = _groups_by_sets(cells, starts[-1])
    group = group_cells_by_rows(cells, starts).group
    np.testing.assert_array_equal(group, expected)
    assert group.max() + 1 < 0.8 * starts[-1]  # many cells merged


def test_merged_cells_split_back_to_the_penalised_optimum_of_their_sum():
    """For a group, ``d_e = T V_e / (s_e R)`` has ``sum_e d_e V_e = T`` and penalty
    ``T^2 / (2 R)``, no more than any other split of ``T`` (checked against random ones)."""
    cells, starts = _cell_matrix(3)
    rng = np.random.default_rng(3)
    values = rng.normal(size=(starts[-1], 2))
    precision = 7.0 * (values**2 + 1e-12)
    merged = merge_cells_sharing_rows(group_cells_by_rows(cells, starts), values, precision)
    t = rng.normal(size=merged.values.shape)
    d = merged.cell_weights(t)
    total = np.zeros_like(t)
    np.add.at(total, merged.groups.group, d * values)
    np.testing.assert_allclose(total, merged.values * t, rtol=1e-10, atol=1e-12)
    penalty = np.zeros_like(t)
    np.add.at(penalty, merged.groups.group, precision * d**2 / 2)
    np.testing.assert_allclose(penalty, merged.precision * t**2 / 2, rtol=1e-10, atol=1e-14)
    size = np.bincount(merged.groups.group)
    assert size.max() > 1
    g = int(np.argmax(size))
    members = np.flatnonzero(merged.groups.group == g)
    for _ in range(20):  # any other split of the same sum has a larger penalty
        other = d[members, 0] + rng.normal(size=len(members)) * 0.1
        other += (
            (merged.values[g, 0] * t[g, 0] - other @ values[members, 0])
            / values[members, 0].sum()
            * (values[members, 0] != 0)
        )
        other_total = other @ values[members, 0]
        if not np.isclose(other_total, merged.values[g, 0] * t[g, 0]):
            continue
        assert precision[members, 0] @ other**2 / 2 >= penalty[g, 0] - 1e-12
    # a cell alone keeps its column, value, precision and weight
    single = np.flatnonzero(size[merged.groups.group] == 1)
    np.testing.assert_array_equal(merged.values[merged.groups.group[single]], values[single])
    np.testing.assert_array_equal(merged.precision[merged.groups.group[single]], precision[single])
    np.testing.assert_array_equal(d[single], t[merged.groups.group[single]])


def _rare_value_data(seed=0, n_rows=500):
    """Three informative columns and two of mostly rare values (cells of one or two rows)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n_rows)
    a = (y + (rng.random(n_rows) < 0.3) * rng.integers(0, 3, n_rows)) % 3
    b = rng.integers(0, 4, n_rows)
    c = (b + y) % 4
    rare = np.where(rng.random(n_rows) < 0.7, rng.integers(0, 300, n_rows), y)
    rarer = rng.integers(0, 1000, n_rows)
    return np.column_stack([a, b, c, rare, rarer]), y


def _captured_inputs(X, y, sample_weight=None, **params):
    """The arguments an ``AODE(weighting="cll-value")`` fit gives the cell fit."""
    captured = {}
    original = hebnb.weighting.fit_aode_cell_weights

    def spy(*args, **kwargs):
        captured.update(args=args, kwargs=kwargs)
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hebnb.weighting, "fit_aode_cell_weights", spy)
        AODE(weighting="cll-value", **params).fit(X, y, sample_weight=sample_weight)
    return captured["args"], captured["kwargs"]


def _objective(args, penalty, cell_penalty, weights):
    """J of :func:`hebnb.weighting.fit_aode_cell_weights`, written in numpy."""
    likelihood, cells, _, values, labels, sample_weight, log_prior, row_features = args
    assert row_features is None  # no count features
    scores = weights.class_weights * log_prior
    scores = scores + np.einsum("p,spc->sc", weights.parent_weights, likelihood)
    d = weights.cell_weights
    for k in range(cells.shape[1]):
        used = cells[:, k] >= 0
        scores[used] += (d * values)[cells[used, k]]
    value = -sample_weight @ log_softmax(scores, axis=1)[np.arange(len(labels)), labels]
    value += penalty / 2 * np.sum((weights.class_weights - 1) ** 2)
    value += penalty / 2 * np.sum((weights.parent_weights - 1) ** 2)
    return value + cell_penalty / 2 * np.sum((values**2 + 1e-12) * d**2)


@pytest.mark.parametrize("weighted", [False, True])
def test_the_merged_fit_reaches_the_optimum_of_every_cell_apart(weighted):
    X, y = _rare_value_data()
    sample_weight = np.random.default_rng(1).integers(1, 4, len(y)) * 1.0 if weighted else None
    args, kwargs = _captured_inputs(X, y, sample_weight, smoothing="laplace", cell_penalty=5.0)
    kwargs = dict(kwargs, tol=1e-11)
    apart = hebnb.weighting.fit_aode_cell_weights(*args, **kwargs, merge_shared_rows=False)
    merged = hebnb.weighting.fit_aode_cell_weights(*args, **kwargs)
    n_groups = group_cells_by_rows(args[1], args[2]).first_cell.shape[0]
    assert n_groups < 0.6 * args[2][-1]  # most cells merged
    for weights in (apart, merged):
        assert weights.converged
        np.testing.assert_allclose(
            _objective(args, kwargs["penalty"], kwargs["cell_penalty"], weights),
            weights.objective,
            rtol=1e-12,
        )
    np.testing.assert_allclose(merged.objective, apart.objective, rtol=1e-11)
    np.testing.assert_allclose(merged.class_weights, apart.class_weights, atol=1e-6)
    np.testing.assert_allclose(merged.parent_weights, apart.parent_weights, atol=1e-6)
    np.testing.assert_allclose(merged.cell_weights, apart.cell_weights, atol=1e-6)
    assert np.ptp(merged.cell_weights) > 0.1


def test_a_merged_problem_needs_a_positive_cell_penalty():
    """Unpenalised, a group's split is free, so a merged problem is refused at 0."""
    X, y = _rare_value_data(n_rows=200)
    args, _ = _captured_inputs(X, y, cell_penalty=1.0)
    problem = hebnb.weighting.aode_cell_problem(*args, n_threads=1)
    assert problem.merged is not None
    with pytest.raises(ValueError, match="need a positive cell penalty, got 0.0"):
        hebnb.weighting.solve_aode_cell_weights(problem, penalty=1.0, cell_penalty=0.0, n_threads=1)


def _counting(function, calls):
    """``function``, appending to ``calls`` at every call."""

    def counted(*args):
        calls.append(1)
        return function(*args)

    return counted


def test_without_a_cell_penalty_nothing_is_merged(monkeypatch):
    """Unpenalised, the split of a group's sum is free: the cells are fitted apart."""
    X, y = _rare_value_data(n_rows=200)
    calls = []
    count = _counting(hebnb.weighting.merge_cells_sharing_rows, calls)
    monkeypatch.setattr(hebnb.weighting, "merge_cells_sharing_rows", count)
    AODE(weighting="cll-value", cell_penalty=0.0).fit(X, y)
    assert not calls
    AODE(weighting="cll-value", cell_penalty=1.0).fit(X, y)
    assert calls


def test_no_cells_merge_to_no_cells():
    cells = np.full((5, 2), -1, dtype=np.int64)
    groups = group_cells_by_rows(cells, [0, 0, 0])
    merged = merge_cells_sharing_rows(groups, np.zeros((0, 2)), np.zeros((0, 2)))
    np.testing.assert_array_equal(groups.cells, cells)
    assert groups.column_starts == [0, 0, 0]
    assert merged.values.shape == merged.precision.shape == (0, 2)
    assert merged.cell_weights(np.zeros((0, 2))).shape == (0, 2)


def test_the_cross_validated_penalty_groups_each_folds_cells_once(monkeypatch):
    """``cell_penalty="cv"`` fits a fold's cells at every penalty of its grid: their
    groups are found and merged once per fold (and once for the final fit), not once per
    penalty."""
    X, y = _rare_value_data(n_rows=300)
    grouped, merged = [], []
    for name, calls in (("group_cells_by_rows", grouped), ("merge_cells_sharing_rows", merged)):
        monkeypatch.setattr(hebnb.weighting, name, _counting(getattr(hebnb.weighting, name), calls))
    AODE(weighting="cll-value", cell_penalty="cv").fit(X, y)
    assert len(hebnb.weighting.CV_CELL_PENALTIES) > 1
    assert len(grouped) == len(merged) == hebnb.weighting.CV_FOLDS + 1


def test_cells_outside_their_column_are_refused_by_name():
    with pytest.raises(ValueError, match="cell 1 of column 0 lies outside its cells 0..1"):
        group_cells_by_rows(np.array([[0, 1], [1, -1]]), [0, 1, 2])
    with pytest.raises(ValueError, match="column starts must rise from 0 over the 2 columns"):
        group_cells_by_rows(np.array([[0, 1]]), [0, 2])
