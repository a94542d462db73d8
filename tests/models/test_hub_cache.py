"""The hub path, walked offline (issue 38, points 1 and 3): hub ids resolved from a local
Hugging Face cache laid out as ``huggingface_hub`` and ``datasets`` lay it out
(``tests/models/_hub_cache.py``), with ``HF_HUB_OFFLINE=1``, through the public loaders and
once through the CLI. Hub ids with a dot in their last part were taken for missing local
files (``Path(name).suffix``); every test here named such an id fails on that logic."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from steadyeval import DataError, ModelSpecError
from steadyeval.items import load_items
from steadyeval.models import build_tiny_model, load_backend, model_folder
from tests.models._hub_cache import HubCache, use_hub_cache

ROOT = Path(__file__).resolve().parents[2]

#: Hub ids as users write them: dots in the last part, a bare name, odd but valid characters.
HUB_IDS = [
    "owner/Name-0.5B",
    "Qwen/Qwen2.5-0.5B",
    "meta-llama/Llama-3.1-8B",
    "microsoft/phi-3.5-mini",
    "openai-community/gpt2",
    "gpt2",
    "gpt-4.1",
    "o_wn.er/x_y.Z-1",
]


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HubCache:
    """An empty offline cache this process uses, and a working directory with nothing in it
    (a folder named like a hub id would be taken for the model)."""
    hub = HubCache(tmp_path / "hf")
    use_hub_cache(hub, monkeypatch)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return hub


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "t5", "t5", seed=0)


@pytest.mark.parametrize("name", HUB_IDS)
def test_hub_id_resolves_to_its_snapshot(cache: HubCache, tiny_gpt2: Path, name: str) -> None:
    commit = cache.add_model(name, tiny_gpt2)
    snapshot = cache.hub / f"models--{name.replace('/', '--')}" / "snapshots" / commit
    b = load_backend(f"hf:{name}?dtype=bfloat16")
    assert b.model_dir == snapshot  # type: ignore[attr-defined]
    assert b.identity() == f"hf:{name}@{commit[:12]}?dtype=bfloat16"
    assert load_backend(f"hf-causal:{name}").identity() == f"hf:{name}@{commit[:12]}"
    assert model_folder(f"hf:{name}") == snapshot


def test_seq2seq_masked_and_vllm_specs_resolve(
    cache: HubCache, tiny_gpt2: Path, tiny_bert: Path, tiny_t5: Path
) -> None:
    t5 = cache.add_model("google/t5-v1.1-tiny.2", tiny_t5)
    bert = cache.add_model("owner/bert-1.0", tiny_bert)
    gpt2 = cache.add_model("owner/Name-0.5B", tiny_gpt2)
    seq2seq = load_backend("hf-seq2seq:google/t5-v1.1-tiny.2")
    assert seq2seq.identity() == f"hf:google/t5-v1.1-tiny.2@{t5[:12]}"
    assert type(load_backend("hf:google/t5-v1.1-tiny.2")) is type(seq2seq)  # hf: picks it
    masked = load_backend("hf-masked:owner/bert-1.0?max_length=64")
    assert masked.identity() == f"hf:owner/bert-1.0@{bert[:12]}?max_length=64"
    assert masked.capabilities.fills_slots
    # vllm is not installed: the spec resolves (folder, identity, fingerprint) without it.
    vllm = load_backend("vllm:owner/Name-0.5B?tensor_parallel_size=2")
    assert vllm.identity() == f"vllm:owner/Name-0.5B@{gpt2[:12]}"
    assert vllm.model_dir.name == gpt2  # type: ignore[attr-defined]
    assert "vllm" not in sys.modules


def test_revision_picks_a_snapshot(cache: HubCache, tiny_gpt2: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(tiny_gpt2, other)
    (other / "generation_config.json").write_text('{"do_sample": false}')
    old = cache.add_model("owner/Name-0.5B", other, branch=None)
    new = cache.add_model("owner/Name-0.5B", tiny_gpt2)  # refs/main
    assert old != new
    assert load_backend("hf:owner/Name-0.5B").identity() == f"hf:owner/Name-0.5B@{new[:12]}"
    pinned = load_backend(f"hf:owner/Name-0.5B?revision={old}")
    assert pinned.model_dir.name == old  # type: ignore[attr-defined]
    assert pinned.identity() == f"hf:owner/Name-0.5B@{old[:12]}"
    assert pinned.fingerprint() != load_backend("hf:owner/Name-0.5B").fingerprint()


def test_a_folder_on_disk_wins_over_a_hub_id(cache: HubCache, tiny_gpt2: Path) -> None:
    cache.add_model("owner/Name-0.5B", tiny_gpt2)
    shutil.copytree(tiny_gpt2, Path("owner/Name-0.5B"))
    b = load_backend("hf:owner/Name-0.5B")
    assert b.model_dir == Path("owner/Name-0.5B")  # type: ignore[attr-defined]
    assert b.identity().startswith("hf:Name-0.5B#")  # a local folder: name and content digest


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("hf:owner/Missing-1.5", "not in the local hub cache"),
        ("hf-seq2seq:Missing.7", "not in the local hub cache"),
        ("vllm:owner/Missing-1.5?dtype=float16", "not in the local hub cache"),
        ("hf:owner/Name-0.5B?revision=0123456789abcdef0123456789abcdef01234567", "revision"),
        ("hf:a--b", "not a hub id"),
        ("hf:-x/y", "not a hub id"),
        ("hf:x/y.git", "not a hub id"),
        pytest.param("hf:" + "a" * 97, "not a hub id", id="97-characters"),
        ("hf:é/x", "not a hub id"),
        ("hf:./no/such/model", "does not exist"),
        ("hf:a/b/c", "does not exist"),
        ("hf:~/no-such-model-here", "does not exist"),
        pytest.param("hf:" + "a" * 5000, "not a hub id", id="5000-characters"),
    ],
)
def test_what_the_cache_lacks_is_a_clear_error(
    cache: HubCache, tiny_gpt2: Path, spec: str, message: str
) -> None:
    cache.add_model("owner/Name-0.5B", tiny_gpt2)
    with pytest.raises(ModelSpecError, match=message) as info:
        load_backend(spec)
    text = str(info.value)
    assert "\n" not in text and len(text) < 1000, text
    if "hub cache" in message:
        assert str(cache.hub) in text and "HF_HUB_OFFLINE" in text


def test_cli_runs_a_dotted_hub_id_end_to_end(tmp_path: Path, tiny_gpt2: Path) -> None:
    """``steadyeval run --model hf:owner/Name.5B --data examples/items.jsonl``, as a user
    runs it: a new process that finds the cache through ``HF_HOME`` alone (the hub cache is
    where huggingface_hub puts it by default, ``HF_HOME/hub``)."""
    cache = HubCache(tmp_path / "hf")
    commit = cache.add_model("owner/Name.5B", tiny_gpt2)
    env = {**os.environ, **cache.env(), "STEADYEVAL_CACHE": str(tmp_path / "responses.sqlite")}
    for derived in ("HF_HUB_CACHE", "HF_DATASETS_CACHE", "HUGGINGFACE_HUB_CACHE"):
        env.pop(derived, None)
    out = tmp_path / "run"
    argv = ["run", "--model", "hf:owner/Name.5B", "--data", "examples/items.jsonl"]
    proc = subprocess.run(
        [sys.executable, "-m", "steadyeval", *argv, "--out", str(out), "-q"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    models = set(pq.read_table(out / "results.parquet").column("model").to_pylist())
    assert models == {f"hf:owner/Name.5B@{commit[:12]}"}


_ROWS = [
    {"id": "q1", "question": "What is 2+2?", "options": ["3", "4"], "answer": 1},
    {"id": "q2", "question": "Capital of France?", "options": ["Paris", "Rome"], "answer": 0},
]


def test_hub_data_set_with_a_dot_loads_from_the_datasets_cache(cache: HubCache) -> None:
    cache.add_dataset("teknium/OpenHermes-2.5", {"test": _ROWS, "train": _ROWS[:1]})
    items = load_items("teknium/OpenHermes-2.5")
    assert [(i.id, i.gold_options) for i in items] == [("q1", (1,)), ("q2", (0,))]
    assert [i.id for i in load_items("teknium/OpenHermes-2.5", split="train")] == ["q1"]


def test_mmlu_style_hub_names_load_from_the_datasets_cache(cache: HubCache) -> None:
    rows = [
        {"question": f"Q{k}?", "subject": "anatomy", "choices": ["a", "b", "c", "d"], "answer": k}
        for k in range(4)
    ]
    for name in ("cais/mmlu", "owner/mmlu-1.0"):
        cache.add_dataset(name, {"test": rows, "dev": rows[:2]}, config="anatomy")
        items = load_items(name, loader="mmlu", subjects=["anatomy"])
        assert [i.gold_options for i in items] == [(0,), (1,), (2,), (3,)], name
        assert {i.metadata["subject"] for i in items} == {"anatomy"}


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("owner/not-cached-1.5", "could not load data set"),
        ("a--b", "not a hub data set name"),
        ("nope.jsonl", "file not found"),
        ("a/b/c", "file not found"),
        pytest.param("a" * 5000, "not a hub data set name", id="5000-characters"),
    ],
)
def test_data_sources_the_cache_lacks_are_clear_errors(
    cache: HubCache, source: str, message: str
) -> None:
    with pytest.raises(DataError, match=message) as info:
        load_items(source)
    assert "\n" not in str(info.value) and len(str(info.value)) < 1000
