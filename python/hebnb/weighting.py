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

The optimiser is scipy's L-BFGS-B; each evaluation of ``J`` and its gradient is one pass
of the Rust kernel ``conditional_log_likelihood`` over the rows (parallel over rows, with
deterministic reductions: the weights are identical for any ``n_jobs``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from . import _core

#: The discriminative weightings.
WEIGHTINGS = ("cll-feature", "cll-value")
#: Precision of the Gaussian prior N(1, 1 / penalty) on every weight.
DEFAULT_PENALTY = 1.0
#: Default ``tol``: the mean per-row gradient entry at which the weights are converged.
DEFAULT_TOL = 1e-6
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
        ``w``: shape (n_features,) for ``"cll-feature"``; (sum K_f, n_classes), the
        shape of the log-probability table, for ``"cll-value"``.
    objective : float
        ``J`` at the weights.
    n_iter : int
        L-BFGS iterations.
    converged : bool
    """

    kind: str
    class_weights: FloatArray
    table_weights: FloatArray
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

    Returns
    -------
    DiscriminativeWeights
    """
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
    finite = np.isfinite(log_table)
    log_table_zeroed = np.where(finite, log_table, 0.0)
    if kind == "cll-feature":
        n_table = len(offsets) - 1
        feature = _feature_of_column(offsets)
    elif kind == "cll-value":
        n_table = log_table.size
    else:
        raise ValueError(f"unknown weighting {kind!r}")
    gtol = tol * max(1.0, float(sample_weight.sum()))

    def split(theta: FloatArray) -> tuple[FloatArray, FloatArray]:
        class_weights = theta[:n_classes]
        table_weights = theta[n_classes:]
        if kind == "cll-value":
            table_weights = table_weights.reshape(log_table.shape)
        return class_weights, table_weights

    def objective(theta: FloatArray) -> tuple[float, FloatArray]:
        class_weights, table_weights = split(theta)
        table, class_scores = score_tables(
            kind, log_table, class_log_prior, class_weights, table_weights, offsets
        )
        loss, table_residuals, class_residuals = _core.conditional_log_likelihood(
            codes, labels, sample_weight, table, class_scores, offsets, n_threads
        )
        cell_gradient = table_residuals * log_table_zeroed
        table_gradient: FloatArray
        if kind == "cll-feature":
            table_gradient = np.bincount(
                feature, weights=cell_gradient.sum(axis=1), minlength=n_table
            ).astype(np.float64)
        else:
            table_gradient = cell_gradient.ravel()
        gradient = np.concatenate([class_residuals * class_log_prior, table_gradient])
        deviation = theta - 1.0
        value = loss + 0.5 * penalty * float(deviation @ (scale * deviation))
        return value, gradient + penalty * scale * deviation

    # the penalty's scale per weight: 1 for the class and feature weights; ln theta^2 for
    # a cell weight, which penalises the change of the score entry it makes
    cell_scale = log_table_zeroed.ravel() ** 2 if kind == "cll-value" else np.ones(n_table)
    scale = np.concatenate([np.ones(n_classes), cell_scale])
    # one BLAS thread: the vector products are short, and a BLAS pool spinning up on
    # each one slows them twentyfold on a busy machine (the row pass has its own threads)
    with threadpool_limits(limits=1, user_api="blas"):
        weights, value, gradient, n_iter, converged = minimise_lbfgs(
            objective, np.ones(n_classes + n_table), gtol=gtol, max_iter=MAX_ITER
        )
    if not converged:
        warnings.warn(
            f"the {kind} weights did not converge in {n_iter} L-BFGS iterations (largest "
            f"gradient entry {np.max(np.abs(gradient)):.3g}, tolerance {gtol:.3g})",
            ConvergenceWarning,
            stacklevel=3,
        )
    class_weights, table_weights = split(weights)
    return DiscriminativeWeights(
        kind=kind,
        class_weights=class_weights.copy(),
        table_weights=np.array(table_weights),
        objective=value,
        n_iter=n_iter,
        converged=converged,
    )


def minimise_lbfgs(
    objective: Callable[[FloatArray], tuple[float, FloatArray]],
    start: FloatArray,
    *,
    gtol: float,
    max_iter: int,
    memory: int = MEMORY,
) -> tuple[FloatArray, float, FloatArray, int, bool]:
    """Unconstrained L-BFGS (Nocedal and Wright, Algorithm 7.4 and 7.5) with a
    backtracking Armijo line search, for a smooth convex objective.

    scipy's L-BFGS-B spends about 0.3 s per iteration in its bound-constrained step
    computation at 24,000 weights (measured on amazon-employee), far more than one pass
    of the objective over the rows; the weights have no bounds, so this plain two-loop
    recursion is enough.

    Parameters
    ----------
    objective : callable
        ``theta -> (value, gradient)``.
    start : ndarray
    gtol : float
        Converged when no gradient entry exceeds it.
    max_iter : int
    memory : int, default=MEMORY
        Corrections kept.

    Returns
    -------
    (theta, value, gradient, n_iter, converged)
    """
    theta = np.array(start, dtype=np.float64)
    value, gradient = objective(theta)
    steps: list[FloatArray] = []
    changes: list[FloatArray] = []
    for n_iter in range(max_iter):
        if float(np.max(np.abs(gradient), initial=0.0)) <= gtol:
            return theta, value, gradient, n_iter, True
        # two-loop recursion: direction = -H gradient
        direction = -gradient
        alphas = []
        for s, y in zip(reversed(steps), reversed(changes)):
            alpha = float(s @ direction) / float(y @ s)
            direction = direction - alpha * y
            alphas.append(alpha)
        if steps:
            direction *= float(steps[-1] @ changes[-1]) / float(changes[-1] @ changes[-1])
        for (s, y), alpha in zip(zip(steps, changes), reversed(alphas)):
            beta = float(y @ direction) / float(y @ s)
            direction = direction + (alpha - beta) * s
        slope = float(gradient @ direction)
        if not slope < 0:  # not a descent direction: restart from steepest descent
            steps.clear()
            changes.clear()
            direction, slope = -gradient, -float(gradient @ gradient)
        step = 1.0 if steps else min(1.0, 1.0 / float(np.max(np.abs(gradient))))
        for _ in range(60):
            candidate = theta + step * direction
            new_value, new_gradient = objective(candidate)
            if new_value <= value + 1e-4 * step * slope:
                break
            # near the optimum the decrease drowns in the rounding of the value: accept a
            # step whose slope shows progress (the approximate Wolfe conditions of Hager and
            # Zhang 2005), which the gradient measures far more finely than the value
            new_slope = float(new_gradient @ direction)
            within_rounding = new_value <= value + 1e-12 * abs(value)
            if within_rounding and 0.9 * slope <= new_slope <= -0.9998 * slope:
                break
            step *= 0.5
        else:  # no decrease within floating-point precision: as close as it gets
            return theta, value, gradient, n_iter, False
        s, y = candidate - theta, new_gradient - gradient
        theta, value, gradient = candidate, new_value, new_gradient
        if float(s @ y) > 1e-12 * float(s @ s):  # keep the update positive definite
            steps.append(s)
            changes.append(y)
            if len(steps) > memory:
                steps.pop(0)
                changes.pop(0)
    converged = float(np.max(np.abs(gradient), initial=0.0)) <= gtol
    return theta, value, gradient, max_iter, converged
