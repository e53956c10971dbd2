"""Fit speed of hebnb's default MultinomialNB against scikit-learn's MultinomialNB on the
same counts (issue 12: "fit on reuters_r8 <= 1x scikit-learn's MultinomialNB fit").

Per dataset of ``../shared/datasets-text``: a CountVectorizer (scikit-learn's defaults)
fitted on 90% of the rows (the training part of the first stratified 10-fold split,
seed 42, as in benches/text_datasets.py), then fits of the methods on those counts,
alternating (A B C A B C ...) for ``--rounds`` rounds; each fit's wall time
(perf_counter) and CPU time of the process (process_time: all threads) are recorded,
and the medians are reported with the ratio to scikit-learn's fit.

    nice -n 5 python benches/text_fit_speed.py                       # 3 sets, 15 rounds
    nice -n 5 python benches/text_fit_speed.py --datasets reuters_r8 --rounds 31
    nice -n 5 python benches/text_fit_speed.py --profile reuters_r8  # cProfile of one fit

A fit here is what a user calls: ``model.fit(X, y)`` with the labels as strings.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
import warnings

import pandas as pd
import sklearn.naive_bayes as skl
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import StratifiedKFold
from text_datasets import DATASETS, text_root

import hebnb

METHODS = {
    "sklearn MNB alpha=1": lambda: skl.MultinomialNB(alpha=1.0),
    "hebnb MNB default": lambda: hebnb.MultinomialNB(),
    "hebnb MNB heb-m": lambda: hebnb.MultinomialNB(smoothing="heb-m"),
    "hebnb MNB heb-u tau=1": lambda: hebnb.MultinomialNB(posterior_power=1.0),
}
REFERENCE = "sklearn MNB alpha=1"


def training_counts(name: str):
    """The training counts and labels of the first 10-fold split of one set."""
    frame = pd.read_csv(text_root() / name / "data.csv", keep_default_na=False)
    texts, y = frame["text"].astype(str), frame["class"].to_numpy()
    train, _ = next(StratifiedKFold(10, shuffle=True, random_state=42).split(texts, y))
    X = CountVectorizer().fit_transform(texts.iloc[train])
    return X, y[train]


def timed_fit(make, X, y) -> tuple[float, float]:
    model = make()
    cpu, wall = time.process_time(), time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--profile", metavar="DATASET", help="cProfile 20 default fits")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.profile:
        X, y = training_counts(args.profile)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(20):
            hebnb.MultinomialNB().fit(X, y)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        return
    methods = args.methods.split(",")
    if REFERENCE not in methods:
        methods.insert(0, REFERENCE)
    rows = []
    for name in args.datasets.split(","):
        X, y = training_counts(name)
        for make in METHODS.values():  # warm-up (imports, caches)
            timed_fit(make, X, y)
        for round_ in range(args.rounds):
            for method in methods:
                wall, cpu = timed_fit(METHODS[method], X, y)
                rows.append(
                    {"dataset": name, "method": method, "round": round_, "wall": wall, "cpu": cpu}
                )
    table = pd.DataFrame(rows).groupby(["dataset", "method"], sort=False)[["wall", "cpu"]]
    median = table.median()
    print(f"medians of {args.rounds} alternating rounds (ms); ratio = / {REFERENCE}")
    print("| dataset | method | fit wall ms | fit CPU ms | wall ratio | CPU ratio |")
    print("|---|---|---|---|---|---|")
    for (name, method), r in median.iterrows():
        ref = median.loc[(name, REFERENCE)]
        print(
            f"| {name} | {method} | {1e3 * r.wall:.1f} | {1e3 * r.cpu:.1f} | "
            f"{r.wall / ref.wall:.2f} | {r.cpu / ref.cpu:.2f} |"
        )


if __name__ == "__main__":
    main()
