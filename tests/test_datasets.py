"""The synthetic data generators refuse arguments they cannot honour, by name, and make
what their docstrings say."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hebnb.datasets import make_high_cardinality, make_linked


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"n_samples": -1}, "n_samples"),
        ({"n_samples": 2.5}, "n_samples"),
        ({"n_features": 0}, "n_features"),
        ({"n_classes": True}, "n_classes"),
        ({"max_cardinality": 1}, "max_cardinality"),
        ({"zipf_exponent": float("nan")}, "zipf_exponent"),
        ({"class_dispersion": float("inf")}, "class_dispersion"),
        ({"class_weights": [1.0, 2.0]}, "class_weights"),
        ({"class_weights": [1.0, -1.0, 1.0]}, "class_weights"),
        ({"class_weights": [0.0, 0.0, 0.0]}, "class_weights"),
        # beyond int32 codes (numpy said "negative dimensions are not allowed")
        ({"max_cardinality": 2**63}, "max_cardinality"),
        ({"max_cardinality": 2**31}, "max_cardinality"),
        # exp(class_dispersion * z) overflowed: every value of a class went to one category
        ({"class_dispersion": 1e308}, "class_dispersion"),
        ({"class_weights": ["a", "b", "c"]}, "class_weights"),
        ({"class_weights": {0: 1.0}}, "class_weights"),
        # more memory than any machine has (numpy said "array is too big")
        ({"n_samples": 2**62}, "n_samples"),
        ({"n_features": 2**62}, "n_features"),
        ({"n_classes": 2**62}, "n_classes"),
    ],
)
def test_make_high_cardinality_names_a_bad_argument(arguments, named):
    with pytest.raises(ValueError, match=named):
        make_high_cardinality(**{"n_samples": 100, "n_features": 3, **arguments})


def test_value_weights_beyond_memory_name_max_cardinality(monkeypatch):
    """Every feature's value weights (a few float64 arrays of max_cardinality values)
    must fit in memory: beyond, numpy failed with an allocation error naming nothing."""
    from hebnb import datasets

    monkeypatch.setattr(datasets, "memory_budget_bytes", lambda: 2**20)
    with pytest.raises(ValueError, match=r"max_cardinality=100000 value weights need"):
        make_high_cardinality(10, 2, max_cardinality=100_000)
    make_high_cardinality(10, 2, max_cardinality=1_000)  # 32 KB


def test_class_weights_whose_sum_overflows_are_normalised():
    """``[1e308] * 3`` sums to inf: numpy refused the probabilities ``w / inf`` ("do not
    sum to 1"); they are equal weights."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, y = make_high_cardinality(30_000, 2, class_weights=[1e308] * 3, random_state=1)
    assert np.all(np.abs(np.bincount(y, minlength=3) / y.size - 1 / 3) < 0.02)


def test_a_whole_zipf_exponent_is_not_an_integer_power():
    """An int exponent raised the int64 values to an int64 power, which wrapped past 2**63:
    zipf_exponent=5 with 20000 categories sent every row to the last category."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        X, _ = make_high_cardinality(5_000, 2, max_cardinality=20_000, zipf_exponent=5)
    # P(0) = 1 / zeta(5) ~ 0.96 under the Zipf law, give or take the class tilts
    assert np.mean(X[:, -1] == 0) > 0.8
    X_float, _ = make_high_cardinality(5_000, 2, max_cardinality=20_000, zipf_exponent=5.0)
    np.testing.assert_array_equal(X, X_float)


def test_make_high_cardinality_draws_classes_by_their_weights_and_values_in_range():
    X, y = make_high_cardinality(
        30_000, 4, n_classes=3, max_cardinality=50, class_weights=[1, 0, 3], random_state=2
    )
    counts = np.bincount(y, minlength=3)
    assert counts[1] == 0
    assert abs(counts[2] / counts.sum() - 0.75) < 0.02
    # cardinalities spread log-uniformly from 2 to max_cardinality
    assert X.min() == 0 and X[:, 0].max() == 1 and X[:, -1].max() == 49


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"n_values": 1}, "n_values"),
        ({"block": 1}, "block"),
        ({"n_signal": -1}, "n_signal"),
        ({"n_signal": 3}, "n_signal"),  # more blocks than 20 features hold
        ({"random_state": 1.5}, "random_state"),
    ],
)
def test_make_linked_names_a_bad_argument(arguments, named):
    with pytest.raises(ValueError, match=named):
        make_linked(100, 20, **{"n_signal": 1, **arguments})


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        # numpy said "high is out of bounds for int64"
        ({"n_values": 2**64}, "n_values"),
        # numpy said "Maximum allowed dimension exceeded" / "array is too big"
        ({"n_samples": 2**63}, "n_samples"),
        ({"n_features": 2**62}, "n_features"),
    ],
)
def test_make_linked_names_an_argument_beyond_codes_or_memory(arguments, named):
    with pytest.raises(ValueError, match=named):
        make_linked(**{"n_samples": 100, "n_features": 20, "n_signal": 1, **arguments})


def test_the_benchmarks_read_the_checkouts_generators():
    """benches/common.py's ``source_module`` loads python/hebnb/datasets.py from the
    checkout, so that every build a benchmark times sees the same table; the module's own
    relative imports must resolve there too (they once raised ImportError, which broke
    every benchmark of the linked tables)."""
    import sys
    from pathlib import Path

    benches = Path(__file__).resolve().parents[1] / "benches"
    if not (benches / "common.py").is_file():
        pytest.skip("benches/ is not beside the tests (an installed test run)")
    sys.path.insert(0, str(benches))
    try:
        from common import source_module
    finally:
        sys.path.pop(0)
    datasets = source_module("datasets")
    assert Path(datasets.__file__).resolve() == (
        benches.parent / "python" / "hebnb" / "datasets.py"
    )
    X, y = datasets.make_linked(300, 20, n_signal=1, random_state=4)
    X_installed, y_installed = make_linked(300, 20, n_signal=1, random_state=4)
    np.testing.assert_array_equal(X, X_installed)
    np.testing.assert_array_equal(y, y_installed)
