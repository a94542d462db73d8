from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Under pytest-xdist each worker runs one test at a time on its share of the cores: one
# thread each for BLAS, OpenMP and torch (also for the processes tests start), instead of
# every worker's libraries spreading over all cores and contending.
if "PYTEST_XDIST_WORKER" in os.environ:
    for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, "1")

# Tests never reach a hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(autouse=True)
def _fresh_server_probes() -> None:
    """The openai backend keeps each server's profile and probed capabilities for the
    process, keyed by its URL. Test servers listen on ephemeral ports, and a later test's
    server can get a port a finished one had, with other behaviour (e.g. max_tokens=0
    generating): without this, it would inherit the earlier server's probe results."""
    probe = sys.modules.get("steadyeval.models._openai_probe")
    if probe is not None:
        probe._PROFILES.clear()
        probe._CAPABILITIES.clear()


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


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """One torch thread for a module's tests: tiny models train much faster without thread
    contention on a shared machine; the count is restored after the module."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
