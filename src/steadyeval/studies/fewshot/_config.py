"""The few-shot study's configuration (YAML or flags), validated with pydantic."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from ..._limits import DEVICE_PATTERN, MAX_SEED
from ...models import ModelSpec
from .._protocol import StudyConfig

__all__ = ["MAX_K", "STRATEGIES", "FewShotConfig", "SplitSizes"]

#: The compared strategies: three ways to split the labelled data for choosing a setting, and
#: FewNLU's fixed hyper-parameters (no choice: one setting, trained on all labelled data).
STRATEGIES: tuple[Literal["multisplit", "cv", "mdl", "fixed"], ...] = (
    "multisplit",
    "cv",
    "mdl",
    "fixed",
)
#: How split sizes round when K does not divide N (the splitters' ``sizes``).
SplitSizes = Literal["even", "fewnlu"]

#: The most splits K of a strategy (each split trains or scores every setting once).
MAX_K = 1000


def _comma_ints(value: Any) -> Any:
    """``"2,4,8"`` as ``[2, 4, 8]``; a part that is not an integer is left as text, so the
    error names it (never dropped)."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",")]
    return value


class FewShotConfig(StudyConfig):
    """What a few-shot protocol study compares (FewNLU's framework)."""

    models: list[ModelSpec] = Field(
        min_length=1,
        description="Model spec: BACKEND:NAME_OR_PATH[?key=value&...] (one model: the study "
        "adapts it).",
        json_schema_extra={"flag": "model", "metavar": "SPEC", "single": True},
    )
    tasks: list[str] = Field(
        min_length=1,
        description="A FewGLUE task: RTE, BoolQ, CB, COPA, WiC, WSC or MultiRC; repeat for "
        "several (then --labelled is a FewGLUE folder).",
        json_schema_extra={"flag": "task"},
    )
    labelled: str = Field(
        description="Labelled examples in FewGLUE/SuperGLUE JSONL (e.g. FewGLUE/RTE/train.jsonl), "
        "or a FewGLUE folder holding TASK/train.jsonl.",
        json_schema_extra={"metavar": "FILE|DIR", "path": True},
        min_length=1,  # '' would name the current folder
    )
    test: str | None = Field(
        None,
        description="A labelled test set: a JSONL file, a folder holding TASK/val.jsonl, or "
        "superglue:validation (hub).",
        json_schema_extra={"metavar": "FILE|DIR|superglue:SPLIT", "path": True},
        min_length=1,  # '' would name the current folder
    )
    unlabelled: str | None = Field(
        None,
        description="Unlabelled examples for the methods that read them (pet+mlm, ipet, noisy, "
        "pet-full): a JSONL file or a folder holding TASK/unlabeled.jsonl [default: the "
        "unlabeled.jsonl next to the labelled file].",
        json_schema_extra={"metavar": "FILE|DIR", "path": True},
        min_length=1,  # '' would name the current folder
    )
    transductive: bool = Field(
        False,
        description="Where a task has no unlabeled.jsonl, use its test set's inputs (without "
        "their labels) as the unlabelled examples: transductive, and named in the report "
        "[default: off; such a task is refused].",
    )
    test_from_labelled: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="Hold out N labelled items (groups) as the test set.",
    )
    methods: list[str] = Field(
        ["icl"],
        min_length=1,
        description="A method: icl, pet, cls, pet-full, adapet, ptuning, pet+mlm, ipet, noisy "
        "or a combination such as ipet+adapet/cross-split; repeat for several.",
        json_schema_extra={"flag": "method"},
    )
    strategies: list[Literal["multisplit", "cv", "mdl", "fixed"]] = Field(
        ["multisplit", "cv", "mdl"],
        description="Strategies to compare: multisplit, cv, mdl (split the labelled data, "
        "choose a setting by dev score) or fixed (FewNLU's fixed hyper-parameters: one "
        "setting, K seeds on all labelled data, no dev); repeat for several.",
        json_schema_extra={"flag": "strategy"},
    )
    fixed: list[str] = Field(
        [],
        description="The fixed strategy's setting as NAME=VALUE (repeat), each value one of "
        "the space's; TASK:NAME=VALUE for one task only (pattern names differ between tasks); "
        "names left out take the grid's first setting's values.",
        json_schema_extra={"metavar": "[TASK:]NAME=VALUE"},
    )
    k: int = Field(4, ge=1, le=MAX_K, description="Number of splits K.")
    k_values: list[Annotated[int, Field(ge=1, le=MAX_K)]] = Field(
        [2, 4, 8],
        min_length=1,
        description="K values for the stability criterion (k is always included).",
        json_schema_extra={"comma": True, "metavar": "K,K,..."},
    )
    ratio: float = Field(0.5, gt=0, lt=1, description="Multi-Splits' train share r.")
    split_sizes: SplitSizes = Field(
        "even",
        description="How split sizes round when K does not divide N: even (folds differ by "
        "at most one; Multi-Splits' train round(N r)) or fewnlu (FewNLU's code: folds of "
        "round(N/K), the last takes the rest; train floor(N r)).",
    )
    space: dict[str, Any] | str | None = Field(
        None,
        description="Hyperparameter space ({name: [values]}), or a YAML file holding it "
        "(optionally one section per method); default: the method's grid.",
        json_schema_extra={"metavar": "FILE", "path": True},
    )
    seed: int = Field(
        0,
        ge=0,
        le=MAX_SEED,
        description="Seeds the splitters, the training runs and the shots.",
    )
    final_seeds: int = Field(
        0,
        ge=0,
        le=100,
        description="Retrain each chosen setting on all labelled data with N seeds.",
    )
    device: str = Field(
        "auto",
        pattern=DEVICE_PATTERN,
        description="Where training runs: auto (CUDA when available), cpu, cuda, cuda:N or mps.",
    )
    keep_checkpoints: bool = Field(
        True,
        description="Keep each trained checkpoint (false: delete it once the run has its "
        "answers, saving disk).",
        json_schema_extra={
            "flag": "discard-checkpoints",
            "invert": True,
            "flag_help": "Delete each checkpoint once the run has its answers (saves disk).",
        },
    )
    checkpoints: str | None = Field(
        None,
        description="Checkpoint store to share between runs [default: RUN_DIR/checkpoints; "
        "without a run directory, a temporary folder deleted when the run ends].",
        json_schema_extra={"metavar": "DIR", "path": True},
        min_length=1,  # '' would name the current folder
    )
    threads: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="CPU threads for torch (1 is often fastest for tiny models).",
    )

    _k_values = field_validator("k_values", mode="before")(_comma_ints)

    @model_validator(mode="before")
    @classmethod
    def _singular_keys(cls, data: Any) -> Any:
        """``task: RTE`` and ``method: pet`` (one of each) are ``tasks`` and ``methods``."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for one, many in (("task", "tasks"), ("method", "methods")):
            if one in data:
                if many in data:
                    raise ValueError(f"give {one} or {many}, not both")
                value = data.pop(one)
                data[many] = value if isinstance(value, list) else [value]
        for many in ("tasks", "methods"):
            if isinstance(data.get(many), str):
                data[many] = [data[many]]
        return data

    @field_validator("strategies", "tasks", "methods")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("give at least one value")
        return list(dict.fromkeys(value))

    @field_validator("space")
    @classmethod
    def _space_named(cls, value: Any) -> Any:
        if value == "":  # '' would name the current folder
            raise ValueError("is empty; give a YAML file or a mapping {name: [values]}")
        return value

    @model_validator(mode="after")
    def _one_model_one_test(self) -> FewShotConfig:
        if len(self.models) != 1:
            raise ValueError(
                f"the few-shot study adapts one model; got {len(self.models)}: run it per model"
            )
        if (self.test is None) == (self.test_from_labelled is None):
            raise ValueError("give exactly one of test (a file) and test_from_labelled (N)")
        if self.transductive and self.unlabelled is not None:
            raise ValueError(
                "give unlabelled or transductive, not both: with unlabelled every task's "
                "unlabelled examples come from there, so transductive would change nothing"
            )
        if self.fixed and "fixed" not in self.strategies:
            raise ValueError(
                f"fixed: {', '.join(self.fixed)} is the fixed strategy's setting, but the run's "
                f"strategies ({', '.join(self.strategies)}) do not include fixed: add "
                "--strategy fixed (strategies: [..., fixed]) or drop --fixed"
            )
        return self
