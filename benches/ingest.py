"""Ingestion and streaming speed, side by side in one run (run by hand from the repo root).

    nice -n 5 python benches/ingest.py            # input forms, one row, stream, memory
    nice -n 5 python benches/ingest.py --quick    # smaller stream (200,000 rows)

Part 1, input forms: an amazon-employee fold (18,000 rows x 9 columns, ../shared) as int64
numpy, int64 DataFrame, object strings, pandas ``str`` (Arrow-backed), ``category``, a
polars DataFrame and a pyarrow Table: ``CategoricalNB().fit`` and ``predict_proba`` of the
18,000 rows, one thread, each as a ratio to the int64 numpy time measured in the same run;
then ``predict_proba`` of one row (int64 numpy, one-row DataFrame of strings) beside
scikit-learn's OrdinalEncoder + CategoricalNB.

Part 2, streaming: 1,000,000 rows x 20 features (cardinalities up to 100,000) in
1,000-row batches: the partial_fit stream against one fit and scikit-learn's partial_fit
stream, the per-call cost around call 100 and call 1,000, and the prequential case
(predict_proba on each batch before partial_fit) on the first batches.

Part 3, memory: peak resident memory of a fit on string columns from a pyarrow Table, as
a multiple of the table's Arrow buffers (a fresh process per measurement).

The machine is shared: compare the ratios of one run, not absolute times across runs.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from hebnb import CategoricalNB


def shared_dataset(name: str) -> pd.DataFrame:
    for parent in Path(__file__).resolve().parents:
        path = parent / "shared" / "datasets" / name / "data.csv"
        if path.is_file():
            return pd.read_csv(path)
    raise SystemExit(f"dataset {name!r} not found in a ../shared beside the checkout")


def input_forms(repeats: int) -> None:
    import pyarrow as pa

    frame = shared_dataset("amazon-employee")
    X = frame.drop(columns="class").to_numpy(dtype=np.int64)[:18_000]
    y = frame["class"].to_numpy()[:18_000]
    names = list(frame.columns[:-1])
    ints = pd.DataFrame(X, columns=names)
    objects = ints.astype(str).astype(object)
    forms = {
        "int64 numpy": X,
        "int64 DataFrame": ints,
        "object str DataFrame (astype(str): one object per cell)": objects,
        "object str DataFrame (read_csv(dtype=object): equal strings shared)": pd.read_csv(
            io.StringIO(objects.to_csv(index=False)), dtype=object
        ),
        "pandas str (Arrow) DataFrame": objects.astype(pd.StringDtype("pyarrow")),
        "category (str) DataFrame": objects.astype("category"),
        "pyarrow Table str": pa.table(
            {n: pa.array(objects[n].to_numpy(), pa.string()) for n in names}
        ),
    }
    try:
        import polars as pl

        forms["polars str"] = pl.DataFrame({n: objects[n].tolist() for n in names})
    except ImportError:
        print("(polars not installed: its row is skipped)")
    print(f"\n## Input forms: amazon-employee, {X.shape[0]} rows x {X.shape[1]}, one thread")
    print(
        f"median of {repeats} rounds, each round timing every form in turn (so that load "
        "changes hit all forms alike), wall and CPU (process_time) time; ratio = time / "
        "int64 numpy time\n"
    )
    models = {name: CategoricalNB().fit(data, y) for name, data in forms.items()}
    times = {(name, kind): [] for name in forms for kind in ("fit", "predict")}
    cpu = {(name, kind): [] for name in forms for kind in ("fit", "predict")}
    for _ in range(repeats):
        for name, data in forms.items():
            for kind, call in (
                ("fit", lambda data=data: CategoricalNB().fit(data, y)),
                ("predict", lambda name=name, data=data: models[name].predict_proba(data)),
            ):
                start, start_cpu = time.perf_counter(), time.process_time()
                call()
                times[name, kind].append(time.perf_counter() - start)
                cpu[name, kind].append(time.process_time() - start_cpu)
    print(
        "| input | fit ms (CPU) | fit ratio (CPU) | predict_proba ms (CPU) | predict ratio (CPU) |"
    )
    print("|---|---|---|---|---|")

    def cell(name, kind):
        wall, used = np.median(times[name, kind]), np.median(cpu[name, kind])
        base_wall = np.median(times["int64 numpy", kind])
        base_cpu = np.median(cpu["int64 numpy", kind])
        return (
            f"{wall * 1e3:.1f} ({used * 1e3:.1f}) | "
            f"{wall / base_wall:.2f}x ({used / base_cpu:.2f}x)"
        )

    for name in forms:
        print(f"| {name} | {cell(name, 'fit')} | {cell(name, 'predict')} |")
    one_row(X, y, objects, repeats)


def one_row(X, y, objects, repeats) -> None:
    from sklearn.naive_bayes import CategoricalNB as SkCategoricalNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OrdinalEncoder

    model = CategoricalNB().fit(X, y)
    strings = CategoricalNB().fit(objects, y)
    arrow_strings = objects.astype(pd.StringDtype("pyarrow"))
    categories = objects.astype("category")
    arrow_model = CategoricalNB().fit(arrow_strings, y)
    category_model = CategoricalNB().fit(categories, y)
    # the one-row inputs are made once: slicing a DataFrame (tens of µs in pandas) is the
    # caller's work, not predict_proba's
    row, string_row = X[:1], objects.iloc[:1]
    arrow_row, category_row = arrow_strings.iloc[:1], categories.iloc[:1]
    sklearn = make_pipeline(
        OrdinalEncoder(
            handle_unknown="use_encoded_value", unknown_value=-1, encoded_missing_value=-1
        ),
        SkCategoricalNB(min_categories=None),
    )
    sklearn.fit(objects, y)
    calls = 1000
    rows = {
        "hebnb, int64 numpy row": lambda: model.predict_proba(row),
        "hebnb, one-row DataFrame of object strings": lambda: strings.predict_proba(string_row),
        "hebnb, one-row DataFrame of pandas str (Arrow)": lambda: arrow_model.predict_proba(
            arrow_row
        ),
        "hebnb, one-row DataFrame of category": lambda: category_model.predict_proba(category_row),
        "scikit-learn OrdinalEncoder + CategoricalNB, one-row DataFrame": lambda: (
            sklearn.predict_proba(string_row)
        ),
    }
    print(f"\n## predict_proba of one row (median of {repeats} rounds of the mean of many calls)\n")
    print("| call | µs (CPU µs) |")
    print("|---|---|")
    results = {name: ([], []) for name in rows}
    for _ in range(repeats):
        for name, call in rows.items():
            n = calls if "hebnb" in name else 20
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(n):
                call()
            results[name][0].append((time.perf_counter() - start) / n)
            results[name][1].append((time.process_time() - start_cpu) / n)
    for name, (wall, used) in results.items():
        print(f"| {name} | {np.median(wall) * 1e6:.0f} ({np.median(used) * 1e6:.0f}) |")


def stream_data(n_rows: int, n_features: int, seed: int = 0):
    """Zipf-like draws over cardinalities from 2 to 100,000; the label depends on three
    features."""
    rng = np.random.default_rng(seed)
    cardinalities = np.unique(np.geomspace(2, 100_000, n_features).astype(int))
    cardinalities = np.resize(cardinalities, n_features)
    X = np.empty((n_rows, n_features), dtype=np.int64)
    for f, k in enumerate(cardinalities):
        X[:, f] = np.minimum((rng.pareto(1.2, n_rows) * k / 20).astype(np.int64), k - 1)
    y = ((X[:, 0] + X[:, 1] + (X[:, 2] % 3) + rng.integers(0, 2, n_rows)) % 2).astype(np.int64)
    return X, y, cardinalities


def streaming(n_rows: int, batch: int, prequential_batches: int) -> None:
    from sklearn.naive_bayes import CategoricalNB as SkCategoricalNB

    X, y, cardinalities = stream_data(n_rows, 20)
    n_calls = n_rows // batch
    print(f"\n## Streaming: {n_rows} rows x 20 features in {batch}-row batches ({n_calls} calls)")
    print(f"cardinalities {cardinalities.min()}..{cardinalities.max()}, one thread\n")

    # wall and CPU time (process_time) side by side: on a shared machine only the CPU
    # times of the three runs compare
    clock = {"wall": time.perf_counter, "CPU": time.process_time}

    def timed(call) -> dict[str, float]:
        start = {name: tick() for name, tick in clock.items()}
        call()
        return {name: tick() - start[name] for name, tick in clock.items()}

    fit = timed(lambda: CategoricalNB().fit(X, y))

    model = CategoricalNB()
    per_call = {name: np.empty(n_calls) for name in clock}

    def stream_calls() -> None:
        for i in range(n_calls):
            start = {name: tick() for name, tick in clock.items()}
            model.partial_fit(
                X[i * batch : (i + 1) * batch], y[i * batch : (i + 1) * batch], classes=[0, 1]
            )
            for name, tick in clock.items():
                per_call[name][i] = tick() - start[name]
        assert model.concentration_.shape == (2, 20)  # the deferred solve, once, at first use

    stream = timed(stream_calls)

    sklearn = SkCategoricalNB(min_categories=cardinalities)

    def sklearn_calls() -> None:
        for i in range(n_calls):
            sklearn.partial_fit(
                X[i * batch : (i + 1) * batch], y[i * batch : (i + 1) * batch], classes=[0, 1]
            )

    sk_stream = timed(sklearn_calls)

    def around(call: int, name: str) -> float:
        window = per_call[name][max(0, call - 50) : call + 50]
        return float(np.median(window)) * 1e3

    def both(unit: str, value) -> str:
        space = "" if unit == "x" else " "
        return f"{value('wall'):.2f}{space}{unit} ({value('CPU'):.2f}{space}{unit})"

    print("| measure | wall (CPU) |")
    print("|---|---|")
    print(f"| one fit of all rows | {both('s', lambda c: fit[c])} |")
    print(
        f"| hebnb partial_fit stream (+ the solve at first use) | {both('s', lambda c: stream[c])} |"
    )
    print(
        f"| scikit-learn CategoricalNB partial_fit stream | {both('s', lambda c: sk_stream[c])} |"
    )
    print(f"| stream / one fit | {both('x', lambda c: stream[c] / fit[c])} |")
    print(f"| stream / scikit-learn stream | {both('x', lambda c: stream[c] / sk_stream[c])} |")
    last = n_calls - 1
    if n_calls >= 100:
        print(f"| per call, median around call 100 | {both('ms', lambda c: around(100, c))} |")
    print(f"| per call, median around call {n_calls} | {both('ms', lambda c: around(last, c))} |")
    if n_calls >= 100:
        ratio = both("x", lambda c: around(last, c) / around(100, c))
        print(f"| call {n_calls} / call 100 | {ratio} |")

    # prequential: score every batch before learning it (the solve runs every call);
    # "warm" starts each solve from the previous concentrations, "cold" (the warm start
    # dropped before each call) solves from scratch; the two alternate call by call
    models = {
        "warm": CategoricalNB().partial_fit(X[:batch], y[:batch], classes=[0, 1]),
        "cold": CategoricalNB().partial_fit(X[:batch], y[:batch], classes=[0, 1]),
    }
    times = {name: ([], []) for name in models}
    for i in range(1, prequential_batches + 1):
        rows = slice(i * batch, (i + 1) * batch)
        for name, model in models.items():
            if name == "cold":
                model.__dict__.pop("_warm_start", None)
            start, start_cpu = time.perf_counter(), time.process_time()
            model.predict_proba(X[rows])
            model.partial_fit(X[rows], y[rows])
            times[name][0].append(time.perf_counter() - start)
            times[name][1].append(time.process_time() - start_cpu)
    for name, (wall, used) in times.items():
        print(
            f"| prequential ({name} solve), calls 1-{prequential_batches}: median per call "
            f"(CPU) | {np.median(wall) * 1e3:.1f} ms ({np.median(used) * 1e3:.1f} ms); last 20: "
            f"{np.median(wall[-20:]) * 1e3:.1f} ms |"
        )
    warm, cold = (np.asarray(models[name].concentration_) for name in ("warm", "cold"))
    print(
        f"| warm / cold concentrations, largest relative gap | {np.nanmax(np.abs(warm / cold - 1)):.1e} |"
    )


MEMORY_CHILD = """
import resource, sys, numpy as np, pyarrow as pa
from hebnb import CategoricalNB
n, f = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
columns = {}
for j in range(f):
    codes = rng.integers(0, 1000, n)
    dictionary = pa.array([f"value-{j}-{k}" for k in range(1000)], pa.string())
    columns[f"c{j}"] = dictionary.take(pa.array(codes))
table = pa.table(columns)
y = rng.integers(0, 2, n)
buffers = table.nbytes
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
CategoricalNB().fit(table, y)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(buffers, before, after)
"""


PREDICT_CHILD = """
import resource, sys, numpy as np
from hebnb import CategoricalNB
n, f = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
model = CategoricalNB().fit(rng.integers(0, 1000, (100_000, f)), rng.integers(0, 2, 100_000))
X = rng.integers(0, 1000, (n, f))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
proba = model.predict_proba(X)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(X.nbytes, proba.nbytes, before, after)
"""


def predict_memory(n_rows: int) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PREDICT_CHILD, str(n_rows), "20"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    data, result, before, after = (int(v) for v in out)
    print(f"\n## Memory: predict_proba of {n_rows} int64 rows x 20\n")
    print("| measure | value |")
    print("|---|---|")
    print(f"| input | {data / 2**20:.0f} MiB; result {result / 2**20:.0f} MiB |")
    print(f"| peak resident growth during predict_proba | {(after - before) / 2**20:.0f} MiB |")
    print(
        f"| (input + peak growth) / (input + result) | {(data + after - before) / (data + result):.2f}x |"
    )


def memory(n_rows: int) -> None:
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, str(n_rows), "20"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    buffers, before, after = (int(v) for v in out)
    print(f"\n## Memory: fit on {n_rows} rows x 20 string columns (pyarrow Table)\n")
    print("| measure | value |")
    print("|---|---|")
    print(f"| Arrow buffers of the table | {buffers / 2**20:.0f} MiB |")
    print(f"| peak resident growth during fit | {(after - before) / 2**20:.0f} MiB |")
    print(f"| peak growth / Arrow buffers | {(after - before) / buffers:.2f}x |")
    print(f"| peak resident total / Arrow buffers | {after / buffers:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--part", choices=["forms", "stream", "memory", "all"], default="all")
    parser.add_argument("--memory-rows", type=int, default=None)
    args = parser.parse_args()
    print(json.dumps({"quick": args.quick}))
    if args.part in ("forms", "all"):
        input_forms(repeats=5 if args.quick else 15)
    if args.part in ("stream", "all"):
        streaming(200_000 if args.quick else 1_000_000, 1_000, 50 if args.quick else 200)
    if args.part in ("memory", "all"):
        memory(args.memory_rows or (1_000_000 if args.quick else 10_000_000))
        predict_memory(args.memory_rows or (1_000_000 if args.quick else 10_000_000))


if __name__ == "__main__":
    main()
