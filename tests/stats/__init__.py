"""Tests for steadyeval.stats."""
