"""AODE on wide, low-cardinality data against Weka 3.6's AODE, side by side in one run.

The data: ``linked_table`` (default 2,000 training + 2,000 test rows x 400 ternary
features, 2 classes) has blocks of correlated neighbouring features (a Markov chain along
each block of 10, as linked markers) and a class driven by interactions (agreement between
two features of a block), so that AODE beats Naive Bayes and the choice of super-parents
matters. Weka (``weka.classifiers.bayes.AODE``, Java, one thread, Laplace) runs when
``java`` and Debian's ``weka.jar`` are present (``apt-get install weka``); otherwise the
bench says why and times hebnb alone. Its build and test times are read from Weka's own
``-o`` output ("Time taken to build model", and the wall time of the test run less JVM
start-up measured with an empty run).

Run from the repository root after ``maturin develop --release``:

    python benches/aode_weka.py
    python benches/aode_weka.py --features 200 --max-parents 5 20 50 100
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, log_loss

from common import source_module
from hebnb import AODE, CategoricalNB


def linked_table(n_rows: int, n_features: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``hebnb.datasets.make_linked`` (blocks of linked features, a class driven by
    interactions), read from this checkout so that every build timed sees the same table."""
    datasets = source_module("datasets")
    X, y = datasets.make_linked(n_rows, n_features, random_state=seed)
    return X, y


def write_arff(path: Path, X: np.ndarray, y: np.ndarray, n_values: int) -> None:
    values = ",".join(str(v) for v in range(n_values))
    lines = ["@relation linked"]
    lines += [f"@attribute x{f} {{{values}}}" for f in range(X.shape[1])]
    lines += ["@attribute class {0,1}", "@data"]
    lines += [",".join(map(str, row)) + f",{label}" for row, label in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")


def weka_jar() -> str | None:
    """Debian's weka.jar, or None."""
    try:
        listing = subprocess.run(
            ["dpkg", "-L", "weka"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    jars = [line for line in listing.splitlines() if line.endswith("weka.jar")]
    return jars[0] if jars else None


def run_weka(jar: str, train: Path, test: Path) -> tuple[float, float]:
    """(build s, test s) of Weka's AODE: the build time Weka reports, and the test time as
    the wall time of loading the model and evaluating the test set less that of loading the
    model and evaluating a one-row set (JVM start-up, class loading, reading the model)."""
    model = train.with_suffix(".model")
    out = subprocess.run(
        ["java", "-Xmx4g", "-cp", jar, "weka.classifiers.bayes.AODE"]
        + ["-t", str(train), "-d", str(model), "-no-cv", "-o"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    build = float(re.search(r"Time taken to build model:\s*([\d.]+)", out).group(1))
    one_row = test.with_name("one.arff")
    text = test.read_text().splitlines()
    one_row.write_text("\n".join(text[: text.index("@data") + 2]) + "\n")

    def evaluate(path: Path) -> float:
        start = time.perf_counter()
        subprocess.run(
            ["java", "-Xmx4g", "-cp", jar, "weka.classifiers.bayes.AODE"]
            + ["-l", str(model), "-T", str(path), "-o"],
            capture_output=True,
            check=True,
        )
        return time.perf_counter() - start

    return build, max(evaluate(test) - evaluate(one_row), 0.0)


def weka_build(jar: str, train: Path) -> tuple[float, float]:
    """(build s as Weka reports it, CPU s of the whole java process) of Weka's AODE."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        ["java", "-Xmx4g", "-cp", jar, "weka.classifiers.bayes.AODE"]
        + ["-t", str(train), "-no-cv", "-o"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return float(re.search(r"Time taken to build model:\s*([\d.]+)", out).group(1)), cpu


def fit_rounds(jar: str | None, X, y, n_jobs: int, rounds: int) -> None:
    """Fit times side by side: Weka's build, our Laplace AODE and HEB-AODE alternate
    (A B C A B C ...) for ``rounds`` rounds; medians of wall and CPU seconds. Weka's wall
    time is the build time it reports; its CPU time is that of the java process less that
    of the same run on two rows (JVM start-up, class loading; all JVM threads count)."""
    runs: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        train, tiny = Path(folder) / "train.arff", Path(folder) / "tiny.arff"
        write_arff(train, X, y, int(X.max()) + 1)
        write_arff(tiny, X[:2], y[:2], int(X.max()) + 1)
        for _ in range(rounds):
            if jar is not None:
                build, cpu = weka_build(jar, train)
                _, start_up = weka_build(jar, tiny)
                runs.setdefault("Weka 3.6 AODE build", []).append((build, cpu - start_up))
            for name, model in [
                ('AODE(smoothing="laplace")', AODE(smoothing="laplace", n_jobs=n_jobs)),
                ("AODE() (two-level HEB-AODE)", AODE(n_jobs=n_jobs)),
            ]:
                start, cpu = time.perf_counter(), time.process_time()
                model.fit(X, y)
                runs.setdefault(name, []).append(
                    (time.perf_counter() - start, time.process_time() - cpu)
                )
    print(f"fit, median of {rounds} alternating rounds (n_jobs={n_jobs})")
    print("| model | fit wall s | fit CPU s |")
    print("|---|---|---|")
    medians = {}
    for name, values in runs.items():
        wall, cpu = np.median(np.array(values), axis=0)
        medians[name] = wall
        print(f"| {name} | {wall:.2f} | {cpu:.2f} |")
    heb = medians["AODE() (two-level HEB-AODE)"]
    laplace = medians['AODE(smoothing="laplace")']
    print(f"HEB-AODE / Laplace AODE fit: {heb / laplace:.2f}x")
    if jar is not None:
        print(f"HEB-AODE fit / Weka build: {heb / medians['Weka 3.6 AODE build']:.2f}x")


def timed(model, X, y, X_test):
    start = time.perf_counter()
    model.fit(X, y)
    fit = time.perf_counter() - start
    start = time.perf_counter()
    proba = model.predict_proba(X_test)
    return fit, time.perf_counter() - start, proba


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--features", type=int, default=400)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--max-parents", type=int, nargs="*", default=[10, 50, 100, 200])
    parser.add_argument("--no-weka", action="store_true")
    parser.add_argument(
        "--fit-rounds",
        type=int,
        default=0,
        help="only time the fits: Weka, Laplace AODE and HEB-AODE alternating, this many rounds",
    )
    args = parser.parse_args()

    X_all, y_all = linked_table(2 * args.rows, args.features)
    X, y, X_test, y_test = (
        X_all[: args.rows],
        y_all[: args.rows],
        X_all[args.rows :],
        y_all[args.rows :],
    )
    print(
        f"{args.rows} train + {args.rows} test rows x {args.features} ternary features, n_jobs={args.n_jobs}"
    )
    jar = None if args.no_weka else weka_jar()
    if args.fit_rounds:
        fit_rounds(jar if shutil.which("java") else None, X, y, args.n_jobs, args.fit_rounds)
        return
    print("| model | fit s | predict_proba s | accuracy | log-loss |")
    print("|---|---|---|---|---|")
    if jar is None or shutil.which("java") is None:
        print(
            "(Weka skipped: "
            + (
                "--no-weka"
                if args.no_weka
                else "java or Debian's weka.jar not found; apt-get install weka"
            )
            + ")"
        )
    else:
        with tempfile.TemporaryDirectory() as folder:
            train, test = Path(folder) / "train.arff", Path(folder) / "test.arff"
            write_arff(train, X, y, 3)
            write_arff(test, X_test, y_test, 3)
            build, test_time = run_weka(jar, train, test)
        print(f"| Weka 3.6 AODE (Java, 1 thread, Laplace) | {build:.2f} | {test_time:.2f} | | |")
    # every AODE scores the super-parent by SPEC eq. 8 (Weka's term, and AODE's default
    # when docs/aode.md's table was made)
    models = {
        "hebnb CategoricalNB (HEB-M)": CategoricalNB(),
        'hebnb AODE(smoothing="laplace")': AODE(
            smoothing="laplace", parent_smoothing="laplace", n_jobs=args.n_jobs
        ),
        "hebnb AODE() (two-level HEB-AODE)": AODE(parent_smoothing="laplace", n_jobs=args.n_jobs),
    }
    models |= {
        f"hebnb AODE(max_parents={k})": AODE(
            max_parents=k, parent_smoothing="laplace", n_jobs=args.n_jobs
        )
        for k in args.max_parents
    }
    for name, model in models.items():
        fit, predict, proba = timed(model, X, y, X_test)
        accuracy = accuracy_score(y_test, proba.argmax(axis=1))
        print(
            f"| {name} | {fit:.2f} | {predict:.2f} | {accuracy:.3f} | {log_loss(y_test, proba):.3f} |"
        )


if __name__ == "__main__":
    main()
