"""docs/cli.md has a section for every command and study, matching its ``--help`` (issue 38,
point 5): its synopsis names only options the command has, and the section names every
option the command has (the options every model command shares are named once, at the top).
And no documentation block imports a private module."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest

from steadyeval.cli import main

from ._doc_blocks import PAGES, ROOT, fences

CLI = ROOT / "docs" / "cli.md"
#: Options of `run` and every study, named once in the page's first paragraphs.
COMMON = (
    "--model_args",
    "--overwrite",
    "--cache",
    "--dry-run",
    "--no-progress",
    "--strict-logprobs",
    "--log-level",
    "--verbose",
    "--quiet",
)
_FLAG = re.compile(r"(?<![\w-])(--[a-zA-Z][\w-]*)")


def _leaves(group: click.Group, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from _leaves(command, [*path, name])
        else:
            yield [*path, name], command


COMMANDS = list(_leaves(main, []))


def _sections() -> dict[str, str]:
    """``{"study formats": text}``: each ``## `steadyeval ...` `` section, to the next heading."""
    parts = re.split(r"^(#{2,3} .*)$", CLI.read_text(encoding="utf-8"), flags=re.M)
    out = {}
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        m = re.fullmatch(r"#{2,3} `steadyeval ([^`\[]+)`", heading.strip())
        if m:
            out[m.group(1).strip()] = body
    return out


def _opts(command: click.Command) -> list[list[str]]:
    return [
        [*p.opts, *p.secondary_opts]
        for p in command.params
        if isinstance(p, click.Option) and "--help" not in p.opts
    ]


def test_the_walk_sees_every_command() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"run", "study formats", "study spread", "study disparity", "report", "compare"} <= names
    assert {"import lm-eval", "import inspect", "cache info", "cache clear", "tiny-model"} <= names


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_cli_md_has_a_section_matching_help(path: list[str], command: click.Command) -> None:
    name = " ".join(path)
    section = _sections().get(name)
    assert section is not None, f"docs/cli.md has no section `steadyeval {name}`"
    synopsis = re.search(r"```\w*\n(.*?)```", section, re.S)
    assert synopsis is not None, f"`steadyeval {name}`: no synopsis block"
    assert synopsis.group(1).startswith(f"steadyeval {name}")
    known = {o for group in _opts(command) for o in group}
    unknown = sorted(set(_FLAG.findall(synopsis.group(1))) - known)
    assert not unknown, f"`steadyeval {name}`'s synopsis names options it lacks: {unknown}"
    runs_models = path[0] in ("run", "study")
    named = set(_FLAG.findall(section))
    missing = [
        group[0]
        for group in _opts(command)
        if not named & set(group) and not (runs_models and set(group) & set(COMMON))
    ]
    assert not missing, f"docs/cli.md's `steadyeval {name}` never names {missing}"


def _outside_brackets(text: str) -> str:
    """``text`` without what its ``[...]`` hold (the synopsis's optional parts)."""
    depth, out = 0, []
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if depth == 0 and ch != "]":
            out.append(ch)
    return "".join(out)


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_a_synopsis_shows_an_option_with_a_default_as_optional(
    path: list[str], command: click.Command
) -> None:
    """An option outside ``[...]`` reads as one to give; one with a default is optional
    (``tiny-model --arch`` was shown bare, but defaults to gpt2)."""
    synopsis = re.search(r"```\w*\n(.*?)```", _sections()[" ".join(path)], re.S)
    assert synopsis is not None
    ctx = click.Context(command)
    defaults = {
        o: p.get_default(ctx, call=False)
        for p in command.params
        if isinstance(p, click.Option)
        for o in (*p.opts, *p.secondary_opts)
    }
    bare = _FLAG.findall(_outside_brackets(synopsis.group(1)))
    shown = [f for f in bare if isinstance(defaults.get(f), str | int | float)]
    assert not shown, f"`steadyeval {' '.join(path)}`: {shown} have defaults; show them in [...]"


def test_the_common_options_are_named_at_the_top() -> None:
    top = CLI.read_text(encoding="utf-8").split("\n## ", 1)[0]
    assert [o for o in COMMON if o not in top] == []


_PRIVATE_IMPORT = re.compile(
    r"^\s*(?:from\s+steadyeval(?:\.\w+)*\.(_\w+)[\w.]*\s+import"
    r"|import\s+steadyeval(?:\.\w+)*\.(_\w+)"
    r"|from\s+steadyeval[\w.]*\s+import\s+\(?\s*(?:[\w, ]*,\s*)?(_\w+))",
    re.M,
)


def test_private_import_pattern() -> None:
    for bad in (
        "from steadyeval.models._tiny import build_tiny_model",
        "import steadyeval.stats._irt",
        "from steadyeval.stats import fit_irt, _grid",
        "    from steadyeval._extras import MissingExtraError",
    ):
        assert _PRIVATE_IMPORT.search(bad), bad
    for good in ("from steadyeval.models import build_tiny_model", "import steadyeval.stats"):
        assert not _PRIVATE_IMPORT.search(good), good


def test_no_doc_block_imports_a_private_module() -> None:
    """Docs use the public API (a package's ``__init__``): ``steadyeval.models._tiny`` was
    imported where ``steadyeval.models.build_tiny_model`` is the public name."""
    found = [
        f"{f.page}:{f.line + f.text.count(chr(10), 0, m.start()) + 1}: {m.group(0).strip()}"
        for page in PAGES
        for f in fences(page)
        for m in _PRIVATE_IMPORT.finditer(f.text)
    ]
    assert found == []
