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
    safe_mean = np.where(positive, mean, 1.0)
    log_posterior = np.empty((GRID.shape[0], n_classes, len(sizes)))
    for g, u in enumerate(GRID):
        m = scale * np.exp(u)
        pseudo = m[:, feature] * safe_mean
        cell_terms = np.where(positive, gammaln(counts + pseudo) - gammaln(pseudo), 0.0)
        log_evidence = gammaln(m) - gammaln(totals + m) + _feature_sums(cell_terms, offsets)
        log_posterior[g] = log_evidence + LOG_PRIOR[g]
    weights = np.exp(log_posterior - logsumexp(log_posterior, axis=0))
    theta = np.zeros_like(counts)
    for g, u in enumerate(GRID):
        m = scale * np.exp(u)
        theta += (
            weights[g][:, feature]
            * (counts + m[:, feature] * mean)
            / (totals[:, feature] + m[:, feature])
        )
    with np.errstate(divide="ignore"):
        table = np.log(theta)
    return np.where(averaged[:, feature], table, plug_in_table)
