"""What every hebnb classifier shares: parameter checks, the thread budget, and
``predict`` / ``predict_proba`` / ``predict_log_proba`` written once over
``predict_joint_log_proba``."""

from __future__ import annotations

import functools
import numbers
from abc import abstractmethod
from collections.abc import Sequence
from numbers import Real
from typing import Any, ClassVar

import numpy as np
from joblib import cpu_count, effective_n_jobs
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import Tags
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._encoding import CategoryEncoder, check_sample_weight, check_table_size, encode_labels
from ._params import N_JOBS, ClassProbabilities, ConcentrationBounds, StrictInterval, StrOptions


def n_threads(n_jobs: object) -> int:
    """scikit-learn's ``n_jobs`` convention as a thread count (None -> 1, -1 -> all cores).

    Never more than the cores this process may use: results do not depend on the thread
    count, and the core keeps one pool per count, so ``n_jobs=2000`` would otherwise start
    (and keep) 2000 threads.
    """
    is_integer = isinstance(n_jobs, numbers.Integral) and not isinstance(n_jobs, bool)
    if n_jobs is not None and (not is_integer or n_jobs == 0):
        raise ValueError(f"n_jobs must be a non-zero integer or None, got {n_jobs!r}")
    wanted = int(effective_n_jobs(n_jobs))  # None: 1, or a joblib parallel_config's n_jobs
    return 1 if wanted <= 1 else max(1, min(wanted, _cores()))


@functools.cache
def _cores() -> int:
    """The cores this process may use (affinity and cgroup quota), asked once."""
    cores: int = cpu_count()
    return cores


def is_real(value: object) -> bool:
    """A real number that is not a bool (True is not a concentration or a rate)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_class_prior(class_prior: object, n_classes: int) -> np.ndarray | None:
    """``class_prior`` as float64 once the classes are known: one probability per class.

    Its values are checked with the other parameters (``ClassProbabilities``); this adds the
    length, which needs the labels, and runs before any counting.
    """
    if class_prior is None:
        return None
    prior = np.asarray(class_prior, dtype=np.float64)
    if prior.shape != (n_classes,):
        raise ValueError(
            f"Number of priors must match number of classes: got {prior.size} priors for "
            f"{n_classes} classes"
        )
    return prior


def concentration_interval(bounds: Sequence[float]) -> tuple[float, float]:
    """``concentration_bounds`` as the core takes it (checked by ``ConcentrationBounds``)."""
    return float(bounds[0]), float(bounds[1])


def class_log_prior(class_count: np.ndarray, *, fit_prior: bool, class_prior: object) -> np.ndarray:
    """ln pi_c: the Laplace prior (N_c + 1) / (S + C) of SPEC, uniform, or the user's."""
    n_classes = class_count.shape[0]
    prior = check_class_prior(class_prior, n_classes)
    if prior is not None:
        with np.errstate(divide="ignore"):
            log_prior: np.ndarray = np.log(prior)
        return log_prior
    if not fit_prior:
        return np.full(n_classes, -np.log(n_classes))
    laplace: np.ndarray = np.log(class_count + 1.0) - np.log(class_count.sum() + n_classes)
    return laplace


#: The constraints of the parameters every categorical classifier has (scikit-learn's
#: ``_parameter_constraints``); each estimator adds its own.
SHARED_CONSTRAINTS: dict[str, list[object]] = {
    "min_count": [StrictInterval(Real, 0, None, closed="left")],
    "concentration_bounds": [ConcentrationBounds()],
    "fit_prior": ["boolean"],
    "class_prior": [ClassProbabilities(), None],
    "handle_unknown": [StrOptions({"ignore", "error"})],
    "n_jobs": N_JOBS,
    "learning_rate": [StrictInterval(Real, 0, 1, closed="right")],
    "categories": [StrOptions({"auto"}), list, tuple],
}


class CategoricalClassifier(ClassifierMixin, BaseEstimator):
    """Base of the categorical classifiers: subclasses implement ``_joint_log_likelihood``
    and declare ``_parameter_constraints`` (checked by ``_fit_context`` before any work).

    ``categories_`` is computed from the vocabulary on first access (a stream of
    ``partial_fit`` calls never builds it unless asked).
    """

    _parameter_constraints: ClassVar[dict[str, list[object]]] = {}

    #: How the encoder numbers categories: "sorted" (rank among the sorted categories) or
    #: "insertion" (order of first appearance, codes never move as the vocabulary grows).
    _code_order = "sorted"

    def __getattr__(self, name: str) -> Any:
        # only called when ordinary lookup fails: fitted attributes computed on demand
        state = self.__dict__
        if name == "categories_" and "_encoder" in state:
            state["categories_"] = state["_encoder"].categories
            return state["categories_"]
        if name in self._deferred_attributes() and state.get("_unsolved"):
            self._solve_deferred()
            return state[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @classmethod
    def _deferred_attributes(cls) -> frozenset[str]:
        """Fitted attributes a subclass computes only when they are first used."""
        return frozenset()

    def _solve_deferred(self) -> None:  # pragma: no cover - subclasses that defer
        raise NotImplementedError

    def _new_encoder(self) -> CategoryEncoder:
        return CategoryEncoder(
            order=self._code_order, categories=self.__dict__.get("categories", "auto")
        )

    def _training_data(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None, threads: int
    ) -> tuple[CategoryEncoder, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(encoder, codes (F, S), classes, class index per row, weights)`` of a training
        set: categories learned, labels at least two classes, ``class_prior`` one per
        class, weights checked, and the (classes x categories) tables within memory."""
        encoder = self._new_encoder()
        codes = encoder.fit_transform(X, n_threads=threads)
        classes, labels = encode_labels(y, codes.shape[1])
        if classes.shape[0] < 2:
            raise ValueError(
                f"The number of classes has to be greater than one; got {classes.shape[0]} class"
            )
        check_class_prior(self.class_prior, classes.shape[0])
        weights = check_sample_weight(sample_weight, codes.shape[1])
        check_table_size(classes.shape[0], encoder.offsets[-1])
        return encoder, codes, classes, labels, weights

    def _encode(self, X: ArrayLike) -> tuple[np.ndarray, int]:
        """Codes ``(F, S)`` of a table to score, and the thread count to score it with."""
        threads = n_threads(self.n_jobs)
        encoded = self._encoder.transform(
            X, handle_unknown=self.handle_unknown, n_threads=threads, owner=type(self).__name__
        )
        return encoded.codes, threads

    def _learn_vocabulary(self, encoder: CategoryEncoder, classes: np.ndarray) -> None:
        """Keeps the encoder and sets the fitted attributes that describe the input."""
        self._encoder = encoder
        self.classes_ = classes
        self.__dict__.pop("categories_", None)  # recomputed from the vocabulary when asked
        self.n_categories_ = np.asarray(encoder.cardinalities, dtype=np.int64)
        self.n_features_in_ = encoder.n_features
        if encoder.feature_names is not None:
            self.feature_names_in_ = encoder.feature_names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    @abstractmethod
    def _joint_log_likelihood(self, X: ArrayLike) -> np.ndarray:
        """Unnormalised ``ln P(c, x)`` of each row, shape (n_samples, n_classes)."""

    def predict_joint_log_proba(self, X: ArrayLike) -> np.ndarray:
        """Joint log-probability ``ln P(c, x)`` of each row and class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes), columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        return self._joint_log_likelihood(X)

    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """Log posterior class probabilities, shape (n_samples, n_classes)."""
        joint = self.predict_joint_log_proba(X)
        return _core.log_posterior(joint, n_threads(self.n_jobs))

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Posterior class probabilities, shape (n_samples, n_classes); rows sum to 1."""
        proba: np.ndarray = np.exp(self.predict_log_proba(X))
        return proba

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Most probable class of each row (ties go to the first class in ``classes_``)."""
        joint = self.predict_joint_log_proba(X)
        predicted: np.ndarray = self.classes_[np.argmax(joint, axis=1)]
        return predicted

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True
        tags.classifier_tags.poor_score = True
        return tags
