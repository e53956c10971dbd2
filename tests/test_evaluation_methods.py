"""Method names -> estimators, and clear errors for unknown methods."""

from __future__ import annotations

import pytest

import hebnb
from hebnb.evaluation.methods import (
    METHODS,
    PAPER_SMOOTHERS,
    UnknownMethodError,
    check_methods,
    make_estimator,
)


def test_paper_smoothers_use_the_papers_settings():
    expected = {
        "laplace": {"smoothing": "laplace"},
        "lidstone": {"smoothing": "lidstone", "alpha": 0.1},
        "kt": {"smoothing": "kt"},
        "m-estimate": {"smoothing": "m-estimate", "m": 2.0},
        "target-encoding": {"smoothing": "target-encoding", "m": 10.0},
        "heb-u": {"smoothing": "heb-u"},
        "heb-m": {"smoothing": "heb-m"},
    }
    assert set(PAPER_SMOOTHERS) == set(expected)
    for name, params in expected.items():
        model = make_estimator(name)
        assert isinstance(model, hebnb.CategoricalNB)
        assert {key: model.get_params()[key] for key in params} == params


def test_overrides_and_fresh_estimators():
    first, second = make_estimator("heb-m", n_jobs=1), make_estimator("heb-m")
    assert first is not second and first.get_params()["n_jobs"] == 1


def test_names_from_a_string_without_duplicates():
    assert check_methods("laplace, heb-m,laplace") == ["laplace", "heb-m"]


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(UnknownMethodError, match="unknown method.*naive.*known: laplace"):
        check_methods(["naive"])
    with pytest.raises(UnknownMethodError, match="no method"):
        check_methods("")


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_builds_its_estimator_with_its_parameters(name):
    method = METHODS[name]
    model = make_estimator(name)
    assert type(model).__name__ == method.estimator
    assert {key: model.get_params()[key] for key in method.params} == method.params


def test_weighted_methods_use_sqrt_mi_feature_weighting():
    assert make_estimator("heb-m+gr").get_params()["feature_weighting"] == "sqrt-mi"
    assert make_estimator("cawnb").get_params()["smoothing"] == "laplace"


def test_rank_groups_separate_the_papers_smoothers():
    from hebnb.evaluation.report import rank_groups

    assert rank_groups(["laplace", "heb-m"]) == {"all": ["laplace", "heb-m"]}
    groups = rank_groups(["laplace", "kt", "heb-m", "aode"])
    assert groups == {
        "smoothers": ["laplace", "kt", "heb-m"],
        "all": ["laplace", "kt", "heb-m", "aode"],
    }


def test_name_value_sets_the_fixed_parameter():
    assert make_estimator("lidstone:0.001").get_params()["alpha"] == 0.001
    assert make_estimator("m-estimate:5").get_params()["m"] == 5.0
    assert make_estimator("target-encoding:20").get_params()["m"] == 20.0
    assert check_methods("lidstone:0.5,lidstone") == ["lidstone:0.5", "lidstone"]
    for bad in ("lidstone:-1", "lidstone:abc", "kt:2", "lidstone:"):
        with pytest.raises(UnknownMethodError):
            check_methods([bad])


def test_labels_of_tuned_methods():
    from hebnb.evaluation.methods import resolve_method

    assert resolve_method("lidstone:0.01").label == "Lidstone (alpha=0.01)"
    assert resolve_method("target-encoding:20").label == "TE (m=20)"
    # two values never share a label (the report's tables are keyed by it: a method
    # went missing from them)
    assert resolve_method("lidstone:0.1000001").label == "Lidstone (alpha=0.1000001)"
    assert resolve_method("lidstone:0.1").label == "Lidstone (alpha=0.1)"


def test_discriminative_and_posterior_methods_build_their_estimators():
    assert make_estimator("heb-m+cll-value").get_params()["weighting"] == "cll-value"
    assert make_estimator("heb-m+cll-feature").get_params()["weighting"] == "cll-feature"
    assert make_estimator("laplace+cll-value").get_params()["smoothing"] == "laplace"
    posterior = make_estimator("heb-m-posterior").get_params()
    assert posterior["concentration_estimate"] == "posterior-average"


def test_names_of_the_same_settings_are_one_method():
    """``lidstone``, ``lidstone:0.1`` and ``lidstone:0.10`` were three methods fitted
    alike under one label: the report's tables, keyed by label, showed one column for
    the three."""
    assert check_methods("lidstone,lidstone:0.1,lidstone:0.10,laplace") == [
        "lidstone",
        "laplace",
    ]
    assert check_methods(["m-estimate:2", "m-estimate", "m-estimate:2.0"]) == ["m-estimate:2"]
    assert check_methods("target-encoding,target-encoding:10,mnb-lidstone:0.1,mnb-lidstone") == [
        "target-encoding",
        "mnb-lidstone:0.1",
    ]
    # other values stay methods of their own
    assert check_methods("lidstone,lidstone:0.2,m-estimate:2.5") == [
        "lidstone",
        "lidstone:0.2",
        "m-estimate:2.5",
    ]


def test_distinct_methods_never_share_a_label():
    from hebnb.evaluation.methods import TUNABLE, resolve_method

    names = [*METHODS]
    for base in TUNABLE:
        names += [f"{base}:{value}" for value in ("0.1", "0.10", "1", "2", "2.0", "10", "1e-3")]
    kept = check_methods(names)
    labels = [resolve_method(name).label for name in kept]
    assert len(set(labels)) == len(labels), sorted(labels)
    # and what check_methods merged are the names that fit the same estimator alike
    for name in names:
        method = resolve_method(name)
        alike = [
            other
            for other in kept
            if resolve_method(other).estimator == method.estimator
            and resolve_method(other).params == method.params
        ]
        assert len(alike) == 1, (name, alike)
