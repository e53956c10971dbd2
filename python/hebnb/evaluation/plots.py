"""PNG figures of an evaluation: reliability diagrams and critical-difference diagrams.

Figures are built on :class:`matplotlib.figure.Figure` objects and written with the Agg
renderer, so nothing here touches pyplot's global state or needs a display.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import scikit_posthocs
from matplotlib.figure import Figure

from .statistics import FriedmanResult


def plot_reliability(
    curves: dict[str, pd.DataFrame], title: str, path: str | os.PathLike[str]
) -> Path:
    """Reliability diagram: top-1 accuracy against mean confidence per confidence bin.

    Parameters
    ----------
    curves : dict of str to DataFrame
        Method label -> a table with one row per bin and columns ``count``,
        ``confidence`` (mean top-1 confidence) and ``accuracy`` (top-1 accuracy), pooled
        over the test folds. Empty bins are not drawn; marker areas grow with the share of
        rows in the bin.
    title : str
    path : path-like
        Where the PNG goes.

    Returns
    -------
    Path
        ``path``.
    """
    figure = Figure(figsize=(4.2, 4.0), dpi=100)
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=1, label="calibrated")
    for label, bins in curves.items():
        filled = bins[bins["count"] > 0]
        (line,) = axes.plot(filled["confidence"], filled["accuracy"], linewidth=1.2, label=label)
        # marker area proportional to the bin's share of rows (its weight in the ECE)
        share = filled["count"] / filled["count"].sum()
        axes.scatter(
            filled["confidence"],
            filled["accuracy"],
            s=4 + 120 * share,
            color=line.get_color(),
            alpha=0.8,
            zorder=3,
        )
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    axes.set_xlabel("mean top-1 confidence")
    axes.set_ylabel("top-1 accuracy")
    axes.set_title(title, fontsize=10)
    axes.legend(loc="upper left", fontsize=8)
    figure.tight_layout()
    png = Path(path)
    figure.savefig(png, format="png")
    return png


def plot_critical_difference(
    result: FriedmanResult, title: str, path: str | os.PathLike[str]
) -> Path:
    """Critical-difference diagram of one metric (methods joined by a bar do not differ
    significantly under the Nemenyi test at ``result.alpha``).

    Parameters
    ----------
    result : FriedmanResult
    title : str
    path : path-like

    Returns
    -------
    Path
        ``path``.
    """
    figure = Figure(figsize=(6.0, 0.9 + 0.22 * len(result.mean_ranks)), dpi=100)
    axes = figure.add_subplot()
    scikit_posthocs.critical_difference_diagram(
        pd.Series(result.mean_ranks),
        result.nemenyi_p,
        alpha=result.alpha,
        ax=axes,
        label_fmt_left="{label} ({rank:.2f})",
        label_fmt_right="({rank:.2f}) {label}",
        label_props={"fontsize": 8},
    )
    p_value = result.p_value
    shown = "n/a" if np.isnan(p_value) else f"{p_value:.2g}"
    axes.set_title(
        f"{title}: N = {result.n_datasets} datasets, Friedman p = {shown}, "
        f"Nemenyi CD = {result.critical_difference:.2f}",
        fontsize=9,
        pad=18,
    )
    figure.tight_layout()
    png = Path(path)
    figure.savefig(png, format="png")
    return png
