"""An independent, plain numpy/scipy transcription of SPEC's categorical Naive Bayes,
written for the tests: counts by explicit loops over a dict, concentrations by root
finding on the derivative of the evidence (scipy's digamma), scores by log-sum-exp.
It shares no code with hebnb."""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import digamma, gammaln, logsumexp


def is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def log_evidence(m, counts, mean):
    """SPEC eq. 5 for one (class, feature): counts and mean over the categories."""
    counts, mean = np.asarray(counts, float), np.asarray(mean, float)
    keep = counts > 0
    n, mu = counts[keep], mean[keep]
    return gammaln(m) - gammaln(counts.sum() + m) + np.sum(gammaln(n + m * mu) - gammaln(m * mu))


def evidence_gradient(m, counts, mean):
    counts, mean = np.asarray(counts, float), np.asarray(mean, float)
    keep = counts > 0
    n, mu = counts[keep], mean[keep]
    return (
        digamma(m)
        - digamma(counts.sum() + m)
        + np.sum(mu * (digamma(n + m * mu) - digamma(m * mu)))
    )


def type2_concentration(counts, mean, low, high):
    """argmax of the evidence on [low, high] from the sign of its derivative."""
    if np.sum(counts) == 0:
        return low
    if evidence_gradient(low, counts, mean) <= 0:
        return low
    if evidence_gradient(high, counts, mean) >= 0:
        return high
    t = brentq(
        lambda t: evidence_gradient(np.exp(t), counts, mean),
        np.log(low),
        np.log(high),
        xtol=1e-14,
        rtol=1e-15,
        maxiter=500,
    )
    return float(np.exp(t))


class ReferenceNB:
    """SPEC's categorical NB for one smoother, fitted on raw Python values."""

    def __init__(self, smoothing, alpha=1.0, m=None, min_count=10, bounds=(1e-2, 1e4)):
        self.smoothing, self.alpha, self.m, self.min_count, self.bounds = (
            smoothing,
            alpha,
            m,
            min_count,
            bounds,
        )

    def fit(self, X, y, weights=None):
        X = [list(row) for row in X]
        y = list(y)
        weights = np.ones(len(y)) if weights is None else np.asarray(weights, float)
        self.classes = sorted(set(y))
        C, F = len(self.classes), len(X[0])
        self.categories = [
            sorted({row[f] for row in X if not is_missing(row[f])}) for f in range(F)
        ]
        self.class_count = np.zeros(C)
        self.counts = [np.zeros((C, len(cats))) for cats in self.categories]
        index = [{v: k for k, v in enumerate(cats)} for cats in self.categories]
        for row, label, w in zip(X, y, weights):
            c = self.classes.index(label)
            self.class_count[c] += w
            for f, value in enumerate(row):
                if not is_missing(value):
                    self.counts[f][c, index[f][value]] += w
        self.index = index
        self.tables, self.concentration = [], np.zeros((C, F))
        for f in range(F):
            K = len(self.categories[f])
            uniform = self.smoothing in ("laplace", "lidstone", "kt", "heb-u")
            pooled = self.counts[f].sum(axis=0)
            mean = np.full(K, 1.0 / K) if uniform else pooled / pooled.sum()
            table = np.zeros((C, K))
            for c in range(C):
                n = self.counts[f][c]
                if self.smoothing == "laplace":
                    m = K
                elif self.smoothing == "lidstone":
                    m = self.alpha * K
                elif self.smoothing == "kt":
                    m = K / 2
                elif self.smoothing == "m-estimate":
                    m = 2.0 if self.m is None else self.m
                elif self.smoothing == "target-encoding":
                    m = 10.0 if self.m is None else self.m
                elif self.class_count[c] < self.min_count:
                    m = K
                else:
                    m = type2_concentration(n, mean, *self.bounds)
                self.concentration[c, f] = m
                with np.errstate(divide="ignore"):
                    table[c] = np.log(n + m * mean) - np.log(n.sum() + m)
            self.tables.append(table)
        S = self.class_count.sum()
        self.log_prior = np.log((self.class_count + 1) / (S + C))
        return self

    def joint_log_likelihood(self, X):
        out = np.tile(self.log_prior, (len(X), 1))
        for s, row in enumerate(X):
            for f, value in enumerate(row):
                if is_missing(value) or value not in self.index[f]:
                    continue
                column = self.tables[f][:, self.index[f][value]]
                if np.all(np.isneginf(column)):
                    continue
                out[s] += column
        return out

    def predict_proba(self, X):
        joint = self.joint_log_likelihood(X)
        return np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
