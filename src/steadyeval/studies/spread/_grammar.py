"""A grammar of meaning-preserving prompt formats (after FormatSpread, Sclar et al., 2024).

A format is one choice per dimension: field names (descriptors), their casing, the separator
between a field's name and its text, the spacing between fields, the option enumeration
(A / a / 1 / i / I), the wrapper around an option label and the joiner between options.
Every format becomes an ordinary :class:`~steadyeval.conditions.Condition` (a
:class:`Template` plus a :class:`Format`), so its answers land in the results table like any
other condition's. Formats are drawn deterministically from a seed; the first is the
default (choice 0 in every dimension).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ...conditions import Condition, Format, Template

__all__ = ["COVARIATE_COLUMNS", "DIMENSIONS", "GrammarFormat", "generate_formats", "roman"]


def roman(n: int) -> str:
    """``n`` (1-39) in upper-case roman numerals."""
    out = ""
    for value, sym in ((10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while n >= value:
            out, n = out + sym, n - value
    return out


_ENUMS: dict[str, tuple[str, ...]] = {
    "A": tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    "a": tuple("abcdefghijklmnopqrstuvwxyz"),
    "1": tuple(str(i) for i in range(1, 27)),
    "i": tuple(roman(i).lower() for i in range(1, 27)),
    "I": tuple(roman(i) for i in range(1, 27)),
}

#: The grammar's dimensions and their choices (choice 0 is the default format's).
DIMENSIONS: Mapping[str, tuple[str, ...]] = {
    "names": (
        "Question|Context|Options|Answer",
        "Q|Passage|Choices|A",
        "Input|Text|Options|Output",
    ),
    "casing": ("title", "upper", "lower"),
    "separator": (": ", " - ", ":: ", ":\n", " = ", " "),
    "spacing": ("\n", "\n\n", " ", " || ", "; "),
    "enumeration": tuple(_ENUMS),
    "wrapper": ("{label}. ", "({label}) ", "[{label}] ", "{label}) ", "{label}: "),
    "joiner": ("\n", " ", "; ", ", "),
}
#: Columns of :meth:`GrammarFormat.covariates`: one per choice of each dimension but its
#: first (the default's).
COVARIATE_COLUMNS = sum(len(options) - 1 for options in DIMENSIONS.values())

_CASE = {"title": str.title, "upper": str.upper, "lower": str.lower}


@dataclass(frozen=True)
class GrammarFormat:
    """One format of the grammar: a choice index per dimension (in :data:`DIMENSIONS` order)."""

    name: str
    choices: tuple[int, ...]

    def choice(self, dim: str) -> str:
        return DIMENSIONS[dim][self.choices[list(DIMENSIONS).index(dim)]]

    def template(self) -> Template:
        """The prompt template: context, question, options and the answer cue as fields."""
        case = _CASE[self.choice("casing")]
        q, c, o, a = (case(x) for x in self.choice("names").split("|"))
        sep, space = self.choice("separator"), self.choice("spacing")
        body = (
            f"{{% if context %}}{c}{sep}{{{{ context }}}}{space}{{% endif %}}"
            f"{q}{sep}{{{{ question }}}}"
            f"{{% if options %}}{space}{o}{sep}{{{{ options_block }}}}{{% endif %}}"
            f"{space}{a}{sep.rstrip()}"
        )
        return Template(name=self.name, body=body)

    def format(self) -> Format:
        wrapper = self.choice("wrapper")
        return Format(
            name=self.name,
            labels=_ENUMS[self.choice("enumeration")],
            option_style=wrapper + "{text}",
            joiner=self.choice("joiner"),
        )

    def condition(self, scoring: str, **settings: object) -> Condition:
        return Condition(
            name=self.name,
            template=self.template(),
            format=self.format(),
            scoring=scoring,
            **settings,  # type: ignore[arg-type]
        )

    def covariates(self) -> list[float]:
        """One-hot of every dimension's choice except choice 0 (the default's)."""
        out: list[float] = []
        for d, opts in enumerate(DIMENSIONS.values()):
            out += [1.0 if self.choices[d] == k else 0.0 for k in range(1, len(opts))]
        return out

    def describe(self) -> dict[str, str]:
        return {dim: self.choice(dim) for dim in DIMENSIONS}


def generate_formats(n: int, seed: int) -> list[GrammarFormat]:
    """``n`` distinct formats: the default first, the rest drawn uniformly from the grammar.

    Every format differs from every other in at least one dimension; because each dimension
    changes the rendered text (field names, casing, separators, spacing, labels, wrappers,
    joiners), distinct choices render distinct prompts for items with a question and
    options (checked in the tests for MMLU- and SQuAD-like items).
    """
    sizes = [len(v) for v in DIMENSIONS.values()]
    total = int(np.prod(sizes))
    if not 1 <= n <= total:
        raise ValueError(f"the grammar has {total} formats; asked for {n}")
    rng = np.random.default_rng(seed)
    seen: dict[tuple[int, ...], None] = {tuple(0 for _ in sizes): None}
    while len(seen) < n:
        seen.setdefault(tuple(int(rng.integers(0, k)) for k in sizes), None)
    return [GrammarFormat(f"fmt-{i:03d}", c) for i, c in enumerate(seen)]


def covariate_matrix(formats: Sequence[GrammarFormat]) -> list[list[float]]:
    return [f.covariates() for f in formats]
