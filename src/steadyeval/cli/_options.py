"""What every command that runs models shares: the ``--out``, ``--overwrite``, ``--cache``,
``--dry-run`` and ``--no-progress`` options, lm-eval's ``--model_args`` spelling, the one
printer of a dry run's counts and the one printer of a finished run."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .._errors import printable

if TYPE_CHECKING:
    from ..models import ModelSpec
    from ..run import PlanCounts

__all__ = [
    "TASK_LOADERS",
    "cache_help",
    "check_writable",
    "echo_counts",
    "echo_result",
    "first_table",
    "lm_eval_options",
    "log_options",
    "model_args_option",
    "model_specs",
    "run_options",
    "run_out",
    "shared_options",
    "strict_models",
    "task_source",
]

F = TypeVar("F", bound=Callable[..., Any])


def cache_help() -> str:
    """``--cache``'s help: where the cache is by default, resolved here."""
    from ..cache import default_cache_path

    return (
        "Response cache file; default: $STEADYEVAL_CACHE, else "
        "$XDG_CACHE_HOME/steadyeval/responses.sqlite (XDG_CACHE_HOME defaults to ~/.cache)."
        f"  [default: {default_cache_path()}]"
    )


def shared_options() -> list[click.Option]:
    """``--out``, ``--overwrite``, ``--cache``, ``--dry-run`` and ``--no-progress``."""
    return [
        click.Option(
            ["--out"],
            type=PathParam(file_okay=False, path_type=Path),
            help="Run folder to write (results.parquet, summary.json, summary.md, ...); the "
            "same config resumes into it.  [default: runs/<YYYYmmdd-HHMMSS>-<name>]",
        ),
        click.Option(
            ["--overwrite"],
            is_flag=True,
            help="Replace a run folder that holds a run of another config (its files are "
            "deleted); without it such a folder is refused.",
        ),
        click.Option(
            ["--cache"], type=PathParam(dir_okay=False, path_type=Path), help=cache_help()
        ),
        click.Option(["--dry-run"], is_flag=True, help="Print the plan's counts; call no model."),
        click.Option(
            ["--no-progress"],
            is_flag=True,
            help="No progress bar on a terminal, no progress lines in a log.",
        ),
        click.Option(
            ["--strict-logprobs"],
            is_flag=True,
            help="openai: models: a reply whose log-probabilities cover less of the prompt "
            "than asked (an approximate score) is retried, then an error (adds strict=true to "
            "each openai: spec; the model's identity is unchanged; a spec saying strict=false "
            "is refused).",
        ),
        *log_options(),
    ]


def strict_models(models: Sequence[ModelSpec], strict: bool) -> list[ModelSpec]:
    """With ``strict``, every ``openai:`` spec gets ``strict=true`` (others score exactly);
    a spec that sets ``strict`` otherwise itself is an error naming it and the flag."""
    from .._errors import ConfigError
    from ..items import shorten
    from ..models import ModelSpec

    for m in models if strict else ():
        value = m.options.get("strict") if m.backend == "openai" else None
        if value is not None and value.lower() not in ("true", "false"):
            # not a boolean: the backend's own error, not a "conflict" (strict=banana)
            raise ConfigError(
                f"model spec openai:{shorten(m.name)}: option strict must be true or false, "
                f"got {shorten(value, 40)!r}"
            )
        if value is not None and value.lower() != "true":
            raise ConfigError(
                f"model spec openai:{shorten(m.name)}: its option strict={shorten(value, 20)!r} "
                "conflicts with "
                "--strict-logprobs (which sets strict=true on every openai: spec); leave out "
                "the flag or the option"
            )
    return [
        ModelSpec(m.backend, m.name, {**m.options, "strict": "true"})
        if strict and m.backend == "openai"
        else m
        for m in models
    ]


def _log_level(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """``-v``, ``-q`` or ``--log-level`` after the command name: as before it."""
    if not value:
        return
    from .._log import LEVELS, configure

    level = {"verbose": "debug", "quiet": "warning"}.get(str(param.name), str(value).lower())
    ctx.call_on_close(configure(LEVELS[level]))


def log_options() -> list[click.Option]:
    """``--log-level``, ``-v`` and ``-q``, also accepted after a command's name."""
    return [
        click.Option(
            ["--log-level"],
            type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
            callback=_log_level,
            expose_value=False,
            help="Least severe log lines on stderr (as `steadyeval --log-level`).",
        ),
        *(
            click.Option(
                [short, long], is_flag=True, callback=_log_level, expose_value=False, help=text
            )
            for short, long, text in (
                ("-v", "--verbose", "Debug log lines."),
                ("-q", "--quiet", "Only warnings and errors on stderr; no progress."),
            )
        ),
    ]


def model_args_option() -> click.Option:
    return click.Option(
        ["--model_args", "--model-args", "model_args"],
        metavar="K=V,...",
        help="lm-evaluation-harness's spelling: --model hf --model_args "
        "pretrained=NAME,dtype=bfloat16 (one --model only).",
    )


def run_options() -> Callable[[F], F]:
    """A decorator adding :func:`shared_options` to a click command function."""

    def decorate(f: F) -> F:
        params = f.__dict__.setdefault("__click_params__", [])
        params.extend(reversed(shared_options()))
        return f

    return decorate


def model_specs(models: Sequence[str], model_args: str | None) -> list[str | ModelSpec]:
    """The ``--model`` values (text, parsed by the config's field), with lm-eval's
    ``--model hf --model_args pretrained=X,...`` turned into one :class:`ModelSpec`."""
    if model_args is None:
        return list(models)
    if len(models) != 1:
        raise click.UsageError(
            "--model_args goes with exactly one --model (the backend, e.g. --model hf); "
            f"got {len(models)} --model values"
        )
    from ..models import lmeval_model_spec

    return [lmeval_model_spec(models[0], model_args)]


def run_out(out: Path | None, dry_run: bool, name: str) -> Path | None:
    """The run folder: ``--out``, else ``runs/<timestamp>-<name>`` (none for a dry run);
    one that cannot be written is refused here, before any model loads."""
    if dry_run:
        return out
    if out is None:
        from ..run import default_out

        out = default_out(name)
    check_writable(out)
    return out


def check_writable(path: Path | None, flag: str = "--out", *, folder: bool = True) -> None:
    """Refuse, before any model loads, a ``flag`` path this process could not write (see
    :func:`write_problem`). Creates nothing that stays."""
    from .._errors import ConfigError

    problem = None if path is None else write_problem(path, flag, folder=folder)
    if problem is not None:
        raise ConfigError(f"{flag} {problem[0]}{problem[1]}")


def output_file(text: str, flag: str) -> Path:
    """Where a file the user named with ``flag`` (``text``, as given) is written: through a
    link to its target (the file is written atomically, by a rename, which would replace
    the link itself); never under /dev or /proc (``/dev/stdout`` would become a regular
    file: ``flag -`` writes to stdout), a loop of links or a name ending in ``/``. Then
    :func:`check_writable`."""
    import errno
    import os

    from .._errors import ConfigError

    if text.endswith(("/", os.sep)):  # (Path drops the slash) a shell's redirect fails too
        raise ConfigError(f"{flag} {printable(text)}: names a folder (ends with /); name a file")
    path = Path(text)
    if path.is_symlink():
        try:
            os.stat(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ConfigError(
                    f"{flag} {printable(path)}: is a loop of links; name a regular file"
                ) from None
    resolved = os.path.realpath(path)
    target = Path(resolved) if path.is_symlink() else path
    # spelled any way (/tmp/../dev/x, //dev/x: abspath) or reached through links (realpath;
    # /proc/self/fd/1 resolves to wherever stdout goes)
    spelled = "/" + os.path.abspath(path).lstrip("/")
    if any(
        p.startswith(("/dev/", "/proc/")) or p in ("/dev", "/proc") for p in (spelled, resolved)
    ):
        raise ConfigError(
            f"{flag} {printable(path)}: is under /dev or /proc (devices, shared memory, "
            f"process files); {flag} - writes to stdout, or name a regular file"
        )
    check_writable(target, flag, folder=False)
    return target


def write_problem(path: Path, flag: str, *, folder: bool = True) -> tuple[str, str] | None:
    """Why this process could not write ``path`` (``None``: it could): the path and its
    problem (``PATH: ...``), and what to do about it with ``flag`` (``""`` where the
    problem says it). Refused: a folder (``folder``) or file whose nearest existing
    ancestor is a file, or that is not writable (tried with a temporary folder, so it holds
    for root and read-only file systems too), a file where a folder goes (or the reverse),
    a name that is not UTF-8 text (run files record it). Creates nothing that stays."""
    import os
    import tempfile

    from ..items import lone_surrogate

    if lone_surrogate(str(path)) is not None:
        return (
            f"{str(path)!r}: the name holds bytes that are not UTF-8 text",
            "; choose a UTF-8 name",
        )
    if path.exists() and path.is_dir() != folder:
        kind = "a folder" if path.is_dir() else "a file"
        return f"{path}: is {kind}; expected {'a folder' if folder else 'a file'}", ""
    if not folder and path.exists() and not path.is_dir() and not path.is_file():
        return (
            f"{path}: is a special file (a FIFO, device or socket); steadyeval writes only "
            "regular files",
            ": choose another path",
        )
    base = path if folder and path.is_dir() else path.parent
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        return f"{path}: {base} is a file, not a folder", f"; choose another {flag}"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".steadyeval-probe-", dir=base))
    except OSError as exc:
        return f"{path}: cannot write in {base} ({exc.strerror or exc})", f"; choose another {flag}"
    return None


def echo_counts(c: PlanCounts) -> None:
    """What a dry run would cost: one aligned table, the same for every command."""
    rows = [
        ("rows (item × condition × model × sample)", c.rows),
        ("requests", c.requests),
        ("unique requests", c.unique_requests),
        ("cached", c.cache_hits),
        ("to send", c.to_send),
        (
            "input tokens to send" + (" (estimated)" if c.input_tokens_estimated else ""),
            c.input_tokens,
        ),
        ("skipped (item, condition) pairs", c.skipped),
    ]
    width = max(len(label) for label, _ in rows)
    click.echo("dry run: nothing is sent")
    for label, value in rows:
        click.echo(f"  {label:<{width}}  {value:>12,}")
    names = {"unique_requests": "unique", "cache_hits": "cached"}
    for model, counts in c.per_model.items():
        detail = " · ".join(f"{names.get(k, k).replace('_', ' ')} {v:,}" for k, v in counts.items())
        click.echo(f"  {model}: {detail}")
    for model in c.unread:
        click.echo(
            f"  {model}: its cache key needs files not downloaded yet (a hub model's "
            "weights), so its cached responses were not looked up: all counted as to send"
        )


def _pct(x: float) -> str:
    return "–" if x != x else f"{100 * x:.1f}%"


def echo_result(summary: Mapping[str, Any], run_dir: Path | None, headline: str = "") -> None:
    """A finished run: accuracy per (model, condition) with full names (a pipe gets no
    80-column cut), a study's ``headline`` table, the plan's counts and what was written."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(width=None if sys.stdout.isatty() else 10_000)
    title = f"run {summary['run_id']}" + (f" · {summary['study']}" if "study" in summary else "")
    t = Table(title=Text(title), title_justify="left")
    cols = ("model", "condition", "n", "accuracy", "95% CI", "refused", "unmatched")
    for col in (*cols, "truncated", "approximate"):
        t.add_column(col, overflow="fold")
    for row in summary["by_condition"]:
        acc = row["accuracy"]
        ci = "–" if acc != acc else f"{_pct(row['accuracy_low'])}–{_pct(row['accuracy_high'])}"
        t.add_row(
            # names are the user's text: Text, never parsed as rich markup ([/], [link=...])
            *(Text(str(row[k])) for k in ("model", "condition", "n")),
            _pct(acc),
            ci,
            *(str(row.get(k, 0)) for k in ("refused", "unmatched", "truncated", "approximate")),
        )
    console.print(t)
    if headline:
        click.echo("\n" + headline + "\n")
    plan = summary["plan"]
    retries = _retries(summary.get("retries"))
    click.echo(
        f"{summary['n_rows']} rows; {plan['unique']} unique requests: {plan['cache_hits']} "
        f"cached, {plan['model_calls']} sent; skipped pairs: {summary.get('n_skipped', 0)}"
        + (f"; retries: {retries}" if retries else "")
    )
    if run_dir is not None:
        click.echo(f"wrote {printable(run_dir)}/ (results.parquet, summary.json, summary.md)")
        click.echo(f"read it: steadyeval report {shell_path(run_dir)}")


def _retries(value: Any) -> int:
    """The total retry count in a summary's ``retries`` (a number, or per model)."""
    if isinstance(value, Mapping):
        return sum(
            _retries(v.get("retries", 0) if isinstance(v, Mapping) else v) for v in value.values()
        )
    return int(value) if isinstance(value, int | float) else 0


def first_table(markdown: str) -> str:
    """The first Markdown table of ``markdown`` with the heading above it (a study's
    headline); empty when there is none."""
    lines = markdown.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return ""
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    heading = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].startswith("#")), "")
    return "\n".join([heading, "", *lines[start:end]] if heading else lines[start:end])


#: ``--task`` prefixes: whose task it is, and the data loader that reads it.
TASK_LOADERS = {"lm-eval": "lm-eval", "inspect": "inspect"}


def lm_eval_options(
    task_data: Sequence[str], include_path: Sequence[Path], num_fewshot: int | None
) -> dict[str, Any]:
    """The data options ``--task-data``, ``--include-path`` and ``--num-fewshot`` give an
    lm-eval loader (only those given)."""
    from .._errors import ConfigError

    folders: dict[str, str] = {}
    for pair in task_data:
        name, sep, folder = pair.partition("=")
        if not sep or not name.strip() or not folder:
            raise ConfigError(f"--task-data {pair!r}: expected NAME=FOLDER")
        if name.strip() in folders:
            raise ConfigError(f"--task-data: {name.strip()!r} is given twice")
        folders[name.strip()] = folder
    options: dict[str, Any] = {}
    if folders:
        options["task_data"] = folders
    if include_path:
        options["include_path"] = [str(p) for p in include_path]
    if num_fewshot is not None:
        options["num_fewshot"] = num_fewshot
    return options


_LM_FLAGS = {"task_data": "--task-data", "include_path": "--include-path",
             "num_fewshot": "--num-fewshot"}  # fmt: skip


def task_source(
    tasks: Sequence[str], lm_options: Mapping[str, Any], data: str | None, config_data: Any
) -> str | dict[str, Any] | None:
    """``--data``, or the data config that ``--task`` and the lm-eval options describe;
    without ``--task``, the lm-eval options apply to ``config_data`` (the CONFIG's data)
    when it is read by the ``lm-eval`` loader."""
    from .._errors import ConfigError

    flags = [_LM_FLAGS[k] for k in lm_options]
    if not tasks:
        if not flags:
            return data
        loader = getattr(config_data, "loader", None)
        if data is not None or loader != "lm-eval":
            raise ConfigError(
                f"{flags[0]} applies to lm-eval tasks: add --task lm-eval:NAME (or give a "
                "CONFIG whose data has loader: lm-eval)"
            )
        return {**config_data.model_dump(exclude_none=True), **lm_options}
    if data is not None:
        raise ConfigError("give --data or --task, not both")
    tools = set()
    names = []
    for spec in tasks:
        tool, sep, name = spec.partition(":")
        if not sep or tool not in TASK_LOADERS or not name.strip():
            raise ConfigError(
                f"--task {spec!r}: expected lm-eval:NAME (an lm-evaluation-harness task, group "
                "or tag) or inspect:FILE.py@TASK (an Inspect task)"
            )
        if "," in name and tool == "lm-eval":
            raise ConfigError(
                f"--task {spec!r}: one task per --task (lm-eval's comma list is "
                + " ".join(f"--task lm-eval:{n.strip()}" for n in name.split(","))
                + " here)"
            )
        tools.add(tool)
        names.append(name.strip())
    if len(tools) > 1:
        raise ConfigError("--task: give tasks of one tool per run (lm-eval: or inspect:)")
    tool = tools.pop()
    if tool == "inspect" and flags:
        raise ConfigError(f"{flags[0]} applies to lm-eval tasks, not Inspect tasks")
    # path None: a CONFIG's data path (merged with a flag's section) is not this data's
    return {"path": None, "loader": TASK_LOADERS[tool], "task": names, **lm_options}


def shell_path(path: Path) -> str:
    """``path`` as a command line the user can paste: quoted for the shell, and never read
    as an option (``-x`` is written ``./-x``). A name with a character that does not print
    (an escape, a newline, a byte that is not UTF-8) is written in bash's ``$'...'`` form
    with that character escaped: printed as it is, it would be lost or garble the line."""
    text = str(path)
    text = f"./{text}" if text.startswith("-") else text
    if text.isprintable():
        return shlex.quote(text)
    return "$'" + "".join(_ansi_c(ch) for ch in text) + "'"


def _ansi_c(ch: str) -> str:
    """One character of a bash ``$'...'`` string: one that does not print as its UTF-8
    bytes (``\\xHH`` each, which bash reads alike in every locale)."""
    code = ord(ch)
    if ch in "'\\":
        return "\\" + ch
    if ch.isprintable():
        return ch
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as Python decodes file names
        return f"\\x{code - 0xDC00:02x}"
    return "".join(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))


class PathParam(click.Path):
    """:class:`click.Path` that refuses an empty argument: click reads ``''`` (an unset
    shell variable, ``"$RUN"``) as the current folder, which a user never meant."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value == "":
            if not self.dir_okay:
                what = "name a file" + (" (- for stdout)" if self.allow_dash else "")
            elif not self.file_okay:
                what = "name a folder (. for the current folder)"
            else:
                what = "name a file or folder (. for the current folder)"
            self.fail(f"is empty; {what}", param, ctx)
        return super().convert(value, param, ctx)
