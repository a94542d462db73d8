"""Model spec strings and their options at the edges (issue 37, classes 2, 4 and 5): every
bad spec or option value is a ModelSpecError on one line that names the option and what
was expected, echoing values cut; nothing is accepted silently and nothing non-JSON is ever
sent to a server."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval import ModelSpecError
from steadyeval.cli import main
from steadyeval.models import load_backend, parse_model_spec

ROOT = Path(__file__).resolve().parents[2]
BIG = "9" * 400  # a 400-digit integer
OFFLINE = "base_url=http://127.0.0.1:9"  # nothing listens; only dry runs and errors use it


def _refused(spec: str, *needles: str) -> str:
    with pytest.raises(ModelSpecError) as info:
        load_backend(spec)
    text = str(info.value)
    assert "\n" not in text and len(text) <= 700, text
    assert BIG not in text and "Traceback" not in text, text
    for needle in needles:
        assert needle in text, text
    return text


@pytest.mark.parametrize(
    ("spec", "needles"),
    [
        pytest.param("hf:" + "x" * 70_000, ("70,003 characters long", "65,536"), id="long-spec"),
        pytest.param("hf:x\ud800", ("lone surrogate", "model name"), id="surrogate-name"),
        pytest.param("hf:x?dtype=\udcff", ("lone surrogate", "dtype"), id="surrogate-value"),
        pytest.param("hf:x?\ud83d=1", ("lone surrogate", "option name"), id="surrogate-key"),
        pytest.param("hf:a\nb", ("control character",), id="newline-in-name"),
        pytest.param(
            "hf:x?revision=a%00b",
            (
                "model spec hf:x: option revision's value holds the control character '\\x00' "
                "at character 2; expected text without NUL",
            ),
            id="nul-in-value",
        ),
        pytest.param(
            "openai:m?extra_body=%7B%22a%22%3A%22%00%22%7D",
            ("option extra_body's value", "'\\x00' at character 7"),
            id="nul-in-json-value",
        ),
        pytest.param("hf:x?a=1&a=2", ("'a' is given twice",), id="duplicate"),
        pytest.param("hf:x?a=1&%61=2", ("'a' is given twice",), id="duplicate-escaped"),
        pytest.param("hf:x?=1", ("not key=value",), id="empty-key"),
        pytest.param("hf:x?a=1&&b=2", ("option 2", "not key=value"), id="empty-field"),
        pytest.param("hf:x?dtype=%ff", ("not UTF-8",), id="bad-escape"),
        pytest.param("hf:?dtype=float16", ("model name is empty",), id="empty-name"),
        pytest.param("hf:   ", ("model name is empty",), id="blank-name"),
        pytest.param("h f:x", ("backend name",), id="bad-backend"),
        pytest.param("x" * 100, ("has no backend", "characters"), id="no-backend"),
    ],
)
def test_bad_spec_strings(spec: str, needles: tuple[str, ...]) -> None:
    with pytest.raises(ModelSpecError) as info:
        parse_model_spec(spec)
    text = str(info.value)
    assert "\n" not in text and len(text) <= 400, text
    text.encode("utf-8")  # printable: no lone surrogate echoed
    for needle in needles:
        assert needle in text, text


def test_a_nul_in_an_option_value_is_refused_where_the_spec_is_given(tmp_path: Path) -> None:
    """Where a config gives the spec (its line named), and for a spec built in Python, not
    later when the model loads."""
    from steadyeval import ConfigError
    from steadyeval.models import ModelSpec
    from steadyeval.run import load_run_config

    (tmp_path / "c.yaml").write_text('data: x.jsonl\nmodels: ["hf:x?revision=v%001"]\n')
    with pytest.raises(ConfigError, match=r"c\.yaml, line 2: models\.0: model spec hf:x: "):
        load_run_config(tmp_path / "c.yaml")
    with pytest.raises(ConfigError, match="option revision's value holds the control"):
        load_run_config(
            None, {"data": "x.jsonl", "models": [ModelSpec("hf", "x", {"revision": "\0"})]}
        )


def test_spec_round_trips_odd_values() -> None:
    spec = parse_model_spec("openai:m?extra.stop=%0A&extra.x=a%26b%3Dc&revision=v1.0")
    assert spec.options["extra.stop"] == "\n" and spec.options["extra.x"] == "a&b=c"
    assert parse_model_spec(str(spec)) == spec


@pytest.mark.parametrize(
    ("option", "needles"),
    [
        (f"batch_size={BIG}", ("batch_size", "positive integer", "(400 characters)")),
        ("batch_size=-1", ("batch_size", "positive integer")),
        ("batch_size=0", ("batch_size",)),
        ("batch_size=1e3", ("batch_size",)),
        ("batch_size=\u0663", ("batch_size",)),  # ARABIC-INDIC DIGIT THREE: int() takes it
        ("batch_size=1_000", ("batch_size",)),
        ("max_length=inf", ("max_length", "tokens")),
        (f"max_length={1 << 30}", ("max_length", "at most")),
        ("dtype=bfloat", ("dtype", "did you mean 'bfloat16'")),
        ("dtype=nan", ("dtype",)),
        ("device=banana", ("device", "cpu, cuda")),
        ("device=cuda:1e9", ("device",)),
        ("dtyp=float16", ("unknown option 'dtyp'", "did you mean 'dtype'", "allowed: batch_size")),
        ("input_format=unifiedq", ("input_format", "did you mean 'unifiedqa'")),
        ("revision=a b", ("revision", "without spaces")),
        ("packing=maybe", ("packing must be true or false",)),
    ],
)
def test_hf_options_at_the_edges(tiny_gpt2: Path, option: str, needles: tuple[str, ...]) -> None:
    _refused(f"hf:{tiny_gpt2}?{option}", *needles)


def test_hf_options_that_are_fine(tiny_gpt2: Path) -> None:
    b = load_backend(f"hf:{tiny_gpt2}?batch_size=1048576&max_length=64&device=cpu&dtype=auto")
    assert b.options.batch_size == 1 << 20  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("option", "needles"),
    [
        ("gpu_memory_utilization=nan", ("gpu_memory_utilization", "finite")),
        ("gpu_memory_utilization=inf", ("gpu_memory_utilization",)),
        ("gpu_memory_utilization=0", ("gpu_memory_utilization", "above 0")),
        (f"tensor_parallel_size={BIG}", ("tensor_parallel_size", "positive integer")),
        ("max_model_len=-5", ("max_model_len",)),
        ("max_logprobs=0", ("max_logprobs",)),
        ("quantization=a b", ("quantization",)),
        ("prefix_caching=yes", ("prefix_caching must be true or false",)),
        ("tp=2", ("unknown option 'tp'",)),
    ],
)
def test_vllm_options_at_the_edges(tiny_gpt2: Path, option: str, needles: tuple[str, ...]) -> None:
    _refused(f"vllm:{tiny_gpt2}?{option}", *needles)


@pytest.mark.parametrize(
    ("option", "needles"),
    [
        ("extra.temperature=NaN", ("extra.temperature", "NaN is not JSON")),
        ("extra.x=Infinity", ("extra.x", "Infinity is not JSON")),
        ("extra.x=-Infinity", ("extra.x", "-Infinity is not JSON")),
        ("extra.x=1e400", ("extra.x", "inf")),
        (f"extra.x={BIG}", ("extra.x", "400 digits", "64-bit")),
        ('extra.x=["\\ud800"]', ("extra.x", "lone surrogate")),
        ("extra.x=" + "[" * 40 + "]" * 40, ("extra.x", "nested deeper")),
        ("extra.x=" + "[" * 5000, ("extra.x", "nested deeper")),
        ('extra_body={"a": NaN}', ("extra_body", "NaN is not JSON")),
        ('extra_body={"a": [1e999]}', ("extra_body", "inf")),
        ("extra_body=[1]", ("extra_body", "JSON object", "list")),
        ("extra_body={", ("extra_body", "not JSON")),
        ("extra.prompt=x", ("written by the backend",)),
        ("extra.=1", ("written by the backend",)),
        ("timeout=nan", ("timeout", "finite")),
        ("timeout=-1", ("timeout",)),
        ("timeout=1e7", ("timeout", "seconds")),
        ("deadline=0", ("deadline", "above 0")),
        ("max_concurrency=0", ("max_concurrency must be a positive integer",)),
        (f"max_concurrency={BIG}", ("max_concurrency", "(400 characters)")),
        ("max_retries=-1", ("max_retries", "non-negative")),
        (f"max_tokens_total={BIG}", ("max_tokens_total",)),
        ("max_concurency=3", ("unknown option 'max_concurency'", "'max_concurrency'")),
        ("logprobs=maybe", ("logprobs",)),
        ("server=llama.cpp", ("server",)),
        ("base_url=http://[::1", ("base_url",)),
        ("base_url=http://h:99999/v1", ("base_url", "port")),
        ("base_url=ftp://h/v1", ("base_url",)),
    ],
)
def test_openai_options_at_the_edges(option: str, needles: tuple[str, ...]) -> None:
    _refused(f"openai:m?{option}", *needles)


def test_extra_fields_sent_are_strict_json() -> None:
    """What the options accept is JSON without NaN (``allow_nan=False`` would refuse it)."""
    from steadyeval.models._openai_options import OpenAIOptions

    spec = parse_model_spec(
        'openai:m?extra.a=1.5&extra.b=x&extra.c={"k":[1,2]}&extra_body={"d": -0.0, "e": 9007}'
        '&extra.stop="NaN"'
    )
    extra = dict(OpenAIOptions.from_spec(spec).extra)
    assert extra == {"a": 1.5, "b": "x", "c": {"k": [1, 2]}, "d": -0.0, "e": 9007, "stop": "NaN"}
    json.dumps(extra, allow_nan=False)
    assert not any(isinstance(v, float) and not math.isfinite(v) for v in extra.values())


@pytest.mark.parametrize(
    "spec",
    [
        f"openai:m?{OFFLINE}&extra.t=NaN",
        f"openai:m?{OFFLINE}&max_concurrency={BIG}",
        "hf:owner/Name-0.5B?batch_size=-3",
        "hf:x?dtyp=float16",
        "vllm:x?gpu_memory_utilization=nan",
        "hf:a--b",
    ],
)
def test_dry_run_refuses_bad_specs_like_the_run(spec: str, tmp_path: Path) -> None:
    data = str(ROOT / "examples" / "items.jsonl")
    out = tmp_path / "out"
    for extra in (["--dry-run"], ["--out", str(out)]):
        r = CliRunner().invoke(main, ["run", "--model", spec, "--data", data, *extra])
        assert r.exit_code == 2, r.output
        assert r.output.startswith("error:") and r.output.count("\n") == 1, r.output
        assert not out.exists()


def test_dry_run_refuses_a_server_profile_that_cannot_score(tmp_path: Path) -> None:
    """Issue 37 class 5: the dry run (of a run and of a study) refuses what the run refuses
    up front, here score requests to a server whose profile, named in the spec, gives no
    prompt log-probabilities; nothing is contacted either way."""
    spec = f"openai:m?{OFFLINE}&server=llama-server"
    data = str(ROOT / "examples" / "items.jsonl")
    outputs = []
    for argv in (
        ["run", "--model", spec, "--data", data, "--dry-run"],
        ["run", "--model", spec, "--data", data, "--out", str(tmp_path / "out")],
        ["study", "spread", "--model", spec, "--data", data, "--n-formats", "4", "--dry-run"],
    ):
        r = CliRunner().invoke(main, argv)
        assert r.exit_code == 2, r.output
        outputs.append(r.output.strip().splitlines()[-1])
    assert outputs[0] == outputs[1] == outputs[2]
    assert "cannot give prompt log-probabilities" in outputs[0]


def test_precheck_decides_only_what_needs_no_server() -> None:
    from steadyeval import UnsupportedRequestError
    from steadyeval.requests import GenerateRequest, ScoreRequest

    chat = GenerateRequest("Q:", chat=True)
    llama = load_backend(f"openai:m?{OFFLINE}&server=llama-cpp-python")
    with pytest.raises(UnsupportedRequestError, match="chat_template=server"):
        llama.precheck([chat])
    load_backend(f"openai:m?{OFFLINE}&server=llama-cpp-python&chat_template=server").precheck(
        [chat]
    )
    server = load_backend(f"openai:m?{OFFLINE}&server=llama-server")
    server.precheck([GenerateRequest("Q:")])  # generating needs no log-probabilities
    with pytest.raises(UnsupportedRequestError, match="prompt log-probabilities"):
        server.precheck([ScoreRequest("Q:", " A")])
    with pytest.raises(UnsupportedRequestError, match="logprobs=none"):
        load_backend(f"openai:m?{OFFLINE}&logprobs=none").precheck([ScoreRequest("Q:", " A")])
    # server=auto: the profile comes from the server, which only preflight asks.
    load_backend(f"openai:m?{OFFLINE}").precheck([chat, ScoreRequest("Q:", " A")])


def test_a_config_field_of_specs_parses_once_and_writes_canonical_text() -> None:
    from pydantic import BaseModel, ValidationError

    from steadyeval.models import ModelSpec

    class Cfg(BaseModel):
        models: list[ModelSpec]

    given = parse_model_spec("openai:m")
    cfg = Cfg(models=["hf:x?dtype=float16&batch_size=8", given])
    assert cfg.models == [parse_model_spec("hf:x?batch_size=8&dtype=float16"), given]
    assert cfg.models[1] is given  # a spec is taken as it is, not parsed again
    dumped = cfg.model_dump(mode="json")["models"]
    assert dumped == ["hf:x?batch_size=8&dtype=float16", "openai:m"]  # options sorted
    assert Cfg.model_validate(cfg.model_dump(mode="json")) == cfg
    assert Cfg.model_json_schema()["properties"]["models"]["items"]["type"] == "string"
    with pytest.raises(ValidationError, match="has no backend"):
        Cfg(models=["gpt2"])
    with pytest.raises(ValidationError, match=r"expected a model spec .* got int 5"):
        Cfg(models=[5])
    with pytest.raises(ValidationError, match="not UTF-8"):
        Cfg(models=["hf:x\udcff"])


def test_the_study_model_flag_is_still_repeatable_text() -> None:
    import click

    study = main.get_command(click.Context(main), "study")
    assert isinstance(study, click.Group)
    formats = study.get_command(click.Context(study), "formats")
    assert formats is not None
    (flag,) = [p for p in formats.params if "--model" in p.opts]
    assert flag.multiple and flag.type == click.STRING and flag.metavar == "SPEC"
