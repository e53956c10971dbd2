"""A plain-numpy Laplace AODE (SPEC eqs. 7-9), the reference of ``aode_dense_tables.py``.

Written the way one would in numpy: codes by ``np.unique``, one ``np.bincount`` per
feature pair. A pair whose ``K_i K_j C`` is at most ``DENSE_CELLS`` keeps the dense table
``ln(N[c, u, v] + 1)`` (shared by both orientations: Laplace's pseudo-count is 1 either
way); a larger pair keeps its seen cells only (sorted keys ``u K_j + v`` and their
``ln(N + 1)``, looked up by ``np.searchsorted``). Each orientation keeps its log
denominators ``ln(N[c, u] + K_j)``. Scoring is vectorised over rows, parent by parent.

``tests/test_aode.py`` checks it against ``hebnb.AODE(smoothing="laplace")`` to 1e-12.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

#: Largest K_i K_j C kept as a dense table.
DENSE_CELLS = 1 << 16


class NumpyLaplaceAODE:
    """Laplace AODE with eq. 8's parent term, a Laplace Naive Bayes fallback for rows
    without a known value, and ``min_parent_count = 1``. Rows of X are integer-like
    categories without missing values."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> NumpyLaplaceAODE:
        X = np.asarray(X)
        self.classes_, labels = np.unique(y, return_inverse=True)
        C = len(self.classes_)
        columns = [np.unique(X[:, f], return_inverse=True) for f in range(X.shape[1])]
        self.categories_ = [c for c, _ in columns]
        codes = [inverse.astype(np.int64) for _, inverse in columns]
        K = [len(c) for c in self.categories_]
        F, S = len(K), len(labels)
        class_count = np.bincount(labels, minlength=C).astype(float)
        self.class_log_prior_ = np.log(class_count + 1.0) - np.log(S + C)
        single = [
            np.bincount(labels * k + u, minlength=C * k).reshape(C, k).astype(float)
            for u, k in zip(codes, K)
        ]
        # eq. 8 and the Naive Bayes fallback
        self.parent_ = [np.log(s + 1.0) - np.log(s.sum() + C * k) for s, k in zip(single, K)]
        self.marginal_ = [
            np.log(s + 1.0) - np.log(s.sum(1, keepdims=True) + k) for s, k in zip(single, K)
        ]
        self.pairs_ = {}
        for a in range(F):
            for b in range(a + 1, F):
                self.pairs_[a, b] = self._pair(codes[a], codes[b], labels, K[a], K[b], C)
        self.K_ = K
        return self

    @staticmethod
    def _pair(u, v, labels, k_a, k_b, C):
        if k_a * k_b * C <= DENSE_CELLS:
            key = (labels * k_a + u) * k_b + v
            n = np.bincount(key, minlength=C * k_a * k_b).reshape(C, k_a, k_b).astype(float)
            return {
                "numerator": np.log1p(n),
                "den_ab": np.log(n.sum(2) + k_b),  # parent a: (C, K_a)
                "den_ba": np.log(n.sum(1) + k_a),  # parent b: (C, K_b)
            }
        cell = u * k_b + v
        keys, inverse = np.unique(cell, return_inverse=True)
        n = np.bincount(labels * len(keys) + inverse, minlength=C * len(keys))
        n = n.reshape(C, len(keys)).astype(float)
        by_parent = np.bincount(labels * k_a + u, minlength=C * k_a).reshape(C, k_a)
        by_child = np.bincount(labels * k_b + v, minlength=C * k_b).reshape(C, k_b)
        return {
            "keys": keys,
            "numerator": np.log1p(n),
            "den_ab": np.log(by_parent + k_b),
            "den_ba": np.log(by_child + k_a),
        }

    def _codes(self, X: np.ndarray) -> list[np.ndarray]:
        out = []
        for f, categories in enumerate(self.categories_):
            position = np.searchsorted(categories, X[:, f]).clip(0, len(categories) - 1)
            known = categories[position] == X[:, f]
            out.append(np.where(known, position, -1))
        return out

    def joint_log_likelihood(self, X: np.ndarray) -> np.ndarray:
        """ln P(y, x), shape (S, C): SPEC eq. 7 averaged over the rows' known values."""
        X = np.asarray(X)
        codes = self._codes(X)
        F, S, C = len(codes), X.shape[0], len(self.classes_)
        known = [u >= 0 for u in codes]
        # the Naive Bayes fallback
        out = np.tile(self.class_log_prior_, (S, 1))
        for f in range(F):
            out[known[f]] += self.marginal_[f][:, codes[f][known[f]]].T
        terms = np.full((F, S, C), -np.inf)
        for i in range(F):
            rows = np.flatnonzero(known[i])
            u = codes[i][rows]
            t = self.parent_[i][:, u]
            for j in range(F):
                if j == i:
                    continue
                both = known[j][rows]
                v = codes[j][rows[both]]
                pu = u[both]
                if i < j:
                    pair, first, second, den = self.pairs_[i, j], pu, v, "den_ab"
                else:
                    pair, first, second, den = self.pairs_[j, i], v, pu, "den_ba"
                if "keys" in pair:
                    key = first * self.K_[max(i, j)] + second
                    position = np.searchsorted(pair["keys"], key).clip(0, len(pair["keys"]) - 1)
                    seen = pair["keys"][position] == key
                    numerator = np.where(seen, pair["numerator"][:, position], 0.0)
                else:
                    numerator = pair["numerator"][:, first, second]
                t[:, both] += numerator - pair[den][:, pu]
            terms[i, rows] = t.T
        n_parents = np.sum(known, axis=0)
        some = n_parents > 0
        out[some] = logsumexp(terms[:, some], axis=0) - np.log(n_parents[some])[:, None]
        return out

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        joint = self.joint_log_likelihood(X)
        return np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
