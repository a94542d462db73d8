"""Score and greedy generate requests prefilled together (``_joint_prefill``, issue 22 fix 6):
the same log-probabilities as ``score``, the same greedy tokens as ``generate``, next-token
log-probabilities equal to a plain forward pass at every decoding step (the tiny model's
greedy tokens barely read the context, so tokens alone would not catch a wrong cache), and
honest token counts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from steadyeval import load_backend
from steadyeval.models import _joint_prefill
from steadyeval.models._hf import DECODE_POSITIONS_PER_ROW, HFCausalBackend
from steadyeval.models._joint_prefill import _JointRun, joining_prompts, plan_groups
from steadyeval.models._packed_decode import logit_gap
from steadyeval.models._packing import trie_size
from steadyeval.requests import GenerateRequest, ScoreRequest


def _load(tiny_gpt2: Path, options: str) -> HFCausalBackend:
    b = load_backend(f"hf:{tiny_gpt2}?{options}")
    assert isinstance(b, HFCausalBackend)
    return b


def _item(k: int, q: str, words: int = 12) -> str:
    """A paragraph-first prompt: paragraph ``k``, then the question."""
    text = " ".join(f"river{k} flows past town{j}" for j in range(words))
    return f"Paragraph: {text}.\nQuestion: {q}\nAnswer:"


OPTIONS = (" the sea", " a lake", " town number three")


def _requests(words: int = 12) -> tuple[list[ScoreRequest], list[GenerateRequest]]:
    """Two paragraphs x two questions: three options each and a free-form prompt (the
    options' context), one free-form prompt sharing nothing, one with other settings."""
    contexts = [_item(k, q, words) for k in range(2) for q in ("where?", "which town is it?")]
    scores = [ScoreRequest(c, o) for c in contexts for o in OPTIONS]
    gens = [GenerateRequest(c, 5, stop=("\n",)) for c in contexts]
    gens.append(GenerateRequest("Unrelated: how many?", 5, stop=("\n",)))
    gens.append(GenerateRequest(contexts[0], 3))
    return scores, gens


def _check_same(joint: HFCausalBackend, plain: HFCausalBackend, words: int = 12) -> None:
    scores, gens = _requests(words)
    got_s, got_g = joint.score_and_generate(scores, gens)
    want_s, want_g = plain.score(scores), plain.generate(gens)
    assert [r.logprob for r in got_s] == pytest.approx([r.logprob for r in want_s], abs=1e-4)
    assert [(r.n_tokens, r.is_greedy) for r in got_s] == [(r.n_tokens, r.is_greedy) for r in want_s]
    assert got_g == want_g
    assert joint.joint_prompts == 5  # all but the unrelated prompt


def test_joint_call_equals_score_and_generate(tiny_gpt2: Path) -> None:
    joint = _load(tiny_gpt2, "packing=true&batch_size=16")
    plain = _load(tiny_gpt2, "packing=false&batch_size=1")
    _check_same(joint, plain)


def test_joint_call_with_a_cached_prefix(tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long paragraph whose item does not fit in one row: a prefix group, its prefix
    forwarded once for the scored sequences and the prompts."""
    joint = _load(tiny_gpt2, "batch_size=16")
    joint.score([ScoreRequest("a b c d e f g h i j k l m n o p q r s", " t u")])  # the checks
    assert joint._packing and joint._prefix_cache
    plain = _load(tiny_gpt2, "packing=false&batch_size=1")
    groups: list[Any] = []
    real = HFCausalBackend._run_prefix_group

    def spy(self: HFCausalBackend, group: Any, *args: Any) -> Any:
        groups.append(group)
        return real(self, group, *args)

    monkeypatch.setattr(HFCausalBackend, "_run_prefix_group", spy)
    monkeypatch.setattr(HFCausalBackend, "_row_nodes", property(lambda self: 128))
    _check_same(joint, plain, words=8)
    assert groups  # the prefix-group path was taken
    assert any(m >= 12 for g in groups for row in g.rows for m in row.members)  # with prompts


def test_tokens_are_counted_apart(tiny_gpt2: Path) -> None:
    """Scoring tokens count the scored sequences' trie once; the free-form prompts' tokens
    that scoring does not forward are counted apart."""
    joint = _load(tiny_gpt2, "packing=true&batch_size=16")
    scores, gens = _requests()
    joint.score_and_generate(scores, gens)
    fed = [p.fed for p in joint._prepare_scores(scores)]
    prompts = [joint._prompt_ids(g.prompt, False, None, g.max_new_tokens)[0] for g in gens]
    assert joint.tokens_forwarded == trie_size(fed)
    assert joint.joint_prompt_tokens == trie_size(fed + prompts[:4]) - trie_size(fed)


def test_joining_prompts() -> None:
    scored = [[1, 2, 3, 4, 5], [1, 2, 3, 9], [7, 7, 7, 7]]
    prompts = [[1, 2, 3], [1, 2, 8, 8, 8, 8], [7, 7, 6, 6], [5, 5], [7, 7, 7, 7, 7, 7, 7, 7, 7]]
    assert joining_prompts(scored, prompts) == [0, 2]


def _joint_run(b: HFCausalBackend, words: int = 12) -> tuple[_JointRun, list[list[int]]]:
    scores, gens = _requests(words)
    gens = gens[:4]
    b.score(scores[:1])  # the one-time checks
    assert b._packed_generation_ok(gens[0])
    prompts = {
        i: b._prompt_ids(g.prompt, False, None, g.max_new_tokens) for i, g in enumerate(gens)
    }
    budget = b._batch_size * DECODE_POSITIONS_PER_ROW
    run = _JointRun(b, b._prepare_scores(scores), gens, prompts, budget, keep_logits=True)
    run.run()
    return run, [prompts[i][0] for i in range(len(gens))]


def _gap(run: _JointRun, prompts: Sequence[Sequence[int]], b: HFCausalBackend) -> float:
    with torch.inference_mode():
        return logit_gap(b.model, prompts, [[run.decoded[i] for i in range(len(prompts))]])


@pytest.mark.parametrize("row_nodes", [None, 128])
def test_decoding_steps_read_the_right_cache(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch, row_nodes: int | None
) -> None:
    """Every step's next-token log-probabilities equal a plain forward pass over the prompt
    and the tokens so far (plain rows; and rows on a cached prefix); and the comparison
    fails when a prompt's cache is wrong (its positions in reverse order)."""
    b = _load(tiny_gpt2, "batch_size=16")
    if row_nodes:
        monkeypatch.setattr(HFCausalBackend, "_row_nodes", property(lambda self: row_nodes))
    run, prompts = _joint_run(b, words=8)
    assert _gap(run, prompts, b) < 1e-4

    real = _JointRun._take

    def shifted(self: _JointRun, row: Any, cache: Any, prefix: int, b: int = 0) -> None:
        for layer in cache.layers:  # the keys and values in reverse order
            layer.keys = torch.flip(layer.keys, dims=(2,))
            layer.values = torch.flip(layer.values, dims=(2,))
        real(self, row, cache, prefix, b)

    monkeypatch.setattr(_JointRun, "_take", shifted)
    broken, _ = _joint_run(_load(tiny_gpt2, "batch_size=16"), words=8)
    assert _gap(broken, prompts, b) > 1e-2


def test_without_packing_it_is_score_then_generate(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = _load(tiny_gpt2, "packing=false&batch_size=4")
    assert not b.joint_prefill
    calls: list[str] = []
    monkeypatch.setattr(_joint_prefill, "_JointRun", lambda *a, **k: calls.append("joint"))
    scores, gens = _requests()
    got_s, got_g = b.score_and_generate(scores, gens)
    assert not calls and b.joint_prompts == 0
    assert [r.logprob for r in got_s] == pytest.approx([r.logprob for r in b.score(scores)])
    assert got_g == b.generate(gens)


def test_out_of_memory_in_the_joint_prefill_goes_apart(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of memory in the joint prefill: score and generate apart (their batches halve on
    it), with the same responses; any other error is raised."""
    b = _load(tiny_gpt2, "batch_size=8")
    scores, gens = _requests()
    want_s, want_g = b.score(scores), b.generate(gens)

    def oom(self: _JointRun) -> None:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB")

    monkeypatch.setattr(_JointRun, "run", oom)
    got_s, got_g = b.score_and_generate(scores, gens)
    assert [r.logprob for r in got_s] == pytest.approx([r.logprob for r in want_s], abs=1e-5)
    assert got_g == want_g

    def boom(self: _JointRun) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(_JointRun, "run", boom)
    with pytest.raises(RuntimeError, match="boom"):
        b.score_and_generate(scores, gens)


def test_dispatch_sends_the_hf_backend_joint_batches(tiny_gpt2: Path, tmp_path: Path) -> None:
    """Through the dispatcher: one joint call, each response cached under its own kind and
    equal to what ``score`` and ``generate`` answer."""
    from steadyeval.cache import ResponseCache
    from steadyeval.requests import Response, request_key
    from steadyeval.run import Plan
    from steadyeval.run._dispatch import dispatch

    joint = _load(tiny_gpt2, "batch_size=16")
    plain = _load(tiny_gpt2, "packing=false&batch_size=1")
    scores, gens = _requests()
    reqs = [*scores, *gens]
    plan = Plan(trials=(), unique={request_key("fp", r): ("m", r) for r in reqs}, n_requests=12)
    calls: list[tuple[int, int]] = []
    real = joint.score_and_generate

    def spy(s: Any, g: Any) -> Any:
        calls.append((len(s), len(g)))
        return real(s, g)

    joint.score_and_generate = spy  # type: ignore[method-assign]
    responses: dict[str, Response] = {}
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        dispatch(plan, list(plan.unique), {"m": joint}, cache, responses, batch_size=16,
                 progress=False, executor=None)  # fmt: skip
    assert calls == [(len(scores), len(gens))] and joint.joint_prompts == 5
    want = [*plain.score(scores), *plain.generate(gens)]
    for r, w in zip(reqs, want, strict=True):
        got = responses[request_key("fp", r)]
        assert type(got) is type(w)
        if isinstance(r, ScoreRequest):
            assert got.logprob == pytest.approx(w.logprob, abs=1e-4)  # type: ignore[union-attr]
        else:
            assert got == w
    with ResponseCache(tmp_path / "c.sqlite") as cache:  # read back with their kinds
        assert cache.claim(list(plan.unique)).cached == responses
        cache.release()


def test_decode_groups_cut_by_the_budget(tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a budget of two prompts' caches, the joined prompts are decoded in several
    groups (planned before the forwards, each filled as its prompts' rows are forwarded):
    every answer still equals generate()'s."""
    b = _load(tiny_gpt2, "packing=true&batch_size=16")
    plain = _load(tiny_gpt2, "packing=false&batch_size=1")
    scores, gens = _requests()
    gens = gens[:4]
    b.score(scores[:1])  # the one-time checks
    assert b._packed_generation_ok(gens[0])
    prompts = {
        i: b._prompt_ids(g.prompt, False, None, g.max_new_tokens) for i, g in enumerate(gens)
    }
    widest = max(len(p) for p, _ in prompts.values())
    sizes: list[int] = []
    real = _JointRun._flush

    def spy(self: _JointRun, group: Any) -> None:
        sizes.append(len(group.prompts))
        real(self, group)

    monkeypatch.setattr(_JointRun, "_flush", spy)
    run = _JointRun(b, b._prepare_scores(scores), gens, prompts, 2 * (widest + 5))
    run.run()
    assert sizes == [2, 2]
    assert [run.generated[i] for i in range(4)] == plain.generate(gens)


def test_each_planned_group_is_as_wide_as_its_own_prompts() -> None:
    """A long prompt widens only its own group: after it, a new group of short prompts
    is as wide as they are and holds as many as the budget allows; settings are apart."""
    key, other = (5, ()), (3, ("\n",))
    taken = [(0, key, 100), (1, key, 10), (2, key, 10), (3, other, 10), (4, key, 10)]
    taken += [(5 + k, key, 10) for k in range(12)]
    groups = plan_groups(taken, 2 * (100 + 5))
    assert [(g.prompts, g.widest) for g in (groups[0], groups[2])] == [([0, 1], 100), ([3], 10)]
    assert groups[1].widest == 10 and groups[1].prompts[:3] == [2, 4, 5]
    assert len(groups[1].prompts) == 210 // 15  # (prompts) x (10 + 5) <= 210
    for g in groups:
        assert len(g.prompts) * (g.widest + g.key[0]) <= 210


def test_narrow_rows_through_the_joint_call(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Narrow scoring rows (prefix groups for the shared paragraphs) in the joint call:
    scores and greedy outputs equal score() and generate()."""
    from steadyeval.models import _hf_causal_score

    monkeypatch.setattr(_hf_causal_score, "NARROW_ROWS", 48)
    monkeypatch.setattr(HFCausalBackend, "_row_nodes", property(lambda self: 192))
    widths: list[int] = []
    real = HFCausalBackend._pack

    def spy(self: HFCausalBackend, *args: Any) -> Any:
        got = real(self, *args)
        widths.append(got[2])
        return got

    monkeypatch.setattr(HFCausalBackend, "_pack", spy)
    joint = _load(tiny_gpt2, "packing=true&batch_size=16")
    plain = _load(tiny_gpt2, "packing=false&batch_size=1")
    _check_same(joint, plain, words=16)
    assert widths[-1] == 48
