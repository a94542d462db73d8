"""FewGLUE / SuperGLUE tasks for the few-shot study: each task's data (from
:mod:`steadyeval.items`), patterns (with a ``[Y]`` slot), verbalizers and classifier inputs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

import numpy as np

from ..._errors import ConfigError
from ...items import FEWGLUE, FewGlueTask, Item, fewglue_task, load_fewglue_items

__all__ = [
    "TASKS",
    "FewShotTask",
    "get_task",
    "item_groups",
    "load_task_items",
    "split_off_test",
]


@dataclass(frozen=True)
class FewShotTask:
    """A SuperGLUE task as few-shot items.

    Attributes
    ----------
    data : FewGlueTask
        The task's data: its name, hub configuration, kind, labels, record fields.
    patterns : mapping
        Pattern name -> Jinja2 source with one ``[Y]`` answer slot; variables are the
        item's fields (``metadata.premise`` ...).
    verbalizers : mapping
        Verbalizer name -> {label: word}; empty for choice tasks.
    cls_inputs : callable
        An item's text pairs for a classification head (one pair, or one per choice).
    """

    data: FewGlueTask
    patterns: Mapping[str, str]
    verbalizers: Mapping[str, Mapping[str, str]]
    cls_inputs: Callable[[Item], tuple[tuple[str, str | None], ...]] = field(repr=False)

    @property
    def name(self) -> str:
        return self.data.name

    @property
    def key(self) -> str:
        return self.data.key

    @property
    def kind(self) -> Literal["classify", "choice"]:
        return self.data.kind

    @property
    def labels(self) -> tuple[str, ...]:
        return self.data.labels

    @property
    def grouped(self) -> bool:
        return self.data.grouped


def _pair(a: str, b: str) -> Callable[[Item], tuple[tuple[str, str | None], ...]]:
    def inputs(item: Item) -> tuple[tuple[str, str | None], ...]:
        return ((str(item.metadata[a]), str(item.metadata[b])),)

    return inputs


def _wic_inputs(item: Item) -> tuple[tuple[str, str | None], ...]:
    m = item.metadata
    return ((f"{m['word']}: {m['sentence1']}", str(m["sentence2"])),)


def _wsc_inputs(item: Item) -> tuple[tuple[str, str | None], ...]:
    m = item.metadata
    return ((str(m["text"]), f"{m['span2']} refers to {m['span1']}"),)


def _multirc_inputs(item: Item) -> tuple[tuple[str, str | None], ...]:
    m = item.metadata
    return ((str(m["passage"]), f"{m['question']} {m['answer']}"),)


def _copa_inputs(item: Item) -> tuple[tuple[str, str | None], ...]:
    m = item.metadata
    assert item.options is not None
    return tuple((f"{m['premise_stem']} {m['connective']}", o) for o in item.options)


_YES_NO = MappingProxyType({"false": "no", "true": "yes"})
_TRUE_FALSE = MappingProxyType({"false": "false", "true": "true"})
_P, _H = "metadata.premise", "metadata.hypothesis"

TASKS: Mapping[str, FewShotTask] = MappingProxyType(
    {
        t.key: t
        for t in (
            FewShotTask(
                data=FEWGLUE["boolq"],
                patterns=MappingProxyType(
                    {
                        "passage-question": "{{ metadata.passage }}\nQuestion: {{ metadata.question }}?"
                        "\nAnswer: [Y].",
                        "based-on": "{{ metadata.passage }} Based on the previous passage, "
                        "{{ metadata.question }}? [Y].",
                    }
                ),
                verbalizers=MappingProxyType({"yes-no": _YES_NO, "true-false": _TRUE_FALSE}),
                cls_inputs=_pair("passage", "question"),
            ),
            FewShotTask(
                data=FEWGLUE["cb"],
                patterns=MappingProxyType(
                    {
                        "question": f"{{{{ {_P} }}}}\nQuestion: {{{{ {_H} }}}} Yes, no, or maybe?"
                        "\nAnswer: [Y].",
                        "based-on": f"{{{{ {_P} }}}} Based on the previous passage, is it true that "
                        f'"{{{{ {_H} }}}}"? [Y].',
                        "pet-quote": f'"{{{{ {_H} }}}}"? | [Y], "{{{{ {_P} }}}}"',
                    }
                ),
                verbalizers=MappingProxyType(
                    {
                        "yes-no-maybe": MappingProxyType(
                            {"entailment": "yes", "contradiction": "no", "neutral": "maybe"}
                        ),
                        "true-false-neither": MappingProxyType(
                            {"entailment": "true", "contradiction": "false", "neutral": "neither"}
                        ),
                    }
                ),
                cls_inputs=_pair("premise", "hypothesis"),
            ),
            FewShotTask(
                data=FEWGLUE["copa"],
                patterns=MappingProxyType(
                    {
                        "connective": "{{ metadata.premise_stem }} {{ metadata.connective }} [Y].",
                        "pet-choices": '"{{ metadata.choice1 | trim }}" or "{{ metadata.choice2 | trim }}'
                        '"? {{ metadata.premise_stem }} {{ metadata.connective }} [Y].',
                    }
                ),
                verbalizers=MappingProxyType({}),
                cls_inputs=_copa_inputs,
            ),
            FewShotTask(
                data=FEWGLUE["multirc"],
                patterns=MappingProxyType(
                    {
                        "correct-answer": "{{ metadata.passage }}\nQuestion: {{ metadata.question }}\n"
                        'Is the correct answer "{{ metadata.answer }}"? [Y].',
                        "based-on": "{{ metadata.passage }} Based on the previous passage, "
                        '{{ metadata.question }} Is "{{ metadata.answer }}" a correct answer? '
                        "[Y].",
                    }
                ),
                verbalizers=MappingProxyType({"yes-no": _YES_NO, "true-false": _TRUE_FALSE}),
                cls_inputs=_multirc_inputs,
            ),
            FewShotTask(
                data=FEWGLUE["rte"],
                patterns=MappingProxyType(
                    {
                        "question": f"{{{{ {_P} }}}}\nQuestion: {{{{ {_H} }}}} Yes or no?\nAnswer: [Y].",
                        "based-on": f"{{{{ {_P} }}}} Based on the previous passage, is it true that "
                        f'"{{{{ {_H} }}}}"? [Y].',
                        "pet-quote": f'"{{{{ {_H} }}}}"? | [Y], "{{{{ {_P} }}}}"',
                    }
                ),
                verbalizers=MappingProxyType(
                    {
                        "yes-no": MappingProxyType({"entailment": "yes", "not_entailment": "no"}),
                        "true-false": MappingProxyType(
                            {"entailment": "true", "not_entailment": "false"}
                        ),
                    }
                ),
                cls_inputs=_pair("premise", "hypothesis"),
            ),
            FewShotTask(
                data=FEWGLUE["wic"],
                patterns=MappingProxyType(
                    {
                        "same-meaning": "{{ metadata.sentence1 }} {{ metadata.sentence2 }} Does the word "
                        '"{{ metadata.word }}" have the same meaning in both sentences? '
                        "[Y].",
                        "similar-sense": '"{{ metadata.sentence1 }}" / "{{ metadata.sentence2 }}". '
                        'Similar sense of "{{ metadata.word }}"? [Y].',
                    }
                ),
                verbalizers=MappingProxyType({"yes-no": _YES_NO, "true-false": _TRUE_FALSE}),
                cls_inputs=_wic_inputs,
            ),
            FewShotTask(
                data=FEWGLUE["wsc"],
                patterns=MappingProxyType(
                    {
                        "refer": "{{ metadata.text }} In the previous sentence, does the pronoun "
                        '"{{ metadata.span2 }}" refer to {{ metadata.span1 }}? [Y].',
                        "question": "{{ metadata.text }}\nQuestion: In the passage above, does "
                        '"{{ metadata.span2 }}" refer to "{{ metadata.span1 }}"?\n'
                        "Answer: [Y].",
                    }
                ),
                verbalizers=MappingProxyType({"yes-no": _YES_NO, "true-false": _TRUE_FALSE}),
                cls_inputs=_wsc_inputs,
            ),
        )
    }
)


def get_task(name: str) -> FewShotTask:
    """The task called ``name`` (case-insensitive; unknown names are the loader's error)."""
    return TASKS[fewglue_task(name).key]


def load_task_items(task: FewShotTask | str, source: str | Path) -> list[Item]:
    """Labelled items of ``task`` from a FewGLUE/SuperGLUE JSONL file or ``superglue:SPLIT``
    (see :func:`steadyeval.items.load_fewglue_items`)."""
    t = get_task(task) if isinstance(task, str) else task
    return load_fewglue_items(source, task=t.data)


def item_groups(items: Sequence[Item]) -> list[str] | None:
    """Group labels for splitting (``metadata["group"]``), or None if no item has one."""
    if not any("group" in i.metadata for i in items):
        return None
    return [str(i.metadata.get("group", i.id)) for i in items]


def split_off_test(
    items: Sequence[Item], n_test: int, *, seed: int
) -> tuple[list[Item], list[Item]]:
    """Hold out ``n_test`` units (items, or groups for grouped tasks) as a labelled test set.

    The held-out units are a seeded random choice; both parts keep the input order. Useful
    offline, where the only labelled data are FewGLUE's 32 training examples per task.
    """
    groups = item_groups(items)
    units = list(dict.fromkeys(groups)) if groups is not None else [i.id for i in items]
    if not 1 <= n_test < len(units):
        what = "groups" if groups is not None else "items"
        raise ConfigError(
            f"cannot hold out {n_test} of {len(units)} {what} as a test set; "
            f"choose 1..{len(units) - 1}"
        )
    rng = np.random.default_rng(seed)
    held = {units[int(i)] for i in rng.choice(len(units), size=n_test, replace=False)}
    keys = groups if groups is not None else [i.id for i in items]
    test = [it for it, k in zip(items, keys, strict=True) if k in held]
    rest = [it for it, k in zip(items, keys, strict=True) if k not in held]
    return rest, test
