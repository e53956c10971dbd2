"""QA regressions: input forms a scikit-learn user passes that were refused or mis-read.

Each test compares against a model fitted on an input already known to work (small ints
with the same category structure), since Naive Bayes only sees which rows share a value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hebnb import AODE, CategoricalNB

ESTIMATORS = [CategoricalNB, AODE]


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 3, size=(60, 2))
    y = rng.integers(0, 2, size=60)
    return X, y


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_uint64_beyond_int64_is_a_category_like_any_other(estimator, small):
    """uint64 values >= 2**63 do not fit int64: they were refused as 'unsupported dtype'."""
    X, y = small
    big = X.astype(np.uint64) + np.uint64(2**63)
    expected = estimator().fit(X, y).predict_proba(X)
    model = estimator().fit(big, y)
    np.testing.assert_allclose(model.predict_proba(big), expected, rtol=1e-12)
    assert model.categories_[0].tolist() == [2**63, 2**63 + 1, 2**63 + 2]


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_whole_floats_beyond_int64_are_categories(estimator, small):
    X, y = small
    huge = (X + 1).astype(np.float64) * 1e19
    expected = estimator().fit(X, y).predict_proba(X)
    np.testing.assert_allclose(estimator().fit(huge, y).predict_proba(huge), expected, rtol=1e-12)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_numbers_at_predict_for_a_feature_trained_on_other_values(estimator, small):
    """A numeric column at predict time for a feature whose training values were not
    numpy numbers was refused with 'unsupported dtype int64'."""
    X, y = small
    # trained on a categorical column of ints: plain ints at predict are the same values
    frame = pd.DataFrame({"a": pd.Categorical(X[:, 0]), "b": X[:, 1]})
    model = estimator().fit(frame, y)
    plain = pd.DataFrame({"a": X[:, 0], "b": X[:, 1]})
    np.testing.assert_allclose(model.predict_proba(plain), model.predict_proba(frame), rtol=1e-12)
    # trained on strings: the ints 0, 1, 2 are not the strings "0", "1", "2", so they are
    # unknown, scored like missing values
    strings = estimator().fit(X.astype(str), y)
    as_ints = np.column_stack([X[:, 0], X[:, 1].astype(str)]).astype(object)
    as_ints[:, 0] = X[:, 0]
    missing = as_ints.copy()
    missing[:, 0] = None
    np.testing.assert_allclose(
        strings.predict_proba(as_ints), strings.predict_proba(missing), rtol=1e-12
    )
    np.testing.assert_allclose(
        strings.predict_proba(pd.DataFrame(X)),
        strings.predict_proba(np.full(X.shape, None, dtype=object)),
        rtol=1e-12,
    )


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(
    "batch",
    [
        np.array([[2**63, 0], [1, 1]], dtype=np.uint64),
        np.array([[2**64, 0], [-(2**63) - 1, 1]], dtype=object),
    ],
)
def test_partial_fit_with_integers_beyond_int64_for_an_integer_feature(estimator, small, batch):
    """The grown vocabulary was cast back to int64: OverflowError 'Python int too large to
    convert to C long'. Now the feature is coded by value, like one fit on all the rows."""
    X, y = small
    model = estimator().fit(X, y).partial_fit(batch, [0, 1])
    everything = np.vstack([X.astype(object), batch.astype(object)])
    reference = estimator().fit(everything, np.r_[y, 0, 1])
    np.testing.assert_allclose(
        model.predict_proba(everything), reference.predict_proba(everything), rtol=1e-12
    )
