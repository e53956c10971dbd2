"""Discriminative weights over a fitted generative model (WANBIA-C and ALR).

A fitted Naive Bayes model scores class ``c`` of a row ``x`` with
``ln pi_c + sum_f ln theta[c, f, x_f]``. Discriminative weighting multiplies every term
by a weight learned from the training data::

    s_c(x) = a_c ln pi_c + sum_f w[f] ln theta[c, f, x_f]            ("cll-feature")
    s_c(x) = a_c ln pi_c + sum_f w[c, f, x_f] ln theta[c, f, x_f]    ("cll-value")

``"cll-feature"`` is WANBIA-C (Zaidi, Cerquides, Carman and Webb, JMLR 2013): one weight
per feature. ``"cll-value"`` is ALR, "accelerated logistic regression" (Zaidi, Webb et
al., Machine Learning 2016-2017): one weight per cell of the log-probability tables,
which makes the model a logistic regression on the one-hot encoding whose parameters are
measured in units of the generative log-probabilities (the generative estimates act as a
diagonal preconditioner, and start the optimiser at the generative model, ``w = 1``).
Every class also gets a weight ``a_c`` on its log prior (a free intercept).

The weights minimise the penalised negative conditional log-likelihood of the training
rows (with their sample weights ``s_i``)::

    J(a, w) = - sum_i s_i ln P(y_i | x_i; a, w) + penalty / 2 * (||a - 1||^2 + ||w - 1||^2)

The penalty is the precision of a Gaussian prior centred on the generative model: the
weights' MAP estimate under ``w ~ N(1, 1 / penalty)``. It is a statement about the weights
(a weight of 3 or -1 is implausible a priori), not about the data, so it stays fixed as the
training set grows and the likelihood takes over; the default ``penalty=1`` (a unit
standard deviation) needs no tuning per dataset (docs/discriminative.md). ``J`` is convex
(the scores are linear in the weights) and strictly so for ``penalty > 0``, so the optimum
is unique and the result does not depend on the starting point or the optimiser.

The objective, its gradient and the optimiser (a preconditioned L-BFGS, src/lbfgs.rs) run
in Rust in one call (``_core.fit_naive_bayes_weights``, src/weight_fit.rs): each
evaluation of ``J`` and its gradient is one pass over the rows (parallel over rows, with
deterministic reductions: the weights are identical for any ``n_jobs``).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import ThreadpoolController

from . import _core
from ._shared_rows import (
    SharedRowCells,
    group_cells_by_rows,
    merge_cells_sharing_rows,
)
from ._warnings import warn
from .posterior_smoothing import feature_sums


@functools.cache
def _blas_controller() -> ThreadpoolController:
    """The thread pools of the BLAS libraries loaded (numpy's among them), found once."""
    return ThreadpoolController()


#: Guards the BLAS limit, which is the process's: the calls inside
#: :func:`blas_in_one_thread` now, on any thread, and the limiter to end after the last.
_blas_limit_lock = threading.Lock()
_blas_limit: dict[str, Any] = {"inside": 0, "limiter": None}


@contextlib.contextmanager
def blas_in_one_thread() -> Iterator[None]:
    """Runs the block with the BLAS libraries on one thread, as scikit-learn does around
    its own parallel loops. The weight fits run their threads in the core (``n_jobs``);
    a BLAS call of the glue around them (the preconditioner's sums over the rows) would
    start BLAS's own threads, which keep spinning for a while after the call and take
    the cores from the core's (an amazon-employee fold took 0.36 s instead of 0.29 s on
    2 cores), and a dot product split across threads rounds differently on machines
    with different numbers of cores. The limit is the process's: the first block to
    start sets it and the last to end restores what it found, whatever the threads."""
    with _blas_limit_lock:
        if _blas_limit["inside"] == 0:
            _blas_limit["limiter"] = _blas_controller().limit(limits=1, user_api="blas")
        _blas_limit["inside"] += 1
    try:
        yield
    finally:
        with _blas_limit_lock:
            _blas_limit["inside"] -= 1
            if _blas_limit["inside"] == 0:
                _blas_limit["limiter"].restore_original_limits()
                _blas_limit["limiter"] = None


#: The discriminative weightings.
WEIGHTINGS = ("cll-feature", "cll-value")
#: How the training rows are scored while the weights are learned.
WEIGHTING_ROWS = ("leave-one-out", "in-sample")
#: Precision of the Gaussian prior N(1, 1 / penalty) on every weight.
DEFAULT_PENALTY = 1.0
#: Default ``cell_penalty`` of ``AODE(weighting="cll-value")``: the precision, in score
#: units, of a cell's change of a row's score (docs/discriminative.md: the best fixed value
#: over 23 of the 25 shared datasets; the best per dataset ranges from 3 to 300).
DEFAULT_CELL_PENALTY = 100.0
#: Default ``tol``: the mean per-row gradient entry at which the weights are converged.
DEFAULT_TOL = 1e-4
#: L-BFGS iterations at most.
MAX_ITER = 1000
#: Corrections L-BFGS keeps.
MEMORY = 10

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class DiscriminativeWeights:
    """The learned weights of one training set.

    Attributes
    ----------
    kind : str
        ``"cll-feature"`` or ``"cll-value"``.
    class_weights : ndarray of shape (n_classes,)
        ``a_c``, the weight of each class's log prior.
    table_weights : ndarray
        ``w``: shape (n_features,) for ``"cll-feature"``; for ``"cll-value"``, the whole
        weight ``w[f] + d[c, f, v]`` of every cell, shape (sum K_f, n_classes), the shape
        of the log-probability table.
    feature_weights : ndarray of shape (n_features,)
        ``w``, the feature weights (for ``"cll-value"``, the centre of each feature's cell
        weights).
    objective : float
        ``J`` at the weights.
    n_iter : int
        L-BFGS iterations.
    converged : bool
    """

    kind: str
    class_weights: FloatArray
    table_weights: FloatArray
    feature_weights: FloatArray
    objective: float
    n_iter: int
    converged: bool


def resolve_penalty(penalty: float | None) -> float:
    """``penalty`` as a number: None is :data:`DEFAULT_PENALTY` (the estimators check the
    value itself through their parameter constraints)."""
    return DEFAULT_PENALTY if penalty is None else float(penalty)


def _feature_of_column(offsets: list[int]) -> npt.NDArray[np.intp]:
    """The feature each column of a flat table belongs to."""
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def score_tables(
    kind: str,
    log_table: FloatArray,
    class_log_prior: FloatArray,
    class_weights: FloatArray,
    table_weights: FloatArray,
    offsets: list[int],
) -> tuple[FloatArray, FloatArray]:
    """The weighted score table ``(sum K_f, C)`` and class scores ``(C,)``.

    ``log_table`` is the generative ``ln theta`` laid out ``(sum K_f, C)``; its ``-inf``
    rows (zero-mean categories, skipped when scoring) stay ``-inf`` whatever the weight.
    """
    if kind == "cll-feature":
        weights = table_weights[_feature_of_column(offsets)][:, None]
    else:
        weights = table_weights
    finite = np.isfinite(log_table)
    with np.errstate(invalid="ignore"):
        table = np.where(finite, weights * log_table, -np.inf)
    return np.ascontiguousarray(table), class_weights * class_log_prior


def fit_weights(
    kind: str,
    codes: npt.NDArray[np.int32],
    labels: npt.NDArray[np.int64],
    sample_weight: FloatArray,
    log_table: FloatArray,
    class_log_prior: FloatArray,
    offsets: list[int],
    *,
    penalty: float,
    n_threads: int,
    tol: float = DEFAULT_TOL,
    held_out: tuple[FloatArray, FloatArray] | None = None,
) -> DiscriminativeWeights:
    """The weights minimising ``J`` (module docstring) on a training set.

    Parameters
    ----------
    kind : {"cll-feature", "cll-value"}
    codes : ndarray of shape (n_features, n_samples)
        The training rows as category codes (-1: missing).
    labels : ndarray of shape (n_samples,)
        Class index of each row.
    sample_weight : ndarray of shape (n_samples,)
    log_table : ndarray of shape (sum K_f, n_classes)
        The generative ``ln theta``.
    class_log_prior : ndarray of shape (n_classes,)
    offsets : list of int
        Where each feature's columns start in the flat table.
    penalty : float
        Precision of the Gaussian prior on the weights (0: none).
    n_threads : int
    tol : float, default=DEFAULT_TOL
        Stop when no gradient entry exceeds ``tol`` times the total sample weight (at
        least ``tol``): the largest entry of the mean per-row gradient.
    held_out : (numerator, denominator), default=None
        The plug-in parts of ``log_table`` (:func:`plug_in_parts`): each training row is
        then scored with its own count removed from its own class's cells (leave-one-out).
        None scores the rows with ``log_table`` itself.

    Returns
    -------
    DiscriminativeWeights
        For ``"cll-value"``, ``table_weights`` holds the whole weight of every cell,
        ``w[f] + d[c, f, v]``.
    """
    if kind not in WEIGHTINGS:
        raise ValueError(f"unknown weighting {kind!r}")
    if not np.all(np.isfinite(class_log_prior)):
        raise ValueError(
            "discriminative weighting needs every class prior to be positive; "
            "class_prior gives probability 0 to a class"
        )
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    sample_weight = np.ascontiguousarray(sample_weight, dtype=np.float64)
    log_table = np.ascontiguousarray(log_table, dtype=np.float64)
    n_classes = class_log_prior.shape[0]
    n_features = len(offsets) - 1
    log_table_zeroed = np.where(np.isfinite(log_table), log_table, 0.0)
    n_cells = log_table.size if kind == "cll-value" else 0
    divisor = _normalising_divisor(sample_weight)
    # theta = [a (C), w (F), d (cells, "cll-value" only)]; start: the generative model
    start = np.concatenate([np.ones(n_classes + n_features), np.zeros(n_cells)])
    # the penalty's scale per parameter: 1 for a and w; ln theta^2 for a cell deviation d,
    # which penalises the change d ln theta it makes to its score entry
    scale = np.concatenate(
        [np.ones(n_classes + n_features), log_table_zeroed.ravel()[:n_cells] ** 2]
    )

    def cell_weights(theta: FloatArray) -> FloatArray:
        weights = np.repeat(theta[n_classes : n_classes + n_features], np.diff(offsets))
        weights = np.broadcast_to(weights[:, None], log_table.shape)
        if kind == "cll-value":
            weights = weights + theta[n_classes + n_features :].reshape(log_table.shape)
        return weights

    curvature = _diagonal_curvature(
        kind, codes, sample_weight, log_table_zeroed, class_log_prior, offsets
    )
    curvature = (curvature + penalty * scale) / divisor
    inverse_curvature = 1.0 / np.maximum(curvature, 1e-12 * tol + 1e-300)
    theta, value, n_iter, converged = _minimise_in_core(
        _core.fit_naive_bayes_weights,
        codes,
        labels,
        sample_weight / divisor,
        log_table,
        np.ascontiguousarray(class_log_prior, dtype=np.float64),
        list(offsets),
        cell_weights=kind == "cll-value",
        start=start,
        precision=penalty * scale / divisor,
        inverse_curvature=inverse_curvature,
        n_jobs=n_threads,
        held_out=None
        if held_out is None
        else tuple(np.ascontiguousarray(part / divisor) for part in held_out),
        gtol=tol,
        what=f"the {kind} weights",
    )
    value *= divisor
    table_weights = (
        np.array(cell_weights(theta))
        if kind == "cll-value"
        else theta[n_classes : n_classes + n_features].copy()
    )
    return DiscriminativeWeights(
        kind=kind,
        class_weights=theta[:n_classes].copy(),
        table_weights=table_weights,
        feature_weights=theta[n_classes : n_classes + n_features].copy(),
        objective=value,
        n_iter=n_iter,
        converged=converged,
    )


def plug_in_parts(
    counts: FloatArray, prior_mean: FloatArray, concentration: FloatArray, offsets: list[int]
) -> tuple[FloatArray, FloatArray]:
    """The numerator ``N[c, f, v] + m mu_v`` and denominator ``N[c, f] + m`` of the plug-in
    log-probabilities (SPEC eq. 3), both laid out ``(sum K_f, C)`` like the log table.

    ``counts`` is ``(C, sum K_f)``, ``prior_mean`` ``(sum K_f,)`` or ``(C, sum K_f)``,
    ``concentration`` ``(C, F)``. A feature with no observed value (NaN concentration)
    gets zeros, which leave its cells as they are.
    """
    counts = np.asarray(counts, dtype=np.float64)
    feature = _feature_of_column(offsets)
    concentration = np.asarray(concentration, dtype=np.float64)[:, feature]
    # feature by feature: reduceat read past the end for a last feature with no category
    # (one whose values are all missing) and gave an empty one its neighbour's sum
    totals = feature_sums(counts, offsets)
    numerator = counts + concentration * np.asarray(prior_mean, dtype=np.float64)
    denominator = totals[:, feature] + concentration
    usable = np.isfinite(numerator) & np.isfinite(denominator)
    numerator = np.where(usable, numerator, 0.0)
    denominator = np.where(usable, denominator, 0.0)
    return np.ascontiguousarray(numerator.T), np.ascontiguousarray(denominator.T)


def _diagonal_curvature(
    kind: str,
    codes: npt.NDArray[np.int32],
    sample_weight: FloatArray,
    log_table: FloatArray,
    class_log_prior: FloatArray,
    offsets: list[int],
) -> FloatArray:
    """The diagonal of the data term's Hessian at the generative model (``a = w = 1``,
    ``d = 0``): the preconditioner of L-BFGS.

    A parameter that adds ``g_ic`` times itself to class ``c``'s score of row ``i`` has
    the curvature ``sum_i s_i Var_{c ~ p_i}(g_ic)``; for a class or cell weight (one class
    only) that is ``s_i p_ic (1 - p_ic) g_ic^2``. ``log_table`` has its ``-inf`` entries
    zeroed (they never score).
    """
    n_classes = class_log_prior.shape[0]
    n_features = len(offsets) - 1
    n_rows = codes.shape[1]

    def term(f: int) -> FloatArray:
        """Feature f's (rows, classes) score terms (0 where its value is missing):
        gathered once per pass instead of kept, so that memory is one feature's, not
        rows x features x classes (681 MB for 10,000 rows, 40 features, 200 classes)."""
        present = codes[f] >= 0
        values = np.zeros((n_rows, n_classes))
        values[present] = log_table[offsets[f] + codes[f][present]]
        return values

    scores = np.broadcast_to(class_log_prior, (n_rows, n_classes)).copy()
    for f in range(n_features):
        scores += term(f)
    probability = np.exp(scores - scores.max(axis=1, keepdims=True))
    probability /= probability.sum(axis=1, keepdims=True)
    spread = sample_weight[:, None] * probability * (1.0 - probability)
    class_curvature = spread.sum(axis=0) * class_log_prior**2
    feature_curvature = np.empty(n_features)
    cell_curvature = np.zeros_like(log_table)
    classes = np.arange(n_classes)
    for f in range(n_features):
        values = term(f)
        mean = np.sum(probability * values, axis=1)
        variance = np.sum(probability * values**2, axis=1) - mean**2
        feature_curvature[f] = float(sample_weight @ np.maximum(variance, 0.0))
        if kind == "cll-value":
            present = codes[f] >= 0
            k = offsets[f + 1] - offsets[f]
            # every class in one bincount over (value, class) bins, each bin's rows
            # added in row order (as one bincount per class adds them)
            bins = (codes[f][present].astype(np.int64)[:, None] * n_classes + classes).ravel()
            cell_curvature[offsets[f] : offsets[f + 1]] = np.bincount(
                bins, weights=spread[present].ravel(), minlength=k * n_classes
            ).reshape(k, n_classes)
    parts = [class_curvature, feature_curvature]
    if kind == "cll-value":
        parts.append((cell_curvature * log_table**2).ravel())
    return np.concatenate(parts)


def _normalising_divisor(sample_weight: FloatArray) -> float:
    """What the core divides ``J`` by: the total sample weight when it exceeds 1. The
    minimiser is the same (the penalty is divided alike), and the gradient stays of order
    one per row however large the weights: with a total beyond about 1e154 the L-BFGS
    products of raw gradients overflowed and the weights came out wrong."""
    return max(1.0, float(sample_weight.sum()))


def _minimise_in_core(
    fit: Callable[..., tuple[FloatArray, float, float, int, bool]],
    *arrays: object,
    gtol: float,
    what: str,
    **inputs: object,
) -> tuple[FloatArray, float, int, bool]:
    """One weight fit of the core (``fit(*arrays, **inputs)``: objective, gradient and
    L-BFGS to the gradient tolerance ``gtol``), warning (``ConvergenceWarning``, at the
    estimator's caller) when ``what`` did not converge; returns (theta, value, n_iter,
    converged)."""
    theta, value, largest, n_iter, converged = fit(
        *arrays, gradient_tolerance=gtol, max_iter=MAX_ITER, memory=MEMORY, **inputs
    )
    if not converged:
        warn(
            f"{what} did not converge in {n_iter} L-BFGS iterations (largest gradient "
            f"entry {largest:.3g}, tolerance {gtol:.3g})",
            ConvergenceWarning,
        )
    return theta, value, n_iter, converged


def aode_parent_terms(
    codes: npt.NDArray[np.int32],
    model: dict[str, npt.NDArray[np.float64]],
    pair_tables: dict[str, np.ndarray],
    offsets: list[int],
    min_parent_count: float,
    n_threads: int,
    left_out: dict[str, Any] | None = None,
    *,
    pair_cells_checked: bool = False,
) -> FloatArray:
    """Each super-parent's own term of the AODE score, shape (S, n_parents, C).

    ``T_i = ln P(y, x_i) + sum_{j != i} ln P(x_j | y, x_i)`` over the q qualifying
    super-parents (SPEC eq. 7): what the fitted scorer returns when ``i`` is the only
    parent that qualifies, computed for every parent in one pass of the core
    (``_core.aode_parent_terms``, src/aode/parent_terms.rs). A row on which parent ``i``
    does not qualify (value missing, unseen or rarer than ``min_parent_count``) gets the
    scorer's Naive Bayes fallback as its ``T_i``. With ``left_out`` (the rows are the
    model's training rows: ``AODE._left_out_rows``) each row's terms are those of the
    tables without its own counts (src/aode/leave_one_out.rs). With
    ``pair_cells_checked`` the caller vouches that the fit (or
    ``_core.check_aode_pair_tables``) checked ``pair_tables`` and that they have not
    changed since: the call then checks their shape, not every cell.
    """
    terms: FloatArray = _core.aode_parent_terms(
        codes,
        model,
        pair_tables,
        offsets=offsets,
        min_parent_count=min_parent_count,
        cells=False,
        n_jobs=n_threads,
        left_out=left_out,
        pair_cells_checked=pair_cells_checked,
    )["terms"]
    return terms


def aode_parent_cells(
    codes: npt.NDArray[np.int32],
    model: dict[str, npt.NDArray[np.float64]],
    pair_tables: dict[str, np.ndarray],
    offsets: list[int],
    min_parent_count: float,
    n_threads: int,
    left_out: dict[str, Any] | None = None,
    numbered: tuple[npt.NDArray[np.int64], list[int], npt.NDArray[np.int64]] | None = None,
    cell_weights: tuple[_core.CellNumbering, FloatArray] | None = None,
    in_sample_terms: bool = True,
    *,
    pair_cells_checked: bool = False,
) -> tuple[FloatArray, npt.NDArray[np.bool_], FloatArray]:
    """The super-parents' terms (:func:`aode_parent_terms`, ``left_out`` as there) and
    the cells they add up, in one pass of the core. The cells and ``qualifies`` are the
    fitted tables' whether or not the terms leave the rows out. With ``numbered = (cells
    (S, P F), column_starts, first_row)`` (:func:`number_cells` of the rows' cell keys)
    each numbered cell's value, evaluated once, without the ``(S, P, F, C)`` array: what
    the weights read (with ``left_out``, the rows' left-out terms are corrected from
    these values too; without ``left_out`` and ``in_sample_terms`` the rows are not
    scored and the terms are zero, for a caller that replaces them all). With
    ``cell_weights = (numbering, weights (cells, C))`` (``_core.CellNumbering`` of each
    column's sorted keys, as :func:`number_cells` numbers them) each row's weighted cells
    summed, ``sum w[cell] * (cell value / P)`` over the row's cells
    that have a weight, in column order: the cell part of the ``"cll-value"`` scores,
    without the cells. ``pair_cells_checked`` as for :func:`aode_parent_terms`.

    Returns
    -------
    terms : ndarray of shape (S, P, C)
    qualifies : ndarray of shape (S, P)
        Whether each super-parent qualifies on the row (value present, known and at least
        ``min_parent_count``); its cells are zero where it does not.
    cells : ndarray of shape (S, P, F, C); (cells, C) with ``numbered``; (S, C) with ``cell_weights``
        Super-parent ``i``'s ``ln P(x_j | y, x_i)`` in column j (zero where ``x_j`` is
        missing, unknown or a category that never scores) and ``ln P(y, x_i) - ln pi_y``
        in column i; with ``numbered``, row ``k`` is the value of cell ``k`` (zero where its
        parent does not qualify); with ``cell_weights``, the rows' weighted sums.
    """
    if numbered is not None and cell_weights is not None:
        raise ValueError("give numbered or cell_weights, not both")
    places: dict[str, Any] = {}
    returned = "cells"
    if numbered is not None:
        cells, column_starts, first_row = numbered
        places = {
            "cell_numbers": np.ascontiguousarray(cells.T, dtype=np.int64),
            "cell_column_starts": [int(start) for start in column_starts],
            "cell_first_rows": np.ascontiguousarray(first_row, dtype=np.int64),
            "in_sample_terms": in_sample_terms,
        }
        returned = "numbered_cells"
    if cell_weights is not None:
        places = {
            "cell_numbering": cell_weights[0],
            "cell_weights": np.ascontiguousarray(cell_weights[1], dtype=np.float64),
        }
        returned = "cell_sums"
    out = _core.aode_parent_terms(
        codes,
        model,
        pair_tables,
        offsets=offsets,
        min_parent_count=min_parent_count,
        cells=returned == "cells",
        n_jobs=n_threads,
        left_out=left_out,
        pair_cells_checked=pair_cells_checked,
        **places,
    )
    return out["terms"], out["qualifies"], out[returned]


def fit_parent_weights(
    terms: FloatArray,
    labels: npt.NDArray[np.int64],
    sample_weight: FloatArray,
    class_log_prior: FloatArray,
    *,
    penalty: float,
    tol: float = DEFAULT_TOL,
    n_threads: int = 1,
) -> DiscriminativeWeights:
    """One weight per AODE super-parent (and per class prior), learned like
    ``"cll-feature"``: WANBIA-C on the log-linear form of AODE.

    The weighted score is ``s_c = a_c ln pi_c + 1/P sum_p v_p (T_p,c - ln pi_c)`` with the
    parent terms ``T`` of :func:`aode_parent_terms`: at ``a = v = 1`` the geometric mean
    of the P one-dependence models (the log-linear AODE of Zaidi et al.'s discriminative
    AnDE), which the weights move by minimising
    ``J = -sum_i s_i ln P(y_i | x_i) + penalty / 2 (||a - 1||^2 + ||v - 1||^2)``.
    ``J`` is convex; it is minimised in Rust (``_core.fit_aode_weights`` without cells:
    objective, gradient and L-BFGS in one call), deterministically, so the weights do not
    depend on ``n_threads``.

    Returns
    -------
    DiscriminativeWeights
        ``feature_weights`` and ``table_weights`` are ``v``, one per super-parent.
    """
    n_rows, n_parents, n_classes = terms.shape
    if not np.all(np.isfinite(class_log_prior)):
        raise ValueError(
            "discriminative weighting needs every class prior to be positive; "
            "class_prior gives probability 0 to a class"
        )
    finite = np.isfinite(terms)
    if not finite.all():
        raise ValueError("an AODE parent term is not finite: the model cannot be weighted")
    likelihood = (terms - class_log_prior) / n_parents  # (S, P, C)
    divisor = _normalising_divisor(sample_weight)
    start = np.ones(n_classes + n_parents)

    def scores(theta: FloatArray) -> FloatArray:
        combined: FloatArray = np.einsum("spc,p->sc", likelihood, theta[n_classes:])
        return theta[:n_classes] * class_log_prior + combined

    # the data term's Hessian diagonal at the start: the preconditioner
    s0 = scores(start)
    probability = np.exp(s0 - np.logaddexp.reduce(s0, axis=1, keepdims=True))
    spread = sample_weight[:, None] * probability * (1.0 - probability)
    mean = np.einsum("sc,spc->sp", probability, likelihood)
    variance = np.einsum("sc,spc->sp", probability, likelihood**2) - mean**2
    curvature = np.concatenate(
        [
            spread.sum(axis=0) * class_log_prior**2,
            sample_weight @ np.maximum(variance, 0.0),
        ]
    )
    theta, value, n_iter, converged = _minimise_in_core(
        _core.fit_aode_weights,
        np.ascontiguousarray(likelihood),
        np.zeros((0, n_rows), dtype=np.int64),
        [0],
        np.zeros((0, n_classes)),
        np.ascontiguousarray(labels, dtype=np.int64),
        np.ascontiguousarray(sample_weight / divisor, dtype=np.float64),
        np.ascontiguousarray(class_log_prior, dtype=np.float64),
        start=start,
        precision=np.full(start.shape[0], float(penalty) / divisor),
        inverse_curvature=1.0 / np.maximum((curvature + penalty) / divisor, 1e-300),
        n_jobs=n_threads,
        gtol=tol,
        what="the AODE parent weights",
    )
    value *= divisor
    parent_weights = theta[n_classes:].copy()
    return DiscriminativeWeights(
        kind="cll-feature",
        class_weights=theta[:n_classes].copy(),
        table_weights=parent_weights,
        feature_weights=parent_weights,
        objective=value,
        n_iter=n_iter,
        converged=converged,
    )


def parent_weighted_log_scores(
    terms: FloatArray,
    class_log_prior: FloatArray,
    class_weights: FloatArray,
    parent_weights: FloatArray,
) -> FloatArray:
    """The weighted AODE scores ``s_c`` (:func:`fit_parent_weights`) of parent terms,
    shape (S, C)."""
    n_parents = terms.shape[1]
    combined: FloatArray = np.einsum(
        "spc,p->sc", (terms - class_log_prior) / n_parents, parent_weights
    )
    return class_weights * class_log_prior + combined


def aode_cell_keys(
    codes: npt.NDArray[np.int32],
    parents: npt.NDArray[np.intp],
    cardinality: npt.NDArray[np.intp],
    n_threads: int = 1,
) -> npt.NDArray[np.int64]:
    """Which cell of each super-parent's tables each row uses, shape (S, P F), stored
    column by column (each column contiguous, as its users read it).

    Column ``p F + j`` is super-parent ``i = parents[p]``'s child ``j`` (key ``u K_j + v``)
    or, at ``j = i``, its own term ``ln P(y, x_i = u)`` (key ``u``); -1 where the parent
    or the child value is missing or unknown (``_core.aode_cell_keys``).
    """
    by_column: npt.NDArray[np.int64] = _core.aode_cell_keys(
        np.ascontiguousarray(codes, dtype=np.int32),
        [int(i) for i in parents],
        [int(k) for k in cardinality],
        n_jobs=n_threads,
    )
    return by_column.T


def number_cells(
    keys: npt.NDArray[np.int64], n_threads: int = 1
) -> tuple[npt.NDArray[np.int64], list[int], list[npt.NDArray[np.int64]], npt.NDArray[np.int64]]:
    """The cells of the (S, K) ``keys`` (-1: none): each column's distinct keys numbered
    in key order, the columns one after another (``np.unique`` of each column; in Rust,
    src/cell_numbers.rs).

    Returns ``(cells (S, K), column_starts, each column's sorted keys, each cell's first
    row)``; ``cells`` is stored column by column, as :func:`aode_cell_keys` stores keys.
    """
    numbered = _core.number_cells(np.ascontiguousarray(keys.T, dtype=np.int64), n_jobs=n_threads)
    starts: list[int] = numbered["column_starts"]
    column_keys = np.split(numbered["keys"], starts[1:-1]) if keys.shape[1] else []
    return numbered["cells"].T, starts, column_keys, numbered["first_row"]


@dataclass(frozen=True)
class AodeCellWeights:
    """The learned weights of ``AODE(weighting="cll-value")`` (:func:`fit_aode_cell_weights`).

    Attributes
    ----------
    class_weights : ndarray of shape (C,)
        ``a``.
    parent_weights : ndarray of shape (P,)
        ``v``.
    cell_weights : ndarray of shape (n_cells, C)
        ``d``, columns in order (:func:`aode_cell_keys`).
    objective, n_iter, converged
    row_feature_weights : ndarray of shape (Q, C)
        ``b``, one row per row feature (none: Q = 0).
    """

    class_weights: FloatArray
    parent_weights: FloatArray
    cell_weights: FloatArray
    objective: float
    n_iter: int
    converged: bool
    row_feature_weights: FloatArray


def fit_aode_cell_weights(
    likelihood: FloatArray,
    cells: npt.NDArray[np.int64],
    column_starts: list[int],
    cell_values: FloatArray,
    labels: npt.NDArray[np.int64],
    sample_weight: FloatArray,
    class_log_prior: FloatArray,
    row_features: FloatArray | None = None,
    *,
    penalty: float,
    cell_penalty: float,
    n_threads: int,
    tol: float = DEFAULT_TOL,
    merge_shared_rows: bool = True,
) -> AodeCellWeights:
    """ALR on AODE's tables: the weights minimising the penalised negative conditional
    log-likelihood of the scores

    ``s_c = a_c ln pi_c + sum_p v_p L[p, c] + sum over the row's cells e of d[e, c] V[e, c]``

    ``L`` (S, P, C) are the super-parents' terms ``(T_p - ln pi) / P``, cross-fitted (the
    ``"cll-feature"`` model, :func:`fit_parent_weights`); ``cells`` (S, P F) the row's cell
    in each column (-1: none; column ``k``'s cells inside
    ``column_starts[k]:column_starts[k + 1]``) and ``V`` (cells, C) the fitted model's cell
    values, ``ln P(x_j | c, x_i) / P`` (or the parent's ``(ln P(c, x_i) - ln pi_c) / P``).
    ``row_features`` ``G`` (S, Q), if given, add ``sum_q b[q, c] G[i, q]`` to the scores
    (``AODE(count_features=True)``: how often the row's values occur among the other
    training rows), ``b`` centred on 0 with the precision ``cell_penalty Q``: for
    standardised, independent features the prior variance of a row's whole feature term
    is then a cell's, ``1 / cell_penalty``.
    So ``v_p + d[e, c]`` is the whole weight of a cell's log-probability, like the cell
    weights of ``"cll-value"`` on Naive Bayes; ``d`` acts on the model's own tables, ``v``
    on terms the row did not help to fit. The penalty
    ``penalty / 2 (||a - 1||^2 + ||v - 1||^2) + cell_penalty / 2 sum V^2 d^2`` measures ``d``
    by the change it makes to a score, like the coefficients of an L2 logistic regression on the cells'
    indicators; ``d = 0`` is the ``"cll-feature"`` model. The objective, its gradient and
    L-BFGS run in Rust in one call (``_core.fit_aode_weights``: rows in parallel,
    deterministic, the same weights for any ``n_threads``).

    With ``cell_penalty > 0`` and ``merge_shared_rows`` (the default) the cells used by
    exactly the same training rows are fitted as one weight and split back afterwards
    (:mod:`hebnb._shared_rows`: the same optimum, with far fewer weights where most
    values are rare). A caller that fits the same cells at several penalties prepares
    them once (:func:`aode_cell_problem`) and solves each (:func:`solve_aode_cell_weights`).
    """
    problem = aode_cell_problem(
        likelihood,
        cells,
        column_starts,
        cell_values,
        labels,
        sample_weight,
        class_log_prior,
        row_features,
        n_threads=n_threads,
        merge_shared_rows=merge_shared_rows and cell_penalty > 0,
    )
    return solve_aode_cell_weights(
        problem,
        penalty=penalty,
        cell_penalty=cell_penalty,
        n_threads=n_threads,
        tol=tol,
    )


@dataclass(frozen=True)
class AodeCellProblem:
    """What :func:`fit_aode_cell_weights` solves, apart from the penalties: built once
    for a grid of penalties (``AODE(cell_penalty="cv")``).

    Attributes
    ----------
    likelihood, labels, sample_weight, class_log_prior
        As given.
    column_cells : ndarray of shape (K, S)
        Each column's fitted cell of every row, -1 for none (the groups of cells that
        share their rows, if merged).
    column_starts : list of int
    cell_values : ndarray of shape (fitted cells, C)
    cell_precision : ndarray of shape (fitted cells, C)
        The cells' penalty precisions at ``cell_penalty = 1`` (``V^2 + 1e-12``, merged).
    curvature : ndarray of shape (C + P + Q C,)
        The data term's Hessian diagonal at the generative model in the class, super-parent
        and row feature weights (the preconditioner).
    cell_spread : ndarray of shape (fitted cells, C)
        ``sum_i s_i p_ic (1 - p_ic)`` at the generative model over the rows that use each
        cell: the data term's curvature in its change of class c's score.
    merged : SharedRowCells or None
        The way back from merged weights to every cell's.
    row_features : ndarray of shape (S, Q)
        ``G`` (Q = 0: none).
    """

    likelihood: FloatArray
    column_cells: npt.NDArray[np.int64]
    column_starts: list[int]
    cell_values: FloatArray
    labels: npt.NDArray[np.int64]
    sample_weight: FloatArray
    class_log_prior: FloatArray
    cell_precision: FloatArray
    curvature: FloatArray
    cell_spread: FloatArray
    merged: SharedRowCells | None
    row_features: FloatArray


def aode_cell_problem(
    likelihood: FloatArray,
    cells: npt.NDArray[np.int64],
    column_starts: list[int],
    cell_values: FloatArray,
    labels: npt.NDArray[np.int64],
    sample_weight: FloatArray,
    class_log_prior: FloatArray,
    row_features: FloatArray | None = None,
    *,
    n_threads: int,
    merge_shared_rows: bool = True,
) -> AodeCellProblem:
    """The inputs of :func:`fit_aode_cell_weights` checked and prepared for
    :func:`solve_aode_cell_weights` at any penalties: with ``merge_shared_rows`` the cells
    that the same rows use merged into one weight, the preconditioner computed."""
    n_classes = likelihood.shape[2]
    if not np.all(np.isfinite(class_log_prior)):
        raise ValueError(
            "discriminative weighting needs every class prior to be positive; "
            "class_prior gives probability 0 to a class"
        )
    if not np.all(np.isfinite(likelihood)):
        raise ValueError("an AODE parent term is not finite: the model cannot be weighted")
    n_rows = likelihood.shape[0]
    if row_features is None:
        row_features = np.zeros((n_rows, 0))
    # the penalty's precision of each cell at cell_penalty = 1; the cells that the same
    # rows use are one weight (exactly: the penalised optimum splits their sum in a fixed
    # way, whatever the penalty's scale)
    cell_precision = cell_values**2 + 1e-12
    merged = None
    if merge_shared_rows:
        row_groups = group_cells_by_rows(cells, column_starts, n_threads)
        merged = merge_cells_sharing_rows(row_groups, cell_values, cell_precision)
        cells, column_starts = row_groups.cells, row_groups.column_starts
        cell_values, cell_precision = merged.values, merged.precision
    column_cells = np.ascontiguousarray(cells.T, dtype=np.int64)
    column_starts = [int(start) for start in column_starts]

    # the data term's Hessian diagonal at the generative model: the preconditioner
    scores = class_log_prior + likelihood.sum(axis=1)
    probability = np.exp(scores - scores.max(axis=1, keepdims=True))
    probability /= probability.sum(axis=1, keepdims=True)
    spread = sample_weight[:, None] * probability * (1.0 - probability)
    mean = np.einsum("sc,spc->sp", probability, likelihood)
    variance = np.einsum("sc,spc->sp", probability, likelihood**2) - mean**2
    # sum_i spread[i, c] over the rows that use each cell: the curvature in its score change
    cell_spread = _core.cell_row_sums(column_cells, column_starts, spread, n_jobs=n_threads)
    curvature = np.concatenate(
        [
            spread.sum(axis=0) * class_log_prior**2,
            sample_weight @ np.maximum(variance, 0.0),
            ((row_features**2).T @ spread).ravel(),
        ]
    )
    return AodeCellProblem(
        likelihood=np.ascontiguousarray(likelihood, dtype=np.float64),
        column_cells=column_cells,
        column_starts=column_starts,
        cell_values=np.ascontiguousarray(cell_values, dtype=np.float64).reshape(-1, n_classes),
        labels=np.ascontiguousarray(labels, dtype=np.int64),
        sample_weight=np.ascontiguousarray(sample_weight, dtype=np.float64),
        class_log_prior=np.ascontiguousarray(class_log_prior, dtype=np.float64),
        cell_precision=cell_precision,
        curvature=curvature,
        cell_spread=cell_spread,
        merged=merged,
        row_features=np.ascontiguousarray(row_features, dtype=np.float64),
    )


def solve_aode_cell_weights(
    problem: AodeCellProblem,
    *,
    penalty: float,
    cell_penalty: float,
    n_threads: int,
    tol: float = DEFAULT_TOL,
    two_class: bool = True,
) -> AodeCellWeights:
    """The weights of :func:`fit_aode_cell_weights` for a prepared ``problem``
    (:func:`aode_cell_problem`); a merged problem needs ``cell_penalty > 0``. With two
    classes, a positive ``cell_penalty`` and ``two_class`` (the default) each cell's pair
    of weights is fitted as the one change it makes to the classes' score difference
    (:func:`_solve_two_class_cell_weights`: the same optimum, half the weights)."""
    if problem.merged is not None and not cell_penalty > 0:
        raise ValueError(
            f"cells merged by their rows need a positive cell penalty, got {cell_penalty}"
        )
    _, n_parents, n_classes = problem.likelihood.shape
    if two_class and n_classes == 2 and cell_penalty > 0:
        return _solve_two_class_cell_weights(
            problem, penalty=penalty, cell_penalty=cell_penalty, n_threads=n_threads, tol=tol
        )
    n_row_features = problem.row_features.shape[1]
    n_generative = n_classes + n_parents
    n_head = n_generative + n_row_features * n_classes
    n_fitted = int(problem.column_starts[-1])
    start = np.concatenate(
        [np.ones(n_generative), np.zeros(n_head - n_generative + n_fitted * n_classes)]
    )
    scale = np.concatenate(
        [
            np.full(n_generative, penalty),
            np.full(n_head - n_generative, cell_penalty * n_row_features),
            cell_penalty * problem.cell_precision.ravel(),
        ]
    )
    curvature = np.concatenate(
        [problem.curvature, (problem.cell_spread * problem.cell_values**2).ravel()]
    )
    theta, outcome = _solve_cells_in_core(
        _core.fit_aode_weights,
        problem,
        (problem.likelihood, problem.cell_values),
        (start, scale, curvature),
        n_threads=n_threads,
        tol=tol,
    )
    return _cell_weights_found(
        problem,
        theta[:n_generative],
        theta[n_generative:n_head].reshape(n_row_features, n_classes),
        theta[n_head:].reshape(n_fitted, n_classes),
        outcome,
    )


def _solve_cells_in_core(
    fit: Callable[..., tuple[FloatArray, float, float, int, bool]],
    problem: AodeCellProblem,
    terms_and_cell_factors: tuple[FloatArray, FloatArray],
    start_scale_curvature: tuple[FloatArray, FloatArray, FloatArray],
    *,
    n_threads: int,
    tol: float,
) -> tuple[FloatArray, tuple[float, int, bool]]:
    """One AODE cell-weight fit of the core (``fit``: ``_core.fit_aode_weights`` or
    ``_core.fit_two_class_aode_weights``) on ``problem``'s rows and cells, with the
    parent terms and the cells' factors (values or scales) that fit takes, from
    ``start`` with the precisions ``scale`` and the data term's Hessian diagonal
    ``curvature``. The objective is divided by the total sample weight in the core
    (:func:`_normalising_divisor`) and multiplied back here. Returns theta and
    (objective, iterations, converged)."""
    terms, cell_factors = terms_and_cell_factors
    start, scale, curvature = start_scale_curvature
    divisor = _normalising_divisor(problem.sample_weight)
    theta, value, n_iter, converged = _minimise_in_core(
        fit,
        terms,
        problem.column_cells,
        problem.column_starts,
        cell_factors,
        problem.labels,
        problem.sample_weight / divisor,
        problem.class_log_prior,
        start=start,
        precision=scale / divisor,
        inverse_curvature=1.0 / np.maximum((curvature + scale) / divisor, 1e-300),
        n_jobs=n_threads,
        gtol=tol,
        what="the AODE cell weights",
        row_features=problem.row_features if problem.row_features.shape[1] else None,
    )
    return theta, (value * divisor, n_iter, converged)


def _solve_two_class_cell_weights(
    problem: AodeCellProblem,
    *,
    penalty: float,
    cell_penalty: float,
    n_threads: int,
    tol: float,
) -> AodeCellWeights:
    """:func:`solve_aode_cell_weights` of a two-class problem, as a logistic model of the
    classes' score difference (``_core.fit_two_class_aode_weights``).

    A pair of class weights ``w_c`` on values ``x_c`` (a cell's ``d`` on ``V``; a row
    feature's ``b`` on the feature) changes the score difference by ``t = w_1 x_1 - w_0
    x_0`` and costs ``sum_c p_c w_c^2 / 2``; for a given ``t`` that is least,
    ``t^2 / (2 r)`` with ``r = sum_c x_c^2 / p_c``, at ``w_c = +-t x_c / (p_c r)``. So the
    fit has one weight per pair and splits it back: the optimum of the two-class weights
    (the objective is strictly convex), with half the weights. A cell's weight is
    ``u = t / m``, ``m`` the larger ``|x_c|``: the gradient in ``u`` is then the larger of
    the gradients in the cell's two weights at that split, so ``tol`` stops the fit where
    it stops the general one. A cell whose values are both 0 changes no score (``m = 0``);
    its weights stay at 0.
    """
    _, n_parents, _ = problem.likelihood.shape
    n_row_features = problem.row_features.shape[1]
    n_generative = 2 + n_parents
    values = problem.cell_values
    cell_precision = cell_penalty * problem.cell_precision
    reach = (values**2 / cell_precision).sum(axis=1)  # r
    scales = np.abs(values).max(axis=1)  # m
    moves = scales > 0
    change_precision = np.divide(scales**2, reach, out=np.ones_like(reach), where=moves)
    feature_precision = cell_penalty * n_row_features
    n_fitted = values.shape[0]
    start = np.concatenate([np.ones(n_generative), np.zeros(n_row_features + n_fitted)])
    scale = np.concatenate(
        [
            np.full(n_generative, penalty),
            np.full(n_row_features, feature_precision / 2.0),
            change_precision,
        ]
    )
    # the classes' spreads are equal with two classes: s p (1 - p)
    curvature = np.concatenate(
        [
            problem.curvature[:n_generative],
            problem.curvature[n_generative:].reshape(n_row_features, 2)[:, 0],
            problem.cell_spread[:, 0] * scales**2,
        ]
    )
    differences = np.ascontiguousarray(problem.likelihood[:, :, 1] - problem.likelihood[:, :, 0])
    theta, outcome = _solve_cells_in_core(
        _core.fit_two_class_aode_weights,
        problem,
        (differences, scales),
        (start, scale, curvature),
        n_threads=n_threads,
        tol=tol,
    )
    sign = np.array([-1.0, 1.0])
    changes = scales * theta[n_generative + n_row_features :]  # t
    cell_weights = (
        sign * changes[:, None] * values / (cell_precision * np.where(moves, reach, 1.0)[:, None])
    )
    # a row feature's pair: x_c = 1 and equal precisions, so each class takes half
    feature_weights = sign * theta[n_generative : n_generative + n_row_features, None] / 2.0
    return _cell_weights_found(
        problem, theta[:n_generative], feature_weights, cell_weights, outcome
    )


def _cell_weights_found(
    problem: AodeCellProblem,
    generative: FloatArray,
    row_feature_weights: FloatArray,
    cell_weights: FloatArray,
    outcome: tuple[float, int, bool],
) -> AodeCellWeights:
    """The :class:`AodeCellWeights` of fitted ``[a, v]``, ``b`` (Q, C) and ``d`` (fitted
    cells, C), the merged cells' weights split back; ``outcome`` is (objective,
    iterations, converged)."""
    n_classes = problem.class_log_prior.shape[0]
    if problem.merged is not None:
        cell_weights = problem.merged.cell_weights(cell_weights)
    objective, n_iter, converged = outcome
    return AodeCellWeights(
        class_weights=generative[:n_classes].copy(),
        parent_weights=generative[n_classes:].copy(),
        cell_weights=np.asarray(cell_weights, dtype=np.float64),
        objective=objective,
        n_iter=n_iter,
        converged=converged,
        row_feature_weights=np.asarray(row_feature_weights, dtype=np.float64),
    )


#: ``AODE(cell_penalty="cv")``: the penalties tried and the folds that compare them
#: (``AODE._cross_validated_cell_penalty``). Why not one fixed value: the best penalty over
#: the 25 shared datasets runs from 3 (rule-like data: car, nursery, tic-tac-toe) to 300
#: (small noisy ones: credit-g, spect), and MacKay's evidence fixed point chose the large
#: end on rule-like data too (docs/discriminative.md).
CV_CELL_PENALTIES = (3.0, 10.0, 30.0, 100.0, 300.0)
CV_FOLDS = 3
