"""Helpers shared by the benchmark scripts (run by hand from the repository root)."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

#: ``../shared/datasets`` beside the checkout, or the folder in ``$HEBNB_SHARED_DATASETS``
#: (for checkouts elsewhere, such as git worktrees).
SHARED_DATASETS = Path(
    os.environ.get(
        "HEBNB_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"
    )
)


def load_shared(name: str) -> pd.DataFrame:
    """The ``data.csv`` of a shared dataset; exits with a message when it is absent."""
    path = SHARED_DATASETS / name / "data.csv"
    if not path.is_file():
        raise SystemExit(f"dataset {name!r} not found at {path}: this benchmark needs ../shared")
    return pd.read_csv(path)


@contextmanager
def timer(results: dict, key: str):
    """Adds the wall-clock seconds of the block to ``results[key]``."""
    start = time.perf_counter()
    yield
    results[key] = results.get(key, 0.0) + time.perf_counter() - start
