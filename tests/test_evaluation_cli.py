"""``hebnb evaluate`` end to end on small generated CSV files, and its bad-input errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from hebnb.cli import main
from hebnb.evaluation import evaluate, evaluate_suite, prepare_dataset, write_report
from hebnb.evaluation.report import read_result

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def run_in_a_folder_of_its_own(tmp_path, monkeypatch):
    """Calls that leave ``--out`` to its default ("results", relative) write into the test's
    own folder, never into the checkout the tests run from."""
    monkeypatch.chdir(tmp_path)


def write_dataset(path, n_rows: int = 150, seed: int = 0):
    """A small mixed table: a numeric column to bin, two categorical ones, three classes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n_rows)
    frame = pd.DataFrame(
        {
            "size": rng.normal(loc=y, size=n_rows),
            "shape": np.where(rng.random(n_rows) < 0.7, y, rng.integers(0, 3, n_rows)),
            "colour": rng.choice(["red", "green", "blue", ""], n_rows),
            "class": np.array(["low", "mid", "high"])[y],
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def assert_valid_png(path):
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 50 and image.shape[1] > 50


def test_evaluate_one_file(tmp_path, capsys):
    data = write_dataset(tmp_path / "toy.csv")
    out = tmp_path / "results"
    code = main(
        [
            "evaluate",
            str(data),
            "--target",
            "class",
            "--methods",
            "laplace,heb-m",
            "--folds",
            "3",
            "--max-rows",
            "100",
            "--seed",
            "42",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    assert "report.md" in capsys.readouterr().out
    for name in ("folds.csv", "summary.csv", "datasets.csv", "reliability.csv", "report.md"):
        assert (out / name).is_file()
    folds = pd.read_csv(out / "folds.csv", keep_default_na=False)
    assert len(folds) == 2 * 3 and (folds["error"] == "").all()
    assert set(folds["n_train"] + folds["n_test"]) == {100}
    for column in (
        "accuracy",
        "f1_macro",
        "log_loss",
        "brier",
        "auc_ovr",
        "ece",
        "fit_seconds",
        "predict_seconds",
    ):
        assert folds[column].notna().all(), column
    datasets = pd.read_csv(out / "datasets.csv")
    assert datasets.loc[0, "binned"] == 1 and datasets.loc[0, "rows_used"] == 100
    assert_valid_png(out / "figures" / "reliability-toy.png")
    report = (out / "report.md").read_text()
    assert "hebnb evaluate" in report and "HEB-M" in report


def evaluated_suite(tmp_path, names: list[str], n_rows: int, methods: str):
    """Writes one generated dataset per name into a suite folder, runs ``hebnb evaluate
    --suite`` on it with 3 folds and returns the output folder."""
    for index, name in enumerate(names):
        write_dataset(tmp_path / "suite" / name / "data.csv", n_rows=n_rows, seed=index)
    out = tmp_path / "results"
    code = main(
        [
            "evaluate",
            "--suite",
            str(tmp_path / "suite"),
            "--methods",
            methods,
            "--folds",
            "3",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    return out


def test_evaluate_suite_ranks_and_cd_diagrams(tmp_path):
    out = evaluated_suite(tmp_path, ["one", "two", "three"], 90, "laplace,kt,heb-m")
    ranks = pd.read_csv(out / "ranks-all.csv", index_col=0)
    assert set(ranks.index) >= {"laplace", "kt", "heb-m", "Friedman p", "Nemenyi CD"}
    mean_ranks = ranks.loc[["laplace", "kt", "heb-m"], "Log-loss"]
    assert mean_ranks.sum() == pytest.approx(6.0)  # 1 + 2 + 3 on every dataset
    for metric in ("accuracy", "f1_macro", "log_loss", "brier"):
        assert_valid_png(out / "figures" / f"cd-all-{metric}.png")
    for name in ("one", "two", "three"):
        assert_valid_png(out / "figures" / f"reliability-{name}.png")
    report = (out / "report.md").read_text()
    assert "Wilcoxon" in report and "Nemenyi" in report

    # the written files give the result back, and the report again
    result = read_result(out)
    assert result.settings["methods"] == ["laplace", "kt", "heb-m"]
    rewritten = write_report(result, tmp_path / "again")
    assert rewritten.read_text().split("## Datasets")[1] == report.split("## Datasets")[1]


def test_names_that_read_as_numbers_or_missing_come_back_as_written(tmp_path):
    """read_result read "007" as 7 and "NA" as missing, so a redrawn report renamed or
    lost their reliability diagrams."""
    out = evaluated_suite(tmp_path, ["NA", "007"], 60, "laplace,kt")
    result = read_result(out)
    for table in (result.folds, result.reliability, result.datasets):
        assert sorted(set(table["dataset"])) == ["007", "NA"]
    write_report(result, tmp_path / "again")
    for name in ("007", "NA"):
        assert_valid_png(tmp_path / "again" / "figures" / f"reliability-{name}.png")


def test_a_second_run_into_the_same_folder_leaves_none_of_the_first(tmp_path):
    """Ranks, CD diagrams and reliability diagrams of the first run (three datasets)
    stayed beside the second's (one dataset, no ranks)."""
    out = evaluated_suite(tmp_path, ["one", "two", "three"], 60, "laplace,kt,heb-m")
    assert (out / "ranks-all.csv").exists()
    data = tmp_path / "suite" / "one" / "data.csv"
    code = main(["evaluate", str(data), "--methods", "laplace", "--out", str(out), "--no-progress"])
    assert code == 0
    assert not list(out.glob("ranks-*.csv"))
    assert sorted(p.name for p in (out / "figures").iterdir()) == ["reliability-one.png"]


def test_a_data_file_named_relative_to_the_working_directory_takes_its_folder_name(
    tmp_path, monkeypatch
):
    """``hebnb evaluate data.csv`` run in the dataset's folder named the dataset ""."""
    write_dataset(tmp_path / "weather" / "data.csv", n_rows=60)
    monkeypatch.chdir(tmp_path / "weather")
    out = tmp_path / "out"
    code = main(
        ["evaluate", "data.csv", "--methods", "laplace", "--out", str(out), "--no-progress"]
    )
    assert code == 0
    assert pd.read_csv(out / "datasets.csv")["dataset"].tolist() == ["weather"]
    assert (out / "figures" / "reliability-weather.png").exists()
    monkeypatch.chdir(tmp_path / "weather" / "..")
    assert prepare_dataset(os.path.join("weather", "..", "weather", "data.csv")).name == "weather"


def test_a_dataset_folder_with_both_files_is_refused(tmp_path, capsys):
    """data.csv and data.parquet in one folder were evaluated twice under one name."""
    write_dataset(tmp_path / "suite" / "one" / "data.csv", n_rows=60)
    write_dataset(tmp_path / "suite" / "two" / "data.csv", n_rows=60)
    pd.read_csv(tmp_path / "suite" / "two" / "data.csv").to_parquet(
        tmp_path / "suite" / "two" / "data.parquet"
    )
    code = main(["evaluate", "--suite", str(tmp_path / "suite"), "--no-progress"])
    assert code == 2
    assert "two: both data.csv and data.parquet in one dataset folder" in capsys.readouterr().err


def test_datasets_whose_names_slug_alike_get_a_reliability_diagram_each(tmp_path):
    out = evaluated_suite(tmp_path, ["my data", "my-data"], 60, "laplace,kt")
    figures = sorted(path.name for path in (out / "figures").glob("reliability-*.png"))
    assert figures == ["reliability-my-data-2.png", "reliability-my-data.png"]
    report = (out / "report.md").read_text()
    assert report.count("](figures/reliability-my-data") == 2
    assert "figures/reliability-my-data-2.png" in report


def test_the_report_compares_the_posterior_average_with_type2_ml(tmp_path):
    """The report's Wilcoxon row of ``heb-m-posterior vs heb-m`` is the test scipy gives on
    the per-dataset mean log-losses of summary.csv."""
    from scipy.stats import wilcoxon

    names = ["one", "two", "three", "four", "five"]
    out = evaluated_suite(tmp_path, names, 60, "heb-m,heb-m-posterior")
    summary = pd.read_csv(out / "summary.csv").pivot(
        index="dataset", columns="method", values="log_loss"
    )
    difference = summary["heb-m"] - summary["heb-m-posterior"]  # > 0: the posterior wins
    expected = (
        f"| heb-m-posterior vs heb-m | Log-loss | {int((difference > 0).sum())} "
        f"| {int((difference < 0).sum())} | {int((difference == 0).sum())} "
        f"| {wilcoxon(difference).pvalue:.3g} |"
    )
    report = (out / "report.md").read_text().splitlines()
    assert expected in report, [row for row in report if "posterior vs" in row]


def test_python_api_accepts_a_dataframe():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.integers(0, 4, 120), "label": rng.integers(0, 2, 120)})
    result = evaluate(frame, target="label", methods=["laplace", "heb-u"], folds=4, progress=False)
    assert result.folds.shape[0] == 8
    assert result.datasets.loc[0, "dataset"] == "data"


def test_python_api_accepts_integer_column_names():
    """A categorical column of fractional values is turned into text with its integer
    name (DataFrame.assign needs string names: a TypeError)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            0: rng.choice([0.5, 1.5, 2.5], 60),
            1: rng.choice(list("xyz"), 60),
            2: rng.integers(0, 2, 60),
        }
    )
    result = evaluate(frame, target=2, methods="laplace", folds=3, progress=False)
    assert result.folds["error"].eq("").all() and result.folds.shape[0] == 3


def test_metrics_do_not_depend_on_the_thread_count(tmp_path):
    data = write_dataset(tmp_path / "toy.csv", n_rows=120)
    runs = [
        evaluate(data, methods="heb-m,laplace", folds=3, n_jobs=n_jobs, progress=False).folds
        for n_jobs in (1, 2)
    ]
    metrics = ["accuracy", "f1_macro", "log_loss", "brier", "auc_ovr", "ece"]
    pd.testing.assert_frame_equal(runs[0][metrics], runs[1][metrics])


def test_python_api_suite_selects_datasets(tmp_path):
    for name in ("one", "two"):
        write_dataset(tmp_path / name / "data.csv", n_rows=60)
    result = evaluate_suite(tmp_path, methods="laplace", folds=2, datasets=["two"], progress=False)
    assert result.folds["dataset"].unique().tolist() == ["two"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--target", "label"], "target column 'label' not found"),
        (["--methods", "laplace,bogus"], "unknown method(s): bogus"),
        (["--folds", "1"], "--folds must be at least 2"),
        (["--n-jobs", "0"], "--n-jobs: n_jobs must be a non-zero integer"),
    ],
)
def test_bad_arguments(tmp_path, capsys, arguments, message):
    data = write_dataset(tmp_path / "toy.csv")
    code = main(
        ["evaluate", str(data), "--out", str(tmp_path / "out"), "--no-progress", *arguments]
    )
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_one_class_and_empty_file(tmp_path, capsys):
    one_class = tmp_path / "one.csv"
    pd.DataFrame({"a": [1, 2, 3], "class": ["x", "x", "x"]}).to_csv(one_class, index=False)
    assert main(["evaluate", str(one_class), "--no-progress"]) == 2
    assert "at least two are needed" in capsys.readouterr().err
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert main(["evaluate", str(empty), "--no-progress"]) == 2
    assert "is empty" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "absent.csv"), "--no-progress"]) == 2
    assert "no such file" in capsys.readouterr().err
    header_only = tmp_path / "header.csv"
    header_only.write_text("a,b,class\n")
    assert main(["evaluate", str(header_only), "--no-progress"]) == 2
    assert "no rows" in capsys.readouterr().err


def test_a_folder_given_as_data_is_named_a_folder(tmp_path, capsys):
    folder = tmp_path / "suite"
    folder.mkdir()
    assert main(["evaluate", str(folder), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{folder} is a folder, not a data file" in err and "--suite" in err


@pytest.mark.parametrize("suite", [False, True])
def test_unknown_columns_of_a_schema_name_the_schema(tmp_path, capsys, suite):
    """The columns came from schema.json, not from --categorical (which --suite refuses)."""
    folder = tmp_path / "suite" / "ds"
    folder.mkdir(parents=True)
    data = write_dataset(folder / "data.csv")
    (folder / "schema.json").write_text('{"categorical": ["zzz"]}')
    target = ["--suite", str(tmp_path / "suite")] if suite else [str(data)]
    code = main(["evaluate", *target, "--no-progress", "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"{folder / 'schema.json'} names unknown columns: zzz" in err
    assert "--categorical" not in err


def test_missing_evaluate_extra_is_a_clear_error(tmp_path, capsys, monkeypatch):
    """scikit-learn 1.6 (the core's minimum) lacks KBinsDiscretizer(quantile_method=...),
    and tqdm comes with the evaluate extra: both are named before anything runs."""
    import importlib.util

    import sklearn

    data = write_dataset(tmp_path / "toy.csv")
    monkeypatch.setattr(sklearn, "__version__", "1.6.1")
    assert main(["evaluate", str(data), "--no-progress"]) == 2
    assert "needs scikit-learn >= 1.7, found 1.6.1" in capsys.readouterr().err
    monkeypatch.undo()
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "tqdm" else find_spec(name, *a),
    )
    assert main(["evaluate", str(data), "--no-progress"]) == 2
    error = capsys.readouterr().err
    assert "needs tqdm" in error and "pip install 'hebnb[evaluate]'" in error


def test_command_line_exit_code(tmp_path):
    data = write_dataset(tmp_path / "toy.csv")
    completed = subprocess.run(
        [sys.executable, "-m", "hebnb", "evaluate", str(data), "--target", "nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 2
    assert "target column 'nope' not found" in completed.stderr


def test_docstring_example_of_evaluate_runs():
    import doctest

    import hebnb.evaluation.runner

    result = doctest.testmod(hebnb.evaluation.runner)
    assert result.attempted > 0 and result.failed == 0


def test_a_class_missing_from_a_training_fold_scores_zero_probability():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"a": rng.integers(0, 3, 60), "class": rng.integers(0, 2, 60)})
    frame.loc[0, "class"] = 7  # one row: absent from the training data of its test fold
    result = evaluate(frame, methods="laplace", folds=3, progress=False)
    folds = result.folds
    assert (folds["error"] == "").all()
    # the fold that tests the lone row gives it probability 0 -> clipped log-loss term
    assert folds["log_loss"].max() > 34.5 / 20


def test_without_the_evaluate_extra(tmp_path):
    # scikit-posthocs and matplotlib missing: the CLI still builds, demo is unaffected,
    # and evaluate says which extra to install
    data = write_dataset(tmp_path / "toy.csv")
    code = (
        "import sys\n"
        "sys.modules['scikit_posthocs'] = None\n"
        "sys.modules['matplotlib'] = None\n"
        "from hebnb.cli import build_parser, main\n"
        "build_parser()\n"
        f"raise SystemExit(main(['evaluate', {str(data)!r}, '--no-progress']))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 2, completed.stderr
    assert "hebnb[evaluate]" in completed.stderr


def test_help_names_every_method_whole_and_says_defaults_measures_and_exit_codes(capsys):
    from pathlib import Path

    from hebnb.evaluation.methods import METHODS

    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    shown = capsys.readouterr().out
    words = set(shown.replace(",", " ").replace(";", " ").split())
    assert set(METHODS) <= words  # never cut at a hyphen
    assert "(default: 42)" in shown
    for said in ("Friedman", "Nemenyi", "Wilcoxon", "ECE", "exit codes"):
        assert said in shown
    # and the documentation's option table lists every option
    options = {re.sub(r"[^-a-z]", "", w) for w in words if w.startswith("--")} - {"--help"}
    table = (Path(__file__).resolve().parents[1] / "docs" / "evaluation.md").read_text()
    assert len(options) > 10
    assert sorted(option for option in options if f"`{option}" not in table) == []


def test_names_of_one_method_give_one_column_and_one_curve(tmp_path, monkeypatch):
    """``lidstone,lidstone:0.1,lidstone:0.10,laplace`` fitted lidstone three times, and the
    report's per-dataset tables and reliability diagrams, keyed by label, showed two
    columns and curves for four methods."""
    from hebnb.evaluation import report as report_module
    from hebnb.evaluation.report import mean_std_table, method_labels, summarise

    out = evaluated_suite(
        tmp_path, ["one", "two"], 60, "lidstone,lidstone:0.1,lidstone:0.10,laplace"
    )
    result = read_result(out)
    assert result.settings["methods"] == ["lidstone", "laplace"]
    assert sorted(set(result.folds["method"])) == ["laplace", "lidstone"]
    report = (out / "report.md").read_text()
    for title in ("Accuracy", "Log-loss", "Top-1 ECE"):
        header = report.split(f"### {title}\n\n")[1].splitlines()[0]
        assert header == "| dataset | Lidstone (alpha=0.1) | Laplace (alpha=1) |"
    # a result that holds two methods of one label (written before they were merged)
    # keeps a column for each
    twins = result.folds[result.folds["method"] == "lidstone"].assign(method="lidstone:0.1")
    result.folds = pd.concat([result.folds, twins], ignore_index=True)
    methods = ["lidstone", "lidstone:0.1", "laplace"]
    labels = method_labels(methods)
    assert len(set(labels.values())) == 3
    table = mean_std_table(summarise(result), "accuracy", methods)
    assert list(table.columns) == [labels[m] for m in methods]
    assert table[labels["lidstone"]].tolist() == table[labels["lidstone:0.1"]].tolist()
    bins = result.reliability
    twins = bins[bins["method"] == "lidstone"].assign(method="lidstone:0.1")
    result.reliability = pd.concat([bins, twins], ignore_index=True)
    result.settings["methods"] = ["lidstone", "lidstone:0.1"]  # drawn: the first two
    drawn = []
    monkeypatch.setattr(
        report_module, "plot_reliability", lambda curves, title, path: drawn.append(curves)
    )
    report_module.write_figures(result, {}, tmp_path / "figures")
    assert [list(curves) for curves in drawn] == [[labels["lidstone"], labels["lidstone:0.1"]]] * 2


def test_a_single_class_left_by_the_subsample_is_an_input_error(tmp_path, capsys):
    """59 rows of A and one of B, --max-rows 10: the draw kept A alone, every fit failed,
    exit code 1 (the documentation promises the one-class error, exit code 2)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 3, 60), "b": rng.normal(size=60)})
    frame["class"] = ["A"] * 59 + ["B"]
    frame.to_csv(tmp_path / "rare.csv", index=False)
    out = tmp_path / "out"
    arguments = ["evaluate", str(tmp_path / "rare.csv"), "--methods", "laplace,heb-m"]
    arguments += ["--folds", "3", "--seed", "0", "--no-progress", "--out", str(out)]
    assert main([*arguments, "--max-rows", "10"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("hebnb evaluate: error: ") and "keeps 1 class of the 2" in error
    assert not (out / "folds.csv").exists()


def test_a_report_removes_only_what_an_earlier_report_wrote(tmp_path):
    """write_report deleted every figures/*.png and ranks-*.csv of the folder, the user's
    own files included."""
    out = tmp_path / "results"
    (out / "figures").mkdir(parents=True)
    own = [out / "figures" / "my-architecture-diagram.png", out / "ranks-my-notes.csv"]
    own += [out / "figures" / "cd-all-accuracy.png"]  # a name a report writes
    for path in own:
        path.write_text("mine")
    (tmp_path / "outside.png").write_text("mine")
    evaluated_suite(tmp_path, ["one", "two", "three"], 60, "laplace,kt,heb-m")
    first = json.loads((out / "manifest.json").read_text())["files"]
    assert "ranks-all.csv" in first and "figures/reliability-three.png" in first
    assert "figures/cd-all-accuracy.png" in first  # overwritten, as any file of its name
    assert {"folds.csv", "report.md", "settings.json"} <= set(first)
    for path in own[:2]:
        assert path.read_text() == "mine"
    # a second run of one dataset removes the first run's ranks and figures, no other file
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["files"] += ["../outside.png", "figures/../../outside.png", "folds.csv.bak"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    data = tmp_path / "suite" / "one" / "data.csv"
    code = main(["evaluate", str(data), "--methods", "laplace", "--out", str(out), "--no-progress"])
    assert code == 0
    assert not list(out.glob("ranks-all*.csv"))
    figures = sorted(path.name for path in (out / "figures").iterdir())
    assert figures == ["my-architecture-diagram.png", "reliability-one.png"]
    assert (out / "ranks-my-notes.csv").read_text() == "mine"
    assert (tmp_path / "outside.png").read_text() == "mine"
    second = json.loads((out / "manifest.json").read_text())["files"]
    assert "figures/reliability-one.png" in second and "ranks-all.csv" not in second
    # without a manifest (a folder of an older version) nothing is removed
    (out / "manifest.json").unlink()
    (out / "figures" / "reliability-stale.png").write_text("old")
    evaluate_and_report = evaluate(data, methods="kt", folds=3, progress=False)
    write_report(evaluate_and_report, out)
    assert (out / "figures" / "reliability-stale.png").exists()


def test_numpy_integer_settings_are_written_as_numbers(tmp_path):
    """folds, seed and max_rows given as numpy integers were written as strings
    (json.dumps(default=str)): read_result gave "3" for 3."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 3, 90), "class": rng.integers(0, 2, 90)})
    result = evaluate(
        frame,
        methods="laplace",
        folds=np.int64(3),
        seed=np.uint32(7),
        max_rows=np.int32(80),
        progress=False,
    )
    write_report(result, tmp_path / "out")
    written = json.loads((tmp_path / "out" / "settings.json").read_text())
    assert {key: written[key] for key in ("folds", "seed", "max_rows")} == {
        "folds": 3,
        "seed": 7,
        "max_rows": 80,
    }
    assert all(type(written[key]) is int for key in ("folds", "seed", "max_rows"))
    back = read_result(tmp_path / "out")
    assert back.settings == result.settings
    assert "Protocol: stratified 3-fold cross-validation, seed 7, at most 80 rows" in (
        (tmp_path / "out" / "report.md").read_text()
    )
