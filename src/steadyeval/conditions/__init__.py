"""Conditions (template, format, order, shots, chat, verbalizer, alias) and ``expand``."""

from ._condition import (
    FORMATS,
    MAX_SAMPLES,
    MAX_TEMPLATE_CHARS,
    MAX_TOP_K,
    TEMPLATES,
    Condition,
    Format,
    Generation,
    Shots,
    Template,
)
from ._expand import (
    TEMPLATE_VARIABLES,
    Expansion,
    Trial,
    expand,
    render_template,
    template_problem,
)

__all__ = [
    "FORMATS",
    "MAX_SAMPLES",
    "MAX_TEMPLATE_CHARS",
    "MAX_TOP_K",
    "TEMPLATES",
    "TEMPLATE_VARIABLES",
    "Condition",
    "Expansion",
    "Format",
    "Generation",
    "Shots",
    "Template",
    "Trial",
    "expand",
    "render_template",
    "template_problem",
]
