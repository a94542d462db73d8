"""Prompt-based methods and their combinations: a base (PET, ADAPET, P-tuning), optionally a
semi-supervised method (PET+MLM's auxiliary loss, iPET, Noisy Student) and, for iPET and
Noisy Student, a pseudo-labelling strategy; spelled ``BASE[+SEMI][/STRATEGY]`` in any order,
e.g. ``adapet``, ``pet+mlm``, ``ipet/cross-split``, ``ipet+adapet/cross-split``."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..._errors import ConfigError
from ...conditions import Condition, Format, Template
from ...items import shorten
from ...models import Capabilities
from ...requests import RequestKind
from ...run import Block
from ...scoring import OPTION_LOGPROB
from ...train import TrainOutcome
from ._builtin import trained_model
from ._committee import COMMITTEES
from ._methods import (
    MethodContext,
    Unit,
    _spellings,
    condition_name,
    register_method,
    require_trainable,
    scored_items,
    slot_condition,
    split_pattern,
    task_verbalizer,
    verbalize,
)
from ._params import Param, float_in, int_in, one_of, train_config
from ._semi import Chain, Strategy, distil
from ._trainers import BASES, BaseTrainer, Extras, Job, prompt_examples, shared_params

__all__ = ["SEMI", "CombinedMethod", "Spelling", "known_params", "parse_spelling"]

Semi = Literal["mlm", "ipet", "noisy"]
SEMI: tuple[Semi, ...] = ("mlm", "ipet", "noisy")
STRATEGIES: tuple[Strategy, ...] = ("single-split", "cross-split")
_ALIASES = {"p-tuning": "ptuning", "noisy-student": "noisy", "pet-mlm": "mlm"}


@dataclass(frozen=True)
class Spelling:
    """A parsed method spelling; :attr:`name` is its canonical form."""

    base: str = "pet"
    semi: Semi | None = None
    strategy: Strategy = "single-split"

    @property
    def name(self) -> str:
        if self.semi is None:
            return self.base
        if self.semi == "mlm":
            return f"{self.base}+mlm"
        head = self.semi if self.base == "pet" else f"{self.semi}+{self.base}"
        return head if self.strategy == "single-split" else f"{head}/{self.strategy}"


def parse_spelling(text: str) -> Spelling:
    """``BASE[+SEMI][/STRATEGY]`` (parts in any order) as a :class:`Spelling`; a
    :class:`ConfigError` says what is wrong with a bad one."""
    head, _, strategy = text.strip().lower().partition("/")
    parts = [_ALIASES.get(p.strip(), p.strip()) for p in head.split("+")]
    bases = [p for p in parts if p in BASES]
    semis = [p for p in parts if p in SEMI]
    unknown = [p for p in parts if p not in BASES and p not in SEMI]
    where = f"method {shorten(repr(text))}"
    if unknown:
        raise ConfigError(
            f"{where}: unknown part {shorten(repr(unknown[0]))}; a base ({', '.join(BASES)}), optionally "
            f"one of {', '.join(SEMI)}, then optionally /single-split or /cross-split"
        )
    if len(bases) > 1 or len(semis) > 1:
        raise ConfigError(
            f"{where}: give at most one base ({', '.join(BASES)}) and one of {', '.join(SEMI)}"
        )
    semi = semis[0] if semis else None
    if strategy and strategy not in STRATEGIES:
        raise ConfigError(
            f"{where}: unknown pseudo-labelling strategy {shorten(repr(strategy))}; choose "
            "single-split or cross-split"
        )
    if strategy and semi not in ("ipet", "noisy"):
        raise ConfigError(f"{where}: a pseudo-labelling strategy goes with ipet or noisy")
    return Spelling(bases[0] if bases else "pet", semi, strategy or "single-split")  # type: ignore[arg-type]


def _size(default: int) -> Param:
    return Param(
        "unlabelled_size",
        lambda t: [default],
        int_in(1, 10_000_000),
        "unlabelled examples used (the first of a seeded order)",
    )


def _labelling() -> dict[str, Param]:
    """iPET's labelling, which Noisy Student reuses (as FewNLU does): the ensemble, the
    growth and the committee (:mod:`._committee`)."""
    return {
        "growth": Param("growth", lambda t: [5.0], float_in(1.0, 1e6), "training-set growth factor per generation (d)"),
        "ensemble": Param("ensemble", lambda t: ["all-patterns"], one_of("all-patterns", "own-pattern"), "ensemble members' patterns"),
        "ensemble_seeds": Param("ensemble_seeds", lambda t: [1], int_in(1, 100), "seeds per pattern in the ensemble"),
        "committee": Param("committee", lambda t: ["fewnlu"], one_of(*COMMITTEES), "who labels a model's data: FewNLU's rule (at least one, unweighted) or PET's (no floor, weighted by accuracy before training)"),
        "committee_share": _share(1.0),
        "unlabelled_size": _size(200),
    }  # fmt: skip


def _share(default: float) -> Param:
    return Param(
        "committee_share",
        lambda t: [default],
        float_in(0.0, 1.0, open_low=True),
        "share of the candidate models drawn into a committee (FewNLU: 1.0 single-split, "
        "0.5 cross-split; PET: 0.25)",
    )


#: Each semi-supervised method's own hyperparameters (defaults as the papers'; the
#: committee's share is FewNLU's for the method's strategy, see :class:`CombinedMethod`).
SEMI_PARAMS: Mapping[Semi, dict[str, Param]] = {
    "mlm": {
        "mlm_weight": Param("mlm_weight", lambda t: [1e-4], float_in(0.0, 1e6, open_low=True), "weight of the auxiliary MLM loss (PET: 1e-4)"),
        "mlm_probability": Param("mlm_probability", lambda t: [0.15], float_in(0.0, 1.0, open_low=True), "share of tokens masked"),
        "unlabelled_size": _size(200),
    },
    "ipet": {
        "generations": Param("generations", lambda t: [3], int_in(1, 100), "iPET generations after the first PET ensemble"),
        "temperature": Param("temperature", lambda t: [2.0], float_in(0.0, 1e6, open_low=True), "softmax temperature of the distillation's soft labels"),
        "final": Param("final", lambda t: ["pet"], one_of("pet", "classifier"), "the distilled final model: a PET model (pet) or, as the PET paper, a sequence classifier (classifier)"),
        **_labelling(),
    },
    "noisy": {
        "rounds": Param("rounds", lambda t: [3], int_in(1, 100), "student rounds (each student generation teaches the next)"),
        "noise": Param("noise", lambda t: [0.05], float_in(0.0, 0.99), "the students' noise rate (FewNLU's dropout_rate: 0.05)"),
        "noise_kind": Param("noise_kind", lambda t: ["embedding-dropout"], one_of("embedding-dropout", "tokens"), "FewNLU's dropout of embedding dimensions, or token masking / dropping"),
        **_labelling(),
    },
}  # fmt: skip


class CombinedMethod:
    """A prompt-based base method, optionally with a semi-supervised method (see the module
    docstring). Every prompt-based method shares PET's space (pattern, verbalizer,
    training settings); the base and the semi-supervised method add their own."""

    def __init__(self, spelling: Spelling) -> None:
        self.spelling = spelling
        self.base: BaseTrainer = BASES[spelling.base]
        self.name = spelling.name
        semi = spelling.semi
        self.uses_unlabelled = semi is not None
        params = {**shared_params(), **self.base.params, **(SEMI_PARAMS[semi] if semi else {})}
        if "committee_share" in params and spelling.strategy == "cross-split":
            params["committee_share"] = _share(0.5)  # FewNLU's cross-split scripts
        self.params: Mapping[str, Param] = params

    def _serving(self) -> BaseTrainer:
        """iPET ends in a PET model distilled on soft labels (with ``final: pet``; a
        classifier with ``final: classifier``); the others in the base's."""
        return BASES["pet"] if self.spelling.semi == "ipet" else self.base

    def condition(self, unit: Unit, causal: bool) -> Condition:
        task, h = unit.task, unit.hparams
        template = self._serving().template(task, h)
        name = condition_name(self.name, task.key, h)
        verbalizer = None if task.kind == "choice" else h["verbalizer"]
        if not causal:
            return slot_condition(name, template, verbalizer)
        left, right = split_pattern(template.body)  # a causal LM scores what follows the prompt
        causal_t = Template(name=template.name, body=left.rstrip(), answer=" {{ answer }}" + right)
        fmt = Format(name="slot", kind="mc")
        return Condition(
            name=name,
            template=causal_t,
            format=fmt,
            scoring=OPTION_LOGPROB,
            verbalizer_name=verbalizer,
        )

    def block(self, unit: Unit, ctx: MethodContext) -> Block:
        causal = not ctx.base.capabilities.fills_slots
        require_trainable(
            ctx, self.name, masked=not self.base.causal_ok or self.spelling.semi is not None
        )
        train, extra = self._trainer(unit, ctx, causal)
        h = unit.hparams
        if self.spelling.semi == "ipet" and h["final"] == "classifier":
            from ._distil import classifier_block  # loads after this module (the registry)

            return classifier_block(ctx, unit, self.name, train, extra)
        caps = Capabilities(fills_slots=not causal, max_length=int(h["max_length"]))
        kinds: frozenset[RequestKind] = frozenset({"score"} if causal else {"score", "top-k"})
        backend = "hf-causal" if causal else "hf-masked"
        model = trained_model(
            ctx, unit, self.name, backend, train, kinds=kinds, capabilities=caps, recipe=extra
        )
        items = verbalize(scored_items(unit), task_verbalizer(unit.task, h["verbalizer"]))
        return Block(items, [self.condition(unit, causal)], [model])

    def _trainer(self, unit: Unit, ctx: MethodContext, causal: bool) -> tuple[Any, dict[str, Any]]:
        """The unit's training function and what it adds to the unit's recipe."""
        h, semi = unit.hparams, self.spelling.semi
        pool = unit.unlabelled[: int(h["unlabelled_size"])] if semi else ()
        if semi in ("ipet", "noisy"):
            chain = self._chain(unit, ctx, pool)
            rule, share = chain.committee
            recipe: dict[str, Any] = {"committee": {"rule": rule, "share": share}}
            if semi == "noisy":
                final = (chain.rounds, 0, 0)  # member 0 is the unit's own pattern and seed
                noise = {"kind": h["noise_kind"], "rate": float(h["noise"]), "on": "students"}
                recipe |= {"chain": chain.key(final), "noise": noise}
                return (lambda out: chain.train_into(final, out)), recipe
            last = [
                chain.key((chain.rounds, s, m))
                for s in chain.sources(0)
                for m in range(len(chain.members))
            ]
            return (lambda out: distil(chain, out, Extras())), {"teachers": last, **recipe}
        extras = Extras()
        if semi == "mlm":
            template = self.base.template(unit.task, h)
            texts = tuple(e.prompt for e in prompt_examples(unit.task, h, template, pool))
            extras = Extras(texts, float(h["mlm_weight"]), float(h["mlm_probability"]))

        def train(out: Path) -> TrainOutcome:
            template = self.base.template(unit.task, h)
            job = Job(
                ctx.base_dir(), tuple(prompt_examples(unit.task, h, template, unit.train)),
                tuple(prompt_examples(unit.task, h, template, unit.dev)),
                train_config(h, ctx.device), unit.seed, h, causal, extras,
            )  # fmt: skip
            return self.base.train(job, out)

        pool_key = (
            hashlib.sha256("".join(i.hash for i in pool).encode()).hexdigest() if pool else None
        )
        return train, ({"pool": pool_key} if pool_key else {})

    def _chain(self, unit: Unit, ctx: MethodContext, pool: tuple[Any, ...]) -> Chain:
        h = unit.hparams
        patterns = list(unit.task.patterns) if h["ensemble"] == "all-patterns" else [h["pattern"]]
        members = [(p, unit.seed + s) for p in patterns for s in range(int(h["ensemble_seeds"]))]
        if self.spelling.semi == "ipet":
            rounds = int(h["generations"])
        else:  # Noisy Student's final model is a student of the unit's own pattern and seed
            own = (h["pattern"], unit.seed)
            members = [own, *(x for x in members if x != own)]
            rounds = int(h["rounds"])
        if not pool:
            raise ConfigError(f"method {self.name}: {unit.task.name} has no unlabelled examples")
        return Chain(
            "ipet" if self.spelling.semi == "ipet" else "noisy", ctx, unit.task, h, self.base,
            self.spelling.strategy, ((unit.train, unit.dev), *unit.siblings), tuple(pool),
            tuple(members), rounds,
        )  # fmt: skip


def known_params() -> set[str]:
    """Every hyperparameter name a base or semi-supervised method has."""
    names = {n for b in BASES.values() for n in b.params} | set(shared_params())
    return names | {n for params in SEMI_PARAMS.values() for n in params}


def _from_spelling(text: str) -> CombinedMethod | None:
    if (
        not any(ch in text for ch in "+/")
        and text not in BASES
        and text not in SEMI
        and text not in _ALIASES
    ):
        return None
    return CombinedMethod(parse_spelling(text))


_spellings.append(_from_spelling)
for _name in ("adapet", "ptuning", "pet+mlm", "ipet", "noisy"):
    register_method(CombinedMethod(parse_spelling(_name)))
