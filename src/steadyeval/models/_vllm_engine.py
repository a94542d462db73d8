"""The vLLM engines behind the ``vllm:`` backend: :func:`import_engine_module` (what
provides ``LLM`` and ``SamplingParams``, with a clear error when vLLM is missing),
:class:`VLLMEngine` (one ``vllm.LLM`` and the mapping of score, generate and top-k requests
to its calls) and :class:`ReplicaPool` (data parallelism: one engine per spawned worker
process, each pinned to its own GPUs, with every batch split between them). ``vllm`` itself
is imported only when an engine is built.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
from collections.abc import Sequence
from typing import Any

from .._errors import ConfigError
from ..requests import (
    GenerateRequest,
    GenerateResponse,
    Request,
    RequestKind,
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
)
from ._causal_text import CausalText
from ._generated_text import cut_at_stop, generated_text
from ._openai_wire import sample_seed

__all__ = ["INSTALL_HINT", "ReplicaPool", "VLLMEngine", "import_engine_module"]

INSTALL_HINT = "pip install 'steadyeval[vllm]' on a machine with a CUDA GPU"


def import_engine_module(ref: Any) -> Any:
    """What provides ``LLM`` and ``SamplingParams``: ``ref`` itself, the module it names
    (``"vllm"`` by default) or ``"module:attribute"``; a clear error when vLLM is missing."""
    if not isinstance(ref, str):
        return ref
    name, _, attr = ref.partition(":")
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if name == "vllm" and exc.name is not None and exc.name.split(".")[0] == "vllm":
            raise ConfigError(
                f"the vllm backend needs vLLM, which is not installed: {INSTALL_HINT}"
            ) from None
        raise
    return getattr(module, attr) if attr else module


def _logprob(entry: Any) -> float:
    return float(entry.logprob if hasattr(entry, "logprob") else entry)


class VLLMEngine:
    """One ``vllm.LLM`` and the mapping of steadyeval requests to it (runs in the backend's
    process, or in a data-parallel worker process)."""

    def __init__(self, module: Any, kwargs: dict[str, Any], *, where: str) -> None:
        self.where = where
        self.module = module
        self.llm = module.LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.text = CausalText(self.tokenizer, self.where)
        self.max_len = self._max_model_len(kwargs)

    def _max_model_len(self, kwargs: dict[str, Any]) -> int:
        cfg = getattr(getattr(self.llm, "llm_engine", None), "model_config", None)
        value = getattr(cfg, "max_model_len", None) or kwargs.get("max_model_len")
        return int(value) if value else 2048

    # -- tokenisation (the hf causal backend's rules, shared) ----------------------------
    def encode_pair(self, req: ScoreRequest) -> tuple[list[int], int]:
        """Token ids of context + continuation and how many of them are the continuation."""
        return self.text.encode_pair(req)

    def _prompt(
        self,
        text: str,
        chat: bool,
        system: str | None,
        room: int,
        turns: Sequence[tuple[str, str]] = (),
    ) -> tuple[list[int], bool]:
        ids = self.text.encode(self.text.chat(text, system, turns) if chat else text) or [
            self.text.prefix_token()
        ]
        limit = max(1, self.max_len - room)
        return ids[-limit:], len(ids) > limit

    # -- the three kinds -------------------------------------------------------------------
    def _run(self, prompts: list[list[int]], params: list[Any]) -> list[Any]:
        outs = self.llm.generate(
            [{"prompt_token_ids": ids} for ids in prompts], params, use_tqdm=False
        )
        if len(outs) != len(prompts):
            raise RuntimeError(
                f"{self.where}: vLLM returned {len(outs)} outputs for {len(prompts)} prompts"
            )
        return list(outs)

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        SP = self.module.SamplingParams
        prepared = []
        for r in requests:
            ids, n_cont = self.encode_pair(r)
            # The prompt must leave room for the one token vLLM generates.
            limit = max(2, self.max_len - 1)
            truncated = len(ids) > limit
            ids = ids[-limit:]
            prepared.append((ids, min(n_cont, len(ids) - 1), truncated))
        params = [SP(max_tokens=1, temperature=0.0, prompt_logprobs=1) for _ in prepared]
        outs = self._run([p[0] for p in prepared], params)
        results = []
        for (ids, n_cont, truncated), out in zip(prepared, outs, strict=True):
            plps = out.prompt_logprobs
            if plps is None or len(plps) != len(ids):
                raise RuntimeError(
                    f"{self.where}: vLLM returned no prompt log-probabilities of the right length"
                )
            total, greedy = 0.0, True
            for i in range(len(ids) - n_cont, len(ids)):
                entry = plps[i]
                if entry is None or ids[i] not in entry:
                    raise RuntimeError(f"{self.where}: prompt position {i} has no log-probability")
                chosen = entry[ids[i]]
                value = _logprob(chosen)
                total += value
                rank = getattr(chosen, "rank", None)
                if rank is not None:
                    greedy = greedy and rank == 1
                else:
                    greedy = greedy and value >= max(_logprob(e) for e in entry.values())
            results.append(
                ScoreResponse(
                    logprob=total,
                    n_tokens=n_cont,
                    is_greedy=greedy if n_cont else True,
                    truncated=truncated,
                    n_input_tokens=len(ids) - 1,
                )
            )
        return results

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        SP = self.module.SamplingParams
        prompts, flags, params = [], [], []
        for r in requests:
            ids, truncated = self._prompt(r.prompt, r.chat, r.system, r.max_new_tokens, r.turns)
            prompts.append(ids)
            flags.append(truncated)
            if r.temperature == 0:
                params.append(
                    SP(max_tokens=r.max_new_tokens, temperature=0.0, stop=list(r.stop) or None)
                )
            else:
                params.append(
                    SP(
                        max_tokens=r.max_new_tokens,
                        temperature=r.temperature,
                        top_p=r.top_p,
                        stop=list(r.stop) or None,
                        seed=sample_seed(r),
                    )
                )
        outs = self._run(prompts, params)
        results = []
        for r, ids, truncated, out in zip(requests, prompts, flags, outs, strict=True):
            comp = out.outputs[0]
            # The text the new tokens add after the prompt, decoded here by the rule every
            # backend follows (``_generated_text``), not vLLM's own detokenizer's output.
            text, _ = cut_at_stop(generated_text(self.tokenizer, ids, comp.token_ids), r.stop)
            results.append(
                GenerateResponse(
                    text=text,
                    n_input_tokens=len(ids),
                    n_output_tokens=len(comp.token_ids),
                    truncated=truncated,
                    finish_reason=str(comp.finish_reason or "stop"),
                )
            )
        return results

    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        SP = self.module.SamplingParams
        prompts, flags = [], []
        for r in requests:
            ids, truncated = self._prompt(r.prompt, r.chat, r.system, 1, r.turns)
            prompts.append(ids)
            flags.append(truncated)
        params = [SP(max_tokens=1, temperature=0.0, logprobs=r.k) for r in requests]
        outs = self._run(prompts, params)
        results = []
        for r, ids, truncated, out in zip(requests, prompts, flags, outs, strict=True):
            steps = out.outputs[0].logprobs
            if not steps:
                raise RuntimeError(f"{self.where}: vLLM returned no log-probabilities for top-k")
            ranked = sorted(steps[0].items(), key=lambda kv: (-_logprob(kv[1]), kv[0]))[: r.k]
            results.append(
                TopKResponse(
                    tokens=tuple(self.tokenizer.decode([int(t)]) for t, _ in ranked),
                    logprobs=tuple(_logprob(v) for _, v in ranked),
                    n_input_tokens=len(ids),
                    truncated=truncated,
                )
            )
        return results

    def call(self, kind: RequestKind, requests: Sequence[Request]) -> list[Any]:
        if kind == "score":
            return self.score(requests)  # type: ignore[arg-type]
        if kind == "generate":
            return self.generate(requests)  # type: ignore[arg-type]
        return self.top_k(requests)  # type: ignore[arg-type]


# -- data parallel: one engine per worker process -------------------------------------------
def _worker_main(conn: Any, module_ref: str, kwargs: dict[str, Any], gpus: str, where: str) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = gpus  # before vLLM (and CUDA) is imported
    try:
        engine = VLLMEngine(import_engine_module(module_ref), kwargs, where=where)
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", None))
    while True:
        job = conn.recv()
        if job is None:
            return
        kind, requests = job
        try:
            conn.send(("ok", engine.call(kind, requests)))
        except BaseException as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class ReplicaPool:
    """``n`` engine processes (spawned), each pinned to its own GPUs; batches are split into
    contiguous shards, one per replica, and the answers put back in order."""

    def __init__(
        self, n: int, module_ref: str, kwargs: dict[str, Any], tp: int, where: str
    ) -> None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = (
            [g for g in visible.split(",") if g.strip()]
            if visible
            else [str(i) for i in range(n * tp)]
        )
        if len(ids) < n * tp:
            raise ConfigError(
                f"{where}: data_parallel_size={n} × tensor_parallel_size={tp} needs {n * tp} "
                f"GPUs; CUDA_VISIBLE_DEVICES lists {len(ids)}"
            )
        ctx = multiprocessing.get_context("spawn")
        self.where = where
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        for r in range(n):
            parent, child = ctx.Pipe()
            gpus = ",".join(ids[r * tp : (r + 1) * tp])
            proc = ctx.Process(
                target=_worker_main,
                args=(child, module_ref, kwargs, gpus, f"{where} replica {r}"),
                daemon=True,
            )
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        for conn in self._conns:
            self._receive(conn)

    def _receive(self, conn: Any) -> Any:
        try:
            status, payload = conn.recv()
        except EOFError:
            raise RuntimeError(f"{self.where}: a vLLM replica process died") from None
        if status == "error":
            raise RuntimeError(f"{self.where}: a vLLM replica failed: {payload}")
        return payload

    def call(self, kind: RequestKind, requests: Sequence[Request]) -> list[Any]:
        n = len(self._conns)
        size, extra = divmod(len(requests), n)
        shards, start = [], 0
        for r in range(n):
            stop = start + size + (1 if r < extra else 0)
            shards.append(list(requests[start:stop]))
            start = stop
        busy = [(conn, shard) for conn, shard in zip(self._conns, shards, strict=True) if shard]
        for conn, shard in busy:
            conn.send((kind, shard))
        out: list[Any] = []
        for conn, _ in busy:
            out.extend(self._receive(conn))
        return out

    def close(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for proc in self._procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()
        self._conns, self._procs = [], []
