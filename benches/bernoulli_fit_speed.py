"""Fit speed of hebnb's default BernoulliNB (HEB-M) against scikit-learn's BernoulliNB on
sparse binary tables shaped like hashed text (Zipf-distributed features, 30 present a
row), and against an earlier hebnb build when ``--baseline`` names one.

Each model is fitted ``--rounds`` times per shape in a fresh process per build, methods
alternating; the best wall time is reported with its ratio to scikit-learn's.

    nice -n 5 python benches/bernoulli_fit_speed.py
    nice -n 5 python benches/bernoulli_fit_speed.py --baseline /tmp/hebnb-old/python

(``--baseline``: a folder holding an earlier build's ``hebnb`` package, compiled core
included.)
"""

from __future__ import annotations

import argparse

from common import run_child

#: (rows, features, classes)
SHAPES = ((20_000, 2**18, 2), (100_000, 2**18, 5), (20_000, 2**20, 20))

CHILD = """
import json, sys, time
import numpy as np, scipy.sparse as sp
import sklearn.naive_bayes as skl
import hebnb

n, n_features, n_classes, rounds = map(int, sys.argv[1:5])
rng = np.random.default_rng(0)
rows = np.repeat(np.arange(n), 30)
columns = np.minimum(rng.zipf(1.3, rows.shape[0]) - 1, n_features - 1)
X = sp.csr_matrix((np.ones(rows.shape[0]), (rows, columns)), shape=(n, n_features))
X.data[:] = 1.0
y = rng.integers(0, n_classes, n)
methods = {
    "sklearn": lambda: skl.BernoulliNB(),
    "hebnb": lambda: hebnb.BernoulliNB(),
    "hebnb laplace": lambda: hebnb.BernoulliNB(smoothing="laplace"),
}
best = {name: float("inf") for name in methods}
for _ in range(rounds):
    for name, make in methods.items():
        start = time.perf_counter()
        make().fit(X, y)
        best[name] = min(best[name], time.perf_counter() - start)
print(json.dumps(best))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", help="folder holding an earlier hebnb build")
    args = parser.parse_args()
    print("| rows x features, classes | build | sklearn s | hebnb s (ratio) | laplace s (ratio) |")
    print("|---|---|---|---|---|")
    for n, n_features, n_classes in SHAPES:
        builds = {"this": None} | ({"baseline": args.baseline} if args.baseline else {})
        for build, path in builds.items():
            best = run_child(CHILD, n, n_features, n_classes, args.rounds, pythonpath=path)
            reference = best["sklearn"]
            print(
                f"| {n:,} x {n_features:,}, {n_classes} | {build} | {reference:.3f} "
                f"| {best['hebnb']:.3f} ({best['hebnb'] / reference:.1f}x) "
                f"| {best['hebnb laplace']:.3f} ({best['hebnb laplace'] / reference:.1f}x) |",
                flush=True,
            )


if __name__ == "__main__":
    main()
