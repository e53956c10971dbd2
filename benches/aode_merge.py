"""The pair-table merge (what a Dask fit's reduction and ``AODE.partial_fit`` run)
against another build of hebnb, side by side (run by hand from the repo root).

    python benches/aode_merge.py --old /tmp/hebnb-old/python
    python benches/aode_merge.py --rounds 5 --n-jobs 2

Two workloads, each split into two halves whose pair tables are counted, then merged
(``hebnb._online.merge_pair_tables``, the codes unchanged) and checked equal to the
tables of all the rows:

- ``wide k=3``: 2,000 rows x 6,000 features of 60 values, the pairs of 3 super-parents
  (``AODE(max_parents=3)`` on very wide data: 36,000 tables of about 440 cells);
- ``ternary``: 5,000 rows x 1,000 ternary features, every pair (499,500 tables of at
  most 9 cells).

Every measurement runs in a fresh process, the builds alternating round after round;
the table gives the median merge seconds (wall and CPU) and the peak resident memory of
the process, and the ratio old / this build.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from common import run_child

CHILD = r"""
import json, resource, sys, time
import numpy as np
from hebnb import _core
from hebnb._online import merge_pair_tables

workload, n_jobs = sys.argv[1], int(sys.argv[2])
n, F, K, k = {"wide k=3": (2000, 6000, 60, 3), "ternary": (5000, 1000, 3, 1000)}[workload]
rng = np.random.default_rng(0)
X = rng.integers(0, K, (F, n)).astype(np.int32)
X[1::2] = (X[::2] + rng.integers(0, 2, (F // 2, n))) % K  # linked neighbours
y = (X[0] + rng.integers(0, 2, n) > K // 2).astype(np.int64)
offsets = [K * f for f in range(F + 1)]
capped = np.zeros((F, F), bool)
parents = np.arange(F) < k

def count(rows):
    return _core.count_pairs(np.ascontiguousarray(X[:, rows]), y[rows], np.ones(len(rows)),
                             offsets=offsets, n_classes=2, capped=capped, parents=parents,
                             n_jobs=n_jobs)

a, b = count(np.arange(n // 2)), count(np.arange(n // 2, n))
same = [np.arange(K)] * F
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
wall, cpu = time.perf_counter(), time.process_time()
merged = merge_pair_tables(a, b, offsets, offsets, same, 1.0, n_jobs)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
whole = count(np.arange(n))
assert all(np.array_equal(whole[key], merged[key]) for key in ("pairs", "indptr", "indices", "counts"))
print(json.dumps({"wall": wall, "cpu": cpu, "peak": peak, "grew": peak - before,
                  "cells": int(merged["indices"].size)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--old", default=None, help="a directory holding an old hebnb package")
    args = parser.parse_args()
    builds = {"this build": None} | ({"old build": args.old} if args.old else {})
    rows = []
    for workload in ("wide k=3", "ternary"):
        results: dict[str, list[dict]] = {name: [] for name in builds}
        for _ in range(args.rounds):
            for name, path in builds.items():
                results[name].append(run_child(CHILD, workload, args.n_jobs, pythonpath=path))
        for name, runs in results.items():
            rows.append(
                {
                    "workload": workload,
                    "build": name,
                    "cells": runs[0]["cells"],
                    "merge s": np.median([r["wall"] for r in runs]),
                    "merge CPU s": np.median([r["cpu"] for r in runs]),
                    "memory grown MB": np.median([r["grew"] for r in runs]) / 1e6,
                    "peak MB": np.median([r["peak"] for r in runs]) / 1e6,
                }
            )
    table = pd.DataFrame(rows)
    if args.old:
        this = table[table.build == "this build"].set_index("workload")["merge s"]
        old = table[table.build == "old build"].set_index("workload")["merge s"]
        table["old / this"] = table.workload.map(old / this)
    print(f"n_jobs={args.n_jobs}, {args.rounds} rounds, medians")
    print(table.to_markdown(index=False, floatfmt=".3g"))


if __name__ == "__main__":
    main()
