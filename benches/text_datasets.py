"""Text benchmark (issue 12): hebnb MultinomialNB (HEB-U and HEB-M, untuned, with the
leave-one-out posterior power and untempered) against
scikit-learn's MultinomialNB and ComplementNB at alpha = 1 and with alpha tuned by an
inner 5-fold grid search on log-loss, and against LogisticRegression, on the three sets of
``../shared/datasets-text``.

Protocol: stratified 10-fold (seed 42); per outer fold a CountVectorizer (scikit-learn's
defaults) fitted on the training texts; the inner grid search reuses the outer fold's
counts (the vocabulary is not refitted per inner fold). Per fold: accuracy, macro F1,
log-loss, Brier, top-1 ECE (hebnb.metrics), fit and predict seconds (fit also in CPU
seconds of the process; for fit speed side by side see benches/text_fit_speed.py). Tuning cost is the
whole grid search (5 folds x grid + refit).

    nice -n 5 python benches/text_datasets.py                 # all three sets, 10 folds
    nice -n 5 python benches/text_datasets.py --folds 3 --datasets sms_spam
    # rerun some methods, the others' rows from an earlier run's CSV (same folds and seed)
    nice -n 5 python benches/text_datasets.py --methods "hebnb MNB heb-m,sklearn MNB alpha=1" \
        --previous earlier-folds.csv

Writes benches/results/text-datasets-folds.csv and docs/figures/text_datasets.png and
prints the summary tables of docs/text.md.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn.naive_bayes as skl
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from tqdm import tqdm

import hebnb
from hebnb.metrics import all_metrics

ROOT = Path(__file__).resolve().parents[1]
ALPHAS = np.logspace(-3, 1, 9)
DATASETS = ("sms_spam", "rt_polarity", "reuters_r8")
METRICS = ("accuracy", "f1_macro", "log_loss", "brier", "ece")


def text_root() -> Path:
    """``datasets-text`` beside the tabular datasets: beside ``$HEBNB_SHARED_DATASETS``
    (the variable every benchmark reads) or in the nearest ``shared`` folder above."""
    if "HEBNB_SHARED_DATASETS" in os.environ:
        candidates = [Path(os.environ["HEBNB_SHARED_DATASETS"]).parent / "datasets-text"]
    else:
        candidates = [parent / "shared" / "datasets-text" for parent in ROOT.parents]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise SystemExit(
        "datasets-text not found: set HEBNB_SHARED_DATASETS to the shared datasets folder "
        "(datasets-text is its sibling)"
    )


def tuned(model) -> GridSearchCV:
    return GridSearchCV(
        model,
        {"alpha": ALPHAS},
        scoring="neg_log_loss",
        cv=StratifiedKFold(5, shuffle=True, random_state=0),
    )


METHODS = {
    "hebnb MNB heb-u (default)": lambda: hebnb.MultinomialNB(),
    "hebnb MNB heb-m": lambda: hebnb.MultinomialNB(smoothing="heb-m"),
    "hebnb MNB heb-u tau=1": lambda: hebnb.MultinomialNB(smoothing="heb-u", posterior_power=1.0),
    "hebnb MNB heb-m tau=1": lambda: hebnb.MultinomialNB(smoothing="heb-m", posterior_power=1.0),
    "sklearn MNB alpha=1": lambda: skl.MultinomialNB(alpha=1.0),
    "sklearn CNB alpha=1": lambda: skl.ComplementNB(alpha=1.0),
    "sklearn MNB tuned": lambda: tuned(skl.MultinomialNB()),
    "sklearn CNB tuned": lambda: tuned(skl.ComplementNB()),
    "LogisticRegression": lambda: LogisticRegression(max_iter=2000),
}


def run(datasets, folds: int, methods=tuple(METHODS)) -> pd.DataFrame:
    rows = []
    root = text_root()
    total = sum(folds * len(methods) for _ in datasets)
    with tqdm(total=total, unit="fit") as bar:
        for name in datasets:
            frame = pd.read_csv(root / name / "data.csv", keep_default_na=False)
            texts, y = frame["text"].astype(str), frame["class"].to_numpy()
            classes = np.unique(y)
            splitter = StratifiedKFold(folds, shuffle=True, random_state=42)
            for fold, (train, test) in enumerate(splitter.split(texts, y)):
                vectorizer = CountVectorizer().fit(texts.iloc[train])
                X_train = vectorizer.transform(texts.iloc[train])
                X_test = vectorizer.transform(texts.iloc[test])
                for method in methods:
                    make = METHODS[method]
                    bar.set_postfix_str(f"{name} {fold} {method}", refresh=False)
                    model = make()
                    start, cpu = time.perf_counter(), time.process_time()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", ConvergenceWarning)
                        model.fit(X_train, y[train])
                    fit_seconds = time.perf_counter() - start
                    fit_cpu_seconds = time.process_time() - cpu
                    start = time.perf_counter()
                    proba = model.predict_proba(X_test)
                    predict_seconds = time.perf_counter() - start
                    row = {
                        "dataset": name,
                        "method": method,
                        "fold": fold,
                        "fit_seconds": fit_seconds,
                        "fit_cpu_seconds": fit_cpu_seconds,
                        "predict_seconds": predict_seconds,
                        "n_features": X_train.shape[1],
                        **all_metrics(y[test], proba, classes),
                    }
                    if isinstance(model, GridSearchCV):
                        row["alpha"] = model.best_params_["alpha"]
                    if hasattr(model, "posterior_power_"):
                        row["posterior_power"] = model.posterior_power_
                    rows.append(row)
                    bar.update(1)
    return pd.DataFrame(rows)


def summarise(folds: pd.DataFrame) -> str:
    order = list(METHODS)
    lines = []
    for name, part in folds.groupby("dataset", sort=False):
        mean = part.groupby("method")[[*METRICS, "fit_seconds", "predict_seconds"]].mean()
        mean = mean.reindex(order)
        heb_fit = mean.loc["hebnb MNB heb-u (default)", "fit_seconds"]
        lines.append(f"\n### {name} (vocabulary ~{int(part['n_features'].mean())} tokens)\n")
        lines.append(
            "| method | accuracy | macro F1 | log-loss | Brier | ECE | fit s | predict s "
            "| default fit / this fit |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for method, r in mean.iterrows():
            lines.append(
                f"| {method} | {r.accuracy:.4f} | {r.f1_macro:.4f} | {r.log_loss:.4f} | "
                f"{r.brier:.4f} | {r.ece:.4f} | {r.fit_seconds:.4f} | {r.predict_seconds:.4f} "
                f"| {heb_fit / r.fit_seconds:.2f} |"
            )
        alphas = part.dropna(subset=["alpha"]).groupby("method")["alpha"].median()
        lines.append("\nmedian tuned alpha: " + ", ".join(f"{m}: {a:g}" for m, a in alphas.items()))
        powers = part.groupby("method")["posterior_power"].median().dropna()
        lines.append(
            "\nmedian posterior power: " + ", ".join(f"{m}: {p:.3g}" for m, p in powers.items())
        )
    return "\n".join(lines)


def plot(folds: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = list(METHODS)
    datasets = list(dict.fromkeys(folds["dataset"]))
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    width = 0.8 / len(order)
    for k, method in enumerate(order):
        part = folds[folds["method"] == method].groupby("dataset")
        loss = part["log_loss"].mean().reindex(datasets)
        fit = part["fit_seconds"].mean().reindex(datasets)
        x = np.arange(len(datasets)) + k * width
        axes[0].bar(x, loss, width, label=method)
        axes[1].bar(x, fit, width, label=method)
    for ax, title in zip(axes, ("log-loss (lower is better)", "fit seconds per fold (log)")):
        ax.set_xticks(np.arange(len(datasets)) + 0.4 - width / 2, datasets)
        ax.set_title(title)
    axes[1].set_yscale("log")
    axes[0].legend(fontsize=7)
    fig.suptitle("10-fold CV, CountVectorizer per fold (2 loaded cores)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument(
        "--methods",
        default=",".join(METHODS),
        help="comma-separated method names to run (default: all)",
    )
    parser.add_argument(
        "--previous",
        type=Path,
        help="a folds CSV of an earlier run: the methods not run now are taken from it",
    )
    args = parser.parse_args()
    methods = args.methods.split(",")
    unknown = set(methods) - set(METHODS)
    if unknown:
        parser.error(f"unknown methods {sorted(unknown)}; known: {list(METHODS)}")
    folds = run(args.datasets.split(","), args.folds, methods)
    if args.previous is not None:
        earlier = pd.read_csv(args.previous)
        kept = earlier[~earlier["method"].isin(methods) & earlier["method"].isin(METHODS)]
        kept = kept[kept["dataset"].isin(folds["dataset"].unique())]
        folds = pd.concat([folds, kept.assign(run="previous")], ignore_index=True)
    out = ROOT / "benches" / "results" / "text-datasets-folds.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    folds.to_csv(out, index=False)
    print(summarise(folds))
    plot(folds, ROOT / "docs" / "figures" / "text_datasets.png")
    print(f"\nwrote {out} and docs/figures/text_datasets.png")


if __name__ == "__main__":
    main()
