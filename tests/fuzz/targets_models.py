"""Fuzz targets: model spec strings and their options (``--model SPEC``).

* ``model-spec``: the public parser (``parse_model_spec``), then each backend's options
  (``load_backend`` for ``openai:``, whose construction reads no model and calls no server).
* ``run-model-spec``: ``steadyeval run --model SPEC --data examples/items.jsonl --dry-run``,
  which must load no model and call no server: ``openai:`` specs point at
  ``http://127.0.0.1:9`` (nothing listens; a dry run never connects), ``hf:``-family and
  ``vllm:`` names are resolved against an empty offline hub cache.
* ``hub-id-offline``: odd hub ids (and names that are not ones) resolved against an empty
  offline hub cache, as a model (``model_folder``) and as a data set (``load_items``).

Each must succeed or give steadyeval's own one-line error, never a traceback.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

from hypothesis import strategies as st

from steadyeval.items import load_items
from steadyeval.models import load_backend, model_folder, parse_model_spec
from tests.fuzz._registry import check_cli, expect_own_error, target

DATA = str(Path(__file__).resolve().parents[2] / "examples" / "items.jsonl")
NOWHERE = "http://127.0.0.1:9"  # the discard port: nothing answers, and nothing is sent
BIG = "9" * 400

_EMPTY_CACHE: list[Path] = []


def _offline_hub() -> None:
    """Point this process at an empty Hugging Face cache with the hub offline (once): the
    environment, and the constants the libraries read from it at import."""
    if _EMPTY_CACHE:
        return
    home = Path(tempfile.mkdtemp(prefix="fuzz-hf-"))
    _EMPTY_CACHE.append(home)
    env = {
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(home / "hub"),
        "HF_DATASETS_CACHE": str(home / "datasets"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    os.environ.update(env)
    hub = sys.modules.get("huggingface_hub.constants")
    if hub is not None:
        hub.HF_HOME, hub.HF_HUB_CACHE, hub.HF_HUB_OFFLINE = (
            env["HF_HOME"],
            env["HF_HUB_CACHE"],
            True,
        )
    ds = sys.modules.get("datasets.config")
    if ds is not None:
        ds.HF_DATASETS_CACHE = Path(env["HF_DATASETS_CACHE"])
        ds.HF_HUB_OFFLINE = ds.HF_DATASETS_OFFLINE = True


_BACKENDS = st.sampled_from(
    ["scripted", "openai", "hf", "hf-causal", "hf-seq2seq", "hf-masked", "vllm", "HF", "nope"]
)
_HUB_ODD = st.sampled_from(
    [
        "gpt2",
        "Qwen/Qwen2.5-0.5B",
        "meta-llama/Llama-3.1-8B",
        "o_d.d/x_y.Z-1",
        "a--b",
        "a..b",
        "a/b/c",
        "x.git",
        "-x",
        "x/",
        "/",
        ".",
        "..",
        "~",
        "é/x",
        "a" * 97,
        "a" * 5000,
        "\ud800",
        "a\nb",
        "a\x00b",
        " ",
        "m",
    ]
)
_hub_like = st.from_regex(r"[A-Za-z0-9_.\-]{1,12}(/[A-Za-z0-9_.\-]{1,12})?", fullmatch=True)
_names = _HUB_ODD | _hub_like | st.text(max_size=16)

_KEYS = st.sampled_from(
    [
        "dtype",
        "device",
        "revision",
        "batch_size",
        "max_length",
        "trust_remote_code",
        "packing",
        "input_format",
        "fused_gelu",
        "tensor_parallel_size",
        "gpu_memory_utilization",
        "max_model_len",
        "max_logprobs",
        "quantization",
        "base_url",
        "api_key_env",
        "max_concurrency",
        "max_retries",
        "backoff_base",
        "timeout",
        "deadline",
        "max_retry_after",
        "strict",
        "max_tokens_total",
        "logprobs",
        "server",
        "chat_template",
        "extra.temperature",
        "extra.stop",
        "extra_body",
        "dtyp",
        "api_key",
        "",
    ]
)
_VALUES = st.sampled_from(
    [
        "NaN",
        "Infinity",
        "-Infinity",
        "1e400",
        BIG,
        "-" + BIG,
        "-1",
        "0",
        "1",
        "64",
        "0.5",
        "inf",
        "nan",
        "true",
        "maybe",
        "auto",
        "float16",
        "bfloat",
        "cpu",
        "cuda:1",
        "unifiedqa",
        "llama-server",
        "server",
        NOWHERE,
        "http://[::1",
        "http://h:99999/v1",
        '{"a": NaN}',
        '{"a": 1e999}',
        '{"repeat_penalty": 1.0}',
        '"NaN"',
        "[1]",
        "[" * 3000,
        '["\\ud800"]',
        "\ud800",
        "",
        "x" * 5000,
    ]
)
_option = st.tuples(_KEYS | st.text(max_size=8), _VALUES | st.text(max_size=12))


def _spec(backend: str, name: str, options: list[tuple[str, str]], escape: bool) -> str:
    """A spec string: options joined raw (``&`` and ``=`` in values break them) or %-escaped."""
    if backend.lower() == "openai" and not any(k == "base_url" for k, _ in options):
        options = [*options, ("base_url", NOWHERE)]
    enc = (lambda s: quote(s, safe="", errors="surrogatepass")) if escape else (lambda s: s)
    query = "&".join(f"{enc(k)}={enc(v)}" for k, v in options)
    return f"{backend}:{name}" + (f"?{query}" if query else "")


_specs = st.one_of(
    st.builds(_spec, _BACKENDS, _names, st.lists(_option, max_size=4), st.booleans()),
    st.builds(_spec, _BACKENDS, _HUB_ODD | _hub_like, st.just([]), st.just(False)),
    st.text(max_size=40),
    st.just("hf:" + "x" * 70_000),
)


@target("model-spec", "steadyeval.models.parse_model_spec / load_backend(openai:)", _specs)
def model_spec(text: str, folder: Path) -> None:
    expect_own_error(lambda: parse_model_spec(text))
    if text.lower().startswith("openai:"):
        expect_own_error(lambda: load_backend(text))


@target("run-model-spec", "steadyeval run --model SPEC --dry-run", _specs)
def run_model_spec(text: str, folder: Path) -> None:
    _offline_hub()
    check_cli(["run", "--model", text, "--data", DATA, "--dry-run"])


@target("hub-id-offline", "model_folder(hf:NAME) / load_items(NAME), empty offline cache", _names)
def hub_id_offline(name: str, folder: Path) -> None:
    _offline_hub()
    expect_own_error(lambda: model_folder(f"hf:{name}"))
    expect_own_error(lambda: load_items(name))
