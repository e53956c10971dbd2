"""AODE accuracy against the number of super-parents (``max_parents``) on the wider
shared datasets: stratified 5-fold cross-validation, two-level HEB-AODE with SPEC eq. 8's
super-parent term (``parent_smoothing="laplace"``, the default when docs/aode.md's table
was made), the k features of highest mutual information with the class as super-parents
(every feature a child).

Run from the repository root (needs ../shared/datasets):

    python benches/aode_max_parents.py
    python benches/aode_max_parents.py --datasets optdigits --k 1 2 5 10 20 40 0

(k = 0 means every feature.) Numeric columns with more distinct values than ``--bins``
(anneal's carbon, hardness, strength, thick, width and len) are cut into ``--bins``
quantile bins learned on each training fold (scikit-learn's ``KBinsDiscretizer``); the
other columns, '?' and anneal's three-valued bore included, are categories as they are.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import KBinsDiscretizer

sys.path.insert(0, str(Path(__file__).parent))
from common import load_shared
from hebnb import AODE


def binned(X: pd.DataFrame, numeric: list, train, test, bins: int):
    """The fold's rows with the numeric columns cut into quantile bins of the training rows."""
    X_train, X_test = X.iloc[train].copy(), X.iloc[test].copy()
    if numeric:
        cut = KBinsDiscretizer(bins, encode="ordinal", strategy="quantile", subsample=None)
        with warnings.catch_warnings():
            # columns with few distinct values get fewer bins: that is fine
            warnings.simplefilter("ignore", UserWarning)
            X_train[numeric] = cut.fit_transform(X_train[numeric]).astype(int)
        X_test[numeric] = cut.transform(X_test[numeric]).astype(int)
    return X_train, X_test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=["optdigits", "connect-4"])
    parser.add_argument("--k", type=int, nargs="*", default=[1, 2, 5, 10, 20, 0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--bins", type=int, default=5, help="quantile bins per numeric column")
    args = parser.parse_args()
    print("| dataset | rows x features | k | accuracy | log-loss |")
    print("|---|---|---|---|---|")
    for name in args.datasets:
        frame = load_shared(name)
        X, y = frame.drop(columns="class"), frame["class"].to_numpy()
        numeric = [
            c
            for c in X.columns
            if pd.api.types.is_numeric_dtype(X[c]) and X[c].nunique() > args.bins
        ]
        labels = np.unique(y)
        for k in args.k:
            proba = np.zeros((len(y), len(labels)))
            folds = StratifiedKFold(5, shuffle=True, random_state=0)
            for train, test in folds.split(X, y):
                X_train, X_test = binned(X, numeric, train, test, args.bins)
                model = AODE(max_parents=k or None, parent_smoothing="laplace", n_jobs=args.n_jobs)
                model.fit(X_train, y[train])
                columns = np.searchsorted(labels, model.classes_)
                proba[np.ix_(test, columns)] = model.predict_proba(X_test)
            accuracy = accuracy_score(y, labels[proba.argmax(axis=1)])
            loss = log_loss(y, np.clip(proba, 1e-15, 1), labels=labels)
            shown = k or f"all ({X.shape[1]})"
            print(
                f"| {name} | {X.shape[0]} x {X.shape[1]} | {shown} | {accuracy:.3f} | {loss:.3f} |"
            )


if __name__ == "__main__":
    main()
