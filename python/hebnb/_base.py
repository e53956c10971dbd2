"""What every hebnb classifier shares: parameter checks, the thread budget, updates that
are atomic and thread-safe (:class:`ThreadSafeModel`), and ``predict`` /
``predict_proba`` / ``predict_log_proba`` written once over
``predict_joint_log_proba``, scoring long tables in chunks of rows."""

from __future__ import annotations

import copy
import functools
import numbers
import os
import threading
from abc import abstractmethod
from collections.abc import Callable, Sequence
from numbers import Real
from typing import Any, ClassVar, Self

import numpy as np
import pandas as pd
from joblib import cpu_count, effective_n_jobs
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import Tags
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core
from ._encoding import (
    CategoryEncoder,
    aligned_arrays,
    check_sample_weight,
    check_table_size,
    encode_labels,
)
from ._params import N_JOBS, ClassProbabilities, ConcentrationBounds, StrictInterval, StrOptions


def n_threads(n_jobs: object) -> int:
    """scikit-learn's ``n_jobs`` convention as a thread count (None -> 1, -1 -> all cores).

    Never more than the cores this process may use: results do not depend on the thread
    count, and the core keeps one pool per count, so ``n_jobs=2000`` would otherwise start
    (and keep) 2000 threads.
    """
    is_integer = isinstance(n_jobs, numbers.Integral) and not isinstance(n_jobs, bool)
    if n_jobs is not None and (not is_integer or n_jobs == 0):
        raise ValueError(f"n_jobs must be a non-zero integer or None, got {n_jobs!r}")
    wanted = int(effective_n_jobs(n_jobs))  # None: 1, or a joblib parallel_config's n_jobs
    return 1 if wanted <= 1 else max(1, min(wanted, _cores()))


@functools.cache
def _cores() -> int:
    """The cores this process may use (affinity and cgroup quota), asked once."""
    cores: int = cpu_count()
    return cores


def validate_table(estimator: BaseEstimator, X: Any, *, reset: bool, **kwargs: Any) -> Any:
    """scikit-learn's ``validate_data`` (keyword arguments passed on), and the check it
    leaves out: a DataFrame's column labels that are not strings (integers) are kept at
    fit and must match at predict, so that reordered columns are an error rather than
    silently different probabilities (mixed str/int labels are refused there, as in
    scikit-learn; string names are ``feature_names_in_``)."""
    labels = X.columns.tolist() if isinstance(X, pd.DataFrame) else None
    validated = validate_data(estimator, X, reset=reset, **kwargs)
    if labels is not None and all(isinstance(label, str) for label in labels):
        labels = None  # checked by scikit-learn as feature names
    if reset:
        estimator.__dict__.pop("_column_labels", None)
        if labels is not None:
            estimator._column_labels = labels
        return validated
    fitted = estimator.__dict__.get("_column_labels")
    if fitted is not None and labels is not None and labels != fitted:
        raise ValueError(
            "The column labels should match those that were passed during fit: "
            f"expected {fitted}, got {labels}"
        )
    return validated


def is_real(value: object) -> bool:
    """A real number that is not a bool (True is not a concentration or a rate)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_class_prior(class_prior: object, n_classes: int) -> np.ndarray | None:
    """``class_prior`` as float64 once the classes are known: one probability per class.

    Its values are checked with the other parameters (``ClassProbabilities``); this adds the
    length, which needs the labels, and runs before any counting.
    """
    if class_prior is None:
        return None
    prior = np.asarray(class_prior, dtype=np.float64)
    if prior.shape != (n_classes,):
        raise ValueError(
            f"Number of priors must match number of classes: got {prior.size} priors for "
            f"{n_classes} classes"
        )
    return prior


def concentration_interval(bounds: Sequence[float]) -> tuple[float, float]:
    """``concentration_bounds`` as the core takes it (checked by ``ConcentrationBounds``)."""
    return float(bounds[0]), float(bounds[1])


def class_log_prior(class_count: np.ndarray, *, fit_prior: bool, class_prior: object) -> np.ndarray:
    """ln pi_c: the Laplace prior (N_c + 1) / (S + C) of SPEC, uniform, or the user's."""
    n_classes = class_count.shape[0]
    prior = check_class_prior(class_prior, n_classes)
    if prior is not None:
        with np.errstate(divide="ignore"):
            log_prior: np.ndarray = np.log(prior)
        return log_prior
    if not fit_prior:
        return np.full(n_classes, -np.log(n_classes))
    laplace: np.ndarray = np.log(class_count + 1.0) - np.log(class_count.sum() + n_classes)
    return laplace


#: The constraints of the parameters every categorical classifier has (scikit-learn's
#: ``_parameter_constraints``); each estimator adds its own.
SHARED_CONSTRAINTS: dict[str, list[object]] = {
    "min_count": [StrictInterval(Real, 0, None, closed="left")],
    "concentration_bounds": [ConcentrationBounds()],
    "fit_prior": ["boolean"],
    "class_prior": [ClassProbabilities(), None],
    "handle_unknown": [StrOptions({"ignore", "error"})],
    "n_jobs": N_JOBS,
    "learning_rate": [StrictInterval(Real, 0, 1, closed="right")],
    "categories": [StrOptions({"auto"}), list, tuple],
}


#: Names of the locks a model keeps in its ``__dict__`` (never pickled or copied): one
#: letting reads share the model while no update runs and updates run one at a time;
#: one held, inside a read, by a reader that writes into the model's ``__dict__`` (the
#: solve after ``partial_fit``, attributes computed on first use) and by a pickle, which
#: copies it. Both are ``_core.ModelLock``, held by :func:`_holding` so that a Ctrl-C
#: cannot leave them held (``src/python/model_guard.rs``).
_STATE_LOCK = "_hebnb_state_lock"
_CACHE_LOCK = "_hebnb_cache_lock"
_LOCKS = frozenset({_STATE_LOCK, _CACHE_LOCK})

#: Methods that change a fitted model, and methods that only read it.
_UPDATES = ("fit", "partial_fit", "decay")
_READS = ("predict", "predict_proba", "predict_log_proba", "predict_joint_log_proba", "sample")

#: Per thread: the undos of the updates running on it (innermost last).
_working = threading.local()


def _new_locks(model: object) -> None:
    """Gives ``model`` its locks, created with it (``ThreadSafeModel.__new__``): made on
    first use instead, one would be added to the ``__dict__`` while an update copies it."""
    pid = os.getpid()
    for name in _LOCKS:
        model.__dict__.setdefault(name, (pid, _core.ModelLock()))


def _lock(model: object, name: str) -> Any:
    """The model's lock ``name`` in this process. Locks are kept with the id of the
    process that made them: a child forked while a thread of its parent held one makes
    its own instead of waiting for a thread that does not exist in it, unless that
    thread was updating the model, whose state the child then holds half-updated."""
    pid = os.getpid()
    entry = model.__dict__.get(name)
    if entry is None or entry[0] != pid:
        if entry is not None and name == _STATE_LOCK and entry[1].maybe_written():
            raise RuntimeError(
                "this process was forked while another thread was updating this model: "
                "its copy of the model may be half-updated. Fork between updates, or use "
                "the 'spawn' or 'forkserver' start method of multiprocessing"
            )
        fresh = (pid, _core.ModelLock())
        if entry is None:  # a model made without ThreadSafeModel.__new__
            entry = model.__dict__.setdefault(name, fresh)
        else:
            model.__dict__[name] = entry = fresh
    return entry[1]


def without_locks(state: dict[str, Any]) -> dict[str, Any]:
    """A copy of a model's ``__dict__`` without its locks (for pickling and copies)."""
    return {key: value for key, value in state.items() if key not in _LOCKS}


def _holding(lock: Any, writing: bool, work: Callable[[], Any]) -> Any:
    """``work()`` called holding ``lock`` (a ``_core.ModelLock``). Taking and giving back
    are single calls into the core, and ``release_to`` gives back whatever this thread
    took since ``holds()``, so a KeyboardInterrupt, which Python raises on entering a
    function, on a backward jump or after a call returns, leaves the lock as it found
    it: even one raised as ``hold`` returns is inside the ``try``, and the ``finally``
    makes its call before the interpreter looks for a signal. ``work`` runs in Python
    frames, not under a call into the core: a daemon thread running it as the
    interpreter exits is ended by Python with no Rust frame on its stack (one would
    abort the process)."""
    kept = lock.holds()
    try:
        lock.hold(writing=writing)
        return work()
    finally:
        lock.release_to(kept)


def _updating(model: object) -> bool:
    """Whether this thread runs an update of ``model`` (or of the model whose private
    copy it is): the model's updates called from there run directly."""
    entry = model.__dict__.get(_STATE_LOCK)
    return entry is not None and entry[0] == os.getpid() and entry[1].held_for_writing()


def on_failure(undo: Callable[[], None]) -> None:
    """Registers ``undo`` to run should the update running on this thread fail: an update
    that changes arrays it shares with the model in place (cost O(batch), where a private
    copy would cost O(model)) says here how to put them back. An undo writes back saved
    values, so running it twice is harmless (an undo cut short by Ctrl-C runs again).
    Outside a guarded update there is nothing to roll back to, and ``undo`` is dropped."""
    stack = getattr(_working, "undos", None)
    if stack:
        stack[-1].append(undo)


def _fitted_state(model: Any, source: Any) -> tuple[dict[str, Any], frozenset[str]]:
    """The state of ``source`` (``model`` or a private copy of it) that an install
    replaces, and the names it leaves alone: the constructor parameters and the locks,
    which stay the model's own (``set_params`` may have run meanwhile; an update or a
    solve never changes them)."""
    keep = _LOCKS.union(model._get_param_names())
    return {key: value for key, value in source.__dict__.items() if key not in keep}, keep


def _install(model: Any, work: Any, undos: list[Callable[[], None]]) -> None:
    """Makes the state of ``work`` (a private copy of ``model``) the model's and empties
    ``undos``, in one core call no interrupt splits (:func:`_fitted_state`)."""
    new_state, keep = _fitted_state(model, work)
    _core.commit_state(model.__dict__, new_state, keep, undos)


def _restorer(model: Any) -> Callable[[], None]:
    """An undo that puts back the state ``model`` has now (see :func:`_install`)."""
    state, keep = _fitted_state(model, model)
    return functools.partial(_core.commit_state, model.__dict__, state, keep, [])


def _update_privately(
    model: Any, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``method`` run on a private copy of ``model`` whose state then replaces the
    model's; called holding the model's lock for writing."""
    work = object.__new__(type(model))
    work.__dict__.update(without_locks(model.__dict__))
    # the copy shares the model's lock, which this thread holds: its own guarded methods
    # called by the update run directly
    work.__dict__[_STATE_LOCK] = model.__dict__[_STATE_LOCK]
    for name in getattr(model, "_updated_in_place", ()):
        if name in work.__dict__:
            work.__dict__[name] = copy.deepcopy(work.__dict__[name])
    # an update running inside another model's (MixedNB updating its parts) is handed to
    # the outer one once done, which can then roll it back by the state it replaced
    outer = _working.undos[-1] if getattr(_working, "undos", None) else None
    undos: list[Callable[[], None]] = []
    encoder = model.__dict__.get("_encoder")
    if hasattr(encoder, "mark"):
        # the first undo registered, so the last run: the vocabulary back to its mark
        undos.append(functools.partial(encoder.undo, encoder.mark()))
    if not hasattr(_working, "undos"):
        _working.undos = []
    _working.undos.append(undos)
    try:
        result = method(work, *args, **kwargs)
        if outer is not None:
            # before the state is installed: an interrupt between the two runs undos
            # twice, which is harmless, while one after would leave the outer update
            # unable to undo this one
            outer.append(_restorer(model))
            outer.extend(undos)
        # an interrupt before this undoes the update, one after it undoes nothing
        _install(model, work, undos)
    except BaseException:
        # no Python call before the undos: an interrupt cannot skip them
        _core.run_undos(undos)
        raise
    finally:
        _working.undos.pop()
    return model if result is work else result


def atomic_update(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps an updating method: calls on one model run one at a time and exclude
    readers; each runs on a private copy of the model whose state replaces the model's
    as a whole when (and only when) the call succeeds. The private copy shares the
    model's arrays (updates build new ones), except the attributes a class lists in
    ``_updated_in_place``, which are copied, arrays the update changes in place, which it
    restores through the undos it registers with :func:`on_failure`, and a vocabulary
    that grows in place, which is taken back to its mark on failure. An update of
    another model run inside it (MixedNB updating its groups) commits at once and hands
    its undos, with one that puts back the state it replaced, to this update. An
    exception, KeyboardInterrupt included, leaves the model as it was."""

    @functools.wraps(method)
    def update(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _updating(self):
            return method(self, *args, **kwargs)
        # (a thread reading the model gets an error here: it would wait for itself)
        run = functools.partial(_update_privately, self, method, args, kwargs)
        return _holding(_lock(self, _STATE_LOCK), True, run)

    update._hebnb_guarded = True  # type: ignore[attr-defined]
    return update


def learns_online(model: Any) -> bool:
    """Whether ``model`` offers ``partial_fit`` (scikit-learn's ``available_if``): not
    with discriminative weights, which are learned from the whole training set."""
    if getattr(model, "weighting", None) is not None:
        raise AttributeError(
            f"partial_fit does not support weighting={model.weighting!r}: the weights are "
            "learned from the whole training set; use fit"
        )
    return True


def read_consistently(model: object, read: Callable[[], Any]) -> Any:
    """``read()`` called holding ``model`` for reading, as a guarded reading method is:
    no update runs meanwhile (updates change some arrays in place)."""
    return _holding(_lock(model, _STATE_LOCK), False, read)


def cache_while_reading(model: object, compute: Callable[[], Any]) -> Any:
    """``compute()`` called holding ``model`` for reading and its cache lock: for a read
    that stores what it computes in the model's ``__dict__``, which other readers may be
    copying (a pickle) or filling meanwhile."""
    cache = _lock(model, _CACHE_LOCK)
    return read_consistently(model, functools.partial(_holding, cache, True, compute))


def consistent_property(compute: Callable[[Any], Any]) -> property:
    """A read-only property computed holding the model for reading: it never mixes
    tables of one state with a vocabulary an update is growing."""

    @functools.wraps(compute)
    def read(self: Any) -> Any:
        return read_consistently(self, functools.partial(compute, self))

    return property(read)


def _consistent_read(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps a reading method: it runs while no update does (reads share the model), so
    it never sees a half-replaced state or a vocabulary that is growing."""

    @functools.wraps(method)
    def read(self: Any, *args: Any, **kwargs: Any) -> Any:
        return read_consistently(self, functools.partial(method, self, *args, **kwargs))

    read._hebnb_guarded = True  # type: ignore[attr-defined]
    return read


#: Constructor parameter names per estimator class (``ThreadSafeModel._get_param_names``).
_PARAM_NAMES: dict[type, tuple[str, ...]] = {}


class ThreadSafeModel:
    """Mixin making a model's public methods safe to call from several threads.

    Every ``fit`` / ``partial_fit`` / ``decay`` a subclass defines runs under the
    model's update lock, excluding readers, on a private copy whose state replaces the
    model's at the end, so concurrent updates serialise (none is lost) and a failed or
    interrupted update changes nothing; predictions share the model between updates.
    The locks live in the instance (created on first use) and are left out of pickles
    and copies.
    """

    #: Attributes an update modifies in place (copied for the update's private copy).
    _updated_in_place: ClassVar[tuple[str, ...]] = ()
    #: Attributes a pickle or copy leaves out (rebuilt on loading or first use).
    _left_out_of_pickles: ClassVar[tuple[str, ...]] = ()
    #: Attributes an update changes in place in the model's own state rather than
    #: replacing them (a vocabulary grows, counts are added into tables): a pickle copies
    #: them while it holds the model, everything else it shares until the pickler reads.
    _changed_in_place: ClassVar[tuple[str, ...]] = ("_encoder",)

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """scikit-learn's parameter names (read from the constructor's signature), read
        once per class: every update and every later ``partial_fit``'s parameter check
        asks for them, and ``inspect.signature`` costs tens of microseconds a call."""
        names = _PARAM_NAMES.get(cls)
        if names is None:
            names = _PARAM_NAMES[cls] = tuple(super()._get_param_names())  # type: ignore[misc]
        return list(names)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for names, guard in ((_UPDATES, atomic_update), (_READS, _consistent_read)):
            for name in names:
                method = cls.__dict__.get(name)
                if callable(method) and not getattr(method, "_hebnb_guarded", False):
                    setattr(cls, name, guard(method))

    def __copy__(self) -> Any:
        """An independent copy, as ``copy.deepcopy`` makes: a shallow one would share the
        vocabulary and the count tables an update grows in place, so updating one model
        would corrupt the other."""
        return copy.deepcopy(self)

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        model = super().__new__(cls)
        _new_locks(model)
        return model

    def __getstate__(self) -> dict[str, Any]:
        # never a state an update, or the solve after one, is halfway through, and taken
        # whole while the locks are held: scikit-learn's state is the live instance dict,
        # which the pickler reads after they are given back, when an update may be
        # replacing its entries or growing what it changes in place (a copy mixed two
        # states: a grown vocabulary beside the tables of before)
        parent = super().__getstate__  # scikit-learn's

        def snapshot() -> dict[str, Any]:
            state = parent()
            assert isinstance(state, dict)  # the instance dict and the version
            left_out = self._left_out_of_pickles
            kept = {key: value for key, value in state.items() if key not in left_out}
            for name in self._changed_in_place:
                if name in kept:
                    kept[name] = copy.deepcopy(kept[name])
            return without_locks(kept)

        state: dict[str, Any] = cache_while_reading(self, snapshot)
        return state

    def __sklearn_is_fitted__(self) -> bool:
        # scikit-learn's own test iterates vars(self), which another reader may be filling
        # meanwhile (a cached attribute, the solve after partial_fit): "dictionary changed
        # size during iteration". list() takes the keys in one step.
        return any(key.endswith("_") and not key.startswith("__") for key in list(self.__dict__))

    def __setstate__(self, state: dict[str, Any]) -> None:
        # a model unpickled from byte frames (Dask ships it to its workers so) may hold
        # misaligned arrays, which the core refuses to borrow: those are copied
        super().__setstate__(aligned_arrays(state))  # type: ignore[misc]


#: Cells (rows x the larger of features and classes) scored per chunk by ``predict*``: a
#: chunk's codes and scores stay a few MiB, so predicting a long table needs its output
#: and little more. Also the block size of the fits' passes over a dense table
#: (``_text.dense_as_csr``, ``gaussian.column_variances``).
PREDICT_CHUNK_CELLS = 1 << 20


def _rows_in_chunks(X: Any, output_width: int = 0) -> tuple[int | None, Any]:
    """``(n_rows, [(start, part of X), ...])`` for an array or DataFrame long enough to
    split by rows (``output_width``: the columns of a row's output, classes for scores),
    else ``(None, None)`` (score it whole)."""
    shape = getattr(X, "shape", None)
    if not (isinstance(X, (np.ndarray, pd.DataFrame)) and shape is not None and len(shape) == 2):
        return None, None
    n_rows, n_features = shape
    step = max(1, PREDICT_CHUNK_CELLS // max(1, n_features, output_width))
    if n_rows <= step:
        return None, None
    take = (lambda a, b: X.iloc[a:b]) if isinstance(X, pd.DataFrame) else (lambda a, b: X[a:b])
    return n_rows, ((start, take(start, start + step)) for start in range(0, n_rows, step))


class RowsOverflow(ValueError):
    """Rows whose scores overflow float64 for every class (``_text.check_no_overflow``),
    named by their place in the rows scored: :func:`score_in_chunks` shifts them to the
    caller's numbering."""

    def __init__(self, what: str, rows: np.ndarray) -> None:
        self.what, self.rows = what, rows
        more = f" (and {rows.size - 1} more)" if rows.size > 1 else ""
        super().__init__(
            f"{what} overflow float64 for every class in row {rows[0]}{more}: the "
            "posterior is not determined; rescale them"
        )


def score_in_chunks(
    X: Any, score: Callable[[Any], np.ndarray], *, output_width: int = 0
) -> np.ndarray:
    """``score(X)`` (one row of output per row of ``X``, ``output_width`` columns of it,
    or one) computed chunk by chunk of rows into one preallocated output: memory beyond
    the output stays one chunk's worth, whether features or classes are many."""
    n_rows, chunks = _rows_in_chunks(X, output_width)
    if chunks is None:
        return score(X)
    out: np.ndarray | None = None
    for start, part in chunks:
        try:
            scored = score(part)
        except RowsOverflow as error:
            raise RowsOverflow(error.what, error.rows + start) from None
        if out is None:
            out = np.empty((n_rows, *scored.shape[1:]), dtype=scored.dtype)
        out[start : start + scored.shape[0]] = scored
    assert out is not None
    return out


def defer_solve(model: Any) -> None:
    """Marks an updated model as solved when a fitted attribute is first used
    (:func:`solve_pending`), with the constructor parameters of this update."""
    model._unsolved = True
    model._update_parameters = model.get_params(deep=False)


def solve_pending(model: Any) -> None:
    """Solves a model that ``partial_fit`` left unsolved (``_solve_deferred``), as the
    update would have: on a private copy holding the parameters of that update, whose
    state replaces the model's only when the solve succeeds. So one thread solves while
    the others wait for its tables (a second solver would read tables the first is still
    writing); an interrupted or failed solve leaves the model unsolved, to be solved at
    the next use; and ``set_params`` meanwhile is neither seen by the solve nor undone (it
    changes the next update, as after ``fit``). Call it holding the model for reading."""
    _holding(_lock(model, _CACHE_LOCK), True, functools.partial(_solve_privately, model))


def _solve_privately(model: Any) -> None:
    """:func:`solve_pending`'s work, called holding the model's cache lock."""
    state = model.__dict__
    if not state.get("_unsolved"):
        return
    work = object.__new__(type(model))
    work.__dict__.update(without_locks(state))
    work.__dict__.update(work.__dict__.pop("_update_parameters", None) or {})
    work._solve_deferred()
    _install(model, work, [])


class CategoricalClassifier(ThreadSafeModel, ClassifierMixin, BaseEstimator):
    """Base of the categorical classifiers: subclasses implement ``_joint_log_likelihood``
    and declare ``_parameter_constraints`` (checked by ``_fit_context`` before any work).

    ``categories_`` is computed from the vocabulary on first access (a stream of
    ``partial_fit`` calls never builds it unless asked).
    """

    _parameter_constraints: ClassVar[dict[str, list[object]]] = {}

    #: How the encoder numbers categories: "sorted" (rank among the sorted categories) or
    #: "insertion" (order of first appearance, codes never move as the vocabulary grows).
    _code_order = "sorted"

    def __getattr__(self, name: str) -> Any:
        # only called when ordinary lookup fails: fitted attributes computed on demand
        state = self.__dict__
        if name == "categories_" and "_encoder" in state:
            return cache_while_reading(self, self._show_categories)
        if name in self._deferred_attributes() and "_unsolved" in state:
            # solved from counts no update is changing. Asked whatever the flag says: a
            # reader solving the model meanwhile may have cleared it without having
            # stored every table yet (waiting for its solve to end then finds them)
            return read_consistently(self, functools.partial(self._solved_attribute, name))
        static: Any = next(
            (k.__dict__[name] for k in type(self).__mro__ if name in k.__dict__), None
        )
        if hasattr(static, "__get__") and not hasattr(static, "__set__"):
            # a method that refused (``available_if``): its error says why
            static.__get__(self, type(self))
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _show_categories(self) -> list[np.ndarray]:
        """Sets ``categories_`` from the vocabulary (called holding the cache lock)."""
        categories: list[np.ndarray] = self.__dict__.setdefault(
            "categories_", self._encoder.categories
        )
        return categories

    def _solved_attribute(self, name: str) -> Any:
        """The fitted attribute ``name`` of the solved model (called holding it for
        reading)."""
        solve_pending(self)
        if name not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return self.__dict__[name]

    #: Fitted attributes a subclass computes only when they are first used (after a
    #: ``partial_fit``: see ``_solve_deferred``).
    _SOLVED: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def _deferred_attributes(cls) -> frozenset[str]:
        return cls._SOLVED

    def _solve_deferred(self) -> None:  # pragma: no cover - subclasses that defer
        raise NotImplementedError

    def _new_encoder(self) -> CategoryEncoder:
        return CategoryEncoder(
            order=self._code_order, categories=self.__dict__.get("categories", "auto")
        )

    def _check_stream_categories(self) -> None:
        """Refuses a later ``partial_fit`` batch after ``set_params(categories=...)``
        changed the declaration: the vocabulary of the stream was built on the first
        one (a change was ignored silently, undeclared values accepted)."""
        declared = self._encoder.declared
        now = self.__dict__.get("categories", "auto")
        if isinstance(declared, str) or isinstance(now, str):
            changed = not (isinstance(declared, str) and isinstance(now, str) and declared == now)
        else:
            changed = len(declared) != len(now) or any(
                not np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
                for a, b in zip(declared, now)
            )
        if changed:
            raise ValueError(
                "categories changed since the first partial_fit: a stream keeps the "
                "categories it started with; fit again to declare others"
            )

    def _training_data(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None, threads: int
    ) -> tuple[CategoryEncoder, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(encoder, codes (F, S), classes, class index per row, weights)`` of a training
        set: categories learned, labels at least two classes, ``class_prior`` one per
        class, weights checked, and the (classes x categories) tables within memory."""
        encoder = self._new_encoder()
        codes = encoder.fit_transform(X, n_threads=threads)
        classes, labels = encode_labels(y, codes.shape[1])
        if classes.shape[0] < 2:
            raise ValueError(
                f"The number of classes has to be greater than one; got {classes.shape[0]} class"
            )
        check_class_prior(self.class_prior, classes.shape[0])
        weights = check_sample_weight(sample_weight, codes.shape[1])
        check_table_size(classes.shape[0], encoder.offsets[-1])
        return encoder, codes, classes, labels, weights

    def _encode(self, X: ArrayLike) -> tuple[np.ndarray, int]:
        """Codes ``(F, S)`` of a table to score, and the thread count to score it with."""
        threads = n_threads(self.n_jobs)
        encoded = self._encoder.transform(
            X, handle_unknown=self.handle_unknown, n_threads=threads, owner=type(self).__name__
        )
        return encoded.codes, threads

    def _learn_vocabulary(self, encoder: CategoryEncoder, classes: np.ndarray) -> None:
        """Keeps the encoder and sets the fitted attributes that describe the input."""
        self._encoder = encoder
        self.classes_ = classes
        self.__dict__.pop("categories_", None)  # recomputed from the vocabulary when asked
        self.n_categories_ = np.asarray(encoder.cardinalities, dtype=np.int64)
        self.n_features_in_ = encoder.n_features
        if encoder.feature_names is not None:
            self.feature_names_in_ = encoder.feature_names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    @abstractmethod
    def _joint_log_likelihood(self, X: ArrayLike) -> np.ndarray:
        """Unnormalised ``ln P(c, x)`` of each row, shape (n_samples, n_classes)."""

    def predict_joint_log_proba(self, X: ArrayLike) -> np.ndarray:
        """Joint log-probability ``ln P(c, x)`` of each row and class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes), columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        return score_in_chunks(X, self._joint_log_likelihood, output_width=len(self.classes_))

    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """Log posterior class probabilities, shape (n_samples, n_classes)."""
        check_is_fitted(self)
        threads = n_threads(self.n_jobs)
        return score_in_chunks(
            X,
            lambda part: _core.log_posterior(self._joint_log_likelihood(part), threads),
            output_width=len(self.classes_),
        )

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Posterior class probabilities, shape (n_samples, n_classes); rows sum to 1."""
        log_proba = self.predict_log_proba(X)
        proba: np.ndarray = np.exp(log_proba, out=log_proba)
        return proba

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Most probable class of each row (ties go to the first class in ``classes_``)."""
        check_is_fitted(self)
        best = score_in_chunks(
            X,
            lambda part: np.argmax(self._joint_log_likelihood(part), axis=1),
            output_width=len(self.classes_),
        )
        predicted: np.ndarray = self.classes_[best]
        return predicted

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True
        tags.classifier_tags.poor_score = True
        return tags
