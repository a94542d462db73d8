"""A FAKE OpenAI-compatible HTTP server for tests only — a test stand-in, not a model.

It listens on 127.0.0.1 only, serves ``/v1/completions`` (with ``echo`` + ``logprobs`` +
``text_offset``) and ``/v1/chat/completions`` (with ``logprobs`` + ``top_logprobs``) in the
OpenAI schema, and answers from a deterministic TOY "model": text is cut into toy tokens
(words and punctuation, each with its leading whitespace), and the log-probability of a token
after a prefix is a hash of (prefix, token) — stable, meaningless, and not normalised.
Generation takes the best of a small vocabulary at each step (or samples with the request's
seed).

It can inject faults per request (HTTP 500/503, 429 with Retry-After, a reply that never
comes, a body cut short, a dropped connection), counts attempts and successful replies per
request body, and stops by itself after ``max_requests`` requests or ``max_seconds``.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VOCAB = (
    " A", " B", " C", " D", "A", "B", "C", "D", " red", " green", " blue", " Paris",
    " no", " answer", " the", " is", " of", ".", ",", "\n", " yes", " river", " Nile",
    " x", "<|end|>",
)  # fmt: skip
END = "<|end|>"
_TOKEN = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")


def toy_tokens(text: str) -> list[str]:
    """Toy tokenization: words and punctuation with their leading whitespace."""
    return _TOKEN.findall(text)


def toy_logprob(prefix: str, token: str) -> float:
    """The toy model's log-probability of ``token`` after ``prefix``: in (-8.05, -0.05]."""
    digest = hashlib.sha256(f"{prefix}\x00{token}".encode()).digest()
    return -(0.05 + 8.0 * int.from_bytes(digest[:8], "little") / 2**64)


def toy_top(prefix: str, n: int) -> list[tuple[str, float]]:
    """The ``n`` best vocabulary tokens after ``prefix``, best first."""
    scored = sorted(((t, toy_logprob(prefix, t)) for t in VOCAB), key=lambda p: (-p[1], p[0]))
    return scored[:n]


def toy_generate(
    prefix: str,
    max_tokens: int,
    *,
    temperature: float,
    seed: int | None,
    stop: list[str],
    avoid_repeats: bool = False,
) -> tuple[list[str], str]:
    """Generated tokens and the finish reason; stop strings cut the text (not included).
    ``avoid_repeats``: greedy skips tokens already written (a repetition penalty)."""
    rng = random.Random(seed)
    out: list[str] = []
    text = ""
    for _ in range(max_tokens):
        if temperature == 0:
            ranked = [t for t, _ in toy_top(prefix + text, len(VOCAB))]
            tok = next((t for t in ranked if not (avoid_repeats and t in out)), ranked[0])
        else:
            weights = [pow(2.718281828, toy_logprob(prefix + text, t) / temperature) for t in VOCAB]
            tok = rng.choices(VOCAB, weights=weights)[0]
        if tok == END:
            return out, "stop"
        out.append(tok)
        text += tok
        hits = [text.index(s) for s in stop if s and s in text]
        if hits:
            cut = min(hits)
            kept, acc = [], ""
            for t in out:  # keep the text up to the stop string (may cut a token)
                if len(acc) + len(t) > cut:
                    if cut > len(acc):
                        kept.append(t[: cut - len(acc)])
                    break
                kept.append(t)
                acc += t
            return kept, "stop"
    return out, "length"


@dataclass(frozen=True)
class Fault:
    """``kind``: ``500``, ``503``, ``429``, ``timeout`` (no reply; the connection is closed
    after ``seconds``), ``truncate`` (half the body, Content-Length of the whole),
    ``truncate-noclen`` (half the body, no Content-Length, connection closed), ``drop``
    (the connection is closed without a reply), ``400-echo-key`` (a 400 whose message
    echoes the request's Authorization header, like a misbehaving proxy)."""

    kind: str
    retry_after: str | None = None  # the Retry-After header of a 429
    retry_after_ms: str | None = None
    seconds: float = 0.0


FaultPlan = Callable[[dict[str, Any], int], Fault | None]


@dataclass
class ServerConfig:
    require_key: str | None = None  # the key a request must carry (401 otherwise)
    echo: bool = True  # completions support echo + logprobs
    reject_max_tokens_0: bool = False  # answer 400 to max_tokens=0 (as some servers do)
    bos: str | None = None  # list this BOS token first when echoing (shifts text offsets)
    chat_logprobs: bool = True
    delay: float = 0.0  # seconds per request
    # requests after this many wait for ``srv.released`` (set it) before they are answered:
    # a run is still mid-batch when a test acts, however slow the machine
    hold_after: int | None = None
    faults: FaultPlan | None = None  # (request body, attempt index) -> fault or None
    max_requests: int = 5000
    max_seconds: float = 120.0
    # Server modes (tests/models/fake_openai_modes.py): openai | llama-cpp-python | vllm.
    mode: str = "openai"
    logits_all: bool = True  # llama-cpp-python: started with --logits_all true
    idle_close: float | None = None  # close idle keep-alive connections after this long
    n_ctx: int = 48  # llama-cpp-python: max_tokens=0 generates up to here
    # A SCRIPTED reasoning model for chat: last user message -> (reasoning_content or None,
    # content), replacing the toy model's generation (tests/core/test_reasoning_runs.py).
    reasoner: Callable[[str], tuple[str | None, str]] | None = None


def body_key(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True)


@dataclass
class Record:
    attempts: Counter[str] = field(default_factory=Counter)
    successes: Counter[str] = field(default_factory=Counter)
    bodies: dict[str, dict[str, Any]] = field(default_factory=dict)
    times: dict[str, list[tuple[float, str]]] = field(default_factory=lambda: defaultdict(list))
    in_flight: int = 0
    max_in_flight: int = 0
    n_requests: int = 0
    auth_headers: list[str | None] = field(default_factory=list)


class FakeOpenAIServer:
    """``with FakeOpenAIServer(ServerConfig()) as srv: ... srv.url`` (``http://127.0.0.1:P/v1``)."""

    def __init__(self, config: ServerConfig | None = None) -> None:
        self.config = config or ServerConfig()
        self.record = Record()
        self._lock = threading.Lock()
        self.released = threading.Event()  # opens the gate of ``hold_after``
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._timer = threading.Timer(self.config.max_seconds, self.stop)
        self._timer.daemon = True
        self._stopped = False

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        self._timer.start()
        return self

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._timer.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        self.settle()
        with self._lock:
            self.record = Record()

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until no request is being handled (a client can read a reply a moment
        before the handler that wrote it has counted it)."""
        deadline = time.monotonic() + timeout
        while self.record.in_flight and time.monotonic() < deadline:
            time.sleep(0.005)

    def work_successes(self, probe_prompt: str) -> Counter[str]:
        """Successful replies per request body, leaving out capability probes."""
        self.settle()
        with self._lock:
            return Counter(
                {
                    k: n
                    for k, n in self.record.successes.items()
                    if _prompt_text(self.record.bodies[k]) != probe_prompt
                }
            )


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that vanished mid-request (a killed run, a client timeout) is expected
        here; anything else is re-raised into the log as usual."""
        import sys

        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def _prompt_text(body: dict[str, Any]) -> str:
    if "prompt" in body:
        return str(body["prompt"])
    msgs = body.get("messages") or []
    return str(msgs[-1]["content"]) if msgs else ""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -- plumbing ----------------------------------------------------------------------
    def _json(
        self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None
    ) -> bool:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(raw)
            self.wfile.flush()
        except OSError:
            return False
        return True

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._json(
            status, {"error": {"message": message, "type": "invalid_request_error"}}, headers
        )

    def setup(self) -> None:
        self.timeout = self.owner.config.idle_close  # a read that waits longer ends it
        super().setup()

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            from tests.models.fake_openai_modes import OWNED_BY

            owner = OWNED_BY[self.owner.config.mode]
            self._json(200, {"object": "list", "data": [{"id": "toy", "owned_by": owner}]})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        owner, cfg = self.owner, self.owner.config
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        key = body_key(body)
        rec = owner.record
        with owner._lock:
            rec.n_requests += 1
            n_req = rec.n_requests
            attempt = rec.attempts[key]
            rec.attempts[key] += 1
            rec.bodies[key] = body
            rec.in_flight += 1
            rec.max_in_flight = max(rec.max_in_flight, rec.in_flight)
            rec.auth_headers.append(self.headers.get("Authorization"))
        try:
            if n_req > cfg.max_requests:
                rec.times[key].append((time.monotonic(), "over-limit"))
                self._error(410, "the fake server's request limit is reached")
                threading.Thread(target=owner.stop, daemon=True).start()
                return
            if cfg.delay:
                time.sleep(cfg.delay)
            if cfg.hold_after is not None and n_req > cfg.hold_after:
                owner.released.wait(cfg.max_seconds)
            fault = cfg.faults(body, attempt) if cfg.faults is not None else None
            rec.times[key].append((time.monotonic(), fault.kind if fault else "ok"))
            if cfg.require_key is not None:
                auth = self.headers.get("Authorization")
                if auth != f"Bearer {cfg.require_key}":
                    self._error(401, "Incorrect API key provided")
                    return
            if fault is not None and self._fault(fault):
                return
            status, reply = self._answer(self.path.rstrip("/"), body)
            if status != 200:
                self._error(status, str(reply["error"]))
                return
            if self._json(200, reply):
                with owner._lock:
                    rec.successes[key] += 1
        finally:
            with owner._lock:
                rec.in_flight -= 1

    def _fault(self, fault: Fault) -> bool:
        """Act out ``fault``; True when the request is finished (not answered)."""
        kind = fault.kind
        if kind in ("500", "503"):
            self._error(int(kind), "the server had an error while processing your request")
        elif kind == "429":
            headers = {}
            if fault.retry_after is not None:
                headers["Retry-After"] = fault.retry_after
            if fault.retry_after_ms is not None:
                headers["retry-after-ms"] = fault.retry_after_ms
            self._error(429, "Rate limit reached for requests", headers)
        elif kind == "timeout":
            time.sleep(fault.seconds)
            self.close_connection = True
        elif kind == "drop":
            self.close_connection = True
        elif kind in ("truncate", "truncate-noclen"):
            raw = json.dumps({"choices": [{"text": "x" * 200}], "pad": "y" * 200}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if kind == "truncate":
                self.send_header("Content-Length", str(len(raw)))
            else:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(raw[: len(raw) // 2])
            self.wfile.flush()
            self.close_connection = True
        elif kind == "400-echo-key":
            self._error(
                400, f"bad request; you sent Authorization: {self.headers.get('Authorization')}"
            )
        else:
            raise ValueError(f"unknown fault {kind!r}")
        return True

    # -- the toy model -----------------------------------------------------------------
    def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if path == "/v1/completions":
            return self._completions(body)
        if path == "/v1/chat/completions":
            return self._chat(body)
        return 404, {"error": f"no route {path}"}

    def _completions(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        cfg = self.owner.config
        if cfg.mode != "openai":
            from tests.models.fake_openai_modes import completions

            return completions(cfg, body)
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            return 400, {"error": "prompt must be a string"}
        echo = bool(body.get("echo"))
        n_lp = body.get("logprobs")
        max_tokens = int(body.get("max_tokens", 16))
        if max_tokens == 0 and (cfg.reject_max_tokens_0 or not echo):
            return 400, {"error": "max_tokens must be at least 1"}
        if echo and n_lp is not None and not cfg.echo:
            return 400, {"error": "echo is not supported together with logprobs"}
        gen, finish = toy_generate(
            prompt,
            max_tokens,
            temperature=float(body.get("temperature", 1.0)),
            seed=body.get("seed"),
            stop=list(body.get("stop") or []),
        )
        p_tokens = ([cfg.bos] if cfg.bos else []) + toy_tokens(prompt)
        text = (prompt if echo else "") + "".join(gen)
        choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": finish}
        if n_lp is not None:
            listed = (p_tokens if echo else []) + gen
            tokens: list[str] = []
            lps: list[float | None] = []
            offs: list[int] = []
            tops: list[dict[str, float] | None] = []
            offset, ctx = (0, "") if echo else (len(prompt), prompt)
            for i, tok in enumerate(listed):
                tokens.append(tok)
                offs.append(offset)
                offset += len(tok)
                is_bos = echo and cfg.bos is not None and i == 0
                if is_bos or (echo and cfg.bos is None and i == 0):
                    lps.append(None)  # nothing to condition on
                    tops.append(None)
                else:
                    lp = toy_logprob(ctx, tok)
                    top = dict(toy_top(ctx, int(n_lp)))
                    top[tok] = lp
                    lps.append(lp)
                    tops.append(top)
                if not is_bos:
                    ctx += tok
            choice["logprobs"] = {
                "tokens": tokens,
                "token_logprobs": lps,
                "top_logprobs": tops,
                "text_offset": offs,
            }
        usage = {"prompt_tokens": len(p_tokens), "completion_tokens": len(gen)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return 200, {
            "id": "cmpl-toy",
            "object": "text_completion",
            "model": body.get("model"),
            "choices": [choice],
            "usage": usage,
        }

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        cfg = self.owner.config
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            return 400, {"error": "messages must be a non-empty list"}
        rendered = "".join(f"<{m['role']}>{m['content']}\n" for m in msgs) + "<assistant>"
        if cfg.mode == "llama-cpp-python":  # no template in the model: llama-2's
            rendered = "".join(f"[INST] {m['content']} [/INST]" for m in msgs)
        if body.get("logprobs") and not cfg.chat_logprobs:
            return 400, {"error": "logprobs are not supported for this model"}
        gen, finish = toy_generate(
            rendered,
            int(body.get("max_tokens", 16)),
            temperature=float(body.get("temperature", 1.0)),
            seed=body.get("seed"),
            stop=list(body.get("stop") or []),
        )
        message: dict[str, Any] = {"role": "assistant", "content": "".join(gen)}
        if cfg.reasoner is not None:
            trace, message["content"] = cfg.reasoner(str(msgs[-1]["content"]))
            if trace is not None:
                message["reasoning_content"] = trace
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "finish_reason": finish,
            "logprobs": None,
        }
        if body.get("logprobs"):
            n_top = int(body.get("top_logprobs") or 0)
            content, ctx = [], rendered
            for tok in gen:
                content.append(
                    {
                        "token": tok,
                        "logprob": toy_logprob(ctx, tok),
                        "top_logprobs": [
                            {"token": t, "logprob": v} for t, v in toy_top(ctx, n_top)
                        ],
                    }
                )
                ctx += tok
            choice["logprobs"] = {"content": content}
        n_in = len(toy_tokens(rendered))
        return 200, {
            "id": "chatcmpl-toy",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": n_in,
                "completion_tokens": len(gen),
                "total_tokens": n_in + len(gen),
            },
        }


def toy_spec(srv: FakeOpenAIServer, extra: str = "", *, fast: str) -> str:
    """The toy model's spec at ``srv`` with the options ``fast`` (``a=1&b=2``); ``extra``
    options override them."""
    options = dict(kv.split("=", 1) for kv in f"{fast}&{extra}".split("&") if kv)
    return f"openai:toy?base_url={srv.url}&" + "&".join(f"{k}={v}" for k, v in options.items())
