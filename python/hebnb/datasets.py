"""Synthetic categorical data generated on the spot (no download)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils import check_random_state


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
