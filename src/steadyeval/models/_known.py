"""Capabilities of known hub models, declared by exact repository id (a spec option such as
``?input_format=unifiedqa`` declares them for any other model, a local copy included)."""

from __future__ import annotations

__all__ = ["INPUT_FORMATS", "KNOWN_INPUT_FORMATS", "known_input_format"]

#: The input encodings a model may declare (``?input_format=``); a study's ``template: auto``
#: follows them.
INPUT_FORMATS = ("unifiedqa",)

_UNIFIEDQA_SIZES = ("small", "base", "large", "3b", "11b")

#: Hub repositories whose models expect an input encoding of their own.
KNOWN_INPUT_FORMATS: dict[str, str] = {
    **{f"allenai/unifiedqa-t5-{size}": "unifiedqa" for size in _UNIFIEDQA_SIZES},
    **{f"allenai/unifiedqa-v2-t5-{size}-1251000": "unifiedqa" for size in _UNIFIEDQA_SIZES},
    **{f"allenai/unifiedqa-v2-t5-{size}-1363200": "unifiedqa" for size in _UNIFIEDQA_SIZES},
}


def known_input_format(name: str) -> str | None:
    """The input encoding a known hub model expects (exact repository id), else None."""
    return KNOWN_INPUT_FORMATS.get(name)
