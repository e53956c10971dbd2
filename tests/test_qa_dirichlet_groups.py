"""QA regressions: EmpiricalBayesDirichletClassifier at the edges."""

from __future__ import annotations

import numpy as np
import pytest

from hebnb import EmpiricalBayesDirichletClassifier

groups = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2]).reshape(-1, 1)
labels = np.array([0, 1, 1, 0, 0, 1, 0, 1, 1])


def test_alphas_whose_sum_is_infinite_are_refused():
    """Each alpha finite, their sum not: every probability was alpha / inf = 0."""
    model = EmpiricalBayesDirichletClassifier({0: 1e308, 1: 1e308})
    with pytest.raises(ValueError, match="alphas must be positive with a finite sum"):
        model.fit(groups, labels)
    with pytest.raises(ValueError, match="alphas must be positive with a finite sum"):
        model.predict_proba([[0]])


def test_partial_fit_refuses_alphas_changed_mid_stream():
    """set_params(alphas=...) between partial_fit calls was ignored silently: invalid
    values were never checked and new classes never appeared."""
    model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}).partial_fit(groups, labels)
    before = model.group_counts_.copy()
    model.set_params(alphas={0: 1.0, 1: 1.0, 2: 1.0})
    with pytest.raises(ValueError, match="call fit to start again"):
        model.partial_fit(groups, labels)
    model.set_params(alphas={0: -1.0, 1: 1.0})
    with pytest.raises(ValueError, match="alphas must be positive"):
        model.partial_fit(groups, labels)
    np.testing.assert_array_equal(model.group_counts_, before)
    # new values for the same classes are fine: the stream goes on from the tuned prior
    model.set_params(alphas={0: 2.0, 1: 3.0}).partial_fit(groups, labels)
    np.testing.assert_allclose(model.group_counts_, 2 * before)


@pytest.mark.parametrize("alphas", [{0: "a", 1: 1.0}, {0: "2", 1: 1.0}, {0: True, 1: 1.0}])
def test_alphas_that_are_not_numbers_are_named(alphas):
    """'a' raised numpy's "could not convert string to float"; "2" and True were read as 2, 1."""
    with pytest.raises(ValueError, match="alphas must map each class to a real number"):
        EmpiricalBayesDirichletClassifier(alphas).fit(groups, labels)
