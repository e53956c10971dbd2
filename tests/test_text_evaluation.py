"""``hebnb evaluate --text COLUMN``: a CountVectorizer fitted per training fold and the
text methods, from Python and from the command line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer

from hebnb import MultinomialNB
from hebnb.cli import main
from hebnb.evaluation import evaluate
from hebnb.evaluation.methods import make_estimator
from hebnb.evaluation.protocol import DataError, stratified_folds
from hebnb.metrics import all_metrics

pytest.importorskip("matplotlib")


@pytest.fixture(autouse=True)
def run_in_a_folder_of_its_own(tmp_path, monkeypatch):
    """Calls that leave ``--out`` to its default ("results", relative) write into the test's
    own folder, never into the checkout the tests run from."""
    monkeypatch.chdir(tmp_path)


def text_frame(n_rows=120, seed=0):
    rng = np.random.default_rng(seed)
    words = {
        0: ["cheap", "win", "prize", "now", "call"],
        1: ["meeting", "lunch", "see", "you", "home"],
    }
    y = rng.integers(0, 2, size=n_rows)
    texts = [" ".join(rng.choice(words[c] + words[1 - c][:1], size=6)) for c in y]
    return pd.DataFrame({"message": texts, "class": np.where(y == 1, "ham", "spam")})


def test_text_mode_fits_a_vectorizer_per_training_fold():
    frame = text_frame()
    result = evaluate(
        frame, methods="mnb-heb-m,mnb-laplace,cnb-laplace", folds=3, text="message", progress=False
    )
    folds = result.folds
    assert (folds["error"] == "").all()
    # the heb-m fold metrics recomputed by hand: vocabulary of the training fold only
    y = frame["class"].to_numpy()
    classes = np.unique(y)
    for fold, (train, test) in enumerate(stratified_folds(y, 3, 42)):
        vectorizer = CountVectorizer().fit(frame["message"].iloc[train])
        X_train = vectorizer.transform(frame["message"].iloc[train])
        X_test = vectorizer.transform(frame["message"].iloc[test])
        assert sp.issparse(X_train)
        proba = MultinomialNB(smoothing="heb-m").fit(X_train, y[train]).predict_proba(X_test)
        want = all_metrics(y[test], proba, classes)
        row = folds[(folds["method"] == "mnb-heb-m") & (folds["fold"] == fold)].iloc[0]
        assert row["log_loss"] == pytest.approx(want["log_loss"], rel=1e-12)
    assert make_estimator("mnb-lidstone:0.5").alpha == 0.5


def test_text_methods_and_the_text_flag_go_together():
    frame = text_frame()
    with pytest.raises(DataError, match="text methods"):
        evaluate(frame, methods="laplace", folds=3, text="message", progress=False)
    with pytest.raises(DataError, match="need --text"):
        evaluate(frame, methods="mnb-heb-m", folds=3, progress=False)
    with pytest.raises(DataError, match="no column"):
        evaluate(frame, methods="mnb-heb-m", folds=3, text="body", progress=False)


def test_command_line_text_mode(tmp_path, capsys):
    path = tmp_path / "messages.csv"
    text_frame().to_csv(path, index=False)
    out = tmp_path / "out"
    code = main(
        [
            "evaluate",
            str(path),
            "--text",
            "message",
            "--methods",
            "mnb-heb-m,bnb-laplace",
            "--folds",
            "3",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    report = (out / "report.md").read_text()
    assert "CountVectorizer" in report and "'message'" in report
    assert "quantile bins" not in report
    assert main(["evaluate", str(path), "--methods", "mnb-heb-m", "--out", str(out)]) == 2
    assert "need --text" in capsys.readouterr().err
