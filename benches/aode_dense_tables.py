"""Laplace AODE against a plain-numpy Laplace AODE: fit time, CPU time and peak memory.

Datasets:

* ``dense50``: 20,000 x 100, every column with 50 values, 3 classes, from a random
  tree-shaped Bayesian network (each feature depends on the class and one earlier
  feature): about 12 million stored cells, every pair's table nearly full.
* ``click``: click-prediction-like, 40,000 x 9 ID columns (Zipf-distributed ads,
  advertisers, keywords, queries, titles, users; position and depth with 3 values), a
  rare positive class driven by the ad and the position.
* ``amazon``: amazon-employee, the first 18,000 rows (needs ``../shared``).

Every (implementation, dataset) run is its own subprocess, so its peak resident memory
(``ru_maxrss``) is its own; runs alternate hebnb / numpy round by round and the median of
the rounds is reported, with CPU time beside wall time. "added MB" is the peak less the
resident size after the data were made. hebnb runs ``AODE(smoothing="laplace", parent_smoothing="laplace")`` (eq. 8);
``benches/numpy_aode.py`` is the numpy version (checked equal to 1e-12 in
tests/test_aode.py, and here on 2,000 rows).

    python benches/aode_dense_tables.py                 # 5 rounds, n_jobs=2
    python benches/aode_dense_tables.py --datasets dense50 --rounds 7 --n-jobs 1
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def dense50(n_rows=20_000, n_features=100, n_classes=3, k=50, seed=0):
    """A tree-shaped Bayesian network over the class and n_features 50-valued features."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n_rows)
    X = np.empty((n_rows, n_features), dtype=np.int64)
    for f in range(n_features):
        if f == 0:
            parent, k_parent = np.zeros(n_rows, dtype=np.int64), 1
        else:
            p = rng.integers(0, f)
            parent, k_parent = X[:, p], k
        table = rng.dirichlet(np.full(k, 0.5), size=(k_parent, n_classes))
        cumulative = np.cumsum(table, axis=2)[parent, y]
        draw = rng.random(n_rows)[:, None]
        X[:, f] = np.minimum((draw > cumulative).sum(axis=1), k - 1)
    return X, y


def click(n_rows=40_000, seed=0):
    """Click-log-like IDs: Zipf popularity, an ad belongs to one advertiser, a rare
    positive class (about 17%) driven by the ad's own rate and the position."""
    rng = np.random.default_rng(seed)

    def zipf(n_values, size, exponent=1.1):
        weights = 1.0 / np.arange(1, n_values + 1) ** exponent
        return rng.choice(n_values, size=size, p=weights / weights.sum())

    ad = zipf(6_000, n_rows)
    advertiser = (ad * 7919) % 900
    position = rng.integers(0, 3, n_rows)
    depth = np.minimum(position + rng.integers(0, 2, n_rows), 2)
    keyword = zipf(9_000, n_rows)
    query = zipf(20_000, n_rows, 1.0)
    title = (ad * 31 + rng.integers(0, 2, n_rows)) % 12_000
    description = (ad * 17 + rng.integers(0, 3, n_rows)) % 10_000
    user = zipf(30_000, n_rows, 0.9)
    rate = rng.beta(0.5, 2.5, 6_000)[ad] * (1.0 - 0.3 * position)
    y = (rng.random(n_rows) < rate).astype(np.int64)
    X = np.stack(
        [position, depth, advertiser, ad, keyword, query, title, description, user], axis=1
    )
    return X, y


def amazon():
    sys.path.insert(0, str(HERE))
    from common import load_shared

    frame = load_shared("amazon-employee").iloc[:18_000]
    return frame.drop(columns="class").to_numpy(), frame["class"].to_numpy()


DATASETS = {"dense50": dense50, "click": click, "amazon": amazon}


def run_one(implementation: str, name: str, n_jobs: int) -> dict:
    X, y = DATASETS[name]()
    if implementation == "hebnb":
        from hebnb import AODE

        model = AODE(smoothing="laplace", parent_smoothing="laplace", n_jobs=n_jobs)
    else:
        sys.path.insert(0, str(HERE))
        from numpy_aode import NumpyLaplaceAODE

        model = NumpyLaplaceAODE()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(X, y)
    fit, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
    fitted = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start, cpu = time.perf_counter(), time.process_time()
    proba = model.predict_proba(X[:2000])
    predict, predict_cpu = time.perf_counter() - start, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    np.save(f"/tmp/aode_dense_tables_{implementation}_{name}.npy", proba)
    return {
        "fit s": fit,
        "fit cpu s": fit_cpu,
        "predict s": predict,
        "predict cpu s": predict_cpu,
        "fit peak MB": fitted,
        "peak MB": after,
        "added MB": fitted - before,
        "cells": int(model.pair_indices_.size) if implementation == "hebnb" else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        implementation, name, n_jobs = args.one
        print(json.dumps(run_one(implementation, name, int(n_jobs))))
        return
    runs: dict = {}
    for name in args.datasets:
        for round_ in range(args.rounds):
            for implementation in ("hebnb", "numpy"):  # alternating
                out = subprocess.run(
                    [sys.executable, __file__, "--one", implementation, name, str(args.n_jobs)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                result = json.loads(out.stdout.strip().splitlines()[-1])
                runs.setdefault((name, implementation), []).append(result)
                print(name, implementation, round_, json.dumps(result), flush=True)
        a = np.load(f"/tmp/aode_dense_tables_hebnb_{name}.npy")
        b = np.load(f"/tmp/aode_dense_tables_numpy_{name}.npy")
        print(f"{name}: largest |difference| of predict_proba: {np.abs(a - b).max():.2e}")
    print(f"\nmedian of {args.rounds} rounds, n_jobs={args.n_jobs} (hebnb); numpy is one thread\n")
    print(
        "| dataset | implementation | stored cells | fit s (cpu s) | predict 2,000 s (cpu s) "
        "| peak RSS after fit MB | added by fit MB |"
    )
    print("|---|---|---|---|---|---|---|")
    for (name, implementation), results in runs.items():
        med = {k: statistics.median(r[k] for r in results) for k in results[0] if k != "cells"}
        cells = results[0]["cells"]
        print(
            f"| {name} | {implementation} | {cells if cells else ''} | "
            f"{med['fit s']:.2f} ({med['fit cpu s']:.2f}) | "
            f"{med['predict s']:.2f} ({med['predict cpu s']:.2f}) | "
            f"{med['fit peak MB']:.0f} | {med['added MB']:.0f} |"
        )
    for name in args.datasets:
        ratio = [
            a["fit s"] / b["fit s"]
            for a, b in zip(runs[name, "hebnb"], runs[name, "numpy"], strict=True)
        ]
        print(
            f"{name}: hebnb fit / numpy fit, median of the per-round ratios: "
            f"{statistics.median(ratio):.2f}"
        )


if __name__ == "__main__":
    main()
