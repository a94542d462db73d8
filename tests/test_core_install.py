"""Core steadyeval (``pip install steadyeval``, no extras) works without torch.

Each CLI test runs a child Python in which a ``sys.meta_path`` finder refuses torch,
transformers, tokenizers, safetensors, huggingface_hub, datasets and accelerate, as if only
the core dependencies were installed, and runs commands in process through click's
``CliRunner``. Core commands must succeed there (``openai:`` runs against the fake local
server of ``tests/models``); features of the ``[hf]`` extra must fail with one line naming
``pip install 'steadyeval[hf]'`` and exit code 2. ``tools/core_install_check.py`` (run by
``.ci/run``) checks the same against a real core install in a fresh virtual environment.
"""

from __future__ import annotations

import ast
import importlib.abc
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "huggingface_hub",
    "datasets",
    "accelerate",
    "statsmodels",  # a test-only reference (the dev extra): no command may import it
)
HINT = re.compile(
    r"error: .+ need the (Hugging Face|vLLM) extra: pip install 'steadyeval\[(hf|vllm)\]' "
    r"\(missing: [a-z_, ]+\)"
)


class _Refuse(importlib.abc.MetaPathFinder):
    """Refuses the optional packages, as a core install (where they are absent) would."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname.partition(".")[0] in HEAVY:
            raise ModuleNotFoundError(f"No module named {fullname!r} (core only)", name=fullname)
        return None


def _refuse_heavy() -> None:
    loaded = [m for m in sys.modules if m.partition(".")[0] in HEAVY]
    assert not loaded, f"imported before the finder was installed: {loaded}"
    sys.meta_path.insert(0, _Refuse())


def _invoke(results: dict[str, Any], name: str, args: Sequence[str]) -> None:
    from click.testing import CliRunner

    from steadyeval.cli import main

    done = CliRunner().invoke(main, list(args))
    text = done.output
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        text += f"\n{type(done.exception).__name__}: {done.exception}"
    results[name] = {"code": done.exit_code, "output": text}


def _help_paths() -> list[list[str]]:
    import click

    from steadyeval.cli import main

    def walk(cmd: click.Command, path: list[str]) -> list[list[str]]:
        out = [path]
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd, info_name=path[-1] if path else "steadyeval")
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None, name
                out += walk(sub, [*path, name])
        return out

    return walk(main, [])


def _lmeval_samples(folder: Path) -> Path:
    """Two multiple-choice records in lm-eval's ``--log_samples`` layout."""
    folder.mkdir()
    lines = []
    for doc_id in (0, 1):
        ctx = f"Q{doc_id}?\nA:"
        lines.append(
            {
                "doc_id": doc_id,
                "doc": {"q": f"Q{doc_id}?", "choices": ["x", "y"], "label": 1},
                "target": "1",
                "arguments": {
                    "gen_args_0": {"arg_0": ctx, "arg_1": " x"},
                    "gen_args_1": {"arg_0": ctx, "arg_1": " y"},
                },
                "resps": [[["-2.0", "False"]], [["-1.0", "True"]]],
                "filtered_resps": [["-2.0", "False"], ["-1.0", "True"]],
                "filter": "none",
                "metrics": ["acc"],
                "doc_hash": f"d{doc_id}",
                "prompt_hash": f"p{doc_id}",
                "target_hash": "t",
                "acc": 1.0,
            }
        )
    path = folder / "samples_toy_2024-01-01T00-00-00.000001.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def _core_child(work: Path) -> dict[str, Any]:
    """What a core install must do: every --help, openai: runs, report, compare, import,
    cache."""
    from tests.importers.test_inspect import _log, _write_json
    from tests.models.fake_openai_server import FakeOpenAIServer, ServerConfig

    results: dict[str, Any] = {}
    for path in _help_paths():
        _invoke(results, "help " + " ".join(path), [*path, "--help"])
    items = str(ROOT / "examples" / "items.jsonl")
    with FakeOpenAIServer(ServerConfig()) as server:
        for arm, model in (("a", "toy"), ("b", "toy-b")):
            spec = f"openai:{model}?base_url={server.url}"
            _invoke(
                results,
                f"run {arm}",
                ["run", "--model", spec, "--data", items, "--out", f"{work}/{arm}"],
            )
    _invoke(results, "report", ["report", f"{work}/a"])
    _invoke(results, "report json", ["report", f"{work}/a", "--format", "json"])
    _invoke(results, "compare", ["compare", f"{work}/a", f"{work}/b"])
    samples = _lmeval_samples(work / "lm")
    _invoke(
        results,
        "import lm-eval",
        ["import", "lm-eval", str(samples), "--out", f"{work}/lmrun", "--model", "m"],
    )
    (work / "inspect").mkdir()
    log = _write_json(work / "inspect" / "2025-01-15T10-00-00_arc-mini_E1.json", _log("arc_mini"))
    _invoke(results, "import inspect", ["import", "inspect", str(log), "--out", f"{work}/insrun"])
    _invoke(results, "report of an import", ["report", f"{work}/insrun", "--format", "md"])
    _invoke(results, "cache info", ["cache", "info"])
    _invoke(results, "cache clear", ["cache", "clear", "--yes"])
    return results


def _hf_child(work: Path) -> dict[str, Any]:
    """What needs the [hf] extra: each must say so in one line."""
    from steadyeval._errors import SteadyevalError
    from steadyeval.models import load_backend
    from steadyeval.train import TrainConfig, train_pet

    results: dict[str, Any] = {}
    items = str(ROOT / "examples" / "items.jsonl")
    hf = ["run", "--model", "hf:gpt2", "--data", items, "--out", f"{work}/h"]
    _invoke(results, "hf run", hf)
    _invoke(results, "tiny-model", ["tiny-model", f"{work}/tiny", "--arch", "gpt2"])
    _invoke(results, "hub data", ["run", str(ROOT / "examples" / "mmlu-hub.yaml"), "--dry-run"])
    _invoke(
        results, "vllm run", ["run", "--model", "vllm:x", "--data", items, "--out", f"{work}/v"]
    )
    for name, call in (
        ("load_backend hf-seq2seq", lambda: load_backend("hf-seq2seq:x")),
        ("train_pet", lambda: train_pet("x", [], [], TrainConfig(), seed=0, out_dir=work / "t")),
    ):
        try:
            call()
        except SteadyevalError as exc:
            results[name] = {"code": 2, "output": f"error: {exc}"}
        else:
            results[name] = {"code": 0, "output": ""}
    return results


def child(kind: str, work: str, out: str) -> None:
    """The child process's body: refuse the heavy packages, run ``kind``'s checks, write
    their results and the heavy modules that got imported anyway as JSON."""
    _refuse_heavy()
    run = {"core": _core_child, "hf": _hf_child}[kind]
    results = run(Path(work))
    loaded = sorted({m.partition(".")[0] for m in sys.modules} & set(HEAVY))
    Path(out).write_text(json.dumps({"results": results, "loaded": loaded}))


def _run_child(kind: str, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "results.json"
    code = f"from tests.test_core_install import child; child({kind!r}, {str(tmp_path)!r}, {str(out)!r})"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    assert report["loaded"] == [], f"imported without need: {report['loaded']}"
    return report["results"]  # type: ignore[no-any-return]


def test_core_commands_run_without_the_hf_packages(tmp_path: Path) -> None:
    results = _run_child("core", tmp_path)
    failed = {k: v["output"][-1500:] for k, v in results.items() if v["code"] != 0}
    assert not failed, failed
    helps = [k for k in results if k.startswith("help")]
    for name in ("run", "study formats", "study fewshot", "report", "compare", "import inspect"):
        assert f"help {name}" in helps
    assert all("Usage:" in results[k]["output"] for k in helps)
    for run in "ab":
        assert (tmp_path / run / "results.parquet").is_file()
    assert (tmp_path / "a" / "report.html").is_file()
    assert "B − A" in results["compare"]["output"]
    assert "imported from inspect" in results["import inspect"]["output"]
    assert (tmp_path / "lmrun" / "results.parquet").is_file()


def test_hf_features_name_the_extra_in_one_line(tmp_path: Path) -> None:
    results = _run_child("hf", tmp_path)
    for name, got in results.items():
        assert got["code"] == 2, (name, got)
        lines = got["output"].strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in got["output"], (name, got)
        assert HINT.fullmatch(lines[0]), (name, lines)
    assert results["hf run"]["output"].strip() == (
        "error: hf: models need the Hugging Face extra: pip install 'steadyeval[hf]' "
        "(missing: torch, transformers, tokenizers, safetensors, huggingface_hub)"
    )
    assert "(missing: datasets)" in results["hub data"]["output"]
    assert "pip install 'steadyeval[vllm]'" in results["vllm run"]["output"]
    assert "steadyeval[hf]" in results["train_pet"]["output"]
    assert not (tmp_path / "tiny").exists()


def test_require_names_the_extra_and_the_missing_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    from steadyeval import _extras
    from steadyeval._errors import SteadyevalError

    _extras.require("things", "json", "click")  # installed: nothing raised
    monkeypatch.setattr(_extras, "_installed", lambda m: m not in {"torch", "datasets"})
    with pytest.raises(_extras.MissingExtraError) as caught:
        _extras.require("tiny models", "torch", "transformers", "datasets")
    assert isinstance(caught.value, SteadyevalError)  # the CLI prints it and exits with 2
    assert str(caught.value) == (
        "tiny models need the Hugging Face extra: pip install 'steadyeval[hf]' "
        "(missing: torch, datasets)"
    )
    with pytest.raises(
        _extras.MissingExtraError, match=r"vLLM extra: pip install 'steadyeval\[vllm\]'"
    ):
        _extras.require("vllm: models", "torch", extra="vllm")


# -- packaging: install what you use -------------------------------------------------------

_DIST_OF_MODULE = {"yaml": "pyyaml", "huggingface_hub": "huggingface-hub"}


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imported_distributions() -> set[str]:
    """Distributions that src/steadyeval imports (top-level third-party modules)."""
    found: set[str] = set()
    for path in (ROOT / "src" / "steadyeval").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in {n.partition(".")[0] for n in names}:
                if top not in sys.stdlib_module_names and top != "steadyeval":
                    found.add(_DIST_OF_MODULE.get(top, top).replace("_", "-"))
    return found


def test_core_dependencies_leave_out_the_hf_packages() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_name(r) for r in project["dependencies"]}
    extras = {k: [_name(r) for r in v] for k, v in project["optional-dependencies"].items()}
    hf = {"torch", "transformers", "tokenizers", "safetensors", "huggingface-hub", "datasets",
          "sentencepiece"}  # fmt: skip
    assert not core & (hf | {"accelerate", "statsmodels"})
    assert set(extras["hf"]) == hf
    assert "steadyeval" in extras["dev"]  # [dev] = [hf] + tools: the README's install
    assert '"steadyeval[hf]"' in (ROOT / "pyproject.toml").read_text()
    assert extras["api"] == []  # the openai: backend needs nothing beyond core
    declared = core.union(*map(set, extras.values()))
    imported = _imported_distributions()
    assert imported <= declared, "an import not declared in pyproject.toml"
    assert core <= imported, f"core dependencies that no module imports: {core - imported}"
