"""The Type-II ML solver keeps the interior maximiser when the concentration bounds are wide."""

from __future__ import annotations

import numpy as np
import pytest

from hebnb import AODE, CategoricalNB


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 6, size=(400, 2))
    y = rng.integers(0, 2, size=400)
    return X, y, np.full(400, 1000.0)


@pytest.mark.parametrize("high", [1e20, 1e100, 1e300])
def test_a_wide_upper_bound_keeps_the_interior_maximiser(data, high):
    """Every concentration here has an interior maximiser (about 600-900, checked against
    mpmath). With concentration_bounds=(1e-2, 1e20) the solver read rounding noise of
    l'(m_max) as 'still rising' and returned 1e20 for every class and feature."""
    X, y, w = data
    reference = CategoricalNB(concentration_bounds=(1e-2, 1e4)).fit(X, y, sample_weight=w)
    assert np.all((reference.concentration_ > 100) & (reference.concentration_ < 2000))
    wide = CategoricalNB(concentration_bounds=(1e-2, high)).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(wide.concentration_, reference.concentration_, rtol=1e-8)
    np.testing.assert_allclose(wide.predict_proba(X), reference.predict_proba(X), rtol=1e-8)


def test_aode_with_a_wide_upper_bound_matches_the_default(data):
    X, y, w = data
    reference = AODE(prior="pooled").fit(X, y, sample_weight=w)
    wide = AODE(prior="pooled", concentration_bounds=(1e-2, 1e100)).fit(X, y, sample_weight=w)
    finite = np.isfinite(reference.concentration_)
    assert np.all(reference.concentration_[finite] < 1e4)  # interior: the bound plays no part
    np.testing.assert_allclose(
        wide.concentration_[finite], reference.concentration_[finite], rtol=1e-8
    )
