"""HEB-AODE on very wide binary data with ``max_parents`` (issue 9's 10,000 x 10,000
target: fit <= 60 s, memory <= 4 GB).

The table has structure, not only noise (``linked_table``): blocks of 10 correlated
neighbouring features (each copies the previous one with probability 0.7, like linked
markers) and a class driven by interactions within the first blocks, so that AODE beats
Naive Bayes and the super-parents chosen by mutual information matter.

One fit per process: the script prints the planned bytes (``_core.aode_planned_bytes``)
before fitting, limits its address space (``--limit-gb``, default 6 GiB, so that it
never takes more than that from a shared machine: a fit beyond it ends in MemoryError),
then reports wall and CPU time of the fit, peak resident memory (``ru_maxrss``, whole
process: data, codes and imports included), what the model keeps, and the accuracy on
held-out rows beside CategoricalNB's.

    nice -n 5 python benches/aode_very_wide.py --rows 10000 --features 10000 --max-parents 50
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np


def linked_table(
    n_rows: int, n_features: int, block: int = 10, n_signal: int = 4, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Binary features (int8) in linked blocks and a class from within-block interactions
    plus a weaker main effect of each signal block's first feature (see the module doc)."""
    rng = np.random.default_rng(seed)
    X = np.empty((n_rows, n_features), dtype=np.int8)
    for f in range(n_features):
        fresh = rng.integers(0, 2, n_rows, dtype=np.int8)
        if f % block == 0:
            X[:, f] = fresh
        else:
            X[:, f] = np.where(rng.random(n_rows) < 0.7, X[:, f - 1], fresh)
    score = np.zeros(n_rows)
    for b in range(n_signal):
        f = b * block
        agree = X[:, f] == X[:, f + 1 + b % (block - 1)]
        score += 2.0 * np.where(agree, 1.0, -1.0) * (-1) ** b + 0.8 * (X[:, f] == 0)
    score -= score.mean()
    y = (rng.random(n_rows) < 1 / (1 + np.exp(-score))).astype(np.int64)
    return X, y


def planned_gib(n_features: int, n_rows: int, max_parents: int) -> dict[str, float]:
    """The core's planned bytes of such a fit (binary features, two classes; which
    features are the super-parents does not change the plan)."""
    from hebnb import _core

    parents = np.zeros(n_features, dtype=bool)
    parents[: min(max_parents, n_features)] = True
    planned = _core.aode_planned_bytes(
        offsets=list(range(0, 2 * n_features + 1, 2)),
        capped=np.zeros((n_features, n_features), dtype=bool),
        parents=parents,
        n_rows=n_rows,
        n_classes=2,
        stored_cells=0,
    )
    return {part: round(value / 2**30, 3) for part, value in planned.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--features", type=int, default=10_000)
    parser.add_argument("--max-parents", type=int, default=50)
    parser.add_argument("--test-rows", type=int, default=2_000)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--limit-gb", type=float, default=6.0)
    parser.add_argument("--plan-only", action="store_true", help="print the plan and stop")
    args = parser.parse_args()

    plan = planned_gib(args.features, args.rows, args.max_parents)
    print("planned GiB:", json.dumps(plan), flush=True)
    if args.plan_only:
        return
    limit = int(args.limit_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))

    from hebnb import AODE, CategoricalNB

    X, y = linked_table(args.rows + args.test_rows, args.features)
    X_train, y_train = X[: args.rows], y[: args.rows]
    X_test, y_test = X[args.rows :], y[args.rows :]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    model = AODE(max_parents=args.max_parents, n_jobs=args.n_jobs)
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(X_train, y_train)
    fit, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    kept = sum(a.nbytes for a in model._pair_tables().values()) + sum(
        v.nbytes for v in model._model.values() if hasattr(v, "nbytes")
    )
    start, cpu = time.perf_counter(), time.process_time()
    accuracy = float((model.predict(X_test) == y_test).mean())
    predict, predict_cpu = time.perf_counter() - start, time.process_time() - cpu
    nb = CategoricalNB(n_jobs=args.n_jobs).fit(X_train, y_train)
    print(
        json.dumps(
            {
                "rows": args.rows,
                "features": args.features,
                "max_parents": args.max_parents,
                "n_jobs": args.n_jobs,
                "fit_s": round(fit, 2),
                "fit_cpu_s": round(fit_cpu, 2),
                "peak_rss_gib": round(peak, 3),
                "rss_before_fit_gib": round(before, 3),
                "stored_pairs": int(model.pair_features_.shape[0]),
                "model_kept_gib": round(kept / 2**30, 3),
                "predict_s": round(predict, 2),
                "predict_cpu_s": round(predict_cpu, 2),
                "accuracy": round(accuracy, 4),
                "naive_bayes_accuracy": round(float((nb.predict(X_test) == y_test).mean()), 4),
            }
        )
    )


if __name__ == "__main__":
    main()
