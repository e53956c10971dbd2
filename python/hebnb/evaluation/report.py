"""Writing an evaluation: CSV tables, PNG figures and a markdown report.

Files written into the output folder:

- ``folds.csv``: one row per (dataset, method, fold), every metric and timing.
- ``summary.csv``: mean and standard deviation over folds per (dataset, method).
- ``datasets.csv``: rows, classes and column typing of every dataset.
- ``reliability.csv``: pooled top-1 reliability bins per (dataset, method).
- ``ranks-<group>.csv`` (two datasets or more): mean Friedman ranks, Friedman p, Nemenyi
  CD, for every group of :func:`rank_groups` (``all`` methods; ``smoothers``, the
  paper's seven Naive Bayes smoothers, when other methods were evaluated too).
- ``figures/reliability-<dataset>.png`` and ``figures/cd-<group>-<metric>.png``.
- ``settings.json``: the arguments of the run (:func:`read_result` reads it all back).
- ``report.md``: all of it in one page.
- ``manifest.json``: the files above that this report wrote. A later report into the
  same folder removes the rank tables and figures listed there that it does not write
  again (other methods, datasets or groups); it never removes a file no report wrote.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..metrics import HIGHER_IS_BETTER
from .methods import PAPER_SMOOTHERS, resolve_method
from .plots import plot_critical_difference, plot_reliability
from .runner import EvaluationResult
from .statistics import FriedmanResult, check_alpha, friedman_nemenyi, paired_wilcoxon

METRIC_LABELS = {
    "accuracy": "Accuracy",
    "f1_macro": "F1-macro",
    "log_loss": "Log-loss",
    "brier": "Brier",
    "auc_ovr": "AUC (macro OvR)",
    "ece": "Top-1 ECE",
}
#: Metrics of the paper's rank tables (Table 1), then the extra ones.
RANKED_METRICS = ("accuracy", "f1_macro", "log_loss", "brier", "auc_ovr", "ece")
#: Methods drawn on reliability diagrams when they were evaluated (the paper's Figure 4).
RELIABILITY_METHODS = ("laplace", "heb-m", "cawnb", "heb-m+gr")
#: Pairs compared by the Wilcoxon test when both were evaluated (the paper's Table 2).
WILCOXON_PAIRS = (
    ("heb-m", "laplace"),
    ("heb-m", "aode"),
    ("heb-aode", "aode"),
    ("heb-aode-paper", "aode-capped"),
    ("heb-m+gr", "laplace"),
    ("heb-m+gr", "heb-m"),
    ("heb-m-posterior", "heb-m"),
)
#: Where :func:`write_report` lists the files it wrote into the folder (paths relative to
#: it, ``/``-separated).
MANIFEST = "manifest.json"
#: The written files whose names depend on the run (rank tables of the method groups,
#: diagrams of the datasets and metrics): the only ones a later report may find stale.
RUN_DEPENDENT = re.compile(r"ranks-[^/\\]+\.csv|figures/[^/\\]+\.png")


def rank_groups(methods: Sequence[str]) -> dict[str, list[str]]:
    """Sets of methods ranked together: group name -> method names.

    ``"smoothers"``: the paper's Table 1 comparison (the evaluated ones of its seven
    smoothers, when at least three were evaluated alongside other methods); ``"all"``:
    every evaluated method.
    """
    names = list(methods)
    smoothers = [m for m in names if m in PAPER_SMOOTHERS]
    groups: dict[str, list[str]] = {}
    if len(smoothers) >= 3 and len(smoothers) < len(names):
        groups["smoothers"] = smoothers
    groups["all"] = names
    return groups


def summarise(result: EvaluationResult) -> pd.DataFrame:
    """Mean and standard deviation over folds per (dataset, method) of every measure."""
    measures = [*HIGHER_IS_BETTER, "fit_seconds", "predict_seconds"]
    folds = result.folds.copy()
    for measure in measures:
        if measure not in folds:
            folds[measure] = np.nan
    grouped = folds.groupby(["dataset", "method"], sort=False)[measures]
    summary = grouped.mean().join(grouped.std(ddof=1).add_suffix("_std"))
    summary["failed_folds"] = folds.groupby(["dataset", "method"], sort=False)["error"].apply(
        lambda errors: int((errors != "").sum())
    )
    flat: pd.DataFrame = summary.reset_index()
    return flat


def score_table(summary: pd.DataFrame, metric: str, methods: Sequence[str]) -> pd.DataFrame:
    """Datasets x methods table of the fold-mean of one metric."""
    table = summary.pivot(index="dataset", columns="method", values=metric)
    ordered: pd.DataFrame = table.reindex(columns=list(methods))
    return ordered


def comparable_scores(summary: pd.DataFrame, metric: str, methods: Sequence[str]) -> pd.DataFrame:
    """:func:`score_table` without the means of a method that failed on some folds of a
    dataset (NaN there): a mean over fewer folds is not comparable with the others'
    means, so the rank statistics leave that dataset out."""
    table = score_table(summary, metric, methods)
    failed = score_table(summary, "failed_folds", methods)
    comparable: pd.DataFrame = table.mask(failed.fillna(0) > 0)
    return comparable


def rank_analysis(
    summary: pd.DataFrame, methods: Sequence[str], alpha: float = 0.05
) -> dict[str, FriedmanResult]:
    """Metric -> :class:`FriedmanResult` over the datasets where every method ran on
    every fold (needs two or more).

    Raises
    ------
    ValueError
        ``alpha`` outside (0, 1) (checked first: the metrics whose analysis is
        impossible, for too few datasets, are left out without one).
    """
    check_alpha(alpha)
    analyses: dict[str, FriedmanResult] = {}
    for metric in RANKED_METRICS:
        table = comparable_scores(summary, metric, methods)
        try:
            analyses[metric] = friedman_nemenyi(table, HIGHER_IS_BETTER[metric], alpha)
        except ValueError:
            continue
    return analyses


def rank_frame(analyses: dict[str, FriedmanResult]) -> pd.DataFrame:
    """Methods x metrics mean ranks, with Friedman p, CD and N as the last rows."""
    columns = {METRIC_LABELS[m]: a.mean_ranks for m, a in analyses.items()}
    frame = pd.DataFrame(columns)
    extra = pd.DataFrame(
        {
            METRIC_LABELS[m]: {
                "Friedman p": a.p_value,
                "Nemenyi CD": a.critical_difference,
                "datasets": a.n_datasets,
            }
            for m, a in analyses.items()
        }
    )
    first = next(iter(analyses.values()))
    frame = frame.reindex(first.mean_ranks.index)
    frame = pd.concat([frame, extra]).astype(object)
    frame.loc["datasets"] = [int(n) for n in frame.loc["datasets"].to_numpy()]
    ranks: pd.DataFrame = frame
    return ranks


def significant_pairs(analyses: dict[str, FriedmanResult]) -> pd.DataFrame:
    """Every (metric, better method, worse method) pair the Nemenyi test separates."""
    rows = []
    for metric, analysis in analyses.items():
        ranks = analysis.mean_ranks
        for better in ranks.index:
            for worse in ranks.index:
                p_value = analysis.nemenyi_p.loc[better, worse]
                if ranks[better] < ranks[worse] and p_value < analysis.alpha:
                    rows.append(
                        {
                            "metric": METRIC_LABELS[metric],
                            "better": better,
                            "worse": worse,
                            "rank gap": ranks[worse] - ranks[better],
                            "Nemenyi p": p_value,
                        }
                    )
    pairs: pd.DataFrame = pd.DataFrame(
        rows, columns=["metric", "better", "worse", "rank gap", "Nemenyi p"]
    )
    return pairs


def timing_frame(summary: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """Per method: fit and predict seconds per fold, averaged over datasets."""
    means = summary.groupby("method")[["fit_seconds", "predict_seconds"]].mean()
    timings: pd.DataFrame = means.reindex(list(methods)).rename(
        columns={"fit_seconds": "mean fit s / fold", "predict_seconds": "mean predict s / fold"}
    )
    return timings


def mean_std_table(summary: pd.DataFrame, metric: str, methods: Sequence[str]) -> pd.DataFrame:
    """Datasets x methods table of "mean ± std" strings of one metric over folds (over
    the folds that ran, marked, where some failed)."""
    means = score_table(summary, metric, methods)
    stds = score_table(summary, f"{metric}_std", methods)
    failed = score_table(summary, "failed_folds", methods).fillna(0).astype(int)
    labels = method_labels(list(means.columns))
    cells = {
        labels[m]: [
            ""
            if np.isnan(mean)
            else f"{mean:.4f} ± {std:.4f}" + (f" ({lost} folds failed)" if lost else "")
            for mean, std, lost in zip(means[m], stds[m].fillna(0.0), failed[m])
        ]
        for m in means.columns
    }
    table: pd.DataFrame = pd.DataFrame(cells, index=means.index)
    return table


def _label(method: str) -> str:
    try:
        return resolve_method(method).label
    except ValueError:
        return method


def method_labels(methods: Sequence[str]) -> dict[str, str]:
    """Method -> how tables and plots show it: its label, followed by its name where two
    of ``methods`` share a label (a result read back from a folder that an older
    version wrote), so that no column or curve takes the place of another."""
    labels = {method: _label(method) for method in methods}
    shared = Counter(labels.values())
    return {
        method: f"{label} [{method}]" if shared[label] > 1 else label
        for method, label in labels.items()
    }


def _markdown_table(frame: pd.DataFrame, float_format: str = "{:.4f}") -> str:
    """A DataFrame as a GitHub markdown table (index as the first column)."""
    header = "| " + " | ".join([str(frame.index.name or ""), *map(str, frame.columns)]) + " |"
    rule = "|" + "---|" * (frame.shape[1] + 1)
    lines = [header, rule]
    for index, row in frame.iterrows():
        cells = []
        for value in row:
            if isinstance(value, (float, np.floating)):
                cells.append("" if np.isnan(value) else _format_number(float(value), float_format))
            else:
                cells.append(str(value))
        lines.append("| " + " | ".join([str(index), *cells]) + " |")
    return "\n".join(lines)


def _format_number(value: float, float_format: str) -> str:
    if value != 0 and abs(value) < 1e-3:
        return f"{value:.2e}"
    return float_format.format(value)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def _unique_slug(text: str, taken: set[str]) -> str:
    """A file-name slug of ``text`` none of ``taken`` has (two names may slug alike:
    "my data" and "my-data"), added to ``taken``."""
    slug = base = _slug(text) or "dataset"
    n = 1
    while slug.lower() in taken:  # case-insensitive file systems too
        n += 1
        slug = f"{base}-{n}"
    taken.add(slug.lower())
    return slug


def write_figures(
    result: EvaluationResult, grouped_analyses: dict[str, dict[str, FriedmanResult]], figures: Path
) -> dict[str, Path]:
    """Reliability diagrams per dataset and CD diagrams per (group, metric); name -> path."""
    figures.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    methods = result.settings["methods"]
    shown = [m for m in RELIABILITY_METHODS if m in methods] or list(methods[:2])
    labels = method_labels(shown)
    taken: set[str] = set()
    for dataset, bins in result.reliability.groupby("dataset", sort=False):
        curves = {labels[method]: bins[bins["method"] == method] for method in shown}
        path = figures / f"reliability-{_unique_slug(str(dataset), taken)}.png"
        written[f"reliability {dataset}"] = plot_reliability(curves, str(dataset), path)
    for group, analyses in grouped_analyses.items():
        for metric, analysis in analyses.items():
            path = figures / f"cd-{group}-{metric}.png"
            written[f"cd {group} {metric}"] = plot_critical_difference(
                analysis, METRIC_LABELS[metric], path
            )
    return written


def read_result(folder: str | os.PathLike[str]) -> EvaluationResult:
    """An :class:`EvaluationResult` back from the CSV and JSON files :func:`write_report`
    wrote (to redraw figures or rewrite the report without refitting)."""
    folder = Path(folder)
    # names as written: "NA" is a name, "007" is not the number 7
    names = {"dataset": str, "method": str}
    folds = pd.read_csv(
        folder / "folds.csv",
        dtype={"error": str, **names},
        keep_default_na=False,
        na_values=[""],
    )
    folds["error"] = folds["error"].astype(object).where(folds["error"].notna(), "")
    reliability = pd.read_csv(
        folder / "reliability.csv", dtype=names, keep_default_na=False, na_values=[""]
    )
    return EvaluationResult(
        folds=folds,
        reliability=reliability,
        datasets=pd.read_csv(folder / "datasets.csv", dtype=names, keep_default_na=False),
        settings=json.loads((folder / "settings.json").read_text()),
    )


def _rank_section(
    group: str, analyses: dict[str, FriedmanResult], members: Sequence[str]
) -> list[str]:
    """Markdown lines: rank table, CD diagrams and Nemenyi-separated pairs of one group."""
    lines = [
        f"## Mean Friedman ranks, {group} ({', '.join(members)}; 1 = best)",
        "",
        _markdown_table(rank_frame(analyses), "{:.2f}"),
        "",
    ]
    for metric in analyses:
        lines.append(
            f"![CD diagram, {group}, {METRIC_LABELS[metric]}](figures/cd-{group}-{metric}.png)"
        )
    pairs = significant_pairs(analyses)
    lines += [
        "",
        f"### Pairs separated by the Nemenyi test (alpha = 0.05), {group}: {len(pairs)}",
        "",
        _markdown_table(pairs.set_index("metric"), "{:.3g}") if len(pairs) else "none",
        "",
    ]
    return lines


def rows_per_dataset(max_rows: int | None) -> str:
    """The protocol's subsample, in words."""
    if max_rows is None:
        return "every row of each dataset"
    return f"at most {max_rows} rows per dataset (stratified subsample)"


def write_report(
    result: EvaluationResult, out: str | os.PathLike[str], command: str | None = None
) -> Path:
    """Writes the CSV files, the figures and ``report.md`` into ``out``.

    Parameters
    ----------
    result : EvaluationResult
    out : path-like
        Output folder (created if needed).
    command : str, optional
        The command line that produced the result, recorded in the report.

    Returns
    -------
    Path
        The markdown report.

    Notes
    -----
    ``manifest.json`` lists the files written. The rank tables and figures that the
    manifest of an earlier report into ``out`` lists and this one does not write again
    (ranks and CD diagrams of other methods, reliability diagrams of other datasets) are
    removed; no other file of ``out`` is touched.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    earlier = listed_by_earlier_report(out)
    methods = result.settings["methods"]
    written = ["folds.csv", "reliability.csv", "datasets.csv", "settings.json", "summary.csv"]
    result.folds.to_csv(out / "folds.csv", index=False)
    result.reliability.to_csv(out / "reliability.csv", index=False)
    result.datasets.to_csv(out / "datasets.csv", index=False)
    (out / "settings.json").write_text(json.dumps(result.settings, indent=1, default=_json_value))
    summary = summarise(result)
    summary.to_csv(out / "summary.csv", index=False)
    grouped_analyses = {}
    if result.datasets.shape[0] >= 2:
        for group, members in rank_groups(methods).items():
            analyses = rank_analysis(summary, members)
            if analyses:
                grouped_analyses[group] = analyses
                rank_frame(analyses).to_csv(out / f"ranks-{group}.csv")
                written.append(f"ranks-{group}.csv")
    figures = write_figures(result, grouped_analyses, out / "figures")
    written += [f"figures/{path.name}" for path in figures.values()]

    lines = ["# hebnb evaluation", ""]
    if command:
        lines += ["Command:", "", "```", command, "```", ""]
    settings = result.settings
    if settings.get("text"):
        preparation = (
            f"the text column {settings['text']!r} turned into token counts by scikit-learn's "
            "CountVectorizer (default settings) fitted on each training fold; the other "
            "columns are not used"
        )
    else:
        preparation = (
            "numeric columns with more than 20 distinct values cut into 10 quantile bins "
            "fitted on each training fold; missing values are not imputed (the estimators "
            "skip them when counting and scoring)"
        )
    lines += [
        (
            f"Protocol: stratified {settings['folds']}-fold cross-validation, seed "
            f"{settings['seed']}, {rows_per_dataset(settings.get('max_rows'))}; "
            f"{preparation}. Brier is the multi-class score (sum "
            "over classes); the paper's macro one-vs-rest Brier is it divided by the "
            "number of classes, so ranks are the same."
        ),
        "",
        "## Datasets",
        "",
        _markdown_table(result.datasets.set_index("dataset")),
        "",
    ]
    failed = result.folds[result.folds["error"] != ""]
    if not failed.empty:
        lines += ["## Failed fits", ""]
        for _, row in failed.iterrows():
            lines.append(f"- {row['dataset']} fold {row['fold']} {row['method']}: {row['error']}")
        lines.append("")
    for group, analyses in grouped_analyses.items():
        lines += _rank_section(group, analyses, rank_groups(methods)[group])
    if grouped_analyses:
        pairs = [(a, b) for a, b in WILCOXON_PAIRS if a in methods and b in methods]
        if pairs:
            lines += [
                "## Paired Wilcoxon signed-rank tests over datasets",
                "",
                "| pair | metric | wins | losses | ties | p |",
                "|---|---|---|---|---|---|",
            ]
            for first, second in pairs:
                for metric in RANKED_METRICS:
                    test = paired_wilcoxon(
                        comparable_scores(summary, metric, methods),
                        first,
                        second,
                        HIGHER_IS_BETTER[metric],
                    )
                    lines.append(
                        f"| {first} vs {second} | {METRIC_LABELS[metric]} | {test.first_wins} "
                        f"| {test.second_wins} | {test.ties} | {test.p_value:.3g} |"
                    )
            lines.append("")
    lines += [
        "## Seconds per fold, mean over datasets",
        "",
        _markdown_table(timing_frame(summary, methods), "{:.4f}"),
        "",
        "## Mean ± standard deviation over folds, per dataset",
        "",
    ]
    for metric in RANKED_METRICS:
        title = METRIC_LABELS[metric]
        lines += [f"### {title}", "", _markdown_table(mean_std_table(summary, metric, methods)), ""]
    lines += ["## Reliability diagrams", ""]
    for key, path in figures.items():
        if key.startswith("reliability"):
            lines.append(f"![{key}](figures/{path.name})")
    lines.append("")
    report = out / "report.md"
    report.write_text("\n".join(lines))
    written.append("report.md")
    # compared without case: on a case-insensitive file system "reliability-A.png" of
    # an earlier run is this run's "reliability-a.png"
    again = {name.lower() for name in written}
    for stale in sorted(name for name in earlier if name.lower() not in again):
        if (out / stale).is_file():
            (out / stale).unlink()
    (out / MANIFEST).write_text(json.dumps({"files": sorted(written)}, indent=1))
    return report


def listed_by_earlier_report(out: str | os.PathLike[str]) -> set[str]:
    """The rank tables and figures (:data:`RUN_DEPENDENT`) that the ``manifest.json`` of
    an earlier :func:`write_report` into ``out`` lists: none when there is no readable
    manifest, so a folder's own files (a ``figures/diagram.png``, ``ranks-notes.csv``)
    are never taken for a report's."""
    try:
        listed = json.loads((Path(out) / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    if not isinstance(listed, list):
        return set()
    return {name for name in listed if isinstance(name, str) and RUN_DEPENDENT.fullmatch(name)}


def _json_value(value: object) -> object:
    """A setting ``json`` cannot write as it is: a numpy number (``folds=numpy.int64(3)``)
    as the number it is, so that :func:`read_result` gives it back, an array as a list,
    anything else as its text."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


__all__ = [
    "MANIFEST",
    "FriedmanResult",
    "comparable_scores",
    "listed_by_earlier_report",
    "mean_std_table",
    "method_labels",
    "rank_analysis",
    "rank_frame",
    "rank_groups",
    "read_result",
    "score_table",
    "significant_pairs",
    "summarise",
    "timing_frame",
    "write_figures",
    "write_report",
]
