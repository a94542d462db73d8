"""Error and warning types raised by :mod:`steadyeval.stats`."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TypeVar

__all__ = ["StatsInputError", "StatsWarning", "quietly"]

T = TypeVar("T")


class StatsInputError(ValueError):
    """Input that a statistical function cannot use.

    The message says what was wrong with the input and what to pass instead.
    """


class StatsWarning(UserWarning):
    """A result could not be computed from degenerate input and was returned as NaN.

    Raised (as a warning) for input that is valid but carries no information for the
    requested quantity, for example zero discordant pairs in McNemar's test or a single
    cluster in a clustered standard error.
    """


def quietly(fn: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``fn(*args, **kwargs)`` with its :class:`StatsWarning` silenced.

    Notes
    -----
    For callers that show a degenerate result's NaN themselves (a report's "–", a note);
    only :class:`StatsWarning` is silenced, and only for this call. Errors still raise.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.quietly(stats.mcnemar, 0, 0)  # no discordant pairs: NaN, no warning
    >>> r.pvalue != r.pvalue
    True
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        return fn(*args, **kwargs)
