"""The ``vllm:`` backend's request/response mapping, against a stand-in engine.

vLLM needs a CUDA GPU and is not installed here: these tests inject
``tests/models/vllm_standin.py`` (a transformers model behind vLLM's API shapes) through the
backend's ``engine_module`` seam and compare with the ``hf`` backend on the same tiny model.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from steadyeval import ConfigError, ModelSpecError, UnsupportedRequestError, load_backend
from steadyeval.models import parse_model_spec
from steadyeval.models._vllm import VLLMBackend
from steadyeval.requests import GenerateRequest, ScoreRequest, TopKRequest
from tests.models import vllm_standin

PAIRS = [
    ("Paris is the capital of", " France."),
    ("Question: What is the capital of Italy? Answer:", " Rome"),
    ("Question: How many days are in a week? Answer: ", "seven"),  # trailing space moves
    ("", "The river flows through the city."),  # empty context: conditioned on BOS
]


def vllm(tiny: Path, options: str = "") -> VLLMBackend:
    spec = parse_model_spec(f"vllm:{tiny}" + (f"?{options}" if options else ""))
    return VLLMBackend(spec, engine_module=vllm_standin)


@pytest.fixture(scope="module")
def both(tiny_gpt2: Path) -> tuple[VLLMBackend, object]:
    return vllm(tiny_gpt2, "tensor_parallel_size=1&max_logprobs=8"), load_backend(
        f"hf:{tiny_gpt2}?batch_size=4"
    )


def test_construction_imports_no_vllm_and_missing_vllm_says_how_to_install(
    tiny_gpt2: Path,
) -> None:
    had_vllm = "vllm" in sys.modules
    b = load_backend(f"vllm:{tiny_gpt2}")  # the real default: engine_module="vllm"
    assert '"backend":"vllm"' in b.fingerprint()
    assert b.count_tokens(["a b c"]) == load_backend(f"hf:{tiny_gpt2}").count_tokens(["a b c"])
    assert b.supported_kinds == {"score", "generate", "top-k"}
    assert ("vllm" in sys.modules) == had_vllm  # nothing above imported it
    if importlib.util.find_spec("vllm") is None:
        with pytest.raises(ConfigError, match=r"pip install 'steadyeval\[vllm\]'"):
            b.score([ScoreRequest("a", " b")])


def test_engine_arguments_come_from_the_spec(tiny_gpt2: Path) -> None:
    b = vllm(
        tiny_gpt2,
        "tensor_parallel_size=2&max_model_len=64&gpu_memory_utilization=0.5&dtype=bfloat16"
        "&quantization=fp8",
    )
    b.generate([GenerateRequest("Hi", max_new_tokens=1)])
    kwargs = b.engine.llm.kwargs  # type: ignore[union-attr]
    assert kwargs["enable_prefix_caching"] is True and kwargs["tensor_parallel_size"] == 2
    assert kwargs["max_model_len"] == 64 and kwargs["gpu_memory_utilization"] == 0.5
    assert kwargs["dtype"] == "bfloat16" and kwargs["quantization"] == "fp8"
    assert kwargs["model"] == str(tiny_gpt2) and kwargs["seed"] == 0
    no_cache = vllm(tiny_gpt2, "prefix_caching=false")
    no_cache.generate([GenerateRequest("Hi", max_new_tokens=1)])
    assert no_cache.engine.llm.kwargs["enable_prefix_caching"] is False  # type: ignore[union-attr]


def test_fingerprint_tracks_outputs_not_parallelism(tiny_gpt2: Path) -> None:
    a = vllm(tiny_gpt2).fingerprint()
    assert a == vllm(tiny_gpt2, "tensor_parallel_size=4&data_parallel_size=1").fingerprint()
    assert a != vllm(tiny_gpt2, "dtype=float16").fingerprint()
    assert a != vllm(tiny_gpt2, "max_model_len=64").fingerprint()
    assert a != load_backend(f"hf:{tiny_gpt2}").fingerprint()


def test_spec_errors(tiny_gpt2: Path) -> None:
    with pytest.raises(ModelSpecError, match="unknown option 'tp'"):
        load_backend(f"vllm:{tiny_gpt2}?tp=2")
    with pytest.raises(ModelSpecError, match="tensor_parallel_size must be a positive integer"):
        load_backend(f"vllm:{tiny_gpt2}?tensor_parallel_size=0")
    with pytest.raises(ModelSpecError, match="gpu_memory_utilization"):
        load_backend(f"vllm:{tiny_gpt2}?gpu_memory_utilization=1.5")
    with pytest.raises(ModelSpecError, match="does not exist"):
        load_backend("vllm:./no/such/model")
    with pytest.raises(ConfigError, match="importable module name"):
        VLLMBackend(
            parse_model_spec(f"vllm:{tiny_gpt2}?data_parallel_size=2"), engine_module=vllm_standin
        )


def test_scores_equal_the_hf_backend(both: tuple[VLLMBackend, object]) -> None:
    v, hf = both
    reqs = [ScoreRequest(c, x) for c, x in PAIRS]
    reqs.append(ScoreRequest("What is the capital of France?", " Paris", chat=True))
    got, want = v.score(reqs), hf.score(reqs)  # type: ignore[attr-defined]
    for g, w in zip(got, want, strict=True):
        assert g.logprob == pytest.approx(w.logprob, abs=1e-4)
        assert (g.n_tokens, g.is_greedy, g.truncated) == (w.n_tokens, w.is_greedy, w.truncated)
    sp = v.engine.llm.calls.params[-1]  # type: ignore[union-attr]
    assert sp.prompt_logprobs == 1 and sp.max_tokens == 1 and sp.temperature == 0


def test_long_inputs_are_cut_on_the_left_and_flagged(tiny_gpt2: Path) -> None:
    v = vllm(tiny_gpt2, "max_model_len=16")
    hf = load_backend(f"hf:{tiny_gpt2}?max_length=14")  # + the token vLLM must generate
    long = " ".join(["the river flows through the city"] * 6)
    reqs = [ScoreRequest(long, " and the bridge"), ScoreRequest("Paris is", " big")]
    got, want = v.score(reqs), hf.score(reqs)  # type: ignore[attr-defined]
    assert [g.truncated for g in got] == [True, False]
    for g, w in zip(got, want, strict=True):
        assert g.logprob == pytest.approx(w.logprob, abs=1e-4) and g.truncated == w.truncated
    gen = v.generate([GenerateRequest(long, max_new_tokens=4, stop=())])[0]
    assert gen.truncated and gen.n_input_tokens == 12


def test_generation_maps_sampling_params_and_matches_hf_greedy(
    both: tuple[VLLMBackend, object],
) -> None:
    v, hf = both
    greedy = [
        GenerateRequest("Question: What is the capital of France? Answer:", max_new_tokens=8),
        GenerateRequest("The river", max_new_tokens=6, stop=("the",)),
        GenerateRequest("Say hello", max_new_tokens=5, chat=True, system="Be brief."),
    ]
    start = len(v.engine.llm.calls.params)  # type: ignore[union-attr]
    got, want = v.generate(greedy), hf.generate(greedy)  # type: ignore[attr-defined]
    assert [g.text for g in got] == [w.text for w in want]
    assert all("the" not in g.text for g in got[1:2])
    sampled = [
        GenerateRequest("The river", max_new_tokens=6, temperature=0.8, top_p=0.9, sample_index=i)
        for i in range(3)
    ]
    first, again = v.generate(sampled), v.generate(sampled)
    assert [g.text for g in first] == [g.text for g in again]  # seeded per request
    params = v.engine.llm.calls.params[-3:]  # type: ignore[union-attr]
    assert len({p.seed for p in params}) == 3
    assert all((p.temperature, p.top_p, p.max_tokens) == (0.8, 0.9, 6) for p in params)
    greedy_params = v.engine.llm.calls.params[start + 1]  # type: ignore[union-attr]
    assert greedy_params.seed is None and greedy_params.stop == ["the"]


def test_top_k_matches_hf_and_checks_k(both: tuple[VLLMBackend, object]) -> None:
    v, hf = both
    reqs = [TopKRequest("Paris is the capital of", k=5), TopKRequest("The river", k=3)]
    got, want = v.top_k(reqs), hf.top_k(reqs)  # type: ignore[attr-defined]
    for g, w in zip(got, want, strict=True):
        assert g.tokens == w.tokens
        assert g.logprobs == pytest.approx(w.logprobs, abs=1e-4)
    with pytest.raises(UnsupportedRequestError, match="max_logprobs=8"):
        v.top_k([TopKRequest("x", k=9)])
    with pytest.raises(UnsupportedRequestError, match="candidate"):
        v.top_k([TopKRequest("x", k=2, candidates=("a",))])


def test_data_parallel_replicas_split_batches_and_keep_order(tiny_gpt2: Path) -> None:
    """Two spawned engine processes (each importing the torch-free toy stand-in by name) give
    the answers of one engine, in order."""
    spec = parse_model_spec(f"vllm:{tiny_gpt2}?data_parallel_size=2")
    dp = VLLMBackend(spec, engine_module="tests.models.vllm_standin:toy")
    one = VLLMBackend(parse_model_spec(f"vllm:{tiny_gpt2}"), engine_module=vllm_standin.toy)
    reqs = [ScoreRequest(c, x) for c, x in PAIRS] + [ScoreRequest("A week has", " seven days.")]
    try:
        got = dp.score(reqs)
        gen = dp.generate([GenerateRequest("The river", max_new_tokens=4)])
    finally:
        dp.release()
    want = one.score(reqs)
    assert [g.logprob for g in got] == pytest.approx([w.logprob for w in want], abs=1e-5)
    assert gen[0].text == one.generate([GenerateRequest("The river", max_new_tokens=4)])[0].text
