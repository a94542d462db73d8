"""``openai:`` against a real llama-cpp-python server on f32 weights, compared with ``hf:`` on
the same weights; skipped unless ``llama_cpp`` is importable and the converter of its source
distribution is found (``bench/llamacpp_check.sh`` builds both into
``~/.cache/steadyeval/llamacpp``; run this file with that venv's python, or set
``STEADYEVAL_LLAMACPP_SRC`` to the sdist's ``vendor/llama.cpp``). Also: a model folder whose
only tokenizer is a SentencePiece ``tokenizer.model`` fails in one line without
``sentencepiece`` (found while converting models for llama.cpp)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from steadyeval import ModelSpecError, load_backend
from steadyeval.requests import GenerateRequest, ScoreRequest
from tests.models.successor_llama import build_successor_llama

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path.home() / ".cache" / "steadyeval" / "llamacpp" / "src"


def _converter() -> Path | None:
    env = os.environ.get("STEADYEVAL_LLAMACPP_SRC")
    found = [Path(env)] if env else sorted(CACHE.glob("llama_cpp_python-*/vendor/llama.cpp"))
    good = [p / "convert_hf_to_gguf.py" for p in found if (p / "conversion").is_dir()]
    return good[-1] if good else None


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "llamacpp_check", ROOT / "bench/_llamacpp_check.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _serving(folder: Path, work: Path) -> Iterator[str]:
    """``folder`` converted to an f32 GGUF and served by llama-cpp-python: the ``openai:``
    spec that reaches it."""
    converter = _converter()
    assert converter is not None
    bench = _bench()
    gguf = work / f"{folder.name}-f32.gguf"
    subprocess.run(
        [sys.executable, str(converter), str(folder), "--outtype", "f32",
         "--outfile", str(gguf)],
        check=True, capture_output=True,
    )  # fmt: skip
    port = bench._free_port()
    proc = bench._start(sys.executable, str(gguf), port)
    try:
        yield f"openai:tiny?base_url=http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait()


def _need_llama_cpp() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not importable (bench/llamacpp_check.sh builds it)")
    if _converter() is None:
        pytest.skip("convert_hf_to_gguf.py of llama-cpp-python's sdist not found")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    _need_llama_cpp()
    work = tmp_path_factory.mktemp("llamacpp")
    _bench().build(work / "tiny")
    with _serving(work / "tiny", work) as spec:
        yield work / "tiny", spec


@pytest.fixture(scope="module")
def served_successor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The Llama of ``successor_llama`` (Llama-2's tokenizer decoder; it writes " Paris中."
    after a colon), served."""
    _need_llama_cpp()
    work = tmp_path_factory.mktemp("llamacpp-successor")
    folder = build_successor_llama(work / "successor")
    with _serving(folder, work) as spec:
        yield folder, spec


REQUESTS = [
    ScoreRequest("Question: What is the capital of France?\nAnswer:", " Paris"),
    ScoreRequest("Question: What is the capital of France?\nAnswer:", " Rome"),
    ScoreRequest("Question: Which one?\nAnswer:", " 中国"),
    ScoreRequest("Question: Which one?\nAnswer:", " １２３"),
    ScoreRequest("Question: Which one?\nAnswer:", " café"),
    ScoreRequest("Question: Which one?\nAnswer: ", "B"),
]


def test_llama_cpp_server_scores_and_generates_as_hf_does(served: tuple[Path, str]) -> None:
    folder, spec = served
    hf, api = load_backend(f"hf:{folder}"), load_backend(spec)
    want, got = hf.score(REQUESTS), api.score(REQUESTS)
    assert api.profile().name == "llama-cpp-python"
    for r, w, g in zip(REQUESTS, want, got, strict=True):
        assert abs(w.logprob - g.logprob) < 1e-3, r
        assert (g.n_tokens, g.n_input_tokens, g.approximate) == (
            w.n_tokens,
            w.n_input_tokens,
            False,
        )
    bench = _bench()
    gen = [
        GenerateRequest(f"Question: What is the capital of {country}?\nAnswer:{end}", 12)
        for country, _ in bench.CAPITALS
        for end in ("", " ")
    ]
    # The same text, a first token's leading space included (one rule: docs/backends.md).
    assert [x.text for x in api.generate(gen)] == [x.text for x in hf.generate(gen)]


def test_llama_cpp_server_and_hf_write_the_same_leading_space(
    served_successor: tuple[Path, str],
) -> None:
    """A model that writes " Paris中." after a colon, whose tokenizer's decoder (Llama-2's)
    drops the first space of a text decoded alone: the server and hf: both return the text
    as written after the prompt, stop strings cut on it."""
    folder, spec = served_successor
    hf, api = load_backend(f"hf:{folder}"), load_backend(spec)
    prompt = "Question: What is the capital of France?\nAnswer:"
    gen = [
        GenerateRequest(prompt, max_new_tokens=20),
        GenerateRequest(prompt, max_new_tokens=6),
        GenerateRequest(prompt, max_new_tokens=20, stop=("中",)),
    ]
    want = [" Paris中.", " Paris", " Paris"]
    assert [x.text for x in hf.generate(gen)] == want
    assert [x.text for x in api.generate(gen)] == want


def test_a_sentencepiece_only_folder_without_sentencepiece_fails_in_one_line(
    tmp_path: Path,
) -> None:
    if importlib.util.find_spec("sentencepiece") is not None:
        pytest.skip("checks the error when sentencepiece is not installed")
    from steadyeval.models._tiny import build_tiny_model

    folder = build_tiny_model(tmp_path / "m", "gpt2")
    for name in ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json"):
        (folder / name).unlink(missing_ok=True)
    (folder / "tokenizer.model").write_bytes(b"\x0a\x02ab" * 64)  # never read: no library
    (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "LlamaTokenizer"}')
    with pytest.raises(ModelSpecError) as info:
        load_backend(f"hf:{folder}").score([ScoreRequest("a", " b")])
    msg = str(info.value)
    assert "\n" not in msg and str(folder) in msg and "pip install 'steadyeval[hf]'" in msg
    assert "sentencepiece" in msg and "tiktoken" not in msg
    shutil.rmtree(folder)
