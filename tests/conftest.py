"""Shared test helpers: where the real datasets live, and a loader that skips cleanly."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

#: ``../shared/datasets`` beside the checkout (absent on machines without it).
SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def load_shared_dataset(name: str) -> pd.DataFrame:
    """The ``data.csv`` of a shared dataset, or a pytest skip when it is not there."""
    path = SHARED_DATASETS / name / "data.csv"
    if not path.is_file():
        pytest.skip(f"shared dataset {name!r} not available at {path}")
    return pd.read_csv(path)


def _evaluate_extra_missing() -> str | None:
    """What the ``evaluate`` extra adds and this environment lacks, or None."""
    import importlib.util

    from hebnb.evaluation.protocol import check_evaluate_requirements

    try:
        check_evaluate_requirements()
    except ImportError as error:
        return str(error)
    for module in ("matplotlib", "scikit_posthocs"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    return None


#: Test modules of ``hebnb evaluate``, which need the ``evaluate`` extra (the
#: minimum-versions run of .ci/run installs only the core dependencies).
EVALUATE_TESTS = {
    "test_evaluation_cli.py",
    "test_evaluation_methods.py",
    "test_evaluation_protocol.py",
    "test_evaluation_statistics.py",
}
EVALUATE_EXTRA_MISSING = _evaluate_extra_missing()


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    if EVALUATE_EXTRA_MISSING and collection_path.name in EVALUATE_TESTS:
        return True
    return None


def pytest_report_header() -> list[str]:
    if EVALUATE_EXTRA_MISSING:
        return [
            f"not collected, the evaluate extra is missing ({EVALUATE_EXTRA_MISSING}): "
            + ", ".join(sorted(EVALUATE_TESTS))
        ]
    return []
