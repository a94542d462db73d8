"""Stop words for verbalization stability: predictions that carry no fact are skipped.

The default list is the one the causal-probing paper's authors use when they measure
verbalization stability (Cao et al., ACL 2022; ``utils/constant.py`` of their released code,
imported by ``cal_mention_consis.py``): NLTK's English stop-word list as it stood before
2018 (153 words; the later apostrophe forms such as "don't" are not in it) and nine pieces
that Penn-Treebank-style tokenizers split off ('ll 're 've n't 's 'd 'm '' ``). Matching is
exact and case-sensitive, as theirs: "The" is not a stop word, "the" is.
"""

from __future__ import annotations

from pathlib import Path

from ..._errors import ConfigError, DataError

__all__ = ["DEFAULT_STOP_WORDS", "load_stop_words"]

_PRONOUNS = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
she her hers herself it its itself they them their theirs themselves what which who whom
this that these those
"""
_VERBS = """
am is are was were be been being have has had having do does did doing
"""
_FUNCTION_WORDS = """
a an the and but if or because as until while of at by for with about against between into
through during before after above below to from up down in out on off over under again
further then once here there when where why how all any both each few more most other some
such no nor not only own same so than too very s t can will just don should now
"""
_CONTRACTION_STEMS = """
d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn mustn needn shan
shouldn wasn weren won wouldn
"""
_TOKENIZER_PIECES = ("'ll", "'re", "'ve", "n't", "'s", "'d", "'m", "''", "``")

#: The authors' stop words (see the module docstring), in the order of NLTK's list.
DEFAULT_STOP_WORDS: tuple[str, ...] = (
    *_PRONOUNS.split(),
    *_VERBS.split(),
    *_FUNCTION_WORDS.split(),
    *_CONTRACTION_STEMS.split(),
    *_TOKENIZER_PIECES,
)


def load_stop_words(value: str) -> tuple[str, ...]:
    """The stop words a ``--stop-words`` value names: ``default`` (the authors' list),
    ``none`` (no rule), or a file with one word per line (blank lines ignored)."""
    if value == "default":
        return DEFAULT_STOP_WORDS
    if value == "none":
        return ()
    path = Path(value)
    if not path.is_file():
        raise ConfigError(
            f"stop words: {value!r} is neither 'default', 'none' nor a file (one word per line)"
        )
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read ({exc})", file=str(path)) from None
    words = tuple(dict.fromkeys(w.strip() for w in lines if w.strip()))
    if not words:
        raise DataError("no stop words", file=str(path), expected="one word per line")
    return words
