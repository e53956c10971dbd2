"""Do this build and an earlier one choose the same concentrations on the shared datasets?

Each build fits HEB-M Naive Bayes and HEB-AODE (pooled and two-level) on every dataset of
``../shared/datasets`` (the evaluation protocol's preparation: at most 20,000 rows,
numeric columns in 10 quantile bins fitted on all rows) in its own subprocess and saves
every concentration; the script then counts the (class, feature) and (class, parent,
child) concentrations, and the two-level prior's class-pooled ones, that differ by more
than 1e-6 relative, and where they do whether the evidence differs (a tie between two
maxima) or one build found a better maximum.

An earlier build is a directory holding an installed hebnb (see aode_versions.py). Run
from the repository root after ``maturin develop --release``:

    python benches/solver_agreement.py --baseline /tmp/hebnb-baseline
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from tqdm import tqdm

HERE = Path(__file__).resolve().parent

WORKER = r"""
import sys, warnings
import numpy as np
sys.path.insert(0, {benches!r})
from common import SHARED_DATASETS
import hebnb
from hebnb import AODE, CategoricalNB
from hebnb.evaluation.protocol import FoldBinner
from hebnb.evaluation.runner import prepare_dataset
warnings.simplefilter("ignore")
out = {{}}
for folder in sorted(p for p in SHARED_DATASETS.iterdir() if (p / "data.csv").is_file()):
    dataset = prepare_dataset(folder / "data.csv")
    X = FoldBinner(dataset.plan).fit(dataset.X).transform(dataset.X)
    nb = CategoricalNB(smoothing="heb-m").fit(X, dataset.y)
    out[folder.name + "/nb"] = nb.concentration_
    out[folder.name + "/nb-evidence"] = nb.log_evidence_
    for prior in ["pooled", "two-level"]:
        model = AODE(prior=prior).fit(X, dataset.y)
        out[f"{{folder.name}}/{{prior}}"] = model.concentration_
        out[f"{{folder.name}}/{{prior}}-evidence"] = model.log_evidence_
        out[f"{{folder.name}}/{{prior}}-pooled"] = model.pooled_concentration_
np.savez({path!r}, **out)
print("fitted with", hebnb.__file__)
"""


def run_build(pythonpath: str | None, path: str) -> dict:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    code = WORKER.format(benches=str(HERE), path=path)
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    with np.load(path) as saved:
        return dict(saved)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", required=True, help="directory with the earlier hebnb")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        results = {
            build: run_build(path, str(Path(scratch) / f"{build}.npz"))
            for build, path in tqdm([("earlier", args.baseline), ("this", None)], desc="builds")
        }
    earlier, this = results["earlier"], results["this"]
    compared = differ = ties = better = worse = 0
    for key in sorted(k for k in this if not k.endswith("-evidence")):
        a, b = earlier[key], this[key]
        fitted = np.isfinite(a) & np.isfinite(b)
        compared += int(fitted.sum())
        moved = fitted & ~np.isclose(a, b, rtol=1e-6, atol=0)
        differ += int(moved.sum())
        if moved.any() and not key.endswith("-pooled"):
            ea, eb = earlier[key + "-evidence"][moved], this[key + "-evidence"][moved]
            close = np.isclose(ea, eb, rtol=1e-9, atol=1e-9)
            ties += int(close.sum())
            better += int((~close & (eb > ea)).sum())
            worse += int((~close & (eb < ea)).sum())
            print(f"{key}: {int(moved.sum())} concentrations moved")
    print(
        f"{compared} concentrations compared, {differ} differ by more than 1e-6 relative: "
        f"{ties} with equal evidence, {better} with a higher evidence in this build, "
        f"{worse} with a lower one (class-pooled a[i, j] not split)"
    )


if __name__ == "__main__":
    main()
