"""Parity with lm-evaluation-harness: the ``hf`` backend's scores equal ``HFLM.loglikelihood``.

Both sides load the same tiny random GPT-2 (byte-level BPE) from a local directory and score
the same ``(context, continuation)`` strings; the summed log-probabilities must agree to 1e-4
and the ``is_greedy`` flags exactly. lm-eval is driven in process through its Python API,
offline, with socket connections refused for the whole module.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from ._lmeval_helpers import (
    OFFLINE_ENV,
    build_tiny_gpt2,
    greedy_cases,
    lmeval_loglikelihood,
    lmeval_token_split,
    make_hflm,
    no_network,
    set_offline_env,
    text_of_n_tokens,
)

set_offline_env()
pytest.importorskip("lm_eval", reason="lm-eval (test-only dependency) is not installed")
pytest.importorskip(
    "lm_eval.models.huggingface",
    reason="lm-eval's HF model needs its 'hf' extra (accelerate) installed",
)

from steadyeval.models import load_backend  # noqa: E402
from steadyeval.requests import ScoreRequest, ScoreResponse  # noqa: E402

ATOL = 1e-4

# (id, context, continuation)
CASES: list[tuple[str, str, str]] = [
    ("cont-leading-space", "The cat", " sat on the mat"),
    ("qa-newline-ctx", "Question: What is the capital of France?\nAnswer:", " Paris"),
    ("ctx-trailing-space", "Hello ", "world"),
    ("ctx-trailing-space-cont-space", "The answer is ", " 42"),
    ("ctx-trailing-newline", "Question: 2+2=?\n", "Answer: 4"),
    ("ctx-trailing-blank-line", "Line one.\n\n", " indented line two"),
    ("ctx-trailing-tab", "Name:\t", "Bob"),
    ("ctx-trailing-mixed-ws", "Total: \n ", "12"),
    ("short-ctx-A-space", "A", " B"),
    ("short-ctx-A", "A", "B"),
    ("single-char-both", "x", "y"),
    ("mc-choice-A", "Pick one: A, B, C or D. The answer is", " A"),
    ("mc-choice-B", "Pick one: A, B, C or D. The answer is", " B"),
    ("mc-choice-C", "Pick one: A, B, C or D. The answer is", " C"),
    ("mc-choice-D-long", "Pick one: A, B, C or D. The answer is", " D, because it is"),
    ("unicode-latin", "Zürich liegt in der", " Schweiz, café naïve"),
    ("unicode-cjk-emoji", "東京 is a city", " 🙂 in 日本 ∑"),
    ("unicode-cyrillic-ctx", "Привет, ", "мир!"),
    ("cont-trailing-newline", "Say", " hi\n"),
    ("cont-inner-newlines", "def add(a, b):", "\n    return a + b\n"),
    (
        "long-continuation",
        "Once upon a time",
        " there was a little model that scored every continuation, and then the quick"
        " brown fox jumped over the lazy dog again and again, until the sun set over"
        " Zürich and everyone went home. The end.",
    ),
]

GREEDY_CONTEXTS = [
    "The cat",
    "Once upon a time",
    "Question: What is 2+2?\nAnswer:",
    "the dog sat on the",
    "Hello",
    "A B C D",
    "Numbers: 1 2 3",
]


def _table(
    pairs: Sequence[tuple[str, str, str]],
    ours: Sequence[ScoreResponse],
    theirs: Sequence[tuple[float, bool]],
    splits: Sequence[tuple[list[int], list[int]]],
) -> str:
    lines = [
        f"{'case':<32} {'steadyeval':>14} {'lm-eval':>14} {'|diff|':>10} "
        f"{'greedy s/l':>11} {'ntok s/l':>9}"
    ]
    for (cid, _, _), o, (lp, greedy), (_, cont_ids) in zip(
        pairs, ours, theirs, splits, strict=True
    ):
        lines.append(
            f"{cid:<32} {o.logprob:>14.6f} {lp:>14.6f} {abs(o.logprob - lp):>10.2e} "
            f"{o.is_greedy!s:>5}/{greedy!s:<5} {o.n_tokens:>4}/{len(cont_ids):<4}"
        )
    return "\n".join(lines)


def _compare(
    lm: Any, backend: Any, cases: Sequence[tuple[str, str, str]]
) -> tuple[list[ScoreResponse], list[tuple[float, bool]], float]:
    """Score ``cases`` on both sides; assert logprob, is_greedy and token-count parity."""
    pairs = [(ctx, cont) for _, ctx, cont in cases]
    theirs = lmeval_loglikelihood(lm, pairs)
    ours = backend.score([ScoreRequest(context=ctx, continuation=cont) for ctx, cont in pairs])
    splits = [lmeval_token_split(lm, ctx, cont) for ctx, cont in pairs]
    assert len(ours) == len(theirs) == len(cases)
    table = _table(cases, ours, theirs, splits)
    print(table)

    diffs = [abs(o.logprob - lp) for o, (lp, _) in zip(ours, theirs, strict=True)]
    max_diff = max(diffs)
    worst = cases[diffs.index(max_diff)][0]
    assert max_diff <= ATOL, (
        f"log-probabilities differ from lm-eval by up to {max_diff:.3e} (case {worst!r}; "
        f"tolerance {ATOL:g})\n{table}"
    )
    greedy_mismatch = [
        c[0] for c, o, (_, g) in zip(cases, ours, theirs, strict=True) if o.is_greedy != g
    ]
    assert not greedy_mismatch, f"is_greedy differs from lm-eval for {greedy_mismatch}\n{table}"
    ntok_mismatch = [
        c[0]
        for c, o, (_, cont_ids) in zip(cases, ours, splits, strict=True)
        if o.n_tokens != len(cont_ids)
    ]
    assert not ntok_mismatch, (
        f"continuation token counts differ from lm-eval's split for {ntok_mismatch}\n{table}"
    )
    return ours, theirs, max_diff


@pytest.fixture(scope="module", autouse=True)
def _offline() -> Iterator[None]:
    """Hub offline and outbound sockets refused for everything in this module."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in OFFLINE_ENV.items():
            mp.setenv(key, value)
        with no_network():
            yield


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"), seed=0)


@pytest.fixture(scope="module")
def lm(tiny_model_dir: Path) -> Any:
    return make_hflm(tiny_model_dir, batch_size=4)


@pytest.fixture(scope="module")
def backend(tiny_model_dir: Path) -> Any:
    return load_backend(f"hf:{tiny_model_dir}?device=cpu&dtype=float32")


def test_tiny_model_is_byte_level_gpt2(lm: Any) -> None:
    """Guards the premises of the parity cases: no BOS added, and a context limit to fit in."""
    assert lm.model.config.model_type == "gpt2"
    assert lm.tok_encode("The cat")[0] != lm.prefix_token_id, "tokenizer adds a BOS token"
    assert lm.max_length >= 64


def test_loglikelihood_matches_lmeval(lm: Any, backend: Any) -> None:
    cases = list(CASES)
    # A context far longer than the others but still inside the model's window.
    long_ctx = text_of_n_tokens(
        lm, "The quick brown fox jumps over the lazy dog. ", min(lm.max_length - 24, 400)
    )
    cases.append(("long-context", long_ctx, " The end."))
    # Greedy continuations, so that is_greedy=True is compared too, not only False.
    greedy = greedy_cases(lm, GREEDY_CONTEXTS, (1, 2, 4))
    assert greedy, "no greedy continuation survives re-tokenization; add contexts"
    cases.extend(greedy)

    _, theirs, max_diff = _compare(lm, backend, cases)
    print(f"max |steadyeval - lm-eval| = {max_diff:.3e} over {len(cases)} cases")
    flags = {g for _, g in theirs}
    assert flags == {True, False}, f"the cases should include greedy and non-greedy ones: {flags}"


def test_empty_context_matches_lmeval(lm: Any, backend: Any) -> None:
    """lm-eval conditions an empty context on its prefix token (BOS, else EOS)."""
    cases = [
        ("empty-ctx", "", "The quick brown fox"),
        ("empty-ctx-leading-space", "", " hello there"),
        ("empty-ctx-one-char", "", "A"),
    ]
    _compare(lm, backend, cases)


def test_truncated_context_matches_lmeval(lm: Any, backend: Any) -> None:
    """Past the model's window both sides keep the last ``max_length`` input tokens."""
    unit = "the cat sat on the mat and the dog sat on the log. "
    long_ctx = text_of_n_tokens(lm, unit, lm.max_length + 64).rstrip()
    cases = [("over-long-context", long_ctx, " and the end")]
    ctx_ids, cont_ids = lmeval_token_split(lm, *cases[0][1:])
    assert len(ctx_ids) + len(cont_ids) > lm.max_length + 1
    ours, _, _ = _compare(lm, backend, cases)
    assert ours[0].truncated
