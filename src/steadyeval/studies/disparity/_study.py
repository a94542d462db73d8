"""The disparity study on the study protocol: config → design → runner → analysis → report
sections. This module stays light (the CLI builds the study's command from it); each step
imports its module when it runs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._protocol import Study, StudyDesign
from ._config import DisparityConfig
from ._types import DisparityAnalysis, DisparityDesign

if TYPE_CHECKING:
    from ...document import Section
    from ...models import Backend
    from ...results import ResultsFrame
    from ...run import RunOptions

__all__ = ["DISPARITY_STUDY", "DisparityStudy"]


class DisparityStudy(Study[DisparityAnalysis]):
    """Study 2, section 6: sample disparity — P@1 after further pre-training on corpora with
    a share γ of probe-fact sentences (``docs/study-disparity.md``)."""

    name = "disparity"
    question = (
        "how much of a probing score (and of the gap between two models) comes from overlap "
        "between the pre-training data and the probe? (sample disparity, LAMA/LPAQA)"
    )
    config = DisparityConfig
    analysis_type = DisparityAnalysis
    model_column = "base_model"  # the analysis names the models it trained, not each variant
    design_type = DisparityDesign
    example = """
        steadyeval study disparity --model hf-masked:./tiny-bert --model hf-causal:./tiny-gpt2 \\
            --data data/lama/lpaqa --general general.txt --limit-per-relation 20 --out runs/disp
        steadyeval study disparity study.yaml --dry-run
    """

    def design(
        self, config: DisparityConfig, backends: Sequence[Backend], options: RunOptions
    ) -> StudyDesign:
        from ..._errors import ConfigError
        from ...items import load_probes, load_vocab
        from ...train import CheckpointStore, TrainConfig, resolve_device
        from ..sensitivity import ProbeOptions
        from ._design import CorpusOptions, PretrainOptions, disparity_design
        from ._evidence import read_overlap
        from ._mixture import read_corpus

        if config.checkpoints is not None:
            root = Path(config.checkpoints)
            if os.path.exists(root) and not os.path.isdir(root):
                raise ConfigError(
                    f"checkpoints: {root} is not a folder; expected a folder (or none)"
                )
            store = CheckpointStore(root)
        elif options.out is not None:
            store = CheckpointStore(Path(options.out) / "checkpoints")
        else:  # a dry run, or Python without a run directory
            store = CheckpointStore.temporary()
        if config.device != "auto":
            resolve_device(config.device)  # a device this machine lacks: refused in a dry run too
        train = TrainConfig(
            learning_rate=config.learning_rate,
            steps=config.steps,
            batch_size=config.batch_size,
            warmup_steps=config.warmup_steps,
            max_length=config.max_length,
            device=config.device,
        )
        probe = ProbeOptions(
            limit_per_relation=config.limit_per_relation,
            candidates=config.candidates,
            vocab=None if config.vocab is None else load_vocab(config.vocab),
            seed=config.seed,
        )
        data = load_probes(config.data, prompt_set=config.prompt_set)
        overlap = None
        if config.overlap_file is not None:  # a T-REx folder: the probed relations' files
            relations = [r.id for r in data.relations]
            overlap = read_overlap(
                config.overlap_file, relations=relations, format=config.overlap_format
            )
        return disparity_design(
            data,
            read_corpus(config.general, split=config.general_split),
            backends,
            probe=probe,
            corpus=CorpusOptions(
                tuple(config.gammas), config.corpus_size, config.overlap, config.seed
            ),
            pretraining=PretrainOptions(
                train, config.mlm_probability, config.seed, config.keep_checkpoints
            ),
            store=store,
            overlap=overlap,
            include_base=config.include_base,
        )

    def analyze(self, results: ResultsFrame, design: DisparityDesign) -> DisparityAnalysis:
        from ._analysis import analyze_disparity

        return analyze_disparity(results, design)

    def sections(
        self, analysis: DisparityAnalysis, design: DisparityDesign, *, figures: bool = True
    ) -> list[Section]:
        from ._report import disparity_report_sections

        return disparity_report_sections(analysis, design, figures=figures)


DISPARITY_STUDY = DisparityStudy()
