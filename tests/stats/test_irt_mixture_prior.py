"""The Beta prior on the broken share of :mod:`steadyeval.stats._irt_mixture` (issue 21)."""

from __future__ import annotations

import pytest

from steadyeval.stats._irt_mixture import gap, low_prior


def test_low_prior_follows_the_gap_schedule() -> None:
    """Beta(1, 9) up to 1.5 cells per row, Beta(2, 8) from 2.5 on, linear in between (the
    same ramp as the components' gap)."""
    assert low_prior(1.0) == low_prior(1.5) == (1.0, 9.0)
    assert low_prior(2.0) == pytest.approx((1.5, 8.5))
    assert low_prior(2.5) == low_prior(10.0) == (2.0, 8.0)
    for cells in (1.0, 1.8, 2.2, 3.0):
        a, b = low_prior(cells)
        assert a + b == pytest.approx(10.0)  # always worth 10 rows
        share = (gap(cells) - gap(1.0)) / (gap(10.0) - gap(1.0))
        assert (a - 1.0) == pytest.approx(share)
