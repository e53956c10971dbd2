"""The demo's data and table: ``hebnb.datasets.make_linked`` and ``hebnb demo``."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import train_test_split

from hebnb import AODE, CategoricalNB
from hebnb.datasets import make_linked
from hebnb.demo import demo_datasets, run_demo
from hebnb.metrics import log_loss


def test_make_linked_is_reproducible_and_shaped_as_asked():
    X, y = make_linked(500, 40, n_values=4, block=5, n_signal=3, random_state=7)
    again, labels = make_linked(500, 40, n_values=4, block=5, n_signal=3, random_state=7)
    assert np.array_equal(X, again) and np.array_equal(y, labels)
    assert X.shape == (500, 40) and y.shape == (500,)
    assert set(np.unique(X)) == {0, 1, 2, 3} and set(np.unique(y)) == {0, 1}
    other, _ = make_linked(500, 40, n_values=4, block=5, n_signal=3, random_state=8)
    assert not np.array_equal(X, other)


def test_make_linked_links_neighbours_within_blocks_only():
    X, _ = make_linked(20_000, 20, block=10, n_signal=2, random_state=0)
    same = (X[:, 1:] == X[:, :-1]).mean(axis=0)  # feature f + 1 against f
    # within a block a feature copies its predecessor with probability 0.7, else draws one
    # of 3 values: they agree with probability 0.7 + 0.3 / 3 = 0.8; across a block's start
    # they are independent, 1 / 3
    within = np.delete(same, [9])
    assert np.allclose(within, 0.8, atol=0.02), within
    assert abs(same[9] - 1 / 3) < 0.02


def test_the_class_of_make_linked_needs_interactions():
    """What the generator is for: AODE sees the interactions that Naive Bayes cannot."""
    X, y = make_linked(4_000, 60, random_state=1)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, random_state=0)
    nb = CategoricalNB().fit(X_train, y_train)
    aode = AODE().fit(X_train, y_train)
    classes = nb.classes_
    nb_loss = log_loss(y_test, nb.predict_proba(X_test), classes)
    aode_loss = log_loss(y_test, aode.predict_proba(X_test), classes)
    assert aode_loss < nb_loss - 0.01, (aode_loss, nb_loss)


@pytest.mark.parametrize(
    "arguments",
    [{"block": 1}, {"n_values": 1}, {"n_signal": 5, "n_features": 40}],
    ids=["block", "values", "signal"],
)
def test_make_linked_refuses_impossible_shapes(arguments):
    with pytest.raises(ValueError, match="make_linked"):
        make_linked(**{"n_samples": 100, "n_features": 40, **arguments})


def test_the_demo_compares_what_it_says(capsys):
    rows = run_demo(seed=0)
    printed = capsys.readouterr().out
    expected = {name: methods for name, (_, _, methods) in demo_datasets(seed=0).items()}
    assert [(r["dataset"], r["method"]) for r in rows] == [
        (name, method) for name, methods in expected.items() for method in methods
    ]
    assert len(printed.splitlines()) == 2 + len(rows)
    for row in rows:
        assert 0 < row["log_loss"] < 2 and 0 <= row["ece"] <= 1 and 0 < row["accuracy"] <= 1
    by = {(r["dataset"].split()[0], r["method"]): r for r in rows}
    # scikit-learn's add-one model and hebnb's agree on digits, where every test value was
    # seen in training (they differ only by SPEC's add-one class prior)
    assert by["digits", "sklearn"]["accuracy"] == by["digits", "laplace"]["accuracy"]
    assert by["digits", "sklearn"]["log_loss"] == pytest.approx(
        by["digits", "laplace"]["log_loss"], abs=1e-3
    )
    # learned smoothing calibrates the high-cardinality set, the two-level AODE the linked one
    assert by["synthetic", "heb-m"]["ece"] < by["synthetic", "sklearn"]["ece"]
    assert by["linked", "heb-aode"]["log_loss"] < by["linked", "aode"]["log_loss"]
