"""The study's design: items × (template, name) conditions, and the facts the analysis needs.

**Factual probes.** One item per fact (id ``relation/subject/object``, URIs when known);
``Item.answers`` holds every gold object of the fact's (relation, subject), its own first;
``Item.aliases`` the subject's names (canonical first, at most ``max_names``). Templates
differ per relation, but the core crosses every item with every condition, so condition
``tKK`` means *each relation's K-th template*: its body maps the item's
``metadata.relation`` to that relation's K-th template and puts the subject's name at
``[X]``. Every relation therefore contributes the same number of templates
(``templates_per_relation``, by default the smallest count among the relations; relations
with fewer are dropped and listed). Template 0 is the relation's original template. Each
template is crossed with the name index ``i`` (``Condition(alias=i)``): the core skips, and
counts, facts whose subject has fewer names. Scoring is top-k over the vocabulary (P@1 from
the top token) or, with ``candidates="relation"``, over the relation's objects.

**Generic tasks.** Any items with a list of templates shared by all items, crossed with the
subject's names when items have aliases; the analyses then use accuracy.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..._errors import ConfigError
from ..._files import limit_from_env
from ..._limits import MAX_SEED
from ...conditions import FORMATS, Condition, Format, Generation, Template
from ...items import Item, ProbeData, Relation, shorten
from ...models import split_slot
from ...results import StudyColumn
from ...scoring import GENERATE, OPTION_LOGPROB, TOP_K
from .._protocol import StudyDesign
from ._config import MAX_DRAWS, MAX_NAMES, MAX_SUBSETS, MAX_TEMPLATES
from ._probe_items import choose_relations, probe_items, weights_info
from ._stopwords import DEFAULT_STOP_WORDS
from ._types import SensitivityDesign

if TYPE_CHECKING:
    from ...run import Block

__all__ = [
    "MAX_DESIGN_ROWS",
    "AnalysisOptions",
    "ProbeOptions",
    "SensitivityWarning",
    "probe_design",
    "task_design",
    "template_names",
]


#: The most rows (items x conditions) one design may plan; ``STEADYEVAL_SENSITIVITY_MAX_ROWS``
#: raises it. Every template of every relation is crossed with every name of every fact.
MAX_DESIGN_ROWS = 2_000_000

#: The study's columns: the unit the analysis groups by, and the probed subject.
COLUMNS = (
    StudyColumn("relation", "string", "the probed relation (factual probes), else the item's"),
    StudyColumn("subject", "string", "the fact's subject (factual probes), else the item's"),
)


class SensitivityWarning(UserWarning):
    """Something in the design or analysis is not applicable or was reduced; see message."""


def _not_int(value: Any) -> bool:
    return isinstance(value, bool) or not isinstance(value, int)


def _shown(value: Any) -> str:
    return shorten(repr(value))


def _check_int(name: str, value: Any, low: int, high: int) -> None:
    """Refuse ``value`` unless it is an integer in ``low..high`` (a bound keeps a typo from
    starting an analysis that never ends)."""
    if _not_int(value) or not low <= value <= high:
        raise ConfigError(f"{name} must be an integer in {low}..{high:,}; got {_shown(value)}")


@dataclass(frozen=True)
class ProbeOptions:
    """How factual probes become items and conditions.

    Attributes
    ----------
    limit_per_relation : int, optional
        At most this many facts per relation: a seeded uniform sample (``seed``), kept in
        file order.
    templates_per_relation : int or "all", optional
        Templates used per relation (the original and the next ones in file order): a
        relation with more is cut to its first K, one with fewer is dropped. Default: the
        smallest count among the relations. ``"all"``: every template of every relation
        (the design then has one block per template count; see :func:`probe_design`).
    max_names : int
        At most this many names per subject (the canonical one and aliases).
    candidates : {"vocabulary", "relation"}
        P@1 over the model's whole vocabulary, or over the relation's objects (all objects
        of the relation in the data, before ``limit_per_relation``).
    vocab : frozenset of str, optional
        Keep only facts whose object is in this vocabulary (LAMA's common vocabulary).
    aliases : mapping, optional
        Extra subject names keyed by subject URI or label (see :func:`load_aliases`).
    relations : sequence of str, optional
        Use only these relations.
    seed : int
        Seed of the fact sample.
    top_k : int
        Tokens kept per prediction.
    """

    limit_per_relation: int | None = None
    templates_per_relation: int | Literal["all"] | None = None
    max_names: int = 5
    candidates: Literal["vocabulary", "relation"] = "vocabulary"
    vocab: frozenset[str] | None = None
    aliases: Mapping[str, Sequence[str]] | None = None
    relations: Sequence[str] | None = None
    seed: int = 42
    top_k: int = 10

    def __post_init__(self) -> None:
        bounds = {"limit_per_relation": 10_000_000, "templates_per_relation": MAX_TEMPLATES}
        for name, top in bounds.items():
            v = getattr(self, name)
            if name == "templates_per_relation" and v == "all":
                continue
            if v is not None and (_not_int(v) or not 1 <= v <= top):
                raise ConfigError(f"{name} must be an integer in 1..{top:,}; got {_shown(v)}")
        _check_int("max_names", self.max_names, 1, MAX_NAMES)
        _check_int("seed", self.seed, 0, MAX_SEED)
        _check_int("top_k", self.top_k, 1, 1000)
        if self.candidates not in ("vocabulary", "relation"):
            raise ConfigError(
                f"candidates must be 'vocabulary' or 'relation'; got {self.candidates!r}"
            )


@dataclass(frozen=True)
class AnalysisOptions:
    """How the analysis reads the table (stored in the design, so ``reanalyze`` repeats it).

    Attributes
    ----------
    n_subsets, subset_size : int
        Rank consistency: subsets of units (relations) drawn without replacement.
    seed : int
        Seed of every draw (subsets, random templates/names, sampled intervention).
    k_templates, k_names : int, optional
        The sampled backdoor adjustment draws ``k_templates`` templates per unit and
        ``k_names`` names per fact. ``None``: all (the sampled score equals the exact one).
    weights : {"uniform", "data"}
        P(template) in the adjustment: uniform, or the template weights from the data.
    gap : float
        Best−worst gap (0–1 scale) counted in the share of units "above the gap".
    n_resamples : int
        Bootstrap resamples of :func:`steadyeval.stats.spread`.
    ddof : {0, 1}
        Delta degrees of freedom of the std of a unit's scores across templates: 0 (the
        population std, as the authors' ``np.std``) or 1 (the sample std).
    std_rounding : {"exact", "reference"}
        The std across templates (Table 1): ``"exact"`` from the unrounded scores;
        ``"reference"`` as the authors' ``prompt_variance.py`` (c-box/causalEval): each
        template's P@1 as a percentage rounded to 2 decimals (line 50), the std of those
        rounded to 2 decimals (line 87), and the mean over units rounded to 2 decimals
        (``utils/utils.py`` line 280); stored divided by 100 (0–1 scale).
    stop_words : tuple of str, optional
        Verbalization stability skips predictions that are one of these words. ``None``:
        the authors' list (:data:`DEFAULT_STOP_WORDS`) for factual probes, none for generic
        tasks; ``()``: no rule.
    """

    n_subsets: int = 1000
    subset_size: int = 20
    seed: int = 42
    k_templates: int | None = None
    k_names: int | None = None
    weights: Literal["uniform", "data"] = "uniform"
    gap: float = 0.10
    n_resamples: int = 1000
    ddof: int = 0
    stop_words: tuple[str, ...] | None = None
    std_rounding: Literal["exact", "reference"] = "exact"

    def __post_init__(self) -> None:
        if self.ddof not in (0, 1):
            raise ConfigError(f"ddof must be 0 or 1; got {self.ddof!r}")
        if self.std_rounding not in ("exact", "reference"):
            raise ConfigError(
                f"std_rounding must be 'exact' or 'reference'; got {self.std_rounding!r}"
            )
        for name, top in (("n_subsets", MAX_SUBSETS), ("subset_size", MAX_SUBSETS)):
            _check_int(name, getattr(self, name), 1, top)
        _check_int("n_resamples", self.n_resamples, 1, 1_000_000)
        _check_int("seed", self.seed, 0, MAX_SEED)
        for name in ("k_templates", "k_names"):
            v = getattr(self, name)
            if v is not None:
                _check_int(name, v, 1, MAX_DRAWS)
        if self.weights not in ("uniform", "data"):
            raise ConfigError(f"weights must be 'uniform' or 'data'; got {self.weights!r}")
        if isinstance(self.gap, bool) or not 0 <= self.gap <= 1:
            raise ConfigError(f"gap must be in [0, 1] (a share, not points); got {self.gap}")

    def to_dict(self) -> dict[str, Any]:
        # std_rounding is stored only when not the default, so designs written before the
        # option read (and compare) the same.
        rounding = {} if self.std_rounding == "exact" else {"std_rounding": self.std_rounding}
        return {
            "n_subsets": self.n_subsets,
            "subset_size": self.subset_size,
            "seed": self.seed,
            "k_templates": self.k_templates,
            "k_names": self.k_names,
            "weights": self.weights,
            "gap": self.gap,
            "n_resamples": self.n_resamples,
            "ddof": self.ddof,
            "stop_words": None if self.stop_words is None else list(self.stop_words),
            **rounding,
        }

    def resolved(self, kind: Literal["probes", "task"]) -> dict[str, Any]:
        """:meth:`to_dict` with the stop words the design's kind uses by default."""
        out = self.to_dict()
        if self.stop_words is None:
            out["stop_words"] = list(DEFAULT_STOP_WORDS) if kind == "probes" else []
        return out


def _check_rows(blocks: Sequence[tuple[int, int]], hint: str) -> None:
    """Refuse a design of more than :data:`MAX_DESIGN_ROWS` rows (``(items, conditions)``
    per block) before the runner expands it."""
    limit = limit_from_env("STEADYEVAL_SENSITIVITY_MAX_ROWS", MAX_DESIGN_ROWS, unit=1)
    rows = sum(i * c for i, c in blocks)
    if rows > limit:
        raise ConfigError(
            f"the design would ask {rows:,} (item, template, name) rows, over the limit of "
            f"{limit:,}; narrow it ({hint}) or raise the limit with "
            "STEADYEVAL_SENSITIVITY_MAX_ROWS"
        )


def template_names(n: int) -> list[str]:
    """``t00``, ``t01``, ... (wider when there are 100 or more)."""
    width = max(2, len(str(n - 1)))
    return [f"t{k:0{width}d}" for k in range(n)]


def _condition_name(template: str, alias: int, n_names: int) -> str:
    return template if n_names == 1 else f"{template}-a{alias}"


def _lit(text: str) -> str:
    """A Jinja string literal for ``text``."""
    return json.dumps(text, ensure_ascii=False)


def _dispatch_body(by_relation: Mapping[str, str]) -> str:
    pairs = ", ".join(f"{_lit(r)}: {_lit(t)}" for r, t in by_relation.items())
    return "{{ {" + pairs + "}[metadata.relation] | replace('[X]', entity) }}"


def _slot_is_final(template: str) -> bool:
    after = split_slot(template)[2]
    return all(not ch.isalnum() for ch in after)


# -- probes ------------------------------------------------------------------------------------


def _probe_conditions(
    rels: Sequence[Relation], k: int, n_names: int, opts: ProbeOptions
) -> tuple[list[Condition], dict[str, dict[str, Any]]]:
    """One condition per (template index, name index); template ``t``'s body maps each
    relation that has a template ``t`` to it."""
    fmt = Format(name="cloze", kind="free")
    cand: Literal["vocabulary", "options"] = (
        "options" if opts.candidates == "relation" else "vocabulary"
    )
    conditions: list[Condition] = []
    roles: dict[str, dict[str, Any]] = {}
    for t, tname in enumerate(template_names(k)):
        body = _dispatch_body({r.id: r.templates[t] for r in rels if len(r.templates) > t})
        template = Template(name=tname, body=body, answer="")
        for a in range(n_names):
            cname = _condition_name(tname, a, n_names)
            conditions.append(
                Condition(
                    name=cname,
                    template=template,
                    format=fmt,
                    scoring=TOP_K,
                    top_k=opts.top_k,
                    candidates=cand,
                    alias=a,
                )
            )
            roles[cname] = {"template": tname, "alias": a}
    return conditions, roles


def _blocks(
    items: Sequence[Item],
    conditions: Sequence[Condition],
    rels: Sequence[Relation],
    k: int,
    n_names: int,
) -> list[Block]:
    """Every item × condition, or — when relations keep different numbers of templates —
    one block per template count n: its relations' items × the conditions of templates
    0..n-1 (blocks in the order their counts first appear among the relations)."""
    from ...run import Block

    count = {r.id: min(len(r.templates), k) for r in rels}
    if all(n == k for n in count.values()):
        return [Block(list(items), list(conditions), [], {})]
    blocks = []
    for n in dict.fromkeys(count.values()):
        mine = [i for i in items if count[str(i.metadata["relation"])] == n]
        if mine:
            blocks.append(Block(mine, list(conditions[: n * n_names]), [], {}))
    return blocks


def probe_design(
    data: ProbeData,
    probe: ProbeOptions | None = None,
    analysis: AnalysisOptions | None = None,
) -> StudyDesign:
    """Items and conditions for factual probes (calls no model).

    ``design.info`` holds everything the analysis needs besides the table: the template
    names, each relation's template texts, the (template, name) of every condition, template
    weights, and the analysis options; plus how the data were reduced (for the report).
    With ``templates_per_relation="all"`` relations keep all their templates: condition
    ``tKK`` then applies to the relations that have a K-th template, and the design has one
    block per template count.
    """
    opts = probe or ProbeOptions()
    aopts = analysis or AnalysisOptions()
    rels, k, dropped = choose_relations(data, opts)
    items, per_relation = probe_items(data, rels, opts)
    if not items:
        raise ConfigError(
            f"no facts left in {data.source} after the vocabulary filter; check vocab"
        )
    n_names = max(len(i.aliases) for i in items)
    if n_names == 1:
        warnings.warn(
            "no subject has an alias: verbalization stability is not applicable (K_x = 1)",
            SensitivityWarning,
            stacklevel=2,
        )
    conditions, roles = _probe_conditions(rels, k, n_names, opts)
    info = SensitivityDesign(
        kind="probes",
        metric="P@1",
        unit="relation",
        templates=template_names(k),
        template_text={r.id: list(r.templates[:k]) for r in rels},
        slot_final={r.id: [_slot_is_final(x) for x in r.templates[:k]] for r in rels},
        conditions=roles,
        max_names=n_names,
        weights=weights_info(rels, k, aopts.weights, data.source),
        analysis=aopts.resolved("probes"),
        data={
            "source": data.source,
            "layout": data.layout,
            "prompt_set": data.prompt_set,
            "relations": [r.id for r in rels],
            "relations_dropped": dropped,
            "templates_per_relation": k if opts.templates_per_relation != "all" else "all",
            "original_added": [r.id for r in rels if r.original_added],
            "facts": per_relation,
            "n_items": len(items),
            "subjects_with_aliases": sum(1 for i in items if len(i.aliases) > 1),
            "limit_per_relation": opts.limit_per_relation,
            "candidates": opts.candidates,
            "vocab_filter": opts.vocab is not None,
            "max_names": opts.max_names,
            "notes": list(data.notes)
            + [
                f"relation {r}: no facts left after the vocabulary filter"
                for r, n in per_relation.items()
                if n["used"] == 0
            ],
        },
    )
    blocks = _blocks(items, conditions, rels, k, n_names)
    _check_rows(
        [(len(b.items), len(b.conditions)) for b in blocks],
        "--limit-per-relation, --templates-per-relation, --max-names",
    )
    return StudyDesign(blocks=tuple(blocks), info=info, columns=COLUMNS)


# -- generic tasks -----------------------------------------------------------------------------


def _unit_key(items: Sequence[Item]) -> str:
    for key in ("relation", "subject"):
        if all(isinstance(i.metadata.get(key), str) for i in items):
            return key
    return "item"


def task_design(
    items: Sequence[Item],
    templates: Sequence[Template],
    *,
    scoring: str | None = None,
    format: Format | None = None,
    generation: Generation | None = None,
    max_names: int = 5,
    analysis: AnalysisOptions | None = None,
    info: Mapping[str, Any] | None = None,
) -> StudyDesign:
    """Items asked under several templates (and subject names): the same analyses, accuracy.

    Parameters
    ----------
    items : sequence of Item
        The task's items. Units (for rank consistency and per-unit preference) are
        ``metadata["relation"]`` when every item has one, else ``metadata["subject"]``,
        else the items themselves.
    templates : sequence of Template
        At least 2, distinct names; the first is the *original* template.
    scoring, format : optional
        Default: multiple choice by option log-probability when every item has options,
        else free generation.
    max_names : int
        Names per item (``Item.aliases``) crossed with the templates.
    """
    if len(templates) < 2:
        raise ConfigError(f"a sensitivity study needs at least 2 templates; got {len(templates)}")
    names = [t.name for t in templates]
    if len(set(names)) != len(names):
        raise ConfigError(f"template names must be unique; got {names}")
    if not items:
        raise ConfigError("no items")
    aopts = analysis or AnalysisOptions()
    if aopts.weights == "data":
        raise ConfigError("weights='data' needs template weights; generic tasks use 'uniform'")
    mc = all(i.options for i in items)
    fmt = format or (FORMATS["mc"] if mc else FORMATS["free"])
    score = scoring or (OPTION_LOGPROB if mc else GENERATE)
    n_names = max(1, min(max_names, max(len(i.aliases) for i in items)))
    conditions = []
    roles: dict[str, dict[str, Any]] = {}
    for t in templates:
        for a in range(n_names):
            cname = _condition_name(t.name, a, n_names)
            conditions.append(
                Condition(
                    name=cname,
                    template=t,
                    format=fmt,
                    scoring=score,
                    generation=generation or Generation(),
                    alias=a if n_names > 1 else None,
                )
            )
            roles[cname] = {"template": t.name, "alias": a}
    _check_rows([(len(items), len(conditions))], "fewer items or templates, --max-names")
    unit = _unit_key(items)
    design_info = SensitivityDesign(
        kind="task",
        metric="accuracy",
        unit=unit,
        templates=names,
        template_text={"*": [t.body for t in templates]},
        conditions=roles,
        max_names=n_names,
        weights=None,
        analysis=aopts.resolved("task"),
        data={"n_items": len(items), "scoring": score, "format": fmt.name, **(info or {})},
    )
    return StudyDesign.of(list(items), conditions, (), info=design_info, columns=COLUMNS)
