"""CategoricalNB (HEB-M) against scikit-learn's OrdinalEncoder + CategoricalNB, side by side.

Run from the repository root after `maturin develop --release`:

    python benches/nb_vs_sklearn.py            # amazon-employee + synthetic 1e6 x 20
    python benches/nb_vs_sklearn.py --quick    # smaller synthetic set

It also draws fit and predict_proba time against rows (docs/figures/nb_speed.png).

Prints markdown tables: fit (including encoding) and predict_proba seconds with the
ratio scikit-learn / hebnb, fit time against rows, n_jobs 1 vs 2, where HEB-M's fit time
goes, and the solver's iterations. Times are the best of `--repeats` runs.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import CategoricalNB as SklearnCategoricalNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OrdinalEncoder
from tqdm import tqdm

from common import load_shared
from hebnb import CategoricalNB, _core
from hebnb._encoding import CategoryEncoder, encode_labels
from hebnb.datasets import make_high_cardinality


def best_time(function, repeats):
    best, result = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def sklearn_model(X):
    # every category is known at predict time here, so the encoder needs no unknown handling
    n_categories = [
        len(pd.unique(X.iloc[:, j] if hasattr(X, "iloc") else X[:, j])) for j in range(X.shape[1])
    ]
    return make_pipeline(
        OrdinalEncoder(), SklearnCategoricalNB(alpha=1.0, min_categories=n_categories)
    )


def compare(name, X, y, repeats, n_jobs=1):
    """One row of the side-by-side table."""
    ours = CategoricalNB(smoothing="heb-m", n_jobs=n_jobs)
    theirs = sklearn_model(X)
    fit_ours, _ = best_time(lambda: ours.fit(X, y), repeats)
    fit_theirs, _ = best_time(lambda: theirs.fit(X, y), repeats)
    proba_ours, _ = best_time(lambda: ours.predict_proba(X), repeats)
    proba_theirs, _ = best_time(lambda: theirs.predict_proba(X), repeats)
    return {
        "data": name,
        "rows": X.shape[0],
        "n_jobs": n_jobs,
        "sklearn fit s": fit_theirs,
        "hebnb HEB-M fit s": fit_ours,
        "fit ratio (hebnb/sklearn)": fit_ours / fit_theirs,
        "sklearn predict_proba s": proba_theirs,
        "hebnb predict_proba s": proba_ours,
        "predict_proba speed-up": proba_theirs / proba_ours,
    }


def breakdown(X, y, n_jobs=1):
    """Seconds spent encoding, counting, solving and tabulating in one HEB-M fit."""
    times = {}
    start = time.perf_counter()
    encoder = CategoryEncoder()
    codes = encoder.fit_transform(X, n_threads=n_jobs)
    classes, labels = encode_labels(y, codes.shape[1])
    times["encode"] = time.perf_counter() - start
    start = time.perf_counter()
    class_count, counts = _core.count_categories(
        codes, labels, np.ones(codes.shape[1]), encoder.offsets, len(classes), n_jobs
    )
    times["count"] = time.perf_counter() - start
    start = time.perf_counter()
    mean = _core.prior_mean(counts, encoder.offsets, "marginal")
    concentration, _, n_iter, _ = _core.fit_concentrations(
        counts, class_count, mean, encoder.offsets, 10.0, 1e-2, 1e4, n_jobs
    )
    times["solve"] = time.perf_counter() - start
    start = time.perf_counter()
    _core.log_probability_table(counts, mean, concentration, encoder.offsets, n_jobs)
    times["table"] = time.perf_counter() - start
    return times, n_iter


def plot_scaling(rows, path):
    """Fit and predict_proba seconds against rows (synthetic set, n_jobs=1), log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = pd.DataFrame(rows)
    frame = frame[frame["data"].str.startswith("synthetic") & (frame["n_jobs"] == 1)]
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for axis, (title, ours, theirs) in zip(
        axes,
        [
            ("fit (with encoding)", "hebnb HEB-M fit s", "sklearn fit s"),
            ("predict_proba (with encoding)", "hebnb predict_proba s", "sklearn predict_proba s"),
        ],
    ):
        axis.loglog(
            frame["rows"], frame[theirs], "o-", label="scikit-learn OrdinalEncoder + CategoricalNB"
        )
        axis.loglog(frame["rows"], frame[ours], "s-", label="hebnb CategoricalNB (HEB-M)")
        axis.set_title(title)
        axis.set_xlabel("rows (20 features, cardinality up to 100,000)")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("seconds")
    axes[0].legend(fontsize=7)
    figure.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    print(f"\nplot written to {path}")


def markdown(rows):
    frame = pd.DataFrame(rows)
    return frame.to_markdown(index=False, floatfmt=".3f")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000-row synthetic set")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--plot", default="docs/figures/nb_speed.png", help="where the PNG goes")
    args = parser.parse_args()
    n_big = 100_000 if args.quick else 1_000_000

    amazon = load_shared("amazon-employee")
    X_amazon, _, y_amazon, _ = train_test_split(
        amazon.drop(columns="class"),
        amazon["class"],
        train_size=20_000,
        stratify=amazon["class"],
        random_state=42,
    )
    X_big, y_big = make_high_cardinality(
        n_big, 20, n_classes=3, max_cardinality=100_000, random_state=0
    )

    tasks = [("amazon-employee (20,000 rows, DataFrame)", X_amazon, y_amazon, 1)]
    for rows in (10_000, 100_000, 1_000_000):
        if rows <= n_big:
            tasks.append((f"synthetic {rows:,} x 20", X_big[:rows], y_big[:rows], 1))
    tasks.append((f"synthetic {n_big:,} x 20", X_big, y_big, 2))
    side_by_side = [
        compare(name, X, y, args.repeats, n_jobs)
        for name, X, y, n_jobs in tqdm(tasks, desc="side by side")
    ]
    print("\n## HEB-M vs scikit-learn OrdinalEncoder + CategoricalNB (Laplace)\n")
    print(markdown(side_by_side))
    plot_scaling(side_by_side, args.plot)

    print("\n## Where HEB-M's fit time goes, and the solver's iterations\n")
    rows = []
    for name, X, y in tqdm(
        [("amazon-employee", X_amazon, y_amazon), (f"synthetic {n_big:,} x 20", X_big, y_big)],
        desc="breakdown",
    ):
        for n_jobs in (1, 2):
            times, n_iter = breakdown(X, y, n_jobs)
            solved = n_iter[n_iter > 0]
            rows.append(
                {
                    "data": name,
                    "n_jobs": n_jobs,
                    **{f"{k} s": v for k, v in times.items()},
                    "solver iterations median": float(np.median(solved)) if solved.size else 0.0,
                    "solver iterations max": int(solved.max()) if solved.size else 0,
                }
            )
    print(markdown(rows))


if __name__ == "__main__":
    main()
