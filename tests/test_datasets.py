"""The synthetic data generators refuse arguments they cannot honour, by name, and make
what their docstrings say."""

from __future__ import annotations

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
    ],
)
def test_make_high_cardinality_names_a_bad_argument(arguments, named):
    with pytest.raises(ValueError, match=named):
        make_high_cardinality(**{"n_samples": 100, "n_features": 3, **arguments})


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
