"""EmpiricalBayesDirichletClassifier at the edges: its prior, its changes mid-stream, and
labels of mixed types."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.exceptions import NotFittedError

from hebnb import EmpiricalBayesDirichletClassifier
from hebnb.dirichlet_groups import dirichlet_draws

groups = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2]).reshape(-1, 1)
labels = np.array([0, 1, 1, 0, 0, 1, 0, 1, 1])


def test_alphas_whose_sum_is_infinite_are_refused():
    """Each alpha finite, their sum not: every probability would be alpha / inf = 0."""
    model = EmpiricalBayesDirichletClassifier({0: 1e308, 1: 1e308})
    with pytest.raises(ValueError, match="'alphas' parameter"):
        model.fit(groups, labels)
    with pytest.raises(NotFittedError):
        model.predict_proba([[0]])


def test_partial_fit_refuses_alphas_changed_mid_stream():
    """set_params(alphas=...) between partial_fit calls is checked: invalid values and
    new classes are refused, new values for the same classes go on from the tuned prior."""
    model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).partial_fit(groups, labels)
    before = model.group_counts_.copy()
    model.set_params(alphas={0: 1.0, 1: 1.0, 2: 1.0})
    with pytest.raises(ValueError, match="call fit to start again"):
        model.partial_fit(groups, labels)
    model.set_params(alphas={0: -1.0, 1: 1.0})
    with pytest.raises(ValueError, match="'alphas' parameter"):
        model.partial_fit(groups, labels)
    np.testing.assert_array_equal(model.group_counts_, before)
    # new values for the same classes are fine: the stream goes on from the tuned prior
    model.set_params(alphas={0: 2.0, 1: 3.0}).partial_fit(groups, labels)
    np.testing.assert_allclose(model.group_counts_, 2 * before)


@pytest.mark.parametrize("alphas", [{0: "a", 1: 1.0}, {0: "2", 1: 1.0}, {0: True, 1: 1.0}])
def test_alphas_that_are_not_numbers_are_named(alphas):
    """'a', "2" and True are not concentrations: refused naming alphas, never read as numbers."""
    with pytest.raises(ValueError, match="'alphas' parameter"):
        EmpiricalBayesDirichletClassifier(alphas).fit(groups, labels)


def test_sample_size_and_decay_steps_must_be_numbers_of_the_right_kind():
    """sample(size=1.5) drew one sample (int(1.5)); decay(True) decayed one step."""
    model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).fit(groups, labels)
    for size in (1.5, -1, True, "2"):
        with pytest.raises(ValueError, match="size must be an integer >= 0"):
            model.sample([[0]], size=size)
    assert model.sample([[0]], size=np.int64(2)).shape == (2, 1, 2)
    with pytest.raises(ValueError, match="steps must be finite and >= 0"):
        model.decay(True)


def test_alphas_keyed_by_numbers_and_strings_keep_their_types():
    """Keys {0, 1, "unknown"} stay an int, an int and a string (numpy would make them all
    strings, and the labels 0 and 1 would then match no key)."""
    alphas = {0: 1.0, 1: 1.0, "unknown": 1.0}
    model = EmpiricalBayesDirichletClassifier(alphas).fit(groups, labels)
    assert model.classes_.tolist() == [0, 1, "unknown"]
    assert model.predict([[2]]).tolist()[0] in (0, 1)
    mixed = np.array([0, 1, "unknown"] * 3, dtype=object)
    model.fit(groups, mixed)
    np.testing.assert_allclose(model.group_counts_.sum(axis=0), [3.0, 3.0, 3.0])


def test_draws_whose_gamma_variates_all_underflow_are_the_dirichlet_limit():
    """Concentrations near 1e-308 and below sent every ln(U) / alpha of a draw to -inf,
    and the draw to NaN. Such a draw is the Dirichlet's limit: one component takes all the
    mass, component k with probability alpha_k / sum(alpha)."""
    alphas = np.array([[1e-320, 3e-320], [1e-309, 4e-309], [2e-3, 1.0]])
    draws = dirichlet_draws(np.random.default_rng(0), alphas, 20_000)
    assert np.isfinite(draws).all()
    np.testing.assert_allclose(draws.sum(axis=-1), 1.0)
    for row in (0, 1):
        winners = draws[:, row, 0]
        assert set(np.unique(winners)) == {0.0, 1.0}  # one-hot draws
        share = alphas[row, 0] / alphas[row].sum()
        assert stats.binomtest(int(winners.sum()), winners.size, share).pvalue > 1e-4
    # the same through the estimator, for a group it has never seen (the prior alone)
    model = EmpiricalBayesDirichletClassifier({0: 1e-320, 1: 3e-320}, n_eb_iter=0)
    samples = model.fit(groups, labels).sample([[99]], size=100)
    assert np.isfinite(samples).all()


def test_partial_fit_takes_the_classes_alphas_names():
    """scikit-learn's incremental learners take partial_fit(X, y, classes=...); here the
    classes are alphas' keys, in any order, and other classes are refused by name."""
    declared = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).partial_fit(
        groups, labels, classes=[1, 0]
    )
    plain = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).partial_fit(groups, labels)
    np.testing.assert_array_equal(declared.predict_proba(groups), plain.predict_proba(groups))
    for other in ([0, 1, 2], [0], [0, 0, 1], ["0", "1"]):
        model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0})
        with pytest.raises(ValueError, match="must name the classes of alphas"):
            model.partial_fit(groups, labels, classes=other)
        assert not hasattr(model, "group_counts_")


def test_partial_fit_takes_classes_and_weights_only_by_keyword():
    """A third positional argument is classes to scikit-learn (partial_fit(X, y,
    np.unique(y)) in its examples) and weights to bayesianbandits: on a two-row batch the
    classes [0, 1] were read as weights, dropping a row without a word."""
    X, y = np.array([["a"], ["b"]]), np.array([0, 1])
    model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0})
    with pytest.raises(TypeError, match="positional"):
        model.partial_fit(X, y, [0, 1])
    assert not hasattr(model, "group_counts_")
    by_name = model.partial_fit(X, y, classes=[0, 1]).group_counts_
    np.testing.assert_array_equal(by_name, [[1.0, 0.0], [0.0, 1.0]])
    weighted = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0})
    weighted.partial_fit(X, y, sample_weight=[0.0, 2.0])
    np.testing.assert_array_equal(weighted.group_counts_, [[0.0, 0.0], [0.0, 2.0]])


def test_missing_labels_and_complex_groups_get_scikit_learn_messages():
    # the messages scikit-learn's own estimators give (its check_requires_y_none and
    # check_complex_data, which cannot run here: they feed several columns)
    X = np.array([[0], [1], [0], [2]])
    y = np.array([0, 1, 0, 1])
    model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0})
    for update in (model.fit, model.partial_fit):
        with pytest.raises(ValueError, match="requires y to be passed, but the target y is None"):
            update(X, None)
        with pytest.raises(ValueError, match="Complex data not supported"):
            update(X.astype(complex), y)
    fitted = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).fit(X, y)
    with pytest.raises(ValueError, match="Complex data not supported"):
        fitted.predict_proba(X.astype(complex))
