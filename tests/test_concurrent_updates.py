"""Updates of one model from several threads serialise and lose nothing, predictions
always see one consistent model, and a failed or interrupted update leaves the model as
it was (issue 11, item 3)."""

from __future__ import annotations

import copy
import pickle
import threading
import time

import numpy as np
import pytest

from hebnb import AODE, CategoricalNB, EmpiricalBayesDirichletClassifier, _core

N_THREADS, N_BATCHES, BATCH = 2, 50, 200


def batches(seed: int, n_features: int):
    """Per thread, its batches; later batches bring categories the first ones lack, so
    that the vocabulary (and the table shapes) grows while the threads run."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(N_THREADS):
        mine = []
        for b in range(N_BATCHES):
            high = 3 + (t * N_BATCHES + b) // 10
            X = rng.integers(0, high, size=(BATCH, n_features))
            y = rng.integers(0, 3, size=BATCH)
            mine.append((X, y))
        out.append(mine)
    return out


def run_threads(model, work, reader=None):
    """Runs ``work[t]`` (a list of batches) in thread t; ``reader`` in one more thread
    until they finish. Returns the exceptions raised."""
    errors = []
    done = threading.Event()

    def update(mine):
        try:
            for X, y in mine:
                model.partial_fit(X, y, classes=[0, 1, 2])
        except Exception as error:  # noqa: BLE001 (collected, asserted empty below)
            errors.append(error)

    def read():
        while not done.is_set():
            try:
                reader()
            except Exception as error:  # noqa: BLE001 (collected, asserted empty)
                errors.append(error)
                return

    threads = [threading.Thread(target=update, args=(mine,)) for mine in work]
    readers = [threading.Thread(target=read)] if reader is not None else []
    for t in threads + readers:
        t.start()
    for t in threads:
        t.join()
    done.set()
    for t in readers:
        t.join()
    return errors


@pytest.mark.parametrize("make", [CategoricalNB, lambda: AODE(n_jobs=2)], ids=["nb", "aode"])
def test_concurrent_partial_fits_keep_every_row_and_equal_one_fit(make):
    work = batches(0, 4)
    model = make()
    model.partial_fit(work[0][0][0][:3], work[0][0][1][:3], classes=[0, 1, 2])
    first = (work[0][0][0][:3], work[0][0][1][:3])
    probe = np.random.default_rng(1).integers(0, 8, size=(64, 4))

    def reader():
        proba = model.predict_proba(probe)
        assert proba.shape == (64, 3)
        assert np.allclose(proba.sum(axis=1), 1.0)

    errors = run_threads(model, work, reader)
    assert errors == []
    n_rows = 3 + N_THREADS * N_BATCHES * BATCH
    assert model.class_count_.sum() == n_rows  # unit weights: exact
    # counts add up whatever the order of the batches: one fit on all rows agrees
    X_all = np.vstack([first[0]] + [X for mine in work for X, _ in mine])
    y_all = np.concatenate([first[1]] + [y for mine in work for _, y in mine])
    reference = make().fit(X_all, y_all)
    np.testing.assert_array_equal(model.class_count_, reference.class_count_)
    if isinstance(model, CategoricalNB):
        for got, want in zip(model.category_count_, reference.category_count_):
            np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(
        model.predict_proba(probe), reference.predict_proba(probe), rtol=1e-9, atol=1e-12
    )


def test_concurrent_partial_fits_of_the_group_classifier_keep_every_row():
    rng = np.random.default_rng(2)
    model = EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0, 2: 1.0})
    work = [
        [(rng.integers(0, 50, size=(BATCH, 1)), rng.integers(0, 3, size=BATCH)) for _ in range(30)]
        for _ in range(N_THREADS)
    ]
    errors = []

    def update(mine):
        try:
            for X, y in mine:
                model.partial_fit(X, y)
        except Exception as error:  # noqa: BLE001 (collected, asserted empty)
            errors.append(error)

    def read():
        for _ in range(200):
            proba = model.predict_proba([[1], [7], [999]])
            if not np.allclose(proba.sum(axis=1), 1.0):
                errors.append(AssertionError(proba))

    threads = [threading.Thread(target=update, args=(mine,)) for mine in work]
    threads.append(threading.Thread(target=read))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert model.group_counts_.sum() == N_THREADS * 30 * BATCH
    # the counts per group are the plain tallies of every row sent
    X_all = np.vstack([X for mine in work for X, _ in mine])[:, 0]
    y_all = np.concatenate([y for mine in work for _, y in mine])
    tally = np.zeros((50, 3))
    np.add.at(tally, (X_all, y_all), 1.0)
    order = np.asarray(model.groups_, dtype=np.int64)
    np.testing.assert_array_equal(model.group_counts_, tally[order])


@pytest.mark.parametrize("learning_rate", [1.0, 0.9])  # cells restored / tables restored
@pytest.mark.parametrize("error", [KeyboardInterrupt, MemoryError])
def test_an_update_that_fails_midway_leaves_the_model_as_it_was(monkeypatch, error, learning_rate):
    rng = np.random.default_rng(3)
    X, y = rng.integers(0, 4, size=(300, 3)), rng.integers(0, 2, size=300)
    model = CategoricalNB(learning_rate=learning_rate).fit(X, y)
    model.partial_fit(X[:50], y[:50])  # a stream: tables grow
    model.predict_proba(X[:1])  # in place from here on
    before = pickle.dumps(model)
    probe = model.predict_proba(X[:20])

    def fail(*args, **kwargs):
        raise error("from the core")

    real_add_counts = _core.add_counts

    def add_then_fail(*args, **kwargs):
        real_add_counts(*args, **kwargs)  # the tables are changed in place, then it fails
        raise error("from the core")

    monkeypatch.setattr(_core, "fit_concentrations", fail)
    monkeypatch.setattr(_core, "add_counts", add_then_fail)
    X_new = np.column_stack([X[:, :2], X[:, 2] + 10])  # new categories: the vocabulary grows
    with pytest.raises(error):
        model.partial_fit(X_new, y)
    with pytest.raises(error):
        model.fit(X_new, y)
    monkeypatch.undo()
    assert pickle.dumps(model) == before
    np.testing.assert_array_equal(model.predict_proba(X[:20]), probe)


def test_locks_are_not_pickled_copied_or_cloned():
    from sklearn.base import clone

    rng = np.random.default_rng(4)
    X, y = rng.integers(0, 4, size=(100, 3)), rng.integers(0, 2, size=100)
    model = CategoricalNB().fit(X, y)
    locks = [key for key in vars(model) if "lock" in key]
    assert locks and not any("lock" in key for key in model.__getstate__())
    for other in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model), clone(model)):
        # every model is made with locks of its own
        assert all(vars(other)[key][1] is not vars(model)[key][1] for key in locks)
    copied = copy.deepcopy(model)
    copied.partial_fit(X, y)
    assert copied.class_count_.sum() == 2 * model.class_count_.sum()


@pytest.mark.parametrize(
    ("make", "n_features"),
    [
        (CategoricalNB, 3),
        (lambda: CategoricalNB(smoothing="laplace"), 3),
        (AODE, 3),
        (lambda: EmpiricalBayesDirichletClassifier({0: 1.0, 1: 1.0}), 1),
    ],
)
def test_updating_a_shallow_copy_leaves_the_original_alone(make, n_features):
    """``copy.copy`` gives an independent model: updating it with new categories used to
    grow the original's shared vocabulary and count tables (wrong counts, or a model
    that could no longer predict)."""
    rng = np.random.default_rng(6)
    X, y = rng.integers(0, 4, size=(200, n_features)), rng.integers(0, 2, size=200)
    model = make().fit(X, y)
    before = pickle.dumps(model)
    expected = model.predict_proba(X)
    shallow = copy.copy(model)
    shallow.partial_fit(X + 10, y)  # every value a new category
    np.testing.assert_array_equal(model.predict_proba(X), expected)
    assert pickle.dumps(model) == before
    # and the copy is the deep copy's update
    deep = copy.deepcopy(model).partial_fit(X + 10, y)
    np.testing.assert_array_equal(shallow.predict_proba(X + 10), deep.predict_proba(X + 10))


@pytest.mark.parametrize("make", [CategoricalNB, AODE])
def test_threads_predicting_with_one_model_at_once_agree(make):
    """Coding integer columns runs without the GIL; it used to hold the vocabulary
    exclusively, so a second thread predicting at the same time got "Already borrowed"."""
    rng = np.random.default_rng(5)
    X, y = rng.integers(0, 6, size=(20_000, 5)), rng.integers(0, 3, size=20_000)
    model = make(n_jobs=2).fit(X, y)
    expected = model.predict_proba(X)
    results, errors = [], []

    def predict():
        try:
            for _ in range(5):
                results.append(model.predict_proba(X))
        except Exception as error:  # noqa: BLE001 (collected, asserted empty)
            errors.append(error)

    threads = [threading.Thread(target=predict) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 20
    for proba in results:
        np.testing.assert_array_equal(proba, expected)


def test_a_pickle_taken_while_an_update_adds_counts_in_place_holds_all_of_it_or_none(
    monkeypatch,
):
    """partial_fit adds a batch into the model's count tables in place: a pickle from
    another thread waits for the update, never catching the tables with the batch and the
    class totals without it."""
    rng = np.random.default_rng(8)
    X, y = rng.integers(0, 5, size=(200, 3)), rng.integers(0, 2, size=200)
    model = CategoricalNB().fit(X[:100], y[:100]).partial_fit(X[100:150], y[100:150])
    model.predict_proba(X[:1])  # the stream's tables exist: the next batch goes in place
    real_add_counts = _core.add_counts
    added, taken = threading.Event(), {}

    def add_then_pause(*args, **kwargs):
        real_add_counts(*args, **kwargs)
        added.set()
        time.sleep(0.3)  # the reader pickles the model now, mid-update

    def reader():
        added.wait(timeout=30)
        taken["model"] = pickle.loads(pickle.dumps(model))

    monkeypatch.setattr(_core, "add_counts", add_then_pause)
    thread = threading.Thread(target=reader)
    thread.start()
    model.partial_fit(X[150:], y[150:])
    thread.join()
    snapshot = taken["model"]
    for table in snapshot.category_count_:
        np.testing.assert_array_equal(table.sum(axis=1), snapshot.class_count_)
    np.testing.assert_array_equal(snapshot.class_count_, np.bincount(y, minlength=2))


def stream_model(make, seed=7):
    """A model left unsolved by partial_fit, its data, and the predictions of the same
    model solved at once."""
    rng = np.random.default_rng(seed)
    X, y = rng.integers(0, 30, size=(3000, 4)), rng.integers(0, 3, size=3000)
    expected = make().partial_fit(X, y).predict_proba(X[:50])
    return make().partial_fit(X, y), X, expected


#: The core call in the middle of each model's solve (after it has begun to set state).
SOLVE_CORE_CALL = {CategoricalNB: "fit_concentrations", AODE: "fit_aode"}


def hold_the_solve(monkeypatch, cls):
    """Makes ``cls``'s solve wait, inside its core call, for the returned event (set: go
    on) after signalling the other event (set: the solve is under way)."""
    started, go = threading.Event(), threading.Event()
    name = SOLVE_CORE_CALL[cls]
    call = getattr(_core, name)

    def held(*args, **kwargs):
        started.set()
        assert go.wait(30)
        return call(*args, **kwargs)

    monkeypatch.setattr(_core, name, held)
    return started, go


@pytest.mark.parametrize("make", [CategoricalNB, AODE])
def test_first_reads_after_partial_fit_from_several_threads_wait_for_one_solve(make):
    """Four threads predicting from a model partial_fit left unsolved: one solves, the
    others wait for its tables (CategoricalNB's readers read tables the solving thread
    had not written yet: AttributeError '_score_table')."""

    def predict(model, X, barrier, results):
        barrier.wait()
        results.append(model.predict_proba(X[:50]))

    for seed in range(5):
        model, X, expected = stream_model(make, seed)
        barrier, results = threading.Barrier(4), []
        threads = [
            threading.Thread(target=predict, args=(model, X, barrier, results)) for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(results) == 4
        for proba in results:
            np.testing.assert_array_equal(proba, expected)


@pytest.mark.parametrize("make", [CategoricalNB, AODE])
@pytest.mark.parametrize("failure", [KeyboardInterrupt, MemoryError])
def test_an_interrupted_solve_leaves_the_model_unsolved(monkeypatch, make, failure):
    """Ctrl-C or a MemoryError inside the deferred solve, after it has set part of the
    state: the model stays as partial_fit left it and solves at its next use
    (CategoricalNB cleared its flag first and lost its tables for good)."""
    model, X, expected = stream_model(make)

    def failing(*args, **kwargs):
        raise failure

    with monkeypatch.context() as patch:
        patch.setattr(_core, SOLVE_CORE_CALL[make], failing)
        with pytest.raises(failure):
            model.predict_proba(X[:50])
    np.testing.assert_array_equal(model.predict_proba(X[:50]), expected)


@pytest.mark.parametrize("make", [CategoricalNB, AODE])
def test_set_params_during_a_solve_is_kept_and_not_seen_by_it(monkeypatch, make):
    """The solve after partial_fit uses the parameters of that update on a private copy:
    set_params while it runs is neither seen by it nor undone when it ends."""
    model, X, expected = stream_model(make)
    started, go = hold_the_solve(monkeypatch, make)
    results = []
    reader = threading.Thread(target=lambda: results.append(model.predict_proba(X[:50])))
    reader.start()
    assert started.wait(30)
    model.set_params(min_count=3.0, fit_prior=False)
    go.set()
    reader.join()
    np.testing.assert_array_equal(results[0], expected)
    assert model.get_params()["min_count"] == 3.0
    assert model.get_params()["fit_prior"] is False


@pytest.mark.parametrize("make", [CategoricalNB, AODE])
def test_a_pickle_taken_during_a_solve_is_a_whole_model(monkeypatch, make):
    """pickle.dumps while another thread solves waits for the solve: the pickle held the
    solving thread's half-written state (no tables, flag cleared)."""
    model, X, expected = stream_model(make)
    started, go = hold_the_solve(monkeypatch, make)
    reader = threading.Thread(target=model.predict_proba, args=(X[:50],))
    reader.start()
    assert started.wait(30)
    blobs = []
    pickler = threading.Thread(target=lambda: blobs.append(pickle.dumps(model)))
    pickler.start()
    time.sleep(0.2)
    go.set()
    reader.join()
    pickler.join()
    monkeypatch.undo()
    np.testing.assert_array_equal(pickle.loads(blobs[0]).predict_proba(X[:50]), expected)
