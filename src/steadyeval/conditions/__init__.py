"""Conditions (template, format, order, shots, chat, verbalizer, alias) and ``expand``."""

from ._condition import FORMATS, TEMPLATES, Condition, Format, Generation, Shots, Template
from ._expand import Expansion, Trial, expand, render_template

__all__ = [
    "FORMATS",
    "TEMPLATES",
    "Condition",
    "Expansion",
    "Format",
    "Generation",
    "Shots",
    "Template",
    "Trial",
    "expand",
    "render_template",
]
