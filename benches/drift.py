"""Prequential (test-then-train) log-loss on a stream whose class-conditional distributions
change halfway: CategoricalNB.partial_fit without forgetting (gamma = 1) and with
exponential forgetting (gamma < 1), and river's online multinomial Naive Bayes if installed.

Run from the repository root after `maturin develop --release`:

    python benches/drift.py                       # writes docs/figures/online_drift.png
    python benches/drift.py --rows 20000 --quick  # smaller, no river
    python benches/drift.py --with-aode --no-plot # adds HEB-AODE (about 70 s more)

Each batch is first scored (log-loss of the true class, natural log, clipped at 1e-15),
then learned. Prints a markdown table of the mean log-loss before the change, in the
5,000 rows after it, at the end of the stream, and over the whole stream, plus the time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from hebnb import AODE, CategoricalNB
from hebnb.metrics import log_loss

FIGURE = Path(__file__).resolve().parents[1] / "docs" / "figures" / "online_drift.png"


def make_stream(n_rows, seed, cardinalities=(2, 3, 5, 8, 12, 20, 50, 200), n_classes=3):
    """Rows drawn from class-conditional categorical features, each distribution a draw
    from a Dirichlet with 0.7 per value (peaked and different for every class); at
    n_rows // 2 every class-conditional distribution and the class balance are drawn
    again, so the old counts turn into misleading evidence."""
    rng = np.random.default_rng(seed)
    change = n_rows // 2
    X = np.empty((n_rows, len(cardinalities)), dtype=np.int64)
    y = np.empty(n_rows, dtype=np.int64)
    for part in (slice(0, change), slice(change, n_rows)):
        n = part.stop - part.start
        y[part] = rng.choice(n_classes, size=n, p=rng.dirichlet(np.full(n_classes, 4.0)))
        for f, k in enumerate(cardinalities):
            for c in range(n_classes):
                rows = np.flatnonzero(y[part] == c) + part.start
                theta = rng.dirichlet(np.full(k, 0.7))
                X[rows, f] = rng.choice(k, size=rows.shape[0], p=theta)
    return X, y, change


def prequential_hebnb(model, X, y, batch, classes):
    losses = []
    for start in range(0, y.shape[0], batch):
        rows = slice(start, start + batch)
        if start > 0:
            losses.append(log_loss(y[rows], model.predict_proba(X[rows]), classes))
        model.partial_fit(X[rows], y[rows], classes=classes)
    return np.array(losses)


def prequential_river(X, y, batch, classes):
    from river import naive_bayes

    model = naive_bayes.MultinomialNB(alpha=1.0)
    losses = []
    rows_as_tokens = [{f"{f}={v}": 1 for f, v in enumerate(row)} for row in X.tolist()]
    for start in range(0, y.shape[0], batch):
        stop = min(start + batch, y.shape[0])
        if start > 0:
            proba = np.zeros((stop - start, len(classes)))
            for i in range(start, stop):
                predicted = model.predict_proba_one(rows_as_tokens[i])
                for c, p in predicted.items():
                    proba[i - start, c] = p
            # an unseen class has probability 0 here: the clip at 1e-15 scores it
            losses.append(log_loss(y[start:stop], proba, classes))
        for i in range(start, stop):
            model.learn_one(rows_as_tokens[i], int(y[i]))
    return np.array(losses)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="skip river")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument(
        "--with-aode", action="store_true", help="also HEB-AODE with and without forgetting (slow)"
    )
    args = parser.parse_args()

    X, y, change = make_stream(args.rows, args.seed)
    classes = np.unique(y)
    models = {
        "HEB-M, gamma = 1": CategoricalNB(smoothing="heb-m"),
        "HEB-M, gamma = 0.9995": CategoricalNB(smoothing="heb-m", learning_rate=0.9995),
        "HEB-M, gamma = 0.998": CategoricalNB(smoothing="heb-m", learning_rate=0.998),
        "Laplace, gamma = 1": CategoricalNB(smoothing="laplace"),
        "Laplace, gamma = 0.9995": CategoricalNB(smoothing="laplace", learning_rate=0.9995),
    }
    if args.with_aode:
        models["HEB-AODE, gamma = 1"] = AODE(parent_smoothing="laplace")
        models["HEB-AODE, gamma = 0.9995"] = AODE(parent_smoothing="laplace", learning_rate=0.9995)
    curves, seconds = {}, {}
    for name, model in models.items():
        start = time.perf_counter()
        curves[name] = prequential_hebnb(model, X, y, args.batch, classes)
        seconds[name] = time.perf_counter() - start
    if not args.quick:
        try:
            start = time.perf_counter()
            curves["river MultinomialNB (one-hot, alpha = 1)"] = prequential_river(
                X, y, args.batch, classes
            )
            seconds["river MultinomialNB (one-hot, alpha = 1)"] = time.perf_counter() - start
        except ImportError:
            print("river is not installed: skipped")

    scored_from = np.arange(1, len(next(iter(curves.values()))) + 1) * args.batch
    before = (scored_from >= change // 2) & (scored_from < change)
    after = (scored_from >= change) & (scored_from < change + 5_000)
    end = scored_from >= args.rows - args.rows // 8
    print(
        f"stream: {args.rows} rows, {X.shape[1]} features (K up to {X.max() + 1}), "
        f"{classes.shape[0]} classes, change at row {change}, batches of {args.batch}\n"
    )
    print("| model | before the change | 5,000 rows after | last eighth | whole stream | seconds |")
    print("|---|---|---|---|---|---|")
    for name, losses in curves.items():
        print(
            f"| {name} | {losses[before].mean():.4f} | {losses[after].mean():.4f} | "
            f"{losses[end].mean():.4f} | {losses.mean():.4f} | {seconds[name]:.2f} |"
        )

    if not args.no_plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        window = max(1, 2_000 // args.batch)
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for name, losses in curves.items():
            smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
            style = ":" if name.startswith("river") else "--" if "Laplace" in name else "-"
            width = 2.5 if name.startswith("river") else 1.3
            ax.plot(scored_from[window - 1 :], smooth, style, label=name, linewidth=width)
        ax.set_yscale("log")
        ax.axvline(change, color="grey", linestyle=":", label="distributions change")
        ax.set_xlabel("rows seen")
        ax.set_ylabel(f"prequential log-loss (mean of {window * args.batch} rows)")
        ax.set_title("Test-then-train log-loss on a stream with a change halfway")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        FIGURE.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(FIGURE, dpi=110)
        print(f"\nplot: {FIGURE}")


if __name__ == "__main__":
    main()
