"""Multinomial and Complement Naive Bayes on token counts, with fixed or empirical-Bayes
(Type-II ML) smoothing; the inputs stay sparse."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from numbers import Real
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from sklearn.exceptions import ConvergenceWarning

from . import _core
from ._base import cache_while_reading, concentration_interval
from ._encoding import TABLE_COPIES
from ._params import (
    N_JOBS,
    ClassProbabilities,
    ConcentrationBounds,
    StrictInterval,
    StrOptions,
    fit_context,
)
from ._text import (
    Batch,
    CountMatrix,
    FloatArray,
    NaiveBayesClassifier,
    check_counts,
    check_no_overflow,
    checked_table_size,
    empirical_class_log_prior,
    training_batch,
)
from ._warnings import warn


@dataclass(frozen=True)
class LeaveOneOutRows:
    """Training rows as the posterior power reads them (``_core.leave_one_out_rows``):
    each row's leave-one-out joint log-likelihoods shifted by their maximum (rows, C),
    its class index and its weight. The leave-one-out likelihood is a sum over rows, so
    the rows of several batches or partitions are concatenated.

    Past a size they are a sample (:meth:`sampled`): priority sampling (Duffield, Lund
    and Thorup 2007), each row with a priority (its weight over a uniform draw in
    (0, 1], drawn once) and the rows of the highest priorities kept; the largest
    priority dropped so far is ``threshold``, and a kept row stands for
    ``max(weight, threshold)`` of weight (:meth:`estimate_weights`), which makes any
    weighted sum over the kept rows an unbiased estimate of the sum over all the rows."""

    shifted_joint: FloatArray
    classes: npt.NDArray[np.int64]
    weights: FloatArray
    priorities: FloatArray | None = None
    threshold: float = 0.0
    #: Rows of the stream so far, those dropped from the sample included (0: the rows
    #: held, as in a model pickled before it was kept): what seeds a batch's draws.
    rows_seen: int = 0

    def _seen(self) -> int:
        return max(self.rows_seen, int(self.classes.shape[0]))

    def _prioritised(self, seed: int) -> FloatArray:
        if self.priorities is not None:
            return self.priorities
        draws = 1.0 - np.random.default_rng(seed).random(self.classes.shape[0])  # (0, 1]
        priorities: FloatArray = self.weights / draws
        return priorities

    def followed_by(self, other: LeaveOneOutRows) -> LeaveOneOutRows:
        """These rows, then ``other``'s (which have never been sampled). ``other``'s
        draws are seeded by the rows of the stream up to its last: a number no other
        batch of the stream has, so that each batch draws afresh (seeded by the rows
        kept, every batch of one size once the sample was full drew the same numbers)."""
        seen = self._seen() + other.classes.shape[0]
        priorities = None
        if self.priorities is not None:
            priorities = np.concatenate([self.priorities, other._prioritised(seen)])
        return LeaveOneOutRows(
            np.concatenate([self.shifted_joint, other.shifted_joint]),
            np.concatenate([self.classes, other.classes]),
            np.concatenate([self.weights, other.weights]),
            priorities,
            self.threshold,
            seen,
        )

    @staticmethod
    def joined(parts: list[LeaveOneOutRows]) -> LeaveOneOutRows:
        """``parts[0].followed_by(parts[1]).followed_by(parts[2])...`` with one copy of
        the rows: each ``followed_by`` copies every row joined so far, which made joining
        the partitions of a Dask fit quadratic in their number (1,000 partitions of 2,000
        rows: 6 s against 1.7 s for one). The same rows, seed count and threshold."""
        if len(parts) == 1 or any(part.priorities is not None for part in parts):
            # (sampled rows: each part's draws are seeded by its place in the stream)
            return functools.reduce(LeaveOneOutRows.followed_by, parts)
        first = parts[0]
        seen = first._seen() + sum(int(part.classes.shape[0]) for part in parts[1:])
        return LeaveOneOutRows(
            np.concatenate([part.shifted_joint for part in parts]),
            np.concatenate([part.classes for part in parts]),
            np.concatenate([part.weights for part in parts]),
            None,
            first.threshold,
            seen,
        )

    def sampled(self, most: int) -> LeaveOneOutRows:
        """These rows, or, beyond ``most``, the ``most`` of the highest priorities (in
        their order), the others' largest priority joining ``threshold``. Priorities
        are seeded by the number of rows seen, so a stream is sampled the same way every
        time."""
        n_rows = self.classes.shape[0]
        if n_rows <= most:
            return self
        priorities = self._prioritised(self._seen())
        # the largest priority dropped: the (most + 1)-th largest, found in O(rows); rows
        # above it are kept, and of the rows equal to it the first ones, as a stable sort
        # of the priorities (highest first) would keep them
        dropped = float(np.partition(priorities, n_rows - most - 1)[n_rows - most - 1])
        above = np.flatnonzero(priorities > dropped)
        ties = np.flatnonzero(priorities == dropped)[: most - above.shape[0]]
        kept = np.sort(np.concatenate([above, ties]))
        return LeaveOneOutRows(
            self.shifted_joint[kept],
            self.classes[kept],
            self.weights[kept],
            priorities[kept],
            max(self.threshold, dropped),
            self._seen(),
        )

    def estimate_weights(self) -> FloatArray:
        """The weight each row stands for: its own until a row was dropped."""
        weights: FloatArray = np.maximum(self.weights, self.threshold)
        return weights


#: Rows whose leave-one-out scores a model keeps for the posterior power of its later
#: ``partial_fit`` calls (C + 2 numbers each): beyond it, a priority sample of them
#: (``LeaveOneOutRows.sampled``), so that a long stream costs each call O(this + batch)
#: and memory O(this), where keeping every row made a stream's total time grow with the
#: square of its rows.
KEPT_POWER_ROWS = 100_000


#: smoothing -> prior mean of the Dirichlet prior.
SMOOTHERS: dict[str, Literal["uniform", "marginal"]] = {
    "heb-m": "marginal",
    "heb-u": "uniform",
    "laplace": "uniform",
    "lidstone": "uniform",
}
EMPIRICAL_BAYES = {"heb-m", "heb-u"}


class DiscreteNB(NaiveBayesClassifier):
    """What the count models share: ``fit`` = count + solve, ``partial_fit`` = count the
    batch, add it to the stored counts, solve again.

    The counts (``class_count_``, ``feature_count_``) are sums over rows, so counts of
    disjoint batches (or of partitions on several machines) add up; ``_solve`` turns the
    stored counts into the model.
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "smoothing": [StrOptions(set(SMOOTHERS))],
        "alpha": [StrictInterval(Real, 0, None, closed="neither")],
        "min_count": [StrictInterval(Real, 0, None, closed="left")],
        "concentration_bounds": [ConcentrationBounds()],
        "fit_prior": ["boolean"],
        "class_prior": [ClassProbabilities(), None],
        "n_jobs": N_JOBS,
    }

    smoothing: str
    alpha: float
    min_count: float
    concentration_bounds: tuple[float, float]
    fit_prior: bool
    class_prior: Any
    n_jobs: int | None

    #: The threshold the core binarises values with (None: counts).
    def _core_threshold(self, matrix: CountMatrix) -> float | None:
        return None

    def _check_X(self, X: Any, *, reset: bool) -> CountMatrix:
        return check_counts(self, X, reset=reset, non_negative=True)

    #: How many (classes x columns) float64 tables the fit holds at its peak.
    _TABLE_COPIES = TABLE_COPIES

    def _count(self, matrix: CountMatrix, batch: Batch) -> tuple[FloatArray, FloatArray]:
        checked_table_size(batch.classes.shape[0], matrix.n_columns, copies=self._TABLE_COPIES)
        return _core.count_tokens(
            matrix.indptr,
            matrix.indices,
            matrix.data,
            batch.labels,
            batch.weights,
            n_rows=matrix.n_rows,
            n_columns=matrix.n_columns,
            by_columns=matrix.by_columns,
            n_classes=batch.classes.shape[0],
            binarize=self._core_threshold(matrix),
            n_jobs=self._threads(),
        )

    @fit_context
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> DiscreteNB:
        """Counts the training data and smooths every class's distribution.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative counts (floats allowed: tf-idf or other weights count as
            fractional counts). CSR and CSC matrices are read as they are.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        matrix = self._check_X(X, reset=True)
        batch = training_batch(
            y, matrix.n_rows, sample_weight, partial=False, class_prior=self.class_prior
        )
        class_count, feature_count = self._count(matrix, batch)
        self.classes_ = batch.classes
        self.class_count_ = class_count
        self.feature_count_ = feature_count
        self._solve()
        self._fit_rows(matrix, batch, after=False)
        return self

    @fit_context
    def partial_fit(
        self, X: Any, y: Any, classes: Any = None, sample_weight: Any = None
    ) -> DiscreteNB:
        """Adds a batch of rows to the counts and smooths again.

        Any sequence of calls gives the model one ``fit`` on the concatenated batches
        gives (a batch whose weights sum to zero is refused, as scikit-learn refuses it).
        The number of features is fixed by the first call (a growing vocabulary is
        the vectorizer's business, as in scikit-learn).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None
            All the classes of the stream; needed on the first call unless that batch
            shows every class.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        first_call = not hasattr(self, "feature_count_")
        if not first_call:  # fit_context checks only the first call; set_params may not
            self._validate_params()
        matrix = self._check_X(X, reset=first_call)
        fitted = None if first_call else self.classes_
        batch = training_batch(
            y,
            matrix.n_rows,
            sample_weight,
            partial=True,
            classes=classes,
            fitted_classes=fitted,
            class_prior=self.class_prior,
        )
        class_count, feature_count = self._count(matrix, batch)
        if not first_call:
            class_count = class_count + self.class_count_
            feature_count = feature_count + self.feature_count_
        self.classes_ = batch.classes
        self.class_count_ = class_count
        self.feature_count_ = feature_count
        self._solve()
        self._fit_rows(matrix, batch, after=not first_call)
        return self

    def _fit_rows(self, matrix: CountMatrix, batch: Batch, *, after: bool) -> None:
        """What a fit learns from the rows beyond their counts (nothing here); ``after``:
        the batch follows earlier ones (``partial_fit``)."""

    def _alpha(self) -> float | None:
        """The fixed pseudo-count per cell, or None for Type-II ML."""
        if self.smoothing in EMPIRICAL_BAYES:
            return None
        return 1.0 if self.smoothing == "laplace" else float(self.alpha)

    def _warn_unconverged(self, converged: npt.NDArray[np.bool_]) -> None:
        if not converged.all():
            warn(
                f"the concentration solver did not converge for {(~converged).sum()} distributions",
                ConvergenceWarning,
            )

    def _solve(self) -> None:
        """The model from ``class_count_`` and ``feature_count_``."""
        raise NotImplementedError

    def _fit_token_distributions(self, *, complement: bool, normalise: bool) -> dict[str, Any]:
        """Solves the token distributions of every class (or of every class's complement)
        in the core and keeps what Multinomial and Complement NB share: the prior mean,
        the concentrations and their diagnostics, and the class log prior. Returns the
        core's result for the caller's table."""
        fit: dict[str, Any] = _core.fit_token_distributions(
            self.feature_count_,
            self.class_count_,
            prior_mean=SMOOTHERS[self.smoothing],
            alpha=self._alpha(),
            min_count=float(self.min_count),
            concentration_bounds=concentration_interval(self.concentration_bounds),
            complement=complement,
            normalise=normalise,
            n_jobs=self._threads(),
        )
        self._warn_unconverged(fit["converged"])
        self.prior_mean_ = fit["prior_mean"]
        self.concentration_ = fit["concentration"][:, 0]
        self.log_evidence_ = fit["log_evidence"][:, 0]
        self.n_iter_ = fit["n_iter"][:, 0]
        self.converged_ = fit["converged"][:, 0]
        self.class_log_prior_ = empirical_class_log_prior(
            self.class_count_, fit_prior=self.fit_prior, class_prior=self.class_prior
        )
        return fit

    def _score(self, X: Any, table: FloatArray, bias: FloatArray) -> FloatArray:
        matrix = self._check_X(X, reset=False).rows()
        joint: FloatArray = _core.score_rows(
            matrix.indptr,
            matrix.indices,
            matrix.data,
            table,
            bias,
            n_columns=matrix.n_columns,
            binarize=self._core_threshold(matrix),
            n_jobs=self._threads(),
        )
        return joint

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        # as scikit-learn's discrete Naive Bayes models: the generic accuracy check's
        # blobs are not counts
        tags.classifier_tags.poor_score = True
        return tags


_PARAMETERS_DOC = """
    Parameters
    ----------
    smoothing : {"heb-m", "heb-u", "laplace", "lidstone"}, default="heb-m"
        ``"heb-m"``: prior mean the pooled token distribution of all classes, concentration
        by Type-II ML per class. ``"heb-u"``: uniform mean, Type-II ML. ``"laplace"``: add
        one to every count (scikit-learn's ``alpha=1``). ``"lidstone"``: add ``alpha``.
    alpha : float, default=1.0
        Pseudo-count per token of ``"lidstone"``.
    min_count : float, default=10
        Classes with fewer (weighted) rows fall back to m = n_features (empirical Bayes);
        for ``ComplementNB``, whose distributions are those of the complements, the
        complements with fewer rows (all the rows of the other classes).
    concentration_bounds : (float, float), default=(1e-2, 1e4)
        The interval the Type-II ML concentration is clamped to.
    fit_prior : bool, default=True
        Learn the class prior as scikit-learn does (class frequency ``N_c / S``); if
        False, use a uniform prior.
    class_prior : array-like of shape (n_classes,), default=None
        Prior probabilities of the classes; overrides ``fit_prior``.
    n_jobs : int, default=None
        Threads for counting, solving and scoring (None: 1, -1: all cores). Results do
        not depend on it.
"""


class MultinomialNB(DiscreteNB):
    """Multinomial Naive Bayes for token counts, with smoothing and calibration learned
    from the data.

    Each class has one categorical distribution over the vocabulary, smoothed toward a
    prior mean ``mu`` with a concentration ``m_c``::

        theta[c, v] = (n[c, v] + m[c] * mu[v]) / (n[c] + m[c])

    The empirical-Bayes smoothers choose ``m[c]`` by maximising the
    Dirichlet-multinomial evidence of the class's summed counts (the same solver as
    :class:`hebnb.CategoricalNB`; O(non-zero counts) per step), so there is no ``alpha``
    to tune. ``"laplace"`` and ``"lidstone"`` give scikit-learn's ``MultinomialNB``.

    The class posterior raises the joint probability to a power ``tau``
    (``posterior_power_``; temperature scaling with temperature ``1 / tau``)::

        ln P(c | x) = tau * (ln pi[c] + sum_v x[v] ln theta[c, v]) - ln Z(x)

    which leaves ``predict`` unchanged and calibrates the probabilities. With the
    empirical-Bayes smoothers ``tau`` maximises the leave-one-out conditional
    log-likelihood of the training labels, in closed form from the counts (one
    observation of each row removed from its class's counts, the pooled mean and the
    class prior; O(non-zeros) for ``"heb-u"``, O(non-zeros x classes) for ``"heb-m"``).
    Naive Bayes treats the tokens of a document as independent draws; they are not, and
    ``tau < 1`` undoes the overconfidence that follows. ``posterior_power=1.0`` gives the
    untempered model.
    {parameters}
    posterior_power : "auto", "loo" or float > 0, default="auto"
        ``"loo"``: fitted by leave-one-out as above; a number: that power; ``"auto"``:
        ``"loo"`` for ``"heb-m"``/``"heb-u"`` and 1 for ``"laplace"``/``"lidstone"`` (so
        that they equal scikit-learn). ``partial_fit`` fits it on every row seen, each
        row scored when its batch arrived (left out of all the counts up to its batch);
        the fit keeps those scores (``n_classes + 2`` numbers per row) for the next
        batch. ``hebnb.dask.fit`` fits it as a local ``fit`` does.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_count_ : ndarray of shape (n_classes,)
        Weighted number of training rows per class.
    feature_count_ : ndarray of shape (n_classes, n_features)
        Weighted token counts per class.
    class_log_prior_ : ndarray of shape (n_classes,)
    feature_log_prob_ : ndarray of shape (n_classes, n_features)
        ``ln theta[c, v]`` (``-inf`` for a token no class counted under ``"heb-m"``: such
        tokens are skipped at predict time).
    prior_mean_ : ndarray of shape (n_features,)
    concentration_ : ndarray of shape (n_classes,)
        The concentration m of each class's distribution.
    log_evidence_ : ndarray of shape (n_classes,)
        The Dirichlet-multinomial log evidence at ``concentration_`` (NaN for the fixed
        smoothers).
    posterior_power_ : float
        The power ``tau`` of the joint probability in the class posterior
        (``predict_joint_log_proba`` returns the tempered ``tau * ln P(c, x)``).
    leave_one_out_log_loss_ : float
        The leave-one-out log-loss of the training rows at ``posterior_power_`` (NaN
        when the power is fixed).
    n_iter_ : ndarray of shape (n_classes,)
    converged_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when X is a DataFrame with string column names.

    Notes
    -----
    Values may be fractional (tf-idf, weights): they count as fractional counts. Negative,
    NaN or infinite values are errors. Explicit zeros in a sparse matrix count nothing;
    duplicate (row, column) entries add up, as scipy defines them; unsorted indices are
    fine. An all-zero row counts toward the class prior only.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.sparse import csr_matrix
    >>> from hebnb import MultinomialNB
    >>> rng = np.random.default_rng(0)
    >>> X = csr_matrix(rng.poisson(0.3, size=(100, 50)))
    >>> y = rng.integers(0, 2, size=100)
    >>> MultinomialNB().fit(X, y).predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **DiscreteNB._parameter_constraints,
        "posterior_power": [
            StrOptions({"auto", "loo"}),
            StrictInterval(Real, 0, None, closed="neither"),
        ],
    }

    posterior_power: Any

    def __init__(
        self,
        *,
        smoothing: str = "heb-u",
        alpha: float = 1.0,
        min_count: float = 10,
        concentration_bounds: tuple[float, float] = (1e-2, 1e4),
        posterior_power: Any = "auto",
        fit_prior: bool = True,
        class_prior: Any = None,
        n_jobs: int | None = None,
    ) -> None:
        self.smoothing = smoothing
        self.alpha = alpha
        self.min_count = min_count
        self.concentration_bounds = concentration_bounds
        self.posterior_power = posterior_power
        self.fit_prior = fit_prior
        self.class_prior = class_prior
        self.n_jobs = n_jobs

    def _power_needs_rows(self) -> bool:
        """Whether the posterior power is fitted from the rows (not only the counts)."""
        return self._fixed_power() is None

    def _fixed_power(self) -> float | None:
        """The posterior power when it is fixed; None when leave-one-out fits it."""
        power = self.posterior_power
        if power == "loo" or (power == "auto" and self.smoothing in EMPIRICAL_BAYES):
            return None
        return 1.0 if power == "auto" else float(power)

    def _set_power(self, power: float, log_loss: float) -> None:
        self.posterior_power_ = power
        self.leave_one_out_log_loss_ = log_loss

    def _leave_one_out_rows(self, matrix: CountMatrix, batch: Batch) -> LeaveOneOutRows:
        """The batch's rows as the posterior power reads them: each row's leave-one-out
        joint log-likelihoods under the current counts (the row left out of them), shifted
        by their maximum, with its class index and weight (rows of weight 0, and rows
        whose class the leave-one-out prior excludes, are left out)."""
        # the core sums a row's duplicate entries itself (a row leaves its whole count)
        rows = matrix.rows()
        frequencies = self.class_prior is None and self.fit_prior
        joint, classes, weights = _core.leave_one_out_rows(
            rows.indptr,
            rows.indices,
            rows.data,
            batch.labels,
            batch.weights,
            self.feature_count_,
            self.concentration_,
            self._log_probability_by_token,
            pooled_mean=SMOOTHERS[self.smoothing] == "marginal",
            class_counts=self.class_count_ if frequencies else None,
            class_log_prior=self.class_log_prior_,
            n_jobs=self._threads(),
        )
        return LeaveOneOutRows(joint, classes, weights)

    def _fit_power(self, rows: LeaveOneOutRows) -> None:
        """The power that maximises the leave-one-out likelihood of ``rows``; they are
        kept (a sample of :data:`KEPT_POWER_ROWS` of them beyond that), so that
        ``partial_fit`` adds the next batch's rows to them. Until a row has been dropped
        the likelihood is that of every row; from then on, the sample's estimate."""
        self._keep_power_rows(rows)
        self._fit_kept_power()

    def _keep_power_rows(self, rows: LeaveOneOutRows) -> None:
        """Keeps ``rows`` (or their sample) for the next batch, and those the power is to
        be fitted on (:meth:`_fit_power`), which :meth:`_fit_kept_power` fits."""
        kept = rows.sampled(KEPT_POWER_ROWS)
        self._power_rows = kept
        self._power_rows_to_fit = rows if rows.threshold == 0.0 else kept
        for name in self._POWER_ATTRIBUTES:
            self.__dict__.pop(name, None)

    def _fit_kept_power(self) -> None:
        """Fits the power on the rows :meth:`_keep_power_rows` left for it."""
        scored = self.__dict__["_power_rows_to_fit"]
        fit = _core.fit_posterior_power(
            scored.shifted_joint,
            scored.classes,
            scored.estimate_weights(),
            n_jobs=self._threads(),
        )
        self._set_power(float(fit["power"]), float(fit["log_loss"]))
        del self._power_rows_to_fit

    #: What ``partial_fit`` leaves to be fitted when it is first read: the power of each
    #: batch refitted on every row seen costs O(rows kept x classes), which a stream of
    #: small batches paid at every call (a quadratic stream, then 60-350 ms a call).
    _POWER_ATTRIBUTES = ("posterior_power_", "leave_one_out_log_loss_")

    def __getattr__(self, name: str) -> Any:
        # only called when ordinary lookup fails: the power a partial_fit left unfitted
        if name in self._POWER_ATTRIBUTES and "_power_rows_to_fit" in self.__dict__:
            return cache_while_reading(self, functools.partial(self._fitted_power, name))
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _fitted_power(self, name: str) -> Any:
        """``name`` of the fitted power (called holding the model's cache lock: another
        reader may have fitted it meanwhile)."""
        if "_power_rows_to_fit" in self.__dict__:
            self._fit_kept_power()
        return self.__dict__[name]

    def _fit_rows(self, matrix: CountMatrix, batch: Batch, *, after: bool) -> None:
        """The leave-one-out posterior power of the rows seen (see the class notes):
        ``after=True`` (``partial_fit``) adds the batch's rows to those of the earlier
        batches."""
        if self._fixed_power() is not None:
            self.__dict__.pop("_power_rows", None)
            self.__dict__.pop("_power_rows_to_fit", None)
            return
        rows = self._leave_one_out_rows(matrix, batch)
        earlier = self.__dict__.get("_power_rows") if after else None
        if earlier is not None:
            rows = earlier.followed_by(rows)
        elif after:
            warn(
                "the posterior power is fitted by leave-one-out on the rows from this batch "
                "on: the rows of earlier batches were not kept while it was fixed (a "
                "posterior_power or smoothing changed by set_params after partial_fit). "
                "Call fit to fit it on every row",
                UserWarning,
            )
        if after:
            self._keep_power_rows(rows)  # fitted when first read
        else:
            self._fit_power(rows)

    def _solve(self) -> None:
        fit = self._fit_token_distributions(complement=False, normalise=False)
        self.feature_log_prob_ = fit["log_probability"]
        # solving from counts alone cannot leave rows out: until the rows are read
        # (_fit_rows, or hebnb.dask's second pass), a power to be fitted is 1
        self._log_probability_by_token = np.ascontiguousarray(self.feature_log_prob_.T)
        fixed = self._fixed_power()
        self._set_power(1.0 if fixed is None else fixed, float("nan"))

    def _joint_log_likelihood(self, X: Any) -> FloatArray:
        joint = self._score(X, self._log_probability_by_token, self.class_log_prior_)
        # every token has a probability above 0 under every class, so only an overflow
        # (counts near the float64 maximum) makes a row -inf for every class
        check_no_overflow(joint, "the token counts make the scores")
        if self.posterior_power_ != 1.0:
            # the tempered joint, scaled in place: the (rows, classes) output, not the
            # (vocabulary, classes) table, is multiplied
            with np.errstate(over="ignore"):  # an overflow is refused below
                joint *= self.posterior_power_
            check_no_overflow(joint, f"posterior_power={self.posterior_power_:g} makes the scores")
        return joint


class ComplementNB(DiscreteNB):
    """Complement Naive Bayes (Rennie et al. 2003, scikit-learn's definition) for
    imbalanced text, with smoothing learned from the data.

    Each class is scored by the distribution of the tokens of the *other* classes::

        theta[~c, v] = (n[~c, v] + m[~c] * mu[v]) / (n[~c] + m[~c]),  n[~c, v] = sum over c' != c
        weight[c, v] = -ln theta[~c, v]      (norm=False)
                     = ln theta[~c, v] / sum_v ln theta[~c, v]      (norm=True)
        score[c] = sum_v x[v] * weight[c, v]

    with the same smoothers as :class:`MultinomialNB` (``"laplace"``/``"lidstone"`` give
    scikit-learn's ``ComplementNB``). As there, the class prior does not enter the score
    (it is fitted and reported in ``class_log_prior_``).
    {parameters}
    norm : bool, default=False
        Normalise the weights (Rennie et al.'s second normalisation).

    Attributes
    ----------
    classes_, class_count_, feature_count_, class_log_prior_ : as :class:`MultinomialNB`
    feature_all_ : ndarray of shape (n_features,)
        Token counts summed over the classes.
    feature_log_prob_ : ndarray of shape (n_classes, n_features)
        The weights of each class (scikit-learn's name).
    prior_mean_ : ndarray of shape (n_features,)
    concentration_, log_evidence_, n_iter_, converged_ : ndarray of shape (n_classes,)
        Of each complement distribution.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from hebnb import ComplementNB
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(0.3, size=(100, 50))
    >>> y = rng.integers(0, 3, size=100)
    >>> ComplementNB().fit(X, y).predict(X[:3]).shape
    (3,)
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **DiscreteNB._parameter_constraints,
        "norm": ["boolean"],
    }

    def __init__(
        self,
        *,
        smoothing: str = "heb-m",
        alpha: float = 1.0,
        min_count: float = 10,
        concentration_bounds: tuple[float, float] = (1e-2, 1e4),
        fit_prior: bool = True,
        class_prior: Any = None,
        norm: bool = False,
        n_jobs: int | None = None,
    ) -> None:
        self.smoothing = smoothing
        self.alpha = alpha
        self.min_count = min_count
        self.concentration_bounds = concentration_bounds
        self.fit_prior = fit_prior
        self.class_prior = class_prior
        self.norm = norm
        self.n_jobs = n_jobs

    @property
    def feature_all_(self) -> FloatArray:
        """Token counts summed over the classes, shape (n_features,)."""
        total: FloatArray = self.feature_count_.sum(axis=0)
        return total

    def _solve(self) -> None:
        fit = self._fit_token_distributions(complement=True, normalise=bool(self.norm))
        self.feature_log_prob_ = fit["weights"]
        self._score_table = np.ascontiguousarray(self.feature_log_prob_.T)

    def _joint_log_likelihood(self, X: Any) -> FloatArray:
        return self._score(X, self._score_table, np.zeros(self.classes_.shape[0]))


MultinomialNB.__doc__ = (MultinomialNB.__doc__ or "").replace(
    "{parameters}", _PARAMETERS_DOC.replace('default="heb-m"', 'default="heb-u"').rstrip() + "\n"
)
ComplementNB.__doc__ = (ComplementNB.__doc__ or "").replace(
    "{parameters}", _PARAMETERS_DOC.rstrip() + "\n"
)
