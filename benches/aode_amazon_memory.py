"""Peak resident memory of uncapped HEB-AODE on an amazon-employee fold.

The process imports hebnb (which imports scikit-learn and scipy), reads the CSV with
numpy only, then fits two-level HEB-AODE on 18,000 rows and scores 2,000: the peak
resident memory (``ru_maxrss``) after importing, after loading, and after fitting and
predicting. Run from the repository root after ``maturin develop --release``:

    python benches/aode_amazon_memory.py
"""

from __future__ import annotations

import argparse
import resource

import numpy as np

from common import SHARED_DATASETS


def peak_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    # no options: --help says what the script does instead of running it
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    from hebnb import AODE

    imported = peak_mb()
    path = SHARED_DATASETS / "amazon-employee" / "data.csv"
    if not path.is_file():
        raise SystemExit(f"dataset not found at {path}: this benchmark needs ../shared")
    header = path.open().readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64)
    target = header.index("class")
    y, X = data[:, target], np.delete(data, target, axis=1)
    loaded = peak_mb()
    model = AODE(n_jobs=2).fit(X[:18_000], y[:18_000])
    model.predict_proba(X[18_000:20_000])
    fitted = peak_mb()
    print(f"after importing hebnb: {imported:.0f} MB")
    print(f"after loading the data: {loaded:.0f} MB")
    print(f"after fit + predict_proba: {fitted:.0f} MB (fitting added {fitted - loaded:.0f} MB)")


if __name__ == "__main__":
    main()
