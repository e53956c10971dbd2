"""Time of one small ``MixedNB.partial_fit`` batch on a model with a large part, against
the same batch given to that part alone, and against an earlier hebnb build when
``--baseline`` names one.

A MixedNB of a CategoricalNB over an ID-like column (``--categories`` values) and a
GaussianNB over a numeric one learns the table in one call, then takes ``--batches``
batches of 5 rows; the best and median times per batch are reported. The part alone is
the floor: MixedNB adds its own bookkeeping, and should not add a copy of its parts.

    nice -n 5 python benches/mixed_partial_fit_speed.py
    nice -n 5 python benches/mixed_partial_fit_speed.py --baseline /tmp/hebnb-old/python

(``--baseline``: a folder holding an earlier build's ``hebnb`` package, compiled core
included.)
"""

from __future__ import annotations

import argparse

from common import run_child

CHILD = """
import json, sys, time
import numpy as np, pandas as pd
from hebnb import CategoricalNB, GaussianNB, MixedNB

n, batches = map(int, sys.argv[1:3])
rng = np.random.default_rng(0)
X = pd.DataFrame({"id": np.arange(n), "x": rng.normal(size=n)})
y = rng.integers(0, 2, size=n)
parts = [("ids", CategoricalNB(), ["id"]), ("numbers", GaussianNB(), ["x"])]
models = {
    "mixed": (MixedNB(models=parts).partial_fit(X, y, classes=[0, 1]), ["id", "x"]),
    "part alone": (CategoricalNB().partial_fit(X[["id"]], y, classes=[0, 1]), ["id"]),
}
times = {name: [] for name in models}
for b in range(batches):
    rows = rng.integers(0, n, size=5)
    for name, (model, columns) in models.items():
        start = time.perf_counter()
        model.partial_fit(X.iloc[rows][columns], y[rows])
        times[name].append(time.perf_counter() - start)
print(json.dumps({name: [min(t), float(np.median(t))] for name, t in times.items()}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--categories", type=int, default=2_000_000)
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--baseline", help="folder holding an earlier hebnb build")
    args = parser.parse_args()
    print("| build | MixedNB ms, best / median | part alone ms, best / median |")
    print("|---|---|---|")
    builds = {"this": None} | ({"baseline": args.baseline} if args.baseline else {})
    for build, path in builds.items():
        got = run_child(CHILD, args.categories, args.batches, pythonpath=path)
        cells = " | ".join(f"{1e3 * got[name][0]:.1f} / {1e3 * got[name][1]:.1f}" for name in got)
        print(f"| {build} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
