"""Bernoulli Naive Bayes on binary (or binarised) features, with fixed or
empirical-Bayes smoothing; sparse input stays sparse."""

from __future__ import annotations

from numbers import Real
from typing import Any, ClassVar

import numpy as np

from . import _core
from ._base import concentration_interval
from ._params import StrictInterval
from ._text import CountMatrix, FloatArray, check_counts, empirical_class_log_prior
from .multinomial import SMOOTHERS, DiscreteNB


class BernoulliNB(DiscreteNB):
    """Naive Bayes for binary features (word presence), with smoothing learned from the
    data.

    Per class c and feature f a two-category (absent, present) model::

        theta[c, f] = (d[c, f] + m[c, f] * mu[f]) / (N[c] + m[c, f])

    ``d[c, f]`` the weighted number of rows of class c where f is present, ``mu[f]`` the
    pooled presence rate (``"heb-m"``) or 1/2, ``m[c, f]`` by Type-II ML (the
    beta-binomial evidence) or ``2 alpha`` (``"laplace"``/``"lidstone"``, which give
    scikit-learn's ``BernoulliNB``). An absent feature contributes ``ln(1 - theta)``:
    the sum over all features is a per-class constant, corrected over each row's present
    features, so scoring a row costs its non-zeros and the input is never densified.

    Parameters
    ----------
    smoothing : {"heb-m", "heb-u", "laplace", "lidstone"}, default="heb-m"
    alpha : float, default=1.0
        Pseudo-count per (absent, present) cell of ``"lidstone"``.
    binarize : float or None, default=0.0
        A value is present when it exceeds this threshold (>= 0, as scikit-learn's: a
        negative one would make every absent entry of a sparse matrix present). None: the input is
        already binary (values 0 or 1; anything else is an error).
    min_count : float, default=10
        Classes with fewer (weighted) rows fall back to m = 2 (empirical Bayes).
    concentration_bounds : (float, float), default=(1e-2, 1e4)
    fit_prior : bool, default=True
        Learn the class prior as scikit-learn does (``N_c / S``); if False, uniform.
    class_prior : array-like of shape (n_classes,), default=None
    n_jobs : int, default=None

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_count_ : ndarray of shape (n_classes,)
    feature_count_ : ndarray of shape (n_classes, n_features)
        Weighted number of rows of each class where each feature is present.
    class_log_prior_ : ndarray of shape (n_classes,)
    feature_log_prob_ : ndarray of shape (n_classes, n_features)
        ``ln theta[c, f]``, the log probability of presence.
    prior_mean_ : ndarray of shape (n_features,)
        The prior presence rate ``mu[f]``.
    concentration_, log_evidence_, n_iter_, converged_ : ndarray of shape (n_classes, n_features)
    n_features_in_ : int

    Notes
    -----
    Under ``"heb-m"`` a feature present in no training row (or in every one) has the
    same degenerate probability in every class and is skipped at predict time. Duplicate
    entries of a sparse matrix are summed before binarising (on a copy).

    Examples
    --------
    >>> import numpy as np
    >>> from hebnb import BernoulliNB
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 2, size=(100, 20))
    >>> y = rng.integers(0, 2, size=100)
    >>> BernoulliNB().fit(X, y).predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **DiscreteNB._parameter_constraints,
        "binarize": [None, StrictInterval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        *,
        smoothing: str = "heb-m",
        alpha: float = 1.0,
        binarize: float | None = 0.0,
        min_count: float = 10,
        concentration_bounds: tuple[float, float] = (1e-2, 1e4),
        fit_prior: bool = True,
        class_prior: Any = None,
        n_jobs: int | None = None,
    ) -> None:
        self.smoothing = smoothing
        self.alpha = alpha
        self.binarize = binarize
        self.min_count = min_count
        self.concentration_bounds = concentration_bounds
        self.fit_prior = fit_prior
        self.class_prior = class_prior
        self.n_jobs = n_jobs

    #: The fit's (classes x features) float64 tables at its peak: the (absent, present)
    #: count table and its log-probabilities (two each), the four per-distribution
    #: diagnostics, the present and absent log-probabilities, the score table, and the
    #: index of the distinct distributions solved once (about two more).
    _TABLE_COPIES = 13

    def _check_X(self, X: Any, *, reset: bool) -> CountMatrix:
        threshold = None if self.binarize is None else float(self.binarize)
        matrix = check_counts(self, X, reset=reset, binary_threshold=threshold, canonical=True)
        if threshold is None:
            data = matrix.data
            if not np.all((data == 0.0) | (data == 1.0)):
                raise ValueError(
                    "BernoulliNB(binarize=None) expects binary input (0 or 1); got other "
                    "values: set binarize to a threshold"
                )
        return matrix

    def _core_threshold(self, matrix: CountMatrix) -> float | None:
        # dense input arrives as its 0/1 indicator, sparse input with its own values
        if self.binarize is None or not matrix.sparse_input:
            return 0.0
        return float(self.binarize)

    def _solve(self) -> None:
        fit = _core.fit_binary_features(
            self.feature_count_,
            self.class_count_,
            prior_mean=SMOOTHERS[self.smoothing],
            alpha=self._alpha(),
            min_count=float(self.min_count),
            concentration_bounds=concentration_interval(self.concentration_bounds),
            n_jobs=self._threads(),
        )
        self._warn_unconverged(fit["converged"])
        self.prior_mean_ = fit["prior_mean"][1::2]
        self.concentration_ = fit["concentration"]
        self.log_evidence_ = fit["log_evidence"]
        self.n_iter_ = fit["n_iter"]
        self.converged_ = fit["converged"]
        self.feature_log_prob_ = fit["log_present"]
        self._log_absent = fit["log_absent"]
        self.class_log_prior_ = empirical_class_log_prior(
            self.class_count_, fit_prior=self.fit_prior, class_prior=self.class_prior
        )
        self._score_table = fit["score_table"]
        self._absent_sum = fit["absent_sum"]

    def _joint_log_likelihood(self, X: Any) -> FloatArray:
        return self._score(X, self._score_table, self.class_log_prior_ + self._absent_sum)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = False
        return tags
