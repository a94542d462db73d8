"""The disparity study's design: probe items, the γ-mixtures, and one block per model and γ.

Every model is pre-trained further on every mixture (the same corpora for every model, so the
comparison between models is paired on the training data as well as on the facts) and the
checkpoint, an ordinary ``hf-masked:`` / ``hf-causal:`` model, is probed with the relation's
probed template (the data's original template) under P@1. Nothing is trained here: each
checkpoint is a :class:`~steadyeval.train.TrainedModel`, trained when the runner first needs
its answers, into a content-addressed store.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..._errors import ConfigError
from ...models import Backend, model_folder
from ...results import StudyColumn
from ...run import Block
from ...train import CheckpointStore, Objective, TrainConfig, pretrained_model, texts_digest
from .._protocol import StudyDesign
from ..sensitivity import (
    ProbeData,
    ProbeOptions,
    SensitivityDesign,
    SensitivityWarning,
    probe_design,
)
from ._evidence import OverlapCorpus
from ._mixture import Mixture, OverlapSource, build_mixtures, overlap_sentences
from ._types import DisparityDesign

__all__ = ["COLUMNS", "CorpusOptions", "PretrainOptions", "disparity_design", "objective_of"]

#: The study's columns: the relation and subject probed, the overlap share of the corpus the
#: model was pre-trained on further (null: the model as given), and the model before training.
COLUMNS = (
    StudyColumn("relation", "string", "the probed relation"),
    StudyColumn("subject", "string", "the fact's subject"),
    StudyColumn("gamma", "int", "overlap share γ (percent) of the further pre-training corpus"),
    StudyColumn("base_model", "string", "the model before further pre-training"),
)
#: Backends whose models can be pre-trained further here (transformers LMs).
_TRAINABLE = frozenset({"hf", "hf-masked", "hf-causal"})

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CorpusOptions:
    """How the pre-training corpora are built (see :func:`build_mixtures`).

    Attributes
    ----------
    gammas : tuple of int
        Overlap shares in percent.
    size : int
        Sentences in every mixture.
    overlap : {"other-templates", "probe-template"}
        The overlap sentences: the probed facts under the relation's other templates, or
        under the probed template (ignored when sentences are given to the design).
    seed : int
        Seed of the draws.
    """

    gammas: tuple[int, ...] = (0, 20, 40, 60, 80, 100)
    size: int = 1000
    overlap: OverlapSource = "other-templates"
    seed: int = 0


@dataclass(frozen=True)
class PretrainOptions:
    """How each checkpoint is trained: optimisation settings, masking share, seed, and
    whether checkpoints are kept once probed."""

    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            learning_rate=5e-5, steps=200, batch_size=16, max_length=128
        )
    )
    mlm_probability: float = 0.15
    seed: int = 0
    keep: bool = True


def objective_of(backend: Backend) -> Objective:
    """``"masked"`` for a model that fills the ``[Y]`` slot itself (a masked LM, as its
    backend declares), else ``"causal"``; other backends than transformers LMs: an error."""
    if backend.spec.backend not in _TRAINABLE:
        raise ConfigError(
            f"model {backend.spec}: sample disparity pre-trains transformers LMs further; give "
            f"it as hf-masked:PATH or hf-causal:PATH (or hf:PATH), not {backend.spec.backend}:"
        )
    return "masked" if backend.capabilities.fills_slots else "causal"


def _probe(data: ProbeData, probe: ProbeOptions | None) -> StudyDesign:
    """Items and the one condition: each relation's probed template, canonical names."""
    opts = dataclasses.replace(probe or ProbeOptions(), templates_per_relation=1, max_names=1)
    with warnings.catch_warnings():  # one name per subject is this study's design
        warnings.simplefilter("ignore", SensitivityWarning)
        return probe_design(data, opts)


def disparity_design(
    data: ProbeData,
    general: Sequence[str],
    models: Sequence[Backend],
    *,
    probe: ProbeOptions | None = None,
    corpus: CorpusOptions | None = None,
    pretraining: PretrainOptions | None = None,
    store: CheckpointStore | None = None,
    overlap: Sequence[str] | OverlapCorpus | None = None,
    include_base: bool = True,
) -> StudyDesign:
    """Blocks for every model × γ (and each model as given with ``include_base``).

    Parameters
    ----------
    data : ProbeData
        The probes (:func:`~steadyeval.items.load_probes`); probed under each relation's
        original template.
    general : sequence of str
        The general corpus's sentences.
    models : sequence of Backend
        Masked or causal transformers LMs.
    probe : ProbeOptions, optional
        Fact sample, vocabulary filter and candidates (templates and names are fixed here).
    corpus, pretraining : optional
        The mixtures and the training (defaults: :class:`CorpusOptions`,
        :class:`PretrainOptions`).
    store : CheckpointStore, optional
        Where checkpoints go (default: a temporary folder).
    overlap : OverlapCorpus or sequence of str, optional
        Overlap sentences instead of those written from the templates: read from a file or
        folder (:func:`read_overlap`: LAMA's T-REx evidence, or text), or given as they are.
        Where they came from is recorded in ``design.corpus`` (``overlap_source``,
        ``overlap_file``, and for T-REx how many probed facts have evidence).
    """
    if not models:
        raise ConfigError("no models: sample disparity compares at least one model across γ")
    copts = corpus or CorpusOptions()
    popts = pretraining or PretrainOptions()
    base = _probe(data, probe)
    pool, overlap_info = _overlap_pool(data, base, copts.overlap, overlap, copts.gammas)
    mixtures = build_mixtures(pool, general, gammas=copts.gammas, size=copts.size, seed=copts.seed)
    store = store or CheckpointStore.temporary()
    blocks: list[Block] = []
    model_info: list[dict[str, Any]] = []
    for backend in models:
        objective = objective_of(backend)
        ident = backend.identity()
        checkpoints: dict[str, str] = {}
        if include_base:
            blocks.append(Block(base.items, base.conditions, [backend], tags=_tags(None, ident)))
        for m in mixtures:
            trained = pretrained_model(
                backend,
                m.sentences,
                popts.train,
                objective=objective,
                seed=popts.seed,
                store=store,
                base_dir=functools.partial(model_folder, backend.spec),
                mlm_probability=popts.mlm_probability,
                name=f"disparity-g{m.gamma}",
                keep=popts.keep,
            )
            checkpoints[str(m.gamma)] = trained.identity()
            blocks.append(Block(base.items, base.conditions, [trained], tags=_tags(m.gamma, ident)))
        model_info.append({"model": ident, "objective": objective, "checkpoints": checkpoints})
    info = DisparityDesign(
        kind="disparity",
        metric="P@1",
        models=model_info,
        gammas=list(copts.gammas),
        include_base=include_base,
        corpus={
            **_corpus_info(copts, mixtures),
            **overlap_info,
            "general_pool": len(general),
        },
        training={
            **popts.train.fingerprint(),
            "mlm_probability": popts.mlm_probability,
            "seed": popts.seed,
        },
        data=SensitivityDesign.from_json(base.info, source="the probes' design").data,
    )
    return StudyDesign(blocks=tuple(blocks), info=info, columns=COLUMNS)


def _tags(gamma: int | None, base_model: str) -> dict[str, Any]:
    return {"gamma": gamma, "base_model": base_model}


def _overlap_pool(
    data: ProbeData,
    base: StudyDesign,
    source: OverlapSource,
    given: Sequence[str] | OverlapCorpus | None,
    gammas: Sequence[int],
) -> tuple[list[str], dict[str, Any]]:
    """The overlap sentences and what ``design.corpus`` records of them: where they came
    from (``overlap_source``: the template rule, ``trex``, ``text`` or ``sentences`` given in
    Python), how many, how many per relation, the file's facts (``overlap_file``) and, for
    T-REx, how many probed facts have evidence in it (``overlap_facts``)."""
    facts = [
        (i.metadata["relation"], i.metadata["subject"], i.metadata["object"]) for i in base.items
    ]
    if isinstance(given, OverlapCorpus):
        info: dict[str, Any] = {
            "overlap_source": given.format,
            "overlap_pool": len(given.sentences),
            "overlap_per_relation": dict(given.per_relation),
            "overlap_file": given.info(),
        }
        if given.format == "trex":
            probed = set(facts)
            covered = len(probed & given.facts)
            info["overlap_facts"] = {"probed": len(probed), "with_evidence": covered}
            if covered < len(probed):  # told before training (a dry run shows it too)
                missing = given.missing_relations
                log.warning(
                    "%s: %d of %d probed facts have evidence in the overlap file%s",
                    given.path, covered, len(probed),
                    f"; no file for {len(missing)} probed relation(s): "
                    f"{', '.join(missing[:8])}{' …' if len(missing) > 8 else ''}"
                    if missing else "",
                )  # fmt: skip
        return list(given.sentences), info
    if given is not None:
        pool = list(given)
        return pool, {"overlap_source": "sentences", "overlap_pool": len(pool)}
    templates = {r.id: r.templates for r in data.relations}
    pool, per_relation = overlap_sentences(templates, facts, source)
    if not pool and any(g > 0 for g in gammas):
        raise ConfigError(
            f"no overlap sentences: every relation in {data.source} has a single template, "
            "so there are no other templates to state the facts with; give the seed's "
            "corpus, LAMA's T-REx evidence (overlap_file: the TREx folder), or use overlap "
            "'probe-template'"
        )
    return pool, {
        "overlap_source": source,
        "overlap_pool": len(pool),
        "overlap_per_relation": per_relation,
    }


def _corpus_info(copts: CorpusOptions, mixtures: Sequence[Mixture]) -> dict[str, Any]:
    return {
        "size": copts.size,
        "seed": copts.seed,
        "mixtures": [
            {
                "gamma": m.gamma,
                "n_overlap": m.n_overlap,
                "n_general": m.n_general,
                "digest": texts_digest(m.sentences)[:16],
            }
            for m in mixtures
        ],
    }
