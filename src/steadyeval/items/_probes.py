"""Factual probes for runs and studies: :func:`load_probes` (relations and facts in the
generic, LAMA or LPAQA layout), subject aliases, vocabularies, and :func:`load_probe_items`
(the probes as cloze items)."""

from __future__ import annotations

import bz2
import gzip
import json
import os
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from .._errors import ConfigError, DataError
from .._files import loads_json
from ._item import Item
from ._jsonl import read_jsonl
from ._probe_files import (
    PROMPT_SETS,
    Fact,
    ProbeData,
    check_names,
    check_object,
    dedupe_facts,
    detect_layout,
    load_generic,
    load_lama,
    load_lpaqa,
    read_list_file,
)
from ._text import shorten, value_problem

__all__ = [
    "fact_metadata",
    "load_aliases",
    "load_probe_items",
    "load_probes",
    "load_vocab",
    "wikidata_aliases",
]


def fact_metadata(relation: str, fact: Fact) -> dict[str, Any]:
    """A probe item's metadata: ``relation``, ``subject``, ``object`` and the URIs when known."""
    meta: dict[str, Any] = {"relation": relation, "subject": fact.subject, "object": fact.object}
    if fact.subject_uri:
        meta["subject_uri"] = fact.subject_uri
    if fact.object_uri:
        meta["object_uri"] = fact.object_uri
    return meta


def load_probes(source: str | Path, *, prompt_set: str | None = None) -> ProbeData:
    """Load relations (templates) and facts from a directory in one of the three layouts.

    Parameters
    ----------
    source : str or Path
        The directory (layout detected from its files).
    prompt_set : str, optional
        LPAQA layout only: ``manual_paraphrase`` (default), ``paraphrase`` or ``mine``.

    Returns
    -------
    ProbeData
        Relations in file order (LPAQA: by number), facts in file order with exact repeats
        dropped (noted), facts of relations without templates dropped (noted).

    Raises
    ------
    DataError
        A file or line is malformed (the message names the file, line and field), or the
        directory matches no layout.
    ConfigError
        ``prompt_set`` is unknown, or given for a layout that has no prompt sets.
    """
    root = Path(source)
    if not os.path.isdir(root):  # never raises (a name too long is not a folder)
        raise DataError("not a directory", file=str(root), expected="a probe data directory")
    layout = detect_layout(root)
    if layout != "lpaqa" and prompt_set is not None:
        raise ConfigError(
            f"--prompt-set {prompt_set!r} applies to the LPAQA layout only; {root} is in the "
            f"{layout} layout"
        )
    if layout == "generic":
        relations, facts, notes = load_generic(root)
    elif layout == "lama":
        relations, facts, notes = load_lama(root)
    else:
        prompt_set = prompt_set or "manual_paraphrase"
        if prompt_set not in PROMPT_SETS:
            raise ConfigError(
                f"unknown prompt set {prompt_set!r}; choose one of {', '.join(PROMPT_SETS)}"
            )
        relations, facts, notes = load_lpaqa(root, prompt_set)
    facts, more = dedupe_facts(facts, relations)
    notes.extend(more)
    with_facts = {f.relation for f in facts}
    for r in relations:
        if r.id not in with_facts:
            notes.append(f"relation {r.id}: no facts")
    relations = [r for r in relations if r.id in with_facts]
    if not facts:
        raise DataError("no facts for any relation", file=str(root), expected="facts to probe")
    return ProbeData(str(root), layout, prompt_set, tuple(relations), tuple(facts), tuple(notes))


# -- aliases and vocabularies ------------------------------------------------------------------


def load_aliases(path: str | Path) -> dict[str, tuple[str, ...]]:
    """Read subject aliases, in one of two forms (told apart by the file's content).

    * A JSON map ``{"Q30": ["United States", "USA", "America"], ...}``: one object whose
      values are lists of names, keyed by subject URI or label (what
      :func:`wikidata_aliases` writes).
    * JSONL lines ``{"subject": "United States", "aliases": [...]}`` (matched against a
      fact's subject label) or ``{"uri": "Q30", "aliases": [...]}`` (matched against its
      subject URI).

    Returns ``{key: names}``. A fact takes the names under its subject URI, else under its
    label; the study puts the fact's own label first and drops repeats.
    """
    p = Path(path)
    as_map = _alias_map(p)
    if as_map is not None:
        return as_map
    out: dict[str, tuple[str, ...]] = {}
    for line, raw in read_jsonl(p):
        rec = check_object(
            raw, p, line, '{"subject": "United States", "aliases": ["USA", "America"]}'
        )
        key = rec.get("uri", rec.get("subject"))
        if not isinstance(key, str) or not key.strip():
            raise DataError(
                "no subject",
                file=str(p),
                line=line,
                field="subject",
                expected="'subject' (a label) or 'uri' (a subject URI)",
            )
        names = check_names(rec.get("aliases"), p, line, "aliases")
        if not names:
            raise DataError(
                "no aliases",
                file=str(p),
                line=line,
                field="aliases",
                expected="a non-empty list of strings",
            )
        if key in out:
            raise DataError(
                f"{shorten(repr(key))} is listed twice",
                file=str(p),
                line=line,
                field="subject",
                expected="one line per subject",
            )
        out[key] = names
    return out


_JSONL_KEYS = frozenset({"subject", "uri", "aliases"})


def _alias_map(p: Path) -> dict[str, tuple[str, ...]] | None:
    """The file as a ``{key: [names]}`` map, or None when it is not one (JSONL lines)."""
    text = read_list_file(p, "an alias file (a JSON map or JSONL lines)")
    try:
        whole = loads_json(text, str(p))
    except DataError:
        return None  # several JSON lines (the JSONL reader names any error in them)
    if not isinstance(whole, dict) or _JSONL_KEYS & set(whole):
        return None  # one JSONL record (or not an object: read_jsonl names the error)
    problem = value_problem(whole)  # a lone surrogate in a name or key
    if problem is not None:
        raise DataError(
            problem.message, file=str(p), field=problem.field, expected=problem.expected
        )
    out: dict[str, tuple[str, ...]] = {}
    for key, value in whole.items():
        names = check_names(value, p, 1, shorten(key, 40))
        if not key.strip() or not names:
            raise DataError(
                "an empty key or list",
                file=str(p),
                field=shorten(key, 40),
                expected='{"Q30": ["United States", "USA"]} (a URI or label: non-empty names)',
            )
        out[key] = names
    return out


def _open_dump(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    if path.suffix == ".bz2":
        return bz2.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def _dump_entities(lines: Iterable[str], where: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, line in enumerate(lines, 1):
        text = line.strip().rstrip(",")
        if text in ("", "[", "]"):
            continue  # the dump is one JSON array, an entity per line
        try:
            entity = json.loads(text)
        except ValueError as exc:
            raise DataError(
                f"invalid JSON ({exc})", file=where, line=lineno, expected="a Wikidata entity"
            ) from None
        if not isinstance(entity, dict) or not isinstance(entity.get("id"), str):
            raise DataError(
                "not an entity", file=where, line=lineno, field="id", expected='{"id": "Q30", ...}'
            )
        yield lineno, entity


def _entity_names(entity: dict[str, Any], language: str, where: str, line: int) -> list[str]:
    names: list[str] = []
    label = (entity.get("labels") or {}).get(language)
    aliases = (entity.get("aliases") or {}).get(language) or []
    for fld, value in [("labels", label), *(("aliases", a) for a in aliases)]:
        if value is None:
            continue
        text = value.get("value") if isinstance(value, dict) else None
        if not isinstance(text, str):
            raise DataError(
                "not a monolingual text",
                file=where,
                line=line,
                field=f"{fld}.{language}",
                expected='{"language": "en", "value": "..."}',
            )
        if text.strip() and text not in names:
            names.append(text)
    return names


def wikidata_aliases(
    source: str | Path | Iterable[str],
    *,
    language: str = "en",
    keep: Collection[str] | None = None,
) -> dict[str, list[str]]:
    """Build a ``{uri: [names]}`` alias map from Wikidata JSON dump lines.

    Parameters
    ----------
    source : path or iterable of str
        A Wikidata JSON dump (``latest-all.json``, also ``.gz`` / ``.bz2``: one JSON array,
        one entity per line, each line but the last ending in a comma) or its lines.
    language : str
        Which language's label and aliases to take (``labels[language].value`` first, then
        ``aliases[language][*].value`` in dump order; repeats dropped).
    keep : collection of str, optional
        Only these entity ids (e.g. the probe data's subject URIs); default all.

    Returns
    -------
    dict
        ``{entity id: [label, alias, ...]}`` for every kept entity with at least one name in
        ``language``. Write it with ``json.dump`` and pass the file to ``--aliases``.

    Raises
    ------
    DataError
        A line that is not JSON, not an entity, or whose names are not monolingual texts
        (the message names the line).
    """
    where = str(source) if isinstance(source, str | Path) else "<lines>"
    wanted = None if keep is None else set(keep)
    out: dict[str, list[str]] = {}
    handle = _open_dump(Path(source)) if isinstance(source, str | Path) else None
    try:
        lines = handle if handle is not None else source
        assert not isinstance(lines, str | Path)
        for lineno, entity in _dump_entities(lines, where):
            if wanted is not None and entity["id"] not in wanted:
                continue
            names = _entity_names(entity, language, where, lineno)
            if names:
                out[entity["id"]] = names
    finally:
        if handle is not None:
            handle.close()
    return out


def load_vocab(path: str | Path) -> frozenset[str]:
    """A candidate vocabulary: one word per line (e.g. LAMA's ``common_vocab_cased.txt``)."""
    p = Path(path)
    words = read_list_file(p, "a word list (one word per line)").splitlines()
    vocab = frozenset(w.strip() for w in words if w.strip())
    if not vocab:
        raise DataError("empty vocabulary", file=str(p), expected="one word per line")
    return vocab


def load_probe_items(source: str | Path, *, prompt_set: str | None = None) -> list[Item]:
    """Factual probes (see :func:`load_probes`) as cloze items: one per fact, its question the
    relation's original template (``[X]`` for the subject, ``[Y]`` for the answer), its
    aliases the subject's names (the label first), its answers every object the data gives
    for that subject and relation. Ask them with the ``cloze`` template and ``top-k`` scoring
    (P@1). Metadata: ``relation``, ``subject``, ``object`` (and the URIs when known)."""
    data = load_probes(source, prompt_set=prompt_set)
    golds: dict[tuple[str, str], list[str]] = {}
    for f in data.facts:
        objects = golds.setdefault((f.relation, f.subject_key), [])
        if f.object not in objects:
            objects.append(f.object)
    templates = {r.id: r.templates[0] for r in data.relations}
    items = []
    for f in data.facts:
        others = [o for o in golds[(f.relation, f.subject_key)] if o != f.object]
        meta = fact_metadata(f.relation, f)
        items.append(
            Item(
                id=f"{f.relation}/{f.subject_key}/{f.object_key}",
                question=templates[f.relation],
                answers=(f.object, *others),
                aliases=tuple(dict.fromkeys((f.subject, *f.aliases))),
                metadata=meta,
            )
        )
    return items
