"""``concentration_estimate="posterior-average"``: the predictive averaged over the
posterior of the concentration under the uniform shrinkage prior, against the same
integral done by scipy.integrate.quad, and the issue's small-data case."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad
from scipy.special import gammaln

from hebnb import CategoricalNB


def _averaged_predictive(counts, mean):
    """E[(N_v + m mu_v) / (N + m)] under p(m | N) ~ evidence(m) * p(m), p(m) the density
    of m when B = m / (N + m) is uniform: dB/dm = N / (N + m)^2. Integrated over m."""
    counts, mean = np.asarray(counts, float), np.asarray(mean, float)
    total = counts.sum()
    scale = total if total > 0 else 1.0

    def log_evidence(m):
        return (
            gammaln(m) - gammaln(total + m) + np.sum(gammaln(counts + m * mean) - gammaln(m * mean))
        )

    # the log evidence at its largest on a coarse grid keeps the integrands in range
    shift = max(log_evidence(m) for m in scale * np.logspace(-8, 8, 200))

    def density(m):
        return np.exp(log_evidence(m) - shift) * scale / (scale + m) ** 2

    breaks = list(scale * np.logspace(-8, 8, 33))
    norm = sum(quad(density, a, b, limit=200)[0] for a, b in zip([0.0] + breaks, breaks))
    norm += quad(density, breaks[-1], np.inf, limit=200)[0]
    predictive = []
    for v in range(len(counts)):

        def weighted(m, v=v):
            return density(m) * (counts[v] + m * mean[v]) / (total + m)

        value = sum(quad(weighted, a, b, limit=200)[0] for a, b in zip([0.0] + breaks, breaks))
        value += quad(weighted, breaks[-1], np.inf, limit=200)[0]
        predictive.append(value / norm)
    return np.array(predictive)


def _minimal_case():
    X = pd.DataFrame({"f": ["no"] * 111 + ["yes"] * 3, "g": ["u", "v"] * 57})
    y = ["a"] * 65 + ["b"] * 49
    return X, y


@pytest.mark.parametrize("smoothing", ["heb-m", "heb-u"])
def test_table_is_the_posterior_average_of_the_predictive(smoothing):
    rng = np.random.default_rng(0)
    X = np.column_stack(
        [
            rng.choice(4, size=150, p=[0.7, 0.2, 0.05, 0.05]),
            rng.integers(0, 3, size=150),
        ]
    )
    y = rng.integers(0, 2, size=150)
    X[y == 0, 0] = 0  # class 0 puts every row on one value of feature 0
    model = CategoricalNB(smoothing=smoothing, concentration_estimate="posterior-average").fit(X, y)
    counts = model.category_count_
    for f in range(2):
        for c in range(2):
            expected = _averaged_predictive(counts[f][c], model.prior_mean_[f])
            np.testing.assert_allclose(np.exp(model.feature_log_prob_[f][c]), expected, rtol=2e-3)


@pytest.mark.parametrize("smoothing", ["heb-m", "heb-u"])
def test_many_categories_mostly_unseen_or_seen_alike_average_as_each_cell_alone(smoothing):
    """High cardinality: many of a class's cells unseen, most seen ones holding one or two
    rows. The table evaluates each distinct (count, mean) once and the unseen cells
    through their summed mean; every category's probability is still the integral over m
    of its own predictive."""
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.zipf(1.6, size=90) % 40, rng.integers(0, 2, size=90)])
    y = rng.integers(0, 2, size=90)
    model = CategoricalNB(smoothing=smoothing, concentration_estimate="posterior-average")
    model.fit(X, y)
    counts = model.category_count_[0]
    assert (counts == 0).sum() > counts.size / 4 and (counts == 1).sum() > 8
    for c in range(2):
        expected = _averaged_predictive(counts[c], model.prior_mean_[0])
        np.testing.assert_allclose(np.exp(model.feature_log_prob_[0][c]), expected, rtol=2e-3)


@pytest.mark.parametrize("weight", [0.2, 0.01])
def test_weighted_totals_below_one_average_under_the_same_prior(weight):
    """A class's weighted total of a feature below 1 (a feature mostly missing in the
    class, seen in light rows): the prior is still uniform in B = m / (N + m); clamping N
    to 1 put it on ln m instead (0.668 where the integral gives 0.738)."""
    g = np.array([np.nan] * 18 + ["x", "x"] + ["x"] * 10 + ["y"] * 10, dtype=object)
    f = np.array(["a"] * 20 + ["b"] * 20, dtype=object)
    X, y = np.column_stack([f, g]), np.array([0] * 20 + [1] * 20)
    w = np.ones(40)
    w[18:20] = weight
    model = CategoricalNB(concentration_estimate="posterior-average").fit(X, y, sample_weight=w)
    counts = model.category_count_[1][0]
    assert 0 < counts.sum() < 1
    expected = _averaged_predictive(counts, model.prior_mean_[1])
    np.testing.assert_allclose(np.exp(model.feature_log_prob_[1][0]), expected, rtol=2e-3)


def test_minimal_case_keeps_the_class_possible():
    X, y = _minimal_case()
    plug_in = CategoricalNB().fit(X, y)
    assert plug_in.concentration_[0, 0] == pytest.approx(0.01)  # the diagnosis
    row = pd.DataFrame({"f": ["yes"], "g": ["u"]})
    assert plug_in.predict_proba(row)[0, 0] < 1e-3
    averaged = CategoricalNB(concentration_estimate="posterior-average").fit(X, y)
    probability = averaged.predict_proba(row)[0, 0]
    laplace = CategoricalNB(smoothing="laplace").fit(X, y).predict_proba(row)[0, 0]
    # the class stays possible: the same order as Laplace's 0.21, not 0.0002
    assert 0.1 < probability < 0.4
    assert laplace == pytest.approx(0.21, abs=0.01)
    # the rows it has seen keep their probabilities
    np.testing.assert_allclose(
        averaged.predict_proba(X.iloc[:5]), plug_in.predict_proba(X.iloc[:5]), atol=0.02
    )


def test_posterior_average_approaches_type2_ml_on_large_data():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, size=20_000)
    # both features informative: Type-II ML finds an interior m (a feature independent of
    # the class sends it to the upper bound, past which the average keeps going)
    X = np.column_stack(
        [(y + rng.integers(0, 2, size=y.size)) % 5, (3 * y + rng.integers(0, 4, y.size)) % 7]
    )
    plug_in = CategoricalNB().fit(X, y)
    averaged = CategoricalNB(concentration_estimate="posterior-average").fit(X, y)
    for a, b, counts in zip(
        plug_in.feature_log_prob_, averaged.feature_log_prob_, plug_in.category_count_
    ):
        seen = counts > 0
        np.testing.assert_allclose(np.exp(a[seen]), np.exp(b[seen]), rtol=1e-3)
        # a value a class never shows keeps more probability than the plug-in gives it
        assert np.all(b[~seen] >= a[~seen])


def _fine_averaged_predictive(counts, mean, step=1e-3):
    """The same average by a midpoint rule of step ``step`` in u = ln(m / N) over the
    8 units of u about the posterior's peak (a coarse search finds it): for a narrow
    posterior, where quad's fixed breaks may straddle the peak."""
    total = counts.sum()

    def log_posterior(u):
        m = total * np.exp(u)[:, None]
        evidence = gammaln(m[:, 0]) - gammaln(total + m[:, 0])
        evidence += np.sum(gammaln(counts + m * mean) - gammaln(m * mean), axis=1)
        return evidence + u - 2 * np.logaddexp(0, u)

    coarse = np.arange(-14.0, 14.0, 0.01)
    peak = coarse[np.argmax(log_posterior(coarse))]
    u = np.arange(peak - 4.0, peak + 4.0, step) + step / 2
    values = log_posterior(u)
    weights = np.exp(values - values.max())
    m = total * np.exp(u)[:, None]
    theta = (counts + m * mean) / (total + m)
    return weights @ theta / weights.sum()


@pytest.mark.parametrize(("n_values", "n_rows"), [(50, 20_000), (200, 60_000)])
def test_a_narrow_posterior_is_averaged_on_nodes_of_its_own(n_values, n_rows):
    """With many rows the posterior of ln m is a few tenths wide: the fixed grid (step
    0.5) put it on two or three nodes and missed the predictive by up to 12%."""
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, size=n_rows)
    base = rng.dirichlet(np.ones(n_values))
    shifted = rng.dirichlet(base * 100)
    x = np.where(
        y == 0, rng.choice(n_values, n_rows, p=base), rng.choice(n_values, n_rows, p=shifted)
    )
    model = CategoricalNB(concentration_estimate="posterior-average").fit(x[:, None], y)
    mean = model.prior_mean_[0]
    for c in range(2):
        counts = model.category_count_[0][c]
        expected = _fine_averaged_predictive(counts, mean)
        np.testing.assert_allclose(np.exp(model.feature_log_prob_[0][c]), expected, rtol=1e-8)


def test_low_count_classes_keep_the_fallback():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 3, size=(60, 2))
    y = np.array([0] * 55 + [1] * 5)
    plug_in = CategoricalNB().fit(X, y)
    averaged = CategoricalNB(concentration_estimate="posterior-average").fit(X, y)
    for a, b in zip(plug_in.feature_log_prob_, averaged.feature_log_prob_):
        np.testing.assert_array_equal(a[1], b[1])  # class 1 has 5 < min_count rows


@pytest.mark.parametrize(
    "params,message",
    [
        ({"concentration_estimate": "mean"}, "'concentration_estimate' parameter"),
        ({"smoothing": "laplace", "concentration_estimate": "posterior-average"}, "empirical"),
    ],
)
def test_bad_parameters_are_value_errors(params, message):
    X, y = _minimal_case()
    with pytest.raises(ValueError, match=message):
        CategoricalNB(**params).fit(X, y)


def _mpmath_averaged_log_table(counts, mean, offsets):
    """The module's quadrature (the same fixed nodes and logistic prior weights in
    u = ln(m / N)) in 60-digit arithmetic: ln sum_g w_g (N_v + m_g mu_v) / (N + m_g) with
    w_g ~ evidence(m_g) prior(u_g), the evidence from mpmath's log-gamma. Each feature's
    mean is normalised in mpmath (the model's means sum to 1)."""
    mpmath = pytest.importorskip("mpmath")
    from hebnb.posterior_smoothing import quadrature_grid

    # the largest (class, feature) total, as the module sizes its grid
    grid = quadrature_grid(
        float(max(counts[:, a:b].sum(axis=1).max() for a, b in itertools.pairwise(offsets)))
    )

    with mpmath.workdps(60):
        out = np.empty(counts.shape)
        for c in range(counts.shape[0]):
            for f in range(len(offsets) - 1):
                columns = range(offsets[f], offsets[f + 1])
                n = [mpmath.mpf(float(counts[c, j])) for j in columns]
                mu = [mpmath.mpf(float(mean[j])) for j in columns]
                mu = [v / sum(mu) for v in mu]
                total = sum(n)
                scale = total if total > 0 else mpmath.mpf(1)
                nodes = [scale * mpmath.exp(mpmath.mpf(float(u))) for u in grid]
                log_post = []
                for u, m in zip(grid, nodes):
                    value = mpmath.loggamma(m) - mpmath.loggamma(total + m)
                    for n_v, mu_v in zip(n, mu):
                        if mu_v > 0 and n_v > 0:
                            value += mpmath.loggamma(n_v + m * mu_v) - mpmath.loggamma(m * mu_v)
                    u = mpmath.mpf(float(u))
                    log_post.append(value + u - 2 * mpmath.log(1 + mpmath.exp(u)))
                top = max(log_post)
                weights = [mpmath.exp(v - top) for v in log_post]
                norm = sum(weights)
                for k, j in enumerate(columns):
                    theta = sum(
                        w * (n[k] + m * mu[k]) / (total + m) for w, m in zip(weights, nodes)
                    )
                    out[c, j] = float(mpmath.log(theta / norm)) if theta > 0 else -np.inf
    return out


@pytest.mark.parametrize(
    "weights",
    [
        [1e-300, 1e-300, 1e20, 1.0, 1e-300, 1.0],  # a subnormal mean beside 1e20
        [1e20, 1e-300, 1e-300, 1e-300, 1e20, 1e-300],
        [1e-300] * 5 + [1e20],
        [3.0, 1e-300, 2.0, 1.0, 5.0, 1e-200],
        [1e18, 2e18, 3e18, 1e18, 5e17, 4e18],  # large counts near the mean
    ],
)
def test_extreme_weights_give_the_60_digit_posterior_average(weights):
    """Weights such as 1e-300 beside 1e20 (issue 11's fuzzer case, NaN scores before):
    the table is finite wherever the mean is positive and equals the same quadrature in
    60-digit arithmetic, although the float64 evidence of counts of 1e20 is a difference
    of numbers of size 5e21 and a tiny mean makes subnormal pseudo-counts."""
    from hebnb.posterior_smoothing import averaged_log_probability_table

    X = np.array([[0, 1], [1, 0], [2, 2], [0, 0], [1, 1], [2, 0]])
    y = np.array([0, 0, 0, 1, 1, 1])
    counts = np.zeros((2, 6))
    for (a, b), label, w in zip(X, y, weights):
        counts[label, a] += w
        counts[label, 3 + b] += w
    offsets = [0, 3, 6]
    mean = np.concatenate(
        [counts[:, f : f + 3].sum(0) / counts[:, f : f + 3].sum() for f in (0, 3)]
    )
    averaged = np.ones((2, 2), dtype=bool)
    table = averaged_log_probability_table(counts, mean, offsets, averaged, np.zeros((2, 6)))
    reference = _mpmath_averaged_log_table(counts, mean, offsets)
    assert np.all(np.isfinite(table[:, mean > 0]))
    np.testing.assert_allclose(table, reference, rtol=1e-9, atol=1e-12)


def test_posterior_average_with_extreme_weights_predicts_finite_probabilities():
    """The estimator on the same kind of weights: no NaN score, rows summing to 1."""
    rng = np.random.default_rng(5)
    X = rng.integers(0, 4, size=(60, 3))
    y = rng.integers(0, 2, size=60)
    for weights in (
        np.where(rng.random(60) < 0.5, 1e-300, 1e20),
        np.where(rng.random(60) < 0.9, 1e-300, 1.0),
        rng.choice([1e-300, 1e-100, 1.0, 1e100, 1e200], size=60),
    ):
        model = CategoricalNB(concentration_estimate="posterior-average", min_count=0)
        proba = model.fit(X, y, sample_weight=weights).predict_proba(X)
        assert np.all(np.isfinite(proba))
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize("n_rows", [1_000, 20_000, 200_000])
def test_a_large_class_on_one_value_averages_over_the_whole_posterior(n_rows):
    """A class with all its rows on one value has an evidence that rises to a limit as
    m -> 0 and falls from about m = 1 / ln N: the posterior's bulk sits near
    u = ln(m / N) = -ln N - ln ln N. A grid stopping at u = -14 cut it off: the other
    values' probabilities were 2e-3 too large at 1,000 rows, 6% at 20,000 and 77% at
    200,000 (the audit's figures). Against the integral over all m."""
    X = np.array([[0], [0], [1], [2], [3]])
    y = np.array(["a", "b", "b", "b", "b"])
    weights = np.array([n_rows, n_rows / 4, n_rows / 4, n_rows / 4, n_rows / 4], dtype=float)
    model = CategoricalNB(smoothing="heb-m", concentration_estimate="posterior-average")
    model.fit(X, y, sample_weight=weights)
    counts = model.category_count_[0][0]
    expected = _averaged_predictive(counts, model.prior_mean_[0])
    np.testing.assert_allclose(np.exp(model.feature_log_prob_[0][0]), expected, rtol=1e-4)


@pytest.mark.parametrize("total", [1e8, 1e12, 1e16, 1e20])
def test_log_evidence_keeps_its_digits_where_counts_follow_the_mean(total):
    """Counts within a few standard deviations of the mean, and large: each cell's small-m
    term was a difference of two numbers of size n |r| (r = ln(N mu / n)) that cancel to
    O(r^2), off by about N eps nats (1 nat at N = 1e16). Differences between nodes
    against the exact log evidence in 60-digit arithmetic."""
    mpmath = pytest.importorskip("mpmath")
    from hebnb.posterior_smoothing import _log_evidence, _seen_cells

    rng = np.random.default_rng(int(np.log10(total)))
    mean = np.array([0.2, 0.3, 0.5])
    counts = (total * mean * (1 + 3 * rng.normal(size=3) / np.sqrt(total)))[None, :]
    totals = counts.sum(axis=1, keepdims=True)
    feature = np.zeros(3, dtype=np.intp)
    nodes = np.arange(-6.0, 0.01, 0.5)
    cells, _ = _seen_cells(counts, counts > 0, mean, np.log(mean), feature, totals)
    values = [
        _log_evidence(
            totals,
            np.zeros(totals.shape),  # no unseen category
            np.log(totals) + u,
            u=np.full(totals.shape, u),
            cells=cells,
        )[0, 0]
        for u in nodes
    ]
    with mpmath.workdps(60):
        n = [mpmath.mpf(float(v)) for v in counts[0]]
        mu = [mpmath.mpf(float(v)) for v in mean]
        N = sum(n)

        def exact(u):
            m = mpmath.mpf(float(totals[0, 0])) * mpmath.exp(mpmath.mpf(float(u)))
            value = mpmath.loggamma(m) - mpmath.loggamma(N + m)
            for n_v, mu_v in zip(n, mu):
                value += mpmath.loggamma(n_v + m * mu_v) - mpmath.loggamma(m * mu_v)
            return value

        reference = [exact(u) for u in nodes]
        expected = [float(v - reference[-1]) for v in reference]
    np.testing.assert_allclose(np.array(values) - values[-1], expected, rtol=0, atol=1e-6)
