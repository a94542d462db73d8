"""What of an Inspect task maps onto steadyeval items: the solver chain and the scorer,
recognised by the names inspect_ai registers them under (``inspect_ai/multiple_choice``,
``inspect_ai/generate``, ``inspect_ai/choice``, ``inspect_ai/match``,
``inspect_ai/includes``), and each sample as one :class:`Item`.

Two shapes map cleanly: ``multiple_choice`` scored by ``choice`` (the sample's choices are
the options, its target letters the gold options) and ``generate`` scored by ``match`` or
``includes`` (the targets are the gold answers). Steps that only shape the prompt
(``system_message``, ``user_message``, ``prompt_template``, ``chain_of_thought``) are
allowed and named in ``metadata["inspect_solver"]``: in steadyeval the prompt is a
condition. Anything else (tools, agents, custom solvers, model-graded scorers, sandboxes)
is refused with the reason. Called by :mod:`._inspect_task`, which imports inspect_ai.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import ConfigError, DataError
from ._item import Item
from ._text import shorten

__all__ = ["TaskShape", "task_items", "task_shape"]

#: Solver steps that only shape the prompt; steadyeval's conditions own the prompt.
PROMPT_STEPS = ("system_message", "user_message", "prompt_template", "chain_of_thought")
#: The scorer each answering solver maps with.
SCORERS = {"multiple_choice": ("choice",), "generate": ("match", "includes")}
#: Options of each mapped Inspect function recorded in metadata (``inspect_OPTION``).
RECORDED = {
    "multiple_choice": ("multiple_correct", "cot"),
    "match": ("location", "ignore_case", "numeric"),
    "includes": ("ignore_case",),
}
_SUPPORTED = (
    "solver multiple_choice with scorer choice, or solver generate with scorer match or "
    f"includes (prompt steps allowed before them: {', '.join(PROMPT_STEPS)})"
)
_PKG = "inspect_ai/"


@dataclass(frozen=True)
class TaskShape:
    """How one task maps: the answering solver (``multiple_choice`` or ``generate``), the
    scorer used and what every item's metadata records of them."""

    solver: str
    scorer: str
    metadata: dict[str, Any]


def _name(obj: object) -> str:
    """The registered name of an Inspect solver or scorer (``inspect_ai/`` stripped from
    inspect_ai's own; another package's keeps its prefix, so it never passes as one)."""
    from inspect_ai.util import registry_info

    try:
        name = registry_info(obj).name
    except ValueError:
        return getattr(obj, "__qualname__", type(obj).__name__)
    return name[len(_PKG) :] if name.startswith(_PKG) else name


def _options(obj: object, name: str) -> dict[str, Any]:
    """The options ``obj`` was created with, defaults filled in from the public factory's
    signature (e.g. ``match(location="any")`` → location any, ignore_case True, numeric
    False)."""
    import inspect_ai.scorer
    import inspect_ai.solver

    # inspect_ai records creation arguments on the object but exports no reader for them:
    # registry_params is private (inspect_ai._util.registry); Inspect's eval log records
    # a task's solvers and scorers with it.
    from inspect_ai._util.registry import registry_params

    factory = getattr(inspect_ai.solver, name, None) or getattr(inspect_ai.scorer, name)
    bound = inspect.signature(factory).bind_partial(**registry_params(obj))
    bound.apply_defaults()
    return {k: v for k, v in bound.arguments.items() if k in RECORDED[name]}


def _steps(solver: object) -> list[object]:
    """The solver chain flattened (a ``chain`` is a sequence of solvers)."""
    if _name(solver) == "chain" and isinstance(solver, Sequence):
        return [step for part in solver for step in _steps(part)]
    return [solver]


def task_shape(task: Any, spec: str) -> TaskShape:
    """Recognise ``task``'s solver chain and scorer, or refuse it naming ``spec``, what it
    found and what is supported."""
    for found, what in ((task.sandbox, "runs in a sandbox"), (task.setup, "has a setup solver")):
        if found is not None:
            raise ConfigError(
                f"{spec}: the task {what}, which steadyeval items cannot reproduce "
                f"(supported: {_SUPPORTED}, without sandbox or setup)"
            )
    names = [_name(s) for s in _steps(task.solver)]
    answering = [n for n in names if n not in PROMPT_STEPS]
    if len(answering) != 1 or answering[0] not in SCORERS:
        raise ConfigError(
            f"{spec}: the solver chain is {' -> '.join(names) or 'empty'}, which steadyeval "
            f"cannot reproduce (supported: {_SUPPORTED})"
        )
    solver = answering[0]
    scorers = list(task.scorer or [])
    found = [_name(s) for s in scorers]
    usable = [k for k, n in enumerate(found) if n in SCORERS[solver]]
    if not usable:
        raise ConfigError(
            f"{spec}: scorer {', '.join(found) or 'none'} with solver {solver} does not map "
            f"to steadyeval scoring (supported: {_SUPPORTED})"
        )
    scorer = found[usable[0]]
    meta: dict[str, Any] = {"inspect_scorer": scorer, "inspect_solver": " -> ".join(names)}
    others = [n for k, n in enumerate(found) if k != usable[0]]
    if others:
        meta["inspect_other_scorers"] = ", ".join(others)  # not reproduced: said, not dropped
    step = next(s for s in _steps(task.solver) if _name(s) == solver)
    for name, obj in ((solver, step), (scorer, scorers[usable[0]])):
        if name in RECORDED:
            meta.update({f"inspect_{k}": v for k, v in _options(obj, name).items()})
    return TaskShape(solver=solver, scorer=scorer, metadata=meta)


def _input_text(sample: Any, where: str) -> str:
    """The sample's input: a string, or a single user message holding only text."""
    from inspect_ai.model import ChatMessageUser, ContentText

    value = sample.input
    if isinstance(value, str):
        return value
    if len(value) == 1 and isinstance(value[0], ChatMessageUser):
        content = value[0].content
        if isinstance(content, str) or all(isinstance(c, ContentText) for c in content):
            return str(value[0].text)
    roles = ", ".join(getattr(m, "role", type(m).__name__) for m in value)
    raise DataError(
        f"input is a chat of {len(value)} message(s) ({roles})",
        file=where,
        field="input",
        expected="a string or one user message of text",
    )


def _targets(sample: Any) -> list[str]:
    target = sample.target
    values = [target] if isinstance(target, str) else list(target)
    return [t for t in values if t != ""]


def _gold_options(targets: list[str], n: int, where: str) -> tuple[int, ...]:
    """Option indices from target letters, read as Inspect's ``choice`` scorer reads them:
    tokens split at commas and spaces; a number N is position 25 + N, letters A-Z one each."""
    gold: list[int] = []
    for value in targets:
        for token in value.replace(",", " ").split():
            if token.isdecimal() and int(token) > 0:
                gold.append(25 + int(token))
                continue
            for char in token:
                if not ("A" <= char.upper() <= "Z"):
                    raise DataError(
                        f"target {shorten(repr(value), 40)} is not answer letters",
                        file=where,
                        field="target",
                        expected="letters such as 'B' (or 'A, C') naming the choices",
                    )
                gold.append(ord(char.upper()) - ord("A"))
    beyond = [g for g in gold if g >= n]
    if not gold or beyond:
        said = ", ".join(chr(ord("A") + g) if g < 26 else str(g - 25) for g in beyond)
        raise DataError(
            f"target {shorten(repr(' '.join(targets)), 40)} names "
            + (f"{said}, beyond the {n} choices" if beyond else "no choice"),
            file=where,
            field="target",
            expected=f"letters A-{chr(ord('A') + min(n, 26) - 1)} of the sample's choices",
        )
    return tuple(dict.fromkeys(gold))


def _metadata(sample: Any, fixed: dict[str, Any], where: str) -> dict[str, Any]:
    """The sample's scalar metadata with ``fixed`` (subtask, inspect_*) added; a sample
    key that would be overwritten is an error."""
    own = {
        str(k): v
        for k, v in (sample.metadata or {}).items()
        if v is None or isinstance(v, str | int | float | bool)
    }
    clash = sorted(set(own) & set(fixed))
    if clash:
        raise DataError(
            f"sample metadata has key {clash[0]!r}, which steadyeval sets",
            file=where,
            field=f"metadata.{clash[0]}",
            expected=f"no key among {', '.join(sorted(fixed))}",
        )
    return {**own, **fixed}


def _sample_item(
    sample: Any, item_id: str, shape: TaskShape, fixed: dict[str, Any], label: str
) -> Item:
    where = f"{label} sample {shorten(repr(item_id))}"
    for field in ("sandbox", "files", "setup"):
        if getattr(sample, field):
            raise DataError(
                f"the sample has {field}", file=where, field=field, expected="none for items"
            )
    question = _input_text(sample, where)
    targets = _targets(sample)
    meta = _metadata(sample, fixed, where)
    if shape.solver == "multiple_choice":
        choices = sample.choices
        if not choices:
            raise DataError(
                "no choices", file=where, field="choices", expected="choices for multiple_choice"
            )
        gold = _gold_options(targets, len(choices), where)
        return Item(
            id=item_id, question=question, options=tuple(choices), gold_options=gold, metadata=meta
        )
    if sample.choices:
        raise DataError(
            "choices with solver generate",
            file=where,
            field="choices",
            expected="no choices (or solver multiple_choice with scorer choice)",
        )
    if not targets:
        raise DataError("empty target", file=where, field="target", expected="a gold answer")
    return Item(id=item_id, question=question, answers=tuple(targets), metadata=meta)


def task_items(
    samples: Sequence[Any], shape: TaskShape, *, name: str, label: str, prefix: bool
) -> list[Item]:
    """One item per sample of task ``name``: id ``Sample.id`` (else its 1-based position),
    prefixed ``name/`` when ``prefix``; ``metadata["subtask"]`` is ``name``. Errors name
    ``label`` (the task spec) and the sample."""
    fixed = {"subtask": name, **shape.metadata}
    items: list[Item] = []
    seen: set[str] = set()
    for position, sample in enumerate(samples, start=1):
        raw = str(sample.id) if sample.id is not None else str(position)
        item_id = f"{name}/{raw}" if prefix else raw
        if item_id in seen:
            raise DataError(
                f"duplicate sample id {shorten(repr(raw))} (sample {position})",
                file=label,
                field="id",
                expected="sample ids unique in the task",
            )
        seen.add(item_id)
        items.append(_sample_item(sample, item_id, shape, fixed, label))
    if not items:
        raise DataError("no samples", file=label, expected="a task with at least one sample")
    return items
