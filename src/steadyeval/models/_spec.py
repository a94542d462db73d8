"""Model specs: ``BACKEND:NAME_OR_PATH[?key=value&...]``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import parse_qsl, urlencode

from .._errors import ModelSpecError

__all__ = ["ModelSpec", "parse_model_spec"]


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec. ``str(spec)`` is its canonical form (options sorted)."""

    backend: str
    name: str
    options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(sorted(self.options.items()))))

    def __str__(self) -> str:
        tail = f"?{urlencode(dict(self.options), safe='/:')}" if self.options else ""
        return f"{self.backend}:{self.name}{tail}"

    def __hash__(self) -> int:
        return hash(str(self))

    def __reduce__(self) -> tuple[type[ModelSpec], tuple[str, str, dict[str, str]]]:
        return (ModelSpec, (self.backend, self.name, dict(self.options)))

    def option(self, key: str, default: str | None = None) -> str | None:
        return self.options.get(key, default)


def parse_model_spec(text: str) -> ModelSpec:
    """Parse ``BACKEND:NAME_OR_PATH[?key=value&...]``.

    Examples: ``hf:/models/tiny``, ``hf:Qwen/Qwen2.5-0.5B?dtype=bfloat16``,
    ``openai:gpt-4o-mini?base_url=http://localhost:8000/v1``.
    """
    if ":" not in text:
        raise ModelSpecError(
            f"model spec {text!r} has no backend; write BACKEND:NAME_OR_PATH, e.g. hf:{text}"
        )
    backend, rest = text.split(":", 1)
    backend = backend.strip().lower()
    name, _, query = rest.partition("?")
    # Errors below name the backend and model but never echo option values (which could
    # hold a secret someone pasted into a spec).
    where = f"model spec {backend}:{name}"
    if not backend or not name:
        raise ModelSpecError(f"{where}: expected BACKEND:NAME_OR_PATH[?key=value&...]")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ModelSpecError(f"{where}: options must look like ?key=value&key2=value2") from None
    keys = [k for k, _ in pairs]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise ModelSpecError(f"{where}: option {dupes[0]!r} is given twice")
    return ModelSpec(backend=backend, name=name, options=dict(pairs))


#: lm-evaluation-harness model names and the key of their ``--model_args`` naming the model.
_LMEVAL_MODELS = {
    "hf": ("hf", "pretrained"),
    "hf-auto": ("hf", "pretrained"),
    "huggingface": ("hf", "pretrained"),
    "vllm": ("vllm", "pretrained"),
    "local-completions": ("openai", "model"),
    "openai-completions": ("openai", "model"),
}


def lmeval_model_spec(model: str, model_args: str) -> str:
    """A model spec from lm-evaluation-harness's spelling: ``--model hf --model_args
    pretrained=gpt2,dtype=bfloat16`` → ``hf:gpt2?dtype=bfloat16`` (values may hold ``&``
    or ``?``; they are encoded)."""
    backend, name_key = _LMEVAL_MODELS.get(model.strip().lower(), (model.strip().lower(), ""))
    if ":" in model:
        raise ModelSpecError(
            f"--model {model} with --model_args: give the backend alone (e.g. --model hf) and "
            "the model as --model_args pretrained=NAME"
        )
    pairs: dict[str, str] = {}
    for part in (p.strip() for p in model_args.split(",")):
        if not part:
            continue
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ModelSpecError(
                f"--model_args: {part!r} is not key=value (expected e.g. pretrained=gpt2,dtype=float16)"
            )
        if key.strip() in pairs:
            raise ModelSpecError(f"--model_args: {key.strip()!r} is given twice")
        pairs[key.strip()] = value.strip()
    keys = [name_key] if name_key else ["pretrained", "model"]
    name = next((pairs.pop(k) for k in keys if k in pairs), None)
    if not name:
        raise ModelSpecError(
            f"--model_args for {model}: name the model with {keys[0]}=NAME_OR_PATH"
        )
    return str(ModelSpec(backend=backend, name=name, options=pairs))
