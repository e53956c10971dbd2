"""A Dask fit of ``AODE(max_parents=k)`` on very wide data against the local fit, side by
side in one run (run by hand from the repo root, release build, ``.[dask]`` installed).

    python benches/dask_wide.py                          # 2,000 x 6,000, 60 values, k=3
    python benches/dask_wide.py --features 2000 --partitions 4

The table holds rows x features of ``--values`` values each and a label set by an
interaction of two features (10% flipped). Every partition of such data would plan
hundreds of GiB for all F^2 pairs; with ``max_parents`` the Dask fit chooses the
super-parents on the merged category counts and counts only their pairs in a second pass
over the partitions. Timed: the local ``fit``, the Dask fit under the synchronous
scheduler (one process, no transfer), and on a two-worker ``distributed.LocalCluster``
(one thread each; the cluster's start-up not timed). Each fit is checked equal to the
local one (super-parents, and ``predict_proba`` of 200 rows to 1e-10).
"""

from __future__ import annotations

import argparse
import time

import dask
import dask.array as da
import numpy as np
import pandas as pd

import hebnb.dask as hd
from hebnb import AODE


def wide_table(n_rows: int, n_features: int, n_values: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_values, size=(n_rows, n_features))
    y = (X[:, 0] < n_values // 2) ^ (X[:, 1] < n_values // 3)
    y = np.where(rng.random(n_rows) < 0.1, ~y, y).astype(int)
    return X, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000)
    parser.add_argument("--features", type=int, default=6_000)
    parser.add_argument("--values", type=int, default=60)
    parser.add_argument("--max-parents", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--no-cluster", action="store_true", help="skip the LocalCluster fit")
    args = parser.parse_args()
    X, y = wide_table(args.rows, args.features, args.values)
    chunk = -(-args.rows // args.partitions)
    Xd, yd = da.from_array(X, chunks=(chunk, -1)), da.from_array(y, chunks=chunk)
    probe = X[:200]

    started = time.perf_counter()
    local = AODE(max_parents=args.max_parents).fit(X, y)
    rows = [{"fit": "local", "seconds": time.perf_counter() - started}]
    reference = local.predict_proba(probe)

    def timed(name: str) -> None:
        started = time.perf_counter()
        model = hd.fit(AODE(max_parents=args.max_parents), Xd, yd)
        seconds = time.perf_counter() - started
        assert np.array_equal(model.super_parents_, local.super_parents_)
        difference = float(np.abs(model.predict_proba(probe) - reference).max())
        assert difference < 1e-10, difference
        rows.append({"fit": name, "seconds": seconds, "max |p - local p|": difference})

    with dask.config.set(scheduler="synchronous"):
        timed(f"dask, {args.partitions} partitions, synchronous")
    if not args.no_cluster:
        import distributed

        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, dashboard_address=":0", silence_logs=40
        )
        with distributed.Client(cluster):
            timed(f"dask, {args.partitions} partitions, LocalCluster (2 workers)")
        cluster.close()
    table = pd.DataFrame(rows)
    table["/ local"] = table["seconds"] / table["seconds"].iloc[0]
    print(
        f"{args.rows} x {args.features} features of {args.values} values, "
        f"max_parents={args.max_parents}"
    )
    print(table.to_markdown(index=False, floatfmt=".3g"))


if __name__ == "__main__":
    main()
