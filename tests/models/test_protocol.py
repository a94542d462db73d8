"""The backend protocol: declared capabilities, the model identity, the one slot reader."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from steadyeval import ConfigError, Item, RunOptions, run
from steadyeval.conditions import FORMATS, TEMPLATES, Condition
from steadyeval.models import (
    SLOT,
    Backend,
    BaseBackend,
    Capabilities,
    SlotReader,
    load_backend,
    parse_model_spec,
    with_slots,
)
from steadyeval.models._known import KNOWN_INPUT_FORMATS
from steadyeval.requests import ScoreRequest, TopKRequest
from tests.scripted_backend import ScriptedBackend


def test_capabilities_are_declared(tiny_gpt2: Path, tiny_bert: Path) -> None:
    causal = load_backend(f"hf:{tiny_gpt2}")
    masked = load_backend(f"hf:{tiny_bert}")
    assert causal.capabilities == Capabilities(max_length=causal.capabilities.max_length)
    assert causal.capabilities.max_length and causal.capabilities.max_length > 0
    assert masked.capabilities.fills_slots and not causal.capabilities.fills_slots
    uqa = load_backend(f"hf:{tiny_gpt2}?input_format=unifiedqa&max_length=64")
    assert uqa.capabilities == Capabilities(max_length=64, input_format="unifiedqa")
    assert KNOWN_INPUT_FORMATS["allenai/unifiedqa-t5-large"] == "unifiedqa"
    assert isinstance(ScriptedBackend(spec=parse_model_spec("scripted:x")), Backend)
    assert ScriptedBackend(spec=parse_model_spec("scripted:x")).capabilities == Capabilities()


def test_identity_names_the_model_not_the_run(tiny_gpt2: Path, tmp_path: Path) -> None:
    a = load_backend(f"hf:{tiny_gpt2}?batch_size=4&device=cpu&dtype=bfloat16")
    assert a.identity().startswith("hf:gpt2#") and a.identity().endswith("?dtype=bfloat16")
    assert str(tiny_gpt2.parent) not in a.identity()
    # One model, however it is named: the backend's alias and default options do not count.
    plain = load_backend(f"hf:{tiny_gpt2}").identity()
    assert load_backend(f"hf-causal:{tiny_gpt2}?dtype=float32").identity() == plain
    assert plain == a.identity().removesuffix("?dtype=bfloat16")
    # Another copy of the same folder is the same model; changed weights are another one.
    copy = tmp_path / "gpt2"
    shutil.copytree(tiny_gpt2, copy)
    assert load_backend(f"hf:{copy}?dtype=bfloat16").identity() == a.identity()
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-100] ^= 0xFF  # one byte of the last tensor
    weights.write_bytes(bytes(data))
    changed = load_backend(f"hf:{copy}?dtype=bfloat16")
    assert changed.identity() != a.identity() and changed.fingerprint() != a.fingerprint()


def test_a_hub_snapshot_is_named_by_repository_and_commit(tiny_gpt2: Path, tmp_path: Path) -> None:
    from steadyeval.models._hf_identity import model_identity

    snap = tmp_path / "models--org--m" / "snapshots" / "0123456789abcdef0123"
    shutil.copytree(tiny_gpt2, snap)
    spec = parse_model_spec("hf:org/m?revision=main&batch_size=8")
    assert model_identity(spec, snap, {"batch_size"}) == "hf:org/m@0123456789ab"


def test_the_same_model_twice_is_refused(tiny_gpt2: Path) -> None:
    items = [Item(id="a", question="Q?", options=("x", "y"), gold_options=(0,))]
    cond = Condition(
        name="c", template=TEMPLATES["qa"], format=FORMATS["mc"], scoring="option-logprob"
    )
    with pytest.raises(ConfigError, match="are the same model"):
        run(items, [cond], [f"hf:{tiny_gpt2}?batch_size=2", f"hf:{tiny_gpt2}?batch_size=8"],
            options=RunOptions(progress=False), dry_run=True)  # fmt: skip


class _Recorder(BaseBackend):
    """Scripted (tests only): records the requests it gets; log-prob = -len(continuation)."""

    def __init__(self) -> None:
        self.spec = parse_model_spec("scripted:recorder")
        self.seen: list[object] = []

    @property
    def supported_kinds(self) -> frozenset:  # type: ignore[type-arg]
        return frozenset({"score", "top-k"})

    def fingerprint(self) -> str:
        return "recorder"

    def score(self, requests):  # type: ignore[no-untyped-def]
        from steadyeval.requests import ScoreResponse

        self.seen += requests
        return [ScoreResponse(-len(r.continuation), 1, False) for r in requests]

    def top_k(self, requests):  # type: ignore[no-untyped-def]
        from steadyeval.requests import TopKResponse

        self.seen += requests
        return [TopKResponse(("a",), (-1.0,)) for _ in requests]


def test_the_slot_reader_reads_up_to_the_slot_and_keeps_the_model() -> None:
    inner = _Recorder()
    reader = with_slots(inner)
    assert isinstance(reader, SlotReader) and with_slots(reader) is reader
    assert reader.fingerprint() == inner.fingerprint() and reader.identity() == inner.identity()
    reader.top_k([TopKRequest(prompt=f"Dante was born in {SLOT} .", k=3)])
    assert inner.seen[-1] == TopKRequest(prompt="Dante was born in", k=3)
    got = reader.top_k([TopKRequest(prompt=f"Born in {SLOT}.", k=1, candidates=("Rome", "Pisa"))])
    assert [r.continuation for r in inner.seen[-2:]] == [" Rome", " Pisa"]  # type: ignore[attr-defined]
    assert all(isinstance(r, ScoreRequest) and r.context == "Born in" for r in inner.seen[-2:])
    assert got[0].tokens == ("Rome",)
    plain = TopKRequest(prompt="no slot", k=2)
    reader.top_k([plain])
    assert inner.seen[-1] == plain


@pytest.mark.parametrize("method", ["preflight", "precheck"])
def test_the_slot_reader_preflights_what_it_sends(method: str) -> None:
    class Checks(_Recorder):
        def preflight(self, requests):  # type: ignore[no-untyped-def]
            self.checked = ("preflight", list(requests))

        def precheck(self, requests):  # type: ignore[no-untyped-def]
            self.checked = ("precheck", list(requests))

    inner = Checks()
    reader = with_slots(inner)
    getattr(reader, method)([
        TopKRequest(prompt=f"Born in {SLOT}.", k=1, candidates=("Rome", "Pisa")),
        TopKRequest(prompt=f"Born in {SLOT}.", k=3),
        ScoreRequest(context="a", continuation=" b"),
    ])  # fmt: skip
    called, checked = inner.checked
    assert called == method
    kinds = [type(r).__name__ for r in checked]
    assert kinds == ["ScoreRequest", "ScoreRequest", "TopKRequest", "ScoreRequest"]
    assert checked[2] == TopKRequest(prompt="Born in", k=3)
