"""MultinomialNB's posterior power: the leave-one-out scores equal a refit without one
observation of the row (plain numpy), the power maximises the leave-one-out conditional
likelihood (numpy + scipy), scoring is tempered as documented, and the fixed powers keep
the untempered model."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.naive_bayes as skl
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from hebnb import MultinomialNB, _core

LOW, HIGH = 1e-3, 1e2


def token_data(seed=0, n_rows=200, n_features=40, n_classes=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n_rows)
    # classes share most of their token rates: no leave-one-out model separates them
    shared = rng.gamma(0.3, 1.0, size=n_features)
    rates = 0.8 * shared + 0.2 * rng.gamma(0.3, 1.0, size=(n_classes, n_features))
    X = rng.poisson(rates[y] * rng.uniform(0.5, 3.0, size=(n_rows, 1)))
    X[:, -2:] = 0  # tokens no class counts
    X[0, -1] = 2  # a token only row 0 holds
    return X.astype(np.float64), y


def refit_scores(X, y, weights, m, pooled):
    """s[d, c]: ln P(x_d | c) under the fit without one observation of row d (same m),
    by recounting."""
    n_rows, n_features = X.shape
    n_classes = m.shape[0]
    scores = np.zeros((n_rows, n_classes))
    for d in range(n_rows):
        # one observation of row d leaves (all of it when it weighs less than 1)
        kept = weights.copy()
        kept[d] -= min(weights[d], 1.0)
        table = np.stack([(kept[y == c, None] * X[y == c]).sum(axis=0) for c in range(n_classes)])
        if pooled:
            mean = table.sum(axis=0) / table.sum()
        else:
            mean = np.full(n_features, 1.0 / n_features)
        present = (X[d] > 0) & (mean > 0)
        for c in range(n_classes):
            theta = (table[c] + m[c] * mean) / (table[c].sum() + m[c])
            scores[d, c] = X[d, present] @ np.log(theta[present])
    return scores


def core_scores(indptr, indices, data, y, weights, model, *, n_jobs):
    """The core's leave-one-out scores of the CSR rows (indptr, indices, data) under a
    fitted model."""
    return _core.leave_one_out_log_likelihood(
        np.asarray(indptr, dtype=np.int64),
        np.asarray(indices, dtype=np.int32),
        np.asarray(data, dtype=np.float64),
        y.astype(np.int64),
        weights,
        model.feature_count_,
        model.concentration_,
        np.ascontiguousarray(model.feature_log_prob_.T),
        pooled_mean=model.smoothing == "heb-m",
        n_jobs=n_jobs,
    )


def loo_objective(tau, scores, y, weights, log_prior_rows):
    """L(tau) = sum_d w_d ln P_tau^(-d)(y_d | x_d) over the rows whose class the
    leave-one-out prior allows."""
    joint = tau * (log_prior_rows + scores)
    rows = np.arange(y.shape[0])
    usable = np.isfinite(log_prior_rows[rows, y]) & (weights > 0)
    with np.errstate(invalid="ignore"):
        terms = joint[rows, y] - logsumexp(joint, axis=1)
    return float(np.sum(weights[usable] * terms[usable])), float(weights[usable].sum())


def frequency_prior_rows(y, weights, n_classes):
    """ln((N_c - [c = y_d] u_d) / (S - u_d)), u_d = min(w_d, 1), for every row."""
    counts = np.bincount(y, weights, minlength=n_classes)
    unit = np.minimum(weights, 1.0)
    left = counts[None, :] - unit[:, None] * (np.arange(n_classes)[None, :] == y[:, None])
    with np.errstate(divide="ignore"):
        return np.log(np.maximum(left, 0.0)) - np.log(counts.sum() - unit)[:, None]


def best_power(scores, y, weights, log_prior_rows):
    """The maximiser over [LOW, HIGH] by a grid over ln tau and scipy's bounded Brent."""
    grid = np.linspace(np.log(LOW), np.log(HIGH), 400)
    values = [loo_objective(np.exp(t), scores, y, weights, log_prior_rows)[0] for t in grid]
    best = int(np.argmax(values))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    result = minimize_scalar(
        lambda t: -loo_objective(np.exp(t), scores, y, weights, log_prior_rows)[0],
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return float(np.exp(result.x))


@pytest.mark.parametrize("smoothing", ["heb-u", "heb-m"])
def test_leave_one_out_scores_equal_a_refit_without_the_row(smoothing):
    X, y = token_data()
    weights = np.random.default_rng(1).uniform(0.3, 2.0, size=y.shape[0])
    weights[:20] = 3.0  # integer weights: one copy leaves
    model = MultinomialNB(smoothing=smoothing).fit(sp.csr_matrix(X), y, sample_weight=weights)
    matrix = sp.csr_matrix(X)
    scores = core_scores(matrix.indptr, matrix.indices, matrix.data, y, weights, model, n_jobs=1)
    want = refit_scores(X, y, weights, model.concentration_, pooled=smoothing == "heb-m")
    np.testing.assert_allclose(scores, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("smoothing", ["heb-u", "heb-m"])
def test_leave_one_out_scores_sum_duplicate_and_unsorted_entries(smoothing):
    """The core reads a row's entries in any order and adds duplicates up before the row
    leaves its class: the scores equal the refit of the summed, sorted rows."""
    X, y = token_data(seed=11)
    X[:, :5] += 1.0  # entries of count 2 and more in every row
    weights = np.ones(y.shape[0])
    weights[:30] = 2.0
    weights[30:40] = 0.5
    model = MultinomialNB(smoothing=smoothing).fit(X, y, sample_weight=weights)
    matrix = sp.csr_matrix(X)
    # each row's entries reversed, and each value split into 1 + (x - 1) where x > 1
    indptr, indices, data = [0], [], []
    for d in range(matrix.shape[0]):
        row = slice(matrix.indptr[d], matrix.indptr[d + 1])
        for v, x in zip(matrix.indices[row][::-1], matrix.data[row][::-1]):
            parts = [1.0, x - 1.0] if x > 1 else [x]
            indices += [v] * len(parts)
            data += parts
        indices.append(0)  # a stored zero
        data.append(0.0)
        indptr.append(len(data))
    scores = core_scores(indptr, indices, data, y, weights, model, n_jobs=2)
    want = refit_scores(X, y, weights, model.concentration_, pooled=smoothing == "heb-m")
    np.testing.assert_allclose(scores, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("smoothing", ["heb-u", "heb-m"])
@pytest.mark.parametrize("prior", ["frequencies", "uniform", "given"])
def test_the_power_maximises_the_leave_one_out_likelihood(smoothing, prior):
    X, y = token_data(seed=3)
    weights = np.random.default_rng(2).uniform(0.3, 2.0, size=y.shape[0])
    weights[5] = 0.0  # a row that weighs nothing
    y[7] = 3  # the only row of its class: no leave-one-out model can predict it
    options = {
        "frequencies": {},
        "uniform": {"fit_prior": False},
        "given": {"class_prior": [0.2, 0.3, 0.4, 0.1]},
    }[prior]
    model = MultinomialNB(smoothing=smoothing, **options).fit(X, y, sample_weight=weights)
    m = model.concentration_
    scores = refit_scores(X, y, weights, m, pooled=smoothing == "heb-m")
    if prior == "frequencies":
        log_prior_rows = frequency_prior_rows(y, weights, 4)
    else:
        fixed = np.log(np.full(4, 0.25) if prior == "uniform" else options["class_prior"])
        log_prior_rows = np.broadcast_to(fixed, scores.shape)
    want = best_power(scores, y, weights, log_prior_rows)
    assert LOW < want < HIGH
    assert model.posterior_power_ == pytest.approx(want, rel=1e-6)
    value, weight = loo_objective(want, scores, y, weights, log_prior_rows)
    assert model.leave_one_out_log_loss_ == pytest.approx(-value / weight, rel=1e-9)


def test_scores_are_tempered_and_a_fixed_power_is_untempered():
    X, y = token_data(seed=4)
    X_test, _ = token_data(seed=5, n_rows=30)
    model = MultinomialNB().fit(X, y)
    assert model.smoothing == "heb-u" and model.posterior_power_ != 1.0
    untempered = model.class_log_prior_ + X_test @ model.feature_log_prob_.T
    joint = model.posterior_power_ * untempered
    np.testing.assert_allclose(model.predict_joint_log_proba(X_test), joint, rtol=1e-12)
    proba = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
    np.testing.assert_allclose(model.predict_proba(X_test), proba, atol=1e-12)
    # the decisions are the untempered model's
    np.testing.assert_array_equal(model.predict(X_test), np.argmax(untempered, axis=1))

    plain = MultinomialNB(posterior_power=1.0).fit(X, y)
    np.testing.assert_array_equal(plain.feature_log_prob_, model.feature_log_prob_)
    untempered = plain.class_log_prior_ + X_test @ plain.feature_log_prob_.T
    np.testing.assert_allclose(plain.predict_joint_log_proba(X_test), untempered, rtol=1e-12)
    assert plain.posterior_power_ == 1.0 and np.isnan(plain.leave_one_out_log_loss_)

    half = MultinomialNB(posterior_power=0.5).fit(X, y)
    np.testing.assert_allclose(
        half.predict_joint_log_proba(X_test),
        0.5 * (half.class_log_prior_ + X_test @ half.feature_log_prob_.T),
        rtol=1e-12,
    )


def test_laplace_keeps_scikit_learn_unless_asked():
    X, y = token_data(seed=6)
    ours = MultinomialNB(smoothing="laplace").fit(X, y)
    ref = skl.MultinomialNB().fit(X, y)
    assert ours.posterior_power_ == 1.0
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-10)
    tempered = MultinomialNB(smoothing="laplace", posterior_power="loo").fit(X, y)
    scores = refit_scores(X, y, np.ones(y.shape[0]), tempered.concentration_, pooled=False)
    want = best_power(scores, y, np.ones(y.shape[0]), frequency_prior_rows(y, np.ones(200), 3))
    assert tempered.posterior_power_ == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("start", ["partial_fit", "fit"])
def test_partial_fit_fits_the_power_on_every_row_seen(start):
    """The rule: every row seen enters the leave-one-out likelihood, scored by the model
    of its batch (left out of all the counts up to its batch)."""
    X, y = token_data(seed=8, n_rows=300)
    model = MultinomialNB()
    if start == "fit":
        model.fit(X[:200], y[:200])
    else:
        model.partial_fit(X[:120], y[:120], classes=[0, 1, 2])
        model.partial_fit(X[120:200], y[120:200])
    first_m = model.concentration_.copy()
    model.partial_fit(X[200:], y[200:])
    whole = MultinomialNB().fit(X, y)
    np.testing.assert_allclose(model.feature_count_, whole.feature_count_, rtol=1e-12)
    np.testing.assert_allclose(model.concentration_, whole.concentration_, rtol=1e-12)
    batches = [(0, 200, first_m)] if start == "fit" else []
    if start == "partial_fit":
        one = MultinomialNB().partial_fit(X[:120], y[:120], classes=[0, 1, 2])
        batches = [(0, 120, one.concentration_), (120, 200, first_m)]
    batches.append((200, 300, model.concentration_))
    scores, priors = [], []
    for begin, end, m in batches:
        seen = np.ones(end)
        scores.append(refit_scores(X[:end], y[:end], seen, m, pooled=False)[begin:])
        priors.append(frequency_prior_rows(y[:end], seen, 3)[begin:])
    want = best_power(np.vstack(scores), y, np.ones(300), np.vstack(priors))
    assert model.posterior_power_ == pytest.approx(want, rel=1e-6)
    # one partial_fit call is one fit
    single = MultinomialNB().partial_fit(X, y)
    assert single.posterior_power_ == pytest.approx(whole.posterior_power_, rel=1e-12)


def test_a_power_switched_to_auto_mid_stream_says_which_rows_it_is_fitted_on():
    """Rows are kept for the power only while it is fitted: one switched to "auto" by
    set_params after partial_fit is fitted on the rows from then on, which it says, and
    on every row from then on in later batches."""
    X, y = token_data(seed=9, n_rows=300)
    model = MultinomialNB(posterior_power=1.0).partial_fit(X[:100], y[:100], classes=[0, 1, 2])
    model.set_params(posterior_power="auto")
    with pytest.warns(UserWarning, match="rows of earlier batches were not kept"):
        model.partial_fit(X[100:200], y[100:200])
    second_m = model.concentration_.copy()
    model.partial_fit(X[200:], y[200:])  # no warning: warnings are errors in this suite
    scores, priors = [], []
    for begin, end, m in ((100, 200, second_m), (200, 300, model.concentration_)):
        seen = np.ones(end)
        scores.append(refit_scores(X[:end], y[:end], seen, m, pooled=False)[begin:])
        priors.append(frequency_prior_rows(y[:end], seen, 3)[begin:])
    want = best_power(np.vstack(scores), y[100:], np.ones(200), np.vstack(priors))
    assert model.posterior_power_ == pytest.approx(want, rel=1e-6)


def test_power_does_not_depend_on_threads_format_or_duplicates():
    X, y = token_data(seed=9, n_rows=3000, n_features=300)
    matrix = sp.csr_matrix(X)
    one = MultinomialNB(n_jobs=1).fit(matrix, y)
    two = MultinomialNB(n_jobs=2).fit(matrix, y)
    assert one.posterior_power_ == two.posterior_power_
    csc = MultinomialNB().fit(matrix.tocsc(), y)
    assert csc.posterior_power_ == pytest.approx(one.posterior_power_, rel=1e-12)
    # every stored value split in two halves: the same rows, the same power
    messy = sp.csr_matrix(
        (np.repeat(matrix.data / 2, 2), np.repeat(matrix.indices, 2), matrix.indptr * 2),
        shape=matrix.shape,
    )
    assert not messy.has_canonical_format
    again = MultinomialNB().fit(messy, y)
    assert again.posterior_power_ == pytest.approx(one.posterior_power_, rel=1e-10)
    restored = pickle.loads(pickle.dumps(one))
    np.testing.assert_array_equal(restored.predict_proba(matrix), one.predict_proba(matrix))


@pytest.mark.parametrize("smoothing", ["heb-u", "heb-m"])
def test_integer_weights_are_repeated_rows(smoothing):
    X, y = token_data(seed=10, n_rows=120)
    weights = np.random.default_rng(4).integers(0, 4, size=120)
    weighted = MultinomialNB(smoothing=smoothing).fit(X, y, sample_weight=weights)
    repeated = MultinomialNB(smoothing=smoothing).fit(
        np.repeat(X, weights, axis=0), np.repeat(y, weights)
    )
    assert weighted.posterior_power_ == pytest.approx(repeated.posterior_power_, rel=1e-9)
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X), atol=1e-10)


def test_bad_powers_are_errors():
    X, y = token_data()
    for bad in (0.0, -1.0, "fit", np.inf):
        with pytest.raises(ValueError, match="posterior_power"):
            MultinomialNB(posterior_power=bad).fit(X, y)


def test_a_power_that_overflows_every_score_of_a_row_is_refused_at_scoring():
    """A huge fixed power sends every class's tempered score of a row to -inf: the row
    got probabilities of 0 each (and predict the first class). A power that leaves one
    class finite keeps the answer the untempered scores rank."""
    X, y = token_data()
    model = MultinomialNB(posterior_power=1e308).fit(X, y)
    with pytest.raises(ValueError, match="posterior_power=1e.308 makes the scores overflow"):
        model.predict_proba(X[:2])
    sharp = MultinomialNB(posterior_power=1e6).fit(X, y)
    untempered = MultinomialNB(posterior_power=1.0).fit(X, y)
    np.testing.assert_array_equal(sharp.predict(X), untempered.predict(X))
    np.testing.assert_allclose(sharp.predict_proba(X).sum(axis=1), 1.0)


@pytest.mark.parametrize("smoothing", ["heb-u", "heb-m", "laplace"])
@pytest.mark.parametrize("posterior_power", [1.0, "auto"])
def test_counts_that_overflow_every_score_of_a_row_are_refused(smoothing, posterior_power):
    """Untempered (or tempered by a power it does not need to overflow), a row of counts
    near the float64 maximum overflowed to -inf under every class: its probabilities were
    all 0 and predict gave the first class. Such a row is refused, as ComplementNB and a
    tempered model refuse it; one overflowing row does not hide the others' answers."""
    X, y = token_data()
    model = MultinomialNB(smoothing=smoothing, posterior_power=posterior_power).fit(X, y)
    huge = np.zeros((2, X.shape[1]))
    huge[1, :3] = 1e308
    for method in ("predict_proba", "predict", "predict_log_proba", "predict_joint_log_proba"):
        with pytest.raises(ValueError, match="row 1: the posterior is not determined"):
            getattr(model, method)(np.vstack([X[:1], huge[1:]]))
    assert np.all(np.isfinite(model.predict_log_proba(X)))


def test_a_long_stream_keeps_a_bounded_priority_sample_of_its_rows(monkeypatch):
    """Beyond KEPT_POWER_ROWS rows the model keeps a priority sample of the rows' scores:
    never more rows than that, each one the full rule keeps, standing for at least its
    own weight, and the concentrations (from the counts) unchanged."""
    from hebnb import multinomial

    X, y = token_data(seed=9, n_rows=600)
    monkeypatch.setattr(multinomial, "KEPT_POWER_ROWS", 60)
    sampled = MultinomialNB()
    for start in range(0, 600, 40):
        sampled.partial_fit(X[start : start + 40], y[start : start + 40], classes=[0, 1, 2])
        kept = sampled._power_rows
        assert kept.classes.shape[0] == min(60, start + 40)
        assert (kept.threshold > 0) == (start + 40 > 60)
    assert np.all(kept.estimate_weights() >= kept.weights)
    monkeypatch.setattr(multinomial, "KEPT_POWER_ROWS", 10**9)
    exact = MultinomialNB()
    for start in range(0, 600, 40):
        exact.partial_fit(X[start : start + 40], y[start : start + 40], classes=[0, 1, 2])
    every = {tuple(row) for row in np.round(exact._power_rows.shifted_joint, 12)}
    assert all(tuple(row) in every for row in np.round(kept.shifted_joint, 12))
    np.testing.assert_allclose(sampled.concentration_, exact.concentration_, rtol=1e-12)
    assert exact._power_rows.classes.shape[0] == 600


def test_priority_sampling_estimates_weighted_sums_without_bias():
    """Over many draws of the priorities the sample's weighted sum of a per-row value
    averages the full sum (Duffield, Lund and Thorup's estimator), with unequal weights,
    across two rounds of sampling as in a stream."""
    from hebnb.multinomial import LeaveOneOutRows

    rng = np.random.default_rng(3)
    weights = rng.exponential(size=400)
    values = rng.normal(size=400) + 2.0
    full = float(np.sum(weights * values))
    estimates = []
    for seed in range(2000):
        draws = np.random.default_rng(seed)
        order = draws.permutation(400)

        def rows(index, draws=draws):  # with priorities: weight / uniform in (0, 1]
            priorities = weights[index] / (1.0 - draws.random(index.shape[0]))
            zero = np.zeros(index.shape[0], dtype=np.int64)
            return LeaveOneOutRows(values[index, None], zero, weights[index], priorities)

        first = rows(order[:250]).sampled(80)
        both = first.followed_by(rows(order[250:])).sampled(80)
        estimates.append(float(np.sum(both.estimate_weights() * both.shifted_joint[:, 0])))
    estimates = np.array(estimates)
    standard_error = estimates.std() / np.sqrt(estimates.shape[0])
    assert abs(estimates.mean() - full) < 4 * standard_error
    assert standard_error < 0.02 * full  # the check can tell a bias of a few percent


def test_each_batch_of_a_long_stream_draws_its_own_priorities(monkeypatch):
    """Once the sample was full, a batch's draws were seeded by the rows kept plus its
    own: the same seed for every batch of one size, so row j of every batch drew the same
    number and the sample collapsed onto a few positions of a batch. With batches sorted
    by class that made the sample's class shares wrong (0.02 for a class of half the
    rows). Every kept row now has its own priority, and the shares are estimated well."""
    from hebnb import multinomial

    monkeypatch.setattr(multinomial, "KEPT_POWER_ROWS", 200)
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 10)  # every batch: 10 rows of class 0, then 10 of class 1
    rates = np.where(y[:, None] == 0, np.linspace(0.2, 1.0, 8), np.linspace(1.0, 0.2, 8))
    model = MultinomialNB()
    for _ in range(300):
        model.partial_fit(rng.poisson(rates), y, classes=[0, 1])
    kept = model._power_rows
    assert kept.classes.shape[0] == 200
    assert np.unique(kept.priorities).shape[0] == 200
    weights = kept.estimate_weights()
    share = weights[kept.classes == 0].sum() / weights.sum()
    # 200 rows of a fair coin: a standard error of 0.035
    assert abs(share - 0.5) < 0.15


def test_a_stream_fits_its_power_when_it_is_read(monkeypatch):
    """``partial_fit`` refitted the power on every kept row at every call: a stream of
    small batches took time quadratic in its rows (then 60-350 ms a call). The power is
    now fitted when first read, and equals the power of a stream read after every batch,
    before and after the kept rows become a sample."""
    from hebnb import multinomial

    monkeypatch.setattr(multinomial, "KEPT_POWER_ROWS", 150)
    X, y = token_data(seed=11, n_rows=400)
    read_each_time, read_once = MultinomialNB(), MultinomialNB()
    powers = []
    for start in range(0, 400, 25):
        batch = slice(start, start + 25)
        read_each_time.partial_fit(X[batch], y[batch], classes=[0, 1, 2])
        read_once.partial_fit(X[batch], y[batch], classes=[0, 1, 2])
        # (a stream's first batch is a fit: fitted at once)
        assert ("posterior_power_" in vars(read_once)) == (start == 0)
        powers.append(read_each_time.posterior_power_)
        assert "posterior_power_" in vars(read_each_time)
    assert len(set(powers)) > 5  # the power moved along the stream
    assert read_once.posterior_power_ == powers[-1]
    assert read_once.leave_one_out_log_loss_ == read_each_time.leave_one_out_log_loss_
    np.testing.assert_array_equal(read_once.predict_proba(X), read_each_time.predict_proba(X))
    # a fixed power set between batches drops what was left to fit
    read_once.partial_fit(X[:25], y[:25])
    read_once.set_params(posterior_power=0.5).partial_fit(X[25:50], y[25:50])
    assert read_once.posterior_power_ == 0.5 and "_power_rows_to_fit" not in vars(read_once)


def test_the_sample_keeps_the_rows_a_stable_sort_of_the_priorities_keeps():
    """The kept rows are found in O(rows) (a partition, not a sort): the same rows and
    threshold as the highest priorities of a stable sort, ties at the cut included."""
    from hebnb.multinomial import LeaveOneOutRows

    rng = np.random.default_rng(4)
    for trial in range(200):
        n, most = int(rng.integers(2, 300)), int(rng.integers(1, 200))
        priorities = rng.choice([0.5, 1.0, 2.0, 3.0], size=n) if trial % 2 else rng.random(n)
        rows = LeaveOneOutRows(
            rng.normal(size=(n, 2)), np.zeros(n, dtype=np.int64), np.ones(n), priorities
        )
        sample = rows.sampled(most)
        if n <= most:
            assert sample is rows
            continue
        order = np.argsort(-priorities, kind="stable")
        np.testing.assert_array_equal(sample.priorities, priorities[np.sort(order[:most])])
        assert sample.threshold == priorities[order[most]]


def test_joining_many_parts_equals_joining_them_one_by_one():
    """A Dask fit joins the rows of every partition for the power: one concatenation,
    where a fold of ``followed_by`` copied everything joined so far at every partition.
    The same rows, weights, seed count and threshold, and the same sample after."""
    from functools import reduce

    from hebnb.multinomial import LeaveOneOutRows

    rng = np.random.default_rng(6)

    def part(n, prioritised=False):
        return LeaveOneOutRows(
            rng.normal(size=(n, 3)),
            rng.integers(0, 3, size=n),
            rng.uniform(0.5, 2.0, size=n),
            rng.random(n) if prioritised else None,
            0.25 if prioritised else 0.0,
            n + 7 if prioritised else 0,
        )

    for first_prioritised in (False, True):
        parts = [
            part(int(n), first_prioritised and k == 0) for k, n in enumerate([5, 0, 40, 1, 13])
        ]
        joined, folded = LeaveOneOutRows.joined(parts), reduce(LeaveOneOutRows.followed_by, parts)
        for name in ("shifted_joint", "classes", "weights", "priorities", "threshold", "rows_seen"):
            np.testing.assert_array_equal(getattr(joined, name), getattr(folded, name))
        for a, b in zip(vars(joined.sampled(20)).values(), vars(folded.sampled(20)).values()):
            np.testing.assert_array_equal(a, b)
