"""EmpiricalBayesDirichletClassifier against bayesianbandits' own: 1,000,000 observations in
10,000 groups, one `fit` and a stream of `partial_fit` batches, with and without forgetting.

Run from the repository root after `maturin develop --release`:

    python benches/dirichlet_groups_vs_bayesianbandits.py
    python benches/dirichlet_groups_vs_bayesianbandits.py --rows 200000 --batches 20

Prints a markdown table of seconds (best of `--repeats` for `fit`, one pass for the stream),
the ratio bayesianbandits / hebnb, and the largest relative difference between the two
tuned priors (they implement the same updates, so it should be ~1e-12).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hebnb import EmpiricalBayesDirichletClassifier


def make_groups(n_rows, n_groups, n_classes, seed):
    """Group g has class probabilities theta_g ~ Dirichlet(2, 1, 0.5, ...); Zipf-ish group sizes."""
    rng = np.random.default_rng(seed)
    alpha = 2.0 / np.arange(1, n_classes + 1)
    theta = rng.dirichlet(alpha, size=n_groups)
    popularity = 1.0 / np.arange(1, n_groups + 1) ** 0.8
    groups = rng.choice(n_groups, size=n_rows, p=popularity / popularity.sum())
    cumulative = np.cumsum(theta[groups], axis=1)
    labels = (rng.random(n_rows)[:, None] > cumulative).sum(axis=1)
    return groups.reshape(-1, 1), np.minimum(labels, n_classes - 1)


def best_time(function, repeats):
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import bayesianbandits

    X, y = make_groups(args.rows, args.groups, args.classes, args.seed)
    alphas = {k: 1.0 for k in range(args.classes)}
    batches = np.array_split(np.arange(args.rows), args.batches)
    print(
        f"{args.rows} observations, {len(np.unique(X))} groups seen, {args.classes} classes; "
        f"stream of {args.batches} partial_fit batches of {len(batches[0])}\n"
    )
    print("| task | hebnb (s) | bayesianbandits (s) | ratio | max relative prior difference |")
    print("|---|---|---|---|---|")

    def ours_fit():
        return EmpiricalBayesDirichletClassifier(dict(alphas)).fit(X, y)

    def theirs_fit():
        return bayesianbandits.EmpiricalBayesDirichletClassifier(dict(alphas)).fit(X, y)

    ours_seconds, theirs_seconds = best_time(ours_fit, args.repeats), best_time(theirs_fit, 1)
    ours, theirs = ours_fit(), theirs_fit()
    difference = np.max(np.abs(ours.prior_ / np.array(list(theirs.alphas.values())) - 1))
    row = f"| fit ({ours.n_eb_iterations_} EB steps) | {ours_seconds:.3f} | {theirs_seconds:.3f}"
    print(f"{row} | {theirs_seconds / ours_seconds:.0f}x | {difference:.1e} |")

    for rate in (1.0, 0.999):
        ours = EmpiricalBayesDirichletClassifier(dict(alphas), learning_rate=rate)
        forgetting = None if rate == 1.0 else bayesianbandits.StabilizedForgetting(rate)
        theirs = bayesianbandits.EmpiricalBayesDirichletClassifier(
            dict(alphas), forgetting=forgetting
        )
        seconds = []
        for model in (ours, theirs):
            start = time.perf_counter()
            for rows in batches:
                model.partial_fit(X[rows], y[rows])
            seconds.append(time.perf_counter() - start)
        difference = np.max(np.abs(ours.prior_ / np.array(list(theirs.alphas.values())) - 1))
        name = "partial_fit stream" + ("" if rate == 1.0 else f", learning_rate {rate}")
        print(
            f"| {name} | {seconds[0]:.3f} | {seconds[1]:.3f} | "
            f"{seconds[1] / seconds[0]:.0f}x | {difference:.1e} |"
        )

    queries = np.arange(args.groups).reshape(-1, 1)
    ours_seconds = best_time(lambda: ours.predict_proba(queries), args.repeats)
    theirs_seconds = best_time(lambda: theirs.predict_proba(queries), args.repeats)
    print(
        f"| predict_proba ({args.groups} rows) | {ours_seconds:.4f} | {theirs_seconds:.4f} | "
        f"{theirs_seconds / ours_seconds:.0f}x | - |"
    )


if __name__ == "__main__":
    main()
