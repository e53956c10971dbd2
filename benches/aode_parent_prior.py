"""Experiment (not part of the estimator): an empirical-Bayes super-parent term.

Eq. 8 writes the parent term as ``P(y, x_i = u) = (N_{y,u} + 1) / (S_i + C K_i)``, which is
``P(u) P(y | u)`` with ``P(u) = (N_u + C) / (S_i + C K_i)`` and the Laplace
``P(y | u) = (N_{y,u} + 1) / (N_u + C)``: a value seen once pulls its super-parent's vote
toward an even class split. Here ``P(y | u)`` is instead shrunk toward the class prior
``pi`` with a concentration chosen by Type-II ML over the parent values (one
Dirichlet-multinomial document per value u, as in eq. 11), ``P(u)`` unchanged:

    P(y | u) = (N_{y,u} + m_i pi_y) / (N_u + m_i)

The estimator's ``_parent_table`` is replaced in this process only, and the 25-dataset
protocol of ``aode_datasets.py`` is run for two-level HEB-AODE with and without it:

    python benches/aode_parent_prior.py
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
from aode_datasets import TIE, markdown
from scipy.optimize import minimize_scalar
from scipy.special import gammaln
from scipy.stats import wilcoxon

import hebnb.aode
from common import SHARED_DATASETS
from hebnb.evaluation import evaluate_suite
from hebnb.evaluation.methods import METHODS, Method


def evidence(m, table, mean):
    totals = table.sum(1)
    used = totals > 0
    return np.sum(gammaln(m) - gammaln(totals[used] + m)) + np.sum(
        gammaln(table + m * mean) - gammaln(m * mean)
    )


def eb_parent_table(self, counts, offsets):
    """ln P(y, x_i = u) with the empirical-Bayes P(y | u), shape (sum K_f, C)."""
    n_classes = counts.shape[0]
    out = np.empty((counts.shape[1], n_classes))
    for start, end in itertools.pairwise(offsets):
        table = counts[:, start:end].T  # (K_i, C)
        k = end - start
        if k == 0:
            continue
        per_class = table.sum(0)
        prior = (per_class + 1) / (per_class.sum() + n_classes)
        best = minimize_scalar(
            lambda t, table=table, prior=prior: -evidence(np.exp(t), table, prior),
            bounds=(np.log(1e-2), np.log(1e4)),
            method="bounded",
        )
        m = np.exp(best.x)
        value_total = table.sum(1, keepdims=True)
        p_value = (value_total + n_classes) / (per_class.sum() + n_classes * k)
        p_class = (table + m * prior) / (value_total + m)
        out[start:end] = np.log(p_value) + np.log(p_class)
    return out


class EBParentAODE(hebnb.aode.AODE):
    _parent_table = eb_parent_table


def main() -> None:
    hebnb.EBParentAODE = EBParentAODE  # where the evaluation looks estimators up
    METHODS["two-level"] = Method("two-level", "HEB-AODE two-level", "AODE", {})
    METHODS["two-level-eb-parent"] = Method(
        "two-level-eb-parent", "HEB-AODE two-level, EB parent", "EBParentAODE", {}
    )
    METHODS["two-level-capped-eb-parent"] = Method(
        "two-level-capped-eb-parent",
        "HEB-AODE two-level capped, EB parent",
        "EBParentAODE",
        {"max_parent_cardinality": 200, "max_joint_cells": 5e7},
    )
    names = ["two-level", "two-level-eb-parent", "two-level-capped-eb-parent"]
    out = Path(__file__).parent / "results" / "aode-parent-prior-folds.csv"
    if out.is_file():
        frame = pd.read_csv(out)
    else:
        frame = evaluate_suite(SHARED_DATASETS, methods=names, folds=10, seed=42).folds
        frame.to_csv(out, index=False)
    rows = {}
    for metric, higher in [
        ("log_loss", False),
        ("brier", False),
        ("ece", False),
        ("accuracy", True),
    ]:
        means = frame.groupby(["dataset", "method"])[metric].mean().unstack("method")[names]
        diff = (means["two-level-eb-parent"] - means["two-level"]) * (1 if higher else -1)
        rows[metric] = {
            "EB parent wins": int((diff > TIE).sum()),
            "ties": int((diff.abs() <= TIE).sum()),
            "losses": int((diff < -TIE).sum()),
            "mean difference": float((means["two-level-eb-parent"] - means["two-level"]).mean()),
            "Wilcoxon p": float(wilcoxon(diff).pvalue),
        }
        means.loc["mean"] = means.mean()
        print(f"\n### {metric}\n")
        print(markdown(means))
    print("\n### EB parent against eq. 8 (two-level, uncapped)\n")
    summary = pd.DataFrame(rows).T.astype({"EB parent wins": int, "ties": int, "losses": int})
    summary.index.name = "metric"
    print(markdown(summary))


if __name__ == "__main__":
    main()
