"""AODE's super-parent terms of its own training rows, each row left out of the tables,
counted here in plain numpy from the rows themselves (SPEC eqs. 7-11 and the two-level
prior, the parent term of src/parent_prior.rs): the reference for
``AODE(weighting_rows="leave-one-out")``. The concentrations, child means, parent class
mean and class prior are the fitted model's; every count loses the row's own weight; a
value no other row has is unknown."""

from __future__ import annotations

import numpy as np


def _class_counts(labels, weights, n_classes):
    return np.bincount(labels, weights=weights, minlength=n_classes).astype(float)


def left_out_terms(model, X, y, sample_weight=None):
    """``(S, P, C)``: every training row's term of every super-parent, the row left out."""
    codes, _ = model._encode(X)
    labels = np.searchsorted(model.classes_, np.asarray(y))
    n_features, n_rows = codes.shape
    n_classes = model.classes_.shape[0]
    weights = np.ones(n_rows) if sample_weight is None else np.asarray(sample_weight, float)
    cards = np.diff(model._encoder.offsets)
    offsets = np.asarray(model._encoder.offsets)
    fitted = model._model
    mean_of = fitted["child_mean"]
    scores = fitted["log_child_mean"] > -np.inf
    parents = np.flatnonzero(model.super_parents_)
    replace = not (model.fit_prior and model.class_prior is None)
    prior = model.class_log_prior_
    present = codes >= 0

    def count(rows):
        """Class counts of the training rows in mask ``rows``."""
        return _class_counts(labels[rows], weights[rows], n_classes)

    out = np.zeros((n_rows, parents.shape[0], n_classes))
    for s in range(n_rows):
        own = np.zeros(n_classes)
        own[labels[s]] = weights[s]
        w = weights[s]

        def known(f, s=s, w=w):
            v = codes[f, s]
            if v < 0 or not scores[offsets[f] + v]:
                return False
            return count(codes[f] == v).sum() - w > 0

        fallback = prior.copy()
        for j in range(n_features):
            if not known(j):
                continue
            m = model.marginal_concentration_[:, j]
            mu = mean_of[offsets[j] + codes[j, s]]
            value = count(codes[j] == codes[j, s]) - own
            fallback += np.log((value + m * mu) / (count(present[j]) - own + m))
        for rank, i in enumerate(parents):
            u = codes[i, s]
            if u < 0 or not known(i) or count(codes[i] == u).sum() - w < model._min_parent_count:
                out[s, rank] = fallback
                continue
            out[s, rank] = _parent_term(
                model, i, cards[i], codes[i], labels, weights, u, own, prior, replace
            )
            for j in range(n_features):
                if j == i or not known(j):
                    continue
                v = codes[j, s]
                mu = mean_of[offsets[j] + v]
                if model.capped_[i, j]:
                    m = model.marginal_concentration_[:, j]
                    cell = count(codes[j] == v) - own
                    total = count(present[j]) - own
                    out[s, rank] += np.log((cell + m * mu) / (total + m))
                    continue
                m = model.concentration_[:, rank, j]
                both = (codes[i] == u) & present[j]
                total = count(both) - own
                cell = count(both & (codes[j] == v)) - own
                a = model.pooled_concentration_[rank, j]
                mean = mu if np.isnan(a) else (cell.sum() + a * mu) / (total.sum() + a)
                out[s, rank] += np.log((cell + m * mean) / (total + m))
    return out


def _parent_term(model, i, k, parent_codes, labels, weights, u, own, prior, replace):
    """``ln P(y = c, x_i = u)`` of feature ``i`` (``k`` values) without the row (``own``:
    its weight in its class)."""
    n_classes = own.shape[0]
    present = parent_codes >= 0
    table = np.zeros((k, n_classes))
    np.add.at(table, (parent_codes[present], labels[present]), weights[present])
    per_class = table.sum(axis=0)  # N_c^(i) of the fit: the class mean is the fitted one
    mean = (per_class + 1.0) / (per_class.sum() + n_classes)
    left = table.copy()
    left[u] -= own
    if model.parent_smoothing == "laplace":
        if replace:
            return prior + np.log((left[u] + 1.0) / (left.sum(axis=0) + k))
        return np.log((left[u] + 1.0) / (left.sum() + n_classes * k))
    m = model.parent_concentration_[i]
    value_total = left.sum(axis=1)
    joint = (
        (value_total + n_classes)[:, None]
        / (left.sum() + n_classes * k)
        * (left + m * mean)
        / (value_total + m)[:, None]
    )
    if not replace:
        return np.log(joint[u])
    return prior + np.log(joint[u] / joint.sum(axis=0))
