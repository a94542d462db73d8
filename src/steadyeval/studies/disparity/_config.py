"""The disparity study's configuration (YAML or flags), validated with pydantic."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from ..._limits import (
    DEVICE_PATTERN,
    MAX_BATCH_SIZE,
    MAX_LEARNING_RATE,
    MAX_SEED,
    MAX_TOKENS,
    MAX_TRAIN_STEPS,
)
from ...items import shorten
from .._protocol import StudyConfig

__all__ = ["MAX_CORPUS_SIZE", "DisparityConfig"]

#: The most sentences in one mixture (a run trains on ``steps x batch_size`` of them; the
#: default is 1,000).
MAX_CORPUS_SIZE = 100_000


class DisparityConfig(StudyConfig):
    """A run of the sample-disparity study (flags or YAML)."""

    data: str = Field(
        description="Probe directory (generic, LAMA or LPAQA layout).",
        json_schema_extra={"path": True, "metavar": "DIR"},
        min_length=1,  # '' would name the current folder
    )
    general: str = Field(
        description="General corpus: a text file, one sentence or paragraph per line.",
        json_schema_extra={"path": True, "metavar": "FILE"},
        min_length=1,  # '' would name the current folder
    )
    prompt_set: Literal["manual_paraphrase", "paraphrase", "mine"] | None = Field(
        None, description="LPAQA layout: which prompt set (default manual_paraphrase)."
    )
    limit_per_relation: int | None = Field(
        None, ge=1, le=10_000_000, description="At most N facts per relation (a seeded sample)."
    )
    vocab: str | None = Field(
        None,
        description="Keep only facts whose object is in this word list (one per line).",
        json_schema_extra={"path": True, "metavar": "FILE"},
        min_length=1,  # '' would name the current folder
    )
    candidates: Literal["vocabulary", "relation"] = Field(
        "vocabulary", description="P@1 over the vocabulary, or over the relation's objects."
    )
    overlap: Literal["other-templates", "probe-template"] = Field(
        "other-templates",
        description="Overlap sentences: the probed facts written with the relation's other "
        "templates, or with the probed template itself.",
    )
    overlap_file: str | None = Field(
        None,
        description="Overlap sentences from a file or folder instead: LAMA's T-REx evidence "
        "(the TREx folder of P*.jsonl, or one such file) or text, one sentence per line.",
        json_schema_extra={"path": True, "metavar": "PATH"},
        min_length=1,  # '' would name the current folder
    )
    overlap_format: Literal["auto", "trex", "text"] = Field(
        "auto",
        description="How --overlap-file is read: auto (a folder, a .jsonl file or a first "
        "line that is a JSON object: T-REx; else text), trex or text.",
    )
    general_split: Literal["line", "sentence"] = Field(
        "line", description="General corpus: one sentence per line, or split lines into sentences."
    )
    gammas: list[int] = Field(
        [0, 20, 40, 60, 80, 100],
        description="Overlap shares γ in percent.",
        json_schema_extra={"comma": True, "metavar": "G,G,..."},
    )
    corpus_size: int = Field(
        1000, ge=1, le=MAX_CORPUS_SIZE, description="Sentences in every mixture."
    )
    steps: int = Field(200, ge=1, le=MAX_TRAIN_STEPS, description="Training steps per model and γ.")
    batch_size: int = Field(16, ge=1, le=MAX_BATCH_SIZE, description="Sentences per step.")
    learning_rate: float = Field(
        5e-5,
        gt=0,
        le=MAX_LEARNING_RATE,
        allow_inf_nan=False,
        description="Peak AdamW learning rate.",
    )
    warmup_steps: int = Field(
        0, ge=0, le=MAX_TRAIN_STEPS, description="Linear warm-up steps (fewer than steps)."
    )
    max_length: int = Field(128, ge=8, le=MAX_TOKENS, description="Tokens per training sentence.")
    mlm_probability: float = Field(
        0.15,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="Masked LMs: share of tokens corrupted.",
    )
    include_base: bool = Field(
        True, description="Also probe each model without further pre-training."
    )
    seed: int = Field(
        0,
        ge=0,
        le=MAX_SEED,
        description="Seeds the fact sample, the mixtures and the training.",
    )
    device: str = Field(
        "auto",
        pattern=DEVICE_PATTERN,
        description="Where training runs: auto (CUDA when available), cpu, cuda, cuda:N or mps.",
    )
    checkpoints: str | None = Field(
        None,
        description="Checkpoint folder (default: OUT/checkpoints).",
        json_schema_extra={"path": True, "metavar": "DIR"},
        min_length=1,  # '' would name the current folder
    )
    keep_checkpoints: bool = Field(True, description="Keep checkpoints after the run.")

    @field_validator("overlap_file")
    @classmethod
    def _one_overlap_source(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("overlap") == "probe-template":
            raise ValueError(
                "overlap_file gives the overlap sentences; overlap 'probe-template' writes "
                "them from the templates: give one"
            )
        return value

    @field_validator("overlap_format")
    @classmethod
    def _format_of_a_file(cls, value: str, info: ValidationInfo) -> str:
        if value != "auto" and info.data.get("overlap_file") is None:
            raise ValueError(f"overlap_format {value!r} says how overlap_file is read: give one")
        return value

    @field_validator("warmup_steps")
    @classmethod
    def _warmup_below_steps(cls, value: int, info: ValidationInfo) -> int:
        steps = info.data.get("steps")
        if isinstance(steps, int) and value >= steps:
            raise ValueError(f"warm-up steps ({value}) must be fewer than steps ({steps})")
        return value

    @field_validator("gammas")
    @classmethod
    def _percentages(cls, value: list[int]) -> list[int]:
        if not value:
            raise ValueError("give at least one γ, e.g. 0,20,40,60,80,100")
        bad = [g for g in value if not 0 <= g <= 100]
        if bad:
            raise ValueError(f"γ is a percentage in 0..100; got {shorten(str(bad[0]))}")
        if len(set(value)) != len(value):
            raise ValueError(f"γ values must be distinct; got {shorten(str(value))}")
        return value
