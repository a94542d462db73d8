"""``steadyeval study NAME``: one command per registered study, built from the study's config.

Each field of a study's config (pydantic) becomes an option: ``--field-name`` (or the flag a
field names), typed from its annotation, its help from the field's description. Lists repeat
(or take comma-separated values where the field says so); a nested config exposes the flags
it names. A CONFIG file (YAML) holds the same keys; flags override it. The shared options
(``--out``, ``--cache``, ``--dry-run``, ``--no-progress``) come last.
"""

from __future__ import annotations

import inspect
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from .._errors import ConfigError, printable
from ..items import shorten
from ..studies import Study, get_study, study_names
from ._options import (
    PathParam,
    echo_counts,
    echo_result,
    first_table,
    model_args_option,
    model_specs,
    run_out,
    shared_options,
    strict_models,
)

__all__ = ["study_command", "study_group"]

# (config key, nested key or None, how to read the value)
_Dest = tuple[str, str | None, str]


def _unwrap(annotation: Any) -> Any:
    """``X | None`` → ``X``; a union of several types → ``str``."""
    if get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else str
    return annotation


class _Choice(click.Choice):  # type: ignore[type-arg]
    """A choice that also accepts deprecated names (``aliases``) without listing them; the
    config maps them to the current name with a warning."""

    def __init__(self, choices: list[str], aliases: list[str]) -> None:
        super().__init__(choices)
        self.aliases = aliases

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value in self.aliases:
            return value
        return super().convert(value, param, ctx)


def _click_type(annotation: Any, extra: dict[str, Any]) -> Any:
    if get_origin(annotation) is Literal:
        return _Choice(list(map(str, get_args(annotation))), list(extra.get("aliases", [])))
    if annotation in (int, float):
        return annotation
    return str


def _help(field: FieldInfo, text: str | None = None) -> str:
    """The field's description with click's ``[default: …]`` (or ``[required …]``) tail."""
    text = text if text is not None else (field.description or "")
    if field.is_required():
        return f"{text}  [required unless in CONFIG]"
    default = field.default
    if default is None or default is False or default in ([], ()):
        return text
    shown = ",".join(map(str, default)) if isinstance(default, list | tuple) else default
    return f"{text}  [default: {shown}]"


def _options(name: str, field: FieldInfo) -> list[tuple[click.Option, _Dest]]:
    extra: dict[str, Any] = dict(field.json_schema_extra or {})  # type: ignore[arg-type]
    if extra.get("cli") is False:
        return []
    annotation = _unwrap(field.annotation)
    flag = "--" + str(extra.get("flag", name.replace("_", "-")))
    dest = name.replace("-", "_")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        out = []
        for sub, sub_flag in dict(extra.get("flags", {})).items():
            sub_field = annotation.model_fields[sub]
            opt = click.Option(
                [f"--{sub_flag}", f"{dest}__{sub}"],
                type=_click_type(_unwrap(sub_field.annotation), {}),
                help=_help(sub_field),
            )
            out.append((opt, (name, sub, "value")))
        return out
    meta = {"metavar": extra["metavar"]} if "metavar" in extra else {}
    if annotation is bool:
        if extra.get("invert"):  # one flag that sets the field to false
            text = str(extra.get("flag_help", field.description))
            return [(click.Option([flag, dest], is_flag=True, help=text), (name, None, "invert"))]
        bare = flag.removeprefix("--")  # --x/--no-x; --no-x/--x for a field named no_x
        negative = "--" + (bare[3:] if bare.startswith("no-") else f"no-{bare}")
        opt = click.Option([f"{flag}/{negative}", dest], default=None, help=field.description)
        return [(opt, (name, None, "value"))]
    if get_origin(annotation) is list:
        (inner,) = get_args(annotation)
        comma = bool(extra.get("comma"))
        opt = click.Option(
            [flag, dest],
            multiple=True,
            type=str if comma else _click_type(inner, extra),
            help=_help(
                field,
                (field.description or "")
                + (
                    ""
                    if comma or extra.get("single") or "repeat" in (field.description or "").lower()
                    else " Repeatable."
                ),
            ),
            **meta,
        )
        return [(opt, (name, None, "comma" if comma else "list"))]
    opt = click.Option([flag, dest], type=_click_type(annotation, extra), help=_help(field), **meta)
    return [(opt, (name, None, "value"))]


def _comma_values(given: tuple[str, ...], flag: str) -> list[str]:
    """The values of a comma-separated list flag (given once or repeated); an empty entry
    (``0,,1``, a trailing comma) is an error, never dropped."""
    parts = [v.strip() for part in given for v in part.split(",")]
    if not any(parts):  # "--subjects ," is not "every subject"
        raise ConfigError(
            f"{flag} {shorten(repr(','.join(given)), 40)}: no values; "
            "expected comma-separated values (leave the flag out for the default)"
        )
    if "" in parts:
        raise ConfigError(
            f"{flag} {shorten(repr(','.join(given)), 40)}: value {parts.index('') + 1} is "
            "empty; expected comma-separated values, none empty (e.g. 1,2)"
        )
    return parts


def _overrides(
    values: dict[str, Any], dests: dict[str, _Dest], flags: dict[str, str]
) -> dict[str, Any]:
    """The config keys the user gave on the command line (``flags``: each parameter's flag,
    for an error)."""
    out: dict[str, Any] = {}
    for param, (key, sub, how) in dests.items():
        value = values.get(param)
        if value is None or value == () or (how == "invert" and not value):
            continue
        if how == "invert":
            value = False
        elif how == "comma":
            value = _comma_values(value, flags.get(param, param))
        elif how == "list":
            value = list(value)
        if sub is not None:
            out.setdefault(key, {})[sub] = value
        else:
            out[key] = value
    return out


def study_command(study: Study[Any]) -> click.Command:
    """The ``steadyeval study NAME`` command of ``study``."""
    made = [o for n, f in study.config.model_fields.items() for o in _options(n, f)]
    dests = {opt.name: dest for opt, dest in made if opt.name is not None}
    param_flags = {opt.name: opt.opts[0] for opt, _ in made if opt.name is not None}
    flag_names = {
        key if sub is None else f"{key}.{sub}": opt.opts[0] for opt, (key, sub, _) in made
    }

    def callback(config: Path | None, **values: Any) -> None:
        out, dry_run, cache = values.pop("out"), values.pop("dry_run"), values.pop("cache")
        overwrite, model_args = values.pop("overwrite"), values.pop("model_args")
        strict = values.pop("strict_logprobs")
        quiet = values.pop("no_progress")
        from ..run import PlanCounts, RunOptions
        from ..studies import run_study

        overrides = _overrides(values, dests, param_flags)
        if model_args is not None:
            overrides["models"] = model_specs(overrides.get("models", []), model_args)
        cfg = study.load_config(config, overrides, flag_names=flag_names)
        if strict and "models" in type(cfg).model_fields:
            cfg = cfg.model_copy(update={"models": strict_models(cfg.models, True)})
        options = RunOptions(
            out=run_out(out, dry_run, study.name),
            cache=cache,
            progress=False if quiet else None,
            overwrite=overwrite,
        )
        result = run_study(study, cfg, options=options, dry_run=dry_run)
        if isinstance(result, PlanCounts):
            echo_counts(result)
            note = study.plan_note(cfg)
            if note:
                click.echo(note)
            return
        analysis = study.markdown(result.analysis, result.summary["design"])
        # a study whose analysis opens with a "Decision: ..." line (decide) prints it first
        decision = next((x for x in analysis.splitlines() if x.startswith("Decision: ")), "")
        headline = "\n\n".join(v for v in (decision, first_table(analysis)) if v)
        echo_result(result.summary, result.run_dir, headline=headline)
        if result.run_dir is not None:
            click.echo(f"the whole analysis: {printable(result.run_dir)}/summary.md")

    doc = inspect.cleandoc(study.__doc__ or study.question).replace("``", "")
    example = study.example
    help_text = f"{doc}\n\nA CONFIG file (YAML) holds the same keys; flags override it."
    if example:
        lines = "\n".join(f"  {line}" for line in inspect.cleandoc(example).splitlines())
        help_text += f"\n\n\b\nExample:\n{lines}"
    command = click.Command(
        study.name,
        callback=callback,
        params=[
            click.Argument(
                ["config"], required=False, type=PathParam(dir_okay=False, path_type=Path)
            ),
            *(opt for opt, _ in made),
        ],
        help=help_text,
        short_help=study.question,
    )
    if "models" in study.config.model_fields:
        at = next(i for i, p in enumerate(command.params) if p.name == "models")
        command.params.insert(at + 1, model_args_option())
    else:
        command.params.append(click.Option(["--model_args", "model_args"], hidden=True))
    command.params += shared_options()
    return command


class _StudyGroup(click.Group):
    """Lists every registered study; builds a study's command when it is asked for (so
    ``steadyeval --help`` imports no study)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return study_names()

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in study_names():
            return None
        return study_command(get_study(name))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each study's question (a plug-in that fails to load says so; the rest list)."""
        rows = []
        for name in self.list_commands(ctx):
            try:
                rows.append((name, get_study(name).question))
            except ConfigError as exc:
                rows.append((name, f"(not available: {exc})"))
        with formatter.section("Studies"):
            formatter.write_dl(rows)


@click.group("study", cls=_StudyGroup)
def study_group() -> None:
    """Run one of the studies (each writes a run directory with its analysis)."""
