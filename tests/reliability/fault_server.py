"""A FAULT-INJECTING OpenAI-compatible server for tests only — a test double, not a model.

It is the fake server of ``tests/models/fake_openai_server.py`` (the same deterministic toy
model, the same transport faults: 500/503, 429 with ``Retry-After``, no reply, a body cut
short, a dropped connection; the same counts of attempts and replies per request body) with
the faults of issue 18 added:

* ``drip`` — a 200 whose body arrives one byte every ``Fault.seconds`` and would take minutes
  to finish: each read succeeds, so only a total deadline per request ends it;
* ``lengths`` — ``token_logprobs`` one entry shorter than ``tokens`` (malformed);
* ``no-choices`` — ``"choices": []`` (malformed);
* ``missing-fields`` — the choice without its ``text`` and ``logprobs`` (chat: without its
  ``message``, ``logprobs: null``) (malformed);
* ``not-object`` — a JSON list instead of an object (malformed);
* ``short`` — every ``logprobs`` list one token short, ``usage`` unchanged: well formed, but
  it covers fewer characters of the prompt than asked (an *approximate* reply).

A mangled reply is still a 200 the client pays for: it is counted in ``record.successes``
(paid replies) and in :attr:`FaultServer.mangled`; :meth:`FaultServer.good` counts the
usable ones.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from tests.models.fake_openai_server import (
    FakeOpenAIServer,
    Fault,
    ServerConfig,
    _Handler,
    _prompt_text,
    body_key,
)

__all__ = ["MANGLING", "Fault", "FaultServer", "ServerConfig", "body_key"]

#: Faults that answer 200 with a changed body (the toy model's answer, mangled).
MANGLING = frozenset({"lengths", "no-choices", "missing-fields", "not-object", "short"})


class FaultServer(FakeOpenAIServer):
    """``with FaultServer(ServerConfig(faults=...)) as srv: ... srv.url``."""

    def __init__(self, config: ServerConfig | None = None) -> None:
        super().__init__(config)
        self.mangled: Counter[str] = Counter()  # 200 replies sent mangled, per request body
        self.drips: list[str] = []  # per drip: "aborted" (the client hung up) or "finished"
        owner = self

        class Handler(_FaultHandler):
            pass

        Handler.owner = owner
        self._httpd.RequestHandlerClass = Handler  # the same socket, the extended handler
        self._httpd.block_on_close = False  # stop() never waits for a held or dripping reply

    def reset(self) -> None:
        super().reset()
        with self._lock:
            self.mangled = Counter()
            self.drips = []

    def good(self, probe_prompt: str) -> Counter[str]:
        """Usable replies per request body (paid replies that were not mangled), leaving out
        capability probes."""
        paid = self.work_successes(probe_prompt)
        with self._lock:
            return Counter({k: n - self.mangled[k] for k, n in paid.items() if n > self.mangled[k]})

    def n_mangled(self, probe_prompt: str) -> int:
        self.settle()
        with self._lock:
            return sum(
                n
                for k, n in self.mangled.items()
                if _prompt_text(self.record.bodies[k]) != probe_prompt
            )


def mangle(reply: dict[str, Any], kind: str) -> Any:
    """The toy model's ``reply`` changed by the mangling fault ``kind``."""
    if kind == "not-object":
        return [reply]
    out = json.loads(json.dumps(reply))
    if kind == "no-choices":
        out["choices"] = []
        return out
    choice = out["choices"][0]
    lp = choice.get("logprobs")
    if kind == "missing-fields":
        choice.pop("text", None)
        if choice.pop("message", None) is not None:
            choice["logprobs"] = None
        else:
            choice.pop("logprobs", None)
    elif kind == "lengths" and isinstance(lp, dict) and "token_logprobs" in lp:
        lp["token_logprobs"] = lp["token_logprobs"][:-1]
    elif kind == "lengths":  # a chat reply: its first token lists no alternatives
        choice["logprobs"] = {"content": [{"token": "A", "logprob": -1.0}]}
    elif kind == "short" and isinstance(lp, dict) and "tokens" in lp:
        for name in ("tokens", "token_logprobs", "text_offset", "top_logprobs"):
            lp[name] = lp[name][:-1]
    return out


class _FaultHandler(_Handler):
    owner: FaultServer
    _mangle: str | None = None

    def do_POST(self) -> None:
        self._mangle = None
        super().do_POST()

    def _fault(self, fault: Fault) -> bool:
        if fault.kind in MANGLING:
            self._mangle = fault.kind  # answered by _answer, then mangled
            return False
        if fault.kind == "drip":
            self._drip(fault.seconds or 0.05)
            return True
        return super()._fault(fault)

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, reply = super()._answer(path, body)
        if status != 200 or self._mangle is None:
            return status, reply
        with self.owner._lock:
            self.owner.mangled[body_key(body)] += 1
        return status, mangle(reply, self._mangle)

    def _drip(self, every: float) -> None:
        """A 200 with a 4 kB body sent one byte every ``every`` seconds (minutes in all),
        until it is done or the client hangs up."""
        raw = json.dumps({"choices": [{"text": "x", "index": 0}], "pad": "y" * 4000}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        outcome = "finished"
        try:
            self.wfile.flush()
            for i in range(len(raw)):
                self.wfile.write(raw[i : i + 1])
                self.wfile.flush()
                time.sleep(every)
        except OSError:
            outcome = "aborted"
        self.close_connection = True
        with self.owner._lock:
            self.owner.drips.append(outcome)
