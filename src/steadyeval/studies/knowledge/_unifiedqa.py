"""MMLU questions in UnifiedQA's input format, with and without the end marker ``</s>``
(Hendrycks et al., appendix A.3: "QUESTION1 \\n (A) CHOICE1 (B) CHOICE2 (C) CHOICE3 (D)
CHOICE4</s>, where the question and choices are normalized and lowercased").

Three layers, each a Jinja template that renders inside the ordinary condition machinery:

* :data:`UNIFIEDQA_ENCODING`: the encoding of UnifiedQA's ``encode_datasets.py`` (allenai/
  unifiedqa): ``question \\n (a) o1 (b) o2 (c) o3 (d) o4`` with the two characters
  backslash-n between the parts and every tab or newline inside a text turned into a space.
  It reproduces the input column of a UnifiedQA ``.tsv`` line byte for byte.
* the normalisation of UnifiedQA's ``tasks.py`` (``dataset_preprocessor.normalize_text``,
  allenai/unifiedqa commit 7bf0653, lines 54-58), applied at training time to every input:
  ``tf.strings.lower`` (ASCII letters only) and ``regex_replace(text, "'(.*)'", r"\\1")``
  (greedy: drops the first and the last ``'`` when there are two or more).
* the end marker ``</s>`` appended, or not.

The study's templates ``unifiedqa`` (normalised, no marker) and ``unifiedqa-eos``
(normalised, with the marker) are the seed's two conditions.
"""

from __future__ import annotations

import string

from ...conditions import FORMATS, Format, Template

__all__ = [
    "UNIFIEDQA_ENCODING",
    "UNIFIEDQA_FORMAT",
    "UNIFIEDQA_MARKER",
    "UNIFIEDQA_TEMPLATES",
]

#: The end marker the seed appends to UnifiedQA's input (T5's end-of-sequence token).
UNIFIEDQA_MARKER = "</s>"

#: Options as ``(a) text (b) text ...`` joined by one space (``encode_datasets.py``).
UNIFIEDQA_FORMAT: Format = FORMATS["unifiedqa-mc"]

# The encoded input, captured in ``s``, with tabs and newlines inside texts made spaces
# (the parts' separator is the two characters backslash-n, not a newline).
_ENCODE = (
    "{%- set s -%}{{ question }} \\n {{ options_block }}{%- endset -%}"
    '{%- set s = s | replace("\\t", " ") | replace("\\n", " ") -%}'
)
# tf.strings.lower lowers ASCII letters only (Python's str.lower would lower any letter).
_ASCII_LOWER = "{" + ", ".join(f"{ord(c)}: {ord(c.lower())}" for c in string.ascii_uppercase) + "}"
# "'(.*)'" -> r"\1", greedy and global: with two quotes or more, the first and the last go.
_NORMALISE = (
    f"{{%- set s = s.translate({_ASCII_LOWER}) -%}}"
    '{%- set i = s.find("\'") -%}{%- set j = s.rfind("\'") -%}'
    "{%- if i < j -%}{%- set s = s[:i] ~ s[i + 1:j] ~ s[j + 1:] -%}{%- endif -%}"
)


def _template(name: str, body: str) -> Template:
    # a shot shows the answer's text after a space, as UnifiedQA's targets are texts
    return Template(name=name, body=body, answer=" {{ answer }}", shot_separator="\n\n")


#: The encoding alone (no normalisation, no marker): a UnifiedQA ``.tsv`` line's input.
UNIFIEDQA_ENCODING = _template("unifiedqa-encoding", _ENCODE + "{{ s }}")

#: The study's two UnifiedQA templates: normalised without and with the end marker.
UNIFIEDQA_TEMPLATES: dict[str, Template] = {
    "unifiedqa": _template("unifiedqa", _ENCODE + _NORMALISE + "{{ s }}"),
    "unifiedqa-eos": _template(
        "unifiedqa-eos", _ENCODE + _NORMALISE + "{{ s }}" + UNIFIEDQA_MARKER
    ),
}
