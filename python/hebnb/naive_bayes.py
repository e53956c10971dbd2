"""Categorical Naive Bayes with fixed or empirical-Bayes (Type-II ML) smoothing."""

from __future__ import annotations

from numbers import Real
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt
import pandas as pd
from numpy.typing import ArrayLike
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from . import _core, posterior_smoothing, weighting
from ._base import (
    SHARED_CONSTRAINTS,
    CategoricalClassifier,
    atomic_update,
    check_class_prior,
    class_log_prior,
    concentration_interval,
    consistent_property,
    defer_solve,
    learns_online,
    n_threads,
    on_failure,
)
from ._encoding import check_sample_weight, check_table_size, stream_as_table
from ._online import batch_classes, grow_tables, n_rows_of, undo_of_added_counts
from ._params import StrictInterval, StrOptions, fit_context, keyword_only, offered_if
from ._warnings import warn

#: smoothing -> (prior mean, concentration rule). Rules: "fixed" (a multiple of K_f or a
#: constant m) or "type2" (Type-II ML per class and feature).
SMOOTHERS = {
    "laplace": "uniform",
    "lidstone": "uniform",
    "kt": "uniform",
    "heb-u": "uniform",
    "m-estimate": "marginal",
    "target-encoding": "marginal",
    "heb-m": "marginal",
}
DEFAULT_M = {"m-estimate": 2.0, "target-encoding": 10.0}
EMPIRICAL_BAYES = {"heb-u", "heb-m"}

#: Rows scored per block by predict_proba / predict_log_proba on large inputs.
PREDICT_BLOCK_ROWS = 1 << 16
FEATURE_WEIGHTINGS = {"sqrt-mi"}
CONCENTRATION_ESTIMATES = {"type2-ml", "posterior-average"}


class CategoricalNB(CategoricalClassifier):
    """Naive Bayes for categorical features with Dirichlet smoothing learned from the data.

    Each class-conditional distribution of a feature is smoothed toward a prior mean
    ``mu_f`` with a concentration ``m``::

        theta[c, f, v] = (N[c, f, v] + m[c, f] * mu[f, v]) / (N[c, f] + m[c, f])

    The empirical-Bayes smoothers (``"heb-m"``, ``"heb-u"``) choose ``m[c, f]`` for every
    class and feature by Type-II maximum likelihood (the Dirichlet-multinomial evidence),
    so there is no smoothing knob to tune; the fixed smoothers are there as baselines.

    Parameters
    ----------
    smoothing : {"heb-m", "heb-u", "laplace", "lidstone", "kt", "m-estimate", \
"target-encoding"}, default="heb-m"
        ``"heb-m"``: pooled marginal mean, Type-II ML concentration. ``"heb-u"``: uniform
        mean, Type-II ML. ``"laplace"``: add one (m = K_f). ``"lidstone"``: add ``alpha``.
        ``"kt"``: add one half. ``"m-estimate"`` / ``"target-encoding"``: pooled marginal
        mean with the fixed concentration ``m`` (default 2 and 10).
    alpha : float, default=1.0
        Pseudo-count per category of ``"lidstone"``.
    m : float or None, default=None
        Concentration of ``"m-estimate"`` (default 2) and ``"target-encoding"`` (default 10).
    min_count : float, default=10
        Classes with fewer (weighted) rows fall back to m = K_f (empirical Bayes only).
    concentration_bounds : (float, float), default=(1e-2, 1e4)
        The interval the Type-II ML concentration is clamped to.
    concentration_estimate : {"type2-ml", "posterior-average"}, default="type2-ml"
        How the empirical-Bayes smoothers use the concentration: ``"type2-ml"`` plugs
        the Type-II ML ``m`` into the predictive; ``"posterior-average"`` averages the
        predictive over the posterior of ``m`` under the uniform shrinkage prior
        (:mod:`hebnb.posterior_smoothing`), which keeps a class that puts all its rows
        on one value from ruling out the others on small data. ``concentration_`` still
        reports the Type-II ML value.
    fit_prior : bool, default=True
        Learn class priors ((N_c + 1) / (S + C)); if False, use a uniform prior.
    class_prior : array-like of shape (n_classes,), default=None
        Prior probabilities of the classes; overrides ``fit_prior``.
    handle_unknown : {"ignore", "error"}, default="ignore"
        A category not seen in training is skipped at predict time, or raises.
    n_jobs : int, default=None
        Threads for counting, solving and scoring (None: 1, -1: all cores; never more
        than the cores available). Results do not depend on it.
    feature_weighting : {None, "sqrt-mi"}, default=None
        ``"sqrt-mi"`` multiplies each feature's log-likelihood term by
        ``w_f = sqrt(MI(X_f; Y))``, the plug-in mutual information (nats) of the training
        counts, unnormalised: with ``"laplace"`` this is the paper's CAWNB, with
        ``"heb-m"`` its HEB-M+GR.
    categories : "auto" or list of array-like, default="auto"
        The categories of each feature, as in scikit-learn's ``OrdinalEncoder``: "auto"
        learns them from the training data; a list gives every feature's categories
        (distinct, no missing value), and a training value outside them is a
        ``ValueError``. Declared categories never seen in training are smoothed as
        SPEC says (under the pooled-marginal smoothers they are skipped at predict).
        pandas ``category`` columns declare their categories too.
    learning_rate : float in (0, 1], default=1.0
        Forgetting factor gamma of ``partial_fit``: before a batch of n rows is added,
        every stored count is multiplied by ``gamma ** n`` (the prior pseudo-counts
        ``m * mu`` are not counts and never decay). ``fit`` starts from zero counts, so
        it is unaffected.
    weighting : {None, "cll-feature", "cll-value"}, default=None
        Discriminative weights learned on the training rows after the generative fit, by
        maximising the conditional log-likelihood with a Gaussian penalty toward the
        generative model (:mod:`hebnb.weighting`, docs/discriminative.md):
        ``"cll-feature"`` one weight per feature (WANBIA-C), ``"cll-value"`` one per
        class, feature and value (ALR, a one-hot logistic regression preconditioned by
        the log-probabilities). Each class's log prior also gets a weight. Not with
        ``feature_weighting`` or ``partial_fit``.
    penalty : float or None, default=None
        Precision of the Gaussian prior ``N(1, 1 / penalty)`` on every discriminative
        weight (None: ``hebnb.weighting.DEFAULT_PENALTY``; 0: no penalty).
    weighting_tol : float, default=1e-4
        The weights are converged when no entry of the objective's gradient, divided by
        the total sample weight, exceeds it.
    weighting_rows : {"leave-one-out", "in-sample"}, default="leave-one-out"
        How the training rows are scored while the weights are learned:
        ``"leave-one-out"`` scores each row with its own count removed from its class's
        cells (the plug-in estimate at the fitted concentration), so the weights do not
        learn to trust values the tables have memorised; ``"in-sample"`` uses the fitted
        tables as they are (then ``"cll-value"`` without a penalty on Laplace tables is
        exactly one-hot logistic regression). ``concentration_estimate="posterior-average"``
        has no plug-in form and always uses ``"in-sample"``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    categories_ : list of ndarray
        The categories of each feature (sorted distinct non-missing training values).
    n_categories_ : ndarray of shape (n_features,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,)
        Defined when X is a DataFrame with string column names.
    class_count_ : ndarray of shape (n_classes,)
        Weighted number of training rows per class.
    category_count_ : list of ndarray of shape (n_classes, n_categories_[f])
    class_log_prior_ : ndarray of shape (n_classes,)
    feature_log_prob_ : list of ndarray of shape (n_classes, n_categories_[f])
    prior_mean_ : list of ndarray of shape (n_categories_[f],)
    concentration_ : ndarray of shape (n_classes, n_features)
        The concentration m used for each class and feature (NaN for a feature whose
        values are all missing in training: it has nothing to smooth).
    log_evidence_ : ndarray of shape (n_classes, n_features)
        The Dirichlet-multinomial log evidence at ``concentration_`` (NaN under the fixed
        smoothers, which maximise nothing).
    n_iter_ : ndarray of shape (n_classes, n_features)
        Gradient evaluations per class and feature (0 where the low-count rule, or the
        shape of the evidence certified from the counts, decided without one).
    converged_ : ndarray of shape (n_classes, n_features)
    feature_weights_ : ndarray of shape (n_features,)
        The weight of each feature's term in the score: all ones without weighting, the
        sqrt-MI weights with ``feature_weighting="sqrt-mi"``, the learned ``w[f]`` with
        ``weighting="cll-feature"`` or ``"cll-value"``.
    class_weights_ : ndarray of shape (n_classes,)
        With ``weighting``: the learned weight of each class's log prior.
    value_weights_ : list of ndarray of shape (n_classes, n_categories_[f])
        With ``weighting="cll-value"``: the learned weight of every cell of
        ``feature_log_prob_``.
    weighting_n_iter_ : int
        With ``weighting``: L-BFGS iterations of the weight fit.

    Notes
    -----
    Missing values (None, NaN, pandas NA) neither count in training nor score at predict
    time. Numeric columns must be binned first, for example with
    ``ColumnTransformer([("bin", KBinsDiscretizer(10, encode="ordinal",
    strategy="quantile"), numeric_columns)], remainder="passthrough")``.

    Examples
    --------
    >>> import numpy as np
    >>> from hebnb import CategoricalNB
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 5, size=(200, 3))
    >>> y = (X[:, 0] + rng.integers(0, 2, size=200) > 3).astype(int)
    >>> model = CategoricalNB().fit(X, y)
    >>> model.predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints: ClassVar[dict[str, list[object]]] = {
        **SHARED_CONSTRAINTS,
        "smoothing": [StrOptions(set(SMOOTHERS))],
        "alpha": [StrictInterval(Real, 0, None, closed="neither")],
        "m": [StrictInterval(Real, 0, None, closed="neither"), None],
        "feature_weighting": [StrOptions(FEATURE_WEIGHTINGS), None],
        "concentration_estimate": [StrOptions(CONCENTRATION_ESTIMATES)],
        "weighting": [StrOptions(set(weighting.WEIGHTINGS)), None],
        "penalty": [StrictInterval(Real, 0, None, closed="left"), None],
        "weighting_tol": [StrictInterval(Real, 0, None, closed="neither")],
        "weighting_rows": [StrOptions(set(weighting.WEIGHTING_ROWS))],
    }

    @keyword_only("smoothing", removed_in="0.3")
    def __init__(
        self,
        *,
        smoothing: str = "heb-m",
        alpha: float = 1.0,
        m: float | None = None,
        min_count: float = 10,
        concentration_bounds: tuple[float, float] = (1e-2, 1e4),
        concentration_estimate: str = "type2-ml",
        fit_prior: bool = True,
        class_prior: ArrayLike | None = None,
        handle_unknown: str = "ignore",
        n_jobs: int | None = None,
        feature_weighting: str | None = None,
        learning_rate: float = 1.0,
        categories: str | list[ArrayLike] = "auto",
        weighting: str | None = None,
        penalty: float | None = None,
        weighting_tol: float = 1e-4,
        weighting_rows: str = "leave-one-out",
    ) -> None:
        self.smoothing = smoothing
        self.alpha = alpha
        self.m = m
        self.min_count = min_count
        self.concentration_bounds = concentration_bounds
        self.concentration_estimate = concentration_estimate
        self.fit_prior = fit_prior
        self.class_prior = class_prior
        self.handle_unknown = handle_unknown
        self.n_jobs = n_jobs
        self.feature_weighting = feature_weighting
        self.learning_rate = learning_rate
        self.categories = categories
        self.weighting = weighting
        self.penalty = penalty
        self.weighting_tol = weighting_tol
        self.weighting_rows = weighting_rows

    #: codes in order of first appearance: a stream's batches never move old counts
    _code_order = "insertion"

    #: a stream's batches grow the vocabulary and add into the count tables in place
    _changed_in_place = ("_encoder", "_feature_counts")

    #: what ``_solve`` sets: after ``partial_fit`` they are computed when first used
    _SOLVED = frozenset(
        {
            "_counts",
            "_prior_mean",
            "_log_table",
            "concentration_",
            "log_evidence_",
            "n_iter_",
            "converged_",
            "feature_weights_",
            "class_log_prior_",
            "_score_table",
            "_class_scores",
            "_score_feature_weights",
        }
    )

    def _check_combinations(self) -> None:
        """The checks ``_parameter_constraints`` cannot state: parameters that exclude
        each other."""
        if self.concentration_estimate != "type2-ml" and self.smoothing not in EMPIRICAL_BAYES:
            raise ValueError(
                f"concentration_estimate={self.concentration_estimate!r} needs an "
                f"empirical-Bayes smoothing ('heb-m' or 'heb-u'), got {self.smoothing!r}"
            )
        if self.weighting is not None and self.feature_weighting is not None:
            raise ValueError(
                "weighting and feature_weighting cannot be combined: choose one of "
                f"weighting={self.weighting!r} and feature_weighting={self.feature_weighting!r}"
            )

    @fit_context
    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Counts the training data and smooths every class-conditional distribution.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Categorical values: ints, whole floats, strings, booleans or objects.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; counts are sums of them, so their total must stay
            below 1e300.

        Returns
        -------
        self
        """
        self._check_combinations()
        threads = n_threads(self.n_jobs)
        encoder, codes, classes, labels, weights = self._training_data(X, y, sample_weight, threads)
        class_count, counts = _core.count_categories(
            codes, labels, weights, encoder.offsets, classes.shape[0], threads
        )
        self._learn_vocabulary(encoder, classes)
        self.class_count_ = class_count
        self.__dict__.pop("_feature_counts", None)
        self.__dict__.pop("_warm_start", None)
        self._unsolved = False
        self._counts = counts
        self._solve(threads)
        if self.weighting is not None:
            with weighting.blas_in_one_thread():
                self._fit_weights(codes, labels, weights, threads)
        return self

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
        """Adds a batch of rows to the counts (forgetting old ones at ``learning_rate``)
        and re-smooths.

        With ``learning_rate=1`` any sequence of calls gives the model one ``fit`` on the
        concatenated batches would give (a batch whose weights sum to zero is refused, as
        scikit-learn refuses it). Categories first seen in a later batch join the
        vocabulary (it only grows and stays sorted).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None
            All the classes the stream will hold. Needed on the first call unless that
            batch already shows every class (they are then taken from it); later calls
            may repeat it but not change it.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; counts are sums of them, so their total must stay
            below 1e300.

        Returns
        -------
        self
        """
        first_call = "_encoder" not in self.__dict__
        if not first_call:  # fit_context checks only the first call; set_params may not
            self._validate_params()
        self._check_combinations()
        X = stream_as_table(X)  # (its rows counted before they are encoded)
        n_rows = n_rows_of(X)
        fitted_classes = None if first_call else self.classes_
        declared, labels = batch_classes(y, n_rows, classes, fitted_classes)
        check_class_prior(self.class_prior, declared.shape[0])
        weights = check_sample_weight(sample_weight, n_rows)
        threads = n_threads(self.n_jobs)
        n_classes = declared.shape[0]
        if first_call:
            encoder = self._new_encoder()
            codes = encoder.fit_transform(X, n_threads=threads)
            check_table_size(n_classes, encoder.offsets[-1])
            tables, class_count, decay = [], np.zeros(n_classes), 1.0
        else:
            self._check_stream_categories()
            encoder = self._encoder
            tables = self._growable_counts()  # split on the vocabulary before the batch
            mark = encoder.mark()
            codes, _ = encoder.extend(X, n_threads=threads, owner=type(self).__name__)
            try:
                check_table_size(n_classes, encoder.offsets[-1])
            except MemoryError:
                encoder.undo(mark)  # a refused batch leaves the model as it was
                raise
            # forgetting: the stored counts age by one step per new row
            decay = float(self.learning_rate) ** n_rows
            class_count = self.class_count_.copy()
        tables = grow_tables(tables, encoder.cardinalities, n_classes)
        # the tables are the model's own (no copy per batch): a failed call restores them
        on_failure(undo_of_added_counts(tables, codes, labels, decay))
        _core.add_counts(tables, class_count, codes, labels, weights, decay=decay, n_jobs=threads)
        self._learn_vocabulary(encoder, declared)
        self.class_count_ = class_count
        self._feature_counts = tables
        if "concentration_" in self.__dict__:
            # the next solve starts each refinement here (the same maximiser, fewer steps)
            self._warm_start = self.__dict__["concentration_"]
        for name in self._SOLVED:
            self.__dict__.pop(name, None)
        defer_solve(self)  # solved from the counts when a fitted attribute is used
        return self

    def _growable_counts(self) -> list[np.ndarray]:
        """The per-feature ``(C, capacity)`` count tables of a stream (split from the flat
        table of a ``fit`` the first time), the model's own writeable copies: a batch adds
        into them in place. A model loaded from a read-only memory map or from pickle
        buffers holds read-only ones, and one loaded from out-of-band pickle buffers in the
        same process holds the pickled model's memory: tables that are not writeable or do
        not own their memory are copied once."""
        if "_feature_counts" not in self.__dict__:
            self._feature_counts = [np.array(t, order="C") for t in self._split(self._counts)]
        elif not all(_own_writeable(t) for t in self._feature_counts):
            self._feature_counts = [
                t if _own_writeable(t) else t.copy() for t in self._feature_counts
            ]
        return self._feature_counts

    def _solve_deferred(self) -> None:
        self._solve(n_threads(self.n_jobs))

    def _solve(self, threads: int) -> None:
        """Prior means, concentrations and log-probability tables from the counts."""
        offsets = self._encoder.offsets
        start = None
        if self.__dict__.get("_unsolved"):
            start = self.__dict__.get("_warm_start")
            sizes = np.diff(offsets)
            self._counts = np.concatenate(
                [t[:, :k] for t, k in zip(self._feature_counts, sizes)], axis=1
            )
            self._unsolved = False
        mean = _core.prior_mean(self._counts, offsets, SMOOTHERS[self.smoothing])
        n_classes, n_features = self._counts.shape[0], len(offsets) - 1
        if self.smoothing in EMPIRICAL_BAYES:
            low, high = concentration_interval(self.concentration_bounds)
            concentration, log_evidence, n_iter, converged = _core.fit_concentrations(
                self._counts,
                self.class_count_,
                mean,
                offsets,
                float(self.min_count),
                low,
                high,
                threads,
                start=start
                if start is not None and start.shape == (n_classes, n_features)
                else None,
            )
            if not converged.all():
                warn(
                    f"the concentration solver did not converge for {(~converged).sum()} "
                    "(class, feature) pairs",
                    ConvergenceWarning,
                )
        else:
            concentration = np.broadcast_to(
                self._fixed_concentration(), (n_classes, n_features)
            ).copy()
            log_evidence = np.full((n_classes, n_features), np.nan)
            n_iter = np.zeros((n_classes, n_features), dtype=np.int64)
            converged = np.ones((n_classes, n_features), dtype=bool)
        table = _core.log_probability_table(self._counts, mean, concentration, offsets, threads)
        if self.concentration_estimate == "posterior-average":
            not_low_count = self.class_count_ >= float(self.min_count)
            table = posterior_smoothing.averaged_log_probability_table(
                self._counts,
                mean,
                list(offsets),
                np.broadcast_to(not_low_count[:, None], (n_classes, n_features)),
                table,
                concentration,
                concentration_interval(self.concentration_bounds),
            )
        if self.feature_weighting == "sqrt-mi":
            information = _core.mutual_information(self._counts, offsets, threads)
            self.feature_weights_ = np.sqrt(information)
        else:
            self.feature_weights_ = np.ones(n_features)
        self._prior_mean = mean
        self._log_table = np.ascontiguousarray(table.T)
        self.concentration_ = concentration
        self.log_evidence_ = log_evidence
        self.n_iter_ = n_iter
        self.converged_ = converged
        self.class_log_prior_ = class_log_prior(
            self.class_count_, fit_prior=self.fit_prior, class_prior=self.class_prior
        )
        # scoring uses the generative tables until _fit_weights replaces them
        self._score_table, self._class_scores = self._log_table, self.class_log_prior_
        self._score_feature_weights: np.ndarray | None = self.feature_weights_
        for name in ("class_weights_", "value_weights_", "weighting_n_iter_"):
            self.__dict__.pop(name, None)

    def _fixed_concentration(self) -> np.ndarray:
        """m per feature for the fixed smoothers (a row broadcast over classes); NaN for a
        feature never observed, which has nothing to smooth."""
        k = self.n_categories_.astype(np.float64)
        if self.smoothing == "laplace":
            m = k
        elif self.smoothing == "lidstone":
            with np.errstate(over="ignore"):
                m = float(self.alpha) * k
            if not np.all(np.isfinite(m)):
                f = int(np.argmax(~np.isfinite(m)))
                raise ValueError(
                    f"alpha={self.alpha!r} is too large: alpha times the {int(k[f])} "
                    f"categories of feature {f} overflows float64"
                )
        elif self.smoothing == "kt":
            m = k / 2.0
        else:
            m = np.full_like(k, DEFAULT_M[self.smoothing] if self.m is None else float(self.m))
        return np.where(k > 0, m, np.nan)

    def _split(self, flat: np.ndarray) -> list[np.ndarray]:
        """Per-feature blocks of a table laid out by code (order of first appearance)."""
        return np.split(flat, self._encoder.offsets[1:-1], axis=-1)

    def _sorted_blocks(self, flat: np.ndarray) -> list[np.ndarray]:
        """Per-feature blocks with their columns in the order of ``categories_``."""
        encoder = self._encoder
        return [block[..., encoder.sorted_order(f)] for f, block in enumerate(self._split(flat))]

    @consistent_property
    def category_count_(self) -> list[np.ndarray]:
        """Weighted counts N[c, f, v]: one (n_classes, n_categories_[f]) array per feature."""
        return self._sorted_blocks(self._counts)

    @consistent_property
    def feature_log_prob_(self) -> list[np.ndarray]:
        """ln theta[c, f, v]: one (n_classes, n_categories_[f]) array per feature."""
        return self._sorted_blocks(self._log_table.T)

    @consistent_property
    def prior_mean_(self) -> list[np.ndarray]:
        """The prior mean mu_f of each feature's categories."""
        return self._sorted_blocks(self._prior_mean)

    def _fit_weights(
        self, codes: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray, threads: int
    ) -> None:
        """Learns the discriminative weights of ``weighting`` on the training rows."""
        kind = self.weighting
        if kind is None:
            return
        offsets = list(self._encoder.offsets)
        held_out = None
        if (
            self.weighting_rows == "leave-one-out"
            and self.concentration_estimate != "posterior-average"
        ):
            held_out = weighting.plug_in_parts(
                self._counts, self._prior_mean, self.concentration_, offsets
            )
        fitted = weighting.fit_weights(
            kind,
            codes,
            labels,
            sample_weight,
            self._log_table,
            self.class_log_prior_,
            offsets,
            penalty=weighting.resolve_penalty(self.penalty),
            n_threads=threads,
            tol=float(self.weighting_tol),
            held_out=held_out,
        )
        self._score_table, self._class_scores = weighting.score_tables(
            kind,
            self._log_table,
            self.class_log_prior_,
            fitted.class_weights,
            fitted.table_weights,
            offsets,
        )
        self._score_feature_weights = None  # already in the score table
        self.class_weights_ = fitted.class_weights
        self.weighting_n_iter_ = fitted.n_iter
        self.feature_weights_ = fitted.feature_weights
        if self.weighting == "cll-value":
            self.value_weights_ = self._sorted_blocks(fitted.table_weights.T)

    def _joint_log_likelihood(self, X: ArrayLike) -> np.ndarray:
        codes, threads = self._encode(X)
        return _core.joint_log_likelihood(codes, *self._scoring_tables(), threads)

    def _scoring_tables(
        self,
    ) -> tuple[
        npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64] | None, list[int]
    ]:
        """What scoring a coded row needs: ``(log table, class log prior, feature weights,
        offsets)``; with ``weighting``, the weighted table and class scores (the feature
        weights are then inside the table)."""
        return (
            self._score_table,
            self._class_scores,
            self._score_feature_weights,
            self._encoder.offsets,
        )

    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """Log posterior class probabilities, shape (n_samples, n_classes)."""
        return self._posterior(X, log=True)

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Posterior class probabilities, shape (n_samples, n_classes); rows sum to 1."""
        return self._posterior(X, log=False)

    def _posterior(self, X: Any, *, log: bool) -> np.ndarray:
        """Scores, normalises (and exponentiates) in one call into the core; a large
        array or DataFrame goes by blocks of rows written into the result, so that
        beside the input and the result only one block's codes and scores are held."""
        if "_encoder" not in self.__dict__:
            check_is_fitted(self)  # raises NotFittedError
        n_rows = X.shape[0] if isinstance(X, (np.ndarray, pd.DataFrame)) else 0
        if n_rows <= PREDICT_BLOCK_ROWS:
            codes, threads = self._encode(X)
            posterior: np.ndarray = _core.posterior(
                codes, *self._scoring_tables(), log=log, n_jobs=threads
            )
            return posterior
        out = np.empty((n_rows, self.classes_.shape[0]))
        for start in range(0, n_rows, PREDICT_BLOCK_ROWS):
            rows = slice(start, start + PREDICT_BLOCK_ROWS)
            block = X.iloc[rows] if isinstance(X, pd.DataFrame) else X[rows]
            codes, threads = self._encode(block)
            out[rows] = _core.posterior(codes, *self._scoring_tables(), log=log, n_jobs=threads)
        return out


def _own_writeable(table: np.ndarray) -> bool:
    """Whether a count table is the model's own to add into: writeable memory it owns."""
    return bool(table.flags.writeable and table.flags.owndata)
