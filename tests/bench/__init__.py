"""Tests for the benchmark helpers in bench/ (benchmarks themselves are never tests)."""
