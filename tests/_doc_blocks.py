"""The fenced blocks of README.md and docs/*.md, and the shell commands in them.

A block is named by its page and its first line (``Fence.key``): stable while the block's
first line stays, and unique within a page (``tests/test_docs_shell.py`` checks both). A
*command block* is a ```bash / ```sh / ```shell / ```console block, or an unlabelled block
whose first command line starts with a command (``steadyeval``, ``python``, ``pip``, ...):
docs write synopses that way.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
SHELL = frozenset({"bash", "sh", "shell", "console"})
_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_COMMAND = re.compile(r"^(\$ )?(steadyeval|python|pip|cat|export|vllm|cd|ls)\b")


@dataclass(frozen=True)
class Fence:
    """One fenced block: its page (``docs/cli.md``), language, first line number and text."""

    page: str
    lang: str
    line: int
    text: str

    @property
    def key(self) -> str:
        """The block's first line: its name in the tables of exemptions and substitutions."""
        return self.text.split("\n", 1)[0].rstrip()

    @property
    def is_command(self) -> bool:
        if self.lang in SHELL:
            return True
        if self.lang:
            return False
        first = next((ln for ln in self.text.splitlines() if ln.strip()), "")
        return bool(_COMMAND.match(first))


def fences(page: str) -> list[Fence]:
    """Every fenced block of ``page`` (a path relative to the repository), in order."""
    text = (ROOT / page).read_text(encoding="utf-8")
    return [
        Fence(page, m.group(1), text.count("\n", 0, m.start()) + 1, m.group(2))
        for m in _FENCE.finditer(text)
    ]


def command_blocks(page: str) -> list[Fence]:
    return [f for f in fences(page) if f.is_command]


def _complete(text: str) -> bool:
    """Whether ``text`` is a whole command: no open quote, no trailing backslash."""
    if text.rstrip().endswith("\\"):
        return False
    try:
        shlex.split(text, comments=True)
    except ValueError:  # "No closing quotation": the command goes on on the next line
        return False
    return True


def commands(text: str, *, console: bool = False) -> list[str]:
    """The shell commands of a block's text: lines joined where a backslash or an open
    quote continues them, comment lines and blank lines dropped. In a ``console`` block only
    lines after a ``$ `` prompt are commands (the rest is output)."""
    out: list[str] = []
    buf = ""
    for line in text.splitlines():
        if not buf:
            if console:
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if not line.strip() or line.lstrip().startswith("#"):
                continue
        if buf.rstrip().endswith("\\"):
            buf = buf.rstrip()[:-1].rstrip() + " " + line.strip()
        else:
            buf = f"{buf}\n{line}" if buf else line
        if _complete(buf):
            out.append(buf.strip())
            buf = ""
    if buf:
        raise ValueError(f"an unfinished command at the end of the block: {buf!r}")
    return out


def argv_and_redirect(command: str) -> tuple[list[str], str | None] | None:
    """``(argv, file)`` for a simple command (``file``: the target of one trailing ``>``),
    or None when the command needs a shell (pipes, ``&&``, ``;``, ``<``, variables)."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    tokens = list(lex)
    redirect = None
    if len(tokens) >= 2 and tokens[-2] == ">":
        redirect, tokens = tokens[-1], tokens[:-2]
    if any(set(t) <= set("();<>|&") for t in tokens) or "$" in command:
        return None
    return tokens, redirect
