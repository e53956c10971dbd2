"""Every bad input of the ``hebnb`` command line is one ``error:`` line on stderr and
exit status 2 (argparse's convention), never a traceback (issue 11, item 5)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("scikit_posthocs")

GOOD_CSV = "colour,shape,class\n" + "".join(
    f"{c},{s},{k}\n"
    for c, s, k in zip("rgbrgbrgbrgbrgbrgbrgbrgbrgbrgb" * 2, [i % 4 for i in range(60)], "ab" * 30)
)


def run_cli(*args, cwd, capsys=None):
    """Runs ``hebnb``: in this process through ``main`` when ``capsys`` is given (fast;
    an uncaught exception fails the test), else in a subprocess as a user would.
    Returns (status, stderr lines, stdout)."""
    argv = [str(a) for a in args]
    if capsys is not None:
        from hebnb.cli import main

        previous = os.getcwd()
        os.chdir(cwd)
        try:
            status = main(argv)
        except SystemExit as exit:
            status = exit.code
        finally:
            os.chdir(previous)
        captured = capsys.readouterr()
        stderr, stdout = captured.err, captured.out
    else:
        result = subprocess.run(
            [sys.executable, "-m", "hebnb", *argv],
            check=False,
            capture_output=True,
            text=True,
            cwd=cwd,
            timeout=300,
            env=dict(os.environ, PYTHONWARNINGS="ignore"),
        )
        status, stderr, stdout = result.returncode, result.stderr, result.stdout
    lines = [line for line in stderr.splitlines() if line.strip()]
    return status, lines, stdout


def assert_one_error_line(status, lines, *fragments):
    assert status == 2, lines
    assert "Traceback" not in "\n".join(lines), "\n".join(lines)
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1, lines
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


def evaluate(tmp_path, *arguments, capsys=None):
    """``hebnb evaluate`` with ``arguments`` (a file, or ``--suite DIR``, and options),
    two folds of Laplace and the report in ``tmp_path / "out"``."""
    return run_cli(
        "evaluate",
        *arguments,
        "--folds",
        "2",
        "--methods",
        "laplace",
        "--no-progress",
        "--out",
        tmp_path / "out",
        cwd=tmp_path,
        capsys=capsys,
    )


BAD_FILES = {
    "binary.csv": bytes(range(256)) * 40,
    "latin1.csv": "colour,class\ncaf\xe9,a\nna\xefve,b\n".encode("latin-1") * 20,
    "ragged.csv": b"a,b,class\n1,2,x\n1,2,3,y\n4,5,x\n",
    "quote.csv": b'a,class\n"unbalanced,x\n1,y\n2,x\n',
    "corrupt.parquet": b"PAR1" + bytes(300) + b"PAR1",
    "truncated.csv.gz": gzip.compress(GOOD_CSV.encode())[:40],
    "notgzip.csv.gz": b"this is not gzip data at all" * 5,
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_unreadable_files_are_one_error_line(tmp_path, capsys, name):
    path = tmp_path / name
    path.write_bytes(BAD_FILES[name])
    # one case as a user runs it (a subprocess), the others in this process
    status, lines, _ = evaluate(tmp_path, path, capsys=None if name == "binary.csv" else capsys)
    assert_one_error_line(status, lines, name)


@pytest.mark.parametrize(
    ("option", "fragment"),
    [
        (("--max-rows", "1"), "--max-rows"),
        (("--seed", "-1"), "--seed"),
        (("--seed", str(2**40)), "--seed"),
        (("--max-rows", "-5"), "--max-rows must be 0 (every row) or positive"),
    ],
)
def test_bad_options_are_one_error_line(tmp_path, capsys, option, fragment):
    data = tmp_path / "data.csv"
    data.write_text(GOOD_CSV)
    status, lines, _ = evaluate(tmp_path, data, *option, capsys=capsys)
    assert_one_error_line(status, lines, fragment)


def test_out_that_is_a_file_or_cannot_be_created(tmp_path, capsys):
    data = tmp_path / "data.csv"
    data.write_text(GOOD_CSV)
    a_file = tmp_path / "taken"
    a_file.write_text("not a folder")
    for out in (a_file, a_file / "below"):
        status, lines, _ = run_cli(
            "evaluate",
            data,
            "--folds",
            "2",
            "--methods",
            "laplace",
            "--no-progress",
            "--out",
            out,
            cwd=tmp_path,
            capsys=capsys,
        )
        assert_one_error_line(status, lines, "--out")
    assert a_file.read_text() == "not a folder"


@pytest.mark.parametrize(
    "schema",
    ['{"categorical": ', "[1, 2]", '{"categorical": 3}', b"\xff\xfe{}"],
    ids=["truncated", "not-an-object", "bad-categorical", "not-utf8"],
)
def test_a_broken_schema_is_one_error_line(tmp_path, capsys, schema):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "data.csv").write_text(GOOD_CSV)
    raw = schema if isinstance(schema, bytes) else schema.encode()
    (folder / "schema.json").write_bytes(raw)
    status, lines, _ = evaluate(tmp_path, folder / "data.csv", capsys=capsys)
    assert_one_error_line(status, lines, "schema.json")


def test_nested_parquet_columns_are_one_error_line(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    for name, values in (("lists", [[1, 2], [3]]), ("structs", [{"k": 1}, {"k": 2}])):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"a": pa.array(values * 20), "class": ["x", "y"] * 20}), path)
        status, lines, _ = evaluate(tmp_path, path, capsys=capsys)
        assert_one_error_line(status, lines, "column 'a'")


def test_a_text_column_without_tokens_is_one_error_line(tmp_path, capsys):
    """``--text`` on a column whose values hold no token (single letters):
    scikit-learn's vectorizer finds an empty vocabulary."""
    data = tmp_path / "data.csv"
    data.write_text(GOOD_CSV)
    status, lines, _ = run_cli(
        "evaluate",
        data,
        "--text",
        "colour",
        "--methods",
        "mnb-heb-m",
        "--folds",
        "2",
        "--no-progress",
        "--out",
        tmp_path / "out",
        cwd=tmp_path,
        capsys=capsys,
    )
    assert_one_error_line(status, lines, "--text colour")


def test_fractional_values_of_a_few_distinct_numbers_are_categories(tmp_path, capsys):
    """A numeric column with few distinct values is used as it is (not binned): values
    such as 0.5 and inf are then categories, and every fit succeeds."""
    rows = [("0.5", "x"), ("1.5", "y"), ("inf", "x"), ("", "y"), ("2.0", "x"), ("0.5", "y")]
    data = tmp_path / "data.csv"
    data.write_text(
        "a,b,class\n" + "".join(f"{a},{i % 3},{c}\n" for i, (a, c) in enumerate(rows * 10))
    )
    status, lines, _ = evaluate(tmp_path, data, capsys=capsys)
    assert status == 0, lines
    frame = pd.read_csv(tmp_path / "out" / "folds.csv", keep_default_na=False)
    assert np.all(frame["error"] == "")


@pytest.mark.parametrize("seed", ["-5", str(2**33)])
def test_demo_refuses_a_seed_out_of_range(tmp_path, capsys, seed):
    status, lines, _ = run_cli("demo", "--seed", seed, cwd=tmp_path, capsys=capsys)
    assert_one_error_line(status, lines, "--seed")


def test_a_good_file_still_evaluates(tmp_path, capsys):
    """The checks refuse only bad input: the same command on a good table succeeds."""
    data = tmp_path / "data.csv"
    data.write_text(GOOD_CSV)
    (tmp_path / "schema.json").write_text(json.dumps({"categorical": ["shape"]}))
    status, lines, _ = evaluate(tmp_path, data, "--seed", str(2**32 - 1), capsys=capsys)
    assert status == 0, lines
    assert (tmp_path / "out" / "report.md").is_file()
    frame = pd.read_csv(tmp_path / "out" / "folds.csv", keep_default_na=False)
    assert np.all(frame["error"] == "")


@pytest.mark.parametrize(
    ("labels", "fragment"),
    [([0.5, 1.0, 1.5], "fractional numbers (e.g. "), ([0.1, 0.2], "fractional")],
)
def test_a_regression_target_is_one_error_line(tmp_path, capsys, labels, fragment):
    """Fractional numbers in the target column are a regression target, refused by
    name (it used to reach scikit-learn's StratifiedKFold and print its traceback)."""
    data = tmp_path / "data.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame({"colour": rng.choice(list("rgb"), 60), "class": rng.choice(labels, 60)}).to_csv(
        data, index=False
    )
    status, lines, _ = evaluate(tmp_path, data, capsys=capsys)
    assert_one_error_line(status, lines, "'class'", fragment)


@pytest.mark.parametrize(
    ("bad_csv", "fragment"),
    [
        ("a,class\n1,x\n2,x\n3,x\n", "1 class"),
        ("a,label\n1,x\n2,y\n1,x\n2,y\n", "not found"),
        ("a,class\n1,x\n2,y\n", "2 folds need"),
    ],
)
def test_a_suite_error_names_its_dataset(tmp_path, capsys, bad_csv, fragment):
    """With 25 datasets, an error about one of them says which."""
    for name, text in {"good": GOOD_CSV, "broken": bad_csv}.items():
        (tmp_path / "suite" / name).mkdir(parents=True)
        (tmp_path / "suite" / name / "data.csv").write_text(text)
    status, lines, _ = evaluate(tmp_path, "--suite", tmp_path / "suite", capsys=capsys)
    assert_one_error_line(status, lines, "broken: ", fragment)


def test_datasets_are_named_as_methods_are(tmp_path, capsys):
    """--datasets strips its names and drops empty items, as --methods does; naming none
    is one error line."""
    for name in ("good", "other"):
        (tmp_path / "suite" / name).mkdir(parents=True)
        (tmp_path / "suite" / name / "data.csv").write_text(GOOD_CSV)
    suite = ("--suite", tmp_path / "suite")
    status, lines, _ = evaluate(tmp_path, *suite, "--datasets", " good , ", capsys=capsys)
    assert status == 0, lines
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert set(summary["dataset"]) == {"good"}
    status, lines, _ = evaluate(tmp_path, *suite, "--datasets", " , ", capsys=capsys)
    assert_one_error_line(status, lines, "--datasets names no dataset")


def test_a_file_of_another_type_is_named_once(tmp_path, capsys):
    data = tmp_path / "data.md"
    data.write_text(GOOD_CSV)
    status, lines, _ = evaluate(tmp_path, data, capsys=capsys)
    assert_one_error_line(status, lines, "data.md: expected a .csv or .parquet file")
    assert "cannot be read" not in lines[-1] and lines[-1].count("data.md") == 1


def test_datasets_without_a_suite_is_one_error_line(tmp_path, capsys):
    data = tmp_path / "data.csv"
    data.write_text(GOOD_CSV)
    status, lines, _ = evaluate(tmp_path, data, "--datasets", "car", capsys=capsys)
    assert_one_error_line(status, lines, "--datasets", "--suite")


@pytest.mark.parametrize(
    ("max_rows", "protocol"),
    [("0", "every row of each dataset"), ("40", "at most 40 rows per dataset")],
)
def test_the_report_states_the_subsample(tmp_path, capsys, max_rows, protocol):
    """``--max-rows 0`` (every row) read "at most None rows per dataset" in the report."""
    data = tmp_path / "data.csv"
    data.write_text(GOOD_CSV)
    status, lines, _ = evaluate(tmp_path, data, "--max-rows", max_rows, capsys=capsys)
    assert status == 0, lines
    report = (tmp_path / "out" / "report.md").read_text()
    assert protocol in report
    assert "None" not in report
