"""Discriminatively weighted hebnb models against one-hot logistic regression and CatBoost
on amazon-employee, in one run on the same folds.

Protocol (issue 13): a 20,000-row subsample stratified on the target (seed 42), stratified
5-fold cross-validation (seed 42), every column categorical and given as strings; fit
seconds include encoding the strings. CatBoost (``pip install catboost``) and scikit-learn's
LogisticRegression are benchmark-only dependencies; a model whose package is missing is
skipped.

Run from the repository root after ``pip install -e .`` (release build):

    nice -n 10 python benches/discriminative_amazon.py
    nice -n 10 python benches/discriminative_amazon.py --penalties 0.1 1 10   # penalty sweep
    nice -n 10 python benches/discriminative_amazon.py --cell-penalties 10 30 cv  # AODE cll-value
    # one build against another, in one run: copy the older python/hebnb to DIR/hebnb_base
    nice -n 10 python benches/discriminative_amazon.py --baseline DIR \
        --models "weighting='cll-value')" LogisticRegression

    # steadier fit seconds: every model fitted three times per fold
    nice -n 10 python benches/discriminative_amazon.py --cell-penalties 30 --rounds 3

Prints a markdown table of the fold means of log-loss, macro AUC, top-1 ECE (10 bins) and
the median fit seconds per fold, and the fit-time ratios of the best hebnb model to the
references.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from tqdm import tqdm

import hebnb
from common import load_shared
from hebnb.metrics import auc_ovr_macro, expected_calibration_error, log_loss


def hebnb_models(
    penalties: list[float] | None,
    cell_penalties: list[float | str] | None,
    package=None,
    child_smoothings: tuple[str, ...] = ("heb",),
) -> dict:
    """name -> factory of the hebnb models (2 threads, like CatBoost), from ``package``
    (default: the installed hebnb); the AODE cell-weighted ones at each of
    ``cell_penalties`` over the child tables of each of ``child_smoothings``."""
    AODE = hebnb.AODE if package is None else package.AODE
    CategoricalNB = hebnb.CategoricalNB if package is None else package.CategoricalNB
    models = {
        "CategoricalNB (HEB-M)": lambda: CategoricalNB(n_jobs=2),
        "CategoricalNB sqrt-MI": lambda: CategoricalNB(feature_weighting="sqrt-mi", n_jobs=2),
        "AODE(parent_smoothing='heb')": lambda: AODE(parent_smoothing="heb", n_jobs=2),
    }
    for penalty in penalties or [None]:
        suffix = "" if penalty is None else f" penalty={penalty:g}"
        for kind in ("cll-feature", "cll-value"):
            models[f"CategoricalNB {kind}{suffix}"] = lambda kind=kind, penalty=penalty: (
                CategoricalNB(weighting=kind, penalty=penalty, n_jobs=2)
            )
        models[f"CategoricalNB cll-value, in-sample rows{suffix}"] = lambda penalty=penalty: (
            CategoricalNB(
                weighting="cll-value", weighting_rows="in-sample", penalty=penalty, n_jobs=2
            )
        )
        models[f"CategoricalNB laplace + cll-value{suffix}"] = lambda penalty=penalty: (
            CategoricalNB(smoothing="laplace", weighting="cll-value", penalty=penalty, n_jobs=2)
        )
        for kind in ("cll-feature", "cll-value"):
            models[f"AODE(parent_smoothing='heb', weighting='{kind}'){suffix}"] = (
                lambda kind=kind, penalty=penalty: AODE(
                    parent_smoothing="heb", weighting=kind, penalty=penalty, n_jobs=2
                )
            )
    for tables in child_smoothings:
        options = child_table_options(tables)
        default = options == {"smoothing": "heb"}
        shown = "" if default else "".join(f"{k}={v!r}, " for k, v in options.items())
        for cell_penalty in cell_penalties or []:
            models[
                f"AODE({shown}parent_smoothing='heb', weighting='cll-value') "
                f"cell_penalty={cell_penalty}"
            ] = lambda cell_penalty=cell_penalty, options=options: AODE(
                **options,
                parent_smoothing="heb",
                weighting="cll-value",
                cell_penalty=cell_penalty,
                n_jobs=2,
            )
    return models


def child_table_options(spec: str) -> dict:
    """``"laplace"`` -> ``{"smoothing": "laplace"}``; ``"heb:prior=pooled"``,
    ``"laplace:penalty=0.3"``, ``"laplace:count_features=true"`` or
    ``"heb:concentration_bounds=0.01/30"`` -> the smoothing plus those AODE parameters
    (numbers as floats, true and false as booleans, a pair of bounds written with a
    slash)."""
    smoothing, _, rest = spec.partition(":")
    options: dict = {"smoothing": smoothing}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if "/" in value:
            options[key] = tuple(float(part) for part in value.split("/"))
        elif value in ("true", "false"):
            options[key] = value == "true"
        else:
            try:
                options[key] = float(value)
            except ValueError:
                options[key] = value
    return options


def reference_models() -> dict:
    """One-hot LogisticRegression(C=1) and CatBoost (300 iterations, 2 threads)."""
    models = {
        "one-hot + LogisticRegression(C=1)": lambda: make_pipeline(
            OneHotEncoder(handle_unknown="ignore"), LogisticRegression(C=1.0, max_iter=1000)
        )
    }
    try:
        from catboost import CatBoostClassifier
    except ImportError:
        print("catboost is not installed: skipping it (pip install catboost)")
        return models
    models["CatBoost (300 iterations)"] = lambda: CatBoostClassifier(
        iterations=300,
        thread_count=2,
        verbose=0,
        random_seed=0,
        cat_features=list(range(9)),
        allow_writing_files=False,
    )
    return models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--penalties", type=float, nargs="*", default=None)
    parser.add_argument(
        "--cell-penalties",
        type=lambda text: text if text == "cv" else float(text),
        nargs="*",
        default=None,
        help="AODE cll-value variants: penalties, or cv (chosen by cross-validation)",
    )
    parser.add_argument(
        "--child-smoothing",
        nargs="*",
        default=["heb"],
        help="the child tables under the AODE cell weights of --cell-penalties: an AODE "
        "smoothing (heb, laplace), optionally with parameters, e.g. heb:prior=pooled or "
        "heb:concentration_bounds=0.01/30",
    )
    parser.add_argument("--no-references", action="store_true")
    parser.add_argument("--csv", default=None, help="write the per-fold rows here")
    parser.add_argument(
        "--models", nargs="*", default=None, help="only the models whose name contains one"
    )
    parser.add_argument("--only-folds", type=int, default=None, help="run the first N folds")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="fit every model this many times per fold (in turn, the order reversed every "
        "other round): the fit seconds are the median over all of them",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        help="a folder holding a copy of an older python/hebnb (its _core included) renamed "
        "hebnb_base: its hebnb models run too, named with a ' [baseline]' suffix, "
        "alternating with the others in every fold",
    )
    args = parser.parse_args()

    data = load_shared("amazon-employee")
    X_all = data.drop(columns="class").astype(str)
    y_all = data["class"].to_numpy()
    X, _, y, _ = train_test_split(
        X_all, y_all, train_size=args.rows, stratify=y_all, random_state=args.seed
    )
    X = X.reset_index(drop=True)
    smoothings = tuple(args.child_smoothing)
    models = hebnb_models(args.penalties, args.cell_penalties, child_smoothings=smoothings)
    if args.baseline:
        sys.path.insert(0, args.baseline)
        import hebnb_base

        baseline = hebnb_models(
            args.penalties, args.cell_penalties, hebnb_base, child_smoothings=smoothings
        )
        models.update({f"{name} [baseline]": make for name, make in baseline.items()})
    if not args.no_references:
        models.update(reference_models())
    if args.models:
        models = {k: v for k, v in models.items() if any(m in k for m in args.models)}
    folds = list(StratifiedKFold(args.folds, shuffle=True, random_state=args.seed).split(X, y))
    folds = folds[: args.only_folds]
    rows = []
    rounds = range(args.rounds)
    with tqdm(total=len(folds) * len(models) * args.rounds, desc="fits") as progress:
        for fold, (train, test), round_ in (
            (fold, split, round_) for fold, split in enumerate(folds) for round_ in rounds
        ):
            # every other round in the opposite order, so that no model always comes first
            for name, make in list(models.items())[:: 1 if round_ % 2 == 0 else -1]:
                model = make()
                start, cpu_start = time.perf_counter(), time.process_time()
                model.fit(X.iloc[train], y[train])
                fit_seconds = time.perf_counter() - start
                fit_cpu = time.process_time() - cpu_start
                row = {
                    "model": name,
                    "fold": fold,
                    "round": round_,
                    "fit s / fold": fit_seconds,
                    "fit CPU s / fold": fit_cpu,
                }
                if round_ == 0:  # a later round fits the same model again: timed only
                    proba = model.predict_proba(X.iloc[test])
                    classes = np.asarray(model.classes_)
                    row |= {
                        "log-loss": log_loss(y[test], proba, classes),
                        "macro AUC": auc_ovr_macro(y[test], proba, classes),
                        "ECE": expected_calibration_error(y[test], proba, classes),
                        "cell penalty": getattr(model, "cell_penalty_", np.nan),
                    }
                rows.append(row)
                progress.update(1)
    frame = pd.DataFrame(rows)
    first = frame[frame["round"] == 0]  # the scored round
    means = (
        first.groupby("model", sort=False).mean().drop(columns=["fold", "round", "cell penalty"])
    )
    # seconds: the median over the folds and rounds (each round every model in turn)
    for column in ("fit s / fold", "fit CPU s / fold"):
        means[column] = frame.groupby("model", sort=False)[column].median()
    print(
        f"\namazon-employee: {args.rows} stratified rows, stratified {args.folds}-fold, seed "
        f"{args.seed}; string columns, fit seconds include encoding; metrics are fold means, "
        f"seconds the median over the folds and {args.rounds} round(s) per fold (models "
        "alternate within each round)\n"
    )
    print("| model | log-loss | macro AUC | ECE | fit s / fold | fit CPU s / fold |")
    print("|---|---|---|---|---|---|")
    for name, row in means.iterrows():
        print(
            f"| {name} | {row['log-loss']:.4f} | {row['macro AUC']:.4f} | {row['ECE']:.4f} | "
            f"{row['fit s / fold']:.3f} | {row['fit CPU s / fold']:.3f} |"
        )
    chosen = first[first["model"].str.contains("cell_penalty=cv")]
    for name, group in chosen.groupby("model", sort=False):
        print(f"\n{name}: cell_penalty_ per fold {group['cell penalty'].tolist()}")
    hebnb_names = [name for name in means.index if name.startswith(("Categorical", "AODE"))]
    # the best model of this build (a baseline's copy of it ties)
    current = [name for name in hebnb_names if not name.endswith(" [baseline]")]
    best = means.loc[current, "log-loss"].idxmin()
    print(f"\nbest hebnb model by log-loss: {best}")
    for name in means.index.difference(hebnb_names):
        for column in ("fit s / fold", "fit CPU s / fold"):
            ratio = means.loc[name, column] / means.loc[best, column]
            print(f"{column} ratio {name} / best hebnb: {ratio:.1f}x")
    if args.csv:
        frame.to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
