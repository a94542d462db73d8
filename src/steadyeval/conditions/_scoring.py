"""Scoring modes' protocol and registry: how a condition's answers are asked for and turned
into scored trials.

A mode is one object in one registry. It declares its name once, checks the conditions that
use it, builds the requests a trial needs and scores the responses. A :class:`Condition`
checks its mode when built, ``expand`` asks it how a shot shows its answer, and the planner,
the runner and the configs look it up here; adding a mode is one class plus
:func:`register_scoring`. The protocol lives with the conditions that name the modes; the
modes themselves live above, in :mod:`steadyeval.scoring` (public home of these names
too), and register when it is imported. A lookup that misses imports it by name first, as
plug-ins are loaded, so a condition can name a built-in mode before anything imported it.
"""

from __future__ import annotations

import importlib
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Literal

from .._errors import ConfigError, SteadyevalDeprecationWarning
from .._lazy import load_plugins
from ..requests import Request, Response

if TYPE_CHECKING:
    from ..items import Item
    from ._condition import Condition
    from ._expand import Trial

__all__ = [
    "ParsedKind",
    "ScoredTrial",
    "ScoringMode",
    "canonical_scoring",
    "get_scoring",
    "register_scoring",
    "renamed_scoring",
    "requests_for",
    "score_trial",
    "scoring_names",
]

#: ``options``: several options chosen (an imported several-answer scorer's "A, C");
#: ``error``: the sample raised an error, so there is no answer (imported logs).
ParsedKind = Literal[
    "option", "options", "refusal", "unmatched", "free", "token", "logprob", "error"
]


@dataclass(frozen=True)
class ScoredTrial:
    """Everything scoring decides about one (trial, model, sample)."""

    output: str
    parsed: str | None
    parsed_kind: ParsedKind
    truncated: bool
    n_input_tokens: int
    parsed_option: int | None = None  # index into the item's original options
    correct: bool | None = None
    refused: bool = False
    em: float | None = None
    f1: float | None = None
    option_logprobs: list[float] | None = None
    option_logprobs_per_token: list[float] | None = None
    option_logprobs_per_char: list[float] | None = None
    confidence: float | None = None
    sequence_logprob: float | None = None
    approximate: bool = False
    #: A generated answer's reasoning trace (set aside before the answer was extracted).
    reasoning: str | None = None
    #: The extractor (and its rule) that found the answer, e.g. ``strict:####``.
    extractor: str | None = None
    #: Tokens the model generated (the trace included), where the backend says.
    n_output_tokens: int | None = None
    #: The values of the mode's own metrics (:attr:`ScoringMode.metrics`), by name.
    metrics: Mapping[str, float | None] = field(default_factory=lambda: MappingProxyType({}))


class ScoringMode(ABC):
    """One way of asking for and scoring answers.

    Subclasses set :attr:`name` and implement :meth:`requests` and :meth:`score`; the other
    members have defaults.
    """

    #: The name conditions, configs, the CLI and the ``scoring`` column use.
    name: ClassVar[str]
    #: Whether the mode needs a multiple-choice format (options to score).
    needs_options: ClassVar[bool] = False
    #: Whether the mode reads its answer out of generated text (``Condition.extract``).
    extracts: ClassVar[bool] = False
    #: How a multiple-choice shot shows its answer: the option's label or its text.
    shot_answer: ClassVar[Literal["label", "text"]] = "label"
    #: One line for ``--help`` and the docs.
    doc: ClassVar[str] = ""
    #: The metrics the mode computes beyond the core columns: name -> what it measures. Each
    #: becomes a float column of the results table (declared, with this text, in its schema)
    #: and a mean per model and condition in ``summary.json``; :meth:`score` sets their values
    #: in :attr:`ScoredTrial.metrics`. Adding a metric is this line and that value.
    metrics: ClassVar[Mapping[str, str]] = MappingProxyType({})

    def check(self, condition: Condition) -> None:
        """Raise :class:`ConfigError` when ``condition`` cannot use this mode."""
        if self.needs_options and condition.format.kind != "mc":
            raise ConfigError(
                f"condition {condition.name!r}: scoring {self.name!r} needs a "
                "multiple-choice format"
            )
        if condition.extract != "auto" and not self.extracts:
            raise ConfigError(
                f"condition {condition.name!r}: extract {condition.extract!r} applies to "
                f"generated answers; scoring {self.name!r} reads no text (leave extract "
                "unset, or use scoring: generate)"
            )

    @abstractmethod
    def requests(self, trial: Trial) -> tuple[Request, ...]:
        """The requests ``trial`` needs, in a fixed order."""

    def samples(self, n_requests: int) -> list[range]:
        """Which of a trial's requests make each result row (default: one row from all)."""
        return [range(n_requests)]

    def skip_reason(self, item: Item, condition: Condition) -> str | None:
        """Why the mode cannot score ``item`` (the pair is skipped and counted under this
        reason), or None (the default: every item the condition applies to)."""
        return None

    def samples_for(self, trial: Trial, n_requests: int) -> list[range]:
        """:meth:`samples` for one trial (a mode whose rows depend on the item overrides
        this; the default asks :meth:`samples`)."""
        return self.samples(n_requests)

    @abstractmethod
    def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
        """Score one row's responses (in :meth:`requests` order)."""


_REGISTRY: dict[str, ScoringMode] = {}
#: The package whose import registers the built-in modes.
_BUILTIN_MODES = "steadyeval.scoring"
#: Old names still accepted, with a deprecation warning.
_ALIASES: dict[str, str] = {
    "logprob": "option-logprob",  # the formats study's old name
    "letter": "letter-logprob",  # the knowledge study's old short names
    "option": "option-logprob",
}


def register_scoring(mode: ScoringMode, *, replace: bool = False) -> ScoringMode:
    """Add ``mode`` under ``mode.name``; returns it (usable at import time). The built-in
    modes are registered first, so ``replace=True`` overrides one of them for good."""
    if not isinstance(mode, ScoringMode):
        raise TypeError(f"expected a ScoringMode instance, got {type(mode).__name__}")
    name = getattr(mode, "name", None)
    if not isinstance(name, str) or not name.strip():
        raise ValueError(
            f"a scoring mode's name must be a non-empty string; {type(mode).__name__}.name "
            f"is {name!r}"
        )
    if name in _ALIASES:
        raise ValueError(
            f"scoring {name!r} is a deprecated name of {_ALIASES[name]!r} and cannot be "
            "registered; choose another name"
        )
    metrics = getattr(mode, "metrics", None)
    if not isinstance(metrics, Mapping) or not all(
        isinstance(k, str) and k.isidentifier() and isinstance(v, str) for k, v in metrics.items()
    ):
        raise ValueError(
            f"scoring {name!r}: metrics must map identifier names (e.g. 'output_words') to "
            f"what each measures (text); got {metrics!r}"[:300]
        )
    # the built-ins first (a no-op while steadyeval.scoring itself is being imported), so a
    # user's mode registered before anything imported them is not undone by them
    importlib.import_module(_BUILTIN_MODES)
    if mode.name in _REGISTRY and not replace and _REGISTRY[mode.name] is not mode:
        raise ValueError(f"scoring {mode.name!r} is already registered; pass replace=True")
    _REGISTRY[mode.name] = mode
    return mode


def _load_modes() -> None:
    """Register the built-in modes, then the plug-ins' (each import happens once)."""
    importlib.import_module(_BUILTIN_MODES)
    load_plugins()


def scoring_names() -> tuple[str, ...]:
    """The registered modes' names, in registration order (plug-ins' last)."""
    _load_modes()
    return tuple(_REGISTRY)


def renamed_scoring(name: str) -> str:
    """The current name of a deprecated alias (with a warning), else ``name`` unchanged (not
    checked: for configs that allow only some modes and check that themselves)."""
    new = _ALIASES.get(name)
    if new is None:
        return name
    warnings.warn(
        f"scoring {name!r} is deprecated; use {new!r}", SteadyevalDeprecationWarning, stacklevel=4
    )
    return new


def canonical_scoring(name: str) -> str:
    """``name``, or the current name of a deprecated alias (with a warning); unknown names
    raise :class:`ConfigError` listing the known ones."""
    if name in _ALIASES:
        return renamed_scoring(name)
    if name not in _REGISTRY:
        _load_modes()
    if name not in _REGISTRY:
        raise ConfigError(f"unknown scoring {name!r}; choose from {', '.join(_REGISTRY)}")
    return name


def get_scoring(name: str) -> ScoringMode:
    """The registered mode called ``name`` (see :func:`canonical_scoring`)."""
    return _REGISTRY[canonical_scoring(name)]


def requests_for(trial: Trial) -> tuple[Request, ...]:
    """The requests ``trial`` needs, from its condition's scoring mode."""
    return get_scoring(trial.condition.scoring).requests(trial)


def score_trial(trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
    """Score one row's ``responses`` (a trial's, in :func:`requests_for` order, one sample)."""
    return get_scoring(trial.condition.scoring).score(trial, responses)
