"""hebnb: Naive Bayes for categorical data whose smoothing is learned from the data."""

from ._core import __version__ as __version__
from .aode import AODE
from .dirichlet_groups import EmpiricalBayesDirichletClassifier
from .naive_bayes import CategoricalNB

__all__ = ["AODE", "CategoricalNB", "EmpiricalBayesDirichletClassifier"]
