"""Warnings that name the user's line: the first caller outside hebnb and scikit-learn.

A fixed ``stacklevel`` counts frames, and the frames between a warning and the user's
call change with the route (``fit`` or ``partial_fit``, scikit-learn's ``_fit_context``,
the thread-safe update of :class:`hebnb._base.ThreadSafeModel`, a helper shared by two
estimators). Counted by hand, most of them pointed inside the package."""

from __future__ import annotations

import os
import sys
import warnings

import sklearn

#: Folders whose frames are skipped: hebnb's (``evaluation`` included) and
#: scikit-learn's (its wrappers and validation around every estimator method).
_LIBRARY_FOLDERS = tuple(
    os.path.dirname(os.path.abspath(path)) + os.sep for path in (__file__, sklearn.__file__)
)


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` at the first caller outside hebnb and scikit-learn (the
    outermost frame if every caller is inside, as for the ``hebnb`` command)."""
    frame = sys._getframe(1)
    level = 2  # 1 is this function, 2 its caller
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_LIBRARY_FOLDERS):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
