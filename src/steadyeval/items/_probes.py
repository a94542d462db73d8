"""Factual probes for runs and studies: :func:`load_probes` (relations and facts in the
generic, LAMA or LPAQA layout), subject aliases, vocabularies, and :func:`load_probe_items`
(the probes as cloze items)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._errors import ConfigError, DataError
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
)

__all__ = ["fact_metadata", "load_aliases", "load_probe_items", "load_probes", "load_vocab"]


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
    if not root.is_dir():
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
    """Read subject aliases: JSONL lines ``{"subject": "United States", "aliases": [...]}``
    (matched against a fact's subject label) or ``{"uri": "Q30", "aliases": [...]}``
    (matched against its subject URI). Returns ``{key: aliases}``; URI keys win."""
    p = Path(path)
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
                f"{key!r} is listed twice",
                file=str(p),
                line=line,
                field="subject",
                expected="one line per subject",
            )
        out[key] = names
    return out


def load_vocab(path: str | Path) -> frozenset[str]:
    """A candidate vocabulary: one word per line (e.g. LAMA's ``common_vocab_cased.txt``)."""
    p = Path(path)
    try:
        words = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read ({exc})", file=str(p)) from None
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
