from __future__ import annotations

import os
from pathlib import Path

import pytest

# Tests never reach a hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own response cache unless it sets one explicitly."""
    monkeypatch.setenv("STEADYEVAL_CACHE", str(tmp_path / "cache.sqlite"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    data = SHARED / "data"
    if not data.is_dir():
        pytest.skip("../shared/data is not present")
    return data


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random GPT-2 written by the product's own builder (session-scoped)."""
    from steadyeval.models._tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "gpt2", "gpt2", seed=0)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT written by the product's own builder (session-scoped)."""
    from steadyeval.models._tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "bert", "bert", seed=0)
