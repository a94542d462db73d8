"""Run documented shell commands: ``steadyeval`` commands in this process (the CLI through
click's test runner, so torch and the tiny models load once), anything else, and every
command that needs a hub name, through ``bash`` with a local hub cache (``HF_HOME``) laid
out as ``huggingface_hub`` and ``datasets`` lay theirs out, offline."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ._doc_blocks import argv_and_redirect


def hub_model(home: Path, repo_id: str, folder: Path) -> str:
    """Lay ``folder`` out as hub model ``repo_id`` in the hub cache under ``home``
    (``HF_HOME``): ``hub/models--OWNER--NAME/snapshots/<rev>/`` and ``refs/main``.
    Returns the revision (40 hex digits, from the name)."""
    rev = hashlib.sha1(repo_id.encode()).hexdigest()
    repo = home / "hub" / ("models--" + repo_id.replace("/", "--"))
    shutil.copytree(folder, repo / "snapshots" / rev)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(rev)
    return rev


def hub_dataset(home: Path, name: str, config: str, split: str, rows: list[dict[str, Any]]) -> None:
    """Lay ``rows`` out as ``datasets.load_dataset(name, config, split=split)`` finds a
    data set it loaded before, offline: ``datasets/OWNER___NAME/CONFIG/0.0.0/<hash>/``
    with ``dataset_info.json`` and ``NAME-SPLIT.arrow`` (prepared by the ``json`` builder
    under a cache of its own, so nothing here reads ``HF_HOME``)."""
    import datasets

    build = home / "build" / name.replace("/", "___") / config
    build.mkdir(parents=True)
    source = build / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    datasets.load_dataset("json", data_files={split: str(source)}, cache_dir=str(build / "c"))
    (prepared,) = {p.parent for p in (build / "c").rglob("dataset_info.json")}
    short = name.split("/")[-1]
    target = home / "datasets" / name.replace("/", "___") / config / "0.0.0" / prepared.name
    target.mkdir(parents=True)
    for arrow in prepared.glob("*.arrow"):
        shutil.copy(arrow, target / arrow.name.replace("json-", f"{short}-", 1))
    info = json.loads((prepared / "dataset_info.json").read_text(encoding="utf-8"))
    info.update(config_name=config, dataset_name=short, builder_name=short)
    (target / "dataset_info.json").write_text(json.dumps(info), encoding="utf-8")


def mmlu_rows(shared: Path, subject: str, split: str) -> list[dict[str, Any]]:
    """One MMLU subject from the shared CSVs, as ``cais/mmlu``'s rows."""
    path = shared / "mmlu" / "hendrycks_format" / split / f"{subject}_{split}.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        return [
            {"question": q, "subject": subject, "choices": [a, b, c, d], "answer": "ABCD".index(x)}
            for q, a, b, c, d, x in csv.reader(fh)
        ]


def cb_rows(shared: Path) -> list[dict[str, Any]]:
    """FewGLUE's CB examples as ``super_glue``'s ``cb`` rows (labels as class ids)."""
    labels = ["entailment", "contradiction", "neutral"]
    path = shared / "fewglue" / "FewGLUE" / "CB" / "train.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [
        {
            "premise": r["premise"],
            "hypothesis": r["hypothesis"],
            "idx": r["idx"],
            "label": labels.index(r["label"]),
        }
        for r in rows
    ]


@contextmanager
def hub_cache(home: Path) -> Iterator[None]:
    """Point ``huggingface_hub`` and ``datasets`` at the hub cache under ``home`` for what
    runs in this process: the variables a new process reads (``HF_HOME``, ...) and the
    module constants both libraries set from them on import (their functions read the
    constants when called)."""
    import datasets.config
    import huggingface_hub.constants

    with pytest.MonkeyPatch.context() as mp:
        for name, value in hub_env(home).items():
            mp.setenv(name, value)
        mp.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(home / "hub"))
        mp.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
        mp.setattr(datasets.config, "HF_DATASETS_CACHE", home / "datasets")
        mp.setattr(datasets.config, "HF_HUB_OFFLINE", True)
        mp.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
        yield


def hub_env(home: Path) -> dict[str, str]:
    return {
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(home / "hub"),
        "HF_DATASETS_CACHE": str(home / "datasets"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }


@dataclass
class Shell:
    """A page's commands, run in order in one working directory.

    ``steadyeval`` commands run in this process (the CLI through click's test runner), so
    torch and the models load once; others through ``bash``. ``hub``: the names only a hub
    cache resolves and a function giving that cache's ``HF_HOME`` (made on first use); a
    command that mentions one, or names a config file that does, runs with that cache.
    """

    cwd: Path
    hub_names: tuple[str, ...] = ()
    hub_home: Callable[[], Path] | None = None
    log: list[str] = field(default_factory=list)

    def run(self, command: str) -> tuple[int, str]:
        """Run ``command``: its exit status and output (stdout and stderr)."""
        start = time.perf_counter()
        home = self.hub_home() if self.hub_home and self.needs_hub(command) else None
        parsed = argv_and_redirect(command)
        if parsed is not None and parsed[0][:1] == ["steadyeval"]:
            argv, redirect = parsed
            with hub_cache(home) if home else nullcontext():
                how, (rc, output) = "in process", self._in_process(argv[1:], redirect)
        else:
            how, (rc, output) = "bash", self._bash(command, home)
        hub = " (hub cache)" if home else ""
        self.log.append(f"{time.perf_counter() - start:6.1f} s  {how}{hub}: {command}")
        return rc, output

    def needs_hub(self, command: str) -> bool:
        """Whether ``command``, or a config file it names, mentions a hub stand-in."""
        texts = [command]
        for token in command.split():
            path = self.cwd / token
            if path.suffix in (".yaml", ".yml", ".json") and path.is_file():
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
        return any(name in text for name in self.hub_names for text in texts)

    def _in_process(self, args: list[str], redirect: str | None) -> tuple[int, str]:
        from click.testing import CliRunner

        from steadyeval.cli import main

        before = Path.cwd()
        os.chdir(self.cwd)
        try:
            result = CliRunner().invoke(main, args, catch_exceptions=True)
            if redirect is not None:
                (self.cwd / redirect).write_text(result.stdout, encoding="utf-8")
        finally:
            os.chdir(before)
        output = result.output
        if result.exc_info is not None and not isinstance(result.exception, SystemExit):
            output += "".join(traceback.format_exception(*result.exc_info))
        return result.exit_code, output

    def _bash(self, command: str, home: Path | None) -> tuple[int, str]:
        env = {**os.environ, **(hub_env(home) if home else {})}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        return done.returncode, done.stdout + done.stderr
