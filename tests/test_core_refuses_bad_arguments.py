"""The compiled core refuses what it cannot use with a ValueError, never
a Rust panic (pyo3's PanicException, which is not an Exception subclass)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from hebnb import _core


@pytest.mark.parametrize(
    "categories, offsets",
    [
        (np.array([3, 1, 0]), [0, 3]),  # unsorted: panicked with "capacity overflow"
        (np.array([1, 1]), [0, 2]),
        (np.array([0, 1]), [0, 5]),  # beyond the categories: panicked slicing them
    ],
)
def test_encode_integers_refuses_categories_it_cannot_search(categories, offsets):
    values = np.array([[0, 1, 3]], dtype=np.int64)
    with pytest.raises(ValueError, match="categor"):
        _core.encode_integers(values, None, categories, offsets, 1)


def test_saving_and_restoring_counts_refuse_cells_outside_the_tables():
    tables = [np.zeros((2, 3)), np.zeros((2, 2))]
    codes = np.array([[0, 2], [1, 1]], dtype=np.int32)
    labels = np.array([0, 1], dtype=np.int64)
    saved = _core.touched_counts(tables, codes, labels)
    assert saved.shape == (4,)
    with pytest.raises(ValueError, match="saved cells"):
        _core.restore_counts(tables, codes, labels, saved[:3])
    with pytest.raises(ValueError):
        _core.touched_counts(tables, np.array([[0, 3], [1, 1]], dtype=np.int32), labels)
    with pytest.raises(ValueError):
        _core.touched_counts(tables, codes, np.array([0, 2], dtype=np.int64))  # no class 2


def test_integer_block_coding_writes_into_its_output_and_refuses_another_shape():
    vocabulary = _core.Vocabulary(2)
    values = np.array([[7, 5, 7], [1, 1, 2]], dtype=np.int64)
    codes = np.full((2, 5), 99, dtype=np.int32)
    # a column block of a longer table's codes (strided rows), as the encoder passes
    vocabulary.encode_int_block(values, None, grow=True, n_jobs=2, out=codes[:, 1:4])
    np.testing.assert_array_equal(codes, [[99, 0, 1, 0, 99], [99, 0, 0, 1, 99]])
    for out in (np.zeros((2, 2), dtype=np.int32), np.zeros((3, 3), dtype=np.int32)):
        with pytest.raises(ValueError, match="shape"):
            vocabulary.encode_int_block(values, None, grow=False, n_jobs=1, out=out)
    assert vocabulary.lengths() == [2, 2]
    assert [vocabulary.length(f) for f in range(2)] == [2, 2]
    with pytest.raises(ValueError, match="feature 2 outside the 2 features"):
        vocabulary.length(2)


# Found by fuzzing the bindings: each of these aborted the interpreter (an unchecked
# allocation), raised a PanicException, or read a table in the wrong order.


def run_isolated(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter, so that an abort fails the test, not the run."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("n_classes", [2**40, 2**62])
def test_counting_a_class_count_beyond_memory_is_a_memory_error(n_classes):
    done = run_isolated(
        f"""
import numpy as np
from hebnb import _core
for call in (
    lambda: _core.count_categories(
        np.zeros((1, 10), np.int32), np.zeros(10, np.int64), np.ones(10), [0, 2], {n_classes}, 1
    ),
    lambda: _core.count_tokens(
        np.array([0, 1], np.int64), np.array([0], np.int32), np.array([1.0]), np.array([0]),
        np.ones(1), n_rows=1, n_columns=2, by_columns=False, n_classes={n_classes},
        binarize=None, n_jobs=1,
    ),
):
    try:
        call()
    except MemoryError:
        print("MemoryError")
"""
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["MemoryError", "MemoryError"]


def test_a_layout_beyond_the_address_space_is_a_memory_error():
    with pytest.raises(MemoryError, match="feature layout"):
        _core.count_categories(
            np.zeros((1, 10), np.int32), np.zeros(10, np.int64), np.ones(10), [0, 2**62], 4, 1
        )


def test_an_lbfgs_memory_beyond_the_iterations_is_not_allocated():
    """``memory`` larger than the iterations can use was allocated as asked (120 GB:
    abort); no more corrections than iterations are kept, with the same result."""
    done = run_isolated(
        """
import numpy as np, hebnb
from hebnb import _core
calls = {}
fit = _core.fit_naive_bayes_weights
def record(*args, **kwargs):
    calls["args"] = (args, kwargs)
    return fit(*args, **kwargs)
_core.fit_naive_bayes_weights = record
rng = np.random.default_rng(0)
hebnb.CategoricalNB(weighting="cll-value").fit(rng.integers(0, 4, (200, 3)), rng.integers(0, 2, 200))
args, kwargs = calls["args"]
small = fit(*args, **dict(kwargs, memory=kwargs["max_iter"]))
for memory in (2**31, 2**63):
    large = fit(*args, **dict(kwargs, memory=memory))
    print(np.array_equal(large[0], small[0]))
"""
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True"]


def test_score_tables_in_another_order_or_shape_are_refused():
    indptr, indices, data = np.array([0, 1, 2]), np.array([0, 1], np.int32), np.ones(2)
    table = np.array([[1.0, 2.0], [3.0, 4.0]])

    def score(table, n_columns=2):
        return _core.score_rows(
            indptr, indices, data, table, np.zeros(2), n_columns=n_columns, binarize=None, n_jobs=1
        )

    np.testing.assert_array_equal(score(table), table)
    with pytest.raises(ValueError, match="C-contiguous"):
        score(np.asfortranarray(table))  # was read transposed
    with pytest.raises(ValueError, match="shape"):
        score(table.reshape(1, 4))
    with pytest.raises(ValueError, match="shape"):
        score(np.zeros((0, 2)), n_columns=2**63)  # V x C wrapped to 0: PanicException


def test_a_validity_bitmap_offset_that_overflows_is_refused():
    vocabulary = _core.Vocabulary(1)
    for positions in (np.array([1]), None):
        with pytest.raises(ValueError, match="validity bitmap shorter"):
            vocabulary.encode_utf8(
                0,
                np.array([0, 1, 2], np.int32),
                np.frombuffer(b"ab", np.uint8),
                np.array([1], np.uint8),
                2**64 - 1,  # + n wrapped past the length check
                grow=True,
                name="f",
                positions=positions,
            )


def test_a_thread_count_far_beyond_the_cores_is_capped():
    """n_jobs=100,000 built a pool of that many threads (minutes); the result does not
    depend on the count, so the pool is capped."""
    done = run_isolated(
        "import numpy as np; from hebnb import _core; "
        "print(_core.log_posterior(np.zeros((3, 2)), 100_000).shape)"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "(3, 2)"


@pytest.mark.parametrize("bad", [np.nan, np.inf, -1.0])
def test_counting_refuses_weights_that_are_not_finite_and_non_negative(bad):
    """NaN, infinite or negative weights made NaN or negative counts without a word."""
    codes, labels = np.zeros((1, 4), np.int32), np.zeros(4, np.int64)
    weights = np.array([1.0, bad, 1.0, 1.0])
    with pytest.raises(ValueError, match="finite and non-negative"):
        _core.count_categories(codes, labels, weights, [0, 2], 2, 1)
    with pytest.raises(ValueError, match="finite and non-negative"):
        _core.count_tokens(
            np.arange(5, dtype=np.int64), np.zeros(4, np.int32), np.ones(4), labels, weights,
            n_rows=4, n_columns=2, by_columns=False, n_classes=2, binarize=None, n_jobs=1,
        )  # fmt: skip
    tables = [np.zeros((2, 2))]
    with pytest.raises(ValueError, match="finite and non-negative"):
        _core.add_counts(tables, np.zeros(2), codes, labels, weights, decay=1.0, n_jobs=1)
    np.testing.assert_array_equal(tables[0], 0.0)  # refused before anything was added


def test_a_decay_that_is_not_finite_and_non_negative_is_refused():
    codes, labels, weights = np.zeros((1, 2), np.int32), np.zeros(2, np.int64), np.ones(2)
    for decay in (np.nan, np.inf, -0.5):
        with pytest.raises(ValueError, match="decay"):
            _core.add_counts(
                [np.ones((2, 2))], np.ones(2), codes, labels, weights, decay=decay, n_jobs=1
            )
    tables = [np.ones((2, 2))]
    _core.add_counts(tables, np.ones(2), codes, labels, weights, decay=0.0, n_jobs=1)
    np.testing.assert_array_equal(tables[0], [[2.0, 0.0], [0.0, 0.0]])


def test_a_nan_binarize_threshold_is_refused():
    with pytest.raises(ValueError, match="NaN"):
        _core.score_rows(
            np.array([0, 1, 2]), np.array([0, 1], np.int32), np.ones(2), np.zeros((2, 2)),
            np.zeros(2), n_columns=2, binarize=float("nan"), n_jobs=1,
        )  # fmt: skip


def object_column(*values):
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


def test_a_vocabulary_state_naming_objects_it_does_not_hold_is_refused():
    """A value token beyond the saved objects used to load, and a later object took that
    token and the code of another."""
    state = {
        "format": _core.Vocabulary().__getstate__()["format"],
        "features": [(bytes([4]), np.array([5]), b"", np.array([0], np.uint64), [(1, 2)])],
    }
    with pytest.raises(ValueError, match="corrupt vocabulary"):
        _core.Vocabulary().__setstate__(state)


def test_a_mark_of_another_vocabulary_is_refused_and_changes_nothing():
    vocabulary = _core.Vocabulary(1)
    pairs = object_column((1, 2), (3, 4))
    np.testing.assert_array_equal(vocabulary.encode_objects(0, pairs, grow=True, name="f"), [0, 1])
    for mark in ([(2, 0)], [(5, 2)], [(2, 9)]):
        with pytest.raises(ValueError, match="corrupt vocabulary|mark of another"):
            vocabulary.truncate(mark)
    # a new object gets a code of its own, the old ones keep theirs
    codes = vocabulary.encode_objects(0, object_column((5, 6), (1, 2), (3, 4)), grow=True, name="f")
    np.testing.assert_array_equal(codes, [2, 0, 1])
    assert vocabulary.values(0) == [(1, 2), (3, 4), (5, 6)]


def test_sizes_beyond_memory_are_memory_errors_under_an_address_space_limit():
    """A vocabulary of 2**31 or 2**62 features, a pair counted with a child of 2**31
    categories and a pair-table merge onto one: unchecked allocations that aborted the
    interpreter ("memory allocation of 34359738368 bytes failed") or panicked ("capacity
    overflow")."""
    done = run_isolated(
        """
import resource
resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
import numpy as np
from hebnb import _core
codes = np.array([[0, 1, 2, 0], [0, 1, 1, 2], [2, 0, 1, 1]], np.int32)
labels = np.array([0, 1, 0, 1], np.int64)
kw = dict(n_classes=2, capped=np.zeros((3, 3), bool), parents=np.ones(3, bool), n_jobs=1)
old = _core.count_pairs(codes, labels, np.ones(4), offsets=[0, 3, 6, 9], **kw)
calls = [
    lambda: _core.Vocabulary(2**31),
    lambda: _core.Vocabulary(2**62),
    lambda: _core.count_pairs(codes, labels, np.ones(4), offsets=[0, 3, 6, 6 + 2**31], **kw),
    lambda: _core.merge_pair_tables(
        old, old, old_offsets=[0, 3, 6, 9], offsets=[0, 3, 6, 2**31 - 1],
        new_codes=[[0, 1, 2]] * 3, decay=1.0, n_jobs=1,
    ),
]
for call in calls:
    try:
        call()
        print("ok")
    except MemoryError:
        print("MemoryError")
"""
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["MemoryError"] * 4


def test_a_vocabulary_used_while_it_codes_is_an_error_not_a_panic():
    """A value's __hash__ calling back into the vocabulary that is coding it, and a
    second thread growing it while a first one grows it without the GIL: explicit
    borrows panicked ("Already mutably borrowed") where pyo3's own give a RuntimeError."""
    import threading

    vocabulary = _core.Vocabulary(2)

    class CallsBack:
        def __hash__(self):
            vocabulary.encode_ints(0, np.array([1], np.int64), None, grow=False)
            return 1

        def __eq__(self, other):
            return self is other

    values = np.empty(1, dtype=object)
    values[0] = CallsBack()
    with pytest.raises(ValueError, match="Already (mutably )?borrowed"):
        vocabulary.encode_objects(0, values, grow=True, name="f")
    assert vocabulary.lengths() == [0, 0]  # nothing joined

    n = 400_000
    data = np.frombuffer(b"".join(b"%07d" % i for i in range(n)), np.uint8)
    offsets = np.arange(0, 7 * n + 1, 7, dtype=np.int64)
    errors: list[BaseException] = []

    def grow_strings():
        vocabulary.encode_utf8(1, offsets, data, None, 0, grow=True, name="f")

    thread = threading.Thread(target=grow_strings)
    thread.start()
    while thread.is_alive():
        try:
            vocabulary.encode_ints(0, np.array([1], np.int64), None, grow=True)
        except BaseException as error:  # noqa: BLE001 (a PanicException is not an Exception)
            errors.append(error)
    thread.join()
    assert all(isinstance(error, RuntimeError) for error in errors), errors
    assert vocabulary.length(1) == n
