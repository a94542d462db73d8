"""The study's design: seeded items with three options each, and the answer formats.

Items (see ``docs/study-formats.md`` for the procedure in prose):

1. Every answerable question of the source offers one *candidate distractor*: its first gold
   answer text.
2. A question's *key* is its first gold answer (answerable) or its first plausible answer,
   the decoy (unanswerable; a question without one is skipped). Its *excluded* texts are all
   of its gold answers, or all of its plausible answers.
3. Its distractor pool: the candidates of the other questions on the same paragraph, in
   source order, keeping a text only if it is non-empty after SQuAD normalisation and
   differs (normalised) from the excluded texts and from the texts already kept. With fewer
   than 2, the pool of the article's other paragraphs (same rule) is added and the item is
   flagged ``article_fallback``; with fewer than 2 still, the question is skipped.
4. ``rng = numpy.random.default_rng(seed)``; the answerable sample is
   ``rng.choice(n_qualified_answerable, size=answerable, replace=False)`` and then, from the
   same generator, the unanswerable one. Both keep the draw order, so the first N of a sample
   (``limit``) is itself a uniform sample.
5. Per item, a generator seeded with ``(seed, question-id hash)`` draws 2 distractors
   (``choice(..., 2, replace=False)`` from the paragraph pool; under the fallback all of the
   paragraph's plus the rest from the article pool) and then ``permutation(3)`` of
   ``[key, first distractor, second distractor]``: the options' order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..._errors import ConfigError
from ..._seeds import derive_seed
from ...conditions import FORMATS, TEMPLATES, Condition, Format, Generation, Template
from ...items import Item, SquadData, SquadParagraph, SquadQuestion
from ...models import Backend
from ...scoring import GENERATE, normalize_answer
from ._config import ListScoring

__all__ = [
    "CONTROL_WORDS",
    "ConditionRole",
    "FormatsDesignOptions",
    "ItemsBuild",
    "Qualified",
    "build_conditions",
    "build_items",
    "check_template",
    "qualify",
    "stable_rng",
    "without_decoy",
]

#: The words a control escape option is drawn from (one per study, seeded): plain nouns that
#: answer no question, so picking one is a position or "fourth option" effect.
CONTROL_WORDS: tuple[str, ...] = (
    "lantern",
    "meadow",
    "copper kettle",
    "violet",
    "harbor",
    "pebble",
    "orchard",
    "saddle",
)


def stable_rng(seed: int, *tags: str) -> np.random.Generator:
    """A generator seeded from ``seed`` and text tags (SHA-256 of the tags, first 8 bytes)."""
    ints = [int(seed), *(derive_seed(tag) for tag in tags)]
    return np.random.default_rng(np.random.SeedSequence(ints))


# -- items ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Qualified:
    """A question that can get three options: its key, its pools, where it comes from."""

    question: SquadQuestion
    paragraph: SquadParagraph
    key: str
    paragraph_pool: tuple[str, ...]
    article_pool: tuple[str, ...]  # empty unless the paragraph pool has fewer than 2

    @property
    def article_fallback(self) -> bool:
        return len(self.paragraph_pool) < 2


@dataclass(frozen=True)
class ItemsBuild:
    """The sampled items and every count of how they were chosen."""

    items: tuple[Item, ...]
    counts: dict[str, Any] = field(default_factory=dict)


def _distinct(texts: Sequence[str], excluded: set[str]) -> list[str]:
    seen = set(excluded)
    out = []
    for t in texts:
        n = normalize_answer(t)
        if n and n not in seen:
            seen.add(n)
            out.append(t)
    return out


def qualify(data: SquadData) -> tuple[list[Qualified], list[Qualified], Counter[str]]:
    """Answerable and unanswerable questions that can get options, and skip reasons.

    Skip reasons are counted as ``"answerable: <reason>"`` / ``"unanswerable: <reason>"``.
    """
    answerable: list[Qualified] = []
    unanswerable: list[Qualified] = []
    skipped: Counter[str] = Counter()
    for article in data.articles:
        offers = [
            [(q.id, q.answers[0]) for q in p.questions if not q.is_impossible and q.answers]
            for p in article.paragraphs
        ]
        for pi, para in enumerate(article.paragraphs):
            for q in para.questions:
                kind = "unanswerable" if q.is_impossible else "answerable"
                keys = q.plausible_answers if q.is_impossible else q.answers
                if not keys:
                    skipped[f"{kind}: no plausible answer (decoy) in the source"] += 1
                    continue
                excluded = {normalize_answer(t) for t in keys}
                if not normalize_answer(keys[0]):
                    skipped[f"{kind}: key answer is empty after normalisation"] += 1
                    continue
                own = _distinct([t for qid, t in offers[pi] if qid != q.id], excluded)
                rest: list[str] = []
                if len(own) < 2:
                    others = [t for j, o in enumerate(offers) if j != pi for _, t in o]
                    rest = _distinct(others, excluded | {normalize_answer(t) for t in own})
                    if len(own) + len(rest) < 2:
                        skipped[
                            f"{kind}: fewer than 2 distinct answers in paragraph and article"
                        ] += 1
                        continue
                entry = Qualified(q, para, keys[0], tuple(own), tuple(rest))
                (unanswerable if q.is_impossible else answerable).append(entry)
    return answerable, unanswerable, skipped


def _item(entry: Qualified, seed: int) -> Item:
    q = entry.question
    rng = stable_rng(seed, q.id)
    pool = list(entry.paragraph_pool)
    if len(pool) >= 2:
        picks = [pool[int(i)] for i in rng.choice(len(pool), size=2, replace=False)]
    else:
        extra = rng.choice(len(entry.article_pool), size=2 - len(pool), replace=False)
        picks = pool + [entry.article_pool[int(i)] for i in extra]
    base = [entry.key, *picks]
    perm = [int(i) for i in rng.permutation(3)]
    options = tuple(base[i] for i in perm)
    key_index = perm.index(0)
    golds = tuple(dict.fromkeys(q.answers))
    meta: dict[str, Any] = {
        "paragraph_id": entry.paragraph.id,
        "title": entry.paragraph.title,
        "question": q.question,
        "variant": "base",
        "base_id": q.id,
        "article_fallback": entry.article_fallback,
        "decoy": entry.key if q.is_impossible else None,
        "decoy_option": key_index if q.is_impossible else None,
    }
    return Item(
        id=q.id,
        question=q.question,
        context=entry.paragraph.context,
        options=options,
        answers=() if q.is_impossible else golds,
        gold_options=() if q.is_impossible else (key_index,),
        answerable=not q.is_impossible,
        metadata=meta,
    )


def without_decoy(item: Item) -> Item:
    """The unanswerable ``item`` with its decoy removed (id ``<id>~no-decoy``)."""
    meta = dict(item.to_dict()["metadata"])
    decoy = meta["decoy_option"]
    assert item.options is not None and decoy is not None
    meta.update(variant="no-decoy", decoy=None, decoy_option=None)
    return Item(
        id=f"{item.id}~no-decoy",
        question=item.question,
        context=item.context,
        options=tuple(o for i, o in enumerate(item.options) if i != decoy),
        answerable=False,
        metadata=meta,
    )


def build_items(
    data: SquadData,
    *,
    answerable: int,
    unanswerable: int,
    seed: int,
    limit: int | None = None,
    no_decoy: bool = False,
) -> ItemsBuild:
    """Sample ``answerable`` + ``unanswerable`` items with three options each (seeded).

    The first ``limit`` of each sample is kept (the same questions a full run starts with).
    With ``no_decoy`` every sampled unanswerable item also appears without its decoy.

    Raises
    ------
    ConfigError
        If fewer questions qualify than were asked for; the message gives the counts.
    """
    ans, unans, skipped = qualify(data)
    for kind, want, have in (
        ("answerable", answerable, ans),
        ("unanswerable", unanswerable, unans),
    ):
        if want > len(have):
            hint = ""
            if kind == "unanswerable" and not data.has_plausible_answers:
                hint = (
                    "; the source has no plausible_answers (the hub's squad_v2 drops them), so "
                    "unanswerable questions have no decoy: use the official dev-v2.0.json"
                )
            raise ConfigError(
                f"{data.source}: asked for {want} {kind} questions but only {len(have)} can get "
                f"three distinct options{hint}"
            )
    rng = np.random.default_rng(seed)
    pick_a = [int(i) for i in rng.choice(len(ans), size=answerable, replace=False)]
    pick_u = [int(i) for i in rng.choice(len(unans), size=unanswerable, replace=False)]
    if limit is not None:
        pick_a, pick_u = pick_a[:limit], pick_u[:limit]
    chosen = [ans[i] for i in pick_a] + [unans[i] for i in pick_u]
    items = [_item(e, seed) for e in chosen]
    if no_decoy:
        items += [without_decoy(it) for it in items if not it.answerable]
    counts: dict[str, Any] = {
        "source": data.source,
        "questions": {
            "answerable": sum(not q.is_impossible for q in data.questions),
            "unanswerable": sum(q.is_impossible for q in data.questions),
        },
        "qualified": {
            "answerable": {
                "paragraph": sum(not e.article_fallback for e in ans),
                "with_article_fallback": len(ans),
            },
            "unanswerable": {
                "paragraph": sum(not e.article_fallback for e in unans),
                "with_article_fallback": len(unans),
            },
        },
        "skipped": dict(sorted(skipped.items())),
        "sampled": {"answerable": len(pick_a), "unanswerable": len(pick_u)},
        "article_fallback_in_sample": {
            "answerable": sum(ans[i].article_fallback for i in pick_a),
            "unanswerable": sum(unans[i].article_fallback for i in pick_u),
        },
    }
    return ItemsBuild(items=tuple(items), counts=counts)


# -- conditions -------------------------------------------------------------------------------

ConditionRole = Literal["free", "list", "escape", "control"]

#: UnifiedQA's SQuAD training encoding puts the article title before the paragraph.
UNIFIEDQA_TITLE = Template(
    name="unifiedqa-title",
    body=(
        "{{ question | lower }} \\n "
        "{% if options %}{{ options_block | lower }} \\n {% endif %}"
        "({{ metadata.title | lower }}) {{ context | lower }}"
    ),
    answer=" {{ answer | lower }}",
)


@dataclass(frozen=True)
class FormatsDesignOptions:
    """The settings that shape the conditions (see :class:`FormatsConfig` for each)."""

    template: Literal["unifiedqa", "unifiedqa-title", "qa"]
    scoring: ListScoring = "generate"
    refusal_text: str = "no answer>"
    escapes: tuple[str, ...] = ()
    refusal_phrases: tuple[str, ...] = ("no answer>",)
    max_new_tokens: int = 24
    orders: int = 0
    control_word: str | None = None
    temperature: float | None = None
    n_samples: int = 1
    sampling_seed: int = 0


def _formats(template: str) -> tuple[Format, Format, str]:
    """The no-escape list, the list + "none of the above", and the name prefix."""
    if template.startswith("unifiedqa"):
        return FORMATS["unifiedqa-mc"], FORMATS["unifiedqa-nota"], "unifiedqa"
    return FORMATS["mc"], FORMATS["mc-nota"], "mc"


#: A list condition: its name, format, role and escape text ("" for none).
_ListCondition = tuple[str, Format, ConditionRole, str]


def _escape_format(plain: Format, name: str, text: str) -> Format:
    """``plain`` (the no-escape list) with ``text`` as its escape option."""
    return Format(
        name=name,
        escape=text,
        labels=plain.labels,
        option_style=plain.option_style,
        joiner=plain.joiner,
        continuation_prefix=plain.continuation_prefix,
    )


def _list_conditions(opts: FormatsDesignOptions) -> list[_ListCondition]:
    """The list formats: no escape, "none of the above", the model's refusal text, the extra
    escape phrasings and the control word, in that order."""
    plain, nota, prefix = _formats(opts.template)
    refusal = _escape_format(plain, f"{prefix}-refusal", opts.refusal_text)
    lists: list[_ListCondition] = [
        ("list", plain, "list", ""),
        ("list-nota", nota, "escape", nota.escape or ""),
        ("list-refusal", refusal, "escape", opts.refusal_text),
    ]
    for i, text in enumerate(opts.escapes, start=1):
        fmt = _escape_format(plain, f"{prefix}-escape-{i}", text)
        lists.append((f"list-escape-{i}", fmt, "escape", text))
    if opts.control_word is not None:
        fmt = _escape_format(plain, f"{prefix}-control", opts.control_word)
        lists.append(("list-control", fmt, "control", opts.control_word))
    return lists


@dataclass
class _Conditions:
    """The conditions built so far, each with its description for the analysis."""

    template: Template
    greedy: Generation
    refusal_phrases: tuple[str, ...]
    conditions: list[Condition] = field(default_factory=list)
    described: list[dict[str, Any]] = field(default_factory=list)

    def make(self, name: str, fmt: Format, scoring: str, **kw: Any) -> Condition:
        """A condition of the study's template, greedy unless ``generation`` is given."""
        return Condition(
            name=name,
            template=self.template,
            format=fmt,
            scoring=scoring,
            generation=kw.pop("generation", self.greedy),
            refusal_phrases=self.refusal_phrases,
            **kw,
        )

    def add(
        self, cond: Condition, role: ConditionRole, escape: str, variant: str, base: str
    ) -> None:
        """Add ``cond`` with its role, escape text, variant and base condition."""
        self.conditions.append(cond)
        self.described.append(
            {
                "name": cond.name,
                "format": cond.format.name,
                "role": role,
                "escape": escape or None,
                "variant": variant,
                "base": base,
                "scoring": cond.scoring,
                "order_seed": cond.order_seed if cond.option_order == "shuffled" else None,
            }
        )


def build_conditions(opts: FormatsDesignOptions) -> tuple[list[Condition], list[dict[str, Any]]]:
    """The study's conditions and, for the analysis, one description per condition.

    Base conditions: ``free``, ``list`` (no escape), ``list-nota``, ``list-refusal`` (the
    model's own refusal text as option), ``list-escape-N`` (extra phrasings), ``list-control``
    (a random word as last option). Variants: ``<list condition>@order<k>`` (options shuffled
    with ``order_seed=k``) and ``<condition>~sampled`` (temperature sampling).
    """
    template = UNIFIEDQA_TITLE if opts.template == "unifiedqa-title" else TEMPLATES[opts.template]
    stop: tuple[str, ...] = () if opts.template.startswith("unifiedqa") else ("\n",)
    greedy = Generation(max_new_tokens=opts.max_new_tokens, temperature=0.0, stop=stop)
    lists = _list_conditions(opts)
    out = _Conditions(template, greedy, opts.refusal_phrases)
    out.add(out.make("free", FORMATS["free"], GENERATE), "free", "", "base", "free")
    for name, fmt, role, escape in lists:
        out.add(out.make(name, fmt, opts.scoring), role, escape, "base", name)
    for k in range(1, opts.orders + 1):
        for name, fmt, role, escape in lists:
            cond = out.make(
                f"{name}@order{k}", fmt, opts.scoring, option_order="shuffled", order_seed=k
            )
            out.add(cond, role, escape, "order", name)
    if opts.temperature is not None:
        sampled = Generation(
            max_new_tokens=opts.max_new_tokens,
            temperature=opts.temperature,
            n_samples=opts.n_samples,
            stop=stop,
            seed=opts.sampling_seed,
        )
        free = out.make("free~sampled", FORMATS["free"], GENERATE, generation=sampled)
        out.add(free, "free", "", "sampled", "free")
        if opts.scoring == GENERATE:  # option-scored lists have no sampled variant
            for name, fmt, role, escape in lists:
                cond = out.make(f"{name}~sampled", fmt, GENERATE, generation=sampled)
                out.add(cond, role, escape, "sampled", name)
    return out.conditions, out.described


def check_template(
    backends: Sequence[Backend], template: str
) -> Literal["unifiedqa", "unifiedqa-title", "qa"]:
    """Resolve ``template="auto"`` from the models' declared input format
    (:class:`~steadyeval.models.Capabilities`): UnifiedQA's encoding when every model expects
    it, the plain ``qa`` template when none does."""
    if template != "auto":
        return template  # type: ignore[return-value]
    uqa = [b.capabilities.input_format == "unifiedqa" for b in backends]
    if uqa and all(uqa):
        return "unifiedqa"
    if not any(uqa):
        return "qa"
    raise ConfigError(
        "template: auto cannot serve UnifiedQA and other models in one study "
        f"({', '.join(b.identity() for b in backends)}); set template to unifiedqa, "
        "unifiedqa-title or qa"
    )
