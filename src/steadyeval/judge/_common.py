"""What both judge passes check before any judge is asked: the output folder, the rubric, and
which of the user's items really are the graded run's."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._errors import ConfigError
from ..conditions import template_problem
from ..items import Item

__all__ = ["check_out", "check_rubric", "matched_items"]

_log = logging.getLogger("steadyeval")
#: Files a judge pass writes at the top of its folder: one of them marks the folder as a
#: judge pass's, which a new pass may write over.
_OWN = ("judge.json", "pairwise.json")


def check_out(out: str | Path | None, graded: Sequence[str | Path]) -> None:
    """Refuse an output folder that is a graded run, or any run's or other folder holding
    a results table that no judge pass wrote: writing there would replace its results."""
    if out is None:
        return
    if not str(out).strip():
        raise ConfigError("--out is empty; name the folder the judge pass writes")
    folder = Path(out)
    for g in graded:
        gp = Path(g)
        run_dir = gp if gp.is_dir() else gp.parent
        if folder.resolve() == run_dir.resolve():
            raise ConfigError(
                f"--out {folder}: that is the graded run's folder; a judge pass writes its "
                "own results there and would replace the run's: choose another folder"
            )
    if (folder / "manifest.json").exists() or (
        (folder / "results.parquet").exists() and not any((folder / f).exists() for f in _OWN)
    ):
        raise ConfigError(
            f"--out {folder}: the folder holds a run (manifest.json or results.parquet); a "
            "judge pass would replace its results: choose another folder"
        )


def check_rubric(rubric: str, where: str = "the rubric") -> None:
    """Refuse an empty rubric, or one that is not a valid template (its line named)."""
    if not rubric.strip():
        raise ConfigError(f"{where} is empty; write the instruction the judge gets")
    problem = template_problem(rubric)
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")


def matched_items(rows: Sequence[Mapping[str, Any]], items: Sequence[Item]) -> dict[str, Item]:
    """The given items that are the graded run's: same id and same content (``item_hash``).
    Items that differ, or that no row names, are left out with a warning, so the judge
    never reads one question and grades an answer to another."""
    hashes = {r["item_id"]: r.get("item_hash") for r in rows}
    out: dict[str, Item] = {}
    changed = []
    for item in items:
        if item.id not in hashes:
            continue
        if hashes[item.id] is not None and hashes[item.id] != item.hash:
            changed.append(item.id)
            continue
        out[item.id] = item
    if items and not out and not changed:
        _log.warning(
            "none of the %d items given match the graded run's item ids; the judge sees the "
            "prompts the graded model saw",
            len(items),
        )
    if changed:
        _log.warning(
            "%d item(s) given differ from the graded run's (item_hash), e.g. %r: the judge "
            "sees the prompt the graded model saw for them",
            len(changed),
            changed[0],
        )
    missing = len(hashes) - len(out) - len(changed)
    if out and missing:
        _log.warning(
            "%d of the graded run's items are not among the items given: the judge sees the "
            "prompt the graded model saw for them",
            missing,
        )
    return out
