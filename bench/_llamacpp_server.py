"""A llama.cpp server for the benchmarks: llama-cpp-python's, as ``bench/llamacpp_check.sh``
builds it (run that once first), on an f32 GGUF of the tiny Llama of ``_llamacpp_check``."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import _llamacpp_check

CACHE = Path(
    os.environ.get("STEADYEVAL_LLAMACPP_CACHE", Path.home() / ".cache/steadyeval/llamacpp")
)


@contextmanager
def serving(work: Path) -> Iterator[tuple[str, Path]]:
    """The server's base URL (``…/v1``) and the Hugging Face folder of the model it serves;
    the tiny Llama is built and converted under ``work`` once, the server stopped on exit."""
    python = CACHE / "venv" / "bin" / "python"
    sources = sorted((CACHE / "src").glob("llama_cpp_python-*"))
    if not python.exists() or not sources:
        raise SystemExit(f"no llama-cpp-python under {CACHE}: run bash bench/llamacpp_check.sh")
    model, gguf = work / "tiny-llama", work / "tiny-llama-f32.gguf"
    if not (model / "model.safetensors").exists():
        _llamacpp_check.build(model)
    if not gguf.exists():
        convert = sources[-1] / "vendor" / "llama.cpp" / "convert_hf_to_gguf.py"
        cmd = [str(python), str(convert), str(model), "--outtype", "f32", "--outfile", str(gguf)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = _llamacpp_check._free_port()
    proc = _llamacpp_check._start(str(python), str(gguf), port)
    try:
        yield f"http://127.0.0.1:{port}/v1", model
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
