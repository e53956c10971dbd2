"""The ``hebnb`` command line: ``hebnb demo`` (and further subcommands)."""

from __future__ import annotations

import argparse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hebnb",
        description="Naive Bayes for categorical data with empirical-Bayes smoothing.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo", help="Laplace vs HEB-M on built-in data (digits and a synthetic set)"
    )
    demo.add_argument("--seed", type=int, default=0, help="split and generator seed")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from .demo import run_demo

        run_demo(seed=args.seed)
    return 0
