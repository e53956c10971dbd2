"""Independent references for the text and binary models: the Dirichlet-multinomial
evidence written with scipy's gammaln and maximised by scipy, and the smoothed
probabilities in plain numpy."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import gammaln

LOW, HIGH = 1e-2, 1e4


def log_evidence(m: float, counts: np.ndarray, mean: np.ndarray) -> float:
    """l(m) = ln G(m) - ln G(N + m) + sum_v [ln G(n_v + m mu_v) - ln G(m mu_v)] (SPEC eq. 5)."""
    cells = counts > 0
    n, mu = counts[cells], mean[cells]
    total = counts.sum()
    return float(gammaln(m) - gammaln(total + m) + np.sum(gammaln(n + m * mu) - gammaln(m * mu)))


def maximise(counts: np.ndarray, mean: np.ndarray) -> tuple[float, float]:
    """(m_hat, l(m_hat)) over [LOW, HIGH]: a grid over ln m picks the best region, scipy's
    bounded Brent refines it; the ends are candidates too."""
    grid = np.linspace(np.log(LOW), np.log(HIGH), 200)
    values = [log_evidence(np.exp(t), counts, mean) for t in grid]
    best = int(np.argmax(values))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    result = minimize_scalar(
        lambda t: -log_evidence(np.exp(t), counts, mean),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-12},
    )
    candidates = [(np.exp(result.x), -result.fun), (LOW, values[0]), (HIGH, values[-1])]
    return max(candidates, key=lambda pair: pair[1])


def assert_is_maximiser(m: float, counts: np.ndarray, mean: np.ndarray) -> None:
    """SPEC's accuracy contract: m within a relative 1e-6 of the maximiser, or l(m) within
    1e-9 |l| of the maximum where l is flat."""
    want_m, want_l = maximise(counts, mean)
    found_l = log_evidence(m, counts, mean)
    close_m = abs(m - want_m) <= 1e-6 * want_m
    close_l = found_l >= want_l - 1e-9 * max(abs(want_l), 1.0)
    assert close_m or close_l, (m, want_m, found_l, want_l)


def smoothed_log(counts: np.ndarray, mean: np.ndarray, m: float) -> np.ndarray:
    """ln((n_v + m mu_v) / (N + m))."""
    with np.errstate(divide="ignore"):
        return np.log(counts + m * mean) - np.log(counts.sum() + m)
