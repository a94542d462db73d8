"""Cross items with conditions: the only place where the two meet."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import ConfigError
from .._seeds import derive_seed
from ..items import Item
from ._condition import Condition, Generation, Template
from ._scoring import get_scoring

if TYPE_CHECKING:  # jinja2 loads when the first template compiles, not on import
    from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = [
    "ANSWER_VARIABLES",
    "TEMPLATE_VARIABLES",
    "Expansion",
    "Trial",
    "expand",
    "render_template",
    "template_problem",
]

#: The variables every template part may use; a shot's ``answer`` part may also use
#: :data:`ANSWER_VARIABLES` (see :class:`~steadyeval.conditions.Template`).
TEMPLATE_VARIABLES = frozenset(
    {"question", "context", "options", "options_block", "entity", "subject", "metadata", "item_id"}
)
#: A shot's answer (``answer``), its worked reasoning where the data has one (``rationale``:
#: the item's ``metadata["rationale"]``, or what precedes GSM8K's ``####`` in the gold
#: answer) and the answer alone (``final_answer``: what follows ``#### ``, else ``answer``).
ANSWER_VARIABLES = frozenset({"answer", "rationale", "final_answer"})
#: GSM8K's marker between a worked solution and its final answer.
_FINAL_MARK = "####"


@dataclass(frozen=True)
class Trial:
    """An item asked under a condition: the rendered prompt and the options as shown.

    ``turns``: with ``fewshot_as_multiturn``, the shots as earlier chat turns (user,
    assistant); ``prompt`` is then the last user turn.
    """

    item: Item
    condition: Condition
    prompt: str
    options: tuple[str, ...] | None
    labels: tuple[str, ...]
    option_source: tuple[int, ...]
    escape_index: int | None
    gold_displayed: tuple[int, ...]
    n_shots_used: int
    alias: str | None
    turns: tuple[tuple[str, str], ...] = ()
    #: What goes before an option (or a gold continuation) scored as a continuation, where
    #: the item sets it (an lm-eval task's ``target_delimiter``); else the format's.
    continuation_prefix: str | None = None
    #: Generation limits the item brings (an lm-eval task's ``until`` and
    #: ``max_gen_toks``, where the condition leaves them unset); else the condition's.
    generation: Generation | None = None

    @property
    def transcript(self) -> str:
        """What was asked, as one text: the prompt, or with turns each turn under its role
        (the ``prompt`` column of the row)."""
        if not self.turns:
            return self.prompt
        parts = [f"<user>\n{u}\n<assistant>\n{a}\n" for u, a in self.turns]
        return "".join(parts) + f"<user>\n{self.prompt}"


@dataclass(frozen=True)
class Expansion:
    """What ``expand`` made: the trials, and how many (condition, reason) pairs it skipped."""

    trials: tuple[Trial, ...]
    skipped: Mapping[tuple[str, str], int] = field(default_factory=dict)

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())


@lru_cache(maxsize=1)
def _env() -> ImmutableSandboxedEnvironment:
    """The sandbox every prompt template renders in, with limits on memory and steps
    (:mod:`._sandbox`)."""
    from ._sandbox import bounded_environment

    return bounded_environment()


@lru_cache(maxsize=256)
def _compile(source: str) -> Any:
    return _env().from_string(source)


def render_template(source: str, variables: Mapping[str, Any], *, where: str) -> str:
    """Render one Jinja2 source; errors name the template part and the missing variable."""
    from ._sandbox import render_bounded

    try:
        return render_bounded(_compile(source), dict(variables))
    except Exception as exc:  # jinja2 raises several unrelated types; re-raised with a location
        raise ConfigError(f"template {where}: {type(exc).__name__}: {exc}") from None


def template_problem(source: str, *, answer: bool = False) -> str | None:
    """Why ``source`` cannot be a template part, or None: a syntax error (with its line in
    the template), an unknown filter or test, or a variable that is never defined
    (``answer``: the part may also use ``answer``, as a shot's answer part does). Checked
    when a config is read, so a broken template stops a run before any model loads."""
    from jinja2 import TemplateSyntaxError, meta

    try:
        _compile(source)
    except TemplateSyntaxError as exc:
        return f"template error at its line {exc.lineno}: {exc.message}"
    env = _env()
    usable = TEMPLATE_VARIABLES | (ANSWER_VARIABLES if answer else set())
    unknown = sorted(meta.find_undeclared_variables(env.parse(source)) - usable - set(env.globals))
    if unknown:
        return (
            f"template uses the undefined variable {unknown[0]!r}; variables: "
            f"{', '.join(sorted(usable))}"
        )
    return None


#: The scoring modes that apply to each lm-eval output type under the ``lm-eval`` template.
_LM_EVAL_SCORING = {
    "multiple_choice": frozenset({"lm-eval", "option-logprob"}),
    "loglikelihood": frozenset({"lm-eval"}),
    "generate_until": frozenset({"lm-eval", "generate"}),
}


def _lm_eval_skip(item: Item, cond: Condition) -> str | None:
    asked = item.metadata.get("lm_eval")
    if not isinstance(asked, Mapping) or not isinstance(asked.get("prompt"), str):
        return "item is not from an lm-eval task (template lm-eval)"
    kind = asked.get("output_type")
    if cond.scoring not in _LM_EVAL_SCORING.get(str(kind), ()):
        return f"scoring {cond.scoring} does not apply to lm-eval {kind} tasks"
    return None


def _skip_reason(item: Item, cond: Condition) -> str | None:
    if cond.lm_eval:
        return _lm_eval_skip(item, cond)
    if cond.items == "with-options" and not item.options:
        return "condition is for items with options"
    if cond.items == "without-options" and item.options:
        return "condition is for items without options"
    if cond.format.kind == "mc" and not item.options:
        return "multiple-choice format on an item without options"
    if cond.alias is not None and cond.alias >= len(item.aliases):
        return f"item has no alias #{cond.alias}"
    if cond.verbalizer is not None and item.options is not None:
        missing = [o for o in item.options if o not in cond.verbalizer]
        if missing:
            return "verbalizer lacks a label word"
    n_opts = len(item.options or ()) + (1 if cond.format.escape else 0)
    if cond.format.kind == "mc" and n_opts > len(cond.format.labels):
        return "more options than labels"
    return get_scoring(cond.scoring).skip_reason(item, cond)


def _displayed(item: Item, cond: Condition) -> tuple[tuple[str, ...], tuple[int, ...], int | None]:
    assert item.options is not None
    texts = list(item.options)
    if cond.verbalizer is not None:
        texts = [cond.verbalizer[o] for o in texts]
    order = list(range(len(texts)))
    if cond.option_order == "shuffled":
        rng = np.random.default_rng(derive_seed("order", cond.order_seed, item.id))
        order = [int(i) for i in rng.permutation(len(texts))]
    elif cond.option_order == "rotated" and texts:
        k = cond.rotation % len(texts)
        order = order[k:] + order[:k]
    shown = [texts[i] for i in order]
    escape_index = None
    if cond.format.escape is not None:
        escape_index = len(shown)
        shown.append(cond.format.escape)
        order.append(-1)
    return tuple(shown), tuple(order), escape_index


def _variables(item: Item, cond: Condition, options: tuple[str, ...] | None) -> dict[str, Any]:
    entity = None
    question = item.question
    if cond.alias is not None:
        entity = item.aliases[cond.alias]
    elif item.aliases:
        entity = item.aliases[0]
    if entity is not None:
        question = question.replace("[X]", entity)
    opts: list[dict[str, str]] = []
    block = ""
    if options is not None and cond.format.kind == "mc":
        fmt = cond.format
        opts = [{"label": fmt.labels[i], "text": t} for i, t in enumerate(options)]
        block = fmt.joiner.join(fmt.option_style.format(**o) for o in opts)
    return {
        "question": question,
        "context": item.context,
        "options": opts,
        "options_block": block,
        "entity": entity,
        "subject": item.metadata.get("subject"),
        "metadata": item.metadata,
        "item_id": item.id,
    }


def _shot_answer(
    shot: Item, cond: Condition, options: tuple[str, ...] | None, order: tuple[int, ...]
) -> str:
    if cond.format.kind == "mc" and options is not None:
        pos = order.index(shot.gold_options[0]) if shot.answerable else order.index(-1)
        if get_scoring(cond.scoring).shot_answer == "text":
            return options[pos]
        return cond.format.labels[pos]
    if not shot.answerable and cond.refusal_phrases:
        return cond.refusal_phrases[0]
    return shot.gold_texts[0] if shot.gold_texts else ""


def _answer_variables(shot: Item, answer: str) -> dict[str, str]:
    """A shot's :data:`ANSWER_VARIABLES`."""
    rationale = shot.metadata.get("rationale")
    final = answer
    if _FINAL_MARK in answer:
        before, _, after = answer.rpartition(_FINAL_MARK)
        final = after.strip()
        if not isinstance(rationale, str):
            rationale = before.strip()
    return {
        "answer": answer,
        "rationale": rationale if isinstance(rationale, str) else "",
        "final_answer": final,
    }


def _usable_shot(shot: Item, cond: Condition) -> bool:
    """A shot must apply to the condition and show an answer the format can express."""
    if _skip_reason(shot, cond) is not None:
        return False
    if cond.format.kind == "mc":
        return bool(shot.gold_options) if shot.answerable else cond.format.escape is not None
    return bool(shot.gold_texts) or (not shot.answerable and bool(cond.refusal_phrases))


class _ShotIndex:
    """The usable shots of one pool for one condition, grouped by the match key (built once
    per condition, so choosing shots does not rescan the pool for every item)."""

    def __init__(self, pool: Sequence[Item], cond: Condition) -> None:
        key = cond.shots.match
        self.groups: dict[Any, list[Item]] = {}
        for s in pool:
            if _usable_shot(s, cond):
                group = s.metadata.get(key) if key is not None else None
                self.groups.setdefault(group, []).append(s)

    def candidates(self, item: Item, cond: Condition) -> list[Item]:
        key = cond.shots.match
        group = item.metadata.get(key) if key is not None else None
        return [s for s in self.groups.get(group, ()) if s.id != item.id]


def _choose_shots(item: Item, cond: Condition, index: _ShotIndex) -> list[Item]:
    candidates = index.candidates(item, cond)
    n = min(cond.shots.n, len(candidates))
    limit_key = cond.shots.limit_key
    if limit_key is not None and limit_key in item.metadata:
        n = min(n, int(item.metadata[limit_key]))
    if cond.shots.selection == "first":
        return candidates[:n]
    rng = np.random.default_rng(derive_seed("shots", cond.shots.seed, item.id))
    picks = rng.choice(len(candidates), size=n, replace=False)
    return [candidates[int(i)] for i in picks]


def _render_lm_eval(item: Item, cond: Condition) -> Trial:
    """The item as lm-eval asks it: its prompt (shots included), the options as the task's
    continuations after its ``target_delimiter``, and its generation limits where the
    condition leaves them unset."""
    asked = item.metadata["lm_eval"]
    gen = cond.generation
    options = None
    if asked["output_type"] == "multiple_choice":  # lm-eval's own choices (e.g. MMLU's A-D)
        options = tuple(str(c) for c in asked.get("choices", item.options or ()))
    if asked["output_type"] == "generate_until":
        gen = replace(
            gen,
            max_new_tokens=gen.max_new_tokens or int(asked["max_gen_toks"]),
            stop=tuple(asked["until"]) if gen.stop is None else gen.stop,
        )
    labels = cond.format.labels
    n = len(options or ())
    return Trial(
        item=item,
        condition=cond,
        prompt=asked["prompt"],
        options=options,
        labels=tuple(labels[:n]) if n <= len(labels) else tuple(str(i) for i in range(n)),
        option_source=tuple(range(n)),
        escape_index=None,
        gold_displayed=item.gold_options if options is not None else (),
        n_shots_used=int(asked.get("num_fewshot", 0)),
        alias=None,
        continuation_prefix=(
            str(asked["target_delimiter"]) if asked["output_type"] == "multiple_choice" else ""
        ),
        generation=gen if asked["output_type"] == "generate_until" else None,
    )


def _render(item: Item, cond: Condition, shots_index: _ShotIndex | None) -> Trial:
    if cond.lm_eval:
        return _render_lm_eval(item, cond)
    tmpl: Template = cond.template
    options: tuple[str, ...] | None = None
    order: tuple[int, ...] = ()
    escape_index = None
    if cond.format.kind == "mc":
        options, order, escape_index = _displayed(item, cond)
    variables = _variables(item, cond, options)
    parts: list[str] = []
    at = f"(condition {cond.name!r}, item {item.id!r})"
    header = render_template(tmpl.header, variables, where=f"{tmpl.name!r} header {at}")
    shots = _choose_shots(item, cond, shots_index) if shots_index is not None else []
    turns: list[tuple[str, str]] = []
    for shot in shots:
        s_opts: tuple[str, ...] | None = None
        s_order: tuple[int, ...] = ()
        if cond.format.kind == "mc":
            s_opts, s_order, _ = _displayed(shot, cond)
        s_vars = _variables(shot, cond, s_opts)
        s_vars.update(_answer_variables(shot, _shot_answer(shot, cond, s_opts, s_order)))
        s_at = f"(condition {cond.name!r}, shot {shot.id!r} of item {item.id!r})"
        body = render_template(tmpl.body, s_vars, where=f"{tmpl.name!r} body {s_at}")
        ans = render_template(tmpl.answer, s_vars, where=f"{tmpl.name!r} answer {s_at}")
        if cond.fewshot_as_multiturn:
            turns.append(((header if not turns else "") + body, ans.strip()))
        else:
            parts.append(body + ans + tmpl.shot_separator)
    body = render_template(tmpl.body, variables, where=f"{tmpl.name!r} body {at}")
    prompt = body if turns else header + "".join(parts) + body
    gold_displayed: tuple[int, ...] = ()
    if options is not None:
        gold_displayed = tuple(order.index(g) for g in item.gold_options)
        if not item.answerable and escape_index is not None:
            gold_displayed = (escape_index,)
    labels = tuple(cond.format.labels[: len(options)]) if options is not None else ()
    return Trial(
        item=item,
        condition=cond,
        prompt=prompt,
        options=options,
        labels=labels,
        option_source=order,
        escape_index=escape_index,
        gold_displayed=gold_displayed,
        n_shots_used=len(shots),
        alias=variables["entity"] if cond.alias is not None else None,
        turns=tuple(turns),
    )


def expand(
    items: Sequence[Item],
    conditions: Sequence[Condition],
    *,
    shot_pools: Mapping[str, Sequence[Item]] | None = None,
) -> Expansion:
    """Cross every item with every condition.

    Pure and deterministic: the same inputs give the same trials in the same order
    (condition-major, then item order). A condition that does not apply to an item is
    skipped and counted under ``(condition name, reason)``.

    ``shot_pools`` maps a :class:`Shots` ``source`` name to the items shots are drawn
    from; the pool ``"default"`` is the evaluated items themselves unless given.
    """
    names = [c.name for c in conditions]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"condition names must be unique; repeated: {', '.join(dupes)}")
    pools: dict[str, Sequence[Item]] = {"default": items}
    pools.update(shot_pools or {})
    trials: list[Trial] = []
    skipped: Counter[tuple[str, str]] = Counter()
    for cond in conditions:
        if cond.shots.n and cond.shots.source not in pools:
            raise ConfigError(
                f"condition {cond.name!r}: shot source {cond.shots.source!r} is not loaded; "
                f"available: {', '.join(sorted(pools))}"
            )
        pool = pools.get(cond.shots.source, items)
        shots_index = _ShotIndex(pool, cond) if cond.shots.n else None
        for item in items:
            reason = _skip_reason(item, cond)
            if reason is not None:
                skipped[(cond.name, reason)] += 1
                continue
            trials.append(_render(item, cond, shots_index))
    return Expansion(trials=tuple(trials), skipped=dict(skipped))
