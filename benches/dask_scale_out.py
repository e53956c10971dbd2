"""Scale-out fit on a Dask LocalCluster against the single-process fit.

Rows x 20 categorical features (and a 3-class label) are generated inside the partitions
(never on the client), counted on two worker processes (one thread each) and reduced to
one model. Run from the repository root after ``pip install -e '.[dask]'`` (release
build):

    nice -n 5 python benches/dask_scale_out.py                      # 20,000,000 rows
    nice -n 5 python benches/dask_scale_out.py --rows 200_000_000   # the issue's size
    nice -n 5 python benches/dask_scale_out.py --rows 2_000_000 --partitions 8  # quick

Prints a markdown table per model: rows/s of the whole fit and of the counting tasks
alone, peak resident memory of every worker, the bytes of count tables that travel to the
reduction, and the single-process ``fit`` of a subset (the same generator, concatenated
in memory) side by side in the same run, with the ratios. Results also go to
``benches/results/dask_scale_out.json``.
"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from pathlib import Path

import dask.dataframe as dd
import distributed
import numpy as np
import pandas as pd

import hebnb.dask as hd
from hebnb import AODE, CategoricalNB

#: Cardinalities of the 20 features (sum 1203): a mix of flags, mid and high cardinality.
CARDINALITIES = [2, 3, 4, 5, 8, 10, 12, 16, 20, 25, 30, 40, 50, 64, 80, 100, 128, 150, 200, 256]
COLUMNS = [f"f{j:02d}" for j in range(len(CARDINALITIES))]


def generate(seed: int, n_rows: int) -> pd.DataFrame:
    """One partition: Zipf-like categories and a label that depends on three features."""
    rng = np.random.default_rng(seed)
    data = {}
    for name, k in zip(COLUMNS, CARDINALITIES):
        weights = 1.0 / np.arange(1, k + 1)
        data[name] = rng.choice(k, size=n_rows, p=weights / weights.sum()).astype(np.int16)
    score = (data["f00"] + (data["f05"] % 3) + (data["f12"] < 5)).astype(np.int64)
    noise = rng.random(n_rows) < 0.2
    data["label"] = np.where(noise, rng.integers(0, 3, size=n_rows), score % 3).astype(np.int8)
    return pd.DataFrame(data)


def partition(spec: tuple[int, int]) -> pd.DataFrame:
    seed, n_rows = spec
    return generate(seed, n_rows)


def peak_rss_bytes() -> int:
    """This process's peak resident set (VmHWM, Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return -1


def pickled_size(state: object) -> int:
    return len(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))


def collections(specs):
    meta = generate(0, 0)
    frame = dd.from_map(partition, specs, meta=meta, enforce_metadata=False)
    return frame[COLUMNS], frame["label"]


def table_bytes(client, model, X, y, n_sample: int) -> dict:
    """Pickled bytes of the count tables of ``n_sample`` partitions (counted on the
    workers, measured there) and of the merged table of all of them."""
    graph = hd.fit_graph(model, X, y)
    leaves = sorted(k for k in graph.dask if str(k).startswith("hebnb-count"))
    leaves = sorted(leaves, key=lambda k: int(str(k).rsplit("-", 1)[1]))[:n_sample]
    futures = client.get(graph.dask, leaves, sync=False)
    sizes = client.gather(client.map(pickled_size, futures))
    client.cancel(futures)
    return {"sampled_partitions": len(sizes), "table_bytes": sizes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=lambda s: int(s.replace("_", "")), default=20_000_000)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--subset", type=lambda s: int(s.replace("_", "")), default=2_000_000)
    parser.add_argument("--models", default="categorical,aode")
    args = parser.parse_args()
    per_partition = args.rows // args.partitions
    specs = [(seed, per_partition) for seed in range(args.partitions)]
    results: dict = {"rows": per_partition * args.partitions, "partitions": args.partitions}
    models = {
        "categorical": CategoricalNB(),
        "aode": AODE(),
    }
    X, y = collections(specs)
    for name in args.models.split(","):
        model = models[name]
        # a fresh cluster per model: the peak memory of its workers is this fit's
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        )
        client = distributed.Client(cluster)
        print(f"dashboard: {client.dashboard_link}")
        start = time.perf_counter()
        with distributed.get_task_stream(client) as stream:
            fitted = hd.fit(model, X, y)
        wall = time.perf_counter() - start
        counting = [
            (s["start"], s["stop"])
            for task in stream.data
            if str(task["key"]).startswith("hebnb-count")
            for s in task["startstops"]
            if s["action"] == "compute"
        ]
        count_seconds = sum(stop - begin for begin, stop in counting)
        peaks = client.run(peak_rss_bytes)
        sizes = table_bytes(client, model, X, y, n_sample=2)
        # the single-process reference: the same generator on a subset, in memory
        n_local = max(1, args.subset // per_partition)
        same = hd.fit(type(model)(**model.get_params()), *collections(specs[:n_local]))
        client.close()
        cluster.close()
        start = time.perf_counter()
        local_frame = pd.concat([generate(seed, per_partition) for seed in range(n_local)])
        generate_seconds = time.perf_counter() - start
        start = time.perf_counter()
        local = type(model)(**model.get_params()).fit(local_frame[COLUMNS], local_frame["label"])
        local_seconds = time.perf_counter() - start
        same = same.predict_proba(local_frame[COLUMNS].iloc[:2000])
        gap = float(np.abs(same - local.predict_proba(local_frame[COLUMNS].iloc[:2000])).max())
        mean_table = float(np.mean(sizes["table_bytes"]))
        entry = {
            "fit_seconds": wall,
            "rows_per_second_fit": results["rows"] / wall,
            "count_task_seconds_total": count_seconds,
            "rows_per_second_counting_per_worker": results["rows"] / count_seconds,
            "peak_rss_bytes_per_worker": peaks,
            "table_bytes_per_partition": mean_table,
            "bytes_to_reduction_estimate": mean_table * args.partitions,
            "local_rows": len(local_frame),
            "local_fit_seconds": local_seconds,
            "local_rows_per_second": len(local_frame) / local_seconds,
            "local_generate_seconds": generate_seconds,
            "local_rows_per_second_with_generation": len(local_frame)
            / (local_seconds + generate_seconds),
            "max_abs_proba_gap_dask_vs_local_on_subset": gap,
            "n_categories": int(fitted.n_categories_.sum()),
        }
        # like with like: the cluster generates its rows, so the reference does too
        entry["speed_ratio_dask_over_local"] = (
            entry["rows_per_second_fit"] / entry["local_rows_per_second_with_generation"]
        )
        entry["counting_ratio_per_worker_over_local_fit"] = (
            entry["rows_per_second_counting_per_worker"] / entry["local_rows_per_second"]
        )
        results[name] = entry
        print(f"\n### {type(model).__name__}: {results['rows']:,} rows x {len(COLUMNS)} features")
        print("| measure | value |\n|---|---|")
        print(
            f"| fit on the cluster (2 workers) | {wall:.1f} s, {entry['rows_per_second_fit']:,.0f} rows/s |"
        )
        print(
            f"| counting tasks alone | {count_seconds:.1f} task-s, "
            f"{entry['rows_per_second_counting_per_worker']:,.0f} rows/s per worker |"
        )
        for worker, peak in peaks.items():
            print(f"| peak RSS {worker} | {peak / 2**20:,.0f} MiB |")
        print(
            f"| count table per partition | {mean_table / 2**10:,.1f} KiB "
            f"(x {args.partitions} partitions = {mean_table * args.partitions / 2**20:,.2f} MiB) |"
        )
        print(
            f"| single-process fit, {len(local_frame):,} rows | {local_seconds:.2f} s, "
            f"{entry['local_rows_per_second']:,.0f} rows/s |"
        )
        print(
            f"| single-process generate + fit, {len(local_frame):,} rows | "
            f"{generate_seconds + local_seconds:.2f} s, "
            f"{entry['local_rows_per_second_with_generation']:,.0f} rows/s |"
        )
        print(
            "| ratio cluster / single process, both generating (rows/s) | "
            f"{entry['speed_ratio_dask_over_local']:.2f} |"
        )
        print(
            "| ratio counting task per worker / single-process fit (rows/s) | "
            f"{entry['counting_ratio_per_worker_over_local_fit']:.2f} |"
        )
        print(f"| max |proba gap| dask vs local on the subset | {gap:.1e} |")
    out = Path(__file__).parent / "results" / "dask_scale_out.json"
    out.write_text(json.dumps(results, indent=2, default=str))
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
