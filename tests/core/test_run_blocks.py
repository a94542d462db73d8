"""The runner's model handling and blocks: identities, old-style backends, tags as columns,
trained models released after their last request."""

from __future__ import annotations

from pathlib import Path

import pytest

from steadyeval import (
    FORMATS,
    TEMPLATES,
    Condition,
    ConfigError,
    Item,
    ModelSpecError,
    RunOptions,
    parse_model_spec,
    run,
)
from steadyeval.models import register_backend
from steadyeval.results import StudyColumn
from steadyeval.run import Block, run_blocks
from steadyeval.train import CheckpointStore, TrainedModel, TrainOutcome
from tests.scripted_backend import ScriptedBackend

ITEMS = [
    Item(id=f"q{i}", question=f"Q{i}?", options=("x", "y"), gold_options=(i % 2,)) for i in range(3)
]
MC = Condition(name="mc", template=TEMPLATES["qa"], format=FORMATS["mc"], scoring="option-logprob")
QUIET = RunOptions(progress=False)


class _Other(ScriptedBackend):
    """Scripted (tests only): the same spec, another model (another fingerprint)."""

    def fingerprint(self) -> str:
        return "another model"


def test_two_models_with_one_identity_are_refused() -> None:
    spec = parse_model_spec("scripted:same")
    blocks = [
        Block(ITEMS, [MC], [ScriptedBackend(spec=spec)]),
        Block(ITEMS, [MC], [_Other(spec=spec)]),
    ]
    with pytest.raises(ConfigError, match="two different models have the identity scripted:same"):
        run_blocks(blocks, options=QUIET)
    # The same model object in two blocks is one model, asked once per distinct request.
    same = ScriptedBackend(spec=spec)
    result = run_blocks([Block(ITEMS, [MC], [same]), Block(ITEMS[:1], [MC], [same])], options=QUIET)
    assert result.table.num_rows == 4 and same.calls["score"] == 6


def test_an_old_style_backend_gets_a_clear_error() -> None:
    class Old:
        spec = parse_model_spec("toy:old")
        supported_kinds = frozenset({"score"})

        def fingerprint(self) -> str:
            return "old"

    with pytest.raises(
        ModelSpecError, match=r"Old is not a steadyeval backend: it lacks capabilities"
    ):
        run(ITEMS, [MC], Old(), options=QUIET)  # type: ignore[arg-type]
    register_backend("test-old", lambda spec: Old(), replace=True)
    with pytest.raises(ModelSpecError, match=r"subclass steadyeval\.models\.BaseBackend"):
        run(ITEMS, [MC], ["test-old:x"], options=QUIET)


def test_block_tags_fill_declared_columns_only() -> None:
    model = ScriptedBackend(spec=parse_model_spec("scripted:tags"))
    blocks = [
        Block(ITEMS, [MC], [model], tags={"arm": "a"}),
        Block(ITEMS, [MC], [model], tags={"arm": "b"}),
    ]
    with pytest.raises(ConfigError, match="tagged 'arm', which is not a declared study column"):
        run_blocks(blocks, options=QUIET)
    table = run_blocks(blocks, options=QUIET, columns=[StudyColumn("arm")]).table
    assert table.column("arm").to_pylist() == ["a"] * 3 + ["b"] * 3


def test_a_trained_model_trains_on_first_use_and_is_released(tmp_path: Path) -> None:
    register_backend("scripted", lambda spec: ScriptedBackend(spec=spec), replace=True)
    trained: list[Path] = []

    def train(folder: Path) -> TrainOutcome:
        trained.append(folder)
        (folder / "weights.txt").write_text("w")
        return TrainOutcome(best_step=1, best_dev=None)

    def model(keep: bool) -> TrainedModel:
        return TrainedModel(
            recipe={"test": keep}, train=train, store=CheckpointStore(tmp_path / "store"),
            backend="scripted", options={}, kinds=frozenset({"score"}), name="toy", keep=keep,
        )  # fmt: skip

    kept = model(True)
    dry = run(ITEMS, [MC], kept, options=QUIET, dry_run=True)
    assert dry.to_send == 6 and not trained  # planning and dry runs train nothing
    run(ITEMS, [MC], kept, options=RunOptions(cache=tmp_path / "c.sqlite", progress=False))
    assert len(trained) == 1 and kept.identity().startswith("scripted:toy-")
    assert kept.info is not None and kept.info.path.is_dir() and kept._inner is None  # released
    gone = model(False)
    run(ITEMS, [MC], gone, options=RunOptions(cache=tmp_path / "c.sqlite", progress=False))
    assert len(trained) == 2 and gone.info is None
    assert not (tmp_path / "store" / gone.key[:24]).exists()  # deleted once answered
    again = model(False)  # a warm cache: neither training nor the checkpoint is needed
    run(ITEMS, [MC], again, options=RunOptions(cache=tmp_path / "c.sqlite", progress=False))
    assert len(trained) == 2
