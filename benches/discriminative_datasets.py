"""Discriminatively weighted hebnb models against one-hot LogisticRegression(C=1) and
CatBoost (300 iterations) on the 25 shared datasets, on the same folds.

The paper's protocol (``hebnb.evaluation``): at most 20,000 rows (stratified, seed 42),
numeric columns binned into 10 quantile bins inside each fold, stratified folds (seed
42); 5 folds by default here (the 2 shared cores make 10 folds of CatBoost too slow).
The references see the same binned columns as strings (one-hot encoded for the
regression; every column a categorical feature for CatBoost). CatBoost and scikit-learn's
LogisticRegression are benchmark-only dependencies (``pip install catboost``).

Run from the repository root after ``pip install -e .`` (release build):

    nice -n 10 python benches/discriminative_datasets.py                  # runs, writes the CSV
    nice -n 10 python benches/discriminative_datasets.py --methods heb-m catboost
    nice -n 10 python benches/discriminative_datasets.py --folds 3 --max-rows 5000  # quicker
    python benches/discriminative_datasets.py --summarise-only

Prints per-dataset log-loss, AUC and ECE tables, mean ranks with the Friedman test and
the Nemenyi critical difference, ECE wins of the weighted models over the unweighted one,
and the AODE parent-smoothing comparison; writes the critical-difference diagrams to
docs/figures/discriminative-cd-*.png.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import LabelEncoder, OneHotEncoder

from common import SHARED_DATASETS
from hebnb.evaluation import evaluate_suite, runner
from hebnb.evaluation.plots import plot_critical_difference
from hebnb.evaluation.statistics import friedman_nemenyi, paired_wilcoxon

DEFAULT_OUT = Path(__file__).parent / "results" / "discriminative-datasets-folds.csv"
FIGURES = Path(__file__).resolve().parents[1] / "docs" / "figures"

HEBNB_METHODS = [
    "heb-m",
    "heb-m-posterior",
    "laplace",
    "heb-m+gr",
    "heb-m+cll-feature",
    "heb-m+cll-value",
    "laplace+cll-value",
    "heb-aode",
    "heb-aode-eb-parent",
    "heb-aode+cll-feature",
    "heb-aode+cll-value",
    "aode+cll-value",
]
REFERENCES = ["onehot-lr", "catboost"]
#: metric -> higher is better
METRICS = {"log_loss": False, "auc_ovr": True, "ece": False, "accuracy": True}


def _as_strings(X) -> pd.DataFrame:
    """Every column as strings (missing values become the category "nan")."""
    frame = pd.DataFrame(X).astype(object)
    return frame.where(frame.notna(), "nan").astype(str)


class OneHotLogisticRegression(ClassifierMixin, BaseEstimator):
    """One-hot encoding of the string columns + LogisticRegression(C=1)."""

    def __init__(self, C=1.0):
        self.C = C

    def fit(self, X, y):
        self.encoder_ = OneHotEncoder(handle_unknown="ignore").fit(_as_strings(X))
        self.model_ = LogisticRegression(C=self.C, max_iter=1000)
        self.model_.fit(self.encoder_.transform(_as_strings(X)), y)
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X):
        return self.model_.predict_proba(self.encoder_.transform(_as_strings(X)))


class CatBoostAllCategorical(ClassifierMixin, BaseEstimator):
    """CatBoost with every column categorical (300 iterations, 2 threads, defaults else)."""

    def __init__(self, iterations=300):
        self.iterations = iterations

    def fit(self, X, y):
        from catboost import CatBoostClassifier

        X = _as_strings(X)
        self.labels_ = LabelEncoder().fit(y)
        self.classes_ = self.labels_.classes_
        self.model_ = CatBoostClassifier(
            iterations=self.iterations,
            thread_count=2,
            verbose=0,
            random_seed=0,
            cat_features=list(range(X.shape[1])),
            allow_writing_files=False,
        )
        try:
            self.model_.fit(X, self.labels_.transform(y))
        except Exception as error:  # CatBoostError: recorded by the runner as a failed fit
            raise RuntimeError(f"catboost: {error}") from error
        return self

    def predict_proba(self, X):
        proba = self.model_.predict_proba(_as_strings(X))
        full = np.zeros((proba.shape[0], self.classes_.shape[0]))
        full[:, np.asarray(self.model_.classes_, dtype=int)] = proba
        return full


EXTERNAL = {"onehot-lr": OneHotLogisticRegression, "catboost": CatBoostAllCategorical}


def register(weighting_rows: str | None = None) -> None:
    """Lets the evaluation runner build the two references by name; ``weighting_rows``
    (if given) is that of every weighted AODE method."""
    make, check = runner.make_estimator, runner.check_methods

    def make_estimator(name, **overrides):
        if name in EXTERNAL:
            return EXTERNAL[name]()
        if weighting_rows is not None and "aode+cll-" in name:
            overrides = {**overrides, "weighting_rows": weighting_rows}
        if "@" in name:  # "<method>@<penalty>": a penalty sweep (AODE cll-value: cells')
            name, penalty = name.split("@")
            key = "cell_penalty" if "aode+cll-value" in name else "penalty"
            value = penalty if penalty == "cv" else float(penalty)
            return make(name, **{key: value}, **overrides)
        return make(name, **overrides)

    def check_methods(names):
        names = list(names)
        own = [name.split("@")[0] for name in names if name not in EXTERNAL]
        if own:
            check(own)
        return names

    runner.make_estimator, runner.check_methods = make_estimator, check_methods


def table(frame: pd.DataFrame, metric: str, methods: list[str]) -> pd.DataFrame:
    means = frame.groupby(["dataset", "method"])[metric].mean().unstack("method")
    return means.reindex(columns=[m for m in methods if m in means.columns])


def markdown(frame: pd.DataFrame, digits: int = 4) -> str:
    header = "| " + " | ".join([frame.index.name or "", *map(str, frame.columns)]) + " |"
    lines = [header, "|---" * (frame.shape[1] + 1) + "|"]
    for index, *row in frame.itertuples():
        cells = [f"{v:.{digits}f}" if isinstance(v, (float, np.floating)) else str(v) for v in row]
        lines.append(f"| {index} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def rank_analysis(
    frame: pd.DataFrame, methods: list[str], title: str, figures: Path | None, suffix: str
) -> None:
    """Mean ranks, Friedman test and Nemenyi critical difference over the datasets where
    every method in ``methods`` has a score; CD diagrams of log-loss and AUC."""
    print(f"\n### Mean ranks (1 = best), {title}: Friedman test, Nemenyi critical difference\n")
    ranks, tests = {}, {}
    for metric, higher in METRICS.items():
        result = friedman_nemenyi(table(frame, metric, methods), higher_is_better=higher)
        ranks[metric] = result.mean_ranks
        tests[metric] = (result.n_datasets, result.p_value, result.critical_difference)
        if figures is not None and metric in ("log_loss", "auc_ovr"):
            figures.mkdir(parents=True, exist_ok=True)
            name = f"discriminative-cd-{metric.replace('_', '-')}{suffix}.png"
            label = f"{metric}, {title}"
            plot_critical_difference(result, label, figures / name)
            print(f"wrote {figures / name}")
    rank_frame = pd.DataFrame(ranks).reindex(methods)
    rank_frame.index.name = "method"
    print(markdown(rank_frame, 2))
    for metric, (n, p, cd) in tests.items():
        print(f"- {metric}: {n} complete datasets, Friedman p = {p:.2g}, Nemenyi CD = {cd:.2f}")


def summarise(frame: pd.DataFrame, figures: Path | None) -> None:
    frame = frame.drop_duplicates(["dataset", "method", "fold"])
    present = set(frame["method"])
    sweep = sorted(m for m in present if "@" in m)
    methods = [m for m in HEBNB_METHODS + sweep + REFERENCES if m in present]
    failed = frame[frame["error"].fillna("") != ""]
    if len(failed):
        print(f"{len(failed)} failed fits:\n{failed[['dataset', 'method', 'error']]}\n")
    for metric in METRICS:
        print(f"\n### {metric} (fold mean)\n")
        t = table(frame, metric, methods)
        t.loc["mean"] = t.mean()
        print(markdown(t))
    # ranks need two methods: a run of one method (e.g. CatBoost alone) writes its folds
    # for a later --summarise-only over several files
    without_catboost = [m for m in methods if m != "catboost"]
    if len(without_catboost) >= 2:
        rank_analysis(frame, without_catboost, "without CatBoost", figures, "")
    if "catboost" in methods and len(methods) >= 2:
        rank_analysis(frame, methods, "with CatBoost", figures, "-with-catboost")
    ece = table(frame, "ece", methods)
    print("\n### ECE no worse than the unweighted model (datasets, of those with both)\n")
    pairs = [
        ("heb-m-posterior", "heb-m"),
        ("heb-m+cll-feature", "heb-m"),
        ("heb-m+cll-value", "heb-m"),
        ("laplace+cll-value", "laplace"),
        ("heb-aode+cll-feature", "heb-aode-eb-parent"),
        ("heb-aode+cll-value", "heb-aode-eb-parent"),
        ("aode+cll-value", "heb-aode-eb-parent"),
    ]
    for method, unweighted in pairs:
        if method in ece.columns and unweighted in ece.columns:
            both = ece[[method, unweighted]].dropna()
            wins = int((both[method] <= both[unweighted] + 5e-4).sum())
            print(f"- {method} against {unweighted}: {wins} of {len(both)}")
    if {"heb-m-posterior", "heb-m"} <= set(methods):
        print(
            "\n### Posterior-averaged concentration against Type-II ML (HEB-M): "
            "should it be the default?\n"
        )
        print("| metric | posterior better | Type-II ML better | mean difference | Wilcoxon p |")
        print("|---|---|---|---|---|")
        for metric, higher in METRICS.items():
            scores = table(frame, metric, ["heb-m-posterior", "heb-m"])
            test = paired_wilcoxon(scores, "heb-m-posterior", "heb-m", higher_is_better=higher)
            difference = (scores["heb-m-posterior"] - scores["heb-m"]).mean()
            print(
                f"| {metric} | {test.first_wins} | {test.second_wins} | {difference:+.4f} | "
                f"{test.p_value:.3f} |"
            )
    logloss = table(frame, "log_loss", methods)
    if {"heb-aode", "heb-aode-eb-parent"} <= set(logloss.columns):
        both = logloss[["heb-aode-eb-parent", "heb-aode"]].dropna()
        diff = both["heb-aode-eb-parent"] - both["heb-aode"]
        print(
            "\n### AODE parent_smoothing='heb' (the default) against 'laplace' (eq. 8), log-loss\n\n"
            f"lower on {int((diff < -5e-5).sum())}, tied on {int((diff.abs() <= 5e-5).sum())}, "
            f"higher on {int((diff > 5e-5).sum())} of {len(diff)} datasets; mean difference "
            f"{diff.mean():+.4f}"
        )
    times = frame.groupby("method")[["fit_seconds", "predict_seconds"]].mean().reindex(methods)
    print("\n### Mean seconds per fold (over datasets; loaded machine)\n")
    print(markdown(times, 3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, default=SHARED_DATASETS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--max-rows", type=int, default=20_000)
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--reverse", action="store_true", help="datasets in reverse order")
    parser.add_argument("--methods", nargs="*", default=HEBNB_METHODS + REFERENCES)
    parser.add_argument(
        "--weighting-rows",
        choices=["leave-one-out", "cross-fitted"],
        default=None,
        help="weighting_rows of the weighted AODE methods (default: the estimator's)",
    )
    parser.add_argument("--summarise-only", action="store_true")
    parser.add_argument("--no-figures", action="store_true")
    args = parser.parse_args()
    if args.summarise_only:
        frame = pd.concat([pd.read_csv(path) for path in str(args.out).split(",")])
    else:
        register(args.weighting_rows)
        names = args.datasets or [path.parent.name for path in runner.find_suite(args.suite)]
        names = names[::-1] if args.reverse else names
        args.out.parent.mkdir(parents=True, exist_ok=True)
        frames = []
        for name in names:  # one dataset at a time: the CSV grows as they finish
            frames.append(
                evaluate_suite(
                    args.suite,
                    methods=args.methods,
                    folds=args.folds,
                    max_rows=args.max_rows,
                    seed=args.seed,
                    datasets=[name],
                ).folds
            )
            frame = pd.concat(frames, ignore_index=True)
            frame.to_csv(args.out, index=False)
    summarise(frame, None if args.no_figures else FIGURES)


if __name__ == "__main__":
    main()
