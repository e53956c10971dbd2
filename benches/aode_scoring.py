"""predict_proba of AODE against Weka 3.6 AODE's test time on wide ternary data, by the
timing standard: Weka and hebnb alternate round by round, the median of the rounds is
reported, CPU time beside wall time.

The data are ``aode_weka.linked_table`` (2,000 training + 2,000 test rows x 400 ternary
features by default). Weka's test time is the wall time of loading its model and
evaluating the test set less that of loading it and evaluating one row (JVM start-up,
class loading, reading the model); its CPU time likewise, from the children's rusage.
hebnb scores the 2,000 test rows with ``AODE(smoothing="laplace")`` and two-level
HEB-AODE, fitted once (fit times are ``aode_weka.py``'s business).

    python benches/aode_scoring.py                  # 5 rounds, n_jobs=2
    python benches/aode_scoring.py --rounds 7 --features 200 --n-jobs 1
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from aode_weka import linked_table, weka_jar, write_arff

from hebnb import AODE


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def weka_test(jar: str, model: Path, path: Path) -> tuple[float, float]:
    """(wall s, CPU s) of loading the model and evaluating the file."""
    start, cpu = time.perf_counter(), children_cpu()
    subprocess.run(
        ["java", "-Xmx4g", "-cp", jar, "weka.classifiers.bayes.AODE"]
        + ["-l", str(model), "-T", str(path), "-o"],
        capture_output=True,
        check=True,
    )
    return time.perf_counter() - start, children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--features", type=int, default=400)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    X_all, y_all = linked_table(2 * args.rows, args.features)
    X, y, X_test, y_test = (
        X_all[: args.rows],
        y_all[: args.rows],
        X_all[args.rows :],
        y_all[args.rows :],
    )
    jar = weka_jar()
    if jar is None:
        raise SystemExit("Debian's weka.jar not found: apt-get install weka")
    models = {
        "laplace": AODE(smoothing="laplace", n_jobs=args.n_jobs).fit(X, y),
        "two-level": AODE(n_jobs=args.n_jobs).fit(X, y),
    }
    times: dict[str, list[tuple[float, float]]] = {"weka": []} | {k: [] for k in models}
    with tempfile.TemporaryDirectory() as folder:
        train, test = Path(folder) / "train.arff", Path(folder) / "test.arff"
        one = Path(folder) / "one.arff"
        write_arff(train, X, y, 3)
        write_arff(test, X_test, y_test, 3)
        write_arff(one, X_test[:1], y_test[:1], 3)
        model = Path(folder) / "aode.model"
        subprocess.run(
            ["java", "-Xmx4g", "-cp", jar, "weka.classifiers.bayes.AODE"]
            + ["-t", str(train), "-d", str(model), "-no-cv", "-o"],
            capture_output=True,
            check=True,
        )
        for round_ in range(args.rounds):
            wall, cpu = weka_test(jar, model, test)
            wall_one, cpu_one = weka_test(jar, model, one)
            times["weka"].append((max(wall - wall_one, 0.0), max(cpu - cpu_one, 0.0)))
            for name, fitted in models.items():
                start, cpu = time.perf_counter(), time.process_time()
                fitted.predict_proba(X_test)
                times[name].append((time.perf_counter() - start, time.process_time() - cpu))
            print(round_, {k: [f"{x:.2f}" for x in v[-1]] for k, v in times.items()}, flush=True)
    print(
        f"\n{args.rows} test rows x {args.features} ternary features, n_jobs={args.n_jobs}, "
        f"median of {args.rounds} alternating rounds\n"
    )
    print("| scorer | test / predict_proba wall s | CPU s | ratio to Weka (median per round) |")
    print("|---|---|---|---|")
    for name, values in times.items():
        ratio = statistics.median(v[0] / w[0] for v, w in zip(values, times["weka"]))
        print(
            f"| {name} | {statistics.median(v[0] for v in values):.3f} | "
            f"{statistics.median(v[1] for v in values):.3f} | {ratio:.3f} |"
        )


if __name__ == "__main__":
    main()
