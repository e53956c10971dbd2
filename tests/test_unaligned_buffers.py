"""Arrays and Arrow buffers at unaligned addresses, as partitions and models unpickled
from Dask's byte frames arrive on a worker: read as aligned ones are."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from hebnb import (
    AODE,
    BernoulliNB,
    CategoricalNB,
    ComplementNB,
    EmpiricalBayesDirichletClassifier,
    GaussianNB,
    MultinomialNB,
)


def _unaligned_strings(values: list[str | None]):
    """A string array whose offsets buffer starts one byte past an aligned address."""
    pa = pytest.importorskip("pyarrow")
    aligned = pa.array(values, type=pa.string())
    validity, offsets, data = aligned.buffers()
    shifted = pa.py_buffer(b"\x00" + offsets.to_pybytes())[1:]
    assert shifted.address % 4 != 0
    return pa.StringArray.from_buffers(len(values), shifted, data, validity, aligned.null_count)


def test_strings_in_unaligned_arrow_buffers_fit_as_aligned_ones():
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    values = [str(v) if v < 5 else None for v in rng.integers(0, 6, size=300)]
    y = rng.integers(0, 2, size=300)
    column = pd.array(_unaligned_strings(values), dtype=pd.ArrowDtype(pa.string()))
    unaligned = CategoricalNB().fit(pd.DataFrame({"a": column}), y)
    reference = CategoricalNB().fit(pd.DataFrame({"a": pd.Series(values, dtype=object)}), y)
    np.testing.assert_array_equal(unaligned.category_count_[0], reference.category_count_[0])
    rows = pd.DataFrame({"a": ["0", "3", None]})
    np.testing.assert_allclose(unaligned.predict_proba(rows), reference.predict_proba(rows))


def _shipped(model):
    """``model`` through pickle protocol 5 with its arrays' buffers out of band, each moved
    to an odd address before loading (what a byte frame between processes can do)."""
    buffers = []
    data = pickle.dumps(model, protocol=5, buffer_callback=buffers.append)
    moved = []
    for buffer in buffers:
        raw = buffer.raw()
        odd = bytearray(len(raw) + 1)
        odd[1:] = raw
        moved.append(memoryview(odd)[1:])
    assert moved, "the model's arrays should travel out of band"
    return pickle.loads(data, buffers=moved)


@pytest.mark.parametrize(
    "model",
    [
        CategoricalNB(),
        CategoricalNB(weighting="cll-value"),
        AODE(),
        AODE(max_parents=2, smoothing="laplace", weighting="cll-value"),
        MultinomialNB(),
        ComplementNB(),
        BernoulliNB(),
        GaussianNB(),
        EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}),
    ],
    ids=repr,
)
def test_a_model_unpickled_at_odd_addresses_predicts_and_learns_as_before(model):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(300, 5))
    y = (X[:, 0] + rng.integers(0, 2, size=300) > 2).astype(int)
    if isinstance(model, EmpiricalBayesDirichletClassifier):
        X = X[:, :1]
    model.fit(X, y)
    shipped = _shipped(model)
    np.testing.assert_array_equal(shipped.predict_proba(X), model.predict_proba(X))
    if getattr(model, "weighting", None) is None:  # weighted models refuse partial_fit
        for learner in (model, shipped):
            learner.partial_fit(X[:50], y[:50])
        np.testing.assert_allclose(shipped.predict_proba(X), model.predict_proba(X), rtol=1e-12)


@pytest.mark.parametrize("model", [MultinomialNB(), ComplementNB(), BernoulliNB()])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_matrices_at_odd_addresses_fit_and_score_as_aligned_ones(model, fmt):
    """A sparse partition unpickled from Dask's frames has its data, indices and
    pointers at odd addresses: the count models refused it ("not contiguous or is
    misaligned"), intermittently on a cluster, whenever a block moved between workers."""
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(2)
    counts = rng.poisson(0.3, size=(600, 8)).astype(float)
    y = rng.choice(list("pqr"), size=600)
    matrix = _shipped(sparse.csr_matrix(counts).asformat(fmt))
    assert not matrix.data.flags.aligned
    from sklearn.base import clone

    fitted = clone(model).fit(matrix, y)
    reference = clone(model).fit(counts, y)
    np.testing.assert_array_equal(fitted.feature_count_, reference.feature_count_)
    np.testing.assert_array_equal(fitted.predict_proba(matrix), reference.predict_proba(counts))
