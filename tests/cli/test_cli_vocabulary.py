"""One CLI vocabulary: lm-eval's model spelling, a default run folder, --overwrite, the same
dry-run table for every command, click's default style (seeds, the resolved cache path),
required options marked, full names in a piped summary."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval.cli import main
from tests.scripted_backend import register

register()
ROOT = Path(__file__).resolve().parents[2]
STUDIES = ["formats", "sensitivity", "knowledge", "fewshot"]


def _items(path: Path, n: int = 6) -> Path:
    rows = [
        {"id": f"q{i}", "question": f"Item {i}?", "options": ["red", "green"], "answer": i % 2}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_lmeval_model_spelling(tmp_path: Path) -> None:
    data = str(_items(tmp_path / "items.jsonl"))
    r = CliRunner().invoke(
        main,
        [
            "run",
            "--model",
            "scripted",
            "--model_args",
            "pretrained=m,x=a&b",
            "--data",
            data,
            "--dry-run",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "scripted:m?x=a%26b" in r.output  # one model; '&' needed no quoting
    r = CliRunner().invoke(
        main,
        [
            "run",
            "--model",
            "scripted",
            "--model",
            "hf",
            "--model_args",
            "pretrained=m",
            "--data",
            data,
            "--dry-run",
        ],
    )
    assert r.exit_code == 2 and "exactly one --model" in r.output
    r = CliRunner().invoke(
        main, ["run", "--model", "hf", "--model_args", "dtype=float16", "--data", data]
    )
    assert r.exit_code == 2 and "pretrained=NAME_OR_PATH" in r.output


def test_default_out_overwrite_and_piped_summary(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = str(_items(tmp_path / "items.jsonl"))
    long_name = "scripted:" + "a-model-name-long-enough-to-be-cut-at-eighty-columns-" * 2
    r = CliRunner().invoke(main, ["run", "--model", long_name, "--data", data])
    assert r.exit_code == 0, r.output
    (folder,) = (tmp_path / "runs").iterdir()
    assert re.fullmatch(r"\d{8}-\d{6}-run", folder.name)
    assert f"wrote runs/{folder.name}/" in r.output
    assert long_name in r.output  # no 80-column cut when piped
    assert "truncated" in r.output and "approximate" in r.output
    r = CliRunner().invoke(
        main, ["run", "--model", "scripted:b", "--data", data, "--out", str(folder)]
    )
    assert r.exit_code == 2 and "--overwrite" in r.output
    r = CliRunner().invoke(
        main, ["run", "--model", "scripted:b", "--data", data, "--out", str(folder), "--overwrite"]
    )
    assert r.exit_code == 0, r.output
    assert json.loads((folder / "summary.json").read_text())["models"] == ["scripted:b"]


def _dry_run_labels(output: str) -> list[str]:
    lines = output.splitlines()
    start = lines.index("dry run: nothing is sent")
    return [re.sub(r"\s+[\d,]+$", "", line).strip() for line in lines[start + 1 : start + 8]]


def test_every_dry_run_prints_the_same_table(
    tmp_path: Path, tiny_gpt2: Path, tiny_bert: Path
) -> None:
    data = str(_items(tmp_path / "items.jsonl"))
    runs = {
        "run": ["run", "--model", "scripted:m", "--data", data],
        "formats": [
            "study",
            "formats",
            "--model",
            f"hf:{tiny_gpt2}",
            "--data",
            str(ROOT / "examples" / "squad-mini.json"),
            "--answerable",
            "10",
            "--unanswerable",
            "8",
        ],
        "sensitivity": [
            "study",
            "sensitivity",
            "--model",
            f"hf:{tiny_gpt2}",
            "--model",
            f"hf:{tiny_bert}",
            "--data",
            str(ROOT / "examples" / "probes-study"),
            "--subset-size",
            "2",
        ],
    }
    layouts = {}
    for name, args in runs.items():
        r = CliRunner().invoke(main, [*args, "--dry-run"])
        assert r.exit_code == 0, (name, r.output)
        layouts[name] = _dry_run_labels(r.output)
    assert layouts["run"][0].startswith("rows")
    assert all(layout == layouts["run"] for layout in layouts.values()), layouts


@pytest.mark.parametrize("study", STUDIES)
def test_study_help_vocabulary(study: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("STEADYEVAL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    r = CliRunner().invoke(main, ["study", study, "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "--no-progress" in text and "-q, --quiet" in text and "-v, --verbose" in text
    assert re.search(r"--seed INTEGER .*?\[default: \d+\]", text)
    assert "[required unless in CONFIG]" in text
    resolved = f"[default:{tmp_path / 'xdg' / 'steadyeval' / 'responses.sqlite'}]"
    assert resolved in "".join(text.split())  # the help wraps long paths
    assert "XDG_CACHE_HOME" in text
    assert "--model_args" in text and "--overwrite" in text


def test_every_config_error_at_once_with_its_line(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        "data: items.jsonl\n"
        "models: [scripted:m]\n"
        "conditions:\n"
        "  - name: a\n"
        "    formatt: mc\n"
        "    format: mcq\n"
        "  - name: b\n"
        "    scoring: letter-logprob\n"
        "    format: free\n",
        encoding="utf-8",
    )
    _items(tmp_path / "items.jsonl")
    r = CliRunner().invoke(main, ["run", str(cfg), "--dry-run"])
    assert r.exit_code == 2
    assert f"{cfg}, line 6: conditions.0.format: unknown format 'mcq'" in r.output
    assert f"{cfg}, line 5: conditions.0.formatt: unknown key" in r.output
    assert f"{cfg}, line 7: conditions.1: scoring 'letter-logprob' needs" in r.output


def test_strict_logprobs_marks_each_openai_spec(tmp_path: Path) -> None:
    from steadyeval.cli._options import strict_models
    from steadyeval.models import parse_model_spec

    specs = [parse_model_spec(s) for s in ("openai:m?base_url=http://h/v1", "hf:./tiny")]
    strict = list(map(str, strict_models(specs, True)))
    assert strict == ["openai:m?base_url=http://h/v1&strict=true", "hf:./tiny"]
    assert strict_models(specs, False) == specs
    data = str(_items(tmp_path / "items.jsonl"))
    r = CliRunner().invoke(
        main, ["run", "--model", "scripted:m", "--data", data, "--strict-logprobs", "--dry-run"]
    )
    assert r.exit_code == 0, r.output


def test_strict_logprobs_refuses_a_spec_that_says_strict_false(tmp_path: Path) -> None:
    """--strict-logprobs never silently overrides an explicit strict=false: the error names
    the model spec and the flag (strict=true, or other backends, are left as they are)."""
    from steadyeval._errors import ConfigError
    from steadyeval.cli._options import strict_models
    from steadyeval.models import parse_model_spec

    loose = parse_model_spec("openai:m?base_url=http://h/v1&strict=False")
    with pytest.raises(ConfigError, match=r"model spec openai:m: its option strict='False' "):
        strict_models([loose], True)
    assert strict_models([loose], False) == [loose]
    for odd in ("banana", "0", ""):  # not a boolean: that error, not a conflict
        with pytest.raises(ConfigError, match=r"option strict must be true or false, got "):
            strict_models([parse_model_spec(f"openai:m?strict={odd}")], True)
    same = [parse_model_spec(s) for s in ("openai:m?strict=true", "hf:./tiny?strict=false")]
    assert strict_models(same, True) == same
    data = str(_items(tmp_path / "items.jsonl"))
    r = CliRunner().invoke(
        main,
        [
            "run",
            "--model",
            "openai:m?strict=false",
            "--data",
            data,
            "--strict-logprobs",
            "--dry-run",
        ],
        terminal_width=300,
    )
    assert r.exit_code == 2, r.output
    assert "model spec openai:m: its option strict='false' conflicts with --strict-logprobs" in (
        r.output
    )


def test_lmeval_model_args_give_a_typed_spec() -> None:
    """lm-eval's --model/--model_args become a ModelSpec where they are read (passed on
    typed, never as text parsed again), checked as a parsed spec is."""
    from steadyeval._errors import ModelSpecError
    from steadyeval.cli._options import model_specs
    from steadyeval.models import ModelSpec, lmeval_model_spec

    spec = lmeval_model_spec("local-completions", "model=m,base_url=http://h/v1?a=1&b=2")
    assert spec == ModelSpec("openai", "m", {"base_url": "http://h/v1?a=1&b=2"})
    assert type(spec) is ModelSpec
    (given,) = model_specs(["HF"], "pretrained=gpt2, dtype=float16")
    assert given == ModelSpec("hf", "gpt2", {"dtype": "float16"}) and type(given) is ModelSpec
    assert model_specs(["hf:gpt2"], None) == ["hf:gpt2"]  # text: parsed by the config
    with pytest.raises(ModelSpecError, match=r"the model name '\./odd\?x' holds '\?'"):
        lmeval_model_spec("hf", "pretrained=./odd?x")
    with pytest.raises(ModelSpecError, match="option revision's value holds the control"):
        lmeval_model_spec("hf", "pretrained=gpt2,revision=a\0")
