"""A hub model's weights are downloaded on first use, not when the backend opens: a run that
fails on its data or config, or a dry run of a study whose design reads the data, has not
fetched gigabytes first. ``huggingface_hub.snapshot_download`` is replaced by a stand-in
hub that serves a tiny model's files into a local snapshot folder, copying only the files
the call's ``allow_patterns`` match, and records each call."""

from __future__ import annotations

import fnmatch
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from steadyeval import DataError, ModelSpecError
from steadyeval.models import load_backend, parse_model_spec
from steadyeval.requests import ScoreRequest
from steadyeval.studies import run_study

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class StandInHub:
    """``snapshot_download`` over one repository whose files are those of ``source``."""

    def __init__(self, source: Path, root: Path) -> None:
        self.source, self.root = source, root
        self.calls: list[tuple[str, str | None, list[str]]] = []
        self.fail_weights = 0  # how many weights downloads fail (a dropped connection)

    def __call__(
        self,
        repo_id: str,
        *,
        revision: str | None = None,
        local_files_only: bool = False,
        allow_patterns: list[str] | None = None,
        **_: Any,
    ) -> str:
        patterns = list(allow_patterns or ["*"])
        self.calls.append((repo_id, revision, patterns))
        if "*.safetensors" in patterns and self.fail_weights:
            self.fail_weights -= 1
            raise ConnectionError("connection reset by peer")
        assert revision in (None, COMMIT), revision  # a branch, or the commit it resolved to
        snapshot = self.root / f"models--{repo_id.replace('/', '--')}" / "snapshots" / COMMIT
        snapshot.mkdir(parents=True, exist_ok=True)
        for f in self.source.iterdir():
            if any(fnmatch.fnmatch(f.name, p) for p in patterns):
                shutil.copy2(f, snapshot / f.name)
        return str(snapshot)

    def weights_fetched(self) -> bool:
        return any("*.safetensors" in p for _, _, p in self.calls)


@pytest.fixture
def hub(tmp_path: Path, tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch) -> StandInHub:
    import huggingface_hub

    stand_in = StandInHub(tiny_gpt2, tmp_path / "hub")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", stand_in)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # no folder named like the hub id
    return stand_in


def test_opening_a_hub_model_fetches_no_weights(hub: StandInHub, tiny_gpt2: Path) -> None:
    b = load_backend("hf:owner/Name-0.5B")
    assert not hub.weights_fetched()
    assert not list(b.model_dir.glob("*.safetensors"))  # type: ignore[attr-defined]
    assert b.tokenizer is not None and b.capabilities.max_length > 0
    assert b.identity() == f"hf:owner/Name-0.5B@{COMMIT[:12]}"  # named by commit: no weights
    assert not hub.weights_fetched()

    request = [ScoreRequest("The sky is", " blue")]
    scored = b.score(request)
    # the second call is pinned to the commit the first resolved, and brings the weights
    assert hub.calls[-1][1] == COMMIT and "*.safetensors" in hub.calls[-1][2]
    assert len(hub.calls) == 2
    local = load_backend(f"hf:{tiny_gpt2}")
    assert scored[0].logprob == pytest.approx(local.score(request)[0].logprob, abs=1e-6)
    b.score(request)
    assert len(hub.calls) == 2  # fetched once


def test_the_fingerprint_fetches_the_weights_it_hashes(hub: StandInHub) -> None:
    late = load_backend("hf:owner/Name-0.5B").fingerprint()
    assert hub.weights_fetched()
    assert load_backend("hf:owner/Name-0.5B").fingerprint() == late  # as if there from the start


def test_a_bad_data_row_fails_before_any_weights(hub: StandInHub, tmp_path: Path) -> None:
    data = tmp_path / "items.jsonl"
    good = {"id": "q0", "question": "1 + 1?", "options": ["2", "3"], "answer": 0}
    data.write_text(json.dumps(good) + "\n" + '{"id": "q1", "question": 5}\n')
    config = {"models": ["hf:owner/Name-0.5B"], "data": str(data), "n_formats": 4, "budget": 4}
    with pytest.raises(DataError, match=r"items\.jsonl.*line 2"):
        run_study("spread", config, dry_run=True)
    assert not hub.calls  # the data are read before the model opens: nothing fetched at all
    data.write_text(json.dumps(good) + "\n")  # good data: the study's dry run fetches none
    counts = run_study("spread", config, dry_run=True)
    assert not hub.weights_fetched()
    assert counts.unread == [f"hf:owner/Name-0.5B@{COMMIT[:12]}"]  # type: ignore[union-attr]


def test_a_snapshot_without_weights_is_a_clear_error(
    hub: StandInHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Offline with only the small files cached (or a repository of pickled .bin weights):
    the error says which model and why, not transformers' missing-file message."""
    b = load_backend("hf:owner/Name-0.5B")
    bare = tmp_path / "bare"
    shutil.copytree(hub.source, bare, ignore=shutil.ignore_patterns("*.safetensors"))
    hub.source = bare
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        ModelSpecError, match=r"owner/Name-0\.5B.*lacks its \.safetensors weights.*HF_HUB_OFFLINE"
    ):
        b.score([ScoreRequest("The sky is", " blue")])


def test_vllm_fetches_the_weights_when_its_engine_starts(hub: StandInHub) -> None:
    from steadyeval.models._vllm import VLLMBackend
    from tests.models import vllm_standin

    b = VLLMBackend(parse_model_spec("vllm:owner/Name-0.5B"), engine_module=vllm_standin)
    assert b.count_tokens(["The sky is blue"]) and not hub.weights_fetched()
    b.score([ScoreRequest("The sky is", " blue")])
    assert hub.weights_fetched() and hub.calls[-1][1] == COMMIT


def test_a_snapshot_already_complete_asks_the_hub_nothing_more(hub: StandInHub) -> None:
    """Weights in the cache from an earlier run: no second hub call (offline nodes that
    forgot HF_HUB_OFFLINE waited on retries for each model)."""
    b = load_backend("hf:owner/Name-0.5B")
    for f in hub.source.glob("*.safetensors"):
        shutil.copy2(f, b.model_dir / f.name)  # type: ignore[attr-defined]
    b.fingerprint()
    b.score([ScoreRequest("The sky is", " blue")])
    assert len(hub.calls) == 1 and not hub.weights_fetched()


def test_a_failed_download_names_the_model_and_is_not_taken_for_no_packing(
    hub: StandInHub, caplog: pytest.LogCaptureFixture
) -> None:
    """The first model access sits inside packed scoring's check, which reads any error as
    "this architecture cannot pack": a dropped download must not switch packing off."""
    import logging

    caplog.set_level(logging.INFO, logger="steadyeval")
    hub.fail_weights = 1
    b = load_backend("hf:owner/Name-0.5B")
    with pytest.raises(
        ModelSpecError,
        match=r"owner/Name-0\.5B \(commit 0123456789ab\) was "
        r"opened, but its weights could not be downloaded \(ConnectionError",
    ):
        b.score([ScoreRequest("The sky is", " blue")])
    assert not [r for r in caplog.records if "unavailable" in r.getMessage()]
    b.score([ScoreRequest("The sky is", " blue")])  # the hub is back
    assert b._packing is not False  # type: ignore[attr-defined]
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("downloading the weights of hf:owner/Name-0.5B") for m in said)
    assert any(m.startswith("downloaded the weights of hf:owner/Name-0.5B in ") for m in said)


def test_missing_shards_are_named(hub: StandInHub, tmp_path: Path) -> None:
    """A sharded snapshot with a shard absent (offline, a partial cache): an error naming
    the model and the shard, not a FileNotFoundError from the loader."""
    b = load_backend("hf:owner/Name-0.5B")
    index = {
        "metadata": {},
        "weight_map": {
            "a": "model-00001-of-00002.safetensors",
            "b": "model-00002-of-00002.safetensors",
        },
    }
    (b.model_dir / "model.safetensors.index.json").write_text(json.dumps(index))  # type: ignore[attr-defined]
    (b.model_dir / "model-00001-of-00002.safetensors").write_bytes(b"x")  # type: ignore[attr-defined]
    with pytest.raises(
        ModelSpecError,
        match=r"lacks 1 of its 2 weight shards "
        r"\(model-00002-of-00002\.safetensors\)",
    ):
        b.fingerprint()


def test_a_folder_made_later_does_not_turn_a_hub_model_local(hub: StandInHub) -> None:
    """Local or hub is decided when the model is opened: a folder named like the hub id
    created afterwards must not skip the weights (a cache key over no weights)."""
    b = load_backend("hf:owner/Name-0.5B")
    Path("owner/Name-0.5B").mkdir(parents=True)
    assert b.identity() == f"hf:owner/Name-0.5B@{COMMIT[:12]}"
    b.fingerprint()
    assert hub.weights_fetched()


@pytest.mark.parametrize("broken", ["empty index", "dangling link"])
def test_weights_that_are_not_there_are_not_taken_as_there(
    hub: StandInHub, tmp_path: Path, broken: str
) -> None:
    """An index listing no shards, or a cache link whose blob was deleted to free space:
    offline, an error naming the model (the fingerprint hashed no weights before)."""
    b = load_backend("hf:owner/Name-0.5B")
    if broken == "empty index":
        index = {"metadata": {}, "weight_map": {}}
        (b.model_dir / "model.safetensors.index.json").write_text(json.dumps(index))  # type: ignore[attr-defined]
        what = "lists none"
    else:
        (b.model_dir / "model.safetensors").symlink_to(tmp_path / "deleted-blob")  # type: ignore[attr-defined]
        what = "lacks its .safetensors weights"
    hub.source = tmp_path  # the hub has nothing more to give
    with pytest.raises(ModelSpecError, match=rf"owner/Name-0\.5B.*{what}"):
        b.fingerprint()


def test_a_dry_run_downloads_no_weights_and_says_what_it_did_not_count(
    hub: StandInHub, tmp_path: Path
) -> None:
    """A dry run sends nothing, and downloads nothing large: the cache key of a model whose
    weights are not here hashes them, so its cached responses are not looked up (counted
    as to send, and said). Once a run has the weights, a dry run counts the cache again."""
    from click.testing import CliRunner

    from steadyeval.cli import main

    data = tmp_path / "items.jsonl"
    rows = [{"id": f"q{i}", "question": f"{i} + 1?", "options": ["1", "2"], "answer": 0}
            for i in range(3)]  # fmt: skip
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["run", "--model", "hf:owner/Name-0.5B", "--data", str(data), "--no-progress"]
    argv += ["--cache", str(tmp_path / "cache.sqlite")]
    dry = CliRunner().invoke(main, [*argv, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert not hub.weights_fetched()
    name = f"hf:owner/Name-0.5B@{COMMIT[:12]}"
    assert f"{name}: its cache key needs files not downloaded yet" in dry.output
    assert f"{name}: unique 6 · cached 0 · to send 6" in dry.output
    done = CliRunner().invoke(main, [*argv, "--out", str(tmp_path / "run")])
    assert done.exit_code == 0, done.output
    assert hub.weights_fetched()
    again = CliRunner().invoke(main, [*argv, "--dry-run"])
    assert again.exit_code == 0, again.output
    assert "not downloaded" not in again.output
    assert f"{name}: unique 6 · cached 6 · to send 0" in again.output


def test_a_model_listed_twice_is_refused_before_any_weights(
    hub: StandInHub, tmp_path: Path
) -> None:
    """Two specs of one hub model (another run setting) are one model: comparing their
    fingerprints would download the weights first; the commit in the identity suffices."""
    from click.testing import CliRunner

    from steadyeval.cli import main

    data = tmp_path / "items.jsonl"
    data.write_text(
        json.dumps({"id": "q", "question": "1 + 1?", "options": ["2", "3"], "answer": 0}) + "\n"
    )
    argv = ["run", "--data", str(data), "--dry-run", "--model", "hf:owner/Name-0.5B"]
    refused = CliRunner().invoke(main, [*argv, "--model", "hf:owner/Name-0.5B?batch_size=2"])
    assert refused.exit_code == 2 and "a model is listed twice" in refused.output
    assert hub.calls and not hub.weights_fetched()
