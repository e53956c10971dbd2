"""Small scoring calls run on the calling thread (handing a few rows to a pool thread
cost more than scoring them); large ones in the pool. Both give the same numbers to the
bit, whatever ``n_jobs``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from hebnb import BernoulliNB, CategoricalNB, ComplementNB, MultinomialNB

#: More rows than a call scores on the calling thread (``INLINE_ROWS`` in the core).
POOLED_ROWS = 5000


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize(
    "make", [CategoricalNB, MultinomialNB, ComplementNB, BernoulliNB], ids=lambda m: m.__name__
)
def test_rows_scored_alone_equal_rows_scored_in_the_pool(make, n_jobs):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, size=(POOLED_ROWS, 12))
    y = rng.integers(0, 3, size=POOLED_ROWS)
    model = make(n_jobs=n_jobs).fit(X, y)
    inputs = [X] if make is CategoricalNB else [X, sp.csr_matrix(X)]
    for rows in inputs:
        whole_joint = model.predict_joint_log_proba(rows)
        whole_proba = model.predict_proba(rows)
        for start in (0, 7, POOLED_ROWS - 3):
            part = rows[start : start + 3]
            np.testing.assert_array_equal(
                model.predict_joint_log_proba(part), whole_joint[start : start + 3]
            )
            np.testing.assert_array_equal(model.predict_proba(part), whole_proba[start : start + 3])
            np.testing.assert_array_equal(
                model.predict(part), model.classes_[np.argmax(whole_joint[start : start + 3], 1)]
            )
