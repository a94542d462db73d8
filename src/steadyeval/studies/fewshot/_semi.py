"""Semi-supervised chains: iPET's generations and Noisy Student's rounds, with single-split
or cross-split pseudo-labelling.

A *chain model* is one checkpoint: a base method (PET, ADAPET, P-tuning) trained at
generation ``g`` on split ``j`` (its train part, selected on its dev part) with one ensemble
member's pattern and seed. Generation 0 sees the labelled train part only; generation
``g > 0`` also sees unlabelled examples labelled by a *committee* of generation ``g - 1``
models (:mod:`._committee`: by default FewNLU's, drawn from the same split's other models
(``single-split``) or from every split's models but the model's own predecessor
(``cross-split``)). Noisy Student is the same chain with its students (``g > 0``) trained
under input noise, as FewNLU runs it. Each chain model is trained through the study's
:class:`~steadyeval.train.CheckpointStore` under a key that holds its committee's keys, so
units share chain models and a rerun trains nothing it has; all of it happens inside the
unit's final model's training, i.e. only when the runner needs an answer it does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from ...items import Item
from ...train import Noise, PromptExample, TrainOutcome, checkpoint_key, score_masked
from ._committee import Committee, Node, committee_candidates, draw_committee, merge_scores
from ._methods import MethodContext, Split, derive_seed, items_hash
from ._params import Hparams, train_config
from ._tasks import FewShotTask
from ._trainers import BaseTrainer, Extras, Job, prompt_examples, zero_shot_accuracy

__all__ = ["Chain", "Strategy", "ensemble_probs", "grow_sizes", "pick_pseudo"]

Strategy = Literal["single-split", "cross-split"]


def grow_sizes(n_labelled: int, growth: float, generations: int, pool: int) -> list[int]:
    """iPET's pseudo-labelled examples per generation 1..G: the training set grows to
    ``n_labelled * growth**g`` (Schick & Schütze 2021: d = 5), capped by the pool."""
    return [
        min(pool, round(n_labelled * growth**g) - n_labelled) for g in range(1, generations + 1)
    ]


def ensemble_probs(scores: Sequence[np.ndarray], temperature: float) -> np.ndarray:
    """The ensemble's averaged probabilities: the mean over members of
    ``softmax(scores / temperature)`` (rows: examples, columns: options)."""
    from scipy.special import softmax

    probs = [softmax(np.asarray(s, dtype=float) / temperature, axis=1) for s in scores]
    mean: np.ndarray = np.mean(probs, axis=0)
    return mean


def pick_pseudo(
    probs: np.ndarray, n: int, label_share: Sequence[float], rng: np.random.Generator
) -> list[int]:
    """iPET's choice of ``n`` pseudo-labelled examples: per label (its share of the labelled
    train part), examples whose most likely label it is, drawn without replacement with
    probability proportional to the ensemble's confidence. Returned sorted."""
    labels = probs.argmax(axis=1)
    picked: list[int] = []
    for lab, share in enumerate(label_share):
        cand = np.flatnonzero(labels == lab)
        want = min(len(cand), round(n * share))
        if want <= 0:
            continue
        w = probs[cand, lab]
        picked += rng.choice(cand, size=want, replace=False, p=w / w.sum()).tolist()
    return sorted(int(i) for i in picked)


@dataclass
class Chain:
    """The chain models of one unit's semi-supervised method (see the module docstring).

    ``splits[0]`` is the unit's own split; ``members`` the ensemble's (pattern, seed)
    pairs; ``rounds`` the generations after generation 0 (iPET's generations, Noisy
    Student's rounds).
    """

    kind: Literal["ipet", "noisy"]
    ctx: MethodContext
    task: FewShotTask
    h: Hparams
    base: BaseTrainer
    strategy: Strategy
    splits: tuple[Split, ...]
    pool: tuple[Item, ...]
    members: tuple[tuple[str, int], ...]
    rounds: int
    causal: bool = False
    _keys: dict[Node, str] = field(default_factory=dict, repr=False)
    _committees: dict[Node, list[Node]] = field(default_factory=dict, repr=False)
    _split_ids: dict[int, str] = field(default_factory=dict, repr=False)

    def sources(self, j: int) -> list[int]:
        """The splits whose last-generation models the distillation reads."""
        if self.strategy == "single-split":
            return [j]
        return [i for i in range(len(self.splits)) if i != j] or [j]

    def member_h(self, m: int) -> dict[str, Any]:
        return {**self.h, "pattern": self.members[m][0]}

    @property
    def committee(self) -> tuple[Committee, float]:
        """The committee rule and share (``committee``, ``committee_share``)."""
        return cast(Committee, self.h["committee"]), float(self.h["committee_share"])

    def split_id(self, j: int) -> str:
        """Split ``j``'s content id (its train and dev items): the same split has the same
        id in every unit, whatever its index there."""
        if j not in self._split_ids:
            train, dev = self.splits[j]
            self._split_ids[j] = items_hash((*train, *dev))
        return self._split_ids[j]

    def _identity(self, node: Node) -> tuple[str, str, int]:
        return (self.split_id(node[1]), *self.members[node[2]])

    def teachers(self, node: Node) -> list[Node]:
        """The committee that labels ``node``'s pseudo-labelled examples (see
        :mod:`._committee`): candidates in a unit-independent order, drawn with a seed
        from what the node is (never from a checkpoint key, which holds the base model's
        file identity)."""
        if node[0] == 0:
            return []
        if node not in self._committees:
            cross = self.strategy == "cross-split"
            cands = committee_candidates(node, len(self.splits), len(self.members), cross)
            cands.sort(key=self._identity)
            rule, share = self.committee
            rng = np.random.default_rng(
                derive_seed("committee", self.task.name, node[0], *self._identity(node))
            )
            pattern, seed = self.members[node[2]]
            where = f"{self.kind} ({self.task.name}, pattern {pattern}, seed {seed})"
            self._committees[node] = draw_committee(cands, share, rule, rng, where)
        return self._committees[node]

    def key(self, node: Node) -> str:
        if node not in self._keys:
            g, j, m = node
            train, dev = self.splits[j]
            rule, share = self.committee
            self._keys[node] = checkpoint_key(
                {
                    "version": 2,
                    "kind": f"{self.kind}-chain",
                    "task": self.task.name,
                    "base": self.base.name,
                    "hparams": self.member_h(m),
                    "seed": self.members[m][1],
                    "generation": g,
                    "train": [i.hash for i in train],
                    "dev": [i.hash for i in dev],
                    "pool": items_hash(self.pool) if g else None,
                    "committee": {"rule": rule, "share": share} if g else None,
                    "teachers": [self.key(t) for t in self.teachers(node)],
                    "base_model": self.ctx.base.fingerprint(),
                }
            )
        return self._keys[node]

    def train_into(self, node: Node, out: Path) -> TrainOutcome:
        """Train the chain model ``node`` into ``out`` (a unit's final model: not stored
        under its chain key; its teachers are)."""
        return self._train(node, out)

    def path(self, node: Node) -> Path:
        """The chain model's checkpoint, trained (with its teachers) if missing."""
        key = self.key(node)
        found = self.ctx.store.get(key)
        if found is not None:
            return found.path
        return self.ctx.store.get_or_train(
            key, {"chain": key}, lambda out: self._train(node, out)
        ).path

    def probs(self, teachers: Sequence[Node], temperature: float) -> np.ndarray:
        """The teachers' averaged probabilities over the pool's options (the
        distillation's soft labels)."""
        scores = [self.pool_scores(t) for t in teachers]
        return ensemble_probs(scores, temperature)

    def label_probs(self, node: Node) -> np.ndarray:
        """The label distribution ``node``'s committee gives the pool: the softmax of its
        members' mean scores, weighted under PET's rule by their accuracy before training."""
        teachers = self.teachers(node)
        scores = [self.pool_scores(t) for t in teachers]
        if self.committee[0] == "fewnlu":
            return merge_scores(scores, None, 1.0)
        weights = [self._before_training(t) for t in teachers]
        return merge_scores(scores, weights, 1.0, fix="committee: fewnlu")

    def _before_training(self, node: Node) -> float:
        """PET's ``wmean`` weight of a committee member: the accuracy of the untrained base
        model with the member's pattern (PET's template) on the member's train part."""
        return zero_shot_accuracy(
            self.ctx, self.task, self.member_h(node[2]), self.splits[node[1]][0]
        )

    def pool_scores(self, node: Node) -> np.ndarray:
        key = ("pool-scores", self.key(node))
        cache = self.ctx.cache
        if key not in cache:
            examples = prompt_examples(
                self.task,
                self.member_h(node[2]),
                self.base.template(self.task, self.member_h(node[2])),
                self.pool,
            )
            cache[key] = np.asarray(
                score_masked(
                    self.path(node),
                    examples,
                    max_length=int(self.h["max_length"]),
                    device=self.ctx.device,
                )
            )
        return np.asarray(cache[key])

    def _train(self, node: Node, out: Path) -> TrainOutcome:
        g, j, m = node
        h = self.member_h(m)
        template = self.base.template(self.task, h)
        train, dev = self.splits[j]
        labelled = prompt_examples(self.task, h, template, train)
        extra: list[PromptExample] = []
        if g > 0:
            extra = self._pseudo(node, h, template, train)
        job = Job(
            self.ctx.base_dir(), tuple(labelled + extra), tuple(prompt_examples(self.task, h, template, dev)),
            train_config(h, self.ctx.device), self.members[m][1], h, self.causal,
            Extras(noise=self.noise if g > 0 else 0.0),
        )  # fmt: skip
        return self.base.train(job, out)

    @property
    def noise(self) -> Noise | float:
        """The students' input noise: Noisy Student's (``noise_kind``, ``noise``); none for
        iPET."""
        if self.kind != "noisy":
            return 0.0
        return Noise(self.h["noise_kind"], float(self.h["noise"]))

    def _pseudo(
        self, node: Node, h: Hparams, template: Any, train: Sequence[Item]
    ) -> list[PromptExample]:
        """iPET's pseudo-labelled examples for ``node`` (Noisy Student reuses them, as
        FewNLU does): hard labels from its committee, chosen per label."""
        g = node[0]
        probs = self.label_probs(node)
        n = grow_sizes(len(train), float(self.h["growth"]), g, len(self.pool))[-1]
        rng = np.random.default_rng(derive_seed("ipet", self.task.name, g, *self._identity(node)))
        idx = pick_pseudo(probs, n, label_share(train, probs.shape[1]), rng)
        hard = [np.eye(probs.shape[1])[int(probs[i].argmax())] for i in idx]
        return prompt_examples(self.task, h, template, [self.pool[i] for i in idx], hard)


def label_share(items: Sequence[Item], n_options: int) -> list[float]:
    """Each gold option index's share of ``items`` (for pseudo-label balance)."""
    counts = [0] * n_options
    for i in items:
        counts[i.gold_options[0]] += 1
    total = sum(counts)
    return [c / total for c in counts] if total else [1 / n_options] * n_options


def distil(chain: Chain, out: Path, extras: Extras) -> TrainOutcome:
    """iPET's last step. With ``final: pet``: one PET model of the unit's own setting trained
    on the labelled train part and the whole pool soft-labelled by the last generation's
    ensemble (averaged probabilities, temperature ``h["temperature"]``). With ``final:
    classifier``: PET's own last step, a sequence classifier distilled from the last
    generation (:func:`distil_classifier`)."""
    from ._trainers import BASES

    last = chain.rounds
    teachers = [(last, s, m) for s in chain.sources(0) for m in range(len(chain.members))]
    if chain.h.get("final", "pet") == "classifier":
        return distil_classifier(chain, teachers, out)
    probs = chain.probs(teachers, float(chain.h["temperature"]))
    pet = BASES["pet"]
    h = chain.h
    template = pet.template(chain.task, h)
    train, dev = chain.splits[0]
    examples = prompt_examples(chain.task, h, template, train)
    examples += prompt_examples(chain.task, h, template, chain.pool, list(probs))
    job = Job(
        chain.ctx.base_dir(), tuple(examples), tuple(prompt_examples(chain.task, h, template, dev)),
        train_config(h, chain.ctx.device), chain.members[0][1], h, False, extras,
    )  # fmt: skip
    return pet.train(job, out)


def distil_classifier(chain: Chain, teachers: Sequence[Node], out: Path) -> TrainOutcome:
    """iPET's final classifier as timoschick/pet's ``train_ipet`` trains it (``pet/modeling.py``
    lines 197-213, commit 21d32de): the last generation's models' pool scores merged by
    PET's weighted mean (each weighted by its pattern's accuracy, before training, on the
    train part it was trained on), soft labels at ``h["temperature"]``, a classifier trained
    on the soft-labelled pool alone (:mod:`._distil`)."""
    from ._distil import train_on_soft_labels

    scores = [chain.pool_scores(t) for t in teachers]
    weights = [chain._before_training(t) for t in teachers]
    soft = merge_scores(scores, weights, float(chain.h["temperature"]))
    dev = chain.splits[0][1]
    return train_on_soft_labels(
        chain.ctx, chain.task, chain.h, chain.pool, soft, dev, chain.members[0][1], out
    )
