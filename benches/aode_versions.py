"""AODE fit and predict_proba time of this build against an earlier build, side by side.

Each build fits the same models on the same data in its own subprocess, the builds taking
turns round after round so that both see the same machine load; the table gives the
median seconds over the rounds and the ratio (earlier / this build). predict_proba scores
the 2,000 held-out rows (amazon) or the training rows (wide). Workloads: the
amazon-employee fold of ``aode_amazon.py`` (18,000 training rows, uncapped) for Laplace,
pooled and two-level smoothing; the wide synthetic table of ``aode_wide.py``
(two-level only, optional), the 2,000 x 400 ternary table of ``aode_weka.py``, the
5,000 x 1,000 one of ``aode_scaling.py`` (fit only; optional) and the 20,000 x 100 table
of 50-value columns of ``aode_dense_tables.py`` (optional; predict_proba of 2,000 rows,
and of 1 and 10 rows for the latency of small calls), ``AODE(weighting="cll-feature")``
on the 2,000 x 400 ternary table (optional, fit only), and ``AODE(weighting="cll-value",
smoothing="laplace")`` on optdigits (optional, needs the shared datasets; fitted once per
round, predict_proba of the held-out third of the rows, and of 1 and 10 of them), and a
400,000 x 8 table of 100,000 values per column (optional; 11 million stored cells; fitted
once per round, predict_proba of 2,000 rows and of 1 and 10 rows: the latency of a small
call on a large model).

An earlier build is a directory holding an installed ``hebnb``, for example:

    git worktree add ../hebnb-baseline <commit>
    (cd ../hebnb-baseline && maturin build --release -o /tmp/baseline-wheel)
    pip install --no-deps --target /tmp/hebnb-baseline /tmp/baseline-wheel/*.whl

Then, from the repository root after ``maturin develop --release``:

    python benches/aode_versions.py --baseline /tmp/hebnb-baseline
    python benches/aode_versions.py --baseline /tmp/hebnb-baseline --wide --n-jobs 1
    python benches/aode_versions.py --baseline /tmp/hebnb-baseline --no-amazon --ternary
    python benches/aode_versions.py --baseline /tmp/hebnb-baseline --no-amazon --linked \
        --repeats 3 --rounds 3
    python benches/aode_versions.py --baseline /tmp/hebnb-baseline --no-amazon --dense50 \
        --rounds 3
    python benches/aode_versions.py --baseline /tmp/hebnb-baseline --no-amazon \
        --cell-weighted --rounds 3 --repeats 5
    python benches/aode_versions.py --baseline /tmp/hebnb-baseline --no-amazon \
        --high-cardinality --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from tqdm import tqdm

from common import run_child

HERE = Path(__file__).resolve().parent

#: Runs inside each build's subprocess: prints {model: [fit seconds per repeat]} as JSON.
WORKER = r"""
import json, sys, time
sys.path.insert(0, {benches!r})
import hebnb
from hebnb import AODE
n_jobs, workload, repeats = {n_jobs}, {workload!r}, {repeats}
if workload == "amazon":
    from aode_amazon import load
    X, y = load(20_000, 42)
    X, y, X_held = X[:18_000], y[:18_000], X[18_000:]
    models = {{
        "Laplace AODE": AODE(smoothing="laplace", n_jobs=n_jobs),
        "HEB-AODE pooled": AODE(prior="pooled", n_jobs=n_jobs),
        "HEB-AODE two-level": AODE(prior="two-level", n_jobs=n_jobs),
    }}
elif workload == "linked":
    from aode_weka import linked_table
    X, y = linked_table(5000, 1000)
    models = {{"HEB-AODE two-level": AODE(n_jobs=n_jobs)}}
elif workload == "ternary":
    from aode_weka import linked_table
    X, y = linked_table(4000, 400)  # the benchmark's training half
    X, y = X[:2000], y[:2000]
    models = {{
        "Laplace AODE": AODE(smoothing="laplace", n_jobs=n_jobs),
        "HEB-AODE two-level": AODE(n_jobs=n_jobs),
    }}
elif workload == "weighted":
    from aode_weka import linked_table
    X, y = linked_table(2000, 400)
    models = {{"AODE cll-feature": AODE(weighting="cll-feature", n_jobs=n_jobs)}}
elif workload == "cell-weighted":
    import numpy as np
    from common import load_shared
    frame = load_shared("optdigits")
    y = frame.iloc[:, -1].astype(str).to_numpy()
    X = frame.iloc[:, :-1].astype(str)
    order = np.random.default_rng(0).permutation(len(y))
    held = order[2 * len(y) // 3 :]
    X, y, X_held = X.iloc[order[: 2 * len(y) // 3]], y[order[: 2 * len(y) // 3]], X.iloc[held]
    models = {{
        "AODE cll-value (Laplace tables)": AODE(
            weighting="cll-value", smoothing="laplace", n_jobs=n_jobs
        )
    }}
elif workload == "dense50":
    from aode_dense_tables import dense50
    X, y = dense50()  # 20,000 x 100, 50 values in every column: sparse pairs
    models = {{
        "Laplace AODE": AODE(smoothing="laplace", n_jobs=n_jobs),
        "HEB-AODE two-level": AODE(n_jobs=n_jobs),
    }}
elif workload == "high-cardinality":
    import numpy as np
    rng = np.random.default_rng(0)
    X, y = rng.integers(0, 100_000, size=(400_000, 8)), rng.integers(0, 2, size=400_000)
    models = {{
        "Laplace AODE": AODE(smoothing="laplace", n_jobs=n_jobs),
        "HEB-AODE two-level": AODE(n_jobs=n_jobs),
    }}
else:
    from aode_wide import tree_bayes_net
    X, y = tree_bayes_net()
    models = {{"HEB-AODE two-level": AODE(prior="two-level", n_jobs=n_jobs)}}
X_score = (
    X_held
    if workload in ("amazon", "cell-weighted")
    else X[:2000]
    if workload in ("dense50", "high-cardinality")
    else X
)
out = {{}}
for name, model in models.items():
    model.fit(X, y)  # warm-up: thread pool, page cache
    fit, fit_cpu, predict = [], [], []
    for _ in range(repeats):
        if workload != "cell-weighted":  # its one fit above is enough
            start, start_cpu = time.perf_counter(), time.process_time()
            model.fit(X, y)
            fit.append(time.perf_counter() - start)
            fit_cpu.append(time.process_time() - start_cpu)
        if workload not in ("linked", "weighted"):
            start = time.perf_counter()
            model.predict_proba(X_score)
            predict.append(time.perf_counter() - start)
    if fit:
        out[name + ", fit"] = fit
        out[name + ", fit CPU"] = fit_cpu
    if predict:
        out[name + ", predict_proba"] = predict
    if workload in ("dense50", "cell-weighted", "high-cardinality"):  # small calls' latency
        for n_rows in (1, 10):
            latency = []
            for _ in range(20):
                start = time.perf_counter()
                model.predict_proba(X_score[:n_rows])
                latency.append(time.perf_counter() - start)
            out[name + f", predict_proba of {{n_rows}} row(s)"] = latency
print(json.dumps({{"version": hebnb.__file__, "times": out}}))
"""


def run_build(pythonpath: str | None, workload: str, n_jobs: int, repeats: int) -> dict:
    """Fit times of one build (``pythonpath`` None: the installed development build)."""
    code = WORKER.format(benches=str(HERE), n_jobs=n_jobs, workload=workload, repeats=repeats)
    return run_child(code, pythonpath=pythonpath)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", required=True, help="directory with the earlier hebnb")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=10, help="fits per round (amazon)")
    parser.add_argument("--wide", action="store_true", help="also the 20,000 x 100 table")
    parser.add_argument(
        "--ternary",
        action="store_true",
        help="also the 2,000 x 400 ternary table of aode_weka.py (Laplace and HEB-AODE)",
    )
    parser.add_argument(
        "--linked",
        action="store_true",
        help="also the 5,000 x 1,000 ternary table of aode_scaling.py (HEB-AODE fit only)",
    )
    parser.add_argument(
        "--dense50",
        action="store_true",
        help="also the 20,000 x 100 table of 50-value columns of aode_dense_tables.py "
        "(fit, and predict_proba of 2,000 rows)",
    )
    parser.add_argument(
        "--weighted",
        action="store_true",
        help="also AODE(weighting='cll-feature') on the 2,000 x 400 ternary table (fit only)",
    )
    parser.add_argument(
        "--cell-weighted",
        action="store_true",
        help="also predict_proba of AODE(weighting='cll-value') on optdigits "
        "(needs the shared datasets)",
    )
    parser.add_argument(
        "--high-cardinality",
        action="store_true",
        help="also the 400,000 x 8 table of 100,000 values per column (fit once per round, "
        "predict_proba of 2,000, 10 and 1 rows)",
    )
    parser.add_argument("--no-amazon", action="store_true", help="skip the amazon fold")
    args = parser.parse_args()

    workloads = [] if args.no_amazon else [("amazon", args.repeats)]
    workloads += [("wide", 1)] if args.wide else []
    workloads += [("ternary", args.repeats)] if args.ternary else []
    workloads += [("linked", args.repeats)] if args.linked else []
    workloads += [("dense50", 1)] if args.dense50 else []
    workloads += [("weighted", 1)] if args.weighted else []
    workloads += [("cell-weighted", args.repeats)] if args.cell_weighted else []
    workloads += [("high-cardinality", 1)] if args.high_cardinality else []
    builds = {"earlier": args.baseline, "this": None}
    times: dict[tuple[str, str, str], list[float]] = {}
    paths = {}
    steps = [(w, r, b) for _ in range(args.rounds) for w, r in workloads for b in builds]
    for workload, repeats, build in tqdm(steps, desc="rounds"):
        result = run_build(builds[build], workload, args.n_jobs, repeats)
        paths[build] = result["version"]
        for model, values in result["times"].items():
            times.setdefault((workload, model, build), []).extend(values)

    print(f"n_jobs={args.n_jobs}, {args.rounds} rounds; earlier build: {paths['earlier']}")
    print("\n| workload | model, step | earlier s | this s | earlier / this |")
    print("|---|---|---|---|---|")
    for workload, _ in workloads:
        models = sorted({m for (w, m, _) in times if w == workload})
        for model in models:
            earlier = statistics.median(times[(workload, model, "earlier")])
            this = statistics.median(times[(workload, model, "this")])
            print(f"| {workload} | {model} | {earlier:.4f} | {this:.4f} | {earlier / this:.2f}x |")
        # HEB-AODE against Laplace AODE within each build (issue 9's ratio), where both ran
        for build in builds:
            for step in ("fit", "fit CPU"):
                heb = times.get((workload, f"HEB-AODE two-level, {step}", build))
                laplace = times.get((workload, f"Laplace AODE, {step}", build))
                if heb and laplace:
                    ratio = statistics.median(heb) / statistics.median(laplace)
                    print(f"{workload}, {build} build: HEB-AODE / Laplace AODE {step} {ratio:.2f}x")


if __name__ == "__main__":
    main()
