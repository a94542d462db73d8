"""Sampled generation groups the samples of one prompt (one prefill, ``SAMPLE_ROWS`` rows)
and each sample is the same whichever requests it is generated with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steadyeval import load_backend
from steadyeval.models import _sampled_decode
from steadyeval.models._hf import HFCausalBackend
from steadyeval.models._hf_batching import sample_seed
from steadyeval.models._packed_decode import UnsupportedCache
from steadyeval.requests import GenerateRequest


@pytest.fixture(scope="module")
def backend(tiny_gpt2: Path) -> HFCausalBackend:
    b = load_backend(f"hf:{tiny_gpt2}?batch_size=4")
    assert isinstance(b, HFCausalBackend)
    return b


def _samples(prompt: str, n: int, **kw: Any) -> list[GenerateRequest]:
    settings: dict[str, Any] = {"max_new_tokens": 10, "temperature": 0.7, "seed": 5, **kw}
    return [GenerateRequest(prompt, sample_index=i, **settings) for i in range(n)]


def test_a_sample_is_the_same_alone_and_in_a_group(
    backend: HFCausalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two prompts, 10 samples of one (two decode batches from one prefill), 3 of the other.
    reqs = _samples("Paris is the", 10) + _samples("The river flows", 3, top_p=0.9)
    calls: list[int] = []
    real = _sampled_decode._decode_rows

    def counted(*args: Any) -> Any:
        calls.append(len(args[5]))
        return real(*args)

    monkeypatch.setattr(_sampled_decode, "_decode_rows", counted)
    together = backend.generate(reqs)
    assert calls == [8, 2, 3]  # one prompt's samples share its batches
    alone = [backend.generate([r])[0] for r in reqs]
    assert together == alone  # exactly: same tokens, same text
    assert together == backend.generate(list(reversed(reqs)))[::-1]
    assert all(r.n_output_tokens == 10 and r.finish_reason == "length" for r in together)


def test_seeds_differ_per_sample_index_and_seed(backend: HFCausalBackend) -> None:
    reqs = _samples("Paris is the", 4)
    assert len({sample_seed(r) for r in reqs}) == 4
    texts = [r.text for r in backend.generate(reqs)]
    assert len(set(texts)) > 1
    other = [r.text for r in backend.generate(_samples("Paris is the", 4, seed=6))]
    assert other != texts


def test_a_tiny_top_p_keeps_only_the_most_likely_token(backend: HFCausalBackend) -> None:
    (greedy,) = backend.generate([GenerateRequest("Paris is the", max_new_tokens=10)])
    nucleus = backend.generate(_samples("Paris is the", 3, top_p=1e-9, temperature=1.3))
    assert [r.text for r in nucleus] == [greedy.text] * 3


def test_stop_strings_cut_the_sample_where_it_was(backend: HFCausalBackend) -> None:
    free = backend.generate(_samples("Paris is the", 3, max_new_tokens=16))
    text = free[1].text
    assert len(text) > 4
    stop = text[2:4]
    stopped = backend.generate(_samples("Paris is the", 3, max_new_tokens=16, stop=(stop,)))
    assert stopped[1].text == text[: text.index(stop)] and stopped[1].finish_reason == "stop"
    for before, after in zip(free, stopped, strict=True):  # same draws up to the stop
        assert before.text.startswith(after.text)
        assert stop not in after.text


def test_chat_long_and_mixed_requests(tiny_gpt2: Path) -> None:
    b = load_backend(f"hf:{tiny_gpt2}?max_length=24")
    long_prompt = "The river flows through the city. " * 6
    reqs = [
        GenerateRequest("Hi", max_new_tokens=6),  # greedy
        *_samples("Hi", 3, chat=True, max_new_tokens=6),
        *_samples(long_prompt, 2, max_new_tokens=6),
        GenerateRequest(long_prompt, max_new_tokens=6),  # greedy
    ]
    together = b.generate(reqs)
    assert together == [b.generate([r])[0] for r in reqs]
    assert together[1].n_input_tokens > together[0].n_input_tokens  # the chat template
    assert together[4].truncated and together[4].n_input_tokens == 24 - 6


def test_end_of_sequence_ends_a_sample(tiny_gpt2: Path) -> None:
    b = load_backend(f"hf:{tiny_gpt2}")
    (free,) = b.generate(_samples("Paris is the", 1))
    first = b.tokenizer(free.text)["input_ids"][0]
    b.tokenizer.eos_token_id = first  # the first draw is now the end of the sequence
    (ended,) = b.generate(_samples("Paris is the", 1))
    assert ended.text == "" and ended.n_output_tokens == 0 and ended.finish_reason == "stop"


def test_models_without_a_plain_cache_sample_alone(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = load_backend(f"hf:{tiny_gpt2}")
    assert isinstance(b, HFCausalBackend)
    reqs = _samples("Paris is the", 2)

    def unsupported(*args: Any) -> Any:
        raise UnsupportedCache("a sliding window")

    monkeypatch.setattr("steadyeval.models._hf.sample_group", unsupported)
    got = b.generate(reqs)
    assert not b._grouped_sampling
    assert [len(r.text) > 0 for r in got] == [True, True]
    assert got == b.generate(reqs)  # seeded: reproducible on the fallback too
