"""The Ray executor on a local 2-worker cluster, one worker killed mid-run."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from steadyeval import FORMATS, TEMPLATES, Condition, Generation, Item, RunOptions, run
from steadyeval.requests import Request, RequestKind, Response
from steadyeval.run import RayExecutor

ray = pytest.importorskip("ray")

ITEMS = [
    Item(
        id=f"q{i}",
        question=f"Which river flows through city {i}?",
        context=f"City {i} lies on the river number {i % 5}.",
        options=("the river", "the lake", "the sea"),
        gold_options=(0,),
    )
    for i in range(24)
]
CONDITIONS = [
    Condition(name="mc", template=TEMPLATES["qa"], format=FORMATS["mc"], scoring="option-logprob"),
    Condition(
        name="free",
        template=TEMPLATES["qa"],
        format=FORMATS["free"],
        generation=Generation(max_new_tokens=6),
    ),
]


class KillOneWorker(RayExecutor):
    """Kills one actor's process right after the first batch comes back."""

    killed = False

    def run(
        self,
        backend,
        kind: RequestKind,
        chunks: Sequence[Sequence[Request]],  # type: ignore[no-untyped-def]
    ) -> Iterator[tuple[int, list[Response]]]:
        for out in super().run(backend, kind, chunks):
            yield out
            if not self.killed:
                victim = self.actors(backend)[0]
                os.kill(ray.get(victim.pid.remote()), signal.SIGKILL)
                KillOneWorker.killed = True


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_results_equal_local_with_a_worker_killed(
    tiny_gpt2: Path, tmp_path: Path, cluster: None
) -> None:
    model = f"hf:{tiny_gpt2}"
    local = run(
        ITEMS,
        CONDITIONS,
        [model],
        options=RunOptions(cache=tmp_path / "local.sqlite", progress=False),
    )
    executor = KillOneWorker(workers=2)
    # Small batches, so that batches are still in flight when a worker is killed: the hf
    # backend's score and generate requests go together (joint prefill), about batch_size
    # prompts with their options per batch.
    remote = run(
        ITEMS,
        CONDITIONS,
        [model],
        options=RunOptions(
            cache=tmp_path / "ray.sqlite", progress=False, executor=executor, batch_size=2
        ),
    )
    executor.shutdown()
    assert KillOneWorker.killed and executor.resubmitted >= 1
    assert remote.summary["plan"]["model_calls"] == local.summary["plan"]["model_calls"]
    a, b = local.table.to_pylist(), remote.table.to_pylist()
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        for col in ("item_id", "condition", "request_key", "output", "parsed", "correct"):
            assert x[col] == y[col], col
        if x["option_logprobs"] is not None:
            assert y["option_logprobs"] == pytest.approx(
                x["option_logprobs"], rel=1e-6, abs=1e-6
            ), (x["option_logprobs"], y["option_logprobs"])
