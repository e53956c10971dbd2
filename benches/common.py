"""Helpers shared by the benchmark scripts (run by hand from the repository root)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pandas as pd

#: ``../shared/datasets`` beside the checkout, or the folder in ``$HEBNB_SHARED_DATASETS``
#: (for checkouts elsewhere, such as git worktrees).
SHARED_DATASETS = Path(
    os.environ.get(
        "HEBNB_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"
    )
)


#: The package name under which :func:`source_module` loads the checkout's modules.
SOURCE_PACKAGE = "hebnb_source"


def source_module(name: str) -> ModuleType:
    """``python/hebnb/<name>.py`` of this checkout, loaded without the installed package:
    a pure-Python module such as ``datasets`` gives benchmarks the same data whichever
    build of hebnb they time, earlier builds included. Its relative imports (pure-Python
    helpers such as ``_params``) are read from the same folder, as modules of a package
    ``hebnb_source`` that stands for it."""
    folder = Path(__file__).resolve().parents[1] / "python" / "hebnb"
    if SOURCE_PACKAGE not in sys.modules:
        package = ModuleType(SOURCE_PACKAGE)
        package.__path__ = [str(folder)]
        sys.modules[SOURCE_PACKAGE] = package
    return importlib.import_module(f"{SOURCE_PACKAGE}.{name}")


def load_shared(name: str) -> pd.DataFrame:
    """The ``data.csv`` of a shared dataset; exits with a message when it is absent."""
    path = SHARED_DATASETS / name / "data.csv"
    if not path.is_file():
        raise SystemExit(
            f"dataset {name!r} not found at {path}: this benchmark needs the shared datasets "
            "(../shared/datasets beside the checkout, or set HEBNB_SHARED_DATASETS to them)"
        )
    return pd.read_csv(path)


@contextmanager
def timer(results: dict, key: str):
    """Adds the wall-clock seconds of the block to ``results[key]``."""
    start = time.perf_counter()
    yield
    results[key] = results.get(key, 0.0) + time.perf_counter() - start


def run_child(code: str, *args: object, pythonpath: str | None = None) -> dict:
    """Runs ``code`` in a fresh Python process (``sys.argv[1:]`` the ``args``), with the
    hebnb package found under ``pythonpath`` first when given (an earlier build), and
    returns the JSON object its last line of output prints."""
    env = dict(os.environ)
    if pythonpath is not None:
        if not (Path(pythonpath) / "hebnb" / "__init__.py").is_file():
            # without it the child would time the installed build against itself
            raise SystemExit(
                f"no hebnb package under {pythonpath}: copy an earlier build's python/hebnb "
                f"folder, its compiled _core included, to {Path(pythonpath) / 'hebnb'}"
            )
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])
