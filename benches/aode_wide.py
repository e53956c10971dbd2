"""AODE / HEB-AODE on wide data: fit and predict_proba time, n_jobs 1 vs 2, peak memory.

Datasets: a synthetic 20,000 x 100 table drawn from a random tree-shaped Bayesian network
(cardinalities 2-50, 3 classes, each feature depends on the class and on one earlier
feature), connect-4 (42 features, 67,557 rows) and optdigits (64 features, 5,620 rows).
Every configuration runs in its own subprocess so that its peak resident memory
(``ru_maxrss``) is its own; "peak MB" is that peak less the resident size after the data
were loaded, i.e. what fitting and predicting added.

Run from the repository root after ``maturin develop --release``:

    python benches/aode_wide.py
    python benches/aode_wide.py --datasets synthetic --smoothing two-level --repeat 3
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm


def tree_bayes_net(n_rows=20_000, n_features=100, n_classes=3, seed=0):
    """Rows from a random tree-shaped Bayesian network over the class and the features.

    Feature 0 depends on the class; feature f > 0 on the class and on one earlier feature
    chosen at random. Each conditional distribution is drawn from a Dirichlet(0.5), so the
    dependence between features is real and strong.
    """
    rng = np.random.default_rng(seed)
    cardinality = rng.integers(2, 51, n_features)
    y = rng.integers(0, n_classes, n_rows)
    X = np.empty((n_rows, n_features), dtype=np.int64)
    for f in range(n_features):
        k = cardinality[f]
        if f == 0:
            parent, k_parent = np.zeros(n_rows, dtype=np.int64), 1
        else:
            p = rng.integers(0, f)
            parent, k_parent = X[:, p], cardinality[p]
        table = rng.dirichlet(np.full(k, 0.5), size=(k_parent, n_classes))
        cumulative = np.cumsum(table, axis=2)[parent, y]
        draw = rng.random(n_rows)[:, None]
        X[:, f] = np.minimum((draw > cumulative).sum(axis=1), k - 1)
    return X, y


def load(name: str):
    if name == "synthetic":
        return tree_bayes_net()
    sys.path.insert(0, str(Path(__file__).parent))
    from common import load_shared

    frame = load_shared(name)
    return frame.drop(columns="class").to_numpy(), frame["class"].to_numpy()


def run_one(name: str, smoothing: str, n_jobs: int) -> dict:
    """Fit and predict in this process; returns times and the peak memory added."""
    from hebnb import AODE

    X, y = load(name)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    params = {"smoothing": "laplace"} if smoothing == "laplace" else {"prior": smoothing}
    model = AODE(**params, parent_smoothing="laplace", n_jobs=n_jobs)
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(X, y)
    fit, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
    start, cpu = time.perf_counter(), time.process_time()
    model.predict_proba(X)
    predict, predict_cpu = time.perf_counter() - start, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    table_mb = (
        model.pair_indptr_.nbytes
        + model.pair_indices_.nbytes
        + model.pair_counts_.nbytes
        + model._model["dense_log_prob"].nbytes
        + model._model["sparse_rows"].nbytes
    ) / 2**20
    return {
        "rows": len(y),
        "features": X.shape[1],
        "cells": int(model.pair_indices_.size),
        "fit s": fit,
        "fit cpu s": fit_cpu,
        "predict s": predict,
        "predict cpu s": predict_cpu,
        "peak MB": (after - before) / 1024,
        "model MB": table_mb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=["synthetic", "connect-4", "optdigits"])
    parser.add_argument(
        "--smoothing",
        nargs="*",
        default=["laplace", "pooled", "two-level"],
        help="laplace, pooled (paper's HEB-AODE) or two-level",
    )
    parser.add_argument("--n-jobs", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=1, help="runs per configuration (best kept)")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        name, smoothing, n_jobs = args.one
        print(json.dumps(run_one(name, smoothing, int(n_jobs))))
        return

    configs = [(d, s, j) for d in args.datasets for s in args.smoothing for j in args.n_jobs]
    rows = []
    for d, s, j in tqdm(configs * args.repeat, desc="configurations"):
        out = subprocess.run(
            [sys.executable, __file__, "--one", d, s, str(j)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append((d, s, j, json.loads(out.stdout.strip().splitlines()[-1])))
    # on a shared machine the fastest of the repeats is the least disturbed
    best = {}
    for d, s, j, r in rows:
        if (d, s, j) not in best or r["fit s"] < best[d, s, j]["fit s"]:
            best[d, s, j] = {
                **r,
                "predict s": min(r["predict s"], best.get((d, s, j), r)["predict s"]),
            }
    print(
        "| dataset | rows x features | smoothing | n_jobs | stored cells | fit s (cpu s) | "
        "predict_proba s | peak MB | model MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (d, s, j), r in best.items():
        print(
            f"| {d} | {r['rows']} x {r['features']} | {s} | {j} | {r['cells']} | "
            f"{r['fit s']:.2f} ({r['fit cpu s']:.2f}) | {r['predict s']:.2f} | "
            f"{r['peak MB']:.0f} | {r['model MB']:.0f} |"
        )
    for d in args.datasets:
        for s in args.smoothing:
            if (d, s, 1) in best and (d, s, 2) in best:
                speedup = best[d, s, 1]["fit s"] / best[d, s, 2]["fit s"]
                print(f"fit speed-up n_jobs 1 -> 2, {d}, {s}: {speedup:.2f}x")


if __name__ == "__main__":
    main()
