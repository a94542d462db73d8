"""Upper bounds on numbers a user gives steadyeval (seeds, training lengths, devices), stated
once so that the configs (which name the flag or key), the library's own checks and the
messages agree. Each bound is far above any honest value and far below what would hang a
run or exhaust memory; none allocates anything.
"""

from __future__ import annotations

__all__ = [
    "DEVICE_PATTERN",
    "MAX_BATCH_SIZE",
    "MAX_LEARNING_RATE",
    "MAX_LIST",
    "MAX_SEED",
    "MAX_TOKENS",
    "MAX_TRAIN_STEPS",
]

#: Seeds are integers in ``0..MAX_SEED`` (what numpy, torch and Python's ``random`` all take).
MAX_SEED = 2**32 - 1
#: The most entries of a list in a config: models, stop strings, refusal phrases.
MAX_LIST = 1_000
#: Optimiser steps of one training run (a million steps of a tiny model take days).
MAX_TRAIN_STEPS = 1_000_000
#: Examples per optimiser step.
MAX_BATCH_SIZE = 65_536
#: Tokens per training input (``max_length``).
MAX_TOKENS = 1_048_576
#: The largest peak learning rate accepted (AdamW diverges long before it).
MAX_LEARNING_RATE = 10.0
#: Where training runs: ``auto`` (CUDA when available), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.
DEVICE_PATTERN = r"^(auto|cpu|mps|cuda(:[0-9]{1,3})?)$"
