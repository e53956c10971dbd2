"""The ``hebnb`` command line: ``hebnb demo`` and ``hebnb evaluate``."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help lines wrapped at spaces only, so that method names such as ``heb-m`` or
    ``aode+cll-value`` are never cut at their hyphens; the epilog kept as written."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


#: What ``hebnb evaluate --help`` ends with: what it measures, and its exit codes.
_EVALUATE_EPILOG = """\
measures (each fold, then mean and std over folds per dataset and method):
  accuracy, macro F1, log-loss (natural log, probabilities clipped at 1e-15),
  multi-class Brier, macro one-vs-rest AUC, top-1 ECE (10 equal-width bins)
statistics over datasets (with --suite, datasets where every method ran on every fold):
  mean ranks, Friedman test, Nemenyi critical difference (CD diagrams),
  paired Wilcoxon signed-rank tests
exit codes:
  0  every fit ran
  1  some fits failed (listed in report.md, the others are reported)
  2  unusable input or options (a message on stderr)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hebnb",
        description="Naive Bayes for categorical data with empirical-Bayes smoothing.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="scikit-learn's CategoricalNB, Laplace, HEB-M, AODE and HEB-AODE on built-in data",
    )
    demo.add_argument("--seed", type=int, default=0, help="split and generator seed")
    add_evaluate_parser(commands)
    return parser


def add_evaluate_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``evaluate`` subcommand and its options."""
    from .evaluation.methods import METHODS
    from .evaluation.runner import DEFAULT_METHODS

    evaluate = commands.add_parser(
        "evaluate",
        help="cross-validate smoothers (and AODE) on a CSV/Parquet file or a suite of them",
        description=(
            "The paper's protocol: stratified subsample, 10 quantile bins per numeric "
            "column fitted on each training fold, stratified K-fold; writes CSV tables, "
            "PNG figures and report.md into --out."
        ),
        epilog=_EVALUATE_EPILOG,
        formatter_class=_HelpFormatter,
    )
    evaluate.add_argument("data", nargs="?", help="CSV or Parquet file (omit with --suite)")
    evaluate.add_argument("--target", default="class", help="label column (default: class)")
    evaluate.add_argument(
        "--methods",
        default=",".join(DEFAULT_METHODS),
        help=(
            f"comma-separated, from: {', '.join(METHODS)}; lidstone:ALPHA, m-estimate:M and "
            "target-encoding:M set the fixed parameter (default: the paper's seven smoothers)"
        ),
    )
    evaluate.add_argument("--folds", type=int, default=10, help="CV folds (default: 10)")
    evaluate.add_argument(
        "--max-rows",
        type=int,
        default=20_000,
        help="stratified subsample size, 0 for all rows (default: 20000)",
    )
    evaluate.add_argument(
        "--seed", type=int, default=42, help="subsample and fold seed (default: 42)"
    )
    evaluate.add_argument("--out", default="results", help="output folder (default: results)")
    evaluate.add_argument(
        "--suite", metavar="DIR", help="evaluate every */data.csv below DIR instead of DATA"
    )
    evaluate.add_argument(
        "--datasets", help="with --suite: only these comma-separated folder names"
    )
    evaluate.add_argument(
        "--categorical",
        metavar="all|COL,...",
        help="columns never binned (default: a schema.json beside the data, if any)",
    )
    evaluate.add_argument(
        "--n-jobs",
        type=int,
        default=None,
        help="threads per estimator, -1 for all cores (default: 1); results do not depend on it",
    )
    evaluate.add_argument(
        "--text",
        metavar="COLUMN",
        help=(
            "evaluate text methods (mnb-*, cnb-*, bnb-*) on this text column, vectorised by "
            "a CountVectorizer fitted on each training fold"
        ),
    )
    evaluate.add_argument("--no-progress", action="store_true", help="no progress bar")


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Warnings of ``hebnb evaluate`` as one plain line on stderr (no source location)."""
    print(f"hebnb evaluate: warning: {message}", file=sys.stderr)


def run_evaluate(args: argparse.Namespace, argv: list[str]) -> int:
    """Runs ``hebnb evaluate``; bad input is a message on stderr and exit code 2."""
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _run_evaluate(args, argv)


def _run_evaluate(args: argparse.Namespace, argv: list[str]) -> int:
    try:
        from .evaluation.protocol import check_evaluate_requirements
        from .evaluation.report import write_report

        check_evaluate_requirements()
    except ImportError as error:
        print(
            f"hebnb evaluate: error: {error}; install the evaluate extra: pip install "
            "'hebnb[evaluate]' (from a checkout: pip install '.[evaluate]')",
            file=sys.stderr,
        )
        return 2
    from .evaluation.methods import UnknownMethodError
    from .evaluation.protocol import DataError, check_seed, comma_separated
    from .evaluation.runner import evaluate, evaluate_suite

    max_rows = None if args.max_rows == 0 else args.max_rows
    try:
        if args.max_rows < 0:
            raise DataError(f"--max-rows must be 0 (every row) or positive, got {args.max_rows}")
        check_seed(args.seed)
        check_output_folder(args.out)
        if args.suite:
            if args.data:
                raise DataError("give either DATA or --suite DIR, not both")
            if args.categorical:
                raise DataError("--categorical applies to one file; use schema.json with --suite")
            datasets = None
            if args.datasets is not None:
                datasets = comma_separated(args.datasets)  # as --methods
                if not datasets:
                    raise DataError(f"--datasets names no dataset: {args.datasets!r}")
            result = evaluate_suite(
                args.suite,
                args.target,
                args.methods,
                folds=args.folds,
                max_rows=max_rows,
                seed=args.seed,
                datasets=datasets,
                n_jobs=args.n_jobs,
                progress=not args.no_progress,
                text=args.text,
            )
        else:
            if not args.data:
                raise DataError("give a CSV or Parquet file, or --suite DIR")
            if args.datasets:
                raise DataError("--datasets chooses folders of a --suite; give it with --suite")
            result = evaluate(
                args.data,
                args.target,
                args.methods,
                folds=args.folds,
                max_rows=max_rows,
                seed=args.seed,
                categorical=args.categorical,
                n_jobs=args.n_jobs,
                progress=not args.no_progress,
                text=args.text,
            )
    except (DataError, UnknownMethodError) as error:
        print(f"hebnb evaluate: error: {error}", file=sys.stderr)
        return 2
    command = "hebnb " + " ".join(shlex.quote(a) for a in argv)
    try:
        report = write_report(result, args.out, command=command)
    except OSError as error:
        print(
            f"hebnb evaluate: error: cannot write into --out {args.out}: {error}", file=sys.stderr
        )
        return 2
    failed = int((result.folds["error"] != "").sum())
    print(f"wrote {report} and the CSV files and figures beside it")
    if failed:
        print(f"hebnb evaluate: {failed} fits failed (listed in the report)", file=sys.stderr)
        return 1
    return 0


def check_output_folder(out: str) -> None:
    """Refuses (DataError) an ``--out`` that is a file or that cannot be created, before
    any work is done; the folder itself is created when the report is written."""
    from .evaluation.protocol import DataError

    path = Path(out)
    if path.exists():
        if not path.is_dir():
            raise DataError(f"--out {out} exists and is not a folder")
        if not os.access(path, os.W_OK | os.X_OK):
            raise DataError(f"--out {out} is not writable")
        return
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise DataError(f"--out {out} cannot be created: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DataError(f"--out {out} cannot be created: {parent} is not writable")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from .demo import run_demo

        if not 0 <= args.seed <= 2**32 - 1:
            print(
                f"hebnb demo: error: --seed must be an integer from 0 to {2**32 - 1}, "
                f"got {args.seed}",
                file=sys.stderr,
            )
            return 2
        run_demo(seed=args.seed)
    elif args.command == "evaluate":
        return run_evaluate(args, argv)
    return 0
