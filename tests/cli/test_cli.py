from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from steadyeval.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[list[str]]:
    """Every command and subcommand (the groups load their commands lazily: ``.commands``
    of the top group is empty, so walk ``list_commands``/``get_command``)."""
    import click

    out: list[list[str]] = []

    def walk(group: click.Group, prefix: list[str]) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            out.append([*prefix, name])
            if isinstance(cmd, click.Group):
                walk(cmd, [*prefix, name])

    walk(main, [])
    return out


@pytest.mark.parametrize("command", [[], *_commands()], ids=lambda c: " ".join(c) or "main")
def test_every_command_has_help_and_is_documented(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    docs = (ROOT / "docs" / "cli.md").read_text()
    assert f"steadyeval {' '.join(command)}".strip() in docs


def _write_items(path: Path, n: int) -> Path:
    rows = [
        {
            "id": f"q{i}",
            "question": f"What is item {i}?",
            "options": ["red", "green", "blue"],
            "answer": i % 3,
        }
        for i in range(n)
    ] + [{"id": "free", "question": "Name a river.", "answer": "Nile"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``steadyeval ARGS`` under ``env``, in this process (torch and the model load once per
    worker; the killed run below is a real process)."""
    result = CliRunner().invoke(main, list(args), env=env)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "STEADYEVAL_CACHE": str(tmp_path / "cache.sqlite"), "HF_HUB_OFFLINE": "1"}


def test_run_flags_alone_then_warm_rerun_from_cache(
    tiny_gpt2: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    data = _write_items(tmp_path / "items.jsonl", 6)
    dry = _cli("run", "--model", f"hf:{tiny_gpt2}", "--data", str(data), "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    assert re.search(r"\bto send +19\b", dry.stdout), dry.stdout  # 6 items × 3 options + 1
    first = _cli(
        "run",
        "--model",
        f"hf:{tiny_gpt2}",
        "--data",
        str(data),
        "--out",
        str(tmp_path / "a"),
        env=env,
    )
    assert first.returncode == 0, first.stderr
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert s["n_rows"] == 7 and s["n_skipped"] == 7 and s["plan"]["model_calls"] == 19
    again = _cli(
        "run",
        "--model",
        f"hf:{tiny_gpt2}",
        "--data",
        str(data),
        "--out",
        str(tmp_path / "b"),
        env=env,
    )
    assert again.returncode == 0, again.stderr
    s2 = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert s2["plan"]["model_calls"] == 0 and s2["plan"]["cache_hits"] == 19
    assert (tmp_path / "a" / "results.parquet").read_bytes() == (
        tmp_path / "b" / "results.parquet"
    ).read_bytes()


def test_bad_config_names_key_line_and_allowed(tmp_path: Path, env: dict[str, str]) -> None:
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        "data: items.jsonl\nmodels: [hf:x]\nconditions:\n  - name: a\n    scorng: generate\n"
    )
    r = CliRunner().invoke(main, ["run", str(cfg), "--dry-run"])
    assert r.exit_code == 2
    assert f"{cfg}, line 5: conditions.0.scorng: unknown key; allowed keys here:" in r.output
    assert "scoring" in r.output
    cfg.write_text(
        "data: items.jsonl\nmodels: [hf:x]\nconditions:\n  - name: a\n    scoring: guess\n"
    )
    r = CliRunner().invoke(main, ["run", str(cfg), "--dry-run"])
    assert (
        "line 5: conditions.0.scoring: unknown scoring 'guess'; choose from generate," in r.output
    )


def test_unknown_model(tmp_path: Path, env: dict[str, str]) -> None:
    data = _write_items(tmp_path / "items.jsonl", 1)
    for extra in ([], ["--dry-run"]):
        r = CliRunner().invoke(main, ["run", "--model", "hf:/nope", "--data", str(data), *extra])
        assert r.exit_code == 2 and "does not exist" in r.output


def _count(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def test_kill_9_mid_run_then_resume_gives_the_same_table(
    tiny_gpt2: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    data = tmp_path / "many.jsonl"
    data.write_text(
        "\n".join(
            json.dumps({"id": f"g{i}", "question": f"Tell me about {i}.", "answer": "x"})
            for i in range(256)
        )
        + "\n"
    )
    cfg = tmp_path / "gen.yaml"
    cfg.write_text(
        f"data: {data}\nmodels: ['hf:{tiny_gpt2}']\nconditions:\n  - name: gen\n"
        "    format: free\n    generation: {max_new_tokens: 24, stop: []}\n"
    )
    cache = Path(env["STEADYEVAL_CACHE"])
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "steadyeval",
            "run",
            str(cfg),
            "--out",
            str(tmp_path / "killed"),
            "--no-progress",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while _count(cache) < 1:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    held = _count(cache)  # at least one: the loop above waited for it
    assert held < 256, "the run finished before it was killed: nothing left to resume"
    resumed = _cli("run", str(cfg), "--out", str(tmp_path / "resumed"), env=env)
    assert resumed.returncode == 0, resumed.stderr
    s = json.loads((tmp_path / "resumed" / "summary.json").read_text())
    assert s["plan"]["cache_hits"] == held and s["plan"]["model_calls"] == 256 - held
    fresh_env = {**env, "STEADYEVAL_CACHE": str(tmp_path / "fresh.sqlite")}
    fresh = _cli("run", str(cfg), "--out", str(tmp_path / "fresh"), env=fresh_env)
    assert fresh.returncode == 0, fresh.stderr
    assert pq.read_table(tmp_path / "resumed" / "results.parquet").equals(
        pq.read_table(tmp_path / "fresh" / "results.parquet")
    )


def test_cache_info_and_clear(tmp_path: Path) -> None:
    from steadyeval.cache import ResponseCache
    from steadyeval.requests import GenerateResponse

    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as c:
        c.put_many(
            [
                ("k1", "hf:a", "generate", GenerateResponse("x")),
                ("k2", "hf:b", "generate", GenerateResponse("y")),
            ]
        )
    r = CliRunner().invoke(main, ["cache", "info", "--cache", str(path)])
    assert r.exit_code == 0 and "2 responses" in r.output and "hf:a" in r.output
    r = CliRunner().invoke(
        main, ["cache", "clear", "--cache", str(path), "--model", "hf:a", "--yes"]
    )
    assert "deleted 1 responses" in r.output
    r = CliRunner().invoke(main, ["cache", "info", "--cache", str(path)])
    assert "1 responses" in r.output and "hf:a" not in r.output
