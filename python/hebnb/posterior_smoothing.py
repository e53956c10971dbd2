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
over ``u`` is a midpoint rule. Where the posterior is wide (small data, the case this is
for) its nodes are a fixed grid in steps of 0.5, ``u`` from ``-14 - ln N`` (``N`` the
largest total of the table, at least 1) to 14: the integrand is smooth in ``u``, and the
logistic tail above 14 holds less than ``1e-6`` of the prior mass. Below, the grid goes
as far as ``m = e^-14`` in absolute terms (for totals up to 3e43), not only in units of
``N``: where a class puts all its rows on one value the evidence rises to a limit as
``m -> 0`` and falls once ``m`` exceeds about ``1 / ln N``, so the posterior's bulk sits
near ``u = -ln N - ln ln N``, below -14 from ``N`` of about 1e5 (there a grid stopping at
-14 made an unseen value's probability 77% too large), and what lies below the grid is at
most about ``e^-14 ln N`` of it. With many rows the posterior narrows (its width in ``u``
falls like one over the square root of the counts), and a grid of step 0.5 puts all of
it on two or three nodes: on 60,000 rows of 200 values the predictive was off by up to
12%. So where the Type-II ML maximiser ``m_hat`` is interior and the posterior's width
``sigma`` (from the curvature of the log posterior at ``ln(m_hat / N)``, Laplace's
approximation) is below the grid's step, the nodes are ``ln(m_hat / N) + sigma z`` with
``z`` in [-13.75, 13.75] in steps of 0.5 instead (the prior moves the mode from
``ln(m_hat / N)`` by at most ``sigma^2 / 2``); a node set whose ends do not fall far
below the peak keeps the fixed grid. For a Gaussian-like integrand a midpoint rule's
error falls like ``exp(-2 pi^2 sigma^2 / step^2)``: about 3e-9 at ``sigma = step``.

The cost is three passes of the nodes (56, and two more per factor e of the largest
total) where some posterior is narrow, two otherwise, each over the distinct seen cells
(one entry per class, feature, count and mean; the unseen categories of a distribution
enter through their summed mean), independent of the number of rows. On
high-cardinality features that is far fewer than the ``C sum K_f`` cells of the table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln, logsumexp, polygamma

FloatArray = npt.NDArray[np.float64]

#: The quadrature nodes in u = ln(m / N) of a table whose totals are at most 1: midpoints
#: of [-14, 14] in steps of 0.5 (:func:`quadrature_grid` extends it below for larger ones).
GRID = np.arange(-14.0, 14.0, 0.5) + 0.25
#: The step of GRID: a posterior narrower than this gets nodes of its own.
STEP = 0.5
#: How far below its peak (in log density) a narrow posterior's end nodes must fall.
TAIL_DROP = 20.0
#: The most nodes :func:`quadrature_grid` adds below GRID: ``m`` reaches ``e^-14`` for
#: totals up to ``e^100`` (3e43), and the cost stays bounded beyond.
MOST_EXTRA_NODES = 200


def quadrature_grid(largest_total: float) -> FloatArray:
    """The fixed nodes in u of a table whose largest (class, feature) total is
    ``largest_total``: :data:`GRID`, extended below in steps of :data:`STEP` to
    ``-14 - ln N`` or beyond, so that ``m = N e^u`` reaches ``e^-14`` whatever ``N``
    (see the module notes), by at most :data:`MOST_EXTRA_NODES` nodes."""
    reach = np.log(largest_total) / STEP if largest_total > 1 else 0.0
    extra = int(min(np.ceil(reach), MOST_EXTRA_NODES))
    below = GRID[0] - STEP * np.arange(extra, 0, -1)
    grid: FloatArray = np.concatenate([below, GRID])
    return grid


def narrow_offsets(n_nodes: int) -> FloatArray:
    """The ``n_nodes`` nodes of a narrow posterior, in units of its width about its mode:
    steps of 0.5 centred on 0 (as many as the fixed grid has, which they replace)."""
    offsets: FloatArray = (np.arange(n_nodes, dtype=np.float64) - (n_nodes - 1) / 2) * 0.5
    return offsets


def _log_prior(u: FloatArray) -> FloatArray:
    """ln of the uniform-shrinkage prior density in u (a standard logistic)."""
    result: FloatArray = u - 2.0 * np.logaddexp(0.0, u)
    return result


def feature_sums(table: FloatArray, offsets: list[int]) -> FloatArray:
    """Per-feature sums of a ``(C, sum K_f)`` table: ``(C, F)`` (0 for an empty feature).

    Each feature's columns are summed on their own (not as differences of a running sum,
    which would lose a small feature's sum beside a large one's)."""
    sizes = np.diff(offsets)
    sums = np.zeros((table.shape[0], sizes.shape[0]))
    nonempty = sizes > 0
    if nonempty.any():
        starts = np.asarray(offsets[:-1])[nonempty]
        sums[:, nonempty] = np.add.reduceat(table, starts, axis=1)
    return sums


def averaged_log_probability_table(
    counts: FloatArray,
    prior_mean: FloatArray,
    offsets: list[int],
    averaged: npt.NDArray[np.bool_],
    plug_in_table: FloatArray,
    concentration: FloatArray | None = None,
    bounds: tuple[float, float] = (0.0, np.inf),
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
    concentration : ndarray of shape (n_classes, n_features), default=None
        The Type-II ML maximisers ``m_hat``, where a narrow posterior gets its own nodes
        (None: the fixed grid for every distribution).
    bounds : (float, float)
        The interval ``m_hat`` was searched in: a maximiser at an end is not the
        evidence's peak.

    Returns
    -------
    ndarray of shape (n_classes, sum K_f)

    Notes
    -----
    Only the seen cells are evaluated node by node, each distinct (class, feature, count,
    mean) once: an unseen category's evidence term and predictive are its mean times a
    factor of its (class, feature), so the unseen ones enter through their summed mean.
    On high-cardinality features most cells are unseen and most seen ones hold one or two
    rows, so the cost follows the distinct counts, not ``C sum K_f``.
    """
    sizes = np.diff(offsets)
    feature = np.repeat(np.arange(len(sizes)), sizes)
    totals = feature_sums(counts, offsets)  # N[c, f]
    # m = N e^u, N itself however small (a weighted total below 1 included: clamping it
    # to 1 put the logistic on ln m, another prior); a feature never seen in a class has
    # a flat evidence, any scale
    scale = np.where(totals > 0, totals, 1.0)
    positive = prior_mean > 0  # a zero-mean category carries no evidence and stays -inf
    seen = (counts > 0) & positive
    unseen_mean = feature_sums(np.where(seen | ~positive, 0.0, prior_mean), offsets)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_mean = np.log(np.where(positive, prior_mean, 1.0))
        cells, where_seen = _seen_cells(counts, seen, prior_mean, log_mean, feature, totals)

        def log_posterior_at(nodes: FloatArray) -> FloatArray:
            """The log posterior (up to a constant per distribution) at nodes (G, C, F)."""
            values = np.empty(nodes.shape)
            for g, u in enumerate(nodes):
                values[g] = _log_evidence(
                    totals, unseen_mean, np.log(scale) + u, u=u, cells=cells
                ) + _log_prior(u)
            return values

        grid = quadrature_grid(float(totals.max(initial=0.0)))
        nodes = np.broadcast_to(grid[:, None, None], (grid.shape[0], *totals.shape))
        log_posterior = log_posterior_at(nodes)
        if concentration is not None:
            narrow_nodes = _narrow_nodes(cells, totals, concentration, bounds, grid.shape[0])
            narrow = np.isfinite(narrow_nodes[0])
            if narrow.any():
                narrow_posterior = log_posterior_at(np.where(narrow, narrow_nodes, 0.0))
                peak = narrow_posterior.max(axis=0)
                # the nodes hold the whole posterior: both ends far below its peak
                narrow &= np.isfinite(peak) & (
                    np.maximum(narrow_posterior[0], narrow_posterior[-1]) < peak - TAIL_DROP
                )
                nodes = np.where(narrow, narrow_nodes, nodes)
                log_posterior = np.where(narrow, narrow_posterior, log_posterior)
        normaliser = logsumexp(log_posterior, axis=0)
        log_weights = log_posterior - normaliser
        # ln theta = ln sum_g w_g (N_v + m_g mu_v) / (N + m_g), summed in log space: with
        # tiny means (a category weighted 1e-300 beside 1e20) the terms are subnormal
        # numbers, which keep only a few digits. An unseen category's is
        # ln mu_v + ln sum_g w_g m_g / (N + m_g): the second term once per distribution.
        seen_table = np.full(cells.at.shape, -np.inf)
        unseen_factor = np.full(totals.shape, -np.inf)
        log_totals = np.log(np.where(totals > 0, totals, 0.0))
        for g, u in enumerate(nodes):
            log_m = np.log(scale) + u
            log_total = np.logaddexp(log_totals, log_m)
            flat_log_m = log_m.ravel()[cells.at]
            log_numerator = np.logaddexp(cells.log_counts, flat_log_m + cells.log_mean)
            seen_table = np.logaddexp(
                seen_table,
                log_weights[g].ravel()[cells.at] + log_numerator - log_total.ravel()[cells.at],
            )
            unseen_factor = np.logaddexp(unseen_factor, log_weights[g] + log_m - log_total)
        table = np.where(positive, unseen_factor[:, feature] + log_mean, -np.inf)
        table[where_seen] = seen_table[cells.inverse]
    # a (class, feature) whose posterior cannot be normalised in float64 (counts near the
    # largest float, where m = N e^u overflows) keeps its plug-in entries
    usable = averaged & np.isfinite(normaliser) & ~np.isnan(log_posterior).any(axis=0)
    result: FloatArray = np.where(usable[:, feature], table, plug_in_table)
    return result


def _narrow_nodes(
    cells: _SeenCells,
    totals: FloatArray,
    concentration: FloatArray,
    bounds: tuple[float, float],
    n_nodes: int,
) -> FloatArray:
    """``n_nodes`` nodes ``(G, C, F)`` in u about each posterior's mode ``ln(m_hat / N)``,
    spaced by half its width, where the width (Laplace's approximation) is below ``STEP``; NaN
    elsewhere (a maximiser at a bound, a wide posterior, a width not finite).

    At an interior maximiser ``l'(m_hat) = 0``, so the log posterior's curvature in ``u``
    is ``-m^2 l''(m)`` plus the logistic prior's ``-2 e^u / (1 + e^u)^2``, with
    ``l''(m) = psi'(m) - psi'(N + m) + sum_v mu_v^2 [psi'(n_v + m mu_v) - psi'(m mu_v)]``
    (the sum over seen categories: an unseen one's term is 0).
    """
    m = concentration
    low, high = bounds
    u = np.log(m) - np.log(np.where(totals > 0, totals, 1.0))
    pseudo = m.ravel()[cells.at] * cells.mean
    terms = cells.mean * cells.mean * (polygamma(1, cells.counts + pseudo) - polygamma(1, pseudo))
    second = polygamma(1, m) - polygamma(1, totals + m) + cells.summed(terms, m.shape)
    curvature = -m * m * second + 2.0 * np.exp(u - 2.0 * np.logaddexp(0.0, u))
    width = 1.0 / np.sqrt(curvature)
    narrow = (totals > 0) & (m > low) & (m < high) & (curvature > 0) & (width < STEP)
    narrow &= np.isfinite(u) & np.isfinite(width)
    nodes = u + width * narrow_offsets(n_nodes)[:, None, None]
    return np.where(narrow, nodes, np.nan)


def _log_evidence(
    totals: FloatArray,
    unseen_mean: FloatArray,
    log_m: FloatArray,
    *,
    u: FloatArray,
    cells: _SeenCells,
) -> FloatArray:
    """The log evidence ``(C, F)`` at ``m = exp(log_m)`` (``u = ln(m / N)``, given as
    well: exact where ``log_m - ln N`` would round; ``cells``: the seen cells and what of
    them does not depend on m, :func:`_seen_cells`; ``unseen_mean``: the summed mean of
    each distribution's unseen categories), up to a constant per (class, feature) that
    does not depend on m, computed without cancellation at any scale.

    The evidence ``ln G(m) - ln G(N + m) + sum_v [ln G(n_v + a_v) - ln G(a_v)]``
    (``a_v = m mu_v``) is a difference of numbers of size ``N ln N``: in float64 its
    rounding error (about 1e5 at N = 1e20) swamps its variation in m. Each ``ln G`` is
    split into Stirling's main part and its remainder ``s(z)`` (small, any z > 0); the
    main parts combine, with ``T = N + m`` and ``d_v = (n_v - N mu_v) / (T mu_v)``, into

        sum_v T mu_v h(d_v) - 1/2 [sum_v ln(1 + n_v / a_v) - ln(1 + N / m)]
        + sum_v [s(n_v + a_v) - s(a_v)] - [s(T) - s(m)],

    up to ``sum_v n_v ln mu_v`` (no m in it), with ``h(d) = (1 + d) ln(1 + d) - d >= 0``:
    every term is small where the counts follow the mean (a Kullback-Leibler divergence
    in disguise). The sum over v runs over every category of positive mean, seen or not.

    Each cell's ``T mu_v h(d_v)`` less its limit as ``m -> 0`` (``N mu_v h(n_v / (N mu_v)
    - 1)``; ``N mu_v`` unseen), a constant, is what is summed: where a class puts all its
    rows on one value, that limit is of size ``N`` while the posterior lies at ``m`` of
    order one, where the evidence varies by less than the rounding of ``N`` (nodes of
    equal value, weights that summed beyond 1). For ``m <= N`` a seen cell's difference
    is ``(n_v + a_v) (ln(1 + e^(u + r)) - ln(1 + e^u)) - a_v r`` with ``r = ln(N mu_v /
    n_v)`` and ``a_v = N mu_v e^u``, small with ``m``; an unseen cell's is
    ``-a_v ln(1 + e^-u)`` for any m, so the unseen cells of a distribution add
    ``-N e^u ln(1 + e^-u)`` times their summed mean. Both are written in ``u`` and ``r``,
    not in ``ln m`` and ``ln n_v`` (of size ``ln N``), whose rounding, times ``a_v``, was
    of order 1e-3 at ``N = 1e20``.
    """
    m = np.exp(log_m)
    total = totals + m  # T
    at, counts, mean = cells.at, cells.counts, cells.mean
    n_mu = cells.n_mu
    cell_total = total.ravel()[at]
    log_pseudo = log_m.ravel()[at] + cells.log_mean  # ln a_v
    pseudo = np.exp(log_pseudo)
    log_sum = np.logaddexp(log_pseudo, cells.log_counts)  # ln(n_v + a_v)
    # ln(1 + d_v) = ln(n_v + a_v) - ln(T mu_v)
    log_ratio = log_sum - np.log(cell_total) - cells.log_mean
    large = log_ratio > np.log(2.0)
    d = np.where(large, 0.0, (counts - n_mu) / (cell_total * mean))
    # T mu_v h(d_v) = (n_v + a_v) ln(1 + d_v) - (n_v - N mu_v): that form where d_v > 1
    # (T mu_v may underflow there), the series-safe h elsewhere
    at_large_m = (
        np.where(
            large,
            np.exp(log_sum) * log_ratio - (counts - n_mu),
            cell_total * mean * _h(d),
        )
        - cells.seen_limit
    )
    u_cell = u.ravel()[at]
    pseudo_exact = n_mu * np.exp(u_cell)  # a_v = m mu_v = N mu_v e^u
    r, normal = cells.mean_ratio, cells.normal
    shrink = np.logaddexp(0.0, u_cell + r) - np.logaddexp(0.0, u_cell)  # ln((1+a/n)/(1+m/N))
    at_small_m = (counts + pseudo_exact) * shrink - pseudo_exact * r
    # near the mean (|r| < 1) those two terms, each of size n |r|, cancel to O(r^2): the
    # same difference as n [(1 + x) h(q) - x g(r)], x = e^u, q = x (e^r - 1) / (1 + x),
    # g(r) = 1 + e^r (r - 1) = sum_k (k - 1) r^k / k!, whose terms do not cancel
    near = normal & (np.abs(r) < 1.0)
    r_near = np.where(near, r, 0.0)
    x = np.exp(np.minimum(u_cell, 0.0))
    q = x * np.expm1(r_near) / (1.0 + x)
    g = np.where(np.abs(r_near) < 0.1, _g_series(r_near), 1.0 + np.exp(r_near) * (r_near - 1.0))
    at_small_m = np.where(near, counts * ((1.0 + x) * _h(q) - x * g), at_small_m)
    cell = np.where(u_cell <= 0.0, at_small_m, at_large_m)
    cell += (
        -0.5 * (log_sum - log_pseudo)
        + _stirling_remainder(pseudo + counts, log_sum)
        - _stirling_remainder(pseudo, log_pseudo)
    )
    unseen = -totals * unseen_mean * np.exp(u) * np.logaddexp(0.0, -u)
    # ln(1 + N / m) in u: m itself underflows to 0 for tiny totals far down the grid
    whole = np.where(totals > 0, 0.5 * np.logaddexp(0.0, -u), 0.0)
    whole -= _stirling_remainder(total, np.log(total))
    whole += _stirling_remainder(m, log_m)
    result: FloatArray = cells.summed(cell, totals.shape) + unseen + whole
    return result


@dataclass(frozen=True)
class _SeenCells:
    """The seen cells of a table (positive count and mean), one entry per distinct
    (class, feature, count, mean), with what :func:`_log_evidence` reads of them that
    does not depend on m, computed once per table rather than at every node."""

    #: The flat (class, feature) index ``c F + f`` of each entry.
    at: npt.NDArray[np.intp]
    #: How many cells the entry stands for.
    repeats: FloatArray
    #: ``n_v``, ``mu_v`` and their logarithms.
    counts: FloatArray
    mean: FloatArray
    log_counts: FloatArray
    log_mean: FloatArray
    #: ``N mu_v``.
    n_mu: FloatArray
    #: ``r = ln(N mu_v / n_v)``.
    mean_ratio: FloatArray
    #: Entries whose ratio ``N mu_v / n_v`` is a normal number (``r`` from it, not logs).
    normal: npt.NDArray[np.bool_]
    #: ``T mu_v h(d_v)`` at ``m -> 0``: ``N mu_v h(n_v / (N mu_v) - 1)``, in
    #: :func:`_log_evidence`'s two forms (the series-safe ``h`` where ``n_v <= 2 N mu_v``,
    #: ``n_v ln(n_v / (N mu_v)) - (n_v - N mu_v)`` beyond).
    seen_limit: FloatArray
    #: For each seen cell (in ``np.nonzero`` order), its entry.
    inverse: npt.NDArray[np.intp]

    def summed(self, values: FloatArray, shape: tuple[int, ...]) -> FloatArray:
        """``values`` of the entries summed over the cells of each (class, feature)."""
        size = int(np.prod(shape))
        sums = np.bincount(self.at, self.repeats * values, minlength=size)
        result: FloatArray = sums.astype(np.float64, copy=False).reshape(shape)
        return result


def _seen_cells(
    counts: FloatArray,
    seen: npt.NDArray[np.bool_],
    prior_mean: FloatArray,
    log_mean: FloatArray,
    feature: npt.NDArray[np.intp],
    totals: FloatArray,
) -> tuple[_SeenCells, tuple[npt.NDArray[np.intp], ...]]:
    """The :class:`_SeenCells` of a table, and where its seen cells are (``np.nonzero``)."""
    where_seen = np.nonzero(seen)
    classes, columns = where_seen
    at = classes * totals.shape[1] + feature[columns]
    keys = np.column_stack([at.astype(np.float64), counts[where_seen], prior_mean[columns]])
    distinct, first, inverse, repeats = np.unique(
        keys, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    at, columns = at[first], columns[first]
    cell_counts, mean = distinct[:, 1], distinct[:, 2]
    log_counts, cell_log_mean = np.log(cell_counts), log_mean[columns]
    cell_totals = totals.ravel()[at]
    n_mu = cell_totals * mean
    log_totals = np.log(cell_totals)
    # r from the ratio itself where it is a normal number, else in logs
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        ratio = n_mu / cell_counts
    normal = np.isfinite(ratio) & (ratio > np.finfo(np.float64).tiny)
    mean_ratio = np.where(
        normal, np.log(np.where(normal, ratio, 1.0)), log_totals + cell_log_mean - log_counts
    )
    log_ratio = log_counts - log_totals - cell_log_mean
    large = log_ratio > np.log(2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(large | (n_mu <= 0), 0.0, (cell_counts - n_mu) / np.where(n_mu > 0, n_mu, 1.0))
    seen_limit = np.where(large, cell_counts * log_ratio - (cell_counts - n_mu), n_mu * _h(d))
    cells = _SeenCells(
        at=at,
        repeats=repeats.astype(np.float64),
        counts=cell_counts,
        mean=mean,
        log_counts=log_counts,
        log_mean=cell_log_mean,
        n_mu=n_mu,
        mean_ratio=mean_ratio,
        normal=normal,
        seen_limit=seen_limit,
        inverse=inverse.reshape(-1),
    )
    return cells, where_seen


def _g_series(r: FloatArray) -> FloatArray:
    """``1 + e^r (r - 1) = sum_{k >= 2} (k - 1) r^k / k!`` by its series, for ``|r| < 0.1``
    (the terms beyond ``r^9`` are below 1e-13 of the sum)."""
    coefficients = [1 / 2, 1 / 3, 1 / 8, 1 / 30, 1 / 144, 1 / 840, 1 / 5760, 1 / 45360]
    series = np.zeros_like(r)
    for coefficient in reversed(coefficients):
        series = r * (coefficient + series)
    result: FloatArray = r * series
    return result


def _h(d: FloatArray) -> FloatArray:
    """``(1 + d) ln(1 + d) - d`` for ``d >= -1``, by its series near 0."""
    small = np.abs(d) < 1e-3
    ds = np.where(small, d, 0.0)
    series = ds * ds * (1 / 2 - ds * (1 / 6 - ds * (1 / 12 - ds / 20)))
    dl = np.where(small | (d <= -1.0), 0.5, d)
    direct = np.where(d <= -1.0, 1.0, (1.0 + dl) * np.log1p(dl) - dl)
    result: FloatArray = np.where(small, series, direct)
    return result


#: Below this, ``ln Gamma(z) = -ln z - gamma_E z + O(z^2)`` is ``-ln z`` to double precision.
_TINY = 1e-30
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


def _stirling_remainder(z: FloatArray, log_z: FloatArray) -> FloatArray:
    """``s(z) = ln Gamma(z) - (z - 1/2) ln z + z - ln(2 pi) / 2`` for ``z > 0`` given
    with its logarithm (``z`` may have underflowed to 0): the asymptotic series from 10
    on (error below 1e-12), ``ln Gamma`` below (``-ln z`` under ``_TINY``)."""
    large = z >= 10.0
    inverse = 1.0 / np.where(large, z, 10.0)
    square = inverse * inverse
    series = inverse * (1 / 12 - square * (1 / 360 - square * (1 / 1260 - square / 1680)))
    z_small = np.where(large, 1.0, z)
    tiny = z_small < _TINY
    log_gamma = np.where(tiny, -log_z, gammaln(np.where(tiny, 1.0, z_small)))
    small = log_gamma - (z_small - 0.5) * log_z + z_small - _HALF_LOG_2PI
    result: FloatArray = np.where(large, series, small)
    return result
