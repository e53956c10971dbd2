"""Every warning an estimator raises names the user's line (this file), whatever the
route to it: ``fit`` or ``partial_fit``, scikit-learn's ``_fit_context``, the thread-safe
update, a helper shared by two estimators. Before ``hebnb._warnings.warn`` most of them
named a line inside hebnb or scikit-learn."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import hebnb
from hebnb import (
    AODE,
    BernoulliNB,
    CategoricalNB,
    ComplementNB,
    MultinomialNB,
)

rng = np.random.default_rng(0)
FRAME = pd.DataFrame(rng.integers(0, 3, (60, 3)), columns=["a", "b", "c"])
LABELS = np.arange(60) % 2
COUNTS = rng.poisson(1.0, (40, 5))


def raised_here(call) -> list[warnings.WarningMessage]:
    """The warnings ``call`` raises; fails unless every one names this file."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    assert caught, "no warning was raised"
    places = [(w.category.__name__, w.filename, w.lineno) for w in caught]
    assert all(w.filename == __file__ for w in caught), places
    return caught


def unconverged(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes the core's ``name`` report every solve of its dict as not converged."""
    solve = getattr(hebnb._core, name)

    def not_converged(*args, **kwargs):
        fit = dict(solve(*args, **kwargs))
        fit["converged"] = np.zeros_like(fit["converged"])
        return fit

    monkeypatch.setattr(hebnb._core, name, not_converged)


@pytest.mark.parametrize("estimator", [CategoricalNB(), AODE()], ids=["nb", "aode"])
def test_feature_name_and_label_shape_warnings(estimator):
    model = estimator.fit(FRAME, LABELS)
    raised_here(lambda: model.predict_proba(FRAME.to_numpy()))
    raised_here(lambda: model.partial_fit(FRAME.to_numpy(), LABELS))
    caught = raised_here(lambda: type(estimator)().fit(FRAME, LABELS.reshape(-1, 1)))
    assert "column-vector y" in str(caught[0].message)


def test_positional_parameters_and_weight_fits():
    raised_here(lambda: CategoricalNB("laplace"))
    caught = raised_here(
        lambda: CategoricalNB(weighting="cll-value", weighting_tol=1e-30).fit(FRAME, LABELS)
    )
    assert "L-BFGS" in str(caught[0].message)


@pytest.mark.parametrize(
    "estimator, solver",
    [
        (MultinomialNB(), "fit_token_distributions"),
        (ComplementNB(), "fit_token_distributions"),
        (BernoulliNB(), "fit_binary_features"),
    ],
    ids=["multinomial", "complement", "bernoulli"],
)
def test_text_models_warn_of_unconverged_solves(estimator, solver, monkeypatch):
    unconverged(solver, monkeypatch)
    raised_here(lambda: estimator.fit(COUNTS, LABELS[:40]))
    raised_here(lambda: estimator.partial_fit(COUNTS, LABELS[:40]))


def test_categorical_and_aode_warn_of_unconverged_solves(monkeypatch):
    core = hebnb._core
    fit_concentrations, fit_aode = core.fit_concentrations, core.fit_aode

    def nb_unconverged(*args, **kwargs):
        concentration, log_evidence, n_iter, converged = fit_concentrations(*args, **kwargs)
        return concentration, log_evidence, n_iter, np.zeros_like(converged)

    def aode_unconverged(*args, **kwargs):
        return {**fit_aode(*args, **kwargs), "n_not_converged": 3}

    monkeypatch.setattr(core, "fit_concentrations", nb_unconverged)
    monkeypatch.setattr(core, "fit_aode", aode_unconverged)
    for estimator in (CategoricalNB(), AODE()):
        caught = raised_here(lambda model=estimator: model.fit(FRAME, LABELS))
        assert "did not converge" in str(caught[0].message)
