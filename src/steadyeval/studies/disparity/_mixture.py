"""The sample-disparity corpora: an overlap pool (sentences stating the probed facts), a
general pool (any text), and γ-mixtures of a fixed size drawn from the two.

**Sizes.** A mixture of ``size`` sentences at γ percent holds ``round_half_up(size · γ / 100)``
overlap sentences and the rest general ones, so every mixture has exactly ``size`` sentences.

**Draws.** Each pool is shuffled once (``numpy.random.default_rng`` seeded from ``seed`` and
the pool's name) and read as that permutation repeated end to end; a mixture takes the first
``n`` sentences of each. Mixtures are therefore nested (the overlap sentences at 20% are
among those at 40%), and a pool smaller than what a mixture needs is repeated as evenly as
possible (each sentence ``⌊n / len⌋`` or ``⌈n / len⌉`` times). The mixture's order is a
seeded shuffle of its sentences (seed, γ).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from ..._errors import ConfigError, DataError
from ..._files import human_bytes, input_file, limit_from_env
from ..._seeds import derive_seed
from ...items import read_lines, shorten
from ._config import MAX_CORPUS_SIZE

__all__ = [
    "MAX_CORPUS_BYTES",
    "MAX_CORPUS_SIZE",
    "MAX_SENTENCE_CHARS",
    "Mixture",
    "build_mixtures",
    "mixture_counts",
    "overlap_sentences",
    "read_corpus",
    "split_sentences",
]

OverlapSource = Literal["other-templates", "probe-template"]

#: The largest corpus file read (its size is checked before it is opened);
#: ``STEADYEVAL_MAX_CORPUS_MB`` raises it.
MAX_CORPUS_BYTES = 128 * 1024 * 1024
#: The longest sentence (or paragraph) a corpus line may hold, in characters; training
#: truncates to ``max_length`` tokens anyway.
MAX_SENTENCE_CHARS = 10_000

# A sentence ends at ., ! or ? (optionally closed by a quote or bracket) followed by space.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9])")


@dataclass(frozen=True)
class Mixture:
    """One pre-training corpus: ``gamma`` percent overlap, ``size`` sentences in all.

    Attributes
    ----------
    gamma : int
        Share of overlap sentences, in percent (0–100).
    sentences : tuple of str
        The corpus, in training order.
    n_overlap, n_general : int
        How many sentences come from each pool (with repeats when a pool is small).
    """

    gamma: int
    sentences: tuple[str, ...]
    n_overlap: int
    n_general: int

    @property
    def size(self) -> int:
        return len(self.sentences)


def mixture_counts(size: int, gamma: int) -> tuple[int, int]:
    """``(n_overlap, n_general)`` of a mixture: ``size · γ / 100`` rounded half up."""
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_CORPUS_SIZE:
        raise ConfigError(
            f"corpus size must be an integer in 1..{MAX_CORPUS_SIZE:,}; got {shorten(repr(size))}"
        )
    if isinstance(gamma, bool) or not isinstance(gamma, int) or not 0 <= gamma <= 100:
        raise ConfigError(
            f"gamma is a percentage, an integer in 0..100; got {shorten(repr(gamma))}"
        )
    n_overlap = (size * gamma * 2 + 100) // 200
    return n_overlap, size - n_overlap


def _take(pool: Sequence[str], n: int, seed: int, name: str) -> list[str]:
    """The first ``n`` sentences of ``pool``'s seeded permutation repeated end to end."""
    if n == 0:
        return []
    perm = np.random.default_rng(derive_seed("pool", name, seed)).permutation(len(pool))
    reps = -(-n // len(pool))
    return [pool[int(i)] for i in np.tile(perm, reps)[:n]]


def build_mixtures(
    overlap: Sequence[str],
    general: Sequence[str],
    *,
    gammas: Iterable[int],
    size: int,
    seed: int,
) -> list[Mixture]:
    """The γ-mixtures of ``size`` sentences (see the module docstring for the draws).

    Raises
    ------
    ConfigError
        A γ outside 0..100 or repeated, a size outside ``1..MAX_CORPUS_SIZE`` (checked
        before anything is drawn), or an empty pool that a mixture needs (γ > 0 needs
        overlap sentences, γ < 100 general ones).
    """
    gs = list(gammas)
    if not gs:
        raise ConfigError("no gammas: give at least one share, e.g. 0,20,40,60,80,100")
    for g in gs:
        mixture_counts(size, g)
    if len(set(gs)) != len(gs):
        raise ConfigError(f"gammas must be distinct; got {shorten(repr(gs))}")
    out = []
    for g in gs:
        n_o, n_g = mixture_counts(size, g)
        for n, pool, what in ((n_o, overlap, "overlap"), (n_g, general, "general")):
            if n and not pool:
                raise ConfigError(
                    f"gamma {g}% needs {n} {what} sentences but the {what} corpus is empty"
                )
        sentences = _take(overlap, n_o, seed, "overlap") + _take(general, n_g, seed, "general")
        order = np.random.default_rng(derive_seed("order", g, seed)).permutation(len(sentences))
        out.append(Mixture(g, tuple(sentences[int(i)] for i in order), n_o, n_g))
    return out


def _fill(template: str, subject: str, obj: str) -> str:
    return template.replace("[X]", subject).replace("[Y]", obj)


def overlap_sentences(
    templates: Mapping[str, Sequence[str]],
    facts: Iterable[tuple[str, str, str]],
    source: OverlapSource,
) -> tuple[list[str], dict[str, int]]:
    """Sentences stating ``facts`` (``(relation, subject, object)``), each written with its
    relation's ``templates`` (``[X]`` the subject, ``[Y]`` the object).

    ``"other-templates"`` uses every template but the probed one (index 0) — the probe's
    paraphrases, so the overlap states the facts without the probe's wording;
    ``"probe-template"`` uses the probed template itself (the strongest overlap; for tests).
    Returns the sentences (distinct, in fact then template order) and, per relation, how
    many were written.
    """
    if source not in ("other-templates", "probe-template"):
        raise ConfigError(
            f"overlap source must be 'other-templates' or 'probe-template'; got {source!r}"
        )
    sentences: dict[str, None] = {}
    per_relation: dict[str, int] = {}
    for relation, subject, obj in facts:
        if relation not in templates:
            raise ConfigError(f"no templates for relation {shorten(repr(relation))}")
        all_t = templates[relation]
        chosen = all_t[1:] if source == "other-templates" else all_t[:1]
        before = len(sentences)
        for t in chosen:
            sentences.setdefault(_fill(t, subject, obj), None)
        per_relation[relation] = per_relation.get(relation, 0) + len(sentences) - before
    return list(sentences), per_relation


def split_sentences(text: str) -> list[str]:
    """``text`` cut after ``.``, ``!`` or ``?`` followed by whitespace and a capital letter or
    digit (a plain rule: abbreviations such as "Dr. Smith" are cut too)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def read_corpus(path: str | Path, *, split: Literal["line", "sentence"] = "line") -> list[str]:
    """A text file as training sentences: one per non-blank line (``"line"``), or each line
    cut into sentences by :func:`split_sentences` (``"sentence"``).

    The file must be a regular file (a FIFO or a device is refused before it is opened) of
    at most :data:`MAX_CORPUS_BYTES` (``STEADYEVAL_MAX_CORPUS_MB`` raises it), UTF-8, read
    line by line; a sentence longer than :data:`MAX_SENTENCE_CHARS` characters is an error
    naming its line. Every failure is a :class:`DataError` naming the file (and line).
    """
    what = "a UTF-8 text file, one sentence or paragraph per line"
    p = input_file(path, what)
    limit = limit_from_env("STEADYEVAL_MAX_CORPUS_MB", MAX_CORPUS_BYTES)
    size = os.stat(p).st_size
    if size > limit:
        raise DataError(
            f"the corpus is {human_bytes(size)}, over the limit of {human_bytes(limit)} "
            "(STEADYEVAL_MAX_CORPUS_MB raises it)",
            file=str(p),
        )
    out: list[str] = []
    read = 0
    for lineno, line in read_lines(p, what):
        read += len(line)
        if read > limit:  # the file grew while it was read (characters <= bytes)
            raise DataError("the corpus grew while it was read", file=str(p), line=lineno)
        if not line.strip():
            continue
        for s in split_sentences(line) if split == "sentence" else [line.strip()]:
            if len(s) > MAX_SENTENCE_CHARS:
                raise DataError(
                    f"a sentence of {len(s):,} characters, over the limit of "
                    f"{MAX_SENTENCE_CHARS:,}",
                    file=str(p),
                    line=lineno,
                    expected="one sentence or paragraph per line (general_split: sentence "
                    "cuts lines into sentences)",
                )
            out.append(s)
    if not out:
        raise DataError("no text", file=str(p), expected="one sentence or paragraph per line")
    return out
