"""Tiny models whose tokenizers know the toy task's words (built once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
