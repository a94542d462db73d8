"""The run configuration (YAML or flags), validated with pydantic, with located errors."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    TypeVar,
    Union,
    get_args,
    get_origin,
)

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from .._errors import ConfigError
from .._limits import MAX_LIST, MAX_SEED
from ..conditions import (
    FORMATS,
    MAX_TEMPLATE_CHARS,
    TEMPLATES,
    Condition,
    Format,
    Generation,
    Shots,
    Template,
    field_hints,
    template_problem,
)
from ..models import ModelSpec
from ..results import StudyColumn
from ..scoring import canonical_scoring
from ._config_checks import (
    check_models,
    check_names_and_pools,
    check_paths,
    odd_value,
    true_for_a_number,
)
from ._config_errors import ValueAt, format_errors, located
from ._yaml import read_yaml

__all__ = [
    "MAX_CONDITIONS",
    "MAX_LIST",
    "ColumnConfig",
    "ConditionConfig",
    "DataConfig",
    "RunConfig",
    "load_run_config",
    "load_yaml_config",
    "validate_config",
]


V = TypeVar("V")

#: The most conditions one run config may list (each multiplies the requests).
MAX_CONDITIONS = 10_000

#: The seeds a YAML condition may leave out (or set to null): they are then the run's seed.
_RUN_SEEDS = {Condition: "order_seed", Shots: "seed", Generation: "seed"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _yaml_type(hint: Any) -> Any:
    """``hint`` as YAML gives it: a tuple is a list (bounds kept); a number or a boolean is
    strict, as the dataclass's own check is (``n: "3"``, ``top_k: 5.0`` and ``chat: "no"``
    are refused, not converted; an integer is still a float)."""
    if hint in (int, float, bool):
        return Annotated[hint, Strict()]
    origin = get_origin(hint)
    if origin is Annotated:
        inner, *metadata = get_args(hint)
        return Annotated[(_yaml_type(inner), *metadata)]  # type: ignore[valid-type]
    if origin is tuple:
        return list[get_args(hint)[0]]  # type: ignore[misc]
    if origin in (Union, types.UnionType):
        return Union[tuple(_yaml_type(a) for a in get_args(hint))]  # noqa: UP007
    return hint


def _yaml_model(
    cls: type, base: type[BaseModel], parts: Mapping[str, tuple[Any, Any]] | None = None
) -> Any:
    """The pydantic model of the YAML form of the conditions dataclass ``cls``: its fields,
    types, bounds and defaults, read from ``cls`` (defined once, there), except ``parts``
    (name -> (type, default); a type of None drops the field) and the seed that defaults to
    the run's (``None``)."""
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        hint = field_hints(cls)[f.name]
        default: Any = f.default
        if default is dataclasses.MISSING:  # required (``...``), or made by a factory
            factory: Any = f.default_factory
            default = ... if factory is dataclasses.MISSING else factory()
        if f.name in (parts or {}):
            hint, default = (parts or {})[f.name]
            if hint is None:
                continue
        elif _RUN_SEEDS.get(cls) == f.name:
            hint, default = hint | None, None
        if isinstance(default, tuple):
            default = list(default)
        fields[f.name] = (_yaml_type(hint), default)
    return create_model(f"{cls.__name__}Config", __base__=base, **fields)


class _TemplateChecks(_Strict):
    """Checks a YAML template gets when the config is read (Python's when it renders)."""

    name: str

    @field_validator("body", "answer", "header", check_fields=False)
    @classmethod
    def _renders(cls, value: str, info: ValidationInfo) -> str:
        """A syntax error, an unknown filter or an undefined variable is found here, when the
        config is read, not when the first prompt is rendered (a part longer than
        ``MAX_TEMPLATE_CHARS`` is refused before it is compiled)."""
        if len(value) > MAX_TEMPLATE_CHARS:
            raise ValueError(
                f"{len(value):,} characters, over the limit of {MAX_TEMPLATE_CHARS:,} "
                "characters for a template part"
            )
        problem = template_problem(value, answer=info.field_name == "answer")
        if problem is not None:
            raise ValueError(problem)
        return value


class VerbalizerConfig(_Strict):
    """A verbalizer in YAML: its name and its words (Python gives ``Condition`` both)."""

    name: str
    words: dict[str, str]


def _builtin(value: V, table: Mapping[str, Any], what: str, keys: str) -> V:
    """``value`` unless it is a name that is not built in."""
    if isinstance(value, str) and value not in table:
        raise ValueError(
            f"unknown {what} {value!r}; built-in {what}s: {', '.join(sorted(table))} "
            f"(or give a mapping with {keys})"
        )
    return value


class _ConditionChecks(_Strict):
    """What a YAML condition is checked for beyond its fields' types, and how it becomes a
    :class:`Condition`."""

    name: str

    @field_validator("scoring", check_fields=False)
    @classmethod
    def _known_scoring(cls, value: str) -> str:
        return canonical_scoring(value)

    @field_validator("template", check_fields=False)
    @classmethod
    def _known_template(cls, value: Any) -> Any:
        return _builtin(value, TEMPLATES, "template", "name and body")

    @field_validator("format", check_fields=False)
    @classmethod
    def _known_format(cls, value: Any) -> Any:
        return _builtin(value, FORMATS, "format", "name and kind")

    @field_validator("shots", mode="before", check_fields=False)
    @classmethod
    def _shot_count(cls, value: Any) -> Any:
        """``shots: 3`` is ``shots: {n: 3}``, as ``Condition(shots=3)`` is in Python."""
        is_count = isinstance(value, int) and not isinstance(value, bool)
        return {"n": value} if is_count else value

    @model_validator(mode="after")
    def _buildable(self) -> _ConditionChecks:
        """What only the whole condition can tell (e.g. a scoring mode that needs options
        under a free-form format) is an error here, located at the condition."""
        try:
            self.build(0)
        except ConfigError as exc:
            raise ValueError(str(exc).removeprefix(f"condition {self.name!r}: ")) from None
        return self

    def build(self, seed: int) -> Condition:
        """The condition, its unset seeds taken from ``seed`` (the run's)."""
        given = self.model_dump()
        for part, key in (
            (given, "order_seed"),
            (given["shots"], "seed"),
            (given["generation"], "seed"),
        ):
            part[key] = seed if part[key] is None else part[key]
        verbalizer = given.pop("verbalizer")
        try:
            return Condition(
                **given,
                verbalizer=verbalizer and verbalizer["words"],
                verbalizer_name=verbalizer and verbalizer["name"],
            )
        except (ValueError, TypeError) as exc:
            raise ConfigError(str(exc)) from None


if TYPE_CHECKING:  # the models are built from the dataclasses; their checks are typed here
    TemplateConfig = _TemplateChecks
    ConditionConfig = _ConditionChecks
else:
    TemplateConfig = _yaml_model(Template, _TemplateChecks)
    FormatConfig = _yaml_model(Format, _Strict)
    ShotsConfig = _yaml_model(Shots, _Strict)
    GenerationConfig = _yaml_model(Generation, _Strict)
    ConditionConfig = _yaml_model(
        Condition,
        _ConditionChecks,
        {
            "template": (str | TemplateConfig, "qa"),
            "format": (str | FormatConfig, "mc"),
            "shots": (ShotsConfig, ShotsConfig()),
            "generation": (GenerationConfig, GenerationConfig()),
            "verbalizer": (VerbalizerConfig | None, None),
            "verbalizer_name": (None, None),
        },
    )


class DataConfig(BaseModel):
    """Where items come from: a path (or hub name), optionally read by a named loader
    (``squad2``, ``mmlu``, ``fewglue``, ``lama``, ...) whose options are further keys."""

    model_config = ConfigDict(extra="allow", frozen=True)

    path: str | None = None
    loader: str | None = None
    split: str | None = None
    config: str | None = None
    fields: dict[str, str] | None = None

    @model_validator(mode="after")
    def _options_need_a_loader(self) -> DataConfig:
        if self.path is None and self.loader is None:
            raise ValueError(
                "give path (a file or hub data set), or a loader that needs none (e.g. "
                "loader: lm-eval with task: arc_easy)"
            )
        extra = sorted(self.model_extra or {})
        if extra and self.loader is None:
            raise ValueError(
                f"unknown key {extra[0]!r}; allowed keys here: config, fields, loader, path, "
                "split (other keys are options of a named loader: set loader)"
            )
        return self

    def options(self) -> dict[str, Any]:
        """The loader's options: every key but ``path`` and ``loader`` that is set."""
        given = {"split": self.split, "config": self.config, "fields": self.fields}
        return {
            **{k: v for k, v in given.items() if v is not None},
            **dict(self.model_extra or {}),
        }


#: The condition a run of lm-eval tasks gets when its config names none: each item asked and
#: scored as its task does (the ``lm-eval`` template and scoring).
LM_EVAL_CONDITION = {"name": "lm-eval", "template": "lm-eval", "scoring": "lm-eval"}


#: The conditions a run of Inspect tasks gets when its config names none.
INSPECT_CONDITIONS = (
    {"name": "mc", "format": "mc", "scoring": "option-logprob", "items": "with-options"},
    {"name": "inspect", "format": "free", "scoring": "inspect", "items": "without-options"},
)


def _default_conditions() -> list[ConditionConfig]:
    """Flags alone: options as multiple choice (scored by option log-probability) when an item
    has them, free-form generation otherwise."""
    mc = {"name": "mc", "format": "mc", "scoring": "option-logprob", "items": "with-options"}
    free = {"name": "free", "format": "free", "items": "without-options"}
    return [
        ConditionConfig.model_validate(mc),
        ConditionConfig.model_validate({**free, "generation": {"stop": ["\n"]}}),
    ]


class ColumnConfig(_Strict):
    """A study column: an item metadata key (``key``, default ``name``) as its own column."""

    name: str
    type: Literal["string", "int", "float", "bool", "json"] = "string"
    doc: str = ""
    key: str | None = None


class RunConfig(_Strict):
    """Everything that defines a run. The run id is a hash of this (resolved) config."""

    data: str | DataConfig
    models: list[ModelSpec] = Field(min_length=1, max_length=MAX_LIST)
    conditions: list[ConditionConfig] = Field(
        default_factory=_default_conditions, max_length=MAX_CONDITIONS
    )
    shot_pools: dict[str, str | DataConfig] = {}
    seed: int = Field(0, ge=0, le=MAX_SEED)
    limit: int | None = Field(None, gt=0)
    sample: int | None = Field(None, gt=0)
    columns: list[str | ColumnConfig] = []

    @model_validator(mode="before")
    @classmethod
    def _task_defaults(cls, raw: Any) -> Any:
        """Another tool's tasks without conditions: lm-eval's asked as lm-eval asks them;
        Inspect's multiple-choice samples by option log-probability, its generated answers
        judged by the task's own scorer."""
        if isinstance(raw, Mapping) and "conditions" not in raw:
            data = raw.get("data")
            loader = data.get("loader") if isinstance(data, Mapping) else None
            if loader is None and isinstance(data, DataConfig):
                loader = data.loader
            if loader == "lm-eval":
                return {**raw, "conditions": [dict(LM_EVAL_CONDITION)]}
            if loader == "inspect":
                return {**raw, "conditions": [dict(c) for c in INSPECT_CONDITIONS]}
        return raw

    @field_validator("models")
    @classmethod
    def _models_once(cls, value: list[ModelSpec]) -> list[ModelSpec]:
        """Each spec's backend known and each listed once: an error here, before any model
        loads (each spec's text was parsed by its type)."""
        check_models(value)
        return value

    @model_validator(mode="after")
    def _names_and_pools(self) -> RunConfig:
        """Condition names unique, shot sources defined, data paths UTF-8 text."""
        paths = [
            (("data",), self.data),
            *((("shot_pools", k), v) for k, v in self.shot_pools.items()),
        ]
        named = [(loc, p.path if isinstance(p, DataConfig) else p) for loc, p in paths]
        check_paths([(loc, path) for loc, path in named if path is not None])
        check_names_and_pools(self.conditions, self.shot_pools)
        return self

    @model_validator(mode="after")
    def _limit_or_sample(self) -> RunConfig:
        """``limit`` (the first N items) and ``sample`` (N drawn at random) both say which
        items to evaluate: one of them, not both."""
        if self.limit is not None and self.sample is not None:
            raise ValueError(
                "give limit (the first N items) or sample (N items drawn with the seed), not both"
            )
        return self

    def build_conditions(self) -> list[Condition]:
        return [c.build(self.seed) for c in self.conditions]

    def build_columns(self) -> list[StudyColumn]:
        """The declared columns (a plain name is a string column of that metadata key)."""
        try:
            return [
                StudyColumn(c) if isinstance(c, str) else StudyColumn(**c.model_dump())
                for c in self.columns
            ]
        except ConfigError as exc:
            raise ConfigError(f"columns: {exc}") from None


M = TypeVar("M", bound=BaseModel)


#: Keys that are alternatives (a config may set one): a flag setting one replaces the
#: file's other, as a flag replaces the file's value of its own key.
_ALTERNATIVES: Mapping[str, tuple[str, ...]] = {
    "limit": ("sample",),
    "sample": ("limit",),
    "limit_per_subject": ("sample_per_subject",),
    "sample_per_subject": ("limit_per_subject",),
}


def load_yaml_config(
    model: type[M],
    path: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    what: str = "config",
    flag_names: Mapping[str, str] | None = None,
) -> M:
    """Validate a YAML file (optional) plus ``overrides`` (flags) against a pydantic model.

    Relative data paths and model folders in the file are taken relative to the file when
    they exist there. Overrides that are ``None`` or empty are ignored (flags not given); a
    mapping sets keys of the file's section of that name. An unknown key or a wrong value
    raises :class:`ConfigError` naming where the value came from (the file and line, or the
    flag: ``flag_names`` maps ``key`` or ``key.sub`` to the flag that set it), the key path
    and the allowed keys or values.
    """
    raw: dict[str, Any] = {}
    root = None
    source = "<flags>"
    if path is not None:
        p = Path(path)
        source = str(p)
        loaded, root = read_yaml(p, what)
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{p}: the {what} must be a mapping of keys to values")
        raw = _resolve_paths(loaded, p.parent, _path_keys(model))
    given: dict[str, str] = {}
    names = flag_names or {}
    for k, v in (overrides or {}).items():
        if v is None or v == [] or v == ():
            continue
        if isinstance(v, Mapping):
            given.update({f"{k}.{sub}": names.get(f"{k}.{sub}", f"{k}.{sub}") for sub in v})
            if isinstance(raw.get(k), Mapping):
                v = {**raw[k], **v}  # a flag sets one key of a section the file gives
        else:
            given[k] = names.get(k, k)
        raw[k] = v
    for k in list(given):  # a flag for one of two alternatives replaces the file's other
        for other in _ALTERNATIVES.get(k, ()):
            if other not in given:
                raw.pop(other, None)
    cfg = validate_config(model, raw, what=what, source=source, root=root, given=given, flags=names)
    if path is not None and "models" not in given:
        cfg = _models_beside(cfg, Path(path).parent)
    models = getattr(cfg, "models", None)
    if isinstance(models, list) and all(isinstance(m, ModelSpec) for m in models):
        try:  # backends known; one folder under two names is one model listed twice
            check_models([_as_folder(m) for m in models])
        except ValueAt as exc:
            loc = ("models", *exc.loc)
            raise ConfigError(
                located(loc, str(exc), source=source, root=root, what=what, given=given)
            ) from None
    return cfg


def validate_config(
    model: type[M],
    data: Mapping[str, Any],
    *,
    what: str = "config",
    source: str = "<python>",
    root: Any = None,
    given: Mapping[str, str] | None = None,
    flags: Mapping[str, str] | None = None,
) -> M:
    """``data`` validated as ``model``; errors raise :class:`ConfigError` naming the key (and,
    with a YAML ``root``, its line; for a key in ``given``, the flag that set it; for a
    required key that is missing, its flag in ``flags``) and what is allowed. A value no
    config accepts (an integer beyond 64 bits, NaN or infinity, a lone surrogate, text over
    a million characters) is refused first, wherever it is."""
    odd = odd_value(data)
    if odd is None:
        boolean = true_for_a_number(model, data)
        if boolean is not None:
            odd = boolean, "true or false where a number goes; give a number"
    if odd is not None:
        loc, problem = odd
        raise ConfigError(located(loc, problem, source=source, root=root, what=what, given=given))
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        raise ConfigError(
            format_errors(
                exc, source=source, root=root, model=model, what=what, given=given, flags=flags
            )
        ) from None


def load_run_config(
    path: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> RunConfig:
    """Read a YAML config (optional) and apply ``overrides`` (e.g. from CLI flags).

    An unknown key or a wrong type raises :class:`ConfigError` naming the key, its line in
    the file and the allowed keys or values.
    """
    flags = {
        "models": "--model",
        "data": "--data",
        "limit": "--limit",
        "sample": "--sample",
        "seed": "--seed",
    }
    return load_yaml_config(RunConfig, path, overrides, what="run config", flag_names=flags)


def _path_keys(model: type[BaseModel]) -> set[str]:
    """The model's keys that hold paths (fields marked ``json_schema_extra={"path": True}``)."""
    keys = {"data"}
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra
        if isinstance(extra, dict) and extra.get("path"):
            keys.add(name)
    return keys


def _resolve_paths(raw: dict[str, Any], base: Path, keys: set[str]) -> dict[str, Any]:
    """Make relative data paths in a config file relative to the file's folder."""

    def fix(value: Any) -> Any:
        if isinstance(value, str) and value and (base / value).exists():  # "" stays empty
            return str(base / value)
        if isinstance(value, list):
            return [fix(v) for v in value]
        if isinstance(value, dict):
            out = dict(value)
            for key in ("path", "include_path"):  # a file or folder, or a list of folders
                if key in out:
                    out[key] = fix(out[key])
            if isinstance(out.get("task_data"), dict):  # lm-eval: {task: folder}
                out["task_data"] = {k: fix(v) for k, v in out["task_data"].items()}
            if out.get("loader") == "inspect" and "task" in out:  # FILE.py@TASK
                specs = out["task"]
                fixed = [fix_spec(t) for t in ([specs] if isinstance(specs, str) else specs)]
                out["task"] = fixed[0] if isinstance(specs, str) else fixed
            return out
        return value

    def fix_spec(spec: Any) -> Any:
        """An Inspect task spec's file part, ``FILE.py`` of ``FILE.py@TASK``."""
        if not isinstance(spec, str):
            return spec
        file, at, name = spec.partition("@")
        return f"{fix(file)}{at}{name}"

    out = dict(raw)
    for key in keys & set(out):
        out[key] = fix(out[key])
    if isinstance(out.get("shot_pools"), dict):
        out["shot_pools"] = {k: fix(v) for k, v in out["shot_pools"].items()}
    return out


def _models_beside(cfg: M, base: Path) -> M:
    """``cfg`` with the model specs its file gave (``models``) resolved by :func:`_fix_model`."""
    specs = getattr(cfg, "models", None)
    if not isinstance(specs, list) or not all(isinstance(s, ModelSpec) for s in specs):
        return cfg
    fixed = [_fix_model(s, base) for s in specs]
    return cfg if fixed == specs else cfg.model_copy(update={"models": fixed})


def _as_folder(spec: ModelSpec) -> ModelSpec:
    """``spec`` naming its folder by its resolved path, when it names a local folder (to
    find one folder listed under two names)."""
    if not spec.backend.startswith(("hf", "vllm")):
        return spec
    try:
        folder = Path(spec.name)
        return dataclasses.replace(spec, name=str(folder.resolve())) if folder.is_dir() else spec
    except (OSError, ValueError):
        return spec


def _fix_model(spec: ModelSpec, base: Path) -> ModelSpec:
    """``hf:tiny`` in a config file means ``tiny`` beside the file, when that folder exists
    (for the backends that open local folders: an ``openai:`` name is the server's)."""
    if not spec.backend.startswith(("hf", "vllm")) or Path(spec.name).is_absolute():
        return spec
    try:
        beside = (base / spec.name).is_dir()
    except (OSError, ValueError):  # a name no file system takes (too long, a NUL)
        beside = False
    return dataclasses.replace(spec, name=str(base / spec.name)) if beside else spec
