"""Type stubs of the compiled core (src/python/). Arrays are numpy arrays; codes are
feature-major (F, S) int32 with -1 for a missing or unknown value."""

from collections.abc import Callable
from typing import Any, Literal, final

import numpy as np
import numpy.typing as npt

#: Every name the module defines (pyo3 fills the runtime list as functions register).
__all__ = [
    "CellNumbering",
    "ModelLock",
    "Vocabulary",
    "__version__",
    "absorb_group_rows",
    "add_counts",
    "aode_cell_keys",
    "aode_joint_log_likelihood",
    "aode_log_evidence",
    "aode_parent_terms",
    "aode_planned_bytes",
    "cell_row_sums",
    "cells_to_normalize",
    "check_aode_pair_tables",
    "commit_state",
    "count_categories",
    "count_pairs",
    "count_tokens",
    "encode_integers",
    "factorize_integers",
    "first_appearance",
    "fit_aode",
    "fit_aode_weights",
    "fit_binary_features",
    "fit_concentrations",
    "fit_dirichlet_prior",
    "fit_naive_bayes_weights",
    "fit_posterior_power",
    "fit_token_distributions",
    "fit_two_class_aode_weights",
    "group_cells_by_rows",
    "joint_log_likelihood",
    "leave_one_out_log_likelihood",
    "leave_one_out_rows",
    "log_posterior",
    "log_probability_table",
    "merge_cells_sharing_rows",
    "merge_pair_tables",
    "mutual_information",
    "number_cells",
    "posterior",
    "prior_mean",
    "restore_counts",
    "run_undos",
    "score_rows",
    "seen_cells",
    "touched_counts",
]

#: The package version, Cargo.toml's.
__version__: str

def factorize_integers(
    values: npt.NDArray[np.int64], missing: npt.NDArray[np.bool_] | None, n_jobs: int
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64], list[int]]: ...
def encode_integers(
    values: npt.NDArray[np.int64],
    missing: npt.NDArray[np.bool_] | None,
    categories: npt.NDArray[np.int64],
    offsets: list[int],
    n_jobs: int,
) -> npt.NDArray[np.int32]: ...
def count_categories(
    codes: npt.NDArray[np.int32],
    labels: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    offsets: list[int],
    n_classes: int,
    n_jobs: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def first_appearance(
    codes: npt.NDArray[np.int64], /, *, n_categories: int
) -> npt.NDArray[np.int64]: ...
def cells_to_normalize(values: npt.NDArray[np.object_], /) -> npt.NDArray[np.int64]: ...
def prior_mean(
    counts: npt.NDArray[np.float64], offsets: list[int], kind: str
) -> npt.NDArray[np.float64]: ...
def fit_concentrations(
    counts: npt.NDArray[np.float64],
    class_totals: npt.NDArray[np.float64],
    prior_mean: npt.NDArray[np.float64],
    offsets: list[int],
    min_count: float,
    min_concentration: float,
    max_concentration: float,
    n_jobs: int,
    *,
    start: npt.NDArray[np.float64] | None = None,
) -> tuple[
    npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.bool_]
]: ...
def log_probability_table(
    counts: npt.NDArray[np.float64],
    prior_mean: npt.NDArray[np.float64],
    concentration: npt.NDArray[np.float64],
    offsets: list[int],
    n_jobs: int,
) -> npt.NDArray[np.float64]: ...
def joint_log_likelihood(
    codes: npt.NDArray[np.int32],
    log_table: npt.NDArray[np.float64],
    class_log_prior: npt.NDArray[np.float64],
    feature_weights: npt.NDArray[np.float64] | None,
    offsets: list[int],
    n_jobs: int,
) -> npt.NDArray[np.float64]: ...
def fit_naive_bayes_weights(
    codes: npt.NDArray[np.int32],
    labels: npt.NDArray[np.int64],
    sample_weights: npt.NDArray[np.float64],
    log_table: npt.NDArray[np.float64],
    class_log_prior: npt.NDArray[np.float64],
    offsets: list[int],
    /,
    *,
    cell_weights: bool,
    start: npt.NDArray[np.float64],
    precision: npt.NDArray[np.float64],
    inverse_curvature: npt.NDArray[np.float64],
    gradient_tolerance: float,
    max_iter: int,
    memory: int,
    n_jobs: int,
    held_out: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None = None,
) -> tuple[npt.NDArray[np.float64], float, float, int, bool]:
    """``(weights [a, w, d], objective, largest gradient entry, iterations, converged)``:
    the weighted Naive Bayes fit, objective and L-BFGS in Rust (src/weight_fit.rs)."""

def fit_aode_weights(
    parent_terms: npt.NDArray[np.float64],
    cells: npt.NDArray[np.int64],
    column_starts: list[int],
    values: npt.NDArray[np.float64],
    labels: npt.NDArray[np.int64],
    sample_weights: npt.NDArray[np.float64],
    class_log_prior: npt.NDArray[np.float64],
    /,
    *,
    start: npt.NDArray[np.float64],
    precision: npt.NDArray[np.float64],
    inverse_curvature: npt.NDArray[np.float64],
    gradient_tolerance: float,
    max_iter: int,
    memory: int,
    n_jobs: int,
    row_features: npt.NDArray[np.float64] | None = None,
) -> tuple[npt.NDArray[np.float64], float, float, int, bool]:
    """``(weights [a, v, b, d], objective, largest gradient entry, iterations, converged)``:
    the weighted AODE fit over parent terms (S, P, C), row features (S, Q) with one weight
    per class each (None: none) and cells (K, S) (K = 0: super-parent weights only),
    objective and L-BFGS in Rust (src/weight_fit.rs)."""

def fit_two_class_aode_weights(
    parent_differences: npt.NDArray[np.float64],
    cells: npt.NDArray[np.int64],
    column_starts: list[int],
    cell_scales: npt.NDArray[np.float64],
    labels: npt.NDArray[np.int64],
    sample_weights: npt.NDArray[np.float64],
    class_log_prior: npt.NDArray[np.float64],
    /,
    *,
    start: npt.NDArray[np.float64],
    precision: npt.NDArray[np.float64],
    inverse_curvature: npt.NDArray[np.float64],
    gradient_tolerance: float,
    max_iter: int,
    memory: int,
    n_jobs: int,
    row_features: npt.NDArray[np.float64] | None = None,
) -> tuple[npt.NDArray[np.float64], float, float, int, bool]:
    """``(weights [a_0, a_1, v, beta, u], objective, largest gradient entry, iterations,
    converged)``: a two-class weighted AODE with one weight per row feature and per cell
    (the cell's change of the score difference over its scale), over the parent terms'
    class differences (S, P), objective and L-BFGS in Rust (src/two_class_weight_fit.rs)."""

def group_cells_by_rows(
    cells: npt.NDArray[np.int64],
    column_starts: list[int],
    /,
    *,
    n_jobs: int,
) -> dict[str, Any]:
    """The AODE cells (S, K), any strides, grouped by the rows that use them
    (src/shared_rows.rs): ``{"group", "first_cell", "cells" (K, S), "column_starts"}``."""

def merge_cells_sharing_rows(
    group: npt.NDArray[np.int64],
    first_cell: npt.NDArray[np.int64],
    values: npt.NDArray[np.float64],
    precision: npt.NDArray[np.float64],
    /,
) -> dict[str, npt.NDArray[np.float64]]:
    """The cells of each group merged into one weight (src/shared_rows.rs):
    ``{"values", "precision"}`` (groups, C) and ``"back"`` (cells, C)."""

def cell_row_sums(
    cells: npt.NDArray[np.int64],
    column_starts: list[int],
    row_values: npt.NDArray[np.float64],
    /,
    *,
    n_jobs: int,
) -> npt.NDArray[np.float64]:
    """``sum_i row_values[i, c]`` over the rows that use each AODE cell of ``cells`` (K, S)
    (src/weight_fit.rs): shape (cells, C)."""

def aode_cell_keys(
    codes: npt.NDArray[np.int32],
    parents: list[int],
    cardinality: list[int],
    /,
    *,
    n_jobs: int,
) -> npt.NDArray[np.int64]:
    """Which cell of each super-parent's tables each row of ``codes`` (F, S) uses, shape
    (P F, S) (src/cell_numbers.rs): column ``p F + j`` holds ``u K_j + v`` (``u`` at
    ``j = parents[p]``), -1 where either value is missing."""

def number_cells(
    keys: npt.NDArray[np.int64],
    /,
    *,
    n_jobs: int,
) -> dict[str, Any]:
    """The AODE cells numbered from their keys (K, S) (src/cell_numbers.rs):
    ``{"cells" (K, S), "column_starts", "keys", "first_row"}``."""

def seen_cells(
    keys: npt.NDArray[np.int64],
    numbering: CellNumbering,
    qualifies: npt.NDArray[np.bool_],
    values: npt.NDArray[np.float64],
    /,
    *,
    n_jobs: int,
) -> dict[str, npt.NDArray[Any]]:
    """Every use of a numbered AODE cell by a batch of rows (src/cell_numbers.rs): the
    keys (K, s) looked up in the ``numbering`` of each column's sorted cell keys, where
    the column's super-parent qualifies (``qualifies`` (s, P));
    ``{"row", "cell", "value" (uses, C)}`` column by column, rows in order, with the
    row's ``values[row, k]`` (s, K, C)."""

def posterior(
    codes: npt.NDArray[np.int32],
    log_table: npt.NDArray[np.float64],
    class_log_prior: npt.NDArray[np.float64],
    feature_weights: npt.NDArray[np.float64] | None,
    offsets: list[int],
    *,
    log: bool,
    n_jobs: int,
) -> npt.NDArray[np.float64]: ...
def log_posterior(joint: npt.NDArray[np.float64], n_jobs: int) -> npt.NDArray[np.float64]: ...
def mutual_information(
    counts: npt.NDArray[np.float64], offsets: list[int], n_jobs: int
) -> npt.NDArray[np.float64]: ...
def absorb_group_rows(
    counts: npt.NDArray[np.float64],
    groups: npt.NDArray[np.int64],
    labels: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    learning_rate: float,
) -> npt.NDArray[np.float64]: ...
def fit_dirichlet_prior(
    counts: npt.NDArray[np.float64],
    prior: npt.NDArray[np.float64],
    max_iter: int,
    tol: float,
    n_jobs: int,
) -> tuple[npt.NDArray[np.float64], float, int, bool]: ...
def count_pairs(
    codes: npt.NDArray[np.int32],
    labels: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    /,
    *,
    offsets: list[int],
    n_classes: int,
    capped: npt.NDArray[np.bool_],
    parents: npt.NDArray[np.bool_],
    n_jobs: int,
) -> dict[str, Any]:
    """Pair tables ``{"pairs", "indptr", "indices", "counts"}``; ``counts`` is uint32
    when every weight is a whole number and their sum fits, else float64 (every function
    that reads pair tables takes either)."""

def merge_pair_tables(
    old: dict[str, Any],
    batch: dict[str, Any],
    /,
    *,
    old_offsets: list[int],
    offsets: list[int],
    new_codes: list[list[int]],
    decay: float,
    n_jobs: int,
) -> dict[str, Any]: ...
def aode_planned_bytes(
    *,
    offsets: list[int],
    capped: npt.NDArray[np.bool_],
    parents: npt.NDArray[np.bool_],
    n_rows: int,
    n_classes: int,
    stored_cells: int,
    weights: npt.NDArray[np.float64] | None = None,
) -> dict[str, float]: ...
def fit_aode(
    class_count: npt.NDArray[np.float64],
    counts: npt.NDArray[np.float64],
    pair_tables: dict[str, Any],
    /,
    *,
    offsets: list[int],
    capped: npt.NDArray[np.bool_],
    parents: npt.NDArray[np.bool_],
    smoothing: str,
    parent_smoothing: str,
    min_count: float,
    concentration_bounds: tuple[float, float],
    class_log_prior: list[float],
    replace_class_prior: bool,
    n_jobs: int,
) -> dict[str, Any]: ...
def aode_log_evidence(
    counts: npt.NDArray[np.float64],
    pair_tables: dict[str, Any],
    /,
    *,
    offsets: list[int],
    capped: npt.NDArray[np.bool_],
    parents: npt.NDArray[np.bool_],
    smoothing: str,
    concentration: npt.NDArray[np.float64],
    pooled_concentration: npt.NDArray[np.float64],
    n_jobs: int,
) -> npt.NDArray[np.float64]:
    """Log evidence ``(C, n_parents, F)`` of every fitted AODE child at the concentrations
    ``fit_aode`` returned, from the same counts and pair tables."""

def aode_joint_log_likelihood(
    codes: npt.NDArray[np.int32],
    model: dict[str, Any],
    pair_tables: dict[str, Any],
    /,
    *,
    offsets: list[int],
    min_parent_count: float,
    n_jobs: int,
    pair_cells_checked: bool = False,
) -> npt.NDArray[np.float64]:
    """AODE joint log-likelihood ``(S, C)`` of feature-major codes ``(F, S)``; with
    ``pair_cells_checked`` the caller vouches that ``fit_aode`` or
    ``check_aode_pair_tables`` accepted the pair tables and that they have not changed
    since (only their shape is checked then, not every cell)."""

def check_aode_pair_tables(
    pair_tables: dict[str, Any], /, *, offsets: list[int], n_classes: int
) -> None:
    """Checks AODE pair tables against the layout and the number of classes, every cell
    included; ValueError naming what is wrong."""

def aode_parent_terms(
    codes: npt.NDArray[np.int32],
    model: dict[str, Any],
    pair_tables: dict[str, Any],
    /,
    *,
    offsets: list[int],
    min_parent_count: float,
    cells: bool,
    n_jobs: int,
    left_out: dict[str, Any] | None = None,
    cell_numbers: npt.NDArray[np.int64] | None = None,
    cell_column_starts: list[int] | None = None,
    cell_first_rows: npt.NDArray[np.int64] | None = None,
    in_sample_terms: bool = True,
    cell_numbering: CellNumbering | None = None,
    cell_weights: npt.NDArray[np.float64] | None = None,
    pair_cells_checked: bool = False,
) -> dict[str, npt.NDArray[Any]]:
    """``{"terms", "qualifies", "cells", "numbered_cells", "cell_sums"}``: every
    super-parent's term ``T_i`` ``(S, P, C)`` of feature-major codes ``(F, S)`` (the Naive
    Bayes score where ``i`` does not qualify), whether it qualifies ``(S, P)``, with
    ``cells`` the cells the terms add up ``(S, P, F, C)`` (``ln P(x_j | y, x_i)`` at column
    j, ``ln P(y, x_i) - ln pi_y`` at column i, zero elsewhere; else ``(0, P, F, C)``), with
    a numbering of the rows' cells (not with ``cells``: ``cell_numbers`` (P F, S), column
    ``p F + j``'s cell of each row or -1, whose cells are ``cell_column_starts[k]:
    cell_column_starts[k + 1]``, first used by the rows ``cell_first_rows``) each numbered
    cell's value ``(cells, C)``, evaluated once (zero where its parent does not qualify;
    else ``(0, C)``; without ``left_out`` and ``in_sample_terms`` the rows are not scored
    and the terms are zero), and with ``cell_numbering`` and ``cell_weights``
    (cells, C) (not with the others) each row's weighted cells summed ``(S, C)``:
    ``sum cell_weights[cell] * (cell / P)`` over the row's cells the numbering finds where
    the parent qualifies, in column order (else ``(0, C)``). With ``left_out`` (``{"labels", "weights", "counts",
    "class_count", "parent_smoothing", "replace_class_prior"}``: the codes are the training
    rows) the terms are each row's with its own counts left out of the tables
    (src/aode/leave_one_out.rs); ``qualifies`` and the cells stay in-sample."""

@final
class Vocabulary:
    """Grow-only value -> code maps, one per feature (codes by first appearance)."""

    def __new__(cls, n_features: int = 0) -> Vocabulary: ...
    def __copy__(self) -> Vocabulary: ...
    def __deepcopy__(self, _memo: Any, /) -> Vocabulary: ...
    @property
    def n_features(self) -> int: ...
    def lengths(self) -> list[int]: ...
    def length(self, feature: int) -> int: ...
    def mark(self) -> list[tuple[int, int]]: ...
    def truncate(self, mark: list[tuple[int, int]]) -> None: ...
    def encode_int_block(
        self,
        values: npt.NDArray[np.int64],
        missing: npt.NDArray[np.bool_] | None,
        *,
        grow: bool,
        n_jobs: int,
        out: npt.NDArray[np.int32],
    ) -> None: ...
    def encode_ints(
        self,
        feature: int,
        values: npt.NDArray[np.int64],
        missing: npt.NDArray[np.bool_] | None,
        *,
        grow: bool,
    ) -> npt.NDArray[np.int32]: ...
    def encode_utf8(
        self,
        feature: int,
        offsets: npt.NDArray[np.int32] | npt.NDArray[np.int64],
        data: npt.NDArray[np.uint8],
        validity: npt.NDArray[np.uint8] | None,
        bit_offset: int,
        *,
        grow: bool,
        name: str,
        positions: npt.NDArray[np.int64] | None = None,
    ) -> npt.NDArray[np.int32]: ...
    def encode_utf8_views(
        self,
        feature: int,
        views: npt.NDArray[np.uint8],
        buffers: list[npt.NDArray[np.uint8]],
        validity: npt.NDArray[np.uint8] | None,
        bit_offset: int,
        *,
        grow: bool,
        name: str,
        positions: npt.NDArray[np.int64] | None = None,
    ) -> npt.NDArray[np.int32]: ...
    def encode_arrow_stream(
        self, feature: int, capsule: Any, *, grow: bool, name: str
    ) -> npt.NDArray[np.int32] | None:
        """Codes an Arrow column read in Rust through the capsule an object's
        ``__arrow_c_stream__()`` returned; None (vocabulary unchanged) for a type the
        reader does not read."""
    def encode_objects(
        self,
        feature: int,
        values: npt.NDArray[np.object_],
        *,
        grow: bool,
        name: str,
    ) -> npt.NDArray[np.int32]: ...
    def encode_object_block(
        self,
        values: npt.NDArray[np.object_],
        *,
        names: list[str],
    ) -> npt.NDArray[np.int32]: ...
    def values(self, feature: int) -> list[object]: ...
    def int_values(self, feature: int) -> npt.NDArray[np.int64] | None: ...
    def has_objects(self, feature: int) -> bool: ...
    def sorted_order(self, feature: int) -> npt.NDArray[np.int64]: ...
    def copy(self) -> Vocabulary: ...
    def __getstate__(self) -> dict[str, object]: ...
    def __setstate__(self, state: dict[str, object]) -> None: ...

def add_counts(
    tables: list[npt.NDArray[np.float64]],
    class_totals: npt.NDArray[np.float64],
    codes: npt.NDArray[np.int32],
    labels: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    *,
    decay: float,
    n_jobs: int,
) -> None: ...
def touched_counts(
    tables: list[npt.NDArray[np.float64]],
    codes: npt.NDArray[np.int32],
    labels: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]: ...
def restore_counts(
    tables: list[npt.NDArray[np.float64]],
    codes: npt.NDArray[np.int32],
    labels: npt.NDArray[np.int64],
    saved: npt.NDArray[np.float64],
) -> None: ...

# text and binary models (src/python/text.rs)
def count_tokens(
    indptr: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int32],
    data: npt.NDArray[np.float64],
    labels: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    /,
    *,
    n_rows: int,
    n_columns: int,
    by_columns: bool,
    n_classes: int,
    binarize: float | None,
    n_jobs: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(N_c, n_{c,v})`` of a CSR (or, ``by_columns``, CSC) matrix; ``binarize=t`` counts
    ``1[x > t]``."""

def score_rows(
    indptr: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int32],
    data: npt.NDArray[np.float64],
    table: npt.NDArray[np.float64],
    bias: npt.NDArray[np.float64],
    /,
    *,
    n_columns: int,
    binarize: float | None,
    n_jobs: int,
) -> npt.NDArray[np.float64]:
    """``bias + X @ table`` of a CSR matrix, ``table`` (V, C); -inf entries skipped."""

def fit_token_distributions(
    counts: npt.NDArray[np.float64],
    class_rows: npt.NDArray[np.float64],
    /,
    *,
    prior_mean: Literal["uniform", "marginal"],
    alpha: float | None,
    min_count: float,
    concentration_bounds: tuple[float, float],
    complement: bool,
    normalise: bool,
    n_jobs: int,
) -> dict[str, npt.NDArray[Any]]:
    """Multinomial (or Complement) NB from (C, V) counts; ``alpha=None``: Type-II ML."""

def fit_binary_features(
    present: npt.NDArray[np.float64],
    class_rows: npt.NDArray[np.float64],
    /,
    *,
    prior_mean: Literal["uniform", "marginal"],
    alpha: float | None,
    min_count: float,
    concentration_bounds: tuple[float, float],
    n_jobs: int,
) -> dict[str, npt.NDArray[Any]]:
    """Bernoulli NB from (C, F) per-class document frequencies."""

def leave_one_out_rows(
    indptr: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int32],
    data: npt.NDArray[np.float64],
    labels: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    counts: npt.NDArray[np.float64],
    concentration: npt.NDArray[np.float64],
    log_probability: npt.NDArray[np.float64],
    /,
    *,
    pooled_mean: bool,
    class_counts: npt.NDArray[np.float64] | None,
    class_log_prior: npt.NDArray[np.float64],
    n_jobs: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The training rows as Multinomial NB's posterior power reads them (log_probability
    (V, C)): each row's leave-one-out joint log-likelihoods shifted by their maximum
    (rows, C), its class and its weight (rows that do not enter the likelihood left out)."""

def fit_posterior_power(
    shifted_joint: npt.NDArray[np.float64],
    classes: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    /,
    *,
    n_jobs: int,
) -> dict[str, Any]:
    """The posterior power maximising the leave-one-out likelihood of the rows of
    leave_one_out_rows: power, log_loss, n_iter."""

def leave_one_out_log_likelihood(
    indptr: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int32],
    data: npt.NDArray[np.float64],
    labels: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    counts: npt.NDArray[np.float64],
    concentration: npt.NDArray[np.float64],
    log_probability: npt.NDArray[np.float64],
    /,
    *,
    pooled_mean: bool,
    n_jobs: int,
) -> npt.NDArray[np.float64]:
    """Leave-one-out class log-likelihoods (S, C) of the training rows
    (log_probability (V, C))."""

@final
class CellNumbering:
    """The AODE cells numbered from their keys, ready for look-ups (src/cell_numbers.rs
    ``CellIndex``): every column's sorted keys one after another, column ``k``'s from
    ``column_starts[k]``. Built once per fitted model; not picklable."""

    def __new__(
        cls, cell_keys: npt.NDArray[np.int64], column_starts: list[int], /
    ) -> CellNumbering: ...
    @property
    def n_columns(self) -> int: ...
    @property
    def n_cells(self) -> int: ...
    @property
    def column_starts(self) -> list[int]: ...
    def cells(
        self, keys: npt.NDArray[np.int64], columns: list[int], /, *, n_jobs: int
    ) -> npt.NDArray[np.int64]:
        """The cell of every row in each of ``columns``, (s, G): ``keys`` (K, s) holds
        every column's key of every row; -1 for a negative key or one that is no cell."""

@final
class ModelLock:
    """A model's readers-writer lock: ``kept = lock.holds()``, then ``lock.hold(...)``
    inside a ``try`` whose ``finally`` calls ``lock.release_to(kept)`` (no interrupt
    leaves it held)."""

    def __new__(cls) -> ModelLock: ...
    def hold(self, *, writing: bool) -> None:
        """Takes the lock for writing or for reading, answering Ctrl-C while it waits."""
    def holds(self) -> int:
        """How many times the calling thread holds the lock."""
    def release_to(self, kept: int, /) -> None:
        """Gives back the calling thread's holds beyond its first ``kept``."""
    def held(self) -> bool:
        """Whether the calling thread holds the lock."""
    def held_for_writing(self) -> bool:
        """Whether the calling thread holds the lock for writing."""
    def maybe_written(self) -> bool:
        """Whether some thread may hold the lock for writing (never waits)."""

def commit_state(
    target: dict[str, Any],
    state: dict[str, Any],
    keep: frozenset[str],
    undos: list[Callable[[], None]],
    /,
) -> None:
    """Installs an update's ``state`` in ``target`` (dropping entries in neither
    ``state`` nor ``keep``) and empties ``undos``, in one step."""

def run_undos(undos: list[Callable[[], None]], /) -> None:
    """Calls the undos in reverse order, each to its end (again when Ctrl-C cuts one
    short), then raises the interrupt or the first error one raised."""
