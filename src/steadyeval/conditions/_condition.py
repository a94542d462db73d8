"""Conditions are data: template, answer format, option order, shots, chat, verbalizer, alias."""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from types import MappingProxyType
from typing import Annotated, Any, Literal

from pydantic import Field

from .._errors import ConfigError
from .._limits import MAX_LIST, MAX_TOKENS
from ..items import canonical_json
from ._fields import SEED, check_fields, text_tuple
from ._scoring import canonical_scoring, get_scoring

__all__ = [
    "FORMATS",
    "LM_EVAL_TEMPLATE",
    "MAX_SAMPLES",
    "MAX_TEMPLATE_CHARS",
    "MAX_TOP_K",
    "PLAIN_GENERATION",
    "REASONING_GENERATION",
    "TEMPLATES",
    "Condition",
    "Format",
    "Generation",
    "Shots",
    "Template",
]

#: Field metadata of a field added after condition ids were first published: it is left
#: out of :meth:`Condition.to_dict` (and so of the id) while at its default.
_SINCE_ID: Mapping[str, bool] = MappingProxyType({"since_id": True})

#: The longest template part (body, answer, header, separator), in characters: a long
#: instruction is a few thousand; a longer one is refused before Jinja compiles it.
MAX_TEMPLATE_CHARS = 100_000
#: The most samples drawn per request (``generation.n_samples``).
MAX_SAMPLES = 10_000
#: The most candidates a top-k request asks for (``top_k``).
MAX_TOP_K = 100_000


def _named(value: Any, table: Mapping[str, Any], cls: type, what: str, where: str) -> Any:
    """A template or format given as itself, as a built-in name or as a mapping of fields."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        if value not in table:
            raise ConfigError(
                f"{where}: unknown {what} {value!r}; built-in {what}s: "
                f"{', '.join(sorted(table))} (or give a {cls.__name__})"
            )
        return table[value]
    if isinstance(value, Mapping):
        try:
            return cls(**value)
        except TypeError as exc:
            raise ConfigError(f"{where}: {what}: {exc}") from None
    raise ConfigError(
        f"{where}: {what} must be a {cls.__name__}, a built-in name or a mapping; "
        f"got {type(value).__name__}"
    )


def _resolve_parts(c: Condition) -> None:
    """Python accepts what YAML does: built-in template and format names, a shot count or a
    mapping for ``shots``, a mapping for ``generation``."""
    where = f"condition {c.name!r}"
    object.__setattr__(c, "template", _named(c.template, TEMPLATES, Template, "template", where))
    object.__setattr__(c, "format", _named(c.format, FORMATS, Format, "format", where))
    shots: Any = c.shots
    try:
        if isinstance(shots, int) and not isinstance(shots, bool):
            object.__setattr__(c, "shots", Shots(n=shots))
        elif isinstance(shots, Mapping):
            object.__setattr__(c, "shots", Shots(**shots))
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if not isinstance(c.shots, Shots):
        raise ConfigError(f"{where}: shots must be Shots, a count or a mapping; got {shots!r}")
    gen: Any = c.generation
    if isinstance(gen, Mapping):
        try:
            object.__setattr__(c, "generation", Generation(**gen))
        except TypeError as exc:
            raise ConfigError(f"{where}: generation: {exc}") from None
    elif not isinstance(gen, Generation):
        raise ConfigError(f"{where}: generation must be Generation or a mapping; got {gen!r}")


@dataclass(frozen=True)
class Template:
    """A prompt template (Jinja2, sandboxed, trailing newlines kept).

    ``body`` renders one item and ends where the answer goes. ``answer`` is appended to a
    shot's body to show its answer; ``header`` is rendered once before the shots.
    Variables: ``question``, ``context``, ``options`` (list of ``{label, text}``),
    ``options_block``, ``entity``, ``subject``, ``metadata``, ``answer`` (shots only).

    ``reasoning``: the body asks for reasoning before the answer (chain of thought). A
    condition with such a template generates with :data:`REASONING_GENERATION`'s limits
    where its ``generation`` leaves them unset.
    """

    name: str
    body: str
    answer: str = " {{ answer }}"
    header: str = ""
    shot_separator: str = "\n\n"
    reasoning: bool = field(default=False, metadata=_SINCE_ID)

    def __post_init__(self) -> None:
        check_fields(self, f"template {self.name!r}")
        for part in ("body", "answer", "header", "shot_separator"):
            value = getattr(self, part)
            if len(value) > MAX_TEMPLATE_CHARS:
                raise ConfigError(
                    f"template {self.name!r}: {part} is {len(value):,} characters, over the "
                    f"limit of {MAX_TEMPLATE_CHARS:,} characters for a template part"
                )


@dataclass(frozen=True)
class Format:
    """How answers are asked for: free form, or options with an optional escape option.

    ``escape`` is the text of an extra last option (e.g. ``"none of the above"``); choosing it
    counts as a refusal. ``labels`` are the option labels in order: a string of one-character
    labels, or a tuple of labels of any length (e.g. roman numerals ``("i", "ii", "iii")``).
    ``option_style`` formats one option line from ``{label}`` and ``{text}``; lines are
    joined by ``joiner``. ``continuation_prefix`` goes before an option
    text or label when it is scored as a continuation.
    """

    name: str
    kind: Literal["free", "mc"] = "mc"
    escape: str | None = None
    labels: str | tuple[str, ...] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    option_style: str = "{label}. {text}"
    joiner: str = "\n"
    continuation_prefix: str = " "

    def __post_init__(self) -> None:
        if isinstance(self.labels, list | tuple):  # a YAML list: hashable and canonical
            object.__setattr__(self, "labels", tuple(str(x) for x in self.labels))
        check_fields(self, f"format {self.name!r}")


@dataclass(frozen=True)
class Shots:
    """Few-shot examples: ``n`` shots from the pool named ``source``.

    ``selection="random"`` picks them from (``seed``, item id) so every item gets its own,
    reproducible set; ``"first"`` takes them in pool order (as the MMLU reference does).
    The item itself is never its own shot. With ``match="subject"`` only pool items whose
    ``metadata["subject"]`` equals the item's are used (MMLU's per-subject dev shots). With
    ``limit_key="max_shots"`` an item whose ``metadata["max_shots"]`` is m gets at most m shots
    (e.g. fewer shots where the full prompt would not fit a model's context).
    """

    n: Annotated[int, Field(ge=0)] = 0
    seed: SEED = 0
    selection: Literal["random", "first"] = "random"
    source: str = "default"
    match: str | None = None  # a metadata key shots must share with the item (e.g. "subject")
    limit_key: str | None = None  # a metadata key holding a per-item cap on the shot count

    def __post_init__(self) -> None:
        check_fields(self, "shots")


@dataclass(frozen=True)
class Generation:
    """Decoding settings. ``temperature == 0`` is greedy; otherwise ``n_samples`` samples.

    ``max_new_tokens`` and ``stop`` left as ``None`` are the template's: 32 tokens and a
    blank line for a plain template, :data:`REASONING_GENERATION`'s for a reasoning one (a
    :class:`Condition` fills them in).
    """

    max_new_tokens: Annotated[int, Field(ge=1, le=MAX_TOKENS)] | None = None
    temperature: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    top_p: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 1.0
    n_samples: Annotated[int, Field(ge=1, le=MAX_SAMPLES)] = 1
    stop: Annotated[tuple[str, ...], Field(max_length=MAX_LIST)] | None = None
    seed: SEED = 0

    def __post_init__(self) -> None:
        if self.stop is not None:
            object.__setattr__(self, "stop", text_tuple(self.stop))
        check_fields(self, "generation")

    def resolved(self, reasoning: bool) -> Generation:
        """These settings with the unset limits filled in from the template's kind."""
        base = REASONING_GENERATION if reasoning else PLAIN_GENERATION
        return replace(
            self,
            max_new_tokens=base[0] if self.max_new_tokens is None else self.max_new_tokens,
            stop=base[1] if self.stop is None else self.stop,
        )

    @property
    def limits(self) -> tuple[int, tuple[str, ...]]:
        """``(max_new_tokens, stop)`` of a resolved :class:`Generation` (a condition's)."""
        if self.max_new_tokens is None or self.stop is None:
            raise ValueError("generation limits are unset: use Condition.generation")
        return self.max_new_tokens, self.stop


#: A plain template's generation limits: ``(max_new_tokens, stop)``.
PLAIN_GENERATION: tuple[int, tuple[str, ...]] = (32, ("\n\n",))
#: A reasoning (chain-of-thought) template's: room for the reasoning, no stop string (a
#: blank line often separates its steps).
REASONING_GENERATION: tuple[int, tuple[str, ...]] = (1024, ())


def _check_lm_eval(c: Condition) -> None:
    """The ``lm-eval`` template shows lm-eval's own prompt: its shots, its option order."""
    problems = []
    if c.shots.n:
        problems.append(
            "its few-shot examples are lm-eval's own (set num_fewshot on the data, "
            "--num-fewshot), so shots must be unset"
        )
    if c.option_order != "original":
        problems.append("it shows the task's own option order, so option_order must be original")
    if c.verbalizer is not None:
        problems.append("it shows the task's own options, so verbalizer must be unset")
    if c.format.escape is not None:
        problems.append(
            f"it shows the task's own options, so format {c.format.name!r} cannot add its "
            f"escape option {c.format.escape!r}"
        )
    if c.fewshot_as_multiturn:
        problems.append("its shots are part of one prompt, so fewshot_as_multiturn must be off")
    if problems:
        raise ConfigError(f"condition {c.name!r}: template 'lm-eval': {problems[0]}")


def _as_dict(obj: Any) -> Any:
    """A conditions dataclass as plain data (see :meth:`Condition.to_dict`)."""
    if is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in fields(obj):
            value = getattr(obj, f.name)
            if f.metadata.get("since_id") and value == f.default:
                continue
            out[f.name] = _as_dict(value)
        return out
    if isinstance(obj, Mapping):
        return {k: _as_dict(v) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return [_as_dict(v) for v in obj]
    return obj


def _frozen_map(value: Any) -> Any:
    """A mapping as a read-only copy; anything else as it is, for ``check_fields`` to refuse."""
    return MappingProxyType(dict(value)) if isinstance(value, Mapping) else value


@dataclass(frozen=True)
class Condition:
    """One way of asking: every field that can change a model's answer, as a value."""

    name: str
    #: A Template, or a built-in name ("qa", "unifiedqa", "cloze") as in YAML.
    template: Template = field(default_factory=lambda: TEMPLATES["qa"])
    #: A Format, or a built-in name ("free", "mc", "mc-nota", ...) as in YAML.
    format: Format = field(default_factory=lambda: FORMATS["mc"])
    scoring: str = "generate"  # a registered scoring mode (steadyeval.scoring)
    option_order: Literal["original", "shuffled", "rotated"] = "original"
    order_seed: SEED = 0
    rotation: int = 0
    shots: Shots = field(default_factory=Shots)
    chat: bool = False
    system: str | None = None
    verbalizer: Mapping[str, str] | None = None
    verbalizer_name: str | None = None
    alias: Annotated[int, Field(ge=0)] | None = None
    normalization: Literal["none", "token", "char"] = "none"
    generation: Generation = field(default_factory=Generation)
    refusal_phrases: Annotated[tuple[str, ...], Field(max_length=MAX_LIST)] = ("no answer>",)
    top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K)] = 10
    candidates: Literal["vocabulary", "options"] = "vocabulary"
    items: Literal["all", "with-options", "without-options"] = "all"
    #: How the answer is found in generated text: ``auto`` (the whole answer for free
    #: form, an option for multiple choice), ``strict``, ``flexible``, ``options``,
    #: ``regex:PATTERN`` or a registered extractor (:mod:`steadyeval.scoring`).
    extract: str = field(default="auto", metadata=_SINCE_ID)
    #: With ``chat``: each shot is an earlier user turn (its question) and assistant turn
    #: (its answer), as lm-eval's ``--fewshot_as_multiturn``, instead of text in one prompt.
    fewshot_as_multiturn: bool = field(default=False, metadata=_SINCE_ID)

    def __post_init__(self) -> None:
        _resolve_parts(self)
        if self.lm_eval:
            _check_lm_eval(self)  # its limits are each task's own, filled in per item
        else:
            gen = self.generation.resolved(self.template.reasoning)
            object.__setattr__(self, "generation", gen)
        object.__setattr__(self, "verbalizer", _frozen_map(self.verbalizer))
        object.__setattr__(self, "refusal_phrases", text_tuple(self.refusal_phrases))
        check_fields(self, f"condition {self.name!r}")
        try:
            object.__setattr__(self, "scoring", canonical_scoring(self.scoring))
        except ConfigError as exc:
            raise ConfigError(f"condition {self.name!r}: {exc}") from None
        get_scoring(self.scoring).check(self)
        gen = self.generation
        if gen.n_samples > 1 and gen.temperature == 0:
            # one warning per condition (a config builds each condition more than once; the
            # default filter shows a message once per place)
            warnings.warn(
                f"condition {self.name!r}: n_samples={gen.n_samples} with temperature 0 is "
                "one greedy answer per item (greedy decoding has nothing to sample); set "
                "temperature > 0 to draw samples",
                UserWarning,
                stacklevel=1,
            )
        if self.fewshot_as_multiturn and not self.chat:
            raise ConfigError(
                f"condition {self.name!r}: fewshot_as_multiturn sends shots as chat turns; "
                "set chat: true (or leave fewshot_as_multiturn off)"
            )

    @property
    def lm_eval(self) -> bool:
        """Whether the condition asks items as lm-eval does (the ``lm-eval`` template)."""
        return self.template == TEMPLATES[LM_EVAL_TEMPLATE]

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON data; a field added after ids were first published is left
        out while at its default, so the conditions of earlier runs keep their ids."""
        out: dict[str, Any] = _as_dict(self)
        return out

    @property
    def id(self) -> str:
        """Content hash (12 hex digits) of every field."""
        return hashlib.sha256(canonical_json(self.to_dict()).encode()).hexdigest()[:12]


#: The built-in template that asks an lm-eval task's item exactly as lm-eval does.
LM_EVAL_TEMPLATE = "lm-eval"

_QA_BODY = (
    "{% if context %}{{ context }}\n\n{% endif %}"
    "Question: {{ question }}\n"
    "{% if options %}{{ options_block }}\n{% endif %}"
    "Answer:"
)

TEMPLATES: Mapping[str, Template] = MappingProxyType(
    {
        "qa": Template(name="qa", body=_QA_BODY),
        # UnifiedQA's input encoding: question first, parts joined by the two characters \n,
        # options as "(a) x (b) y", everything lowercased.
        "unifiedqa": Template(
            name="unifiedqa",
            body=(
                "{{ question | lower }}"
                "{% if options %} \\n {{ options_block | lower }}{% endif %}"
                "{% if context %} \\n {{ context | lower }}{% endif %}"
            ),
            answer=" {{ answer | lower }}",
        ),
        "cloze": Template(name="cloze", body="{{ question }}", answer=""),
        # Chain of thought: the model reasons, then declares its answer ("The answer is X."),
        # as shots show it (with their worked solution where the data has one).
        # lm-evaluation-harness's own prompt for an item read from an lm-eval task (the
        # lm-eval loader): its text, few-shot examples and continuations, byte for byte.
        LM_EVAL_TEMPLATE: Template(
            name=LM_EVAL_TEMPLATE, body="{{ metadata.lm_eval.prompt }}", answer=""
        ),
        "qa-cot": Template(
            name="qa-cot",
            body=_QA_BODY + " Let's think step by step.",
            answer="{% if rationale %} {{ rationale }}{% endif %} The answer is {{ final_answer }}.",
            reasoning=True,
        ),
    }
)

FORMATS: Mapping[str, Format] = MappingProxyType(
    {
        "free": Format(name="free", kind="free"),
        "mc": Format(name="mc"),
        "mc-nota": Format(name="mc-nota", escape="none of the above"),
        "unifiedqa-mc": Format(
            name="unifiedqa-mc", labels="abcdefghij", option_style="({label}) {text}", joiner=" "
        ),
        "unifiedqa-nota": Format(
            name="unifiedqa-nota",
            escape="none of the above",
            labels="abcdefghij",
            option_style="({label}) {text}",
            joiner=" ",
        ),
    }
)
