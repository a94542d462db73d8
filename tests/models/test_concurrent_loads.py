"""Models loaded by several threads at once load as they do one at a time.

``transformers`` builds a model on the meta device under process-wide switches, and its
package's first import is not safe in two threads: without steadyeval's loading lock, a
second thread's load failed ("Cannot copy out of meta tensor", "cannot import name
'AutoConfig'") or kept randomly initialised parameters. Run in a fresh interpreter, so the
first import of ``transformers`` is among what races."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from steadyeval.models import build_tiny_model, load_backend
from steadyeval.requests import ScoreRequest

_SCRIPT = """
import json, sys, threading
from steadyeval.models import load_backend
from steadyeval.requests import ScoreRequest

folders = sys.argv[1:]
got, errors = {}, []

def score(i, folder):
    try:
        got[i] = load_backend("hf:" + folder).score([ScoreRequest("The sky is", " blue")])[0].logprob
    except Exception as exc:
        errors.append(repr(exc)[:300])

threads = [threading.Thread(target=score, args=(i, f)) for i, f in enumerate(folders)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"got": [got.get(i) for i in range(len(folders))], "errors": errors}))
"""


def test_models_loaded_in_threads_at_once_are_the_models(tmp_path: Path, tiny_gpt2: Path) -> None:
    other = build_tiny_model(tmp_path / "other", "gpt2", seed=1)
    folders = [str(tiny_gpt2), str(other)] * 3
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *folders], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["errors"] == []
    alone = {
        f: load_backend(f"hf:{f}").score([ScoreRequest("The sky is", " blue")])[0].logprob
        for f in folders[:2]
    }
    assert alone[folders[0]] != alone[folders[1]]  # two different models
    for folder, logprob in zip(folders, out["got"], strict=True):
        assert abs(logprob - alone[folder]) < 1e-5, (folder, logprob, alone[folder])


def test_tiny_models_built_in_threads_are_the_same_model(tmp_path: Path) -> None:
    """The builder seeds torch's global generator: builds in several threads take turns, so
    one seed gives one model whichever thread builds it."""
    import hashlib
    import threading

    def build(i: int) -> None:
        build_tiny_model(tmp_path / f"m{i}", "gpt2", seed=0)

    threads = [threading.Thread(target=build, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    digests = {
        hashlib.sha256((tmp_path / f"m{i}" / "model.safetensors").read_bytes()).hexdigest()
        for i in range(4)
    }
    assert len(digests) == 1
