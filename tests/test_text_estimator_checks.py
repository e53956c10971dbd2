"""scikit-learn's estimator checks for the count, binary, continuous and mixed models.

Every check passes; none is expected to fail. The discrete models carry scikit-learn's
``poor_score`` tag as its own MultinomialNB does (the generic accuracy check trains on
Gaussian blobs, not counts)."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from hebnb import BernoulliNB, ComplementNB, GaussianNB, MixedNB, MultinomialNB

ESTIMATORS = [
    MultinomialNB(),
    MultinomialNB(smoothing="laplace"),
    ComplementNB(),
    BernoulliNB(),
    BernoulliNB(smoothing="lidstone", alpha=0.5),
    GaussianNB(),
    MixedNB(),
]


@parametrize_with_checks(ESTIMATORS)
def test_scikit_learn_conformance(estimator, check):
    check(estimator)
