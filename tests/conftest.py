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
