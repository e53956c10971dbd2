"""Is the multi-document evidence unimodal? A grid scan of every AODE problem of anneal.

For every (class, parent, child) whose concentration is Type-II ML (not the low-count
fallback), the evidence (SPEC eq. 11, written in numpy in tests/test_aode.py) is evaluated
on 400 points in ln m over [1e-2, 1e4]; the script counts the problems with more than one
local maximum and those where the fitted concentration's evidence is below the grid's
best (by more than 1e-6 relative), and prints the latter.

    python benches/aode_unimodal.py
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from common import SHARED_DATASETS
from hebnb import AODE
from hebnb.evaluation.protocol import FoldBinner
from hebnb.evaluation.runner import prepare_dataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_aode import dense_tables, evidence


def main() -> None:
    # no options: --help says what the script does instead of running it
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    warnings.simplefilter("ignore")
    dataset = prepare_dataset(SHARED_DATASETS / "anneal" / "data.csv")
    X = FoldBinner(dataset.plan).fit(dataset.X).transform(dataset.X)
    y = dataset.y
    grid = np.linspace(np.log(1e-2), np.log(1e4), 400)
    for prior in ["pooled", "two-level"]:
        model = AODE(prior=prior).fit(X, y)
        n_classes = len(model.classes_)
        cardinality = [len(c) for c in model.categories_]
        values = X.to_numpy(dtype=object)
        codes = np.full(values.shape, -1)
        for f, categories in enumerate(model.categories_):
            lookup = {v: k for k, v in enumerate(categories)}
            codes[:, f] = [-1 if pd.isna(v) else lookup.get(v, -1) for v in values[:, f]]
        labels = np.searchsorted(model.classes_, y)
        single, joint = dense_tables(codes, labels, np.ones(len(y)), cardinality, n_classes)
        solved = several = below = 0
        for (i, j), table in joint.items():
            mean = single[j].sum(0) / single[j].sum()
            if prior == "two-level":
                a = model.pooled_concentration_[i, j]
                pooled = table.sum(0)
                mean = (pooled + a * mean) / (pooled.sum(1, keepdims=True) + a)
            for c in range(n_classes):
                if single[i][c].max() < model.min_count:  # the low-count rule: m = K_j
                    continue
                solved += 1
                curve = np.array([evidence(np.exp(t), table[c], mean) for t in grid])
                peaks = np.sum((curve[1:-1] > curve[:-2]) & (curve[1:-1] > curve[2:]))
                peaks += int(curve[0] > curve[1]) + int(curve[-1] > curve[-2])
                several += peaks > 1
                m = model.concentration_[c, i, j]
                found = evidence(m, table[c], mean)
                if found < curve.max() - 1e-6 * abs(curve.max()):
                    below += 1
                    best = np.exp(grid[curve.argmax()])
                    print(
                        f"  {prior} (c={c}, i={i}, j={j}): m={m:.4g} l={found:.6g}, "
                        f"grid best m={best:.4g} l={curve.max():.6g}"
                    )
        print(
            f"{prior}: {solved} problems solved, {several} with several local maxima, "
            f"{below} answers below the grid maximum"
        )


if __name__ == "__main__":
    main()
