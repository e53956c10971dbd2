"""A Ctrl-C that lands anywhere in a model's thread-safety guard never leaves the model
locked or half-updated: other threads can still read and update it, and it is the model
before the interrupted call or the model after it, nothing in between.

Python raises ``KeyboardInterrupt`` where its interpreter looks for signals: on entering
a function, on jumping backwards and after a call returns. The first tests raise it at
the start of every line instead (a trace function, one line per run) of the Python code
a call runs in hebnb and in ``threading``, which includes all those places, with one
exception: the line that gives the lock back in ``_holding``'s ``finally``, where the
interpreter looks for no signal before that call. The last test sends real SIGINTs,
every 0-2 ms, to a process updating and reading a model for a few seconds."""

from __future__ import annotations

import copy
import functools
import inspect
import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import hebnb
from hebnb import AODE, CategoricalNB, GaussianNB, MixedNB, MultinomialNB
from hebnb._base import _holding

#: Files whose lines an interrupt is injected at.
WATCHED = (os.path.dirname(hebnb.__file__), threading.__file__)

#: The line of ``_holding`` that gives the lock back (see the module's docstring).
RELEASE_LINE = next(
    _holding.__code__.co_firstlineno + offset
    for offset, line in enumerate(inspect.getsource(_holding).splitlines())
    if "release_to" in line and "lock." in line
)

#: Seconds a probe thread gets before the model counts as locked for good.
PROBE_TIMEOUT = 30.0

MODELS = {
    "categorical": CategoricalNB,
    "categorical-forgetting": lambda: CategoricalNB(learning_rate=0.9),
    "aode": AODE,
    "multinomial": MultinomialNB,
    "gaussian": GaussianNB,
    # parts updated one after the other, each in its own guarded update: an interrupt in
    # the second leaves the first to be rolled back by MixedNB's (both forget, at the one
    # rate MixedNB's class prior then ages at too)
    "mixed": lambda: MixedNB(
        models=[
            ("categorical", CategoricalNB(learning_rate=0.9), [0, 1]),
            ("codes", CategoricalNB(learning_rate=0.9), [2, 3]),
        ]
    ),
    "mixed-counts": lambda: MixedNB(
        models=[("categorical", CategoricalNB(), [0, 1]), ("counts", MultinomialNB(), [2, 3])]
    ),
}


def interrupted_at_line(k: int, call) -> bool:
    """Runs ``call()`` raising KeyboardInterrupt at its ``k``-th line (1-based) in
    :data:`WATCHED`; whether it came (false: the call has fewer lines)."""
    seen = 0

    def in_watched_frame(frame, event, arg):
        nonlocal seen
        if event == "line" and (frame.f_code, frame.f_lineno) != (_holding.__code__, RELEASE_LINE):
            seen += 1
            if seen == k:
                raise KeyboardInterrupt
        return in_watched_frame

    def on_call(frame, event, arg):
        return in_watched_frame if frame.f_code.co_filename.startswith(WATCHED) else None

    sys.settrace(on_call)
    try:
        call()
    except KeyboardInterrupt:
        return True
    finally:
        sys.settrace(None)
    return False


def on_another_thread(call):
    """``call()`` on a new thread; fails the test if it is still waiting after
    :data:`PROBE_TIMEOUT` (the model was left locked)."""
    out = []
    thread = threading.Thread(target=lambda: out.append(call()), daemon=True)
    thread.start()
    thread.join(PROBE_TIMEOUT)
    assert not thread.is_alive(), "the model stayed locked after the interrupt"
    assert out, "the call on the other thread failed"
    return out[0]


def batches():
    """Three batches, each with categories the ones before lack (the vocabulary and the
    tables grow)."""
    rng = np.random.default_rng(0)
    return [
        (rng.integers(0, 3 + 2 * b, size=(60, 4)), rng.integers(0, 2, size=60)) for b in range(3)
    ]


def same_model(model, reference, X) -> bool:
    """Whether ``model`` predicts what ``reference`` does (and knows the same
    categories, where it has any)."""
    probabilities = on_another_thread(lambda: model.predict_proba(X))
    if not np.allclose(probabilities, reference.predict_proba(X), rtol=1e-10, atol=1e-14):
        return False
    if hasattr(reference, "categories_"):
        mine = on_another_thread(lambda: model.categories_)
        return all(np.array_equal(a, b) for a, b in zip(mine, reference.categories_))
    return True


def check_whole_and_unlocked(model, before, after, last):
    """``model`` is ``before`` or ``after`` and another thread can still update it."""
    X = np.vstack([batch[0] for batch in batches()])
    was = [candidate for candidate in (before, after) if same_model(model, candidate, X)]
    assert was, "the interrupted call left the model neither as it was nor updated"
    on_another_thread(lambda: model.partial_fit(*last))
    expected = copy.deepcopy(was[0]).partial_fit(*last)
    assert same_model(model, expected, X)


@pytest.mark.parametrize("make", MODELS.values(), ids=MODELS.keys())
def test_an_interrupt_at_any_line_of_an_update_leaves_it_undone_or_done_and_unlocked(make):
    first, second, last = batches()
    before = make().partial_fit(*first, classes=[0, 1])
    after = copy.deepcopy(before).partial_fit(*second)
    k = 0
    while True:
        k += 1
        model = copy.deepcopy(before)
        if not interrupted_at_line(k, functools.partial(model.partial_fit, *second)):
            break
        check_whole_and_unlocked(model, before, after, last)
    assert k > 100  # the trace saw the update's lines


@pytest.mark.parametrize("make", MODELS.values(), ids=MODELS.keys())
@pytest.mark.parametrize("read", ["predict_proba", "pickle"])
def test_an_interrupt_at_any_line_of_a_first_read_leaves_the_model_unlocked(make, read):
    # after partial_fit a model is solved on first use: that read writes its tables
    first, second, last = batches()
    X = second[0]
    updated = make().partial_fit(*first, classes=[0, 1]).partial_fit(*second)
    solved = copy.deepcopy(updated)
    k = 0
    while True:
        k += 1
        model = copy.deepcopy(updated)
        call = (
            functools.partial(model.predict_proba, X)
            if read == "predict_proba"
            else functools.partial(pickle.dumps, model)
        )
        if not interrupted_at_line(k, call):
            break
        check_whole_and_unlocked(model, solved, solved, last)
    assert k > 5


STRESS = textwrap.dedent(
    """
    import json, os, signal, sys, threading, time
    import numpy as np
    import hebnb
    from hebnb import {name}

    PACKAGE = os.path.dirname(hebnb.__file__)

    def interrupt_in_hebnb(signum, frame):
        # only while a call into hebnb runs: this script must keep count of its batches
        while frame is not None:
            if frame.f_code.co_filename.startswith(PACKAGE):
                raise KeyboardInterrupt
            frame = frame.f_back

    signal.signal(signal.SIGINT, interrupt_in_hebnb)

    def until_done(call):
        while True:
            try:
                return call()
            except KeyboardInterrupt:
                pass

    def batch(b):
        rng = np.random.default_rng(b)
        return rng.integers(0, 4 + b // 20, size=(40, 4)), rng.integers(0, 2, size=40)

    first = batch(0)
    model = until_done(lambda: {name}().partial_fit(*first, classes=[0, 1]))
    applied, interrupted = [first], 0
    stop = threading.Event()
    main = threading.main_thread().ident
    def send():
        pace = np.random.default_rng(2)
        while not stop.wait(pace.uniform(0, 0.002)):
            signal.pthread_kill(main, signal.SIGINT)
    sender = threading.Thread(target=send)
    sender.start()
    end = time.monotonic() + {seconds}
    b = 0
    while time.monotonic() < end:
        b += 1
        X, y = batch(b)
        seen = until_done(lambda: model.class_count_.sum())
        try:
            model.partial_fit(X, y)
        except KeyboardInterrupt:
            interrupted += 1
        try:
            model.predict_proba(X)
        except KeyboardInterrupt:
            interrupted += 1
        if until_done(lambda: model.class_count_.sum()) > seen:
            applied.append((X, y))
    stop.set()
    sender.join()
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def probe(out):
        out["proba"] = model.predict_proba(first[0])
        model.partial_fit(*first)
        out["updated"] = True
    out = {{}}
    prober = threading.Thread(target=probe, args=(out,), daemon=True)
    prober.start()
    prober.join(60)
    if prober.is_alive():
        print(json.dumps({{"locked": True, "interrupted": interrupted}}))
        sys.stdout.flush()
        os._exit(0)
    reference = {name}().partial_fit(*applied[0], classes=[0, 1])
    for batch in applied[1:]:
        reference.partial_fit(*batch)
    print(json.dumps({{
        "locked": False,
        "interrupted": interrupted,
        "applied": len(applied),
        "same": bool(np.allclose(out["proba"], reference.predict_proba(first[0]))),
        "updated": out.get("updated", False),
    }}))
    """
)


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals")
@pytest.mark.parametrize("name", ["CategoricalNB", "AODE"])
def test_a_stream_of_ctrl_c_during_updates_and_reads_never_locks_or_corrupts_the_model(name):
    result = subprocess.run(
        [sys.executable, "-c", STRESS.format(name=name, seconds=4)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert not report["locked"], report
    assert report["interrupted"] > 50, report  # the signals did land in hebnb's calls
    assert report["same"] and report["updated"], report
