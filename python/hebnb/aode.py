"""Averaged one-dependence estimators (AODE) with Laplace or empirical-Bayes smoothing."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from numbers import Integral, Real
from typing import Any, ClassVar, Literal, Self

import numpy as np
from numpy.typing import ArrayLike
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import check_is_fitted

from . import _core, weighting
from ._base import (
    SHARED_CONSTRAINTS,
    CategoricalClassifier,
    atomic_update,
    cache_while_reading,
    check_class_prior,
    class_log_prior,
    concentration_interval,
    defer_solve,
    learns_online,
    n_threads,
    read_consistently,
    solve_pending,
)
from ._encoding import check_sample_weight, check_table_size, stream_as_table
from ._memory import memory_budget_bytes
from ._online import (
    batch_classes,
    grow_columns,
    merge_pair_tables,
    move_columns,
    n_rows_of,
    recode_pair_tables,
)
from ._params import StrictInterval, StrOptions, fit_context, keyword_only, offered_if
from ._warnings import warn

#: The public pair tables (in the order of ``categories_``) and their keys in ``_pairs``.
_PAIR_VIEWS = ("pair_features_", "pair_indptr_", "pair_indices_", "pair_counts_")
_PAIR_KEYS = ("pairs", "indptr", "indices", "counts")


class AODE(CategoricalClassifier):
    """Averaged one-dependence estimators, with child conditionals smoothed by Laplace
    (AODE) or by empirical Bayes (HEB-AODE).

    Every feature ``i`` in turn is a super-parent of all the others; the class posterior
    averages the one-dependence models (SPEC eq. 7)::

        P(y | x) ~ sum over i with N_i(x_i) >= min_parent_count of
                   P(y, x_i) * prod over j != i of P(x_j | y, x_i)

    with the parent term ``P(y, x_i)`` of ``parent_smoothing`` (by default shrunk by
    empirical Bayes; ``"laplace"``: ``(N[y, x_i] + 1) / (S_i + C K_i)``, eq. 8). Rows
    where no feature qualifies as super-parent are scored by Naive Bayes with the same
    child smoother.

    Child conditionals ``P(x_j = v | y = c, x_i = u) = (N[c,u,v] + m mu[u,v]) / (N[c,u] + m)``:

    - ``smoothing="laplace"``: ``m = K_j``, ``mu = 1 / K_j`` (vanilla AODE, eq. 9).
    - ``smoothing="heb", prior="pooled"``: ``mu[u, v] = P(x_j = v)``, the pooled marginal,
      and ``m = m[c, i, j]`` shared by all parent values and chosen by Type-II maximum
      likelihood on the multi-document Dirichlet-multinomial evidence (the paper's
      HEB-AODE, eqs. 10-11).
    - ``smoothing="heb", prior="two-level"``: ``mu[u, v]`` is itself the class-pooled
      conditional ``P(x_j = v | x_i = u)`` smoothed toward the marginal, both
      concentrations by Type-II ML. This stops a parent value seen once, in one class,
      from deciding the prediction (see SPEC, "Beyond the paper").

    The pair tables are sparse (only value pairs seen in training), so every pair is
    modelled exactly however high the cardinality; ``max_parent_cardinality`` and
    ``max_joint_cells`` reproduce the paper's memory cap for comparison.

    Parameters
    ----------
    smoothing : {"heb", "laplace"}, default="heb"
    prior : {"two-level", "pooled"}, default="two-level"
        Prior mean of the HEB child conditionals (ignored by ``"laplace"``).
    parent_smoothing : {"heb", "laplace"}, default="heb"
        The parent term ``P(y, x_i = u) = P(u) P(y | u)``. ``"heb"`` (beyond SPEC)
        shrinks ``P(y | u)`` toward the class distribution ``pi`` of the rows where
        ``x_i`` is present: ``(N[y, u] + m_i pi_y) / (N_u + m_i)``, with ``m_i`` by Type-II
        ML over the values u; a rare parent value then no longer votes for an even class
        split. It helps most on unbalanced classes with many rare values (amazon-employee:
        log-loss 0.242 -> 0.176 uncapped, see docs/aode.md) and changes other data by
        less than 0.005 in log-loss either way. ``"laplace"`` is SPEC's eq. 8
        (``P(y | u) = (N[y, u] + 1) / (N_u + C)``), the paper's AODE.
    min_parent_count : float, default=1
        A feature is a super-parent for a row only if its value has at least this
        (weighted) training count.
    min_count : float, default=10
        ``N0``: when the largest parent-value count of a class is below it, the child
        concentration falls back to ``m = K_j`` (HEB only).
    concentration_bounds : (float, float), default=(1e-2, 1e4)
    max_parent_cardinality : int or None, default=None
        Memory cap (paper: 200): a super-parent with more categories uses the Naive Bayes
        child ``P(x_j | y)`` for all its children (its parent term is kept).
    max_joint_cells : float or None, default=None
        Memory cap (paper: 5e7): the pair (i, j) uses the Naive Bayes child when
        ``K_i K_j C`` exceeds it.
    max_parents : int or None, default=None
        Super-parent selection for very wide data: only the ``max_parents`` features with
        the highest mutual information with the class (plug-in, from the single counts)
        act as super-parents; every feature stays a child. Pair tables, fit and scoring
        then cost O(k F) instead of O(F^2). ``partial_fit`` chooses them on its first
        batch and keeps them. See docs/aode.md for accuracy against k.
    fit_prior : bool, default=True
        With False (or a ``class_prior``) the class part of the parent term is replaced:
        it becomes ``pi_y P(x_i | y)``, with ``P(x_i | y) = (N[y, x_i] + 1) / (N_y^(i) +
        K_i)`` under ``parent_smoothing="laplace"`` (eq. 8 with the class prior replaced)
        and, under ``"heb"``, the empirical-Bayes joint ``P(x_i) P(y | x_i)`` normalised
        over the values of ``x_i``.
    class_prior : array-like of shape (n_classes,), default=None
    categories : "auto" or list of array-like, default="auto"
        The categories of each feature, as in scikit-learn's ``OrdinalEncoder`` and
        :class:`CategoricalNB`: "auto" learns them from the training data; a list gives
        every feature's categories (distinct, no missing value), and a training value
        outside them is a ``ValueError``. pandas ``category`` columns declare their
        categories too.
    handle_unknown : {"ignore", "error"}, default="ignore"
    n_jobs : int, default=None
        Threads for counting, fitting and scoring (None: 1, -1: all cores). Results do
        not depend on it.
    learning_rate : float in (0, 1], default=1.0
        Forgetting factor gamma of ``partial_fit``: before a batch of n rows is added,
        every stored count (single and pair) is multiplied by ``gamma ** n``; the
        smoothing pseudo-counts never decay. ``fit`` is unaffected.
    weighting : {None, "cll-feature", "cll-value"}, default=None
        ``"cll-feature"``: one discriminative weight per super-parent (and per class
        prior) on the log-linear form of AODE, ``s_c = a_c ln pi_c + 1/P sum_i v_i
        (T_i,c - ln pi_c)`` with ``T_i`` the one-dependence model of super-parent ``i``,
        learned by maximising the conditional log-likelihood with the penalty
        ``penalty / 2 (||a - 1||^2 + ||v - 1||^2)`` (:func:`hebnb.weighting.fit_parent_weights`,
        docs/discriminative.md). The training rows are scored as if they had not been
        counted (``weighting_rows``): weights fitted on a row's own counts learn to trust
        memorised pairs. ``"cll-value"`` (ALR on AODE's tables): the same plus a weight
        ``d`` per class and cell of every super-parent's tables that a training row uses
        (``ln P(x_j = v | y, x_i = u)`` and ``ln P(y, x_i = u)``), so that a cell's
        log-probability weighs ``v_i + d``; ``d`` multiplies the fitted model's own cells
        and is penalised by the change it makes to a score,
        ``cell_penalty / 2 sum (d ln P / P)^2`` (:func:`hebnb.weighting.fit_aode_cell_weights`).
        The cell weights do as well over Laplace child tables (``smoothing="laplace"``),
        and better where the two-level prior's class-pooled mean hides class signal in
        rare cells (amazon-employee: log-loss 0.153 against 0.156; docs/discriminative.md).
        Not with ``partial_fit``.
    penalty : float or None, default=None
        Precision of the Gaussian prior on the class and super-parent weights (None:
        ``hebnb.weighting.DEFAULT_PENALTY``).
    weighting_tol : float, default=1e-4
        The weights are converged when no entry of the objective's gradient, divided by
        the total sample weight, exceeds it.
    weighting_rows : {"auto", "leave-one-out", "cross-fitted"}, default="auto"
        How the training rows' super-parent terms are scored for the weights.
        ``"leave-one-out"``: by the fitted tables with the row's own sample weight taken
        out of its class's counts (concentrations and prior means as fitted), a value no
        other training row has being unknown, as for a new row; no extra fit.
        ``"cross-fitted"``: by AODEs fitted on the other folds of a stratified 5-fold
        split (five more fits). ``"auto"``: leave-one-out over Laplace child tables,
        cross-fitted over HEB ones, as the 25 shared datasets say (docs/discriminative.md:
        with Laplace tables leave-one-out gave the lower log-loss on 12 and the higher on
        3; with HEB tables the higher on 12 and the lower on 6, most on small tables,
        where refitting without each row does worse still).
    cell_penalty : float, "cv" or None, default=None
        With ``weighting="cll-value"``: precision of the Gaussian prior on a cell's change
        of a score, ``d ln P / P`` (None: ``hebnb.weighting.DEFAULT_CELL_PENALTY``, 100).
        ``"cv"`` chooses it from ``hebnb.weighting.CV_CELL_PENALTIES`` (3 to 300) by
        3-fold cross-validation of the conditional log-likelihood on the training rows,
        each fold a whole ``cell_penalty=p`` fit on its training rows scored on its held
        rows (generative tables, cells and held-out parent terms fitted once per fold
        and shared by the penalties: 3 more AODE fits, 18 with ``"cross-fitted"`` rows,
        and 15 more weight fits on two thirds of the rows), then refits the best on all
        rows; docs/discriminative.md for how it compares.
    count_features : bool, default=False
        With ``weighting="cll-value"``: also weigh how often each of a row's values, and
        each pair of a super-parent's value with another feature's value, occurs among
        the other training rows (count encoding, as CatBoost's counter statistics): per
        value or pair, ``ln(1 + n)`` standardised over the training rows, one weight per
        class each, centred on 0 with the precision ``cell_penalty`` times the number of
        counted values and pairs (so that a row's whole count term has a cell's prior
        variance). A training row's ``n`` leaves the row itself out (its sample weight),
        as a new row's counts would. The features take 8 bytes per training row and
        counted value or pair (``F (F + 1) / 2`` of them when every feature is a
        super-parent). On amazon-employee log-loss 0.1533 -> 0.1522 and AUC
        0.864 -> 0.866 (docs/discriminative.md).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    categories_ : list of ndarray
    n_categories_ : ndarray of shape (n_features,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,)
        Defined when X is a DataFrame with string column names.
    class_count_ : ndarray of shape (n_classes,)
    class_log_prior_ : ndarray of shape (n_classes,)
        ``ln pi_c`` of the Naive Bayes fallback.
    concentration_ : ndarray of shape (n_classes, n_super_parents, n_features)
        ``m[c, r, j]`` for the r-th super-parent i (in feature order,
        ``np.flatnonzero(super_parents_)[r]``; so ``r = i`` unless ``max_parents`` is set)
        and child j (``K_j`` for Laplace); NaN where ``i = j`` and for capped pairs.
    pooled_concentration_ : ndarray of shape (n_super_parents, n_features)
        ``a[r, j]`` of the two-level prior; NaN where not used.
    log_evidence_ : ndarray of shape (n_classes, n_super_parents, n_features)
        ``l[c, r, j]``, the log evidence (SPEC eq. 11) of each child at its fitted
        concentration; NaN where ``concentration_`` is and for Laplace smoothing. Most
        solves decide their maximiser from the gradient alone, so the fit does not
        evaluate it: it is computed from the stored tables on first access (one
        evaluation per child), then kept.
    n_iter_ : ndarray of shape (n_classes, n_super_parents, n_features)
        Gradient evaluations of each solve (0 where the low-count rule, or the shape of
        the evidence certified from its counts, decided without one).
    converged_ : ndarray of shape (n_classes, n_super_parents, n_features)
    capped_ : ndarray of shape (n_features, n_features)
        Which (parent, child) orientations use the Naive Bayes child.
    super_parents_ : ndarray of shape (n_features,)
        Which features act as super-parents (all unless ``max_parents`` is set).
    parent_weights_ : ndarray of shape (n_super_parents,)
        With ``weighting``: the learned weight ``v_i`` of each super-parent (in feature
        order).
    cell_weights_ : ndarray of shape (n_cells, n_classes)
        With ``weighting="cll-value"``: ``d`` of every cell a training row uses, ordered
        by super-parent, then child (the parent's own term ``ln P(y, x_i)`` in its own
        position), then parent and child code (codes number each feature's categories
        in order of first appearance in training, not in the order of ``categories_``).
    class_weights_ : ndarray of shape (n_classes,)
        With ``weighting``: the learned weight of each class's log prior.
    weighting_n_iter_ : int
        With ``weighting``: L-BFGS iterations of the weight fit.
    count_weights_ : ndarray of shape (n_counted, n_classes)
        With ``count_features=True``: the weight of ``ln(1 + n)`` of each counted value
        or pair: super-parent by super-parent (in feature order), its columns ``j`` in
        feature order, where ``j`` is the super-parent itself (its own value), a later
        feature, or a feature that is not a super-parent (``count_columns_``).
    count_columns_ : ndarray of shape (n_counted, 2)
        With ``count_features=True``: the (super-parent, feature) of each counted value
        (``i = j``) or pair of values.
    cell_penalty_ : float
        With ``weighting="cll-value"``: the cell penalty the weights were fitted with
        (``cell_penalty``, its default, or the one ``"cv"`` chose).
    cell_penalty_cv_loss_ : ndarray of shape (n_penalties,)
        With ``cell_penalty="cv"``: the cross-validated log-loss of each penalty of
        ``hebnb.weighting.CV_CELL_PENALTIES`` (the held rows' negative log-likelihood
        summed over the folds, divided by their total sample weight; the rows of a class
        with fewer than ``CV_FOLDS`` rows are never held out); not set when no class has
        ``CV_FOLDS`` rows and the default penalty is used.
    parent_concentration_ : ndarray of shape (n_features,)
        ``m_i`` of the parent term's ``P(y | x_i)``: Type-II ML with
        ``parent_smoothing="heb"``, ``C`` (toward the uniform class split) with
        ``"laplace"``; NaN for a feature never observed.
    marginal_concentration_ : ndarray of shape (n_classes, n_features)
        The Naive Bayes child's concentration (fallback rows and capped pairs).
    pair_features_ : ndarray of shape (n_stored_pairs, 2)
        The feature pairs ``(a, b)``, ``a < b``, whose tables are stored, in increasing
        order: those modelled in at least one orientation (a pair needs a super-parent
        and an orientation not capped), so O(max_parents * n_features) pairs with
        ``max_parents``, none when every pair is capped.
    pair_indptr_, pair_indices_, pair_counts_ : ndarray
        The sparse pair tables of the stored pairs: for stored pair ``(a, b)``, one CSR
        row per value u of ``a`` lists the values v of ``b`` seen with it and, in
        ``pair_counts_`` of shape (n_cells, n_classes), the class counts ``N[c, u, v]``
        (float64); u and v are positions in ``categories_``. (The model stores them by
        code, in order of first appearance, as uint32 when every count is a whole
        number, and builds this view on first access.)

    Examples
    --------
    >>> import numpy as np
    >>> from hebnb import AODE
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 4, size=(300, 3))
    >>> y = (X[:, 0] == X[:, 1]).astype(int)
    >>> AODE().fit(X, y).predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints: ClassVar[dict[str, list[object]]] = {
        **SHARED_CONSTRAINTS,
        "smoothing": [StrOptions({"heb", "laplace"})],
        "prior": [StrOptions({"two-level", "pooled"})],
        "parent_smoothing": [StrOptions({"laplace", "heb"})],
        "min_parent_count": [StrictInterval(Real, 0, None, closed="left")],
        "max_parent_cardinality": [StrictInterval(Integral, 1, None, closed="left"), None],
        "max_joint_cells": [StrictInterval(Real, 0, None, closed="neither"), None],
        "max_parents": [StrictInterval(Integral, 1, None, closed="left"), None],
        "weighting": [StrOptions({"cll-feature", "cll-value"}), None],
        "penalty": [StrictInterval(Real, 0, None, closed="left"), None],
        "weighting_tol": [StrictInterval(Real, 0, None, closed="neither")],
        "weighting_rows": [StrOptions({"auto", "leave-one-out", "cross-fitted"})],
        "cell_penalty": [
            StrictInterval(Real, 0, None, closed="left"),
            StrOptions({"cv"}),
            None,
        ],
        "count_features": ["boolean"],
    }

    #: codes in order of first appearance: a stream's batches never move stored counts
    #: (the public pair tables are shown in the order of ``categories_``)
    _code_order = "insertion"

    @keyword_only("smoothing", removed_in="0.3")
    def __init__(
        self,
        *,
        smoothing: str = "heb",
        prior: str = "two-level",
        parent_smoothing: str = "heb",
        min_parent_count: float = 1,
        min_count: float = 10,
        concentration_bounds: tuple[float, float] = (1e-2, 1e4),
        max_parent_cardinality: int | None = None,
        max_joint_cells: float | None = None,
        max_parents: int | None = None,
        fit_prior: bool = True,
        class_prior: ArrayLike | None = None,
        handle_unknown: str = "ignore",
        n_jobs: int | None = None,
        learning_rate: float = 1.0,
        categories: str | list[ArrayLike] = "auto",
        weighting: str | None = None,
        penalty: float | None = None,
        weighting_tol: float = 1e-4,
        weighting_rows: str = "auto",
        cell_penalty: float | Literal["cv"] | None = None,
        count_features: bool = False,
    ) -> None:
        self.smoothing = smoothing
        self.prior = prior
        self.parent_smoothing = parent_smoothing
        self.min_parent_count = min_parent_count
        self.min_count = min_count
        self.concentration_bounds = concentration_bounds
        self.max_parent_cardinality = max_parent_cardinality
        self.max_joint_cells = max_joint_cells
        self.max_parents = max_parents
        self.fit_prior = fit_prior
        self.class_prior = class_prior
        self.handle_unknown = handle_unknown
        self.n_jobs = n_jobs
        self.learning_rate = learning_rate
        self.categories = categories
        self.weighting = weighting
        self.penalty = penalty
        self.weighting_tol = weighting_tol
        self.weighting_rows = weighting_rows
        self.cell_penalty = cell_penalty
        self.count_features = count_features

    def _check_combinations(self) -> None:
        """The checks ``_parameter_constraints`` cannot state: parameters that need
        each other."""
        if self.count_features and self.weighting != "cll-value":
            raise ValueError(
                f"count_features=True needs weighting='cll-value', got weighting={self.weighting!r}"
            )

    @fit_context
    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Counts categories and feature pairs, then smooths every child conditional.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Categorical values: ints, whole floats, strings, booleans or objects.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        self._check_combinations()
        threads = n_threads(self.n_jobs)
        codes, labels, weights = self._fit_tables(X, y, sample_weight, threads)
        blas = weighting.blas_in_one_thread() if self.weighting else contextlib.nullcontext()
        with blas:
            self._fit_weights(X, y, sample_weight, codes, labels, weights, threads)
        return self

    def _fit_tables(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None, threads: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The generative part of ``fit``: counts and smoothed tables, no weights.
        Returns the training rows' codes (F, S), class indices and sample weights."""
        encoder, codes, classes, labels, weights = self._training_data(X, y, sample_weight, threads)
        n_classes, offsets = classes.shape[0], encoder.offsets

        class_count, counts = _core.count_categories(
            codes, labels, weights, offsets, n_classes, threads
        )
        cardinality = np.asarray(encoder.cardinalities, dtype=np.int64)
        capped = self._capped(cardinality, n_classes)
        parents = self._super_parents(counts, offsets, threads)
        tables = count_pair_tables(
            codes, labels, weights, offsets, n_classes, capped, parents, threads
        )
        self._learn_vocabulary(encoder, classes)
        self.class_count_ = class_count
        self.capped_ = capped
        self.super_parents_ = parents
        self.__dict__.pop("_stream", None)
        self._unsolved = False
        self._set_pair_tables(tables)
        self._counts = counts
        self._solve(threads)
        return codes, labels, weights

    #: Folds of the cross-fitting that scores the training rows for the weights.
    _weighting_folds = 5

    #: The public pair tables (recomputed from ``_pairs`` on first access) and the cell
    #: numbering (rebuilt from ``_cell_keys`` by ``__setstate__``).
    _left_out_of_pickles = (*_PAIR_VIEWS, "_cell_numbering")

    #: Fitted attributes of the discriminative weights (dropped by a refit without them).
    _weight_attributes = (
        "parent_weights_",
        "class_weights_",
        "cell_weights_",
        "weighting_n_iter_",
        "cell_penalty_",
        "cell_penalty_cv_loss_",
        "_cell_keys",
        "_cell_numbering",
        "count_weights_",
        "count_columns_",
        "_count_encoding",
    )

    def _fit_weights(
        self,
        X: ArrayLike,
        y: ArrayLike,
        sample_weight: ArrayLike | None,
        codes: np.ndarray,
        labels: np.ndarray,
        weights: np.ndarray,
        threads: int,
    ) -> None:
        """Learns the weights of ``weighting`` (none: drops old ones), on the training
        rows' held-out terms (:meth:`_held_out_models`)."""
        for name in self._weight_attributes:
            self.__dict__.pop(name, None)
        if self.weighting is None:
            return
        folds = self._held_out_models(X, y, sample_weight, labels, weights)
        if self.weighting == "cll-value":
            if self.cell_penalty == "cv":
                cell_penalty = self._cross_validated_cell_penalty(
                    X, y, sample_weight, labels, weights, threads
                )
            elif self.cell_penalty is None:
                cell_penalty = weighting.DEFAULT_CELL_PENALTY
            else:
                cell_penalty = float(self.cell_penalty)
            inputs, column_keys = self._cell_weight_inputs(codes, labels, weights, threads, folds)
            cell_fit = self._fit_cell_weights(inputs, cell_penalty, threads)
            self._set_cell_weights(cell_fit, column_keys)
            self.cell_penalty_ = cell_penalty
            return
        if folds is None:
            terms = self._leave_one_out_terms(codes, labels, weights, threads)
        else:
            terms = self._parent_terms(codes, threads)
            for held, held_codes, model in folds:
                terms[held] = model._parent_terms(held_codes, threads)
        fitted = weighting.fit_parent_weights(
            terms,
            labels,
            weights,
            self.class_log_prior_,
            penalty=weighting.resolve_penalty(self.penalty),
            tol=float(self.weighting_tol),
            n_threads=threads,
        )
        self.parent_weights_ = fitted.feature_weights
        self.class_weights_ = fitted.class_weights
        self.weighting_n_iter_ = fitted.n_iter

    def _held_out_models(
        self,
        X: ArrayLike,
        y: ArrayLike,
        sample_weight: ArrayLike | None,
        labels: np.ndarray,
        weights: np.ndarray,
    ) -> list[tuple[np.ndarray, np.ndarray, AODE]] | None:
        """What scores the training rows for the weights: None for leave-one-out terms
        (:meth:`_leave_one_out_terms`), else the cross-fitting models
        (:meth:`_cross_fitted_models`), as ``weighting_rows`` says."""
        rows = self.weighting_rows
        if rows == "auto":
            rows = "leave-one-out" if self.smoothing == "laplace" else "cross-fitted"
        if rows == "leave-one-out":
            return None
        return self._cross_fitted_models(X, y, sample_weight, labels, weights)

    def _left_out_rows(self, labels: np.ndarray, weights: np.ndarray) -> dict[str, Any]:
        """What the core needs to score the training rows (``labels``, ``weights``) each
        left out of the fitted tables (``left_out`` of ``_core.aode_parent_terms``)."""
        return {
            "labels": np.ascontiguousarray(labels, dtype=np.int64),
            "weights": np.ascontiguousarray(weights, dtype=np.float64),
            "counts": np.ascontiguousarray(self._counts, dtype=np.float64),
            "class_count": np.ascontiguousarray(self.class_count_, dtype=np.float64),
            "parent_smoothing": self.parent_smoothing,
            "replace_class_prior": self._replaces_class_prior(),
        }

    def _leave_one_out_terms(
        self, codes: np.ndarray, labels: np.ndarray, weights: np.ndarray, threads: int
    ) -> np.ndarray:
        """The training rows' super-parent terms, each row left out, (S, P, C)."""
        return self._parent_terms(codes, threads, self._left_out_rows(labels, weights))

    def _cross_fitted_models(
        self,
        X: ArrayLike,
        y: ArrayLike,
        sample_weight: ArrayLike | None,
        labels: np.ndarray,
        weights: np.ndarray,
    ) -> list[tuple[np.ndarray, np.ndarray, AODE]]:
        """``(held-out rows, their codes in the fold's model, the model fitted without
        them)`` per fold of a stratified split (``StratifiedKFold(5, shuffle=True,
        random_state=0)``) of the rows of positive weight, leaving out the folds whose
        model lacks a class and those whose training rows weigh nothing (the held rows of
        those keep their in-sample terms). Rows of zero weight take no part, as if they
        were dropped (they keep their in-sample terms, which weigh nothing)."""
        from sklearn.base import clone
        from sklearn.model_selection import StratifiedKFold

        X, y = _indexable(X), _indexable(y)
        positive = np.flatnonzero(weights > 0)
        counts = np.bincount(labels[positive], minlength=self.classes_.shape[0])
        n_folds = min(self._weighting_folds, int(counts.max(initial=0)))
        if positive.shape[0] < 2 * n_folds or n_folds < 2:
            return []
        splitter = StratifiedKFold(n_folds, shuffle=True, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # classes with few rows
            splits = [
                (positive[train], positive[held])
                for train, held in splitter.split(np.zeros(positive.shape[0]), labels[positive])
            ]
        sub = clone(self).set_params(
            weighting=None, count_features=False, handle_unknown="ignore", n_jobs=self.n_jobs
        )
        models = []
        for train, held in splits:
            fold_weight = None if sample_weight is None else weights[train]
            if fold_weight is not None and not fold_weight.sum() > 0:
                continue
            model = clone(sub)
            # the full model's super-parents (a fold's own choice by mutual information
            # can differ), so that column r of the fold's terms is the same feature's
            model._chosen_super_parents = self.super_parents_
            model.fit(_safe_indexing(X, train), _safe_indexing(y, train), sample_weight=fold_weight)
            if np.array_equal(model.classes_, self.classes_):
                models.append((held, _safe_indexing(X, held), model))
        return [(held, model._encode(X_held)[0], model) for held, X_held, model in models]

    def _cell_weight_inputs(
        self,
        codes: np.ndarray,
        labels: np.ndarray,
        weights: np.ndarray,
        threads: int,
        folds: list[tuple[np.ndarray, np.ndarray, AODE]] | None,
    ) -> tuple[tuple[Any, ...], list[np.ndarray]]:
        """``weighting="cll-value"``'s data (:func:`hebnb.weighting.fit_aode_cell_weights`):
        a weight per super-parent on its held-out term (as ``"cll-feature"``; ``folds``
        of :meth:`_held_out_models`) plus one per cell of its tables that a training row
        uses. Returns the fit's positional inputs and each column's sorted cell keys
        (``_cell_keys``)."""
        parents = np.flatnonzero(self.super_parents_)
        n_features, n_parents = codes.shape[0], parents.shape[0]
        cardinality = np.diff(self._encoder.offsets)
        keys = weighting.aode_cell_keys(codes, parents, cardinality, threads)
        cells, starts, column_keys, first_row = weighting.number_cells(keys, threads)
        row_features = (
            self._count_training_rows(cells, starts, weights) if self.count_features else None
        )
        # every row of a cell has the cell's parent value, so the parent qualifies on all
        # of them or on none, and they share its value: each cell is read on its first row
        column_of_cell = np.repeat(np.arange(keys.shape[1]), np.diff(starts))
        cell_qualifies = np.zeros(starts[-1] + 1, dtype=bool)  # the last entry: no cell
        # the terms of rows left out, or the folds' below (the in-sample ones only for the
        # rows of folds that were left out)
        left_out = self._left_out_rows(labels, weights) if folds is None else None
        held_out = np.zeros(codes.shape[1], dtype=bool)
        for held, _, _ in folds or []:
            held_out[held] = True
        terms, qualifies, cell_values = weighting.aode_parent_cells(
            codes,
            *self._scorer_tables(),
            threads,
            left_out,
            numbered=(cells, starts, first_row),
            in_sample_terms=not held_out.all(),
            pair_cells_checked=True,
        )
        cell_qualifies[:-1] = qualifies[first_row, column_of_cell // max(n_features, 1)]
        cell_values /= max(n_parents, 1)
        # a parent that does not qualify on a row scores the Naive Bayes fallback there
        cells[~cell_qualifies[cells]] = -1
        for held, held_codes, model in folds or []:
            terms[held] = model._parent_terms(held_codes, threads)
        inputs = (
            (terms - self.class_log_prior_) / n_parents,
            cells,
            starts,
            cell_values,
            labels,
            weights,
            self.class_log_prior_,
            row_features,
        )
        return inputs, column_keys

    def _count_training_rows(
        self, cells: np.ndarray, starts: list[int], weights: np.ndarray
    ) -> np.ndarray:
        """``count_features``: keeps how many training rows (by sample weight) use each
        cell of the counted columns, and returns the training rows' standardised features
        (S, n_counted), each row left out of its own counts."""
        parents = np.flatnonzero(self.super_parents_)
        n_features = self.n_features_in_
        counted = [
            (p * n_features + j, i, j)
            for p, i in enumerate(parents)
            for j in range(n_features)
            if j == i or not self.super_parents_[j] or i < j
        ]
        cell_counts = np.zeros(starts[-1])
        for k, _, _ in counted:
            column = cells[:, k]
            present = column >= 0
            cell_counts[starts[k] : starts[k + 1]] = np.bincount(
                column[present] - starts[k],
                weights=weights[present],
                minlength=starts[k + 1] - starts[k],
            )
        columns = np.array([k for k, _, _ in counted], dtype=np.intp)
        raw = _count_features(cells[:, columns], cell_counts, weights)
        center, spread = _weighted_column_moments(raw, weights)
        # a feature constant over the rows (every value as frequent: a balanced design)
        # has a spread of rounding only, which must not be scaled up to one
        varies = spread > 1e-9 * (1.0 + np.abs(center))
        self._count_encoding = _CountEncoding(
            columns=columns,
            cell_counts=cell_counts,
            center=center,
            scale=np.divide(1.0, spread, out=np.zeros_like(spread), where=varies),
        )
        self.count_columns_ = np.array([(i, j) for _, i, j in counted], dtype=np.intp).reshape(
            -1, 2
        )
        return self._count_encoding.standardised(raw)

    def _fit_cell_weights(
        self, inputs: tuple[Any, ...], cell_penalty: float, threads: int
    ) -> weighting.AodeCellWeights:
        """The ``"cll-value"`` weights of :meth:`_cell_weight_inputs` at ``cell_penalty``."""
        return weighting.fit_aode_cell_weights(
            *inputs,
            penalty=weighting.resolve_penalty(self.penalty),
            cell_penalty=cell_penalty,
            n_threads=threads,
            tol=float(self.weighting_tol),
        )

    def _solve_cell_weights(
        self, problem: weighting.AodeCellProblem, cell_penalty: float, threads: int
    ) -> weighting.AodeCellWeights:
        """:meth:`_fit_cell_weights` of a problem prepared for several penalties."""
        return weighting.solve_aode_cell_weights(
            problem,
            penalty=weighting.resolve_penalty(self.penalty),
            cell_penalty=cell_penalty,
            n_threads=threads,
            tol=float(self.weighting_tol),
        )

    def _set_cell_weights(
        self, fitted: weighting.AodeCellWeights, column_keys: list[np.ndarray]
    ) -> None:
        """Keeps fitted ``"cll-value"`` weights as the model's (what scoring reads)."""
        self.class_weights_ = fitted.class_weights
        self.parent_weights_ = fitted.parent_weights
        self.cell_weights_ = fitted.cell_weights
        self.weighting_n_iter_ = fitted.n_iter
        if self.__dict__.get("_cell_keys") is not column_keys:
            # ready for look-ups now (built by the first predict, it changed the model's
            # __dict__ while predicting: scikit-learn's check_dict_unchanged), and once
            # per set of keys (a cross-validation sets the same keys at every penalty)
            self._cell_numbering = _cell_numbering(column_keys)
        self._cell_keys = column_keys
        if fitted.row_feature_weights.shape[0]:
            self.count_weights_ = fitted.row_feature_weights

    def _cross_validated_cell_penalty(
        self,
        X: ArrayLike,
        y: ArrayLike,
        sample_weight: ArrayLike | None,
        labels: np.ndarray,
        weights: np.ndarray,
        threads: int,
    ) -> float:
        """``cell_penalty="cv"``: the penalty of ``hebnb.weighting.CV_CELL_PENALTIES``
        whose held-out rows score the highest conditional log-likelihood (summed over
        ``CV_FOLDS`` stratified folds, ``StratifiedKFold(shuffle=True, random_state=0)``).

        Every fold is a whole fit on its training rows: an AODE fitted on them alone (its
        tables, its cells and their values, its own cross-fitted parent terms), the
        weights at each penalty fitted on them, and the held rows scored as that model's
        ``predict_log_proba`` would (a held row's cell the fold never saw keeps its
        weight 1). So a fold gives what ``AODE(weighting="cll-value",
        cell_penalty=p).fit`` on its training rows gives, without the held rows' counts
        in its cells; the generative fit and the cells are shared by the penalties. The
        rows of a class with fewer than ``CV_FOLDS`` rows are never held out: they are in
        every fold's training rows, so every fold's model knows every class, and the folds
        split the other rows (all of them, usually). A fold whose training rows weigh
        nothing is left out. No class with ``CV_FOLDS`` rows, or no held row of positive
        weight scored: ``DEFAULT_CELL_PENALTY``.
        """
        from sklearn.base import clone
        from sklearn.model_selection import StratifiedKFold

        X, y = _indexable(X), _indexable(y)
        # rows of zero weight take no part, as if they were dropped
        positive = weights > 0
        counts = np.bincount(labels[positive], minlength=self.classes_.shape[0])
        scored = np.flatnonzero(positive & (counts[labels] >= weighting.CV_FOLDS))
        always_trained = np.flatnonzero(positive & (counts[labels] < weighting.CV_FOLDS))
        if scored.shape[0] == 0:
            return weighting.DEFAULT_CELL_PENALTY
        grid = weighting.CV_CELL_PENALTIES
        loss = np.zeros(len(grid))
        splitter = StratifiedKFold(weighting.CV_FOLDS, shuffle=True, random_state=0)
        sub = clone(self).set_params(handle_unknown="ignore", cell_penalty=None)
        scored_weight = 0.0
        for kept, out in splitter.split(np.zeros(scored.shape[0]), labels[scored]):
            train = np.sort(np.concatenate([scored[kept], always_trained]))
            held = scored[out]
            X_train, y_train = _safe_indexing(X, train), _safe_indexing(y, train)
            train_weight = None if sample_weight is None else weights[train]
            if train_weight is not None and not train_weight.sum() > 0:
                continue
            scored_weight += float(weights[held].sum())
            fold = clone(sub)
            fold_codes, fold_labels, fold_weights = fold._fit_tables(
                X_train, y_train, train_weight, threads
            )
            if not np.array_equal(fold.classes_, self.classes_):  # pragma: no cover
                continue  # cannot happen: every class has a row in every fold's training
            inner = fold._held_out_models(X_train, y_train, train_weight, fold_labels, fold_weights)
            inputs, column_keys = fold._cell_weight_inputs(
                fold_codes, fold_labels, fold_weights, threads, inner
            )
            held_codes = fold._encode(_safe_indexing(X, held))[0]
            rows = np.arange(held.shape[0])
            # the problem (cells merged, preconditioner) and the held rows' cells are the
            # same at every penalty of the grid
            problem = weighting.aode_cell_problem(*inputs, n_threads=threads)
            held_cells = fold._seen_cells_once(held_codes, threads, column_keys)
            for k, cell_penalty in enumerate(grid):
                fitted = fold._solve_cell_weights(problem, cell_penalty, threads)
                fold._set_cell_weights(fitted, column_keys)
                log_proba = _core.log_posterior(
                    fold._score_seen_cells(held_cells(), held.shape[0]), threads
                )
                loss[k] -= weights[held] @ log_proba[rows, labels[held]]
        self.cell_penalty_cv_loss_ = loss / max(float(weights[scored].sum()), 1e-300)
        if not scored_weight > 0:
            return weighting.DEFAULT_CELL_PENALTY
        return float(grid[int(np.argmin(loss))])

    #: Entries of (rows, super-parents, features, classes) cells per scoring batch (32 MB).
    _cell_batch_entries = 1 << 22

    def _scorer_tables(self) -> tuple[dict[str, Any], dict[str, np.ndarray], list[int], float]:
        """What the core's parent terms and cells score with, in the order
        :func:`hebnb.weighting.aode_parent_terms` and ``aode_parent_cells`` take it after
        the codes: the model's tables, its pair tables, the feature offsets and
        ``min_parent_count``. The pair tables' cells were checked when they were solved or
        loaded, so the callers tell the core ``pair_cells_checked``."""
        return (
            self._model,
            self._pair_tables(),
            list(self._encoder.offsets),
            self._min_parent_count,
        )

    def _parent_cells(
        self, codes: np.ndarray, threads: int, left_out: dict[str, Any] | None = None
    ) -> Iterator[tuple[slice, np.ndarray, np.ndarray, np.ndarray]]:
        """The super-parents' terms and cells of coded rows in batches of bounded memory:
        ``(rows, terms (s, P, C), qualifies (s, P), cells (s, P, F, C))``
        (:func:`hebnb.weighting.aode_parent_cells`; column ``i`` of parent ``i`` holds
        ``ln P(y, x_i) - ln pi_y``); with ``left_out`` (:meth:`_left_out_rows` of the
        training rows ``codes``) the terms of the rows left out."""
        n_features, n_rows = codes.shape
        n_parents = int(np.count_nonzero(self.super_parents_))
        per_row = max(1, n_parents * n_features * self.classes_.shape[0])
        batch = max(1, self._cell_batch_entries // per_row)
        for first in range(0, max(n_rows, 1), batch):
            rows = slice(first, min(first + batch, n_rows))
            batch_left_out = None
            if left_out is not None:
                batch_left_out = {
                    **left_out,
                    "labels": left_out["labels"][rows],
                    "weights": left_out["weights"][rows],
                }
            terms, qualifies, cells = weighting.aode_parent_cells(
                np.ascontiguousarray(codes[:, rows]),
                *self._scorer_tables(),
                threads,
                batch_left_out,
                pair_cells_checked=True,
            )
            yield rows, terms, qualifies, cells

    def _cell_weighted_scores(self, codes: np.ndarray, threads: int) -> np.ndarray:
        """The ``weighting="cll-value"`` scores of coded rows, (S, C): the weighted
        super-parent terms plus each seen cell's ``d`` times its value (summed in the core
        as the rows are scored, the same numbers as :meth:`_score_seen_cells` of
        :meth:`_seen_cells`), in batches of rows whose terms take at most
        ``_cell_batch_entries``."""
        numbering = self._cell_numbering
        n_rows = codes.shape[1]
        keys = np.empty((n_rows, 0), dtype=np.int64)
        # the fitted count encoding, not the parameter: set_params does not change a fit
        if getattr(self, "_count_encoding", None) is not None:
            parents = np.flatnonzero(self.super_parents_)
            cardinality = np.diff(self._encoder.offsets)
            keys = weighting.aode_cell_keys(codes, parents, cardinality, threads)
        per_row = max(1, int(np.count_nonzero(self.super_parents_)) * self.classes_.shape[0])
        batch = max(1, self._cell_batch_entries // per_row)
        scores = np.empty((n_rows, self.classes_.shape[0]))
        for first in range(0, n_rows, batch):
            rows = slice(first, min(first + batch, n_rows))
            terms, _, cell_sums = weighting.aode_parent_cells(
                np.ascontiguousarray(codes[:, rows]),
                *self._scorer_tables(),
                threads,
                cell_weights=(numbering, self.cell_weights_),
                pair_cells_checked=True,
            )
            count_features = self._batch_count_features(keys[rows], numbering, threads)
            scores[rows] = self._batch_scores(terms, cell_sums, count_features)
        return scores

    def _batch_scores(
        self, terms: np.ndarray, cell_sums: np.ndarray, count_features: np.ndarray
    ) -> np.ndarray:
        """The ``"cll-value"`` scores (s, C) of a batch of rows at the current weights:
        the weighted super-parent terms (s, P, C), plus the rows' weighted cells summed
        (s, C), plus their weighted count features (s, n_counted)."""
        scores = weighting.parent_weighted_log_scores(
            terms, self.class_log_prior_, self.class_weights_, self.parent_weights_
        )
        scores += cell_sums
        if count_features.shape[1]:
            scores += count_features @ self.count_weights_
        return scores

    def _batch_count_features(
        self, keys: np.ndarray, numbering: _core.CellNumbering, threads: int
    ) -> np.ndarray:
        """With a fitted count encoding (``count_features=True`` at the fit): the
        standardised count features (s, n_counted) of a batch of rows whose cell keys are
        ``keys`` (s, P F), their cells found in ``numbering`` (the model's cells); else
        (s, 0)."""
        counts: _CountEncoding | None = getattr(self, "_count_encoding", None)
        if counts is None:
            return np.zeros((keys.shape[0], 0))
        cells = numbering.cells(keys.T, [int(k) for k in counts.columns], n_jobs=threads)
        return counts.standardised(_count_features(cells, counts.cell_counts, None))

    def _seen_cells(
        self, codes: np.ndarray, threads: int, cell_keys: list[np.ndarray]
    ) -> Iterator[_SeenCells]:
        """What the ``"cll-value"`` scores of coded rows read besides the weights, in
        batches of bounded memory: the super-parents' terms and every (row, cell with a
        weight) the rows use, with the cell's value divided by P (``cell_keys``: each
        column's sorted cell keys, as ``_cell_keys``)."""
        parents = np.flatnonzero(self.super_parents_)
        keys = weighting.aode_cell_keys(codes, parents, np.diff(self._encoder.offsets), threads)
        numbering = _cell_numbering(cell_keys)
        for rows, terms, qualifies, values in self._parent_cells(codes, threads):
            seen = _core.seen_cells(
                keys[rows].T,
                numbering,
                qualifies,
                values.reshape(terms.shape[0], -1, values.shape[-1]),
                n_jobs=threads,
            )
            yield _SeenCells(
                rows=rows,
                terms=terms,
                row=seen["row"],
                cell=seen["cell"],
                value=seen["value"] / max(parents.shape[0], 1),
                count_features=self._batch_count_features(keys[rows], numbering, threads),
            )

    #: Most (row, super-parent, feature, class) entries whose seen cells
    #: :meth:`_seen_cells_once` keeps (about 256 MB of them at two classes).
    _kept_cell_entries = 1 << 24

    def _seen_cells_once(
        self, codes: np.ndarray, threads: int, cell_keys: list[np.ndarray]
    ) -> Callable[[], Iterable[_SeenCells]]:
        """The :meth:`_seen_cells` of coded rows that are scored at several weights: kept
        from the first look-up where they fit in ``_kept_cell_entries``, else looked up
        again at every call."""
        n_parents = int(np.count_nonzero(self.super_parents_))
        entries = codes.shape[1] * n_parents * codes.shape[0] * self.classes_.shape[0]
        if entries > self._kept_cell_entries:
            return lambda: self._seen_cells(codes, threads, cell_keys)
        kept = list(self._seen_cells(codes, threads, cell_keys))
        return lambda: kept

    def _score_seen_cells(self, batches: Iterable[_SeenCells], n_rows: int) -> np.ndarray:
        """The ``"cll-value"`` scores (S, C) at the current weights of the rows whose
        :meth:`_seen_cells` are ``batches``: the weighted terms plus the sum of each row's
        cell terms (added in column order)."""
        scores = np.empty((n_rows, self.classes_.shape[0]))
        for batch in batches:
            n_batch = batch.terms.shape[0]
            cell_terms = self.cell_weights_[batch.cell] * batch.value
            cell_sums = np.column_stack(
                [
                    np.bincount(batch.row, weights=cell_terms[:, c], minlength=n_batch)
                    for c in range(scores.shape[1])
                ]
            )
            scores[batch.rows] = self._batch_scores(batch.terms, cell_sums, batch.count_features)
        return scores

    def _parent_terms(
        self, codes: np.ndarray, threads: int, left_out: dict[str, Any] | None = None
    ) -> np.ndarray:
        """Each super-parent's one-dependence term ``T_i`` of coded rows, (S, P, C)
        (``left_out``: of the training rows, each left out; :meth:`_left_out_rows`)."""
        return weighting.aode_parent_terms(
            codes, *self._scorer_tables(), threads, left_out, pair_cells_checked=True
        )

    @offered_if(learns_online)
    @atomic_update
    @fit_context
    def partial_fit(
        self,
        X: ArrayLike,
        y: ArrayLike,
        classes: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> Self:
        """Adds a batch of rows to the single and pair counts (forgetting old ones at
        ``learning_rate``); the child conditionals are re-smoothed when next used.

        With ``learning_rate=1`` any sequence of calls gives the model one ``fit`` on the
        concatenated batches would give (a batch whose weights sum to zero is refused, as
        scikit-learn refuses it), except for ``max_parents``: its super-parents are
        chosen on the first batch and kept, where one ``fit`` chooses them on all the
        rows. New categories join the vocabulary (``categories_`` stays sorted). The
        memory cap, if set, follows the grown cardinalities.

        A call costs the batch, not the model: the batch is encoded against the
        vocabulary and kept, and the kept batches are counted into the stored tables
        only when their counting would cost a few times rewriting the stored tables (or
        when the model is next used: ``predict*``, a fitted attribute, pickling), so the
        stored cells are rewritten O(log) times while they grow. The fitted attributes
        are computed on first use after a call.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None
            All the classes of the stream: needed on the first call unless that batch
            shows every class; later calls may repeat it but not change it.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        first_call = "_encoder" not in self.__dict__
        if not first_call:  # _fit_context checks only the first call; set_params may not
            self._validate_params()
        self._check_combinations()
        for name in self._weight_attributes:
            self.__dict__.pop(name, None)  # weights of an earlier fit no longer apply
        X = stream_as_table(X)  # (its rows counted before they are encoded)
        n_rows = n_rows_of(X)
        fitted_classes = None if first_call else self.__dict__["classes_"]
        declared, labels = batch_classes(y, n_rows, classes, fitted_classes)
        check_class_prior(self.class_prior, declared.shape[0])
        weights = check_sample_weight(sample_weight, n_rows)
        threads = n_threads(self.n_jobs)
        n_classes = declared.shape[0]
        if first_call:
            encoder = self._new_encoder()
            codes = encoder.fit_transform(X, n_threads=threads)
            offsets = encoder.offsets
            check_table_size(n_classes, offsets[-1])
            class_count, counts = _core.count_categories(
                codes, labels, weights, offsets, n_classes, threads
            )
            capped = self._capped(np.asarray(encoder.cardinalities, dtype=np.int64), n_classes)
            # the super-parents are chosen on the first batch and kept: a pair left out
            # was never counted, so it cannot join later
            parents = self._super_parents(counts, offsets, threads)
            pairs = count_pair_tables(
                codes, labels, weights, offsets, n_classes, capped, parents, threads
            )
            stream = _Stream(counts, pairs, tuple(offsets))
        else:
            self._check_stream_categories()
            stream = self._stored_stream()
            encoder = self._encoder
            parents = self.__dict__["super_parents_"]
            mark = encoder.mark()
            try:
                codes, _ = encoder.extend(X, n_threads=threads, owner=type(self).__name__)
                offsets = encoder.offsets
                check_table_size(n_classes, offsets[-1])
                cardinality = np.asarray(encoder.cardinalities, dtype=np.int64)
                # a pair capped once stays capped: the rows before were never counted for it
                capped = self._capped(cardinality, n_classes) | self.__dict__["capped_"]
                # forgetting: the stored counts age by one step per new row
                decay = float(self.learning_rate) ** n_rows
                stream = stream.aged(decay).with_batch(codes, labels, weights)
                check_pair_memory(
                    offsets, capped, parents, stream.pending_rows, n_classes, stream.stored_cells
                )
                if stream.due(len(offsets) - 1):
                    stream = stream.merged(offsets, capped, parents, n_classes, threads)
            except BaseException:
                encoder.undo(mark)  # a refused batch leaves the vocabulary as it was
                raise
            class_count = self.__dict__["class_count_"] * decay
            class_count += np.bincount(labels, weights=weights, minlength=n_classes)
        self._learn_vocabulary(encoder, declared)
        self.class_count_ = class_count
        self.capped_ = capped
        self.super_parents_ = parents
        for name in (*self._SOLVED, *_PAIR_VIEWS, "_log_evidence"):
            self.__dict__.pop(name, None)
        self._stream = stream
        defer_solve(self)  # solved from the tables when a fitted attribute is used
        return self

    #: what ``_solve`` (and the merge of a stream's batches) sets: after ``partial_fit``
    #: they are computed when first used
    _SOLVED = frozenset(
        {
            "_counts",
            "_pairs",
            "_model",
            "_child_smoothing",
            "class_log_prior_",
            "concentration_",
            "pooled_concentration_",
            "n_iter_",
            "converged_",
            "marginal_concentration_",
            "parent_concentration_",
            "_min_parent_count",
        }
    )

    def _stored_stream(self) -> _Stream:
        """The stream state of the model: its own between calls, else the stored tables
        of the fitted model, in codes by first appearance (a model coded by sorted rank,
        as fitted before AODE coded by first appearance or by ``hebnb.dask``, is recoded
        once; its encoder is replaced by one of the same vocabulary)."""
        state = self.__dict__
        if "_stream" in state:
            stream: _Stream = state["_stream"]
            return stream
        if state.get("_unsolved"):  # pragma: no cover - an unsolved model has a stream
            solve_pending(self)
        encoder = self._encoder
        counts, pairs = state["_counts"], state["_pairs"]
        if encoder.order == "sorted":
            vocabulary_codes = [
                np.asarray(encoder.sorted_order(f), dtype=np.int64)
                for f in range(encoder.n_features)
            ]
            counts = move_columns(counts, encoder.offsets, encoder.offsets, vocabulary_codes)
            pairs = recode_pair_tables(pairs, encoder.offsets, vocabulary_codes)
            encoder = copy.copy(encoder)  # the same vocabulary object, codes by it
            encoder.order = "insertion"
            self._encoder = encoder
        return _Stream(counts, pairs, tuple(encoder.offsets))

    def _solve_deferred(self) -> None:
        threads = n_threads(self.n_jobs)
        stream = self.__dict__.get("_stream")
        if stream is not None:
            merged = stream.merged(
                self._encoder.offsets,
                self.__dict__["capped_"],
                self.__dict__["super_parents_"],
                self.__dict__["classes_"].shape[0],
                threads,
            )
            self._counts = merged.counts
            self._set_pair_tables(merged.pairs)
            # the tables before the merge go before the solve (which then needs memory
            # for the child tables, not for two copies of the pair tables)
            del stream, merged
            self.__dict__.pop("_stream", None)
        self._solve(threads)
        self._unsolved = False

    def __getattr__(self, name: str) -> Any:
        # only called when ordinary lookup fails: the pair tables in the order of
        # categories_, computed from the stored ones on first access
        state = self.__dict__
        if (
            name in _PAIR_VIEWS
            and "_encoder" in state
            and ("_pairs" in state or "_stream" in state)
        ):
            # the tables and the vocabulary of one state
            return cache_while_reading(self, functools.partial(self._pair_table, name))
        return super().__getattr__(name)

    def _pair_table(self, name: str) -> np.ndarray:
        """The public pair table ``name`` (one of ``_PAIR_VIEWS``), all of them set from
        the stored ones on first access (called holding the cache lock)."""
        if name not in self.__dict__:
            tables = self._sorted_pair_tables()
            for key, attribute in zip(_PAIR_KEYS, _PAIR_VIEWS):
                self.__dict__[attribute] = tables[key]
            # stored as uint32 when whole: shown as float64 counts whatever the storage
            self.__dict__["pair_counts_"] = np.asarray(tables["counts"], dtype=np.float64)
        table: np.ndarray = self.__dict__[name]
        return table

    def _sorted_pair_tables(self) -> dict[str, np.ndarray]:
        """The stored pair tables with every code replaced by its category's rank in
        ``categories_`` (the tables themselves when the codes are those ranks)."""
        tables = self._pairs
        encoder = self._encoder
        if encoder.order == "sorted":
            return tables
        ranks = []
        for f, k in enumerate(encoder.cardinalities):
            rank = np.empty(k, dtype=np.int64)
            rank[np.asarray(encoder.sorted_order(f), dtype=np.int64)] = np.arange(k)
            ranks.append(rank)
        if all(np.array_equal(rank, np.arange(rank.shape[0])) for rank in ranks):
            return tables
        return recode_pair_tables(tables, encoder.offsets, ranks)

    def __getstate__(self) -> dict[str, Any]:
        # no update meanwhile (the base's pickle reads under the same lock)
        state: dict[str, Any] = read_consistently(self, self._solved_state)
        return state

    def _solved_state(self) -> dict[str, Any]:
        """The base's pickled state of the solved model (a pickle or copy holds it)."""
        if self.__dict__.get("_unsolved"):
            solve_pending(self)
        state: dict[str, Any] = super().__getstate__()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "pair_indptr_" in state and "pair_features_" not in state:
            state = _upgrade_all_pairs_state(state)
        if "pair_indptr_" in state and "_pairs" not in state:
            # pickled when the tables were the public attributes (codes: sorted ranks)
            state = dict(state)
            state["_pairs"] = {key: state.pop(name) for key, name in zip(_PAIR_KEYS, _PAIR_VIEWS)}
        if "_model" in state and "_min_parent_count" not in state:
            # pickled when the scorer read the parameter
            state = {**state, "_min_parent_count": float(state["min_parent_count"])}
        if "count_features" not in state:
            # pickled before the parameter existed (its scoring reads it)
            state = {**state, "count_features": False}
        if "weighting_rows" not in state:
            # pickled when the weights were always fitted on cross-fitted terms
            state = {**state, "weighting_rows": "cross-fitted"}
        super().__setstate__(state)
        if "_pairs" in state:
            # the scorers are told that the tables' cells were checked: a pickle's were not
            # (checked as the base stored them: aligned)
            try:
                _core.check_aode_pair_tables(
                    self._pairs,
                    offsets=list(self._encoder.offsets),
                    n_classes=int(self.classes_.shape[0]),
                )
            except (TypeError, KeyError) as error:  # arrays of another type or missing
                raise ValueError(f"the pickled AODE's pair tables are invalid: {error}") from None
            _read_only(self._pairs)
        if "_cell_keys" in state:
            self.__dict__["_cell_numbering"] = _cell_numbering(state["_cell_keys"])

    def _set_pair_tables(self, tables: dict[str, np.ndarray]) -> None:
        """Stores pair tables that the solve which follows checks (``fit_aode`` checks
        every cell), read-only: the scorers are told their cells were checked."""
        self._pairs = _read_only({key: tables[key] for key in _PAIR_KEYS})
        for name in _PAIR_VIEWS:
            self.__dict__.pop(name, None)

    def _pair_tables(self) -> dict[str, np.ndarray]:
        """The stored pair tables, coded as the encoder codes (the scorer's layout)."""
        tables: dict[str, np.ndarray] = self._pairs
        return tables

    def _replaces_class_prior(self) -> bool:
        """Whether the class prior replaces eq. 8's class part in the parent term
        (``fit_prior=False`` or a ``class_prior``)."""
        return not (self.fit_prior and self.class_prior is None)

    def _solve(self, threads: int) -> None:
        """Assembles the whole model from the stored counts and pair tables (one core call)."""
        self.class_log_prior_ = class_log_prior(
            self.class_count_, fit_prior=self.fit_prior, class_prior=self.class_prior
        )
        heb = self.smoothing == "heb"
        self._child_smoothing = self.prior if heb else "laplace"
        # the scorer's, fixed with the tables (set_params before the next fit changes
        # nothing, and the learned weights were fitted on terms with it)
        self._min_parent_count = float(self.min_parent_count)
        self.__dict__.pop("_log_evidence", None)
        model = _core.fit_aode(
            self.class_count_,
            self._counts,
            self._pair_tables(),
            offsets=self._encoder.offsets,
            capped=self.capped_,
            parents=self.super_parents_,
            smoothing=self._child_smoothing,
            parent_smoothing=self.parent_smoothing,
            min_count=float(self.min_count),
            concentration_bounds=concentration_interval(self.concentration_bounds),
            class_log_prior=self.class_log_prior_.tolist(),
            replace_class_prior=self._replaces_class_prior(),
            n_jobs=threads,
        )
        if model["n_not_converged"]:
            warn(
                "the concentration solver did not converge for "
                f"{model['n_not_converged']} problems",
                ConvergenceWarning,
            )
        self.concentration_ = model["concentration"]
        self.pooled_concentration_ = model["pooled_concentration"]
        self.n_iter_ = model["n_iter"]
        self.converged_ = model["converged"]
        self.marginal_concentration_ = model["marginal_concentration"]
        self.parent_concentration_ = model["parent_concentration"]
        self._model = model

    @property
    def log_evidence_(self) -> np.ndarray:
        """Log evidence of every fitted child at its concentration, shape (n_classes,
        n_super_parents, n_features); computed from the stored tables on first access."""
        check_is_fitted(self, "concentration_")
        evidence: np.ndarray = cache_while_reading(self, self._computed_log_evidence)
        return evidence

    def _computed_log_evidence(self) -> np.ndarray:
        """``log_evidence_``, computed once per state (called holding the cache lock)."""
        if "_log_evidence" not in self.__dict__:
            self._log_evidence = _core.aode_log_evidence(
                self._counts,
                self._pair_tables(),
                offsets=self._encoder.offsets,
                capped=self.capped_,
                parents=self.super_parents_,
                smoothing=self._child_smoothing,
                concentration=self.concentration_,
                pooled_concentration=self.pooled_concentration_,
                n_jobs=n_threads(self.n_jobs),
            )
        return self._log_evidence

    def _super_parents(
        self, counts: np.ndarray, offsets: Sequence[int], threads: int
    ) -> np.ndarray:
        """Which features act as super-parents: all, or the ``max_parents`` with the
        highest mutual information with the class (ties to the lower feature index), or
        those of ``_chosen_super_parents`` (a cross-fitting fold model: its full model's)."""
        chosen = self.__dict__.get("_chosen_super_parents")
        if chosen is not None:
            return np.array(chosen, dtype=bool)
        n_features = len(offsets) - 1
        parents = np.ones(n_features, dtype=bool)
        if self.max_parents is not None and self.max_parents < n_features:
            information = _core.mutual_information(counts, list(offsets), threads)
            order = np.argsort(-information, kind="stable")
            parents[:] = False
            parents[order[: self.max_parents]] = True
        return parents

    def _capped(self, cardinality: np.ndarray, n_classes: int) -> np.ndarray:
        """The paper's memory cap: which (parent, child) orientations use P(x_j | y)."""
        k = cardinality.astype(np.float64)
        capped = np.zeros((k.shape[0], k.shape[0]), dtype=bool)
        if self.max_parent_cardinality is not None:
            capped |= (k > self.max_parent_cardinality)[:, None]
        if self.max_joint_cells is not None:
            # by blocks of parents: the (F, F) float products of a very wide table at
            # once would take 8 bytes per orientation
            for start in range(0, k.shape[0], 1024):
                block = np.outer(k[start : start + 1024], k) * n_classes
                capped[start : start + 1024] |= block > float(self.max_joint_cells)
        np.fill_diagonal(capped, False)
        return capped

    def _joint_log_likelihood(self, X: ArrayLike) -> np.ndarray:
        codes, threads = self._encode(X)
        if "cell_weights_" in self.__dict__:
            return self._cell_weighted_scores(codes, threads)
        if "parent_weights_" in self.__dict__:
            return weighting.parent_weighted_log_scores(
                self._parent_terms(codes, threads),
                self.class_log_prior_,
                self.class_weights_,
                self.parent_weights_,
            )
        return _core.aode_joint_log_likelihood(
            codes,
            self._model,
            self._pair_tables(),
            offsets=self._encoder.offsets,
            min_parent_count=self._min_parent_count,
            n_jobs=threads,
            pair_cells_checked=True,
        )


def _read_only(tables: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The same arrays, made read-only: a model's pair tables are checked once, when they
    are made or loaded, and must not change after (their public views share them)."""
    for array in tables.values():
        array.flags.writeable = False
    return tables


def _indexable(data: Any) -> Any:
    """Rows of ``data`` as ``_safe_indexing`` takes them: an array-like that offers only
    ``__array__`` becomes its array (tables, arrays and lists stay as they are)."""
    return data if hasattr(data, "__getitem__") else np.asarray(data)


#: A stream merges its kept batches into the stored tables when counting them would cost
#: this many times rewriting the stored tables (a bound: most cells of a batch are already
#: stored). Larger: fewer merges (200,000 rows x 20 features in 1,000-row batches: the
#: calls take 2.1 s of CPU with 4, 4.4 s with 1), more kept rows (~100 bytes each).
MERGE_FACTOR = 4


@dataclasses.dataclass(frozen=True)
class _Batch:
    """A ``partial_fit`` batch kept until it is counted: its codes (F, S), class index
    and weight per row, and ``scale``, the forgetting it has undergone since."""

    codes: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    scale: float = 1.0


@dataclasses.dataclass(frozen=True)
class _SeenCells:
    """A batch of rows' ``"cll-value"`` score inputs that do not depend on the weights
    (``AODE._seen_cells``): the rows (a slice of the scored rows), their super-parent
    terms (s, P, C) and every use of a cell with a weight, column by column: the row in
    the batch, the cell and its value (E, C)."""

    rows: slice
    terms: np.ndarray
    row: np.ndarray
    cell: np.ndarray
    value: np.ndarray
    #: ``count_features``: the rows' standardised count features (s, n_counted).
    count_features: np.ndarray


def _cell_numbering(cell_keys: list[np.ndarray]) -> _core.CellNumbering:
    """Each column's sorted cell keys (``AODE._cell_keys``) numbered one column after
    another, ready for looking keys up."""
    starts = [0, *(int(start) for start in np.cumsum([k.shape[0] for k in cell_keys]))]
    keys = np.concatenate(cell_keys) if cell_keys else np.zeros(0, dtype=np.int64)
    return _core.CellNumbering(np.ascontiguousarray(keys, dtype=np.int64), starts)


@dataclasses.dataclass(frozen=True)
class _CountEncoding:
    """What ``AODE(count_features=True)`` scores a row's counts with: the counted columns
    of the cell keys (``aode_cell_keys``), how many training rows (by sample weight) use
    each cell, and the standardisation of the training rows' features."""

    columns: np.ndarray
    cell_counts: np.ndarray
    center: np.ndarray
    scale: np.ndarray

    def standardised(self, raw: np.ndarray) -> np.ndarray:
        """``(raw - center) * scale``, written over ``raw`` (the features of
        :func:`_count_features`): features constant over the training rows are 0."""
        raw -= self.center
        raw *= self.scale
        return raw


#: Rows per block of :func:`_count_features`' temporary arrays.
_COUNT_FEATURE_ROWS = 8192


def _count_features(
    cells: np.ndarray, cell_counts: np.ndarray, own_weight: np.ndarray | None
) -> np.ndarray:
    """``ln(1 + n)`` of each row's cell in each column of ``cells`` (S, G) (-1: none,
    n = 0), n its count less ``own_weight`` (the row's own sample weight, for training
    rows). A count within rounding of zero is zero. Computed in place, a block of rows
    at a time, so that the only array of the size of the result is the result."""
    # cell -1 (none) reads the appended 0; less the row's own weight it is below the
    # threshold, so its feature is 0
    features: np.ndarray = np.append(cell_counts, 0.0)[cells]
    for start in range(0, features.shape[0], _COUNT_FEATURE_ROWS):
        block = features[start : start + _COUNT_FEATURE_ROWS]
        threshold = np.maximum(block, 1.0)
        threshold *= 1e-9
        if own_weight is not None:
            block -= own_weight[start : start + _COUNT_FEATURE_ROWS, None]
        np.copyto(block, 0.0, where=~(block > threshold))
        np.log1p(block, out=block)
    return features


def _weighted_column_moments(
    features: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The mean and standard deviation of each column of ``features`` (S, G) over the
    rows weighted by ``weights`` (S,): the count features standardise like the counts
    they come from (a row of weight 0 like no row, one of weight 2 like two). Taken a
    block of rows at a time, so that no temporary of the size of ``features`` is made."""
    total = weights.sum()
    center = (weights @ features) / total
    square_sum = np.zeros_like(center)
    for start in range(0, features.shape[0], _COUNT_FEATURE_ROWS):
        deviation = features[start : start + _COUNT_FEATURE_ROWS] - center
        deviation *= deviation
        square_sum += weights[start : start + _COUNT_FEATURE_ROWS] @ deviation
    return center, np.sqrt(square_sum / total)


@dataclasses.dataclass(frozen=True)
class _Stream:
    """An AODE stream between solves (SPEC "Online learning and forgetting"): the
    stored single counts ``(C, sum K)`` and pair tables, counted on the vocabulary
    ``offsets`` (codes by first appearance, so a grown vocabulary only appends), times
    ``scale`` (the forgetting since they were merged), plus the batches not yet counted.

    The batches are merged into the stored tables when counting them would cost
    ``MERGE_FACTOR`` times rewriting the stored tables (``due``), and whenever the model
    is used, so a stream of batches costs O(its rows) amortised, every stored cell being
    rewritten O(log) times while the tables grow. Immutable: an update builds a new one (a failed call keeps the old).
    """

    counts: np.ndarray
    pairs: dict[str, np.ndarray]
    offsets: tuple[int, ...]
    scale: float = 1.0
    pending: tuple[_Batch, ...] = ()

    @property
    def pending_rows(self) -> int:
        return sum(batch.labels.shape[0] for batch in self.pending)

    @property
    def stored_cells(self) -> int:
        return int(self.pairs["indices"].shape[0])

    def aged(self, decay: float) -> _Stream:
        """Every stored and pending count times ``decay``."""
        if decay == 1.0:
            return self
        pending = tuple(dataclasses.replace(b, scale=b.scale * decay) for b in self.pending)
        return dataclasses.replace(self, scale=self.scale * decay, pending=pending)

    def with_batch(self, codes: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> _Stream:
        return dataclasses.replace(self, pending=(*self.pending, _Batch(codes, labels, weights)))

    def due(self, n_features: int) -> bool:
        """Whether counting the pending rows (a cell per row and stored pair, at most,
        and one per feature) costs ``MERGE_FACTOR`` times rewriting the stored tables."""
        n_pairs = int(self.pairs["pairs"].shape[0])
        stored = self.stored_cells + int(self.pairs["indptr"].shape[0]) + self.offsets[-1]
        return self.pending_rows * (n_pairs + n_features) >= MERGE_FACTOR * stored

    def merged(
        self,
        offsets: Sequence[int],
        capped: np.ndarray,
        parents: np.ndarray,
        n_classes: int,
        threads: int,
    ) -> _Stream:
        """The stream with its pending batches counted into the stored tables, on the
        vocabulary ``offsets`` and the structure ``capped``/``parents`` (a pair capped
        since the tables were stored loses its table, as in one ``fit``)."""
        if not self.pending and list(self.offsets) == list(offsets) and self.scale == 1.0:
            return self
        if self.pending:
            codes = np.concatenate([b.codes for b in self.pending], axis=1)
            labels = np.concatenate([b.labels for b in self.pending])
            weights = np.concatenate(
                [b.weights if b.scale == 1.0 else b.weights * b.scale for b in self.pending]
            )
        else:
            codes = np.zeros((len(offsets) - 1, 0), dtype=np.int32)
            labels, weights = np.zeros(0, dtype=np.int64), np.zeros(0)
        _, batch_counts = _core.count_categories(
            codes, labels, weights, list(offsets), n_classes, threads
        )
        counts = grow_columns(self.counts, self.offsets, offsets)
        counts = counts * self.scale + batch_counts
        batch_pairs = count_pair_tables(
            codes,
            labels,
            weights,
            list(offsets),
            n_classes,
            capped,
            parents,
            threads,
            self.stored_cells,
        )
        sizes = np.diff(np.asarray(self.offsets)).tolist()
        pairs = merge_pair_tables(
            self.pairs,
            batch_pairs,
            list(self.offsets),
            list(offsets),
            [np.arange(k, dtype=np.int64) for k in sizes],
            self.scale,
            threads,
        )
        return _Stream(counts, pairs, tuple(offsets))


#: Diagnostics that were (C, F, F) (or (F, F)) over every parent before they had one row
#: per super-parent: (attribute, key of the model dict, axis of the parent).
_PER_PARENT_DIAGNOSTICS = (
    ("concentration_", "concentration", 1),
    ("log_evidence_", "log_evidence", 1),
    ("n_iter_", "n_iter", 1),
    ("converged_", "converged", 1),
    ("pooled_concentration_", "pooled_concentration", 0),
)


def _upgrade_all_pairs_state(state: dict[str, Any]) -> dict[str, Any]:
    """A pickled AODE whose pair tables were laid out for every pair (one CSR row per
    parent value of every pair ``a < b``, empty for the pairs no orientation models) and
    whose diagnostics were (C, F, F), moved onto the stored-pairs layout: the rows of
    the pairs it models are kept (the others hold no cell, so the cells and the fitted
    child tables are unchanged) and the diagnostics keep the super-parents' rows."""
    state = dict(state)
    parents = np.asarray(state["super_parents_"], dtype=bool)
    modelled = parents[:, None] & ~np.asarray(state["capped_"], dtype=bool)
    np.fill_diagonal(modelled, False)
    n_features = parents.shape[0]
    first, second = np.triu_indices(n_features, 1)  # every pair, in table order
    wanted = modelled[first, second] | modelled[second, first]
    cardinality = np.asarray(state["_encoder"].cardinalities, dtype=np.int64)
    keep_rows = np.repeat(wanted, cardinality[first])
    indptr = np.asarray(state["pair_indptr_"])
    state["pair_indptr_"] = np.concatenate([indptr[:1], indptr[1:][keep_rows]])
    state["pair_features_"] = np.stack([first[wanted], second[wanted]], axis=1).astype(np.int32)
    model = dict(state.get("_model", {}))
    for attribute, key, axis in _PER_PARENT_DIAGNOSTICS:
        for table, name in ((state, attribute), (model, key)):
            if (
                name in table
                and np.ndim(table[name]) >= 2
                and table[name].shape[axis] != parents.sum()
            ):
                table[name] = np.compress(parents, table[name], axis=axis)
    state["_model"] = model
    return state


def count_pair_tables(
    codes: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray,
    offsets: list[int],
    n_classes: int,
    capped: np.ndarray,
    parents: np.ndarray,
    threads: int,
    stored_cells: int = 0,
) -> dict[str, Any]:
    """The pair tables of these rows (codes feature-major), after ``check_pair_memory``
    has accepted them beside the ``stored_cells`` a model already keeps."""
    check_pair_memory(
        offsets, capped, parents, codes.shape[1], n_classes, stored_cells, weights=weights
    )
    return _core.count_pairs(
        codes,
        labels,
        weights,
        offsets=offsets,
        n_classes=n_classes,
        capped=capped,
        parents=parents,
        n_jobs=threads,
    )


def check_pair_memory(
    offsets: Sequence[int],
    capped: np.ndarray,
    parents: np.ndarray,
    n_rows: int,
    n_classes: int,
    stored_cells: int = 0,
    *,
    weights: np.ndarray | None = None,
) -> None:
    """Refuses with MemoryError a fit whose tables could outgrow the memory budget.

    The core plans the bytes (``_core.aode_planned_bytes``: pair tables while counting,
    child tables, per-pair diagnostics, per-category tables, the scorer's index); this
    compares them with the memory the process may use. ``weights``, the rows' sample
    weights, let the core plan ``uint32`` whole counts when they allow them (without:
    ``float64``, the larger).
    """
    planned = _core.aode_planned_bytes(
        offsets=list(offsets),
        capped=capped,
        parents=parents,
        n_rows=int(n_rows),
        n_classes=int(n_classes),
        stored_cells=int(stored_cells),
        weights=weights,
    )
    budget = memory_budget_bytes()
    if planned["total"] > budget:
        raise MemoryError(
            f"the pair tables of {len(offsets) - 1} features could need "
            f"{planned['total'] / 2**30:.1f} GiB, beyond what memory allows "
            f"({budget / 2**30:.1f} GiB): use fewer or coarser features, max_parents, "
            "or the memory cap (max_parent_cardinality, max_joint_cells)"
        )
