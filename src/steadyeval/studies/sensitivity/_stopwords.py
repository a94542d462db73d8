"""Stop words for verbalization stability: predictions that carry no fact are skipped.

The default list is the one the causal-probing paper's authors use when they measure
verbalization stability (Cao et al., ACL 2022; ``utils/constant.py`` of their released code,
imported by ``cal_mention_consis.py``): NLTK's English stop-word list as it stood before
2018 (153 words; the later apostrophe forms such as "don't" are not in it) and nine pieces
that Penn-Treebank-style tokenizers split off ('ll 're 've n't 's 'd 'm '' ``). Matching is
exact and case-sensitive, as theirs: "The" is not a stop word, "the" is.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..._errors import ConfigError, DataError
from ..._files import limit_from_env, read_text_file
from ...items import shorten

__all__ = ["DEFAULT_STOP_WORDS", "MAX_STOP_WORDS_BYTES", "load_stop_words"]

#: The largest stop-word file read.
MAX_STOP_WORDS_BYTES = 64 * 1024 * 1024

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
    ``none`` (no rule), or a file with one word per line (blank lines ignored): a regular
    UTF-8 file of at most :data:`MAX_STOP_WORDS_BYTES` (``STEADYEVAL_MAX_FILE_MB`` raises
    it)."""
    if value == "default":
        return DEFAULT_STOP_WORDS
    if value == "none":
        return ()
    path = Path(value)
    if not os.path.lexists(path):
        raise ConfigError(
            f"stop words: {shorten(repr(value))} is neither 'default', 'none' nor a file (one "
            "word per line)"
        )
    limit = limit_from_env("STEADYEVAL_MAX_FILE_MB", MAX_STOP_WORDS_BYTES)
    text = read_text_file(path, "a stop-word file (one word per line)", max_bytes=limit)
    lines = text.splitlines()
    words = tuple(dict.fromkeys(w.strip() for w in lines if w.strip()))
    if not words:
        raise DataError("no stop words", file=str(path), expected="one word per line")
    return words
