"""hebnb: Naive Bayes for categorical data whose smoothing is learned from the data."""

from .aode import AODE
from .naive_bayes import CategoricalNB

__all__ = ["AODE", "CategoricalNB"]
__version__ = "0.1.0"
