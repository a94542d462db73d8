"""Error and warning types raised by :mod:`steadyeval.stats`."""

from __future__ import annotations

__all__ = ["StatsInputError", "StatsWarning"]


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
