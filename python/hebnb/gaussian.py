"""Gaussian Naive Bayes for continuous features: scikit-learn's model (per class and
feature a mean and a variance with a variance floor), with hebnb's estimator contract."""

from __future__ import annotations

from numbers import Real
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ._base import PREDICT_CHUNK_CELLS, validate_table
from ._params import ClassProbabilities, StrictInterval, fit_context
from ._text import (
    FloatArray,
    NaiveBayesClassifier,
    check_no_overflow,
    empirical_class_log_prior,
    training_batch,
)

#: The dtypes the Gaussian model reads as they are: others become float64.
FLOAT_DTYPES = [np.float64, np.float32]


def column_variances(X: npt.NDArray[Any]) -> FloatArray:
    """``np.var(X, axis=0)`` in float64, a block of columns at a time: each column's
    sums run over its rows in the same order, so the numbers are those of one call, but
    the temporary ``X - mean`` is a block's, not a float64 copy of the whole table."""
    n_rows, n_columns = X.shape
    step = max(1, PREDICT_CHUNK_CELLS // max(1, n_rows))
    variances = np.empty(n_columns)
    for start in range(0, n_columns, step):
        variances[start : start + step] = np.var(
            X[:, start : start + step], axis=0, dtype=np.float64
        )
    return variances


def merged_moments(
    n_past: float, mean: FloatArray, var: FloatArray, X: FloatArray, weights: FloatArray | None
) -> tuple[FloatArray, FloatArray, float]:
    """Mean and (biased) variance of the rows seen so far and a new block of rows, from
    the stored moments and the block (Chan, Golub and LeVeque's pairwise update, as
    scikit-learn's GaussianNB): ``(mean, var, weight of the block)``."""
    if X.shape[0] == 0:
        return mean, var, 0.0
    if weights is None:
        n_new = float(X.shape[0])
        new_mean = np.mean(X, axis=0)
        new_var = np.var(X, axis=0)
    else:
        n_new = float(weights.sum())
        if n_new == 0.0:  # (scikit-learn also drops a block weighing below ~1e-8)
            return mean, var, 0.0
        # the same averages with the weights scaled to at most 1: a subnormal weight
        # times a value underflowed (5e-324 everywhere gave a mean of 0) and a weight of
        # 1e298 times a value of 1e9 overflowed (an infinite mean)
        scaled = weights / weights.max()
        new_mean = np.average(X, axis=0, weights=scaled)
        new_var = np.average((X - new_mean) ** 2, axis=0, weights=scaled)
    if n_past == 0:
        return new_mean, new_var, n_new
    # the pairwise update in shares of the total weight (the weights themselves times the
    # moments overflow as above)
    n_total = float(n_past + n_new)
    new_share, past_share = n_new / n_total, n_past / n_total
    total_mean = new_share * new_mean + past_share * mean
    total_var = (
        past_share * var + new_share * new_var + new_share * past_share * (mean - new_mean) ** 2
    )
    return total_mean, total_var, n_new


def pooled_moments(
    theta: FloatArray, var: FloatArray, class_count: FloatArray, epsilon: float
) -> tuple[FloatArray, FloatArray]:
    """Mean and variance (floor included) of the rows of every class together, from the
    classes' moments (the law of total variance): what a class without rows is scored
    with, so that its probability comes from its prior rather than from a normal of
    zero mean and a variance of only the floor."""
    weight = class_count / class_count.sum()
    mean = weight @ theta
    spread = weight @ (var - epsilon + (theta - mean) ** 2)
    return mean, spread + epsilon


def check_variances(var: FloatArray, class_count: FloatArray, classes: npt.NDArray[Any]) -> None:
    """Refuses a zero variance of a class with rows: its density would be a point mass."""
    zero = (var <= 0) & (class_count > 0)[:, None]
    if np.any(zero):
        c, j = np.argwhere(zero)[0]
        raise ValueError(
            f"class {classes[c]} has zero variance in feature {j} (every row of it seen so "
            "far has one value there) and the variance floor is 0 (var_smoothing times the "
            "largest feature variance of the last batch): its normal density is undefined. "
            "Fit rows with some variance, or set var_smoothing > 0 on such data"
        )


class GaussianNB(NaiveBayesClassifier):
    """Gaussian Naive Bayes: per class and feature a normal distribution.

    The same model as scikit-learn's ``GaussianNB`` (equal to 1e-10, ``partial_fit``
    included): ``var_smoothing`` times the largest feature variance of the batch is
    added to every variance. Nothing is smoothed by empirical Bayes here: a Gaussian's
    mean and variance need no pseudo-counts.

    Parameters
    ----------
    var_smoothing : float, default=1e-9
        Portion of the largest feature variance added to the variances for stability.
    fit_prior : bool, default=True
        Learn the class prior (``N_c / S``, as scikit-learn); if False, uniform.
    class_prior : array-like of shape (n_classes,), default=None
        Prior probabilities of the classes (scikit-learn's ``priors``); overrides
        ``fit_prior``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_count_ : ndarray of shape (n_classes,)
    class_prior_ : ndarray of shape (n_classes,)
    class_log_prior_ : ndarray of shape (n_classes,)
    theta_ : ndarray of shape (n_classes, n_features)
    var_ : ndarray of shape (n_classes, n_features)
    epsilon_ : float
        The variance floor added to ``var_``.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Notes
    -----
    A feature constant within a class gets the floor as its variance. When every
    feature is constant in a batch the floor is 0 and a variance would be 0 (scikit-learn
    then divides by zero): ``fit`` refuses it with a ValueError; ``partial_fit`` accepts it
    (a stream fed row by row starts so, and later rows bring the variance) and scoring
    refuses a class whose variance is still 0. A class without rows (declared in
    ``classes``, or of zero total weight) is scored with the moments of all the rows, so
    that its probability is its prior's share (0 under ``fit_prior=True``); its
    ``theta_`` and ``var_`` stay scikit-learn's (0 and the floor). Sample weights of any
    positive scale give the same model (scikit-learn drops a class whose batch weighs
    below ~1e-8). Sparse input is a TypeError, NaN or infinite values a ValueError.

    Examples
    --------
    >>> import numpy as np
    >>> from hebnb import GaussianNB
    >>> X = np.array([[-1.0, -1.0], [-2.0, -1.0], [1.0, 1.0], [2.0, 1.0]])
    >>> GaussianNB().fit(X, [0, 0, 1, 1]).predict([[-0.8, -1.0]])
    array([0])
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "var_smoothing": [StrictInterval(Real, 0, None, closed="left")],
        "fit_prior": ["boolean"],
        "class_prior": [ClassProbabilities(), None],
    }

    classes_: npt.NDArray[Any]
    theta_: FloatArray
    var_: FloatArray
    class_count_: FloatArray
    epsilon_: float

    def __init__(
        self, *, var_smoothing: float = 1e-9, fit_prior: bool = True, class_prior: Any = None
    ) -> None:
        self.var_smoothing = var_smoothing
        self.fit_prior = fit_prior
        self.class_prior = class_prior

    @fit_context
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> GaussianNB:
        """Means and variances of every class and feature.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        return self._update(X, y, sample_weight, classes=None, first_call=True, partial=False)

    @fit_context
    def partial_fit(
        self, X: Any, y: Any, classes: Any = None, sample_weight: Any = None
    ) -> GaussianNB:
        """Updates the means and variances with a batch of rows (scikit-learn's update:
        the variance floor is recomputed from each batch, and the stored variances keep
        a floor difference of ``epsilon`` between batches, as there).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None
            All the classes of the stream; needed on the first call unless that batch
            shows every class.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        first_call = not hasattr(self, "theta_")
        if not first_call:  # fit_context checks only the first call; set_params may not
            self._validate_params()
        return self._update(
            X, y, sample_weight, classes=classes, first_call=first_call, partial=True
        )

    def _update(
        self, X: Any, y: Any, sample_weight: Any, *, classes: Any, first_call: bool, partial: bool
    ) -> GaussianNB:
        # float32 stays float32 (no float64 copy of the whole table): the moments are
        # taken in float64, class by class, with the same numbers as from a float64 copy
        X = validate_table(self, X, reset=first_call, dtype=FLOAT_DTYPES)
        fitted = None if first_call else self.classes_
        batch = training_batch(
            y,
            X.shape[0],
            sample_weight,
            partial=partial,
            classes=classes,
            fitted_classes=fitted,
            class_prior=self.class_prior,
        )
        n_classes, n_features = batch.classes.shape[0], X.shape[1]
        epsilon = float(self.var_smoothing) * float(column_variances(X).max(initial=0.0))
        if first_call:
            theta = np.zeros((n_classes, n_features))
            var = np.zeros((n_classes, n_features))
            class_count = np.zeros(n_classes)
        else:
            theta, class_count = self.theta_.copy(), self.class_count_.copy()
            # scikit-learn takes the floor of *this* batch back out of the stored
            # variances (not the floor it added): kept, so that the models stay equal
            var = self.var_ - epsilon
        weighted = sample_weight is not None
        for i in np.unique(batch.labels):
            rows = batch.labels == i
            theta[i], var[i], n_new = merged_moments(
                class_count[i],
                theta[i],
                var[i],
                X[rows].astype(np.float64, copy=False),
                batch.weights[rows] if weighted else None,
            )
            class_count[i] += n_new
        var += epsilon
        if not partial:
            # (partial_fit accepts it: the next batches may bring the variance)
            check_variances(var, class_count, batch.classes)
        self.classes_ = batch.classes
        self.theta_, self.var_, self.class_count_, self.epsilon_ = theta, var, class_count, epsilon
        self.class_log_prior_ = empirical_class_log_prior(
            class_count, fit_prior=self.fit_prior, class_prior=self.class_prior
        )
        self.class_prior_ = np.exp(self.class_log_prior_)
        return self

    def _joint_log_likelihood(self, X: Any) -> FloatArray:
        # float32 rows meet float64 means: the differences are float64 either way
        X = validate_table(self, X, reset=False, dtype=FLOAT_DTYPES)
        check_variances(self.var_, self.class_count_, self.classes_)
        theta, var = self.theta_, self.var_
        unseen = self.class_count_ == 0
        if np.any(unseen) and not np.all(unseen):
            theta, var = theta.copy(), var.copy()
            theta[unseen], var[unseen] = pooled_moments(
                theta, var, self.class_count_, self.epsilon_
            )
        joint = np.empty((X.shape[0], self.classes_.shape[0]))
        for i in range(self.classes_.shape[0]):
            normaliser = -0.5 * np.sum(np.log(2.0 * np.pi * var[i, :]))
            with np.errstate(over="ignore"):  # an overflow is refused below
                distance = 0.5 * np.sum(((X - theta[i, :]) ** 2) / var[i, :], axis=1)
            joint[:, i] = self.class_log_prior_[i] + (normaliser - distance)
        check_no_overflow(joint, "X holds values whose squared distances to the class means")
        return joint
