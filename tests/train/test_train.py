"""PET / CLS training, the masked-prompt scorer and the checkpoint store."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from steadyeval import ConfigError
from steadyeval.models import load_backend
from steadyeval.models._tiny import DEFAULT_CORPUS, build_tiny_model
from steadyeval.requests import ClassifyRequest, ScoreRequest
from steadyeval.train import (
    MANIFEST,
    CheckpointStore,
    ClsExample,
    MaskedPrompts,
    PromptExample,
    TrainConfig,
    TrainOutcome,
    checkpoint_key,
    score_masked,
    train_cls,
    train_pet,
)

POS = ("good", "great", "fine", "nice")
NEG = ("bad", "awful", "poor", "sad")


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one torch thread


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = [*DEFAULT_CORPUS, "the movie was " + " ".join(POS + NEG) + " . yes no maybe"]
    return build_tiny_model(
        tmp_path_factory.mktemp("models") / "bert", "bert", seed=0, corpus=corpus
    )


def _toy(n: int, seed: int) -> list[PromptExample]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        y = rng.randint(0, 1)
        word = rng.choice(POS if y else NEG)
        out.append(PromptExample(f"the movie was {word} . it was [Y] .", ("no", "yes"), y))
    return out


def _accuracy(scores: list[list[float]], examples: list[PromptExample]) -> float:
    hits = [
        max(range(len(s)), key=lambda j: (s[j], -j)) == e.gold
        for s, e in zip(scores, examples, strict=True)
    ]
    return sum(hits) / len(hits)


def test_pet_beats_chance_on_a_separable_toy_task(tiny_bert: Path, tmp_path: Path) -> None:
    train, dev, test = _toy(32, 0), _toy(16, 1), _toy(48, 2)
    before = torch.random.get_rng_state()
    config = TrainConfig(learning_rate=3e-3, steps=40, batch_size=8, eval_every=10)
    outcome = train_pet(tiny_bert, train, dev, config, seed=0, out_dir=tmp_path / "ckpt")
    assert torch.equal(before, torch.random.get_rng_state())  # caller's RNG untouched
    assert outcome.best_dev is not None and outcome.best_dev > 0.75
    assert [s for s, _ in outcome.history] == [10, 20, 30, 40]
    assert outcome.best_dev == max(v for _, v in outcome.history)
    untrained = _accuracy(score_masked(tiny_bert, test), test)
    trained = _accuracy(score_masked(tmp_path / "ckpt", test), test)
    assert trained > 0.75, (untrained, trained)


def test_pet_is_deterministic_given_the_seed(tiny_bert: Path, tmp_path: Path) -> None:
    config = TrainConfig(learning_rate=1e-3, steps=3, batch_size=4)
    data = _toy(8, 3)
    weights = []
    for run in ("a", "b", "c"):
        train_pet(tiny_bert, data, [], config, seed=0 if run != "c" else 1, out_dir=tmp_path / run)
        weights.append((tmp_path / run / "model.safetensors").read_bytes())
    assert weights[0] == weights[1]
    assert weights[0] != weights[2]


def test_scores_match_the_hf_masked_backend(tiny_bert: Path) -> None:
    long_prompt = "the movie was good . " * 60 + "it was [Y] ."
    examples = [
        PromptExample("the movie was good . it was [Y] .", ("no", "yes", "maybe"), 1),
        PromptExample("[Y] , the movie was bad .", ("no", "yes", "maybe"), 0),
        PromptExample(long_prompt, ("no", "yes", "maybe"), 1),
    ]
    ours = score_masked(tiny_bert, examples, max_length=64)
    backend = load_backend(f"hf-masked:{tiny_bert}?max_length=64")
    theirs = backend.score(
        [ScoreRequest(context=e.prompt, continuation=o) for e in examples for o in e.options]
    )
    flat = [v for row in ours for v in row]
    assert flat == pytest.approx([r.logprob for r in theirs], abs=1e-5)
    assert theirs[-1].truncated


def test_masked_prompts_locate_multi_token_options(tiny_bert: Path) -> None:
    from transformers import AutoTokenizer

    prompts = MaskedPrompts(AutoTokenizer.from_pretrained(tiny_bert), max_length=32)
    filled = prompts.fill("a " * 40 + "x [Y] y", "maybe so")
    assert filled.truncated and len(filled.ids) == 32
    tok = AutoTokenizer.from_pretrained(tiny_bert)
    span = list(filled.ids[filled.start : filled.end])
    assert str(tok.decode(span)).replace(" ", "") == "maybeso"


def test_prompt_example_and_config_validation() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        PromptExample("no slot", ("a",), 0)
    with pytest.raises(ValueError, match="gold index 2"):
        PromptExample("[Y]", ("a", "b"), 2)
    with pytest.raises(ValueError, match="steps=0"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="warmup_steps"):
        TrainConfig(steps=5, warmup_steps=5)


def test_cls_head_trains_and_scores(tiny_bert: Path, tmp_path: Path) -> None:
    def data(n: int, seed: int) -> list[ClsExample]:
        return [
            ClsExample(((f"the movie was {e.prompt.split()[3]} .", None),), e.gold)
            for e in _toy(n, seed)
        ]

    config = TrainConfig(learning_rate=3e-3, steps=30, batch_size=8, eval_every=10)
    outcome = train_cls(
        tiny_bert, data(32, 0), data(16, 1), config, n_labels=2, seed=0, out_dir=tmp_path / "cls"
    )
    assert outcome.best_dev is not None
    test = data(32, 2)
    # The checkpoint is an ordinary model: the hf-classifier backend answers classify requests.
    head = load_backend(f"hf:{tmp_path / 'cls'}")
    assert head.supported_kinds == frozenset({"classify"})
    got = head.classify([ClassifyRequest(e.inputs) for e in test])
    logps = [list(r.logprobs) for r in got]
    assert all(sum(torch.tensor(lp).exp()) == pytest.approx(1.0, abs=1e-5) for lp in logps)
    assert _accuracy(logps, [PromptExample("[Y]", ("a", "b"), e.gold) for e in test]) > 0.7
    # A multiple-choice head (COPA-style: one input pair per choice).
    choice = [
        ClsExample((("the movie was", POS[i % 4]), ("the movie was", NEG[i % 4])), 0)
        for i in range(8)
    ]
    train_cls(
        tiny_bert,
        choice,
        [],
        TrainConfig(steps=2, batch_size=4),
        n_labels=None,
        seed=0,
        out_dir=tmp_path / "mc",
    )
    mc = load_backend(f"hf-classifier:{tmp_path / 'mc'}")
    (resp,) = mc.classify([ClassifyRequest(choice[0].inputs, choices=True)])
    assert len(resp.logprobs) == 2 and resp.n_input_tokens > 0
    with pytest.raises(ConfigError, match="this head takes one pair per choice"):
        mc.classify([ClassifyRequest(choice[0].inputs[:1])])


def test_checkpoint_store_trains_once_and_survives_a_crash(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "store")
    payload = {"task": "toy", "seed": 0}
    key = checkpoint_key(payload)
    calls = []

    def crash(folder: Path) -> TrainOutcome:
        (folder / "model.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store.get_or_train(key, payload, crash)
    assert store.get(key) is None and not any((tmp_path / "store").iterdir())
    # A process killed with -9 cannot clean up: its staging folder is removed next time.
    import socket

    dead = tmp_path / "store" / f".{key[:12]}+{socket.gethostname()}+999999999+x"
    dead.mkdir()

    def train(folder: Path) -> TrainOutcome:
        calls.append(folder)
        from safetensors.torch import save_file

        save_file({"w": torch.ones(2)}, str(folder / "model.safetensors"))
        return TrainOutcome(best_step=3, best_dev=0.5, history=((3, 0.5),), extra={"n": 1})

    first = store.get_or_train(key, payload, train)
    second = store.get_or_train(key, payload, train)
    assert len(calls) == 1 and not first.reused and second.reused
    assert not dead.exists()
    assert second.path == first.path and (first.path / MANIFEST).is_file()
    assert second.best_dev == 0.5 and second.history == ((3, 0.5),) and second.extra == {"n": 1}


def test_weight_digest_separates_fingerprints(tiny_bert: Path, tmp_path: Path) -> None:
    """Checkpoints of one architecture differ in their fingerprints only by the digest that
    the store writes into the safetensors header."""
    import shutil

    store = CheckpointStore(tmp_path)
    infos = []
    for seed in (0, 1):
        payload = {"seed": seed}

        def train(folder: Path, seed: int = seed) -> TrainOutcome:
            return train_pet(
                tiny_bert,
                _toy(4, 0),
                [],
                TrainConfig(steps=1, batch_size=2),
                seed=seed,
                out_dir=folder,
            )

        infos.append(store.get_or_train(checkpoint_key(payload), payload, train))
    # Copy each into the same folder in turn: the path is then no part of the difference.
    prints = []
    for info in infos:
        same = tmp_path / "same"
        shutil.rmtree(same, ignore_errors=True)
        shutil.copytree(info.path, same)
        prints.append(load_backend(f"hf-masked:{same}").fingerprint())
    assert prints[0] != prints[1]
