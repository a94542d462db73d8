"""The ``openai:`` backend against the fake server's llama-cpp-python and vLLM modes (the
quirks are listed in tests/models/fake_openai_modes.py), the spec's extra request fields,
and how connections and errors are handled."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from steadyeval import ModelSpecError, UnsupportedRequestError, load_backend
from steadyeval.models._openai_http import ServerError
from steadyeval.models._openai_probe import _PROBE_PROMPT
from steadyeval.requests import GenerateRequest, ScoreRequest
from tests.models.fake_openai_modes import NOT_LOGITS_ALL, piece_score
from tests.models.fake_openai_server import (
    FakeOpenAIServer,
    Fault,
    toy_generate,
    toy_spec,
)

FAST = "max_concurrency=4&backoff_base=0.01&backoff_max=0.05&timeout=120"
SCORES = [
    ScoreRequest("Question: capital of France?\nAnswer:", " Paris is big"),
    ScoreRequest("Question: which country?\nAnswer:", " 中国"),
    ScoreRequest("Question: which number?\nAnswer:", " １２３"),
    ScoreRequest("Question: x?\nAnswer: Bl", "ue"),  # a continuation inside a token: flagged
]


def spec(srv: FakeOpenAIServer, extra: str = "") -> str:
    """The toy model's spec with fast retries; ``extra`` options (``a=1&b=2``) override."""
    return toy_spec(srv, extra, fast=FAST)


def _bodies(srv: FakeOpenAIServer) -> list[dict[str, Any]]:
    srv.settle()
    return list(srv.record.bodies.values())


@pytest.mark.parametrize("mode", ["llama-cpp-python", "vllm"])
def test_scores_are_exact_on_each_server_mode(serve: Any, mode: str) -> None:
    srv = serve(mode=mode)
    b = load_backend(spec(srv))
    got = b.score(SCORES[:3])
    assert b.profile().name == mode  # chosen from the /models listing
    for r, g in zip(SCORES[:3], got, strict=True):
        exact = r.continuation.isascii() or mode == "llama-cpp-python"
        if exact:  # llama.cpp: the byte pieces' offsets place the boundary exactly
            assert g.logprob == pytest.approx(piece_score(r.context, r.continuation), abs=1e-12)
            assert not g.approximate
        else:  # vLLM's offsets drift past a multi-byte character: flagged, never silent
            assert g.approximate
        assert g.n_input_tokens == len(_pieces(r.context + r.continuation))  # BOS, not the last
    # llama.cpp reads max_tokens=0 as "fill the context": it is never sent there.
    echo = [x["max_tokens"] for x in _bodies(srv) if x.get("echo")]
    assert echo and set(echo) == {1}
    strict = load_backend(spec(srv, "strict=true&max_retries=0"))
    if mode == "vllm":
        with pytest.raises(ServerError, match="approximate"):
            strict.score(SCORES[1:2])
    (split,) = b.score(SCORES[3:])  # " Blue" is one toy token: the context's "Bl" is in it
    assert split.approximate


def _pieces(text: str) -> list[Any]:
    from tests.models.fake_openai_modes import pieces

    return pieces(text)


def test_the_server_is_probed_once_per_process_and_identity(serve: Any) -> None:
    srv = serve(mode="llama-cpp-python")
    load_backend(spec(srv)).score(SCORES[:1])
    n = srv.record.n_requests
    again = load_backend(spec(srv))  # a new instance, the same model at the same server
    again.score(SCORES[1:2])
    assert srv.record.n_requests == n + 1  # the work request only: no GET, no probe
    assert again._echo_max_tokens == 1


def test_greedy_is_greedy_on_llama_cpp_and_extra_fields_are_sent(serve: Any) -> None:
    srv = serve(mode="llama-cpp-python")
    req = GenerateRequest("Q:", max_new_tokens=16, stop=())
    (out,) = load_backend(spec(srv)).generate([req])
    plain, _ = toy_generate("Q:", 16, temperature=0, seed=None, stop=[])
    penalised, _ = toy_generate("Q:", 16, temperature=0, seed=None, stop=[], avoid_repeats=True)
    assert plain != penalised  # the quirk shows on this prompt
    assert out.text == "".join(plain)
    sent = [x for x in _bodies(srv) if x.get("prompt") == "Q:"]
    assert sent[0]["repeat_penalty"] == 1.0 and sent[0]["top_k"] == 0
    # The spec's extra fields win, and change the fingerprint (so the request key).
    srv.reset()
    odd = load_backend(spec(srv, "extra.repeat_penalty=1.1&extra.mirostat=0"))
    (pen,) = odd.generate([req])
    assert pen.text == "".join(penalised)
    body = next(x for x in _bodies(srv) if x.get("prompt") == "Q:")
    assert body["repeat_penalty"] == 1.1 and body["mirostat"] == 0
    viajson = load_backend(spec(srv, 'extra_body={"repeat_penalty": 1.1, "mirostat": 0}'))
    assert json.loads(viajson.fingerprint())["extra"] == {"repeat_penalty": 1.1, "mirostat": 0}
    assert viajson.fingerprint() == odd.fingerprint() != load_backend(spec(srv)).fingerprint()
    assert "extra.repeat_penalty=1.1" in odd.identity()
    with pytest.raises(ModelSpecError, match="written by the backend"):
        load_backend(spec(srv, "extra.prompt=x"))
    with pytest.raises(ModelSpecError, match="JSON object"):
        load_backend(spec(srv, "extra_body=[1]"))
    with pytest.raises(ModelSpecError, match="server must be"):
        load_backend(spec(srv, "server=ollama"))


def test_vllm_mode_sends_neutral_sampling_fields_and_server_option_overrides(serve: Any) -> None:
    srv = serve(mode="vllm")
    b = load_backend(spec(srv))
    b.generate([GenerateRequest("Say:", max_new_tokens=2)])
    body = next(x for x in _bodies(srv) if x.get("prompt") == "Say:")
    assert body["repetition_penalty"] == 1.0 and "repeat_penalty" not in body
    forced = load_backend(spec(srv, "server=openai"))
    assert forced.profile().name == "openai"
    srv.reset()
    forced.generate([GenerateRequest("Say:", max_new_tokens=2)])
    assert srv.record.n_requests == 1  # no /models request when the spec names the server


def test_chat_on_llama_cpp_needs_the_spec_to_accept_the_servers_template(serve: Any) -> None:
    srv = serve(mode="llama-cpp-python")
    chat = GenerateRequest("Say:", max_new_tokens=2, chat=True)
    with pytest.raises(UnsupportedRequestError, match="chat_template=server"):
        load_backend(spec(srv)).generate([chat])
    assert not any("messages" in x for x in _bodies(srv))  # refused before it was sent
    ok = load_backend(spec(srv, "chat_template=server"))
    assert ok.generate([chat])[0].n_output_tokens == 2
    assert "chat_template=server" in ok.identity()


def test_logits_all_false_is_refused_at_once_without_retries(serve: Any) -> None:
    srv = serve(mode="llama-cpp-python", logits_all=False)
    b = load_backend(spec(srv, "max_retries=5"))
    with pytest.raises(UnsupportedRequestError) as info:
        b.score(SCORES[:1])
    assert NOT_LOGITS_ALL in str(info.value) and "--logits_all true" in str(info.value)
    assert srv.record.n_requests == 1  # one probe (POSTs are counted): no retry of the 500
    assert b.stats().retries == 0


def test_a_base_url_without_v1_gets_that_hint(serve: Any) -> None:
    srv = serve(mode="llama-cpp-python")
    url = srv.url.removesuffix("/v1")
    b = load_backend(f"openai:toy?base_url={url}&{FAST}")
    with pytest.raises(ServerError, match=r"HTTP 404.*is base_url .*/v1 meant") as info:
        b.score(SCORES[:1])
    assert "vLLM" not in str(info.value)
    with pytest.raises(ServerError, match=r"HTTP 404.*/v1 meant"):
        load_backend(f"openai:toy?base_url={url}&server=openai&{FAST}").generate(
            [GenerateRequest("Say:", max_new_tokens=2)]
        )


def test_an_idle_connection_closed_by_the_server_costs_no_retry(serve: Any) -> None:
    srv = serve(mode="llama-cpp-python", idle_close=0.2)
    b = load_backend(spec(srv, "max_concurrency=1"))
    for i in range(3):
        b.generate([GenerateRequest(f"Say {i}:", max_new_tokens=2)])
        time.sleep(0.4)  # the server closes the connection meanwhile
    assert b.stats().retries == 0
    b.release()


def test_the_final_error_is_the_servers_last_real_error(serve: Any) -> None:
    def plan(body: dict[str, Any], attempt: int) -> Fault | None:
        if body.get("prompt") != "Say:":
            return None
        return Fault("503") if attempt == 0 else Fault("drop")

    srv = serve(faults=plan)
    b = load_backend(spec(srv, "max_retries=2&server=openai"))
    with pytest.raises(ServerError) as info:
        b.generate([GenerateRequest("Say:", max_new_tokens=2)])
    msg = str(info.value)
    assert "last error: HTTP 503" in msg and "then:" in msg and info.value.status == 503
    assert _PROBE_PROMPT not in msg


def test_byte_pieces_are_placed_by_offsets_and_bad_offsets_are_flagged() -> None:
    from steadyeval.models._openai_wire import PromptLogprobs, continuation_logprob

    # llama.cpp: " 中" after "A:" as a space and three byte pieces listed as "" at the offset
    # of the characters decoded so far; a generated token follows.
    tokens = [" A", ":", " ", "", "", "", "x"]
    offsets = [0, 2, 3, 4, 4, 4, 5]
    lps = [None, -1.0, -2.0, -3.0, -4.0, -5.0, -9.0]
    lp = PromptLogprobs(tokens, lps, offsets, None)
    s = continuation_logprob(lp, prompt="A: 中", n_context_chars=2, n_prompt_tokens=6)
    assert (s.logprob, s.n_tokens, s.approximate) == (-14.0, 4, False)
    s = continuation_logprob(lp, prompt="A: 中", n_context_chars=3, n_prompt_tokens=6)
    assert (s.logprob, s.n_tokens, s.approximate) == (-12.0, 3, False)
    backwards = PromptLogprobs(tokens, lps, [0, 2, 3, 4, 3, 4, 5], None)
    assert continuation_logprob(
        backwards, prompt="A: 中", n_context_chars=3, n_prompt_tokens=6
    ).approximate
    # Offsets that add up the listed strings' lengths drift: the texts no longer line up.
    drift = PromptLogprobs(
        ["<s>", "A", ":", " ", "\ufffd", "\ufffd", "\ufffd"],
        [None, -1.0, -1.0, -2.0, -3.0, -4.0, -5.0],
        [0, 3, 4, 5, 6, 7, 8],
        None,
    )
    assert continuation_logprob(
        drift, prompt="A: 中", n_context_chars=3, n_prompt_tokens=7
    ).approximate
