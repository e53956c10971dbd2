"""The suite's results side by side with the paper's Tables 1-5 and 8 (markdown on stdout).

Run from the repository root after the suite (see docs/results.md for the command):

    python benches/paper_comparison.py results/suite [--sweep results/lidstone-sweep]

Reads the files ``hebnb evaluate`` wrote; fits nothing. The paper's numbers are typed in
from "Hierarchical Empirical-Bayes Naive Bayes" (section 5): 31 datasets, of which this
suite shares about 20 (it lacks nomao, click-prediction, adult and a few others and has
some the paper does not list).
"""

from __future__ import annotations

import argparse

import pandas as pd

from hebnb.evaluation.report import read_result, score_table, summarise
from hebnb.evaluation.statistics import friedman_nemenyi, paired_wilcoxon
from hebnb.metrics import HIGHER_IS_BETTER

METRICS = ("accuracy", "f1_macro", "log_loss", "brier")
TITLES = ("Accuracy", "F1-macro", "Log-loss", "Brier")

#: Table 1: mean Friedman ranks of the seven smoothers over 31 datasets.
PAPER_TABLE1 = {
    "heb-m": (3.00, 3.39, 2.26, 2.26),
    "heb-u": (3.68, 3.44, 3.06, 3.23),
    "lidstone": (2.92, 2.61, 4.65, 3.77),
    "m-estimate": (3.92, 4.10, 5.10, 4.45),
    "kt": (4.29, 4.18, 4.39, 4.39),
    "laplace": (5.05, 5.19, 3.94, 4.87),
    "target-encoding": (5.15, 5.10, 4.61, 5.03),
}
PAPER_TABLE1_P = (4.96e-6, 1.77e-6, 4.08e-7, 7.34e-7)
#: Section 5.3.1: HEB-M's Nemenyi-significant wins over the other six smoothers.
PAPER_HEB_M_WINS = {
    "accuracy": {"laplace", "target-encoding"},
    "f1_macro": {"laplace", "target-encoding"},
    "log_loss": {"lidstone", "m-estimate", "kt", "laplace", "target-encoding"},
    "brier": {"laplace", "kt", "m-estimate", "target-encoding"},
}
#: Table 2: (wins of the first, wins of AODE, p) per metric.
PAPER_TABLE2 = {
    ("heb-m", "aode"): ((3, 28, 1.05e-5), (6, 25, 2.00e-3), (3, 28, 1.45e-4), (2, 29, 1.30e-8)),
    ("heb-aode", "aode"): (
        (18, 12, 0.082),
        (23, 7, 1.29e-3),
        (23, 8, 1.57e-2),
        (23, 8, 2.89e-2),
    ),
}
#: Table 3: amazon-employee log-loss, AODE and HEB-AODE (paper's memory cap).
PAPER_TABLE3 = (0.4532, 0.4093)
#: Table 4: amazon-employee top-1 ECE, mean and std over 10 folds.
PAPER_TABLE4 = {
    "laplace": (0.0597, 0.0063),
    "heb-m": (0.0406, 0.0052),
    "heb-m+gr": (0.0194, 0.0045),
}
#: Table 5: four-way mean ranks.
PAPER_TABLE5 = {
    "laplace": (2.84, 2.45, 3.06, 3.00),
    "cawnb": (2.60, 2.95, 2.45, 2.55),
    "heb-m": (2.26, 1.90, 2.42, 2.26),
    "heb-m+gr": (2.31, 2.69, 2.06, 2.19),
}
#: Table 6: Lidstone alpha sweep with HEB-M, mean ranks over 31 datasets.
PAPER_TABLE6 = {
    "lidstone:0.001": (3.11, 2.90, 5.19, 3.58),
    "lidstone:0.01": (3.16, 2.90, 4.55, 3.68),
    "lidstone:0.1": (3.44, 3.15, 4.23, 3.97),
    "lidstone:0.5": (4.44, 4.19, 4.19, 4.42),
    "lidstone:1": (4.90, 4.90, 3.81, 4.68),
    "lidstone:2": (5.53, 6.18, 3.45, 5.03),
    "heb-m": (3.42, 3.77, 2.58, 2.65),
}
#: Section 5.5.1: datasets where the oracle Lidstone's accuracy beats HEB-M's by at most
#: 0.5 and 1.5 percentage points (of 31).
PAPER_ORACLE_GAPS = (23, 28)
#: Table 8: mean fit seconds per fold (single core).
PAPER_TABLE8 = {
    "laplace": 0.072,
    "lidstone": 0.073,
    "target-encoding": 0.074,
    "m-estimate": 0.074,
    "kt": 0.074,
    "cawnb": 0.111,
    "heb-u": 0.160,
    "heb-m": 0.165,
    "heb-m+gr": 0.175,
    "aode": 0.293,
    "heb-aode": 7.27,
}


def ranks(summary: pd.DataFrame, methods) -> dict:
    """Metric -> FriedmanResult over the given methods."""
    return {
        metric: friedman_nemenyi(score_table(summary, metric, methods), HIGHER_IS_BETTER[metric])
        for metric in METRICS
    }


def table1(summary: pd.DataFrame) -> list[str]:
    analyses = ranks(summary, list(PAPER_TABLE1))
    lines = [
        "| method | " + " | ".join(f"{t} ours | {t} paper" for t in TITLES) + " |",
        "|---|" + "---|" * 8,
    ]
    for method, paper in PAPER_TABLE1.items():
        cells = []
        for metric, value in zip(METRICS, paper):
            cells += [f"{analyses[metric].mean_ranks[method]:.2f}", f"{value:.2f}"]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    cells = []
    for metric, value in zip(METRICS, PAPER_TABLE1_P):
        cells += [f"{analyses[metric].p_value:.2g}", f"{value:.2g}"]
    lines.append("| Friedman p | " + " | ".join(cells) + " |")
    first = analyses["accuracy"]
    lines += [
        "",
        (
            f"Datasets: {first.n_datasets} (paper: 31); Nemenyi CD = "
            f"{first.critical_difference:.2f} (paper: 1.62)."
        ),
        "",
        "HEB-M's Nemenyi-significant wins over the other six smoothers (alpha = 0.05):",
        "",
        "| metric | ours | paper |",
        "|---|---|---|",
    ]
    total_ours = total_paper = 0
    for metric, title in zip(METRICS, TITLES):
        analysis = analyses[metric]
        mean = analysis.mean_ranks
        wins = {
            other
            for other in PAPER_TABLE1
            if other != "heb-m"
            and mean["heb-m"] < mean[other]
            and analysis.nemenyi_p.loc["heb-m", other] < analysis.alpha
        }
        total_ours += len(wins)
        total_paper += len(PAPER_HEB_M_WINS[metric])
        lines.append(
            f"| {title} | {len(wins)}: {', '.join(sorted(wins))} | "
            f"{len(PAPER_HEB_M_WINS[metric])}: {', '.join(sorted(PAPER_HEB_M_WINS[metric]))} |"
        )
    lines.append(f"| total | {total_ours} of 24 | {total_paper} of 24 |")
    return lines


def table2(summary: pd.DataFrame, methods) -> list[str]:
    lines = [
        (
            "| pair | metric | wins ours | losses ours | ties ours | p ours | wins paper "
            "| losses paper | p paper |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    pairs = [
        ("heb-m", "aode", ("heb-m", "aode")),
        ("heb-aode", "aode", ("heb-aode", "aode")),
        ("heb-m", "aode-capped", ("heb-m", "aode")),
        ("heb-aode-paper", "aode-capped", ("heb-aode", "aode")),
    ]
    for first, second, paper_key in pairs:
        if first not in methods or second not in methods:
            continue
        for metric, title, paper in zip(METRICS, TITLES, PAPER_TABLE2[paper_key]):
            test = paired_wilcoxon(
                score_table(summary, metric, methods), first, second, HIGHER_IS_BETTER[metric]
            )
            lines.append(
                f"| {first} vs {second} | {title} | {test.first_wins} | {test.second_wins} "
                f"| {test.ties} | {test.p_value:.2g} | {paper[0]} | {paper[1]} | {paper[2]:.2g} |"
            )
    return lines


def cell(summary: pd.DataFrame, dataset: str, method: str, metric: str) -> tuple[float, float]:
    row = summary[(summary["dataset"] == dataset) & (summary["method"] == method)]
    return float(row[metric].iloc[0]), float(row[f"{metric}_std"].iloc[0])


def table3(summary: pd.DataFrame, methods) -> list[str]:
    lines = [
        "| variant | AODE | HEB-AODE | change |",
        "|---|---|---|---|",
        (
            f"| paper (cap 200 / 5e7, pooled prior) | {PAPER_TABLE3[0]:.4f} | "
            f"{PAPER_TABLE3[1]:.4f} | {100 * (PAPER_TABLE3[1] / PAPER_TABLE3[0] - 1):+.1f}% |"
        ),
    ]
    variants = [
        ("ours, paper's cap and prior", "aode-capped", "heb-aode-paper"),
        ("ours, uncapped, two-level prior (defaults)", "aode", "heb-aode"),
    ]
    for label, plain, heb in variants:
        if plain in methods and heb in methods:
            a = cell(summary, "amazon-employee", plain, "log_loss")[0]
            b = cell(summary, "amazon-employee", heb, "log_loss")[0]
            lines.append(f"| {label} | {a:.4f} | {b:.4f} | {100 * (b / a - 1):+.1f}% |")
    return lines


def table4(summary: pd.DataFrame, methods) -> list[str]:
    lines = ["| method | ours | paper |", "|---|---|---|"]
    base = cell(summary, "amazon-employee", "laplace", "ece")[0]
    for method in ("laplace", "cawnb", "heb-m", "heb-m+gr"):
        if method not in methods:
            continue
        mean, std = cell(summary, "amazon-employee", method, "ece")
        ours = f"{mean:.4f} ± {std:.4f} ({100 * (mean / base - 1):+.0f}%)"
        if method in PAPER_TABLE4:
            paper_mean, paper_std = PAPER_TABLE4[method]
            change = 100 * (paper_mean / PAPER_TABLE4["laplace"][0] - 1)
            paper = f"{paper_mean:.4f} ± {paper_std:.4f} ({change:+.0f}%)"
        else:
            paper = "not reported"
        lines.append(f"| {method} | {ours} | {paper} |")
    return lines


def table5(summary: pd.DataFrame, methods) -> list[str]:
    if not set(PAPER_TABLE5) <= set(methods):
        return ["(needs laplace, cawnb, heb-m, heb-m+gr)"]
    analyses = ranks(summary, list(PAPER_TABLE5))
    lines = [
        "| method | " + " | ".join(f"{t} ours | {t} paper" for t in TITLES) + " |",
        "|---|" + "---|" * 8,
    ]
    for method, paper in PAPER_TABLE5.items():
        cells = []
        for metric, value in zip(METRICS, paper):
            cells += [f"{analyses[metric].mean_ranks[method]:.2f}", f"{value:.2f}"]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines


def table6(summary: pd.DataFrame) -> list[str]:
    analyses = ranks(summary, list(PAPER_TABLE6))
    lines = [
        "| method | " + " | ".join(f"{t} ours | {t} paper" for t in TITLES) + " |",
        "|---|" + "---|" * 8,
    ]
    for method, paper in PAPER_TABLE6.items():
        cells = []
        for metric, value in zip(METRICS, paper):
            cells += [f"{analyses[metric].mean_ranks[method]:.2f}", f"{value:.2f}"]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    accuracy = score_table(summary, "accuracy", list(PAPER_TABLE6))
    oracle = accuracy.drop(columns="heb-m").max(axis=1)
    gap = (oracle - accuracy["heb-m"]).clip(lower=0)
    lines += [
        "",
        "Oracle Lidstone (best alpha per dataset, chosen on the test accuracy) against HEB-M:",
        "",
        "| accuracy gap | datasets, ours | datasets, paper |",
        "|---|---|---|",
        (
            f"| at most 0.5 points | {(gap <= 0.005).sum()} of {len(gap)} "
            f"| {PAPER_ORACLE_GAPS[0]} of 31 |"
        ),
        (
            f"| at most 1.5 points | {(gap <= 0.015).sum()} of {len(gap)} "
            f"| {PAPER_ORACLE_GAPS[1]} of 31 |"
        ),
        f"| largest | {100 * gap.max():.1f} points ({gap.idxmax()}) | |",
    ]
    return lines


def table8(summary: pd.DataFrame, methods) -> list[str]:
    means = summary.groupby("method")[["fit_seconds", "predict_seconds"]].mean()
    lines = [
        "| method | fit s / fold, ours | predict s / fold, ours | fit s / fold, paper |",
        "|---|---|---|---|",
    ]
    for method in methods:
        paper = PAPER_TABLE8.get(method)
        lines.append(
            f"| {method} | {means.loc[method, 'fit_seconds']:.4f} | "
            f"{means.loc[method, 'predict_seconds']:.4f} | "
            f"{'' if paper is None else paper} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="the --out folder of hebnb evaluate --suite")
    parser.add_argument(
        "--sweep", help="the --out folder of the Lidstone sweep (lidstone:0.001,...,heb-m)"
    )
    args = parser.parse_args()
    result = read_result(args.results)
    summary = summarise(result)
    methods = result.settings["methods"]
    sections = [
        ("Table 1: mean Friedman ranks of the seven smoothers", table1(summary)),
        ("Table 2: paired Wilcoxon over datasets", table2(summary, methods)),
        ("Table 3: amazon-employee log-loss, AODE vs HEB-AODE", table3(summary, methods)),
        ("Table 4: amazon-employee top-1 ECE (mean ± std over folds)", table4(summary, methods)),
        ("Table 5: four-way mean ranks", table5(summary, methods)),
        ("Table 8: seconds per fold, mean over datasets", table8(summary, methods)),
    ]
    if args.sweep:
        sweep = summarise(read_result(args.sweep))
        sections.insert(5, ("Table 6: Lidstone alpha sweep, mean ranks", table6(sweep)))
    for title, lines in sections:
        print(f"### {title}\n")
        print("\n".join(lines))
        print()


if __name__ == "__main__":
    main()
