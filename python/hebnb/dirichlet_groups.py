"""A Dirichlet posterior over the classes for every group, with an empirical-Bayes prior
(SPEC "Empirical-Bayes Dirichlet group classifier"; the model of bayesianbandits'
``EmpiricalBayesDirichletClassifier``)."""

from __future__ import annotations

import numbers
from collections.abc import Hashable
from numbers import Integral, Real
from typing import Any, ClassVar, Self

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import Tags
from sklearn.utils.validation import _check_feature_names, check_is_fitted

from . import _core
from ._base import ThreadSafeModel, is_real, n_threads, score_in_chunks
from ._encoding import (
    _array_column,
    _encode_column,
    _pandas_column,
    check_sample_weight,
    labels_as_array,
    refuse_non_table,
)
from ._online import check_learning_rate
from ._params import N_JOBS, PriorConcentrations, StrictInterval, fit_context


class EmpiricalBayesDirichletClassifier(ThreadSafeModel, ClassifierMixin, BaseEstimator):
    """Per-group class probabilities under a Dirichlet prior tuned by empirical Bayes.

    ``X`` has one column, which names a group (an arm, a user, a segment). Each group g has a
    Dirichlet posterior ``alpha_g = alpha + c_g`` over the classes, ``c_g`` its (weighted,
    decayed) class counts; ``predict_proba`` is its mean ``alpha_g / sum(alpha_g)`` and an
    unseen group gets the prior mean. The prior ``alpha = s * m`` is shared by all groups
    and chosen by Type-II maximum likelihood: Minka's alternating fixed point for the base
    measure ``m`` and the concentration ``s`` on the Dirichlet-multinomial evidence of the
    groups' counts. The steps run in the Rust core.

    Parameters
    ----------
    alphas : dict of {class label: float}
        The classes (in this order) and their initial prior concentrations.
    n_eb_iter : int, default=10
        Most (m, s) steps per ``fit``; 0 disables the tuning in ``fit``.
    eb_tol : float, default=1e-4
        ``fit`` stops once a step changes the log evidence by less than this.
    learning_rate : float in (0, 1], default=1.0
        Stabilized forgetting: every row of a group first multiplies that group's counts
        by ``learning_rate`` (so its posterior moves toward the prior, never toward zero).
        bayesianbandits spells it ``forgetting=StabilizedForgetting(learning_rate)``.
    random_state : int, Generator or None, default=None
        Seeds ``sample``.
    n_jobs : int, default=None
        Threads for the evidence sums over groups (None: 1, -1: all cores; never more
        than the cores available).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The keys of ``alphas``, in their order (as bayesianbandits orders them, and the
        columns of ``predict_proba``). scikit-learn's probability scorers
        (``neg_log_loss``, ``roc_auc``) read the columns as the sorted labels: give
        ``alphas`` in sorted order to score with them (a scorer otherwise pairs each
        column with another class, silently). The labels must be keys of ``alphas``, so
        tools that recode ``y`` as 0..K-1 before fitting (``cross_val_predict(method=
        "predict_proba")``, ``StackingClassifier``, ``OneVsRestClassifier``, ...) are
        refused, as scikit-learn refuses them for a ``class_weight`` dict.
    prior_ : ndarray of shape (n_classes,)
        The tuned prior concentrations alpha.
    feature_names_in_ : ndarray of shape (1,)
        The name of the grouping column, when ``X`` had a string column name (later
        calls warn when it differs, as scikit-learn's estimators do).
    alphas_ : dict of {class label: float}
        ``prior_`` keyed by class (the constructor's ``alphas`` is left as given).
    groups_ : ndarray of shape (n_groups,)
        The groups, in order of first appearance: the values of the grouping column,
        and every category a pandas ``category`` column declares, as for
        :class:`CategoricalNB` (those no row of the batch holds come after the batch's
        values). A group no row held has zero counts: its posterior is the prior.
    group_counts_ : ndarray of shape (n_groups, n_classes)
        The counts ``c_g``; the posterior of group g is ``prior_ + group_counts_[g]``.
    log_evidence_ : float
        Dirichlet-multinomial log evidence of the counts at ``prior_`` (``-inf`` without
        tuning).
    n_eb_iterations_ : int
        (m, s) steps taken by the last ``fit`` or ``partial_fit`` (not the cap).
    eb_converged_ : bool
        Whether the last ``fit`` stopped on ``eb_tol`` (or had nothing to tune); False
        with ``n_eb_iter=0``, which tunes nothing (``log_evidence_`` is then ``-inf``).
    n_features_in_ : int
        Always 1.

    Notes
    -----
    Differences from bayesianbandits 1.5, whose numbers this class reproduces:
    the tuned prior is the fitted ``alphas_``/``prior_`` instead of being written back
    into the ``alphas`` parameter (so ``clone`` and a second ``fit`` start from the
    initial prior), ``n_eb_iterations_`` counts the steps taken, a label outside
    ``alphas`` raises instead of being dropped, predicting before the first fit raises
    scikit-learn's ``NotFittedError`` instead of returning the prior mean, and counts
    rather than posteriors are stored (a prior change then moves every posterior exactly
    by that change).

    Examples
    --------
    >>> import numpy as np
    >>> from hebnb import EmpiricalBayesDirichletClassifier
    >>> X = np.array([1, 1, 1, 2, 2, 2, 3, 3, 3]).reshape(-1, 1)
    >>> y = np.array([1, 1, 2, 2, 2, 1, 1, 1, 2])
    >>> model = EmpiricalBayesDirichletClassifier({1: 1.0, 2: 1.0}).fit(X, y)
    >>> model.predict_proba([[1], [4]]).shape
    (2, 2)
    """

    _parameter_constraints: ClassVar[dict[str, list[object]]] = {
        "alphas": [PriorConcentrations()],
        "n_eb_iter": [StrictInterval(Integral, 0, None, closed="left")],
        "eb_tol": [StrictInterval(Real, 0, None, closed="left")],
        "learning_rate": [StrictInterval(Real, 0, 1, closed="right")],
        "random_state": [
            StrictInterval(Integral, 0, None, closed="left"),
            np.random.Generator,
            None,
        ],
        "n_jobs": N_JOBS,
    }

    #: ``partial_fit`` grows the group vocabulary in place.
    _updated_in_place = ("_groups",)

    def __init__(
        self,
        alphas: dict[Hashable, float],
        *,
        n_eb_iter: int = 10,
        eb_tol: float = 1e-4,
        learning_rate: float = 1.0,
        random_state: int | np.random.Generator | None = None,
        n_jobs: int | None = None,
    ) -> None:
        self.alphas = alphas
        self.n_eb_iter = n_eb_iter
        self.eb_tol = eb_tol
        self.learning_rate = learning_rate
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _initial_prior(self) -> tuple[np.ndarray, np.ndarray]:
        """The classes and prior concentrations of ``alphas`` (checked by ``_fit_context``;
        its keys, the class labels, are checked here to be scalars)."""
        for key in self.alphas:
            _check_class_key(key)
        prior = np.array([float(a) for a in self.alphas.values()])
        classes = np.empty(len(self.alphas), dtype=object)
        classes[:] = list(self.alphas.keys())
        return _as_label_array(classes), prior

    @fit_context
    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Counts every group's classes, then tunes the prior to convergence.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)
            The group of each row.
        y : array-like of shape (n_samples,)
            Labels, each a key of ``alphas``.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        self.classes_, self.prior_ = self._initial_prior()
        self._groups = _core.Vocabulary(1)
        self.groups_ = np.empty(0, dtype=object)
        self.group_counts_ = np.zeros((0, self.classes_.shape[0]))
        self.n_features_in_ = 1
        _check_feature_names(self, X, reset=True)
        self.random_state_ = np.random.default_rng(self.random_state)
        self._absorb(X, y, sample_weight)
        if self.n_eb_iter > 0:
            self._tune(int(self.n_eb_iter), float(self.eb_tol))
        else:
            self.log_evidence_, self.n_eb_iterations_, self.eb_converged_ = -np.inf, 0, False
        return self

    @fit_context
    def partial_fit(
        self,
        X: ArrayLike,
        y: ArrayLike,
        *,
        classes: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> Self:
        """Adds a batch of rows (with forgetting) and takes one empirical-Bayes step.

        The first call on an unfitted model is ``fit`` followed by that one step (as in
        bayesianbandits). Every step moves every group's posterior by the change of the
        prior, since posteriors are the prior plus the stored counts.

        ``classes`` and ``sample_weight`` are keyword-only: scikit-learn's incremental
        learners take ``partial_fit(X, y, classes, sample_weight)`` and bayesianbandits'
        ``partial_fit(X, y, sample_weight)``, so a third positional argument would mean
        one thing to some callers and the other to the rest.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
        classes : array-like of shape (n_classes,), default=None
            Accepted for scikit-learn's incremental-learning convention: the classes are
            the keys of ``alphas``, and ``classes``, when given, must name the same ones.

        Returns
        -------
        self
        """
        if classes is not None:
            self._check_declared_classes(classes)
        if hasattr(self, "group_counts_"):
            self._validate_params()  # _fit_context checks only the first call
            classes = self._initial_prior()[0]
            if not np.array_equal(classes, self.classes_):
                raise ValueError(
                    f"alphas names the classes {classes.tolist()}, but the model was fitted "
                    f"on {self.classes_.tolist()}: call fit to start again with new classes"
                )
            _check_feature_names(self, X, reset=False)
            self._absorb(X, y, sample_weight)
            steps_before = 0
        else:
            self.fit(X, y, sample_weight)
            steps_before = self.n_eb_iterations_
        converged = self.eb_converged_
        self._tune(1, 0.0)
        self.n_eb_iterations_ += steps_before
        self.eb_converged_ = converged
        return self

    def decay(self, steps: float = 1, *, decay_rate: float | None = None) -> Self:
        """Forgets as if ``steps`` ticks of time passed without observations.

        Every group's counts are multiplied by ``rate ** steps`` (``rate`` is
        ``decay_rate`` or else ``learning_rate``): its posterior
        ``gamma * alpha_g + (1 - gamma) * alpha`` slides toward the prior. Does nothing
        before the first fit.
        """
        rate = check_learning_rate(self.learning_rate if decay_rate is None else decay_rate)
        if not (is_real(steps) and np.isfinite(steps) and float(steps) >= 0):
            raise ValueError(f"steps must be finite and >= 0, got {steps!r}")
        if hasattr(self, "group_counts_"):
            self.group_counts_ = self.group_counts_ * rate ** float(steps)
        return self

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Posterior mean class probabilities of each row's group, shape (n_samples, n_classes).

        Groups never seen get the prior mean; before the first fit it raises
        ``NotFittedError``. Long inputs are scored a chunk of rows at a time (memory beyond
        the output stays one chunk's, and Ctrl-C is answered between chunks).
        """
        width = len(self.__dict__.get("classes_", ()))
        return score_in_chunks(X, self._posterior_mean, output_width=width)

    def _posterior_mean(self, X: ArrayLike) -> np.ndarray:
        alphas = self._posterior_alphas(X)
        proba: np.ndarray = alphas / alphas.sum(axis=1, keepdims=True)
        return proba

    def predict(self, X: ArrayLike) -> np.ndarray:
        """The class with the largest posterior mean (ties to the first class of ``alphas``)."""
        proba = self.predict_proba(X)
        predicted: np.ndarray = self.classes_[np.argmax(proba, axis=1)]
        return predicted

    def sample(self, X: ArrayLike, size: int = 1) -> np.ndarray:
        """Draws class-probability vectors from each row's Dirichlet posterior.

        Returns
        -------
        ndarray of shape (size, n_samples, n_classes)
        """
        whole = isinstance(size, numbers.Integral) and not isinstance(size, (bool, np.bool_))
        if not (whole and size >= 0):  # a fractional size is refused, never truncated
            raise ValueError(f"size must be an integer >= 0, got {size!r}")
        alphas = self._posterior_alphas(X)
        samples: np.ndarray = dirichlet_draws(self.random_state_, alphas, int(size))
        return samples

    # -- internals ---------------------------------------------------------------------

    def _check_declared_classes(self, classes: ArrayLike) -> None:
        """Refuses a ``classes`` argument that names other classes than ``alphas``."""
        named = list(self.alphas)
        given = np.asarray(classes, dtype=object).ravel().tolist()
        if len(set(given)) != len(given) or set(given) != set(named):
            raise ValueError(
                f"classes={given!r} must name the classes of alphas, {named!r}: the "
                "classes of this model are the keys of alphas"
            )

    def _posterior_alphas(self, X: ArrayLike) -> np.ndarray:
        check_is_fitted(self, "group_counts_")
        _check_feature_names(self, X, reset=False)
        index = self._group_codes(X, grow=False)
        alphas = np.tile(self.prior_, (index.shape[0], 1))
        known = index >= 0
        alphas[known] += self.group_counts_[index[known]]
        return alphas

    def _absorb(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None) -> None:
        """Codes groups (new ones appended) and labels, and adds the rows with forgetting."""
        n_rows = _group_column(X)[1]
        labels = _label_indices(y, self.classes_, n_rows)
        weights = check_sample_weight(sample_weight, n_rows)
        known = len(self.groups_)
        codes = self._group_codes(X, grow=True)
        n_groups = self._groups.lengths()[0]
        if n_groups > known:
            self.groups_ = np.fromiter(self._groups.values(0), dtype=object, count=n_groups)
            self.group_counts_ = np.vstack(
                [self.group_counts_, np.zeros((n_groups - known, self.classes_.shape[0]))]
            )
        self.group_counts_ = _core.absorb_group_rows(
            self.group_counts_,
            codes.astype(np.int64),
            labels,
            weights,
            float(self.learning_rate),
        )

    def _group_codes(self, X: ArrayLike, *, grow: bool) -> np.ndarray:
        """The code of every row's group in the group vocabulary (codes by first
        appearance; a group never seen is -2 unless ``grow``); missing groups are refused
        and leave the vocabulary as it was."""
        column, _ = _group_column(X)
        mark = self._groups.mark()
        codes = _encode_column(self._groups, 0, column, grow, "the group column")
        if np.any(codes == -1):
            self._groups.truncate(mark)
            raise ValueError("X holds missing groups (NaN or None): every row needs a group")
        return codes.astype(np.int64)

    def _tune(self, max_iter: int, tol: float) -> None:
        """Minka's (m, s) steps from the current prior on the current counts."""
        prior, log_evidence, n_iter, converged = _core.fit_dirichlet_prior(
            self.group_counts_, self.prior_, max_iter, tol, n_threads(self.n_jobs)
        )
        self.prior_ = prior
        self.log_evidence_ = log_evidence
        self.n_eb_iterations_ = n_iter
        self.eb_converged_ = converged

    @property
    def alphas_(self) -> dict[Hashable, float]:
        """The tuned prior concentration of each class."""
        check_is_fitted(self, "prior_")
        return {label: float(a) for label, a in zip(self.classes_.tolist(), self.prior_)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "groups_" in state and "_groups" not in state:
            # saved before the group vocabulary: the groups in order of first appearance
            groups = _core.Vocabulary(1)
            column = _array_column(np.asarray(state["groups_"], dtype=object), 0)
            _encode_column(groups, 0, column, True, "the group column")
            state = {**state, "_groups": groups}
        super().__setstate__(state)

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.classifier_tags.poor_score = True
        return tags


def dirichlet_draws(rng: np.random.Generator, alphas: np.ndarray, size: int) -> np.ndarray:
    """``size`` draws from the Dirichlet of every row of ``alphas``, shape
    ``(size, *alphas.shape)``, computed in log space.

    A Dirichlet draw is a vector of independent gamma draws ``G_k ~ Gamma(alpha_k)``
    normalised to sum 1. For a small ``alpha_k`` (1e-3 after tuning on pure groups)
    ``G_k`` underflows to 0 in most draws, and a row of zeros normalises to NaN. So each
    gamma draw is kept as its logarithm, with ``Gamma(a) = Gamma(a + 1) U^(1/a)`` for
    ``a < 1`` (``U`` uniform on (0, 1]), ``ln G = ln Gamma(a + 1) + ln(U) / a``, and the
    vector is normalised with the largest log shifted out: every draw is finite, sums to
    1, and components too small for float64 are exactly 0.

    Where every ``ln(U) / a`` of a draw overflows to -inf (concentrations near 1e-308 and
    below), the draw is the limit it stands for: all its mass on the component with the
    largest ``ln(U_k) / a_k``, compared as ``ln(-ln U_k) - ln a_k``, which is finite. The
    winner is then ``k`` with probability ``a_k / sum(a)``, as in the Dirichlet's limit.
    """
    shape = (size, *alphas.shape)
    small = alphas < 1.0
    boosted = np.where(small, alphas + 1.0, alphas)
    with np.errstate(divide="ignore"):
        log_gamma = np.log(rng.standard_gamma(boosted, size=shape))
    uniform = 1.0 - rng.random(size=shape)  # in (0, 1]
    with np.errstate(divide="ignore", over="ignore"):
        log_gamma += np.where(small, np.log(uniform) / alphas, 0.0)
    largest = log_gamma.max(axis=-1, keepdims=True)
    underflowed = np.isneginf(largest[..., 0])
    if underflowed.any():
        with np.errstate(divide="ignore"):
            race = np.log(-np.log(uniform[underflowed])) - np.log(
                np.broadcast_to(alphas, shape)[underflowed]
            )
        limit = np.full(race.shape, -np.inf)
        limit[np.arange(race.shape[0]), np.argmin(race, axis=-1)] = 0.0
        log_gamma[underflowed] = limit
        largest[underflowed] = 0.0
    log_gamma -= largest
    draws = np.exp(log_gamma)
    normalised: np.ndarray = draws / draws.sum(axis=-1, keepdims=True)
    return normalised


def _check_class_key(key: Any) -> None:
    """Refuses a key of ``alphas`` that is not a scalar class label: numpy reads a tuple
    (or any sequence) as a row of labels, which failed with an "inhomogeneous shape"
    ValueError or made the classes a 2-D array."""
    try:
        scalar = not isinstance(key, (tuple, list, np.ndarray)) and np.ndim(key) == 0
    except (TypeError, ValueError):
        scalar = False
    if not scalar:
        raise ValueError(
            f"the keys of alphas are the class labels, which must be scalars (numbers, "
            f"strings, ...): got the key {key!r}, a {type(key).__name__}"
        )


def _as_label_array(labels: np.ndarray) -> np.ndarray:
    """Class labels with a plain dtype when they share one (ints stay ints).

    numpy makes strings of numbers mixed with strings, after which the number keys would
    never match a label: such labels stay objects.
    """
    converted = np.asarray(labels.tolist())
    if converted.dtype.kind == "U" and not all(isinstance(c, str) for c in labels):
        return labels
    return converted if converted.dtype.kind in "iufbU" else labels


def _group_column(X: ArrayLike) -> tuple[tuple[Any, ...], int]:
    """The one grouping column of ``X`` as a column spec of the encoder (strings, Arrow and
    ``category`` columns read as they are) and the number of rows; rejects other shapes."""
    if isinstance(X, pd.DataFrame):
        if X.shape[1] != 1:
            raise ValueError(
                f"X must have shape (n_samples, 1), one grouping column; got shape {X.shape}"
            )
        if X.shape[0] == 0:
            raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
        return _pandas_column(X.iloc[:, 0], 0), X.shape[0]
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise TypeError("sparse input is not supported: the grouping column must be dense")
    refuse_non_table(X)
    array = np.asarray(X)
    if array.dtype.kind == "U" and not isinstance(X, np.ndarray):
        array = np.asarray(X, dtype=object)
    if array.dtype.kind == "c":
        raise ValueError("Complex data not supported")
    if array.ndim != 2 or array.shape[1] != 1:
        raise ValueError(
            f"X must have shape (n_samples, 1), one grouping column; got shape {array.shape}"
        )
    if array.shape[0] == 0:
        raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
    return _array_column(array[:, 0], 0), array.shape[0]


def _label_indices(y: ArrayLike, classes: np.ndarray, n_rows: int) -> np.ndarray:
    """The index in ``classes`` of every label; ValueError for a label not among them."""
    if y is None:
        raise ValueError(
            "EmpiricalBayesDirichletClassifier requires y to be passed, but the target y is None"
        )
    labels = labels_as_array(y)
    if labels.ndim != 1 or labels.shape[0] != n_rows:
        raise ValueError(f"y must have shape ({n_rows},), got {labels.shape}")
    index = pd.Index(classes).get_indexer(pd.Index(labels))
    if np.any(index < 0):
        unknown = pd.unique(labels[index < 0])[:5].tolist()
        raise ValueError(f"y holds labels {unknown} that are not keys of alphas")
    indices: np.ndarray = index.astype(np.int64)
    return indices
