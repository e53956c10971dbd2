"""The usage examples in the docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES_WITH_EXAMPLES = [
    "hebnb.naive_bayes",
    "hebnb.aode",
    "hebnb.dirichlet_groups",
    "hebnb.multinomial",
    "hebnb.bernoulli",
    "hebnb.gaussian",
    "hebnb.mixed",
]


@pytest.mark.parametrize("name", MODULES_WITH_EXAMPLES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
