"""hebnb: Naive Bayes for categorical data whose smoothing is learned from the data."""

from ._core import __version__ as __version__
from .aode import AODE
from .bernoulli import BernoulliNB
from .dirichlet_groups import EmpiricalBayesDirichletClassifier
from .gaussian import GaussianNB
from .mixed import MixedNB
from .multinomial import ComplementNB, MultinomialNB
from .naive_bayes import CategoricalNB

__all__ = [
    "AODE",
    "BernoulliNB",
    "CategoricalNB",
    "ComplementNB",
    "EmpiricalBayesDirichletClassifier",
    "GaussianNB",
    "MixedNB",
    "MultinomialNB",
]
