"""AODE.partial_fit streams against one fit, and against another build of hebnb
(run by hand from the repo root).

    nice -n 5 python benches/aode_stream.py
    nice -n 5 python benches/aode_stream.py --old /tmp/hebnb-old/python   # and an old build
    nice -n 5 python benches/aode_stream.py --quick                       # 50,000 rows

200,000 rows x 20 features (Zipf-like draws, cardinalities 2 to 10,000: the vocabulary
grows all along the stream), binary label from three features, 1,000-row batches:

- one ``fit`` of all the rows, then ``predict_proba`` of 1,000 rows (the same work a
  stream needs at its end);
- the ``partial_fit`` stream, then the same ``predict_proba`` (which solves the model:
  the stream defers the solve to first use): total, per-call cost around calls 10, 100
  and 200 (median over 11 calls) and the mean per call over calls 1-20, 91-110, 181-200
  and all calls (amortised: it includes the merges of the kept batches);
- the prequential stream: ``predict_proba`` of each batch before its ``partial_fit``
  (the model is solved on every call), over the first ``--prequential`` calls.

With ``--old PATH`` the same two streams also run on the hebnb package found under PATH
(e.g. a copy of the previous main's ``python/`` with its built ``_core``).

Every measurement runs in a fresh process (``ru_maxrss`` is its peak memory), one after
another in alternating rounds; wall and CPU (process_time) time side by side, the median
of the rounds. The machine is shared: compare the ratios of one run.
"""

from __future__ import annotations

import argparse

import numpy as np

from common import run_child

CHILD = r"""
import json, resource, sys, time
import numpy as np
from hebnb import AODE

mode, n_rows, batch, n_calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
cardinalities = np.resize(np.unique(np.geomspace(2, 10_000, 20).astype(int)), 20)
X = np.empty((n_rows, 20), dtype=np.int64)
for f, k in enumerate(cardinalities):
    X[:, f] = np.minimum((rng.pareto(1.2, n_rows) * k / 20).astype(np.int64), k - 1)
y = ((X[:, 0] + X[:, 1] + (X[:, 2] % 3) + rng.integers(0, 2, n_rows)) % 2).astype(np.int64)
X_test = X[-batch:]
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
before = rss()
wall, cpu = [], []
start_wall, start_cpu = time.perf_counter(), time.process_time()
if mode == "fit":
    AODE().fit(X, y).predict_proba(X_test)
else:
    model = AODE()
    for i in range(n_calls):
        rows = slice(i * batch, (i + 1) * batch)
        t, c = time.perf_counter(), time.process_time()
        if mode == "prequential" and i:
            model.predict_proba(X[rows])
        model.partial_fit(X[rows], y[rows], classes=[0, 1])
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    t, c = time.perf_counter(), time.process_time()
    model.predict_proba(X_test)
    wall.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
total = (time.perf_counter() - start_wall, time.process_time() - start_cpu)
peak = rss()
# the stored cells (not the public view, which the timed part never built)
stored = model.__dict__.get("_pairs", model.__dict__).get("indices") if mode != "fit" else None
if stored is None and mode != "fit":
    stored = model.__dict__["pair_indices_"]  # an old build: the tables are attributes
print(json.dumps({"total": total, "wall": wall, "cpu": cpu, "before": before, "peak": peak,
                  "cells": None if stored is None else int(stored.size)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--old", default=None, help="a directory holding an old hebnb package")
    parser.add_argument("--prequential", type=int, default=20)
    args = parser.parse_args()
    n_rows, batch = (50_000 if args.quick else 200_000), 1_000
    n_calls = n_rows // batch
    jobs = {
        "fit": (None, "fit", n_calls),
        "stream": (None, "stream", n_calls),
        "prequential": (None, "prequential", args.prequential),
    }
    if args.old is not None:
        jobs["old stream"] = (args.old, "stream", n_calls)
        jobs["old prequential"] = (args.old, "prequential", args.prequential)
    results: dict[str, list[dict]] = {name: [] for name in jobs}
    for _ in range(args.rounds):
        for name, (path, mode, calls) in jobs.items():
            results[name].append(run_child(CHILD, mode, n_rows, batch, calls, pythonpath=path))

    def median(name: str, pick) -> float:
        return float(np.median([pick(r) for r in results[name]]))

    def total(name: str, k: int) -> float:
        return median(name, lambda r: r["total"][k])

    print(f"## AODE stream: {n_rows} rows x 20 features, {batch}-row batches, one thread")
    print(f"median of {args.rounds} rounds, a fresh process per measurement; wall (CPU)\n")
    print("| measure | wall (CPU) | peak memory |")
    print("|---|---|---|")
    for name in jobs:
        peak = median(name, lambda r: r["peak"]) / 2**20
        calls = jobs[name][2]
        label = name if name == "fit" else f"{name} ({calls} calls, then predict_proba)"
        print(f"| {label} | {total(name, 0):.2f} s ({total(name, 1):.2f} s) | {peak:.0f} MiB |")
    for k, clock in ((0, "wall"), (1, "CPU")):
        print(f"| stream / one fit ({clock}) | {total('stream', k) / total('fit', k):.2f}x | |")
    if args.old is not None:
        for k, clock in ((0, "wall"), (1, "CPU")):
            ratio = total("old stream", k) / total("stream", k)
            print(f"| old stream / new stream ({clock}) | {ratio:.1f}x | |")
            ratio = total("old prequential", k) / total("prequential", k)
            print(f"| old prequential / new prequential ({clock}) | {ratio:.2f}x | |")

    print("\n| per call (ms) | stream | prequential | old stream | old prequential |")
    print("|---|---|---|---|---|")

    def per_call(name: str, first: int, last: int, how) -> str:
        if name not in results:
            return ""
        values = []
        for r in results[name]:
            window = np.asarray(r["cpu"][:-1][first - 1 : last])
            values.append(how(window) * 1e3 if window.size else np.nan)
        return "" if np.isnan(np.median(values)) else f"{np.median(values):.1f}"

    rows = [
        ("median, calls 5-15", 5, 15, np.median),
        ("median, calls 95-105", 95, 105, np.median),
        ("median, calls 190-200", 190, 200, np.median),
        ("mean, calls 1-20", 1, 20, np.mean),
        ("mean, calls 91-110", 91, 110, np.mean),
        ("mean, calls 181-200", 181, 200, np.mean),
        ("mean, all calls", 1, 10**9, np.mean),
    ]
    names = ["stream", "prequential", "old stream", "old prequential"]
    for label, first, last, how in rows:
        cells = " | ".join(per_call(name, first, last, how) for name in names)
        print(f"| {label} (CPU) | {cells} |")
    solve = median("stream", lambda r: r["cpu"][-1]) * 1e3
    print(f"| the stream's first predict_proba (merge + solve, CPU) | {solve:.0f} | | | |")
    print(f"\nstored pair cells at the end: {results['stream'][0]['cells']}")


if __name__ == "__main__":
    main()
