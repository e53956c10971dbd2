"""Experiment (not part of the estimator): one-dependence estimators weighted by evidence.

Eq. 7 averages the super-parents' estimates with equal weights. Here super-parent i gets
the weight of its one-dependence model's Type-II ML evidence,

    L_i = ln p(y, x_i) + sum_{j != i} sum_c l_{c,i,j}(m_{c,i,j})

where the parent term's evidence is the Dirichlet(1) marginal likelihood of the
(class, value) counts of feature i (eq. 8's Laplace smoothing as a posterior mean) and
``l_{c,i,j}`` the fitted child evidences (``log_evidence_``). Two weightings:

* ``bma``: ``w_i = exp(L_i - max L)``, Bayesian model averaging over the F structures;
* ``per-row``: ``w_i = exp((L_i - max L) / S)``, the same evidence per training row (its
  geometric mean), a much flatter weighting.

The weights are added as ``ln w_i`` to the fitted parent table in this process only, and
the 25-dataset protocol of ``aode_datasets.py`` (10-fold, seed 42) is run for two-level
HEB-AODE, uncapped, with and without them:

    python benches/aode_evidence_weights.py   # fold CSV: results/aode-evidence-weights-folds.csv
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
from aode_datasets import EQ8, METRICS, cached_folds, compare, markdown, table
from scipy.special import gammaln

import hebnb
import hebnb.aode
from hebnb.evaluation.methods import ESTIMATORS, METHODS, Method


def one_dependence_evidence(model) -> np.ndarray:
    """``L_i`` of every super-parent of a fitted HEB-AODE, shape (F,)."""
    counts = model._counts  # (C, sum K_f)
    n_classes = counts.shape[0]
    children = np.nansum(model.log_evidence_, axis=(0, 2))
    parents = np.empty(len(children))
    for i, (start, end) in enumerate(itertools.pairwise(model._encoder.offsets)):
        table = counts[:, start:end]
        cells = n_classes * (end - start)
        parents[i] = gammaln(cells) - gammaln(table.sum() + cells) + np.sum(gammaln(table + 1.0))
    return parents + children


class WeightedAODE(hebnb.aode.AODE):
    """HEB-AODE whose super-parents are weighted by ``scale(L_i - max L)``."""

    def __init__(self, evidence_weighting="bma", **params):
        super().__init__(**params)
        self.evidence_weighting = evidence_weighting

    def _solve(self, threads):
        super()._solve(threads)
        evidence = one_dependence_evidence(self)
        relative = evidence - evidence.max()
        if self.evidence_weighting == "per-row":
            relative = relative / self.class_count_.sum()
        for i, (start, end) in enumerate(itertools.pairwise(self._encoder.offsets)):
            self._model["parent_log_prob"][start:end] += relative[i]
        self.super_parent_log_weight_ = relative


def main() -> None:
    # no options: --help says what the script does instead of running it
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    ESTIMATORS["WeightedAODE"] = WeightedAODE  # where the evaluation looks estimators up
    METHODS["two-level"] = Method("two-level", "HEB-AODE two-level", "AODE", EQ8)
    for weighting in ["bma", "per-row"]:
        METHODS[f"two-level-{weighting}"] = Method(
            f"two-level-{weighting}",
            f"HEB-AODE two-level, {weighting} weights",
            "WeightedAODE",
            {"evidence_weighting": weighting, **EQ8},
        )
    names = ["two-level", "two-level-bma", "two-level-per-row"]
    out = Path(__file__).parent / "results" / "aode-evidence-weights-folds.csv"
    frame = cached_folds(out, names)
    for metric in METRICS:
        means = table(frame, metric, names)
        means.loc["mean"] = means.mean()
        print(f"\n### {metric}\n")
        print(markdown(means))
    for name in names[1:]:
        print()
        print(markdown(compare(frame, name, "two-level")))


if __name__ == "__main__":
    main()
