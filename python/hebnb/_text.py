"""What the count, binary and continuous models share: the estimator base (``predict``,
``predict_proba``, ``predict_log_proba`` written once over ``_joint_log_likelihood``),
the scikit-learn class prior, the batch bookkeeping of ``fit`` / ``partial_fit``, and
the validation of token counts held as scipy sparse matrices (never densified)."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import (
    PREDICT_CHUNK_CELLS,
    RowsOverflow,
    ThreadSafeModel,
    check_class_prior,
    class_log_prior,
    n_threads,
    score_in_chunks,
    validate_table,
)
from ._encoding import TABLE_COPIES, check_sample_weight, check_table_size, encode_labels
from ._online import batch_classes

FloatArray = npt.NDArray[np.float64]


def empirical_class_log_prior(
    class_count: FloatArray, *, fit_prior: bool, class_prior: Any
) -> FloatArray:
    """ln pi_c as scikit-learn's Naive Bayes models: the class frequency ``N_c / S``
    (not the Laplace prior of the categorical models), uniform, or the user's."""
    if class_prior is None and fit_prior:
        with np.errstate(divide="ignore"):
            prior: FloatArray = np.log(class_count) - np.log(class_count.sum())
        return prior
    return class_log_prior(class_count, fit_prior=fit_prior, class_prior=class_prior)


def check_finite_labels(y: Any) -> None:
    """Infinite numeric labels are an error (missing ones are caught with the others)."""
    values = np.asarray(y)
    if values.dtype.kind in "fc" and np.any(np.isinf(values)):
        raise ValueError("Input y contains infinity: every row needs a finite class label")


@dataclass(frozen=True)
class Batch:
    """One training batch: its classes, the class index and weight of every row."""

    classes: npt.NDArray[Any]
    labels: npt.NDArray[np.int64]
    weights: FloatArray


def check_no_overflow(joint: FloatArray, what: str) -> None:
    """Refuses rows whose joint log-likelihood is -inf for every class through float64
    overflow: their posterior is not determined, and scoring would give each class a
    probability of 0 (as it does for a row no class can produce)."""
    lost = np.flatnonzero(np.isneginf(joint.max(axis=1, initial=-np.inf)))
    if lost.size:
        raise RowsOverflow(what, lost)


def training_batch(
    y: Any,
    n_rows: int,
    sample_weight: Any,
    *,
    partial: bool,
    classes: Any = None,
    fitted_classes: npt.NDArray[Any] | None = None,
    class_prior: Any = None,
) -> Batch:
    """Labels and weights of a ``fit`` (``partial=False``) or ``partial_fit`` batch;
    ``class_prior`` must have one probability per class (checked before any counting)."""
    check_finite_labels(y)
    if partial:
        declared, labels = batch_classes(y, n_rows, classes, fitted_classes)
    else:
        declared, labels = encode_labels(y, n_rows)
        if declared.shape[0] < 2:
            raise ValueError(
                f"The number of classes has to be greater than one; got {declared.shape[0]} class"
            )
    check_class_prior(class_prior, declared.shape[0])
    weights = check_sample_weight(sample_weight, n_rows)
    return Batch(declared, np.ascontiguousarray(labels, dtype=np.int64), weights)


#: Value types taken as they are (converted to float64 when the core reads them, a copy of
#: the stored values only: scipy's own ``astype`` would also sort every row's indices).
NUMERIC_DTYPES = [
    np.float64,
    np.float32,
    np.int64,
    np.int32,
    np.int16,
    np.int8,
    np.uint64,
    np.uint32,
    np.uint16,
    np.uint8,
]


class CountMatrix:
    """A validated batch of counts: a CSR or CSC matrix of float64 values, its arrays
    ready for the core (int64 pointer, int32 indices)."""

    def __init__(self, matrix: Any, *, sparse_input: bool = True) -> None:
        self.matrix = matrix
        #: whether the caller passed a sparse matrix (dense input is converted here)
        self.sparse_input = sparse_input
        self.by_columns = matrix.format == "csc"
        # aligned as the core borrows them: buffers unpickled out of band (Dask ships
        # partitions so) may sit at any byte offset
        self.indptr = np.require(matrix.indptr, dtype=np.int64, requirements=["C", "A"])
        self.indices = np.require(matrix.indices, dtype=np.int32, requirements=["C", "A"])
        self.data = np.require(matrix.data, dtype=np.float64, requirements=["C", "A"])
        self.n_rows, self.n_columns = (int(n) for n in matrix.shape)

    def rows(self) -> CountMatrix:
        """The same matrix as CSR (scoring reads rows): a copy of the non-zeros if CSC."""
        if not self.by_columns:
            return self
        return CountMatrix(self.matrix.tocsr(), sparse_input=self.sparse_input)


def check_sparse_structure(X: Any) -> None:
    """Refuses a CSR or CSC matrix whose pointers or indices are out of range, before
    anything reads them: scipy's own conversions (CSC to CSR for scoring, summing
    duplicates) trust them and would read or write out of bounds, and an int64 index
    beyond int32 would wrap when the indices are narrowed for the core. (scipy's
    ``check_format(full_check=True)`` checks the same but prunes and recasts the caller's
    arrays in place.)"""
    n_major, n_minor = X.shape if X.format == "csr" else X.shape[::-1]
    indptr, indices = X.indptr, X.indices
    n_stored = min(indices.shape[0], X.data.shape[0])
    problem = None
    if indptr.ndim != 1 or indptr.shape[0] != n_major + 1:
        problem = f"index pointer of shape {indptr.shape}, expected ({n_major + 1},)"
    elif indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] > n_stored:
        problem = f"index pointer is not a non-decreasing sequence from 0 to at most {n_stored}"
    else:
        used = indices[: indptr[-1]]
        if used.size and (used.min() < 0 or used.max() >= n_minor):
            problem = f"index {used.min() if used.min() < 0 else used.max()} outside 0..{n_minor}"
    if problem is not None:
        raise ValueError(f"malformed sparse matrix ({X.format}): {problem}")


def check_counts(
    estimator: BaseEstimator,
    X: Any,
    *,
    reset: bool,
    binary_threshold: float | None = None,
    canonical: bool = False,
    non_negative: bool = False,
) -> CountMatrix:
    """Validates a batch of token counts (or binary features) against the estimator.

    Sparse input stays sparse (CSR and CSC as they are, other formats as CSR; the
    values become float64, a copy of the stored values at most). Dense input becomes CSR.
    NaN or infinite values, and a number of features different from the fitted one,
    are ValueErrors (scikit-learn's ``validate_data`` for dense input; the core, which
    reads every stored value anyway, for a sparse matrix). ``binary_threshold`` (Bernoulli)
    turns dense input into its indicator ``X > threshold`` and refuses a negative
    threshold on sparse input, which would make every absent entry present.
    ``non_negative`` refuses negative values (token counts).
    ``canonical`` sums duplicate entries of a sparse matrix (on a copy) so that each
    (row, feature) is one stored value.
    """
    # A sparse matrix's values are checked by the core as it reads them (finite, and
    # non-negative for counts): checking them here as well would read them twice.
    core_checks_values = sp.issparse(X)
    X = validate_table(
        estimator,
        X,
        accept_sparse=("csr", "csc"),
        dtype=NUMERIC_DTYPES,
        reset=reset,
        ensure_all_finite=not core_checks_values,
        ensure_non_negative=non_negative and not core_checks_values,
    )
    sparse_input = sp.issparse(X)
    if sparse_input:
        check_sparse_structure(X)
    if not sparse_input:
        X = dense_as_csr(X, binary_threshold)
    elif binary_threshold is not None and binary_threshold < 0:
        raise ValueError(
            f"binarize={binary_threshold} < 0 on a sparse matrix would mark every absent "
            "entry as present (densifying it): use a threshold >= 0 or dense input"
        )
    if canonical and not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return CountMatrix(X, sparse_input=sparse_input)


def dense_as_csr(X: npt.NDArray[Any], binary_threshold: float | None = None) -> sp.csr_matrix:
    """A dense array's non-zeros (its indicator ``X > binary_threshold`` when given) as a
    CSR matrix of float64 values and int32 indices (int64 beyond 2^31 non-zeros), made
    block of rows by block: beside the input and the result, memory holds one block's
    temporaries, where converting the whole array went through a float64 copy and
    scipy's COO form (two int64 indices per non-zero)."""
    n_rows, n_columns = X.shape
    step = max(1, PREDICT_CHUNK_CELLS // max(1, n_columns))
    blocks = range(0, n_rows, step)

    def present(start: int) -> npt.NDArray[np.bool_]:
        block = X[start : start + step]
        return block > binary_threshold if binary_threshold is not None else block != 0

    row_counts = np.empty(n_rows, dtype=np.int64)
    for start in blocks:
        row_counts[start : start + step] = present(start).sum(axis=1)
    n_stored = int(row_counts.sum())
    index_type = np.int32 if max(n_stored, n_columns) < 2**31 else np.int64
    indptr = np.zeros(n_rows + 1, dtype=index_type)
    np.cumsum(row_counts, out=indptr[1:])
    indices = np.empty(n_stored, dtype=index_type)
    data = np.empty(n_stored, dtype=np.float64)
    for start in blocks:
        mask = present(start)
        span = slice(indptr[start], indptr[min(start + step, n_rows)])
        indices[span] = np.nonzero(mask)[1]
        data[span] = 1.0 if binary_threshold is not None else X[start : start + step][mask]
    return sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_columns))


class NaiveBayesClassifier(ThreadSafeModel, ClassifierMixin, BaseEstimator):
    """Base of the count, binary, continuous and mixed models: subclasses implement
    ``_joint_log_likelihood``."""

    @abstractmethod
    def _joint_log_likelihood(self, X: Any) -> FloatArray:
        """Unnormalised ``ln P(c, x)`` of each row, shape (n_samples, n_classes)."""

    def _threads(self) -> int:
        return n_threads(getattr(self, "n_jobs", None))

    def predict_joint_log_proba(self, X: Any) -> FloatArray:
        """Joint log-probability ``ln P(c, x)`` of each row and class.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes), columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        # a long dense array scored by blocks of rows: memory beyond the output is one
        # block's conversion, not one of the whole array
        return score_in_chunks(X, self._joint_log_likelihood, output_width=len(self.classes_))

    def predict_log_proba(self, X: Any) -> FloatArray:
        """Log posterior class probabilities, shape (n_samples, n_classes)."""
        check_is_fitted(self)
        threads = self._threads()

        def log_posterior(part: Any) -> FloatArray:
            joint = np.ascontiguousarray(self._joint_log_likelihood(part), dtype=np.float64)
            return _core.log_posterior(joint, threads)

        # chunk by chunk: beside the output, memory holds one chunk's scores
        return score_in_chunks(X, log_posterior, output_width=len(self.classes_))

    def predict_proba(self, X: Any) -> FloatArray:
        """Posterior class probabilities, shape (n_samples, n_classes); rows sum to 1."""
        log_proba = self.predict_log_proba(X)
        proba: FloatArray = np.exp(log_proba, out=log_proba)
        return proba

    def predict(self, X: Any) -> npt.NDArray[Any]:
        """Most probable class of each row (ties go to the first class in ``classes_``)."""
        joint = self.predict_joint_log_proba(X)
        predicted: npt.NDArray[Any] = self.classes_[np.argmax(joint, axis=1)]
        return predicted


def checked_table_size(n_classes: int, n_columns: int, *, copies: int = TABLE_COPIES) -> None:
    """A MemoryError before allocating a (classes x columns) table beyond memory, of
    which the fit holds ``copies`` copies at its peak."""
    check_table_size(n_classes, n_columns, copies=copies, columns="columns")
