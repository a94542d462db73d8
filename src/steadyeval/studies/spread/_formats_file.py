"""Formats loaded by path: prompt templates with ``{question}``, ``{choices}`` and
``{topic}`` placeholders (PromptEval's MMLU templates, ``templates.json``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._errors import ConfigError, DataError
from ..._files import load_json_file
from ...conditions import FORMATS, Condition, Template
from ...items import shorten

__all__ = ["FileFormat", "load_format_file"]

_FIELDS = {
    "question": "{{ question }}",
    "choices": "{{ options_block }}",
    "topic": "{{ (subject or '') | replace('_', ' ') }}",
    "context": "{{ context or '' }}",
}


#: The longest template a formats file may hold (PromptEval's are under 200 characters).
MAX_TEMPLATE_CHARS = 10_000
#: The most templates one formats file may hold (PromptEval's MMLU file has 100).
MAX_TEMPLATES = 10_000


def _literal(text: str) -> str:
    """``text`` as Jinja2 source that renders to exactly ``text`` and is never evaluated.

    Every Jinja2 delimiter (``{{``, ``{%``, ``{#``) starts with ``{``, so each ``{`` is
    written as the expression ``{{ '{' }}``: no delimiter can be formed from the file's text,
    whatever it holds (no raw block to break out of)."""
    return text.replace("{", "{{ '{' }}")


def to_jinja(text: str, where: str) -> str:
    """A ``{field}`` template as a Jinja2 template body (other text kept literally)."""
    parts = re.split(r"\{([a-z_]+)\}", text)
    out = []
    for k, part in enumerate(parts):
        if k % 2 == 0:
            out.append(_literal(part) if part else "")
        elif part in _FIELDS:
            out.append(_FIELDS[part])
        else:
            raise ConfigError(
                f"{where}: unknown placeholder {{{part}}}; known: {', '.join(_FIELDS)}"
            )
    if "{{ question }}" not in out:
        raise ConfigError(f"{where}: the template has no {{question}} placeholder")
    return "".join(out)


@dataclass(frozen=True)
class FileFormat:
    """A format read from a file: its name and Jinja2 body (options as ``A. text`` lines)."""

    name: str
    source: str
    body: str

    def condition(self, scoring: str, **settings: Any) -> Condition:
        return Condition(
            name=self.name,
            template=Template(name=self.name, body=self.body),
            format=FORMATS["mc"],
            scoring=scoring,
            **settings,
        )

    def describe(self) -> dict[str, str]:
        return {"template": self.source}


def _templates(data: Any, path: Path) -> list[str]:
    if isinstance(data, dict) and "MMLU" in data:
        data = data["MMLU"]
    if isinstance(data, dict) and "templates" in data:
        data = data["templates"]
    if not isinstance(data, list) or not data:
        raise ConfigError(
            f"{path}: expected a non-empty list of template strings (or {{'templates': [...]}}, "
            "or PromptEval's templates.json with an 'MMLU' entry)"
        )
    if len(data) > MAX_TEMPLATES:
        raise ConfigError(
            f"{path}: {len(data):,} templates, over the limit of {MAX_TEMPLATES:,} per file"
        )
    for i, t in enumerate(data):
        if not isinstance(t, str):
            raise ConfigError(
                f"{path}: template {i}: expected a string, got {type(t).__name__} "
                f"{shorten(repr(t), 60)}"
            )
        if len(t) > MAX_TEMPLATE_CHARS:
            raise ConfigError(
                f"{path}: template {i} is {len(t):,} characters long, over the limit of "
                f"{MAX_TEMPLATE_CHARS:,}"
            )
    return list(data)


def load_format_file(path: str | Path) -> list[FileFormat]:
    """The formats of a JSON file of ``{question}``/``{choices}``/``{topic}`` templates."""
    path = Path(path)
    try:
        data = load_json_file(path, "a formats file (JSON)", max_bytes=64 * 1024 * 1024)
    except DataError as exc:
        raise ConfigError(str(exc)) from None
    return [
        FileFormat(f"tpl-{i:03d}", t, to_jinja(t, f"{path}: template {i}"))
        for i, t in enumerate(_templates(data, path))
    ]
