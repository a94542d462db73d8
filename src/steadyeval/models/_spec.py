"""Model specs: ``BACKEND:NAME_OR_PATH[?key=value&...]``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote_plus, urlencode

from .._errors import ModelSpecError
from ..items import lone_surrogate, shorten

__all__ = [
    "MAX_SPEC_CHARS",
    "ModelSpec",
    "as_model_spec",
    "echo",
    "parse_model_spec",
    "spec_where",
]


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec. ``str(spec)`` is its canonical form (options sorted).

    As a pydantic field type (``models: list[ModelSpec]``) it accepts a spec or its text
    (parsed by :func:`parse_model_spec`; an error is the field's, so a config names its key
    and line) and serialises as its canonical text.
    """

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

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """Validate with :func:`as_model_spec`; serialise as ``str(spec)`` (pydantic is
        imported only when a config declares the type)."""
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(
            as_model_spec,
            serialization=core_schema.plain_serializer_function_ser_schema(
                str, return_schema=core_schema.str_schema()
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> dict[str, Any]:
        return {"type": "string", "description": "BACKEND:NAME_OR_PATH[?key=value&...]"}


#: The longest model spec accepted (an ``extra_body`` JSON object included).
MAX_SPEC_CHARS = 65_536
_BACKEND = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NUL = re.compile("\x00")


def echo(text: str, limit: int = 80) -> str:
    """``text`` fit to echo on one line of a message: cut to ``limit`` characters, and
    characters that do not print (control characters, lone surrogates) escaped."""
    cut = shorten(text, limit)
    if cut.isprintable():
        return cut
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)


def spec_where(spec: ModelSpec) -> str:
    """``model spec BACKEND:NAME`` for a message: the name cut, no option values (which
    could hold a secret someone pasted into a spec)."""
    return f"model spec {echo(spec.backend, 40)}:{echo(spec.name)}"


def _check_text(text: str, what: str, where_: str, *, control: bool) -> None:
    """Refuse a lone surrogate or a NUL in ``text`` (and any control character, with
    ``control``; an option value may hold a newline or a tab, never a NUL: no path, URL,
    header or C string carries one)."""
    at = lone_surrogate(text)
    if at is not None:
        raise ModelSpecError(
            f"{where_}: {what} holds a lone surrogate at character {at + 1} (half of a "
            "UTF-16 pair); expected valid Unicode text"
        )
    bad = _CONTROL.search(text) if control else _NUL.search(text)
    if bad is not None:
        raise ModelSpecError(
            f"{where_}: {what} holds the control character {bad.group()!r} at character "
            f"{bad.start() + 1}; expected {'printable text' if control else 'text without NUL'}"
        )


def _options(query: str, where_: str) -> dict[str, str]:
    """``key=value&...`` decoded (``%XX`` escapes as UTF-8, ``+`` as a space), each key
    once."""
    pairs: dict[str, str] = {}
    for n, field_ in enumerate(query.split("&") if query else [], start=1):
        key, eq, value = field_.partition("=")
        if not eq or not key:
            raise ModelSpecError(
                f"{where_}: option {n} ('{echo(field_, 40)}') is not key=value; "
                "options look like ?key=value&key2=value2"
            )
        try:
            key, value = unquote_plus(key, errors="strict"), unquote_plus(value, errors="strict")
        except UnicodeDecodeError:
            raise ModelSpecError(
                f"{where_}: option {n} ('{echo(field_, 40)}') has a %-escape that is not "
                "UTF-8; expected %XX escapes of UTF-8 bytes"
            ) from None
        _check_text(key, f"option name '{echo(key, 40)}'", where_, control=True)
        _check_text(value, f"option {echo(key, 40)}'s value", where_, control=False)
        if key in pairs:
            raise ModelSpecError(f"{where_}: option '{echo(key, 40)}' is given twice")
        pairs[key] = value
    return pairs


def parse_model_spec(text: str) -> ModelSpec:
    """Parse ``BACKEND:NAME_OR_PATH[?key=value&...]``.

    Examples: ``hf:/models/tiny``, ``hf:Qwen/Qwen2.5-0.5B?dtype=bfloat16``,
    ``openai:gpt-4o-mini?base_url=http://localhost:8000/v1``. Option names and values may
    be ``%XX``-escaped (UTF-8); each option is given once. Whether the name is a local
    folder or a hub id is decided when the model is opened (``steadyeval._hub``).
    """
    if len(text) > MAX_SPEC_CHARS:
        raise ModelSpecError(
            f"model spec '{echo(text, 40)}' is {len(text):,} characters long; expected "
            f"at most {MAX_SPEC_CHARS:,}"
        )
    if not text.strip():
        raise ModelSpecError(
            "a model spec is empty; write BACKEND:NAME_OR_PATH, e.g. hf:gpt2 or hf:./tiny-gpt2"
        )
    if ":" not in text:
        raise ModelSpecError(
            f"model spec '{echo(text)}' has no backend; write BACKEND:NAME_OR_PATH, "
            f"e.g. hf:{echo(text)}"
        )
    backend, rest = text.split(":", 1)
    backend = backend.strip().lower()
    name, _, query = rest.partition("?")
    where_ = _check_parts(backend, name)
    return ModelSpec(backend=backend, name=name, options=_options(query, where_))


def _check_parts(backend: str, name: str) -> str:
    """Refuse a backend or model name no spec may have; returns the ``where`` of messages
    (they name the backend and model but never echo option values, which could hold a
    secret someone pasted into a spec)."""
    where_ = f"model spec {echo(backend, 40)}:{echo(name)}"
    if not _BACKEND.fullmatch(backend):
        _check_text(backend, "the backend", where_, control=True)
        raise ModelSpecError(
            f"{where_}: expected BACKEND:NAME_OR_PATH[?key=value&...] with a backend name "
            "such as hf, openai or vllm (lower-case letters, digits, '.', '_', '-')"
        )
    _check_text(name, "the model name", where_, control=True)
    if not name.strip():
        raise ModelSpecError(
            f"{where_}: the model name is empty; expected BACKEND:NAME_OR_PATH[?key=value&...]"
        )
    return where_


def _checked(spec: ModelSpec) -> ModelSpec:
    """A spec built in Python, checked as parsed text is (its backend lower-cased)."""
    parts = (spec.backend, spec.name, *spec.options, *spec.options.values())
    if not all(isinstance(p, str) for p in parts):
        raise ModelSpecError(
            "a ModelSpec's backend, name, option names and option values must be text"
        )
    backend = spec.backend.strip().lower()
    where_ = _check_parts(backend, spec.name)
    for key, value in spec.options.items():
        _check_text(key, f"option name '{echo(key, 40)}'", where_, control=True)
        _check_text(value, f"option {echo(key, 40)}'s value", where_, control=False)
    return spec if backend == spec.backend else ModelSpec(backend, spec.name, spec.options)


def as_model_spec(value: object) -> ModelSpec:
    """``value`` as a :class:`ModelSpec`: a spec as it is, spec text parsed (where a config
    or a flag gives it: the one place a spec's text becomes a spec)."""
    if isinstance(value, ModelSpec):
        return _checked(value)
    if not isinstance(value, str):
        raise ModelSpecError(
            f"expected a model spec (text such as hf:NAME_OR_PATH); got "
            f"{type(value).__name__} {echo(repr(value), 40)}"
        )
    if lone_surrogate(value) is not None:
        raise ModelSpecError(
            f"{shorten(repr(value))} holds bytes that are not UTF-8 text; "
            "expected BACKEND:NAME_OR_PATH in UTF-8"
        )
    return parse_model_spec(value)


#: lm-evaluation-harness model names and the key of their ``--model_args`` naming the model.
_LMEVAL_MODELS = {
    "hf": ("hf", "pretrained"),
    "hf-auto": ("hf", "pretrained"),
    "huggingface": ("hf", "pretrained"),
    "vllm": ("vllm", "pretrained"),
    "local-completions": ("openai", "model"),
    "openai-completions": ("openai", "model"),
}


def lmeval_model_spec(model: str, model_args: str) -> ModelSpec:
    """The model spec of lm-evaluation-harness's spelling: ``--model hf --model_args
    pretrained=gpt2,dtype=bfloat16`` → ``hf:gpt2?dtype=bfloat16``, checked as parsed text
    is (the name and values are taken as written: they may hold ``&``, ``?`` or ``%``)."""
    backend, name_key = _LMEVAL_MODELS.get(model.strip().lower(), (model.strip().lower(), ""))
    if ":" in model:
        raise ModelSpecError(
            f"--model {echo(model, 40)} with --model_args: give the backend alone (e.g. "
            "--model hf) and the model as --model_args pretrained=NAME"
        )
    pairs: dict[str, str] = {}
    for part in (p.strip() for p in model_args.split(",")):
        if not part:
            continue
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ModelSpecError(
                f"--model_args: '{echo(part, 60)}' is not key=value (expected e.g. "
                "pretrained=gpt2,dtype=float16)"
            )
        if key.strip() in pairs:
            raise ModelSpecError(f"--model_args: '{echo(key.strip(), 40)}' is given twice")
        pairs[key.strip()] = value.strip()
    keys = [name_key] if name_key else ["pretrained", "model"]
    name = next((pairs.pop(k) for k in keys if k in pairs), None)
    if not name:
        raise ModelSpecError(
            f"--model_args for {echo(model, 40)}: name the model with {keys[0]}=NAME_OR_PATH"
        )
    if "?" in name:  # a spec's text would read the rest as options
        raise ModelSpecError(
            f"--model_args: the model name '{echo(name, 60)}' holds '?', which a model spec "
            "cannot carry in its name; rename the folder"
        )
    return _checked(ModelSpec(backend=backend, name=name, options=pairs))
