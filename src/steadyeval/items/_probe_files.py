"""Factual probes (relation templates + facts) in three on-disk layouts, with located errors.

Layouts (see ``docs/study-sensitivity.md``):

*generic*
    ``relations.jsonl`` — ``{"relation": "P19", "templates": ["[X] was born in [Y] .", ...]}``
    (optional ``"weights"``: one number per template; ``"template"`` alone is accepted too)
    and ``facts.jsonl`` — ``{"relation": "P19", "subject": "...", "object": "...",
    "subject_aliases": [...]}`` (aliases optional).
*lama*
    ``relations.jsonl`` (``{"relation", "template", ...}``) and a folder of fact files
    ``TREx/<relation>.jsonl`` (``{"sub_label", "obj_label", "sub_uri"?, "obj_uri"?}``); a
    folder named ``S-TEST`` or ``TREx_train`` is accepted as well.
*lpaqa*
    ``prompt/<set>/<relation>.txt`` (one template per line) or ``.jsonl``
    (``{"template", "weight"}``) for the sets ``manual_paraphrase``, ``paraphrase`` and
    ``mine``, and the fact files ``TREx_train/<relation>.jsonl`` (or ``TREx/``).

The first template of a relation is its *original* template. In the LPAQA layout that is
line 1 of ``manual_paraphrase`` (the LAMA template); for the other prompt sets it is moved
to the front, or put there when the set lacks it (``Relation.original_added``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._errors import ConfigError, DataError
from .._files import input_file, limit_from_env, read_text_file
from ._jsonl import read_jsonl
from ._text import shorten

__all__ = [
    "MAX_LIST_BYTES",
    "MAX_TEMPLATE_CHARS",
    "PROMPT_SETS",
    "Fact",
    "Layout",
    "ProbeData",
    "Relation",
    "check_names",
    "check_object",
    "dedupe_facts",
    "detect_layout",
    "load_generic",
    "load_lama",
    "load_lpaqa",
    "read_list_file",
]

PROMPT_SETS: tuple[str, ...] = ("manual_paraphrase", "paraphrase", "mine")
Layout = Literal["generic", "lama", "lpaqa"]
_FACT_FOLDERS = ("TREx", "S-TEST", "TREx_train")
_LPAQA_FACT_FOLDERS = ("TREx_train", "TREx")
#: The largest word list, alias map or template file read whole (``STEADYEVAL_MAX_FILE_MB``
#: raises it); LAMA's vocabulary is 150 KB, an alias map for its subjects a few MB.
MAX_LIST_BYTES = 64 * 1024 * 1024
#: The longest relation template (LAMA's and LPAQA's are under 200 characters): each is
#: rendered once per fact and name.
MAX_TEMPLATE_CHARS = 1000


def read_list_file(path: str | Path, what: str) -> str:
    """The text of a small list file (a vocabulary, aliases, templates): a regular UTF-8
    file of at most :data:`MAX_LIST_BYTES`, else a :class:`DataError` naming the file (and
    the line of a byte that is not UTF-8)."""
    limit = limit_from_env("STEADYEVAL_MAX_FILE_MB", MAX_LIST_BYTES)
    return read_text_file(path, what, max_bytes=limit)


@dataclass(frozen=True)
class Fact:
    """One (relation, subject, object) triple and the subject's other names.

    ``aliases`` holds the subject's names other than ``subject`` (in file order, no
    repeats). ``where`` is ``"file:line"`` for messages.
    """

    relation: str
    subject: str
    object: str
    aliases: tuple[str, ...] = ()
    subject_uri: str | None = None
    object_uri: str | None = None
    where: str = ""

    @property
    def subject_key(self) -> str:
        return self.subject_uri or self.subject

    @property
    def object_key(self) -> str:
        return self.object_uri or self.object


@dataclass(frozen=True)
class Relation:
    """A relation's templates (index 0 is the original) and optional template weights."""

    id: str
    templates: tuple[str, ...]
    weights: tuple[float, ...] | None = None
    label: str | None = None
    original_added: bool = False
    where: str = ""


@dataclass(frozen=True)
class ProbeData:
    """Relations and facts as loaded (no limit applied), plus notes on what was dropped."""

    source: str
    layout: Layout
    prompt_set: str | None
    relations: tuple[Relation, ...]
    facts: tuple[Fact, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def facts_of(self, relation: str) -> list[Fact]:
        return [f for f in self.facts if f.relation == relation]


# -- low-level readers -------------------------------------------------------------------------


def check_object(rec: Any, path: Path, line: int, example: str) -> Mapping[str, Any]:
    if not isinstance(rec, Mapping):
        raise DataError(
            f"a line must be a JSON object, got {type(rec).__name__}",
            file=str(path),
            line=line,
            expected=example,
        )
    return rec


def _str(rec: Mapping[str, Any], key: str, path: Path, line: int, *, optional: bool = False) -> Any:
    value = rec.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise DataError(
            "missing" if value is None else f"got {value!r:.60}",
            file=str(path),
            line=line,
            field=key,
            expected="a non-empty string",
        )
    return value


def _check_template(t: Any, path: Path, line: int, fld: str) -> str:
    # LAMA files mark the subject [X] and the object [Y] (the convention models.SLOT follows)
    if not isinstance(t, str) or t.count("[Y]") != 1 or "[X]" not in t:
        raise DataError(
            f"got {shorten(repr(t), 80)}",
            file=str(path),
            line=line,
            field=fld,
            expected="a template string with the subject slot [X] and exactly one [Y]",
        )
    if len(t) > MAX_TEMPLATE_CHARS:
        raise DataError(
            f"a template of {len(t):,} characters",
            file=str(path),
            line=line,
            field=fld,
            expected=f"at most {MAX_TEMPLATE_CHARS:,} characters",
        )
    return t


def _weights(value: Any, n: int, path: Path, line: int) -> tuple[float, ...] | None:
    if value is None:
        return None
    ok = isinstance(value, list) and len(value) == n
    ok = ok and all(
        isinstance(w, int | float) and not isinstance(w, bool) and math.isfinite(w) and w >= 0
        for w in value
    )
    if not ok or sum(value) <= 0:
        raise DataError(
            f"got {value!r:.80}",
            file=str(path),
            line=line,
            field="weights",
            expected=f"a list of {n} non-negative numbers (one per template), not all 0",
        )
    return tuple(float(w) for w in value)


def check_names(value: Any, path: Path, line: int, fld: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(a, str) and a.strip() for a in value):
        raise DataError(
            f"got {value!r:.80}",
            file=str(path),
            line=line,
            field=fld,
            expected="a list of non-empty strings",
        )
    return tuple(value)


# -- relations ---------------------------------------------------------------------------------


def _read_relations(path: Path, fact_files: Path | None = None) -> tuple[list[Relation], list[str]]:
    """Relations in file order. With ``fact_files`` (a folder), relations without a fact file
    there are skipped (noted) before their templates are checked."""
    example = '{"relation": "P19", "templates": ["[X] was born in [Y] ."]}'
    out: list[Relation] = []
    notes: list[str] = []
    seen: dict[str, int] = {}
    for line, raw in read_jsonl(path):
        rec = check_object(raw, path, line, example)
        rid = _str(rec, "relation", path, line)
        if rid in seen:
            raise DataError(
                f"relation {shorten(repr(rid))} repeats (first on line {seen[rid]})",
                file=str(path),
                line=line,
                field="relation",
                expected="each relation once",
            )
        seen[rid] = line
        if fact_files is not None and not _plain_name(rid):
            raise DataError(
                f"got {shorten(repr(rid))}",
                file=str(path),
                line=line,
                field="relation",
                expected="a relation id that names its fact file (no / or \\, not . or ..)",
            )
        if fact_files is not None and not os.path.isfile(fact_files / f"{rid}.jsonl"):
            notes.append(f"relation {rid}: no fact file {fact_files.name}/{rid}.jsonl; skipped")
            continue
        if "templates" in rec:
            raw_t = rec["templates"]
            if not isinstance(raw_t, list) or not raw_t:
                raise DataError(
                    f"got {raw_t!r:.60}",
                    file=str(path),
                    line=line,
                    field="templates",
                    expected="a non-empty list of template strings",
                )
            templates = [
                _check_template(t, path, line, f"templates[{k}]") for k, t in enumerate(raw_t)
            ]
        elif "template" in rec:
            templates = [_check_template(rec["template"], path, line, "template")]
        else:
            raise DataError(
                "no templates",
                file=str(path),
                line=line,
                field="templates",
                expected="'templates' (a list) or 'template' (a string)",
            )
        weights = _weights(rec.get("weights"), len(templates), path, line)
        templates, weights = _dedupe_templates(templates, weights)
        label = rec.get("label") if isinstance(rec.get("label"), str) else None
        out.append(Relation(rid, tuple(templates), weights, label, where=f"{path}:{line}"))
    if not out:
        raise DataError("no relations", file=str(path), expected=f"lines such as {example}")
    return out, notes


def _plain_name(name: str) -> bool:
    """Whether ``name`` can name a file inside a folder (and nothing outside it)."""
    return name not in (".", "..") and not any(c in name for c in "/\\\x00")


def _dedupe_templates(
    templates: Sequence[str], weights: Sequence[float] | None
) -> tuple[list[str], tuple[float, ...] | None]:
    keep = [i for i, t in enumerate(templates) if t not in templates[:i]]
    w = None if weights is None else tuple(weights[i] for i in keep)
    return [templates[i] for i in keep], w


# -- facts -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FactKeys:
    """The keys of one fact-file layout; the rest of the reading is the same for all."""

    subject: str
    object: str
    aliases: str
    subject_uri: str
    object_uri: str
    example: str


_GENERIC_FACT = _FactKeys(
    "subject",
    "object",
    "subject_aliases",
    "subject_uri",
    "object_uri",
    example='{"relation": "P19", "subject": "Dante", "object": "Florence"}',
)
_TREX_FACT = _FactKeys(
    "sub_label",
    "obj_label",
    "sub_aliases",
    "sub_uri",
    "obj_uri",
    example='{"sub_label": "Dante", "obj_label": "Florence", "sub_uri": "Q1067"}',
)


def _read_facts(path: Path, keys: _FactKeys, relation: str | None = None) -> list[Fact]:
    """The facts of ``path`` in the layout of ``keys``; ``relation``: the relation of every
    fact (a T-REx file holds one), else each line's ``relation``."""
    facts = []
    for line, raw in read_jsonl(path):
        rec = check_object(raw, path, line, keys.example)
        facts.append(
            Fact(
                relation=_str(rec, "relation", path, line) if relation is None else relation,
                subject=_str(rec, keys.subject, path, line),
                object=_str(rec, keys.object, path, line),
                aliases=check_names(rec.get(keys.aliases), path, line, keys.aliases),
                subject_uri=_str(rec, keys.subject_uri, path, line, optional=True),
                object_uri=_str(rec, keys.object_uri, path, line, optional=True),
                where=f"{path}:{line}",
            )
        )
    return facts


def _fact_folder(root: Path, names: Sequence[str]) -> Path | None:
    for name in names:
        if (root / name).is_dir():
            return root / name
    return None


# -- layouts -----------------------------------------------------------------------------------


def detect_layout(root: Path) -> Layout:
    if (root / "relations.jsonl").is_file() and (root / "facts.jsonl").is_file():
        return "generic"
    if (root / "prompt").is_dir():
        return "lpaqa"
    if (root / "relations.jsonl").is_file() and _fact_folder(root, _FACT_FOLDERS) is not None:
        return "lama"
    found = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    listed = shorten(", ".join(found[:12]), 300) or "nothing"
    raise DataError(
        f"no known probe layout (found: {listed})",
        file=str(root),
        expected=(
            "relations.jsonl + facts.jsonl (generic), relations.jsonl + TREx/ (LAMA) "
            "or prompt/<set>/ + TREx_train/ (LPAQA)"
        ),
    )


def load_generic(root: Path) -> tuple[list[Relation], list[Fact], list[str]]:
    relations, notes = _read_relations(root / "relations.jsonl")
    return relations, _read_facts(root / "facts.jsonl", _GENERIC_FACT), notes


def load_lama(root: Path) -> tuple[list[Relation], list[Fact], list[str]]:
    folder = _fact_folder(root, _FACT_FOLDERS)
    assert folder is not None
    relations, notes = _read_relations(root / "relations.jsonl", folder)
    facts: list[Fact] = []
    for rel in relations:
        facts.extend(_read_facts(folder / f"{rel.id}.jsonl", _TREX_FACT, rel.id))
    return relations, facts, notes


def _lpaqa_templates(path: Path) -> tuple[list[str], tuple[float, ...] | None]:
    templates: list[str] = []
    weights: list[float] = []
    if path.suffix == ".txt":
        lines = read_list_file(path, "a template file (one template per line)").splitlines()
        for line, text in enumerate(lines, start=1):
            if text.strip():
                templates.append(_check_template(text.strip(), path, line, "template"))
        w: tuple[float, ...] | None = None
    else:
        for line, raw in read_jsonl(path):
            rec = check_object(
                raw, path, line, '{"template": "[X] was born in [Y] .", "weight": 0.1}'
            )
            templates.append(_check_template(rec.get("template"), path, line, "template"))
            value = rec.get("weight")
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if value is not None and not (ok and math.isfinite(value) and value >= 0):
                raise DataError(
                    f"got {value!r:.40}",
                    file=str(path),
                    line=line,
                    field="weight",
                    expected="a non-negative number",
                )
            weights.append(float(value) if value is not None else math.nan)
        w = None if any(math.isnan(x) for x in weights) else tuple(weights)
        if w is not None and sum(w) <= 0:
            w = None
    if not templates:
        raise DataError("no templates", file=str(path), expected="at least one template")
    t, w = _dedupe_templates(templates, w)
    return t, w


def _template_file(folder: Path, relation: str) -> Path | None:
    for suffix in (".txt", ".jsonl"):
        if (folder / f"{relation}{suffix}").is_file():
            return folder / f"{relation}{suffix}"
    return None


def load_lpaqa(root: Path, prompt_set: str) -> tuple[list[Relation], list[Fact], list[str]]:
    folder = root / "prompt" / prompt_set
    if not folder.is_dir():
        have = sorted(p.name for p in (root / "prompt").iterdir() if p.is_dir())
        raise ConfigError(
            f"{root}: prompt set {prompt_set!r} not found under prompt/ "
            f"(available: {', '.join(have) or 'none'})"
        )
    facts_dir = _fact_folder(root, _LPAQA_FACT_FOLDERS)
    if facts_dir is None:
        raise DataError(
            "no fact folder", file=str(root), expected="TREx_train/<relation>.jsonl (or TREx/)"
        )
    manual = root / "prompt" / "manual_paraphrase"
    relations: list[Relation] = []
    facts: list[Fact] = []
    notes: list[str] = []
    files = [p for p in folder.iterdir() if p.suffix in (".txt", ".jsonl")]
    for p in files:  # a FIFO or a folder named P19.txt is an error, not skipped
        input_file(p, "a template file (one template per line, or JSONL)")
    ids = sorted({p.stem for p in files}, key=_relation_order)
    for rid in ids:
        tpath = _template_file(folder, rid)
        assert tpath is not None  # checked above
        templates, weights = _lpaqa_templates(tpath)
        added = False
        mpath = _template_file(manual, rid) if manual.is_dir() else None
        if prompt_set != "manual_paraphrase" and mpath is not None:
            original = _lpaqa_templates(mpath)[0][0]
            if original in templates:
                k = templates.index(original)
                templates.insert(0, templates.pop(k))
                if weights is not None:
                    wl = list(weights)
                    wl.insert(0, wl.pop(k))
                    weights = tuple(wl)
            else:
                templates.insert(0, original)
                weights = None if weights is None else (0.0, *weights)
                added = True
        fpath = facts_dir / f"{rid}.jsonl"
        if not fpath.is_file():
            notes.append(f"relation {rid}: no fact file {fpath.name}; skipped")
            continue
        relations.append(Relation(rid, tuple(templates), weights, None, added, where=str(tpath)))
        facts.extend(_read_facts(fpath, _TREX_FACT, rid))
    return relations, facts, notes


def _relation_order(rid: str) -> tuple[int, str]:
    digits = rid[1:] if rid[:1] in "Pp" else rid
    return (int(digits), rid) if digits.isdigit() else (1 << 30, rid)


def dedupe_facts(
    facts: Sequence[Fact], relations: Sequence[Relation]
) -> tuple[list[Fact], list[str]]:
    known = {r.id for r in relations}
    out: list[Fact] = []
    seen: set[tuple[str, str, str]] = set()
    dupes = 0
    unknown: dict[str, int] = {}
    for f in facts:
        if f.relation not in known:
            unknown[f.relation] = unknown.get(f.relation, 0) + 1
            continue
        key = (f.relation, f.subject_key, f.object_key)
        if key in seen:
            dupes += 1
            continue
        seen.add(key)
        out.append(f)
    notes = []
    if dupes:
        notes.append(f"{dupes} repeated (relation, subject, object) facts dropped")
    for rid, n in sorted(unknown.items()):
        notes.append(f"{n} facts of relation {shorten(repr(rid))} dropped: it has no templates")
    return out, notes
