"""The predictive averaged over the posterior of the concentration (small-data calibration).

Type-II ML plugs the single most likely concentration ``m_hat`` into the predictive
``theta_v(m) = (N_v + m mu_v) / (N + m)``. When a class puts all its rows on one value of
a feature, the evidence keeps rising as ``m -> 0``, so ``m_hat`` sits at the lower bound
and every other value gets a probability of order ``1e-5``, although the evidence is
nearly flat over a wide range of ``m`` and larger ``m`` are almost as likely. Averaging
the predictive over the posterior of ``m`` keeps that uncertainty::

    theta_v = integral theta_v(m) p(m | N) dm,   p(m | N) ~ evidence(m) p(m)

(the Dirichlet-multinomial evidence of SPEC). The hyperprior is the uniform shrinkage
prior: the shrinkage fraction ``B = m / (N + m)``, the weight the predictive gives to the
prior mean, is uniform on (0, 1) (Christiansen and Morris 1997; Daniels 1999). It is
proper, has no parameter, and is invariant to the scale of the counts; in
``u = ln(m / N)`` its density is ``e^u / (1 + e^u)^2``, a standard logistic. The integral
over ``u`` is a midpoint rule on a fixed grid (``u`` in [-14, 14], step 0.5): the
integrand is smooth in ``u`` and the logistic tails beyond the grid hold less than
``1e-6`` of the prior mass.

The cost is two passes of ``G = 56`` grid points over the ``(C, sum K_f)`` count table,
independent of the number of rows.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln, logsumexp

FloatArray = npt.NDArray[np.float64]

#: The quadrature nodes in u = ln(m / N): midpoints of [-14, 14] in steps of 0.5.
GRID = np.arange(-14.0, 14.0, 0.5) + 0.25
#: ln of the uniform-shrinkage prior density in u (a standard logistic), at the nodes.
LOG_PRIOR = GRID - 2.0 * np.logaddexp(0.0, GRID)


def _feature_sums(table: FloatArray, offsets: list[int]) -> FloatArray:
    """Per-feature sums of a ``(C, sum K_f)`` table: ``(C, F)`` (0 for an empty feature)."""
    cumulative = np.concatenate([np.zeros((table.shape[0], 1)), np.cumsum(table, axis=1)], axis=1)
    sums: FloatArray = cumulative[:, offsets[1:]] - cumulative[:, offsets[:-1]]
    return sums


def averaged_log_probability_table(
    counts: FloatArray,
    prior_mean: FloatArray,
    offsets: list[int],
    averaged: npt.NDArray[np.bool_],
    plug_in_table: FloatArray,
) -> FloatArray:
    """``ln theta`` ``(C, sum K_f)`` with the predictive averaged over the posterior of m.

    Parameters
    ----------
    counts : ndarray of shape (n_classes, sum K_f)
        Weighted counts ``N[c, f, v]``.
    prior_mean : ndarray of shape (sum K_f,)
        ``mu_f`` of every category.
    offsets : list of int
        Where each feature's columns start.
    averaged : ndarray of bool, shape (n_classes, n_features)
        The (class, feature) distributions to average; the others keep their
        ``plug_in_table`` entries (the low-count fallback m = K_f).
    plug_in_table : ndarray of shape (n_classes, sum K_f)
        ``ln theta`` at the plug-in concentrations.

    Returns
    -------
    ndarray of shape (n_classes, sum K_f)
    """
    n_classes = counts.shape[0]
    sizes = np.diff(offsets)
    feature = np.repeat(np.arange(len(sizes)), sizes)
    totals = _feature_sums(counts, offsets)  # N[c, f]
    scale = np.maximum(totals, 1.0)  # m = N e^u (a feature never seen in a class: N = 1)
    mean = np.broadcast_to(prior_mean, counts.shape)
    positive = mean > 0  # a zero-mean category carries no evidence and stays -inf
    with np.errstate(divide="ignore"):
        log_mean = np.log(np.where(positive, mean, 1.0))
    seen = counts > 0
    log_posterior = np.empty((GRID.shape[0], n_classes, len(sizes)))
    with np.errstate(over="ignore", invalid="ignore"):
        for g, u in enumerate(GRID):
            m = scale * np.exp(u)
            cell_terms = np.where(
                positive & seen, _log_rising(counts, np.log(m)[:, feature] + log_mean), 0.0
            )
            log_evidence = gammaln(m) - gammaln(totals + m) + _feature_sums(cell_terms, offsets)
            log_posterior[g] = log_evidence + LOG_PRIOR[g]
        normaliser = logsumexp(log_posterior, axis=0)
        log_weights = log_posterior - normaliser
        # ln theta = ln sum_g w_g (N_v + m_g mu_v) / (N + m_g), summed in log space: with
        # tiny means (a category weighted 1e-300 beside 1e20) the terms are subnormal
        # numbers, which keep only a few digits
        with np.errstate(divide="ignore"):
            log_counts = np.log(counts)
        table = np.full(counts.shape, -np.inf)
        for g, u in enumerate(GRID):
            log_m = np.log(scale) + u
            log_numerator = np.logaddexp(log_counts, log_m[:, feature] + log_mean)
            log_numerator = np.where(positive | seen, log_numerator, -np.inf)
            log_total = np.logaddexp(np.log(np.maximum(totals, 0.0)), log_m)
            table = np.logaddexp(
                table, log_weights[g][:, feature] + log_numerator - log_total[:, feature]
            )
    # a (class, feature) whose posterior cannot be normalised in float64 (counts near the
    # largest float, where m = N e^u overflows) keeps its plug-in entries
    usable = averaged & np.isfinite(normaliser) & ~np.isnan(log_posterior).any(axis=0)
    return np.where(usable[:, feature], table, plug_in_table)


#: Below this, ``ln Gamma(a) = -ln a - gamma_E a + O(a^2)`` is ``-ln a`` to double precision.
_TINY = 1e-30


def _log_rising(counts: FloatArray, log_pseudo: FloatArray) -> FloatArray:
    """``ln Gamma(n + a) - ln Gamma(a)`` with ``a = exp(log_pseudo)``, for ``n > 0``.

    A pseudo-count ``a = m mu`` can underflow to 0 (a category whose prior mean is a
    subnormal number, from weights such as 1e-300 beside 1e20) where ``ln Gamma(a)`` is
    still ``-ln a``, a finite number: below ``_TINY`` the term is taken from ``ln a``
    directly (``ln Gamma(n + a)`` then is ``ln Gamma(n)`` to double precision).
    """
    pseudo = np.exp(log_pseudo)
    tiny = pseudo < _TINY
    log_gamma_pseudo = np.where(tiny, -log_pseudo, gammaln(np.where(tiny, 1.0, pseudo)))
    result: FloatArray = gammaln(counts + pseudo) - log_gamma_pseudo
    return result
