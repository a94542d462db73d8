"""CI check: core steadyeval, installed with no extras, works without torch.

In a fresh virtual environment it runs ``pip install .`` (core only, not editable), checks
that torch, transformers, tokenizers, safetensors, huggingface_hub, datasets and accelerate
are absent there, and then, with the installed ``steadyeval`` command:

* ``--help`` of every command and subcommand;
* two ``openai:`` runs against the tests' fake OpenAI-compatible server (127.0.0.1 only,
  started in this process; standard library only);
* ``report`` (HTML and Markdown), ``compare`` and ``cache info`` on those runs;
* an ``hf:`` run and ``tiny-model``, which must fail with one ``error:`` line naming
  ``pip install 'steadyeval[hf]'`` and exit code 2, without a traceback.

Usage: ``python tools/core_install_check.py [--keep]`` from anywhere (``--keep`` leaves the
temporary folder in place and prints its path). Exit code 0 when every step passes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "huggingface_hub",
    "datasets",
    "accelerate",
)
HF_HINT = "need the Hugging Face extra: pip install 'steadyeval[hf]'"

# Run by the venv's python: every command path's --help must exit 0 and print a usage line.
HELP_WALK = r"""
import sys

import click
from click.testing import CliRunner

from steadyeval.cli import main


def walk(cmd, path):
    yield path
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd, info_name=path[-1] if path else "steadyeval")
        for name in cmd.list_commands(ctx):
            yield from walk(cmd.get_command(ctx, name), [*path, name])


paths = list(walk(main, []))
bad = []
for path in paths:
    done = CliRunner().invoke(main, [*path, "--help"])
    if done.exit_code != 0 or "Usage:" not in done.output:
        bad.append(f"steadyeval {' '.join(path)} --help: {done.exit_code}\n{done.output[-800:]}")
print(f"{len(paths)} help pages:", ", ".join(" ".join(p) or "(top)" for p in paths))
print(*bad, sep="\n")
sys.exit(1 if bad else 0)
"""

ABSENT = f"""
import importlib.util
present = [m for m in {HEAVY!r} if importlib.util.find_spec(m) is not None]
print("present:", present)
raise SystemExit(1 if present else 0)
"""


class CheckFailed(Exception):
    """A step's command did not do what the step expects."""


class Checker:
    """Runs the steps, printing each one's name, time and (on failure) output."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.venv = work / "venv"
        self.bin = self.venv / "bin"
        # PYTHONDONTWRITEBYTECODE is dropped too: the install skips byte-compiling, so the
        # first command writes the bytecode of what it imports (into the temporary venv only)
        # and the later ones reuse it.
        dropped = {
            "PYTHONPATH",
            "PYTHONHOME",
            "VIRTUAL_ENV",
            "PYTHONSTARTUP",
            "PYTHONDONTWRITEBYTECODE",
        }
        self.env = {k: v for k, v in os.environ.items() if k not in dropped}
        self.env["STEADYEVAL_CACHE"] = str(work / "cache.sqlite")
        self.env["PATH"] = f"{self.bin}{os.pathsep}{self.env.get('PATH', '')}"

    def step(
        self, name: str, argv: Sequence[str | Path], *, expect_rc: int = 0, timeout: float = 900
    ) -> str:
        t0 = time.perf_counter()
        try:
            done = subprocess.run(
                [str(a) for a in argv],
                cwd=self.work,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            print(f"FAIL {name}: no result after {timeout:.0f} s")
            raise CheckFailed(name) from None
        took = time.perf_counter() - t0
        output = done.stdout + done.stderr
        if done.returncode != expect_rc:
            print(f"FAIL {name} ({took:.1f} s): exit code {done.returncode}, not {expect_rc}")
            print(output[-4000:])
            raise CheckFailed(name)
        print(f"ok   {name} ({took:.1f} s)", flush=True)
        return output

    def install(self) -> None:
        self.step(
            "python -m venv (fresh, no system packages)", [sys.executable, "-m", "venv", self.venv]
        )
        py = self.bin / "python"
        # --no-compile: byte-compiling all of scipy and pandas takes longer
        # than the rest of the install; the modules the commands import compile on first use.
        pip = [py, "-m", "pip", "install", "-q", "--no-compile", ROOT]
        self.step("pip install . (core, not editable)", pip)
        out = self.step("torch and the other hf packages are absent", [py, "-c", ABSENT])
        print("     " + out.strip())
        where = self.step(
            "steadyeval comes from the venv",
            [py, "-c", "import steadyeval; print(steadyeval.__file__)"],
        ).strip()
        if not Path(where).resolve().is_relative_to(self.venv.resolve()):
            print(f"FAIL steadyeval was imported from {where}, not from {self.venv}")
            raise CheckFailed("steadyeval comes from the venv")
        out = self.step("--help of every command", [py, "-c", HELP_WALK])
        print("     " + out.strip().splitlines()[0])

    def use(self, url: str) -> None:
        se = self.bin / "steadyeval"
        data = ROOT / "examples" / "items.jsonl"
        for arm, model in (("a", "toy"), ("b", "toy-b")):
            spec = f"openai:{model}?base_url={url}"
            self.step(
                f"steadyeval run --model {spec}",
                [se, "run", "--model", spec, "--data", data, "--out", f"runs/{arm}"],
            )
        self.step("steadyeval report runs/a", [se, "report", "runs/a"])
        self.step(
            "steadyeval report runs/a --format md", [se, "report", "runs/a", "--format", "md"]
        )
        for made in ("runs/a/report.html", "runs/a/report.md", "runs/b/results.parquet"):
            if not (self.work / made).is_file():
                print(f"FAIL {made} was not written")
                raise CheckFailed(made)
        self.step("steadyeval compare runs/a runs/b", [se, "compare", "runs/a", "runs/b"])
        self.step("steadyeval cache info", [se, "cache", "info"])
        hf_run = [se, "run", "--model", "hf:gpt2", "--data", data, "--out", "runs/hf"]
        tiny = [se, "tiny-model", "tiny", "--arch", "gpt2"]
        for name, argv in (("an hf: run", hf_run), ("tiny-model", tiny)):
            out = self.step(f"{name} says which extra to install", argv, expect_rc=2)
            if HF_HINT not in out or "Traceback" in out:
                print(f"FAIL {name}: expected one line with {HF_HINT!r}, got:\n{out[-2000:]}")
                raise CheckFailed(name)
            print("     " + out.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tests.models.fake_openai_server import FakeOpenAIServer, ServerConfig

    work = Path(tempfile.mkdtemp(prefix="steadyeval-core-"))
    t0 = time.perf_counter()
    try:
        checker = Checker(work)
        checker.install()
        with FakeOpenAIServer(ServerConfig(max_seconds=600)) as server:
            checker.use(server.url)
    except CheckFailed:
        print(f"core install check FAILED after {time.perf_counter() - t0:.0f} s")
        return 1
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"core install check passed in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
