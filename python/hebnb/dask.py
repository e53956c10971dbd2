"""Fit and predict on Dask collections: count on the workers, add the tables, solve once.

Every model here is a sum of counts, so a fit scales out exactly. ``fit`` turns each
partition of a Dask DataFrame / Array into a count table on the worker that holds it
(the same Rust kernels as a local ``fit``: the vocabulary of the partition, the class x
category counts and, for :class:`~hebnb.AODE`, its sparse pair tables), adds the tables
in a tree reduction (vocabularies merged by value, classes by label, pair cells by key),
and solves the concentrations once where the tables meet. Only count tables travel,
never rows (a :class:`~hebnb.MultinomialNB` posterior power adds a few numbers per row),
and the result is the ordinary estimator: it pickles, predicts locally on
numpy / pandas, and its ``predict_proba`` equals a local ``fit`` on the concatenated
data (up to the order of floating-point additions).

The graph's tasks are named ``hebnb-count-*`` (one per partition), ``hebnb-merge-*``
(the reduction) and ``hebnb-solve-*`` (before it, for ``AODE(max_parents=k)``, a
second pass counting only the chosen super-parents' pairs: ``hebnb-plan-*``,
``hebnb-pairs-*``, ``hebnb-pair-merge-*`` and ``hebnb-with-pairs-*``; after it, for the
posterior power of :class:`~hebnb.MultinomialNB`, ``hebnb-rows-*`` and
``hebnb-power-*``), so the Dask dashboard and ``distributed.progress`` show the fit as it
runs. An error in a partition (bad data in
one file) is the error a local fit raises, its message prefixed with the partition.

``predict`` / ``predict_proba`` map the fitted model over the partitions
(``map_partitions`` / ``map_blocks``) and return lazy Dask collections with the right
``meta``. ``partial_fit`` chains the estimator's own ``partial_fit`` through the
partitions in order, each step on the worker holding that partition (the model travels
to the data).

Supported: :class:`~hebnb.CategoricalNB`, :class:`~hebnb.AODE`,
:class:`~hebnb.EmpiricalBayesDirichletClassifier`, :class:`~hebnb.MultinomialNB`,
:class:`~hebnb.ComplementNB` and :class:`~hebnb.BernoulliNB`. Needs the ``dask`` extra (``pip install '.[dask]'`` from a checkout).
"""

from __future__ import annotations

import copy
import dataclasses
import numbers
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import dask.array as da
import dask.dataframe as dd
import dask.delayed as dask_delayed
import numpy as np
import numpy.typing as npt
import pandas as pd
from dask.base import tokenize
from dask.delayed import Delayed
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import _get_feature_names, check_is_fitted

from . import _core
from ._base import _LOCKS, n_threads
from ._encoding import (
    CategoryEncoder,
    _array_column,
    _encode_column,
    aligned_arrays,
    check_sample_weight,
    check_table_size,
    check_weight_total,
    encode_labels,
)
from ._online import merge_pair_tables, n_rows_of
from ._text import Batch, check_finite_labels
from .aode import AODE, check_pair_memory, count_pair_tables
from .dirichlet_groups import EmpiricalBayesDirichletClassifier, _group_column, _label_indices
from .multinomial import DiscreteNB, LeaveOneOutRows
from .naive_bayes import CategoricalNB

__all__ = ["fit", "fit_graph", "partial_fit", "predict", "predict_log_proba", "predict_proba"]

FloatArray = npt.NDArray[np.float64]
Estimator = TypeVar("Estimator", bound=BaseEstimator)
State = TypeVar("State")

#: How many tables one merge task adds (the fan-in of the tree reduction).
SPLIT_EVERY = 8

# Dask's ``delayed`` carries no annotations.
_delayed: Any = dask_delayed


def _int_concat(parts: list[npt.NDArray[Any]]) -> npt.NDArray[np.int64]:
    """The concatenation of integer arrays (empty for no arrays), as int64."""
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(parts).astype(np.int64)


# ---------------------------------------------------------------------------- the tables
@dataclass
class CategoricalCounts:
    """What one partition (or a merged group of them) of a categorical fit sends on.

    ``encoder`` codes categories by first appearance; ``counts`` is ``(C, sum K_f)`` in
    those codes, rows in the order of ``classes`` (sorted labels). ``pairs`` (AODE only)
    is the CSR pair table of ``src/pair_counts.rs`` in the same codes.
    """

    n_rows: int
    classes: npt.NDArray[Any]
    class_count: FloatArray
    encoder: CategoryEncoder
    counts: FloatArray
    pairs: dict[str, Any] | None
    #: The super-parents whose orientations ``pairs`` holds, when they were chosen before
    #: the pairs were counted (:class:`SuperParentPlan`); None: every feature's.
    pair_parents: npt.NDArray[np.bool_] | None = None


@dataclass(frozen=True)
class SuperParentPlan:
    """What the second pass of an ``AODE(max_parents=k)`` fit needs from the first: the
    vocabulary merged over every partition (the codes of the solved model), the classes,
    and the super-parents chosen on the total counts, as a local fit chooses them. Each
    partition then counts only the pairs of those super-parents: O(k F) tables instead
    of O(F^2), which is what makes very wide data fit at all."""

    encoder: CategoryEncoder
    classes: npt.NDArray[Any]
    parents: npt.NDArray[np.bool_]


@dataclass
class GroupCounts:
    """The group vocabulary (codes by first appearance), the class counts of every group
    and the rows each group had (for forgetting at ``learning_rate < 1``)."""

    n_rows: int
    groups: Any  # _core.Vocabulary of one feature
    counts: FloatArray
    group_rows: npt.NDArray[np.int64]
    #: The grouping column's name, as ``feature_names_in_`` records it (None: no name).
    feature_names: npt.NDArray[Any] | None = None


@dataclass
class TokenCounts:
    """Class and token counts of a MultinomialNB / ComplementNB batch."""

    n_rows: int
    classes: npt.NDArray[Any]
    class_count: FloatArray
    feature_count: FloatArray
    n_features: int
    feature_names: npt.NDArray[Any] | None


def _union_classes(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Sorted distinct labels of two partitions (as ``encode_labels`` orders them)."""
    if a.shape == b.shape and np.array_equal(a, b):
        return a
    try:
        return np.unique(np.concatenate([a, b]))
    except TypeError:
        raise ValueError(
            f"partitions hold labels of types that cannot be ordered together: "
            f"{a[:5].tolist()} and {b[:5].tolist()}"
        ) from None


def _class_rows(classes: npt.NDArray[Any], part: npt.NDArray[Any]) -> npt.NDArray[np.intp]:
    """Row of every label of ``part`` in the sorted ``classes``."""
    return np.searchsorted(classes, part)


def _weights(sample_weight: Any, n_rows: int) -> FloatArray:
    """One partition's weights (a partition may weigh zero in total; the whole fit is
    checked once the tables meet)."""
    return check_sample_weight(sample_weight, n_rows, positive_total=False)


def _check_total(class_count: FloatArray) -> None:
    """The checks a local fit makes on the whole training set's labels and weights."""
    if class_count.shape[0] < 2:
        raise ValueError(
            f"The number of classes has to be greater than one; got {class_count.shape[0]} class"
        )
    total = float(class_count.sum())
    if not total > 0:
        raise ValueError("sample_weight sums to zero: at least one row needs positive weight")
    check_weight_total(total)  # each partition's was checked alone


def _check_same_names(a: Any, b: Any) -> None:
    """Partitions whose columns are named must name them alike, in the same order (their
    counts are merged by position)."""
    if a is not None and b is not None and list(a) != list(b):
        raise ValueError(
            f"partitions name their columns differently: {list(a)} and {list(b)} (their "
            "counts would be merged by position)"
        )


class Family(Generic[State]):
    """How one kind of estimator is counted, merged and solved."""

    def __init__(self, template: BaseEstimator) -> None:
        self.template = template  # unfitted: the parameters

    def count(self, X: Any, y: Any, sample_weight: Any) -> State:  # pragma: no cover
        raise NotImplementedError

    def merge(self, a: State, b: State) -> State:  # pragma: no cover
        raise NotImplementedError

    def solve(self, state: State) -> BaseEstimator:  # pragma: no cover
        raise NotImplementedError


class CategoricalFamily(Family[CategoricalCounts]):
    """CategoricalNB and AODE: vocabularies merged by value, tables by (class, category)."""

    @property
    def aode(self) -> bool:
        return isinstance(self.template, AODE)

    @property
    def chooses_parents(self) -> bool:
        """Whether the super-parents are chosen between two passes over the partitions
        (``AODE(max_parents=k)``): the first counts categories, the second pairs."""
        return self.aode and self.template.max_parents is not None

    def _threads(self) -> int:
        return n_threads(self.template.n_jobs)

    def count(self, X: Any, y: Any, sample_weight: Any) -> CategoricalCounts:
        threads = self._threads()
        n_rows = n_rows_of(X)
        # codes as the estimator's own encoder gives them (CategoricalNB: first appearance),
        # so the merged tables need no reordering; AODE's by rank among the sorted
        # categories, as the pair-table merge asks increasing codes (its partial_fit
        # recodes such a model once, by first appearance)
        order = "sorted" if self.aode else self.template._code_order
        encoder = CategoryEncoder(order=order, categories=self.template.categories)
        codes = encoder.fit_transform(X, n_threads=threads)
        classes, labels = encode_labels(y, n_rows)
        weights = _weights(sample_weight, n_rows)
        n_classes, offsets = classes.shape[0], encoder.offsets
        check_table_size(n_classes, offsets[-1])
        class_count, counts = _core.count_categories(
            codes, labels, weights, offsets, n_classes, threads
        )
        pairs = None
        if self.aode and not self.chooses_parents:
            every_feature = np.ones(encoder.n_features, dtype=bool)
            pairs = self._pair_tables(encoder, codes, labels, weights, n_classes, every_feature)
        return CategoricalCounts(n_rows, classes, class_count, encoder, counts, pairs)

    def _pair_tables(
        self,
        encoder: CategoryEncoder,
        codes: Any,
        labels: Any,
        weights: Any,
        n_classes: int,
        parents: npt.NDArray[np.bool_],
    ) -> dict[str, Any]:
        """The pair tables of these coded rows with ``parents`` as super-parents, under
        the template's memory cap."""
        cardinality = np.asarray(encoder.cardinalities, dtype=np.int64)
        capped = self.template._capped(cardinality, n_classes)
        return count_pair_tables(
            codes, labels, weights, encoder.offsets, n_classes, capped, parents, self._threads()
        )

    def merge(self, a: CategoricalCounts, b: CategoricalCounts) -> CategoricalCounts:
        classes = _union_classes(a.classes, b.classes)
        encoder = copy.deepcopy(a.encoder)  # a task's input is never changed (retries)
        if encoder.n_features != b.encoder.n_features:
            raise ValueError(
                f"partitions have {encoder.n_features} and {b.encoder.n_features} features"
            )
        _check_same_names(a.encoder.feature_names, b.encoder.feature_names)
        # a column read as floats in any partition is a float column of the concatenation
        # (int64 in one partition, float64 with a NaN in another: float categories_)
        encoder.floats = [x or y for x, y in zip(a.encoder.floats, b.encoder.floats)]
        b_vocabulary_codes = []
        for f in range(encoder.n_features):
            values, _ = _by_code(b.encoder, f)
            column = _array_column(np.asarray(values), f)
            b_vocabulary_codes.append(
                _encode_column(encoder.vocabulary, f, column, True, f"feature {f}")
            )
        # per feature, the merged code of every code of a and of b (increasing when the
        # codes are sorted ranks, as the pair-table merge asks)
        a_codes = [
            _code_in(encoder, f, _by_code(a.encoder, f)[1]) for f in range(encoder.n_features)
        ]
        b_codes = [_code_in(encoder, f, v) for f, v in enumerate(b_vocabulary_codes)]
        cardinality = np.asarray(encoder.cardinalities, dtype=np.int64)
        offsets = np.asarray(encoder.offsets, dtype=np.int64)
        n_classes = classes.shape[0]
        check_table_size(n_classes, int(offsets[-1]))
        a_rows, b_rows = _class_rows(classes, a.classes), _class_rows(classes, b.classes)
        a_columns = _int_concat([offsets[f] + codes for f, codes in enumerate(a_codes)])
        b_columns = _int_concat([offsets[f] + codes for f, codes in enumerate(b_codes)])
        counts = np.zeros((n_classes, int(offsets[-1])))
        counts[np.ix_(a_rows, a_columns)] += a.counts
        counts[np.ix_(b_rows, b_columns)] += b.counts
        class_count = np.zeros(n_classes)
        class_count[a_rows] += a.class_count
        class_count[b_rows] += b.class_count
        pairs = None
        if a.pairs is not None and b.pairs is not None:
            _check_increasing_codes(encoder, a_codes, b_codes)
            capped = self.template._capped(cardinality, n_classes)
            parents = np.ones(cardinality.shape[0], dtype=bool)
            merged_offsets = [int(o) for o in offsets]
            a_on_merged = merge_pair_tables(
                _widen(a.pairs, a_rows, n_classes),
                _empty_pairs(merged_offsets, n_classes, capped, parents),
                a.encoder.offsets,
                merged_offsets,
                a_codes,
                1.0,
                self._threads(),
            )
            pairs = merge_pair_tables(
                _widen(b.pairs, b_rows, n_classes),
                a_on_merged,
                b.encoder.offsets,
                merged_offsets,
                b_codes,
                1.0,
                self._threads(),
            )
        return CategoricalCounts(a.n_rows + b.n_rows, classes, class_count, encoder, counts, pairs)

    def plan(self, state: CategoricalCounts) -> SuperParentPlan:
        """The super-parents of the total counts, and the vocabulary and classes the
        partitions' pair counts use."""
        parents = self.template._super_parents(state.counts, state.encoder.offsets, self._threads())
        return SuperParentPlan(state.encoder, state.classes, parents)

    def count_pairs(
        self, plan: SuperParentPlan, X: Any, y: Any, sample_weight: Any
    ) -> dict[str, Any]:
        """One partition's pair tables for the planned super-parents, in the merged codes
        (every category of the partition is in the merged vocabulary)."""
        threads = self._threads()
        n_rows = n_rows_of(X)
        # a copy: encoding borrows the vocabulary mutably, and a threaded scheduler runs
        # several partitions' tasks on the one plan at once
        encoder = copy.deepcopy(plan.encoder)
        codes = encoder.transform(X, n_threads=threads).codes
        part_classes, labels = encode_labels(y, n_rows)
        labels = _class_rows(plan.classes, part_classes)[labels].astype(np.int64)
        weights = _weights(sample_weight, n_rows)
        n_classes = plan.classes.shape[0]
        return self._pair_tables(encoder, codes, labels, weights, n_classes, plan.parents)

    def merge_pairs(
        self, plan: SuperParentPlan, a: dict[str, Any], b: dict[str, Any]
    ) -> dict[str, Any]:
        """The sum of two partitions' pair tables of :meth:`count_pairs` (same codes)."""
        offsets = plan.encoder.offsets
        same_codes = [np.arange(k, dtype=np.int64) for k in plan.encoder.cardinalities]
        return merge_pair_tables(a, b, offsets, offsets, same_codes, 1.0, self._threads())

    def solve(self, state: CategoricalCounts) -> BaseEstimator:
        model = clone(self.template)
        model._validate_params()
        threads = self._threads()
        _check_total(state.class_count)
        encoder = state.encoder
        cardinality = np.asarray(encoder.cardinalities, dtype=np.int64)
        offsets = encoder.offsets
        counts = state.counts
        pairs = state.pairs
        model._learn_vocabulary(encoder, state.classes)
        model.class_count_ = state.class_count
        if isinstance(model, AODE):
            assert pairs is not None
            capped = model._capped(cardinality, state.classes.shape[0])
            # the super-parents are chosen on the total counts, as a local fit chooses
            # them; where the partitions counted every feature as a parent, the others'
            # pair tables are dropped
            parents = model._super_parents(counts, offsets, threads)
            if state.pair_parents is not None:
                assert np.array_equal(parents, state.pair_parents)  # the same counts
            elif not parents.all():
                pairs = merge_pair_tables(
                    pairs,
                    _empty_pairs(offsets, state.classes.shape[0], capped, parents),
                    offsets,
                    offsets,
                    [np.arange(k, dtype=np.int64) for k in cardinality],
                    1.0,
                    threads,
                )
            check_pair_memory(offsets, capped, parents, state.n_rows, state.classes.shape[0])
            model.capped_ = capped
            model.super_parents_ = parents
            model._set_pair_tables(pairs)
        else:
            model.__dict__.pop("_feature_counts", None)
            model._unsolved = False
        model._counts = counts
        model._solve(threads)
        return model


def _by_code(encoder: CategoryEncoder, f: int) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
    """``(category, vocabulary code)`` of every code of feature ``f``, in code order."""
    if encoder.order == "sorted":
        codes = np.asarray(encoder.sorted_order(f), dtype=np.int64)
        return encoder.sorted_categories(f), codes
    # codes are the vocabulary's: no sort needed
    categories = encoder.first_appearance_categories(f)
    return categories, np.arange(categories.shape[0], dtype=np.int64)


def _code_in(encoder: CategoryEncoder, f: int, vocabulary_codes: Any) -> npt.NDArray[np.int64]:
    """The codes ``encoder`` gives the categories with these vocabulary codes."""
    codes = np.asarray(vocabulary_codes, dtype=np.int64)
    if encoder.order != "sorted":
        return codes
    rank = np.argsort(np.asarray(encoder.sorted_order(f)), kind="stable")
    return rank[codes].astype(np.int64)


def _widen(pairs: dict[str, Any], rows: npt.NDArray[np.intp], n_classes: int) -> dict[str, Any]:
    """A pair table's class columns placed among ``n_classes`` classes (the same count
    type: uint32 whole counts stay whole)."""
    counts = pairs["counts"]
    wide = np.zeros((counts.shape[0], n_classes), dtype=counts.dtype)
    wide[:, rows] = counts
    return {**pairs, "counts": wide}


def _empty_pairs(
    offsets: list[int],
    n_classes: int,
    capped: npt.NDArray[np.bool_],
    parents: npt.NDArray[np.bool_],
) -> dict[str, Any]:
    """The pair tables of no rows on a vocabulary (what a merge adds to)."""
    return _core.count_pairs(
        np.zeros((len(offsets) - 1, 0), dtype=np.int32),
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.float64),
        offsets=offsets,
        n_classes=n_classes,
        capped=capped,
        parents=parents,
        n_jobs=1,
    )


class GroupFamily(Family[GroupCounts]):
    """EmpiricalBayesDirichletClassifier: group tables merged by group, forgetting kept."""

    def count(self, X: Any, y: Any, sample_weight: Any) -> GroupCounts:
        classes = self.template._initial_prior()[0]
        column, n_rows = _group_column(X)
        labels = _label_indices(y, classes, n_rows)
        weights = _weights(sample_weight, n_rows)
        groups = _core.Vocabulary(1)
        codes = _encode_column(groups, 0, column, True, "the group column")
        if np.any(codes == -1):
            raise ValueError("X holds missing groups (NaN or None): every row needs a group")
        index = codes.astype(np.int64)
        n_groups = groups.lengths()[0]
        counts = _core.absorb_group_rows(
            np.zeros((n_groups, classes.shape[0])),
            index,
            labels,
            weights,
            float(self.template.learning_rate),
        )
        rows = np.bincount(index, minlength=n_groups).astype(np.int64)
        return GroupCounts(n_rows, groups, counts, rows, _get_feature_names(X))

    def merge(self, a: GroupCounts, b: GroupCounts) -> GroupCounts:
        a_values, b_values = _group_values(a), _group_values(b)
        # the groups in a local fit's order: those in rows by first appearance, then the
        # declared categories no row holds (a partition lists its own unused ones after
        # its rows; kept in place, they came before groups first seen in a later one)
        seen_a, seen_b = a.group_rows > 0, b.group_rows > 0
        order = np.concatenate(
            [a_values[seen_a], b_values[seen_b], a_values[~seen_a], b_values[~seen_b]]
        )
        groups = _core.Vocabulary(1)
        _encode_column(groups, 0, _array_column(order, 0), True, "the group column")
        a_at, b_at = (
            _encode_column(groups, 0, _array_column(values, 0), False, "the group column").astype(
                np.int64
            )
            for values in (a_values, b_values)
        )
        n_groups = groups.lengths()[0]
        counts = np.zeros((n_groups, a.counts.shape[1]))
        rows = np.zeros(n_groups, dtype=np.int64)
        rows[b_at] = b.group_rows
        # a's rows came first: they age by one step per later row of their group
        rate = float(self.template.learning_rate)
        later = rows[a_at].astype(np.float64)
        decay = rate**later if rate != 1.0 else np.ones_like(later)
        counts[a_at] = a.counts * decay[:, None]
        counts[b_at] += b.counts
        rows[a_at] += a.group_rows
        return GroupCounts(a.n_rows + b.n_rows, groups, counts, rows, a.feature_names)

    def solve(self, state: GroupCounts) -> BaseEstimator:
        _check_total(state.counts.sum(axis=0))
        model = clone(self.template)
        model._validate_params()
        model.classes_, model.prior_ = model._initial_prior()
        model._groups = state.groups
        model.groups_ = _group_values(state)
        model.group_counts_ = state.counts
        model.n_features_in_ = 1
        if state.feature_names is not None:
            model.feature_names_in_ = state.feature_names
        model.random_state_ = np.random.default_rng(model.random_state)
        if model.n_eb_iter > 0:
            model._tune(int(model.n_eb_iter), float(model.eb_tol))
        else:
            model.log_evidence_, model.n_eb_iterations_, model.eb_converged_ = -np.inf, 0, False
        return model


def _group_values(state: GroupCounts) -> npt.NDArray[np.object_]:
    """The groups of a partition's tables, in the order of their rows."""
    n_groups = state.groups.lengths()[0]
    return np.fromiter(state.groups.values(0), dtype=object, count=n_groups)


class TokenFamily(Family[TokenCounts]):
    """MultinomialNB, ComplementNB and BernoulliNB: a fixed vocabulary, tables merged by
    class."""

    def count(self, X: Any, y: Any, sample_weight: Any) -> TokenCounts:
        model = clone(self.template)
        matrix = model._check_X(X, reset=True)
        check_finite_labels(y)
        classes, labels = encode_labels(y, matrix.n_rows)
        weights = _weights(sample_weight, matrix.n_rows)
        batch = Batch(classes, np.ascontiguousarray(labels, dtype=np.int64), weights)
        class_count, feature_count = model._count(matrix, batch)
        names = getattr(model, "feature_names_in_", None)
        return TokenCounts(
            matrix.n_rows, classes, class_count, feature_count, matrix.n_columns, names
        )

    def merge(self, a: TokenCounts, b: TokenCounts) -> TokenCounts:
        if a.n_features != b.n_features:
            raise ValueError(
                f"X has {b.n_features} features in one partition and {a.n_features} in another"
            )
        _check_same_names(a.feature_names, b.feature_names)
        classes = _union_classes(a.classes, b.classes)
        a_rows, b_rows = _class_rows(classes, a.classes), _class_rows(classes, b.classes)
        class_count = np.zeros(classes.shape[0])
        class_count[a_rows] += a.class_count
        class_count[b_rows] += b.class_count
        feature_count = np.zeros((classes.shape[0], a.n_features))
        feature_count[a_rows] += a.feature_count
        feature_count[b_rows] += b.feature_count
        return TokenCounts(
            a.n_rows + b.n_rows, classes, class_count, feature_count, a.n_features, a.feature_names
        )

    def power_rows(self, model: BaseEstimator, X: Any, y: Any, sample_weight: Any) -> Any:
        """A partition's rows as the posterior power of the solved ``model`` reads them
        (``MultinomialNB``'s leave-one-out rows), class indices those of the whole fit."""
        matrix = model._check_X(X, reset=False)
        check_finite_labels(y)
        classes, labels = encode_labels(y, matrix.n_rows)
        labels = _class_rows(model.classes_, classes)[labels].astype(np.int64)
        weights = _weights(sample_weight, matrix.n_rows)
        return model._leave_one_out_rows(matrix, Batch(model.classes_, labels, weights))

    def solve(self, state: TokenCounts) -> BaseEstimator:
        model = clone(self.template)
        model._validate_params()
        _check_total(state.class_count)
        model.classes_ = state.classes
        model.class_count_ = state.class_count
        model.feature_count_ = state.feature_count
        model.n_features_in_ = state.n_features
        if state.feature_names is not None:
            model.feature_names_in_ = state.feature_names
        model._solve()
        return model


def _family(estimator: BaseEstimator) -> Family[Any]:
    if isinstance(estimator, (CategoricalNB, AODE)):
        return CategoricalFamily(estimator)
    if isinstance(estimator, EmpiricalBayesDirichletClassifier):
        return GroupFamily(estimator)
    if isinstance(estimator, DiscreteNB):
        return TokenFamily(estimator)
    raise TypeError(
        "hebnb.dask fits CategoricalNB, AODE, EmpiricalBayesDirichletClassifier, "
        f"MultinomialNB, ComplementNB and BernoulliNB, not {type(estimator).__name__}"
    )


# ---------------------------------------------------------------------------- the tasks
def _in_partition(index: int, n_partitions: int, step: Callable[[], Any]) -> Any:
    """Runs ``step``; an error is re-raised with the same type, naming the partition."""
    try:
        return step()
    except (ValueError, TypeError, MemoryError, KeyError) as error:
        raise type(error)(f"partition {index} of {n_partitions}: {error}") from error


def _aligned(part: Any) -> Any:
    """A partition whose numeric arrays the core can borrow: arrays unpickled from the
    frames Dask ships between processes may sit at an unaligned byte offset, which the
    Rust kernels refuse, so those (only) are copied."""
    if isinstance(part, np.ndarray):
        return aligned_arrays(part)
    if isinstance(part, pd.DataFrame):
        columns = (part.iloc[:, j].to_numpy(copy=False) for j in range(part.shape[1]))
        if any(isinstance(c, np.ndarray) and not c.flags.aligned for c in columns):
            return part.copy(deep=True)
    if isinstance(part, pd.Series):
        values = part.to_numpy(copy=False)
        if isinstance(values, np.ndarray) and not values.flags.aligned:
            return part.copy(deep=True)
    return part


def _empty_partition(X: Any, y: Any, sample_weight: Any, index: int, n_partitions: int) -> bool:
    """Whether a partition holds no row; its weights must hold none either."""
    if n_rows_of(X) == 0 and len(y) == 0:
        _in_partition(index, n_partitions, lambda: _weights(sample_weight, 0))
        return True
    return False


def _count_task(
    family: Family[Any], X: Any, y: Any, sample_weight: Any, index: int, n_partitions: int
) -> Any:
    """The count table of one partition (None for an empty one)."""
    if _empty_partition(X, y, sample_weight, index, n_partitions):
        return None
    X, y, sample_weight = _aligned(X), _aligned(y), _aligned(sample_weight)
    return _in_partition(index, n_partitions, lambda: family.count(X, y, sample_weight))


def _merge_task(family: Family[Any], *states: Any) -> Any:
    """The sum of some partitions' count tables, in partition order."""
    total = None
    for state in states:
        if state is None:
            continue
        state = aligned_arrays(state)
        total = state if total is None else family.merge(total, state)
    return total


def _solve_task(family: Family[Any], state: Any) -> BaseEstimator:
    _check_not_empty(state)
    return family.solve(aligned_arrays(state))


def _check_not_empty(state: Any) -> None:
    if state is None:
        raise ValueError("every partition is empty: there is nothing to fit")


def _plan_task(family: CategoricalFamily, state: CategoricalCounts | None) -> SuperParentPlan:
    """The super-parents of the merged category counts (the first pass's result)."""
    _check_not_empty(state)
    assert state is not None
    return family.plan(aligned_arrays(state))


def _pair_count_task(
    family: CategoricalFamily,
    plan: SuperParentPlan,
    X: Any,
    y: Any,
    sample_weight: Any,
    index: int,
    n_partitions: int,
) -> dict[str, Any] | None:
    """One partition's pair tables for the planned super-parents (None for an empty one)."""
    if n_rows_of(X) == 0 and len(y) == 0:
        return None
    X, y, sample_weight = _aligned(X), _aligned(y), _aligned(sample_weight)
    tables: dict[str, Any] = _in_partition(
        index, n_partitions, lambda: family.count_pairs(plan, X, y, sample_weight)
    )
    return tables


def _pair_merge_task(
    family: CategoricalFamily, plan: SuperParentPlan, *tables: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The sum of some partitions' pair tables, in partition order."""
    total = None
    for table in tables:
        if table is not None:
            table = aligned_arrays(table)
            total = table if total is None else family.merge_pairs(plan, total, table)
    return total


def _with_pairs_task(
    state: CategoricalCounts, plan: SuperParentPlan, pairs: dict[str, Any] | None
) -> CategoricalCounts:
    """The merged category counts with the pair tables of the second pass."""
    return dataclasses.replace(state, pairs=pairs, pair_parents=plan.parents)


def _power_rows_task(
    family: TokenFamily,
    model: BaseEstimator,
    X: Any,
    y: Any,
    sample_weight: Any,
    index: int,
    n_partitions: int,
) -> Any:
    """One partition's leave-one-out rows under the solved model (None for an empty one)."""
    if n_rows_of(X) == 0 and len(y) == 0:
        return None
    X, y, sample_weight = _aligned(X), _aligned(y), _aligned(sample_weight)
    return _in_partition(index, n_partitions, lambda: family.power_rows(model, X, y, sample_weight))


def _check_increasing_codes(
    encoder: CategoryEncoder, *codes_of_parts: list[npt.NDArray[np.int64]]
) -> None:
    """Refuses a merge of AODE pair tables whose codes do not map in increasing order onto
    the merged categories: the partitions code categories by their sorted rank, and
    values Python cannot order (tuples of mixed types, ...) keep their order of first
    appearance, which differs from partition to partition."""
    for codes in codes_of_parts:
        for f, mapped in enumerate(codes):
            if np.any(np.diff(mapped) <= 0):
                name = encoder.feature_names[f] if encoder.feature_names is not None else f
                raise ValueError(
                    f"feature {name!r} holds values Python cannot sort (e.g. tuples of mixed "
                    "types), whose pair tables AODE cannot merge across partitions: convert "
                    "the column to strings, choose super-parents with max_parents, or fit "
                    "locally"
                )


def _power_task(model: BaseEstimator, *parts: Any) -> BaseEstimator:
    """The solved model with the posterior power of all the partitions' rows, taken in
    partition order: the rows, and so the power, of a local fit."""
    fitted = copy.copy(model)  # a task's input is never changed (retries)
    present = [part for part in parts if part is not None]
    if present:
        fitted._fit_power(LeaveOneOutRows.joined(present))
    return fitted


def _blocks(collection: Any, name: str, optimize: bool = True) -> list[Any]:
    """The partitions of a Dask DataFrame / Series / Array as Delayed objects, in order
    (``optimize``: of the optimised graph, which may fuse partitions)."""
    lazy: Any = collection  # Dask's collections are partly annotated
    if isinstance(collection, (dd.DataFrame, dd.Series)):
        return list(lazy.to_delayed(optimize_graph=optimize))
    if isinstance(collection, da.Array):
        if lazy.ndim == 2 and lazy.numblocks[1] != 1:
            lazy = lazy.rechunk({1: -1})  # whole rows in every block
        if lazy.ndim not in (1, 2):
            raise ValueError(f"{name} must be 1-D or 2-D, got {lazy.ndim} dimensions")
        return list(np.asarray(lazy.to_delayed()).ravel())
    raise TypeError(
        f"{name} must be a Dask DataFrame, Series or Array, got {type(collection).__name__}: "
        "for in-memory data call the estimator's own fit"
    )


def _aligned_blocks(X: Any, y: Any, sample_weight: Any) -> list[tuple[Any, Any, Any]]:
    """``(X, y, sample_weight)`` partition by partition; they must be partitioned alike."""

    def blocks(optimize: bool) -> tuple[list[Any], list[Any], list[Any]]:
        x_blocks, y_blocks = _blocks(X, "X", optimize), _blocks(y, "y", optimize)
        if sample_weight is None:
            return x_blocks, y_blocks, [None] * len(x_blocks)
        return x_blocks, y_blocks, _blocks(sample_weight, "sample_weight", optimize)

    x_blocks, y_blocks, w_blocks = blocks(optimize=True)
    fused = any(
        isinstance(c, (dd.DataFrame, dd.Series)) and len(b) != c.npartitions
        for c, b in ((X, x_blocks), (y, y_blocks), (sample_weight, w_blocks))
    )
    if fused:
        # the optimiser fuses small Parquet partitions by the columns read, so y (one
        # column) and X of one frame can split differently: their partitions as written
        x_blocks, y_blocks, w_blocks = blocks(optimize=False)
    if not (len(x_blocks) == len(y_blocks) == len(w_blocks)):
        raise ValueError(
            f"X, y and sample_weight must have the same partitions: X has {len(x_blocks)}, "
            f"y has {len(y_blocks)}"
            + ("" if sample_weight is None else f", sample_weight has {len(w_blocks)}")
        )
    chunks = [c.chunks[0] for c in (X, y, sample_weight) if isinstance(c, da.Array)]
    # unknown chunks (NaN) are compared partition by partition when the rows are read
    known = [c for c in chunks if not np.any(np.isnan(c))]
    if any(c != known[0] for c in known):
        raise ValueError(f"X, y and sample_weight must have the same row chunks, got {chunks}")
    return list(zip(x_blocks, y_blocks, w_blocks))


def _key_params(estimator: BaseEstimator) -> list[tuple[str, Any]]:
    """The estimator's parameters as a fit's task keys tell them apart: in order, a dict
    as its items in order (Dask's token sorts a dict, and the group classifier's
    ``alphas`` order is its ``classes_`` order)."""
    return [
        (name, list(value.items()) if isinstance(value, dict) else value)
        for name, value in estimator.get_params(deep=False).items()
    ]


def fit_graph(
    estimator: BaseEstimator,
    X: Any,
    y: Any,
    sample_weight: Any = None,
    *,
    split_every: int = SPLIT_EVERY,
) -> Delayed:
    """The lazy fit: a Delayed whose result is the fitted estimator (a new object).

    Use it to fit several models in one ``dask.compute``, or to watch the fit with
    ``distributed.progress``; :func:`fit` computes it.
    """
    if not (
        isinstance(split_every, numbers.Integral)
        and not isinstance(split_every, bool)
        and split_every >= 2
    ):
        raise ValueError(f"split_every must be an integer >= 2, got {split_every!r}")
    split_every = int(split_every)
    family = _family(clone(estimator))
    _check_parameters(family.template)
    blocks = _aligned_blocks(X, y, sample_weight)
    token = tokenize(type(estimator).__name__, _key_params(estimator), X, y, sample_weight)
    family_node = _delayed(family, pure=True)
    count = _delayed(_count_task, pure=True)
    n = len(blocks)
    counts = [
        count(family_node, xb, yb, wb, i, n, dask_key_name=f"hebnb-count-{token}-{i}")
        for i, (xb, yb, wb) in enumerate(blocks)
    ]
    merge = _delayed(_merge_task, pure=True)
    state = _reduce(counts, merge, (family_node,), f"hebnb-merge-{token}", split_every)
    if isinstance(family, CategoricalFamily) and family.chooses_parents:
        # a second pass: the super-parents chosen on the total counts, then only their
        # pairs counted in every partition
        plan = _delayed(_plan_task, pure=True)(
            family_node, state, dask_key_name=f"hebnb-plan-{token}"
        )
        pair_count = _delayed(_pair_count_task, pure=True)
        tables = [
            pair_count(
                family_node, plan, xb, yb, wb, i, n, dask_key_name=f"hebnb-pairs-{token}-{i}"
            )
            for i, (xb, yb, wb) in enumerate(blocks)
        ]
        pair_merge = _delayed(_pair_merge_task, pure=True)
        pairs = _reduce(
            tables, pair_merge, (family_node, plan), f"hebnb-pair-merge-{token}", split_every
        )
        state = _delayed(_with_pairs_task, pure=True)(
            state, plan, pairs, dask_key_name=f"hebnb-with-pairs-{token}"
        )
    solve = _delayed(_solve_task, pure=True)
    result: Delayed = solve(family_node, state, dask_key_name=f"hebnb-solve-{token}")
    if getattr(family.template, "_power_needs_rows", lambda: False)():
        # the leave-one-out posterior power reads the rows under the solved model: a
        # second pass over the partitions, whose (classes + 2) numbers per row meet in
        # one task
        rows = _delayed(_power_rows_task, pure=True)
        parts = [
            rows(family_node, result, xb, yb, wb, i, n, dask_key_name=f"hebnb-rows-{token}-{i}")
            for i, (xb, yb, wb) in enumerate(blocks)
        ]
        power = _delayed(_power_task, pure=True)
        result = power(result, *parts, dask_key_name=f"hebnb-power-{token}")
    return result


def _reduce(
    level: list[Delayed],
    merge: Any,
    leading: tuple[Any, ...],
    name: str,
    split_every: int,
) -> Delayed:
    """A tree reduction of ``level`` by ``merge(*leading, *up to split_every nodes)``,
    in order; its tasks are named ``{name}-{depth}-{index}``."""
    depth = 0
    while len(level) > 1:
        level = [
            merge(
                *leading,
                *level[start : start + split_every],
                dask_key_name=f"{name}-{depth}-{start // split_every}",
            )
            for start in range(0, len(level), split_every)
        ]
        depth += 1
    return level[0]


def _check_parameters(model: BaseEstimator) -> None:
    """The parameter checks of a local fit (``_parameter_constraints``), and a refusal of
    what a fit from count tables cannot give, before any task runs."""
    model._validate_params()
    check_combinations = getattr(model, "_check_combinations", None)
    if check_combinations is not None:  # parameters that exclude or need each other
        check_combinations()
    weighting = getattr(model, "weighting", None)
    if weighting is not None:
        raise ValueError(
            f"hebnb.dask cannot fit weighting={weighting!r}: discriminative weights are "
            "learned from the rows, and only count tables leave the workers; fit with "
            "weighting=None, or fit the weighted model locally"
        )


def _adopt(estimator: Estimator, fitted: BaseEstimator) -> Estimator:
    """``estimator`` with the fitted state of ``fitted`` (scikit-learn's fit-in-place)."""
    # the estimator keeps its own locks (hebnb._base.ThreadSafeModel), never the other's
    locks = {k: v for k, v in estimator.__dict__.items() if k in _LOCKS}
    estimator.__dict__.clear()
    estimator.__dict__.update({k: v for k, v in fitted.__dict__.items() if k not in _LOCKS})
    estimator.__dict__.update(locks)
    return estimator


def fit(
    estimator: Estimator,
    X: Any,
    y: Any,
    sample_weight: Any = None,
    *,
    split_every: int = SPLIT_EVERY,
) -> Estimator:
    """Fits ``estimator`` on Dask collections: the model a local ``fit`` on the
    concatenated partitions gives.

    Parameters
    ----------
    estimator : CategoricalNB, AODE, EmpiricalBayesDirichletClassifier, MultinomialNB or \
ComplementNB
        Fitted in place (its parameters say what to fit) and returned.
    X : dask DataFrame or dask Array of shape (n_samples, n_features)
    y : dask Series or dask Array of shape (n_samples,)
        Partitioned like ``X`` (the same number of rows in each partition).
    sample_weight : dask Series or dask Array of shape (n_samples,), default=None
        Partitioned like ``X``.
    split_every : int, default=8
        Count tables added by one task of the tree reduction.

    Returns
    -------
    estimator
        The same object, fitted: it pickles and predicts on numpy / pandas like any
        other fitted estimator.

    Notes
    -----
    Uses the current Dask scheduler (a ``distributed.Client`` if one is active). Each
    partition becomes a count table on its worker (its own vocabulary, classes and
    counts); the tables are added in a tree reduction and the model is solved once,
    in one task, with ``n_jobs`` threads. A ``MultinomialNB`` whose posterior power is
    fitted by leave-one-out (its default) then reads the partitions a second time: each
    gives its rows' leave-one-out scores under the solved model (``n_classes + 2``
    numbers per row), and the power is fitted where they meet, as a local ``fit`` fits
    it.
    """
    graph: Any = fit_graph(estimator, X, y, sample_weight, split_every=split_every)
    fitted = graph.compute()
    return _adopt(estimator, fitted)


def _partial_fit_task(
    model: BaseEstimator,
    X: Any,
    y: Any,
    sample_weight: Any,
    classes: Any,
    index: int,
    n_partitions: int,
) -> BaseEstimator:
    """One step of a stream: ``model.partial_fit`` on one partition (a copy: the input
    of a task never changes, so a retried task gives the same result)."""
    if _empty_partition(X, y, sample_weight, index, n_partitions):
        return model
    updated: Any = copy.deepcopy(model)

    def step() -> BaseEstimator:
        result: BaseEstimator = updated.partial_fit(
            X, y, sample_weight=sample_weight, classes=classes
        )
        return result

    return _in_partition(index, n_partitions, step)


def partial_fit(
    estimator: Estimator, X: Any, y: Any, classes: Any = None, sample_weight: Any = None
) -> Estimator:
    """Streams the partitions through ``estimator.partial_fit``, in order.

    Each step runs on a worker holding its partition and hands the model (its count
    tables, never rows) to the next, so the result is the model the same sequence of
    local ``partial_fit`` calls gives, forgetting (``learning_rate``) included. Empty
    partitions are skipped.

    Parameters
    ----------
    estimator : CategoricalNB, AODE, EmpiricalBayesDirichletClassifier, MultinomialNB or \
ComplementNB
        Updated in place and returned (it may already be fitted: the stream continues it).
    X, y, sample_weight : Dask collections partitioned alike
    classes : array-like, default=None
        All the classes of the stream, as for ``partial_fit`` (needed unless the first
        non-empty partition shows every class).

    Returns
    -------
    estimator
    """
    _family(estimator)
    blocks = _aligned_blocks(X, y, sample_weight)
    # the result depends on the model's state too, which has no cheap token: every
    # stream gets keys of its own (two streams from equal parameters and data once
    # shared their keys, so the second got the first's model)
    token = tokenize(type(estimator).__name__, classes, X, y, sample_weight, uuid.uuid4().hex)
    step = _delayed(_partial_fit_task, pure=True)
    model: Any = _delayed(copy.deepcopy(estimator), pure=True)
    n = len(blocks)
    for i, (xb, yb, wb) in enumerate(blocks):
        model = step(
            model, xb, yb, wb, classes, i, n, dask_key_name=f"hebnb-partial-fit-{token}-{i}"
        )
    return _adopt(estimator, model.compute())


# ---------------------------------------------------------------------------- predicting
def _class_columns(classes: npt.NDArray[Any]) -> list[Any]:
    return list(classes.tolist())


def _scores_frame(
    part: pd.DataFrame, estimator: Any, method: str, columns: list[Any]
) -> pd.DataFrame:
    scores = np.zeros((0, len(columns))) if len(part) == 0 else getattr(estimator, method)(part)
    frame: pd.DataFrame = pd.DataFrame(scores, index=part.index, columns=columns)
    return frame


def _labels_series(part: pd.DataFrame, estimator: Any, meta: pd.Series) -> pd.Series:
    labels = meta.to_numpy() if len(part) == 0 else estimator.predict(part)
    series: pd.Series = pd.Series(labels, index=part.index, name=meta.name, dtype=meta.dtype)
    return series


def _scores_block(block: Any, estimator: Any, method: str, n_classes: int) -> FloatArray:
    if block.shape[0] == 0:
        return np.zeros((0, n_classes))
    result: FloatArray = getattr(estimator, method)(block)
    return result


def _labels_block(block: Any, estimator: Any, dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    if block.shape[0] == 0:
        return np.zeros(0, dtype=dtype)
    result: npt.NDArray[Any] = estimator.predict(block)
    return result


def _lazy_rows(X: Any) -> tuple[bool, Any]:
    """``(is a DataFrame, X)`` for a Dask DataFrame or a 2-D Dask Array (then rechunked to
    whole rows); TypeError for anything else."""
    lazy: Any = X  # Dask's collections are partly annotated
    if isinstance(X, dd.DataFrame):
        return True, lazy
    if isinstance(X, da.Array):
        if lazy.ndim != 2:
            raise ValueError(f"X must be 2-D, got {lazy.ndim} dimensions")
        return False, lazy.rechunk({1: -1}) if lazy.numblocks[1] != 1 else lazy
    raise TypeError(
        f"X must be a Dask DataFrame or Array, got {type(X).__name__}: for in-memory data "
        "call the estimator's own methods"
    )


def _scores(estimator: Any, X: Any, method: str) -> Any:
    check_is_fitted(estimator)
    classes = np.asarray(estimator.classes_)
    is_frame, lazy = _lazy_rows(X)
    model = _delayed(estimator, pure=True)  # one copy of the model in the graph
    if is_frame:
        columns = _class_columns(classes)
        # the index of X (its dtype and name), as every partition's result has
        index = lazy._meta.index
        meta = pd.DataFrame(np.zeros((0, len(columns))), columns=columns, index=index)
        return lazy.map_partitions(_scores_frame, model, method, columns, meta=meta)
    return lazy.map_blocks(
        _scores_block,
        model,
        method,
        classes.shape[0],
        dtype=np.float64,
        chunks=(lazy.chunks[0], (classes.shape[0],)),
        meta=np.zeros((0, 0)),
    )


def predict_proba(estimator: Any, X: Any) -> Any:
    """Lazy class probabilities of every row: a Dask DataFrame (one column per class, the
    index of ``X``) for a Dask DataFrame, a Dask Array ``(n_samples, n_classes)`` for an
    Array."""
    return _scores(estimator, X, "predict_proba")


def predict_log_proba(estimator: Any, X: Any) -> Any:
    """Lazy log class probabilities, shaped as :func:`predict_proba`."""
    return _scores(estimator, X, "predict_log_proba")


def predict(estimator: Any, X: Any) -> Any:
    """Lazy most probable class of every row: a Dask Series for a Dask DataFrame, a 1-D
    Dask Array for an Array."""
    check_is_fitted(estimator)
    classes = np.asarray(estimator.classes_)
    is_frame, lazy = _lazy_rows(X)
    model = _delayed(estimator, pure=True)
    if is_frame:
        # the dtype pandas gives the labels (str for strings under pandas 3), the index of X
        meta = pd.Series(classes, name="prediction").iloc[:0]
        meta.index = lazy._meta.index
        return lazy.map_partitions(_labels_series, model, meta, meta=meta)
    return lazy.map_blocks(
        _labels_block,
        model,
        classes.dtype,
        dtype=classes.dtype,
        drop_axis=1,
        meta=classes[:0],
    )
