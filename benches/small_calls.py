"""Latency of small calls: ``predict`` and ``predict_proba`` of 1 and 10 rows for every
model beside scikit-learn's counterpart, and against an earlier hebnb build when
``--baseline`` names one (a serving workload: one request, a few rows).

Each build runs in a fresh process; a call's time is the best of ``--repeat`` runs of
200 calls, in microseconds.

    python benches/small_calls.py
    python benches/small_calls.py --baseline /tmp/hebnb-old/python

(``--baseline``: a folder holding an earlier build's ``hebnb`` package, compiled core
included.)
"""

from __future__ import annotations

import argparse

from common import run_child

CHILD = """
import json, sys, timeit, warnings
import numpy as np
import sklearn.naive_bayes as skl
import hebnb

warnings.filterwarnings("ignore")
repeat = int(sys.argv[1])
rng = np.random.default_rng(0)
X = rng.integers(0, 5, (500, 4))
y = rng.integers(0, 2, 500)
pairs = {
    "CategoricalNB": (hebnb.CategoricalNB, skl.CategoricalNB),
    "AODE": (hebnb.AODE, None),
    "MultinomialNB": (hebnb.MultinomialNB, skl.MultinomialNB),
    "ComplementNB": (hebnb.ComplementNB, skl.ComplementNB),
    "BernoulliNB": (hebnb.BernoulliNB, skl.BernoulliNB),
    "GaussianNB": (hebnb.GaussianNB, skl.GaussianNB),
}

def micros(call):
    return min(timeit.repeat(call, number=200, repeat=repeat)) / 200 * 1e6

out = {}
for name, (ours, theirs) in pairs.items():
    models = {"hebnb": ours().fit(X, y)}
    if theirs is not None and sys.argv[2] == "with-sklearn":
        models["sklearn"] = theirs().fit(X, y)
    for who, model in models.items():
        for rows in (1, 10):
            part = X[:rows]
            out[f"{name}|{who}|predict {rows}"] = micros(lambda: model.predict(part))
            out[f"{name}|{who}|predict_proba {rows}"] = micros(lambda: model.predict_proba(part))
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", help="folder holding an earlier build's hebnb package")
    args = parser.parse_args()
    now = run_child(CHILD, args.repeat, "with-sklearn")
    before = None
    if args.baseline:
        before = run_child(CHILD, args.repeat, "without", pythonpath=args.baseline)
    calls = sorted(
        {key.split("|")[2] for key in now}, key=lambda c: (c.split()[0], int(c.split()[1]))
    )
    header = "| model | call | hebnb µs | scikit-learn µs | hebnb / scikit-learn |"
    if before is not None:
        header += " before µs | before / now |"
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for name in dict.fromkeys(key.split("|")[0] for key in now):
        for call in calls:
            ours = now[f"{name}|hebnb|{call}"]
            theirs = now.get(f"{name}|sklearn|{call}")
            line = f"| {name} | {call} | {ours:.0f} | "
            line += f"{theirs:.0f} | {ours / theirs:.2f} |" if theirs else " | |"
            if before is not None:
                old = before[f"{name}|hebnb|{call}"]
                line += f" {old:.0f} | {old / ours:.2f} |"
            print(line)


if __name__ == "__main__":
    main()
