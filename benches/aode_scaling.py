"""Two-level HEB-AODE on a large wide table: fit time per thread count and peak memory.

Each fit runs in a fresh process (so that its peak resident memory, ``ru_maxrss``, is
its own), the thread counts taking turns round after round (1 2 1 2 ...) so that both
see the same machine load. Printed: per round and thread count the fit's wall and CPU
seconds and the process's peak RSS (the data and imports included, their share printed
apart), then the medians and the n_jobs 1 -> 2 speed-up (median of the per-round
ratios of wall time). The data is ``aode_weka.linked_table`` (blocks of linked ternary
features, a class driven by interactions), every pair modelled.

Run from the repository root after ``maturin develop --release`` (issue 9's target: fit
<= 20 s on 2 free cores, speed-up >= 1.8x, peak memory <= 2 GB):

    python benches/aode_scaling.py --rows 5000 --features 1000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Runs in each fresh process: prints the fit's wall and CPU seconds and peak RSS as JSON.
WORKER = r"""
import json, resource, sys, time
sys.path.insert(0, {benches!r})
from aode_weka import linked_table
from hebnb import AODE
X, y = linked_table({rows}, {features})
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start, cpu = time.perf_counter(), time.process_time()
AODE(n_jobs={n_jobs}).fit(X, y)
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"wall": wall, "cpu": cpu, "peak_mb": peak / 1024, "before_mb": before / 1024}}))
"""


def run(rows: int, features: int, n_jobs: int) -> dict:
    code = WORKER.format(benches=str(HERE), rows=rows, features=features, n_jobs=n_jobs)
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--features", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    print(f"{args.rows} rows x {args.features} ternary features, two-level HEB-AODE, all pairs")
    print("| round | n_jobs | fit wall s | fit CPU s | peak RSS MB | RSS before the fit MB |")
    print("|---|---|---|---|---|---|")
    runs: dict[int, list[dict]] = {j: [] for j in args.n_jobs}
    for r in range(args.rounds):
        for n_jobs in args.n_jobs:
            result = run(args.rows, args.features, n_jobs)
            runs[n_jobs].append(result)
            print(
                f"| {r + 1} | {n_jobs} | {result['wall']:.2f} | {result['cpu']:.2f} | "
                f"{result['peak_mb']:.0f} | {result['before_mb']:.0f} |",
                flush=True,
            )
    for n_jobs, results in runs.items():
        print(
            f"n_jobs={n_jobs}: median fit {statistics.median(r['wall'] for r in results):.2f} s "
            f"wall, {statistics.median(r['cpu'] for r in results):.2f} s CPU, peak RSS "
            f"{max(r['peak_mb'] for r in results):.0f} MB at most"
        )
    if 1 in runs and 2 in runs:
        ratios = [one["wall"] / two["wall"] for one, two in zip(runs[1], runs[2])]
        print(
            f"n_jobs 1 -> 2 speed-up (median of the per-round ratios): {statistics.median(ratios):.2f}x"
        )


if __name__ == "__main__":
    main()
