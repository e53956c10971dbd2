"""Synthetic categorical data generated on the spot (no download)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils import check_random_state

from ._memory import memory_budget_bytes
from ._params import StrictInterval, validated_arguments

#: Whole numbers of at least 1 (not bools), and finite reals of at least 0.
_COUNT = StrictInterval(Integral, 1, None, closed="left")
_NON_NEGATIVE = StrictInterval(Real, 0, None, closed="left")

#: The most categories a feature may have: hebnb codes categories as int32.
MAX_CARDINALITY = 2**31 - 1

#: The largest ``class_dispersion``: a class's weight ``exp(class_dispersion * z)`` of a
#: standard normal ``z`` stays far below float64's overflow (``exp(709.8)``) for every
#: value of up to ``MAX_CARDINALITY`` (``z`` would need to exceed 13), where a larger
#: dispersion overflowed to inf and sent every value of a class to one category. At 50 a
#: class already puts all its mass on a handful of values.
MAX_CLASS_DISPERSION = 50.0


def _check_memory(what: str, n_bytes: int) -> None:
    """Refuses, naming the parameters ``what`` describes, arrays of ``n_bytes`` beyond the
    memory this process may use (numpy would fail with "array is too big", "Maximum
    allowed dimension exceeded" or an allocation error that names no parameter)."""
    budget = memory_budget_bytes()
    if n_bytes > budget:
        raise ValueError(
            f"{what} need about {n_bytes / 2**30:.3g} GiB, beyond the "
            f"{budget / 2**30:.3g} GiB of memory this process may use"
        )


@validated_arguments(
    {
        "n_samples": [_COUNT],
        "n_features": [_COUNT],
        "n_classes": [_COUNT],
        "max_cardinality": [StrictInterval(Integral, 2, MAX_CARDINALITY, closed="both")],
        "zipf_exponent": [_NON_NEGATIVE],
        "class_dispersion": [StrictInterval(Real, 0, MAX_CLASS_DISPERSION, closed="both")],
        "class_weights": ["array-like", None],
        "random_state": ["random_state"],
    },
)
def make_high_cardinality(
    n_samples: int = 20_000,
    n_features: int = 10,
    *,
    n_classes: int = 3,
    max_cardinality: int = 5_000,
    zipf_exponent: float = 1.1,
    class_dispersion: float = 1.0,
    class_weights: ArrayLike | None = None,
    random_state: int | np.random.RandomState | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Categorical features with Zipf-distributed values whose frequencies vary by class.

    Feature ``f`` takes values ``0 .. K_f - 1`` with ``K_f`` spread log-uniformly from 2 to
    ``max_cardinality``. Every class draws a feature from the Zipf law ``1 / (v + 1) **
    zipf_exponent`` tilted by its own log-normal factor ``exp(class_dispersion * z[c, v])``:
    the class-conditional distributions share a popular head but differ value by value,
    the over-dispersion that empirical-Bayes smoothing measures.

    Parameters
    ----------
    n_samples, n_features, n_classes : int
        At least 1 each (``X`` must fit in memory).
    max_cardinality : int, default=5000
        Categories of the widest feature, from 2 to ``2**31 - 1`` (hebnb's int32 codes;
        every feature's value weights must fit in memory too).
    zipf_exponent : float, default=1.1
        Finite, at least 0 (a huge exponent puts every value on category 0).
    class_dispersion : float, default=1.0
        In [0, 50]: beyond, the classes' tilts overflow float64.
    class_weights : array-like of shape (n_classes,), default=None
        Finite, non-negative weights with a positive sum, normalised to the class
        probabilities (None: ``n_classes, ..., 2, 1``).
    random_state : int, RandomState or None, default=0

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), int64
    y : ndarray of shape (n_samples,), int64 in 0 .. n_classes - 1
    """
    _check_memory(
        f"n_samples={n_samples} x n_features={n_features} int64 values",
        8 * n_samples * (n_features + 3),
    )
    _check_memory(f"max_cardinality={max_cardinality} value weights", 32 * max_cardinality)
    _check_memory(f"n_classes={n_classes} class weights", 16 * n_classes)
    rng = check_random_state(random_state)
    class_probabilities = _class_probabilities(class_weights, n_classes)
    y = rng.choice(n_classes, size=n_samples, p=class_probabilities)
    cardinalities = np.unique(
        np.round(np.geomspace(2, max_cardinality, n_features)).astype(np.int64)
    )
    cardinalities = np.resize(cardinalities, n_features)
    X = np.empty((n_samples, n_features), dtype=np.int64)
    # a float power: an int exponent raised the int64 values to an int64 power, which
    # wrapped past 2**63 (zipf_exponent=5 and 10000 categories sent every row to the last)
    exponent = float(zipf_exponent)
    for f, k in enumerate(cardinalities):
        with np.errstate(over="ignore"):  # v ** a beyond float64: the weight 1 / inf = 0
            base = 1.0 / np.arange(1, k + 1) ** exponent
        for c in range(n_classes):
            rows = np.flatnonzero(y == c)
            weights = base * np.exp(class_dispersion * rng.standard_normal(k))
            cdf = np.cumsum(weights)
            draws = rng.random(rows.shape[0]) * cdf[-1]
            X[rows, f] = np.minimum(np.searchsorted(cdf, draws, side="right"), k - 1)
    return X, y.astype(np.int64)


def _class_probabilities(class_weights: ArrayLike | None, n_classes: int) -> np.ndarray:
    """``class_weights`` (None: ``n_classes, ..., 1``) normalised to probabilities; a
    ValueError naming ``class_weights`` unless they are ``n_classes`` finite, non-negative
    weights with a positive sum. Weights whose sum overflows float64 are scaled by their
    largest first."""
    if class_weights is None:
        class_weights = np.arange(n_classes, 0, -1, dtype=float)
    try:
        weights = np.asarray(class_weights, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"class_weights must hold n_classes={n_classes} finite, non-negative weights "
            f"with a positive sum, got {class_weights!r} ({error})"
        ) from None
    if not (
        weights.shape == (n_classes,)
        and np.all(np.isfinite(weights))
        and np.all(weights >= 0)
        and np.any(weights > 0)
    ):
        raise ValueError(
            f"class_weights must hold n_classes={n_classes} finite, non-negative weights "
            f"with a positive sum, got {weights.tolist()}"
        )
    with np.errstate(over="ignore"):
        total = weights.sum()
    if not np.isfinite(total):  # e.g. [1e308] * 3
        weights = weights / weights.max()
        total = weights.sum()
    probabilities: np.ndarray = weights / total
    return probabilities


@validated_arguments(
    {
        "n_samples": [_COUNT],
        "n_features": [_COUNT],
        "n_values": [StrictInterval(Integral, 2, 2**63, closed="both")],
        "block": [StrictInterval(Integral, 2, None, closed="left")],
        "n_signal": [StrictInterval(Integral, 0, None, closed="left")],
        "random_state": [StrictInterval(Integral, 0, None, closed="left")],
    },
)
def make_linked(
    n_samples: int = 2_000,
    n_features: int = 400,
    *,
    n_values: int = 3,
    block: int = 10,
    n_signal: int = 4,
    random_state: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Wide, low-cardinality features in linked blocks, and a class driven by interactions.

    The shape of SNP genotypes or survey answers. Features come in blocks of ``block``
    neighbours: a block's first feature is uniform on ``0 .. n_values - 1`` and every
    other one copies its predecessor with probability 0.7 (like linked markers). The class
    is a logistic draw from the first ``n_signal`` blocks:

    - whether a block's first feature agrees with another feature of the block, an
      interaction that Naive Bayes cannot see and AODE can;
    - plus a weaker main effect of that first feature, so that it is informative on its
      own.

    Parameters
    ----------
    n_samples, n_features : int
    n_values : int, default=3
        Categories per feature, from 2 to ``2**63`` (the values are int64).
    block : int, default=10
        Features per linked block (at least 2).
    n_signal : int, default=4
        Blocks that drive the class (at most ``n_features // block``).
    random_state : int, default=0
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), int64 in 0 .. n_values - 1
    y : ndarray of shape (n_samples,), int64 in {0, 1}
    """
    if block < 2 or n_values < 2 or not 0 <= n_signal <= n_features // block:
        raise ValueError(
            f"make_linked needs block >= 2, n_values >= 2 and 0 <= n_signal <= "
            f"n_features // block; got block={block}, n_values={n_values}, "
            f"n_signal={n_signal}, n_features={n_features}"
        )
    _check_memory(
        f"n_samples={n_samples} x n_features={n_features} int64 values",
        8 * n_samples * (n_features + 3),
    )
    rng = np.random.default_rng(random_state)
    X = np.empty((n_samples, n_features), dtype=np.int64)
    for f in range(n_features):
        if f % block == 0:
            X[:, f] = rng.integers(0, n_values, n_samples)
        else:
            keep = rng.random(n_samples) < 0.7
            X[:, f] = np.where(keep, X[:, f - 1], rng.integers(0, n_values, n_samples))
    score = np.zeros(n_samples)
    for b in range(n_signal):
        first = b * block
        agree = X[:, first] == X[:, first + 1 + b % (block - 1)]
        score += 2.0 * np.where(agree, 1.0, -1.0) * (-1) ** b + 0.8 * (X[:, first] == 0)
    score -= score.mean()
    y = (rng.random(n_samples) < 1 / (1 + np.exp(-score))).astype(np.int64)
    return X, y
