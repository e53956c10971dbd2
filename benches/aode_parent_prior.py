"""The empirical-Bayes super-parent term (``AODE(parent_smoothing="heb")``) against eq. 8.

Eq. 8 writes the parent term as ``P(y, x_i = u) = (N_{y,u} + 1) / (S_i + C K_i)``, which is
``P(u) P(y | u)`` with ``P(u) = (N_u + C) / (S_i + C K_i)`` and the Laplace
``P(y | u) = (N_{y,u} + 1) / (N_u + C)``: a value seen once pulls its super-parent's vote
toward an even class split. ``parent_smoothing="heb"`` shrinks ``P(y | u)`` toward the
class distribution ``pi`` with a concentration chosen by Type-II ML over the parent values
(one Dirichlet-multinomial document per value u, as in eq. 11), ``P(u)`` unchanged:

    P(y | u) = (N_{y,u} + m_i pi_y) / (N_u + m_i)

The 25-dataset protocol of ``aode_datasets.py`` is run for two-level HEB-AODE with either
parent term (and the EB one capped):

    python benches/aode_parent_prior.py   # fold CSV: results/aode-parent-prior-folds.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

from aode_datasets import EQ8, METRICS, cached_folds, compare, markdown, table

from hebnb.evaluation.methods import METHODS, Method


def main() -> None:
    # no options: --help says what the script does instead of running it
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    METHODS["two-level"] = Method("two-level", "HEB-AODE two-level", "AODE", EQ8)
    METHODS["two-level-eb-parent"] = Method(
        "two-level-eb-parent", "HEB-AODE two-level, EB parent", "AODE", {"parent_smoothing": "heb"}
    )
    METHODS["two-level-capped-eb-parent"] = Method(
        "two-level-capped-eb-parent",
        "HEB-AODE two-level capped, EB parent",
        "AODE",
        {"parent_smoothing": "heb", "max_parent_cardinality": 200, "max_joint_cells": 5e7},
    )
    names = ["two-level", "two-level-eb-parent", "two-level-capped-eb-parent"]
    frame = cached_folds(Path(__file__).parent / "results" / "aode-parent-prior-folds.csv", names)
    for metric in METRICS:
        means = table(frame, metric, names)
        means.loc["mean"] = means.mean()
        print(f"\n### {metric}\n")
        print(markdown(means))
    print("\n### EB parent against eq. 8 (two-level, uncapped)\n")
    print(markdown(compare(frame, "two-level-eb-parent", "two-level")))


if __name__ == "__main__":
    main()
