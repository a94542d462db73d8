"""Tiny models whose tokenizers know the toy task's words (built once per session)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from steadyeval.models._tiny import DEFAULT_CORPUS, build_tiny_model

from .toy import CORPUS_EXTRA


@pytest.fixture(scope="session")
def toy_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("toy-models")
    return build_tiny_model(root / "bert", "bert", corpus=[*DEFAULT_CORPUS, *CORPUS_EXTRA])


@pytest.fixture(scope="session")
def toy_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("toy-models")
    return build_tiny_model(root / "gpt2", "gpt2", corpus=[*DEFAULT_CORPUS, *CORPUS_EXTRA])


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Tiny models train much faster on one thread on a shared machine; restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
