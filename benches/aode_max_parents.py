"""AODE accuracy against the number of super-parents (``max_parents``) on the wider
shared datasets: stratified 5-fold cross-validation, two-level HEB-AODE, the k features
of highest mutual information with the class as super-parents (every feature a child).

Run from the repository root (needs ../shared/datasets):

    python benches/aode_max_parents.py
    python benches/aode_max_parents.py --datasets optdigits --k 1 2 5 10 20 40 0

(k = 0 means every feature. anneal has numeric columns that must be binned first and is
not in the default list.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).parent))
from common import load_shared
from hebnb import AODE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=["optdigits", "connect-4"])
    parser.add_argument("--k", type=int, nargs="*", default=[1, 2, 5, 10, 20, 0])
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    print("| dataset | rows x features | k | accuracy | log-loss |")
    print("|---|---|---|---|---|")
    for name in args.datasets:
        frame = load_shared(name)
        X, y = frame.drop(columns="class"), frame["class"].to_numpy()
        labels = np.unique(y)
        for k in args.k:
            proba = np.zeros((len(y), len(labels)))
            folds = StratifiedKFold(5, shuffle=True, random_state=0)
            for train, test in folds.split(X, y):
                model = AODE(max_parents=k or None, n_jobs=args.n_jobs)
                model.fit(X.iloc[train], y[train])
                columns = np.searchsorted(labels, model.classes_)
                proba[np.ix_(test, columns)] = model.predict_proba(X.iloc[test])
            accuracy = accuracy_score(y, labels[proba.argmax(axis=1)])
            loss = log_loss(y, np.clip(proba, 1e-15, 1), labels=labels)
            shown = k or f"all ({X.shape[1]})"
            print(
                f"| {name} | {X.shape[0]} x {X.shape[1]} | {shown} | {accuracy:.3f} | {loss:.3f} |"
            )


if __name__ == "__main__":
    main()
