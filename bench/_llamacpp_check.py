"""The ``openai:`` backend against a real llama.cpp server, compared with ``hf:`` on the same
weights (run by ``bench/llamacpp_check.sh``, which builds the server and converts the model).

``build DIR``: a tiny Llama built here (random weights, f32) with a tokenizer trained with
``tokenizers``: a character-level BPE with byte fallback and Llama-2's decoder (whose Strip
drops a decoded text's first space). Why character-level: the converter
writes a ``tokenizers`` BPE vocabulary as a SentencePiece vocabulary with every score equal
(``LlamaHfVocab``), so llama.cpp merges leftmost-first where ``tokenizers`` merges by rank;
with no merges both tokenise every text the same way, and characters outside the vocabulary
(中, １) become byte-fallback pieces on both sides.

``check DIR GGUF SERVER_PYTHON``: starts ``python -m llama_cpp.server`` on the GGUF, runs the
same items and conditions through ``hf:DIR`` and ``openai:`` and prints per-row max
|Δ log-prob|, chosen-option agreement, greedy outputs, then kills the server with SIGKILL in
the middle of a fresh run, restarts it, reruns on the same cache and compares the table with
the uninterrupted one.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

CHARS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;?!'\"()-\n"
)  # fmt: skip
CAPITALS = [("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Japan", "Tokyo"),
            ("Egypt", "Cairo"), ("Peru", "Lima"), ("Kenya", "Nairobi"), ("Chile", "Santiago")]  # fmt: skip


def build(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, processors, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    # The alphabet is learnt by a BpeTrainer; the vocabulary is then <unk> <s> </s>, the 256
    # byte-fallback pieces (ordinary tokens, so that decoding writes them) and the alphabet.
    specials = ["<unk>", "<s>", "</s>"]
    normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    learner = Tokenizer(models.BPE(unk_token="<unk>"))
    learner.normalizer = normalizer
    alphabet = sorted(set(CHARS.replace(" ", "▁")))
    trainer = trainers.BpeTrainer(
        vocab_size=len(specials) + len(alphabet),  # the alphabet only: no merges (see above)
        special_tokens=specials,
        initial_alphabet=alphabet,
        show_progress=False,
    )
    corpus = [f"The capital of {c} is {k}." for c, k in CAPITALS] + [CHARS]
    learner.train_from_iterator(corpus, trainer)
    learnt = sorted((t for t in learner.get_vocab() if t not in specials), key=learner.token_to_id)
    pieces = specials + [f"<0x{b:02X}>" for b in range(256)] + learnt
    vocab = {t: i for i, t in enumerate(pieces)}
    tok = Tokenizer(
        models.BPE(vocab=vocab, merges=[], unk_token="<unk>", byte_fallback=True, fuse_unk=True)
    )
    tok.normalizer = normalizer
    tok.add_special_tokens(specials)
    # Llama-2's decoder, Strip included: a text decoded alone loses its first space, so
    # new tokens decoded without the prompt would lose a leading one (issue 43).
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
         decoders.Strip(" ", 1, 0)]
    )  # fmt: skip
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    fast.save_pretrained(out)
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.update(add_bos_token=True, add_eos_token=False)
    cfg_path.write_text(json.dumps(cfg, indent=2))
    config = LlamaConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=1024, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2,
        tie_word_embeddings=False, initializer_range=0.5,
    )  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    with torch.no_grad():  # byte pieces get logit 0, far below the best character's, so
        model.lm_head.weight[3:259] = 0.0  # greedy text is printable (see _compare)
    model.save_pretrained(out, safe_serialization=True)
    print(
        f"built {out}: vocab {tok.get_vocab_size()} ({len(learnt)} learnt characters, 256 bytes), merges 0, f32"
    )


# -- the check ---------------------------------------------------------------------------------
def _items() -> list[Any]:
    from steadyeval import Item

    items = []
    for i, (country, capital) in enumerate(CAPITALS * 3):
        others = [k for _, k in CAPITALS if k != capital][i % 5 : i % 5 + 3]
        opts = [capital, *others]
        opts = opts[i % 4 :] + opts[: i % 4]
        items.append(Item(f"cap{i}", f"What is the capital of {country}? (v{i // 8})",
                          options=tuple(opts), gold_options=(opts.index(capital),)))  # fmt: skip
    wide = [("中国", "日本", "한국"), ("１２３", "４５６", "789"), ("café", "cafe", "caffè"),
            ("Zürich", "Zurich", "Zuerich")]  # fmt: skip
    for j, opts in enumerate(wide * 2):
        items.append(Item(f"wide{j}", f"Which one is spelled right? (v{j // 4})",
                          options=opts, gold_options=(0,)))  # fmt: skip
    return items


def _conditions() -> list[Any]:
    from steadyeval import FORMATS, TEMPLATES, Condition, Generation

    return [
        Condition(name="option", template=TEMPLATES["qa"], format=FORMATS["mc"],
                  scoring="option-logprob"),
        Condition(name="letter", template=TEMPLATES["qa"], format=FORMATS["mc"],
                  scoring="letter-logprob"),
        Condition(name="greedy", template=TEMPLATES["qa"], format=FORMATS["free"],
                  generation=Generation(max_new_tokens=16, stop=())),
    ]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(server_python: str, gguf: str, port: int) -> subprocess.Popen[bytes]:
    cmd = [server_python, "-m", "llama_cpp.server", "--model", gguf, "--n_ctx", "1024",
           "--logits_all", "true", "--host", "127.0.0.1", "--port", str(port),
           "--n_threads", "2", "--verbose", "false", "--type_k", "0", "--type_v", "0"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1):
                return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(
                    f"the server exited with {proc.returncode}: {' '.join(cmd)}"
                ) from None
            time.sleep(0.2)
    raise SystemExit("the server did not start within 120 s")


def _run(model: str, cache: Path) -> Any:
    from steadyeval import RunOptions, run

    return run(_items(), _conditions(), [model],
               options=RunOptions(cache=cache, progress=False, batch_size=16))  # fmt: skip


def _rows(table: Any) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["item_id"], r["condition"]): r for r in table.to_pylist()}


def _compare(hf: Any, api: Any) -> None:
    """Rows side by side. Greedy outputs are compared as text; the model's byte pieces have
    logit 0 so that random weights do not write invalid UTF-8, which the two sides decode
    differently (``tokenizers`` writes U+FFFD for each byte of the run, llama.cpp drops
    them) although the tokens are the same. Options spelled by byte pieces are scored."""
    a, b = _rows(hf.table), _rows(api.table)
    assert a.keys() == b.keys(), "the two runs have different rows"
    worst: dict[str, float] = {}
    agree = {"option": 0, "letter": 0}
    n = {"option": 0, "letter": 0}
    same_text = n_gen = approx = 0
    differ: list[tuple[str, str, str]] = []
    print(f"{'item':8} {'condition':9} {'max |Δ log-prob|':>17}  chosen hf/api  approx")
    for key in sorted(a):
        x, y = a[key], b[key]
        cond = key[1]
        approx += bool(y["approximate"])
        if cond == "greedy":
            n_gen += 1
            same_text += x["output"] == y["output"]
            if x["output"] != y["output"]:
                differ.append((key[0], x["output"], y["output"]))
            continue
        d = max(abs(p - q) for p, q in zip(x["option_logprobs"], y["option_logprobs"],
                                           strict=True))  # fmt: skip
        worst[cond] = max(worst.get(cond, 0.0), d)
        n[cond] += 1
        agree[cond] += x["parsed_option"] == y["parsed_option"]
        if key[0].startswith("wide") or key[0] in ("cap0", "cap1") or d > 1e-3:
            print(f"{key[0]:8} {cond:9} {d:17.2e}  {x['parsed_option']}/{y['parsed_option']}"
                  f"            {y['approximate']}")  # fmt: skip
    print("...")
    for cond in ("option", "letter"):
        print(f"{cond:7} rows {n[cond]:3}: max |Δ log-prob| {worst[cond]:.2e}; "
              f"same chosen option {agree[cond]}/{n[cond]}")  # fmt: skip
    spaces = sum(p.strip() == q.strip() for _, p, q in differ)
    lead = [sum(r["output"][:1].isspace() for k, r in rows.items() if k[1] == "greedy")
            for rows in (a, b)]  # fmt: skip
    print(f"greedy outputs starting with whitespace: hf {lead[0]}, openai {lead[1]}")
    print(f"greedy  rows {n_gen:3}: identical outputs {same_text}/{n_gen}; of the others, "
          f"{spaces} differ only in surrounding whitespace")  # fmt: skip
    for item, out_hf, out_api in differ:
        print(f"  {item}: hf {out_hf!r} / openai {out_api!r}")
    print(f"rows flagged approximate (openai): {approx}")
    tokens = sum(x["n_input_tokens"] == b[k]["n_input_tokens"] for k, x in a.items())
    print(f"input token counts equal: {tokens}/{len(a)}")


def _count(cache: Path) -> int:
    if not cache.exists():  # never create it: the run does
        return 0
    try:
        with sqlite3.connect(cache) as db:
            return int(db.execute("select count(*) from responses").fetchone()[0])
    except sqlite3.Error:
        return 0


def _kill_and_rerun(server_python: str, gguf: str, work: Path, clean: Any, port: int) -> None:
    """The same model as the uninterrupted run (same port; retry options are run-only, so
    they change neither the ``model`` column nor a request key), a fresh cache."""
    model = f"openai:tiny?base_url=http://127.0.0.1:{port}/v1&max_retries=1&backoff_base=0.05"
    cache = work / "killed.sqlite"
    total = clean.table.num_rows
    proc = _start(server_python, gguf, port)
    killed: list[int] = []

    def killer() -> None:
        while proc.poll() is None:
            done = _count(cache)
            if done >= total // 3:
                os.kill(proc.pid, signal.SIGKILL)
                killed.append(done)
                return
            time.sleep(0.02)

    threading.Thread(target=killer, daemon=True).start()
    try:
        _run(model, cache)
        print("the run ended before the kill")
    except Exception as exc:  # the run stops with the server's (connection) error
        print(f"server killed (SIGKILL) with {killed[0]} responses cached; the run stopped: "
              f"{type(exc).__name__}: {str(exc)[:160]}")  # fmt: skip
    proc.wait()
    proc = _start(server_python, gguf, port)
    try:
        again = _run(model, cache)
    finally:
        proc.terminate()
        proc.wait()
    a, b = clean.table, again.table
    differ = [c for c in a.column_names if not a[c].equals(b[c])]
    print(f"rerun after the kill: {b.num_rows} rows; table identical to the uninterrupted "
          f"run: {a.schema == b.schema and not differ}"
          + (f" (columns that differ: {', '.join(differ)})" if differ else ""))  # fmt: skip
    for c in differ:
        x, y = _floats(a[c].to_pylist()), _floats(b[c].to_pylist())
        if x is None or y is None or len(x) != len(y):
            print(f"  {c}: not floats, or of different lengths")
            continue
        print(f"  {c}: max |difference| {max(abs(p - q) for p, q in zip(x, y, strict=True)):.2e}")


def _floats(values: list[Any]) -> list[float] | None:
    """Every number of a column (lists flattened); None if there is anything else."""
    out: list[float] = []
    for v in values:
        for x in v if isinstance(v, list) else [v]:
            if x is None:
                continue
            if not isinstance(x, float | int) or isinstance(x, bool):
                return None
            out.append(float(x))
    return out


def check(model_dir: Path, gguf: str, server_python: str) -> None:
    work = model_dir.parent
    t0 = time.perf_counter()
    hf = _run(f"hf:{model_dir}", work / "hf.sqlite")
    t_hf = time.perf_counter() - t0
    port = _free_port()
    proc = _start(server_python, gguf, port)
    try:
        t0 = time.perf_counter()
        api = _run(f"openai:tiny?base_url=http://127.0.0.1:{port}/v1", work / "api.sqlite")
        t_api = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait()
    print(f"{hf.table.num_rows} rows per model; hf: {t_hf:.1f} s, openai (llama.cpp): "
          f"{t_api:.1f} s")  # fmt: skip
    _compare(hf, api)
    _kill_and_rerun(server_python, gguf, work, api, port)


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(Path(sys.argv[2]))
    else:
        check(Path(sys.argv[2]), sys.argv[3], sys.argv[4])
