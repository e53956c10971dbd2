"""Synthetic categorical data generated on the spot (no download)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils import check_random_state

from ._params import StrictInterval, validated_arguments

#: Whole numbers of at least 1 (not bools), and finite reals of at least 0.
_COUNT = StrictInterval(Integral, 1, None, closed="left")
_NON_NEGATIVE = StrictInterval(Real, 0, None, closed="left")


@validated_arguments(
    {
        "n_samples": [_COUNT],
        "n_features": [_COUNT],
        "n_classes": [_COUNT],
        "max_cardinality": [StrictInterval(Integral, 2, None, closed="left")],
        "zipf_exponent": [_NON_NEGATIVE],
        "class_dispersion": [_NON_NEGATIVE],
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

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), int64
    y : ndarray of shape (n_samples,), int64 in 0 .. n_classes - 1
    """
    rng = check_random_state(random_state)
    if class_weights is None:
        class_weights = np.arange(n_classes, 0, -1, dtype=float)
    class_weights = np.asarray(class_weights, dtype=float)
    if not (
        class_weights.shape == (n_classes,)
        and np.all(np.isfinite(class_weights))
        and np.all(class_weights >= 0)
        and class_weights.sum() > 0
    ):
        raise ValueError(
            f"class_weights must hold n_classes={n_classes} finite, non-negative weights "
            f"with a positive sum, got {class_weights.tolist()}"
        )
    class_weights = class_weights / class_weights.sum()
    y = rng.choice(n_classes, size=n_samples, p=class_weights)
    cardinalities = np.unique(
        np.round(np.geomspace(2, max_cardinality, n_features)).astype(np.int64)
    )
    cardinalities = np.resize(cardinalities, n_features)
    X = np.empty((n_samples, n_features), dtype=np.int64)
    for f, k in enumerate(cardinalities):
        base = 1.0 / np.arange(1, k + 1) ** zipf_exponent
        for c in range(n_classes):
            rows = np.flatnonzero(y == c)
            weights = base * np.exp(class_dispersion * rng.standard_normal(k))
            cdf = np.cumsum(weights)
            draws = rng.random(rows.shape[0]) * cdf[-1]
            X[rows, f] = np.minimum(np.searchsorted(cdf, draws, side="right"), k - 1)
    return X, y.astype(np.int64)


@validated_arguments(
    {
        "n_samples": [_COUNT],
        "n_features": [_COUNT],
        "n_values": [StrictInterval(Integral, 2, None, closed="left")],
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
        Categories per feature.
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
