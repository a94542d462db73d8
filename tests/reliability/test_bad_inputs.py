"""Bad input (issue 18, point 5): every malformed input is a located error, exit code 2 and
no traceback, found before any model loads where it can be.

The corpus (``_corpus.py``) runs through the CLI in process with the scripted test backend
(``scripted:m``), whose loads are counted. The YAML alias bomb also runs in a subprocess
under a 1 GiB address-space limit, so a regression fails the test instead of the machine.
Names that look like rich markup or HTML are valid input: they must print as they are.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval import DataError
from steadyeval.cli import main
from steadyeval.models import register_backend
from tests import scripted_backend
from tests.reliability._corpus import CASES, CATEGORIES, GOOD_JSONL, MERGE_BOMB, Case

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run folder of the scripted model (copied by run-folder and Parquet cases)."""
    scripted_backend.register()
    base = tmp_path_factory.mktemp("good")
    (base / "items.jsonl").write_text(GOOD_JSONL)
    out = base / "run"
    argv = ["run", "--model", "scripted:m", "--data", str(base / "items.jsonl"), "--out", str(out)]
    argv += ["--cache", str(base / "cache.sqlite")]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture()
def loads() -> Iterator[Counter[str]]:
    """``scripted:NAME`` registered with a count of the models it loads."""
    counts: Counter[str] = Counter()

    def factory(spec: object) -> scripted_backend.ScriptedBackend:
        counts[str(spec)] += 1
        return scripted_backend.ScriptedBackend(spec=spec)  # type: ignore[arg-type]

    register_backend("scripted", factory, replace=True)
    yield counts
    scripted_backend.register()


def _prepare(case: Case, folder: Path, good: Path) -> None:
    for name, content in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", errors="surrogatepass")
    if case.setup is not None:
        case.setup(folder, good)


def _check_error(code: int | None, out: str, case: Case) -> None:
    assert code == 2, f"exit {code}:\n{out[-3000:]}"
    assert "Traceback" not in out
    error = out[out.lower().rindex("error:") :].rstrip("\n").splitlines()
    assert len(error) <= 7, out  # one line, or a short located list
    assert all(len(line) <= 600 for line in error), f"an error line is not cut: {out[:2000]}"
    for text in case.expect:
        assert text in out, f"{text!r} not in:\n{out[-3000:]}"


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


#: The CLI with the scripted backend, in a subprocess (for ``Case.isolate``).
_CLI = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from tests.scripted_backend import register; register(); "
    "from steadyeval.cli import main; main(sys.argv[1:], prog_name='steadyeval')"
)


def _run_isolated(argv: tuple[str, ...], folder: Path) -> tuple[int, str]:
    """``argv`` in a subprocess that may use 1 GiB (a generous timeout guards a hang)."""
    done = subprocess.run(
        [sys.executable, "-c", _CLI, str(ROOT), *argv],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=_limit_memory,
    )
    return done.returncode, done.stdout + done.stderr


def _marks(case: Case) -> list[pytest.MarkDecorator]:
    return [pytest.mark.xfail(reason=case.pending, strict=True)] if case.pending else []


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=f"{c.category}/{c.name}", marks=_marks(c)) for c in CASES],
)
def test_bad_input_is_a_located_error(
    case: Case,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    good_run: Path,
    loads: Counter[str],
) -> None:
    folder = tmp_path / "case"
    folder.mkdir()
    _prepare(case, folder, good_run)
    monkeypatch.chdir(folder)
    if case.isolate:
        _check_error(*_run_isolated(case.argv, folder), case)
        return
    result = CliRunner().invoke(main, list(case.argv))
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    _check_error(result.exit_code, result.output, case)
    if not case.loads_model:
        assert not loads, f"a model loaded before the error: {dict(loads)}"


def test_the_corpus_covers_every_category() -> None:
    per = Counter(c.category for c in CASES)
    assert set(per) == set(CATEGORIES)
    assert all(n >= 8 for n in per.values()), per
    assert len(CASES) >= 100
    assert len({(c.category, c.name) for c in CASES}) == len(CASES)
    assert len(MERGE_BOMB.encode()) < 500  # the alias bomb: a few hundred bytes


#: The inputs issue 18 names (point 5), each a case of the corpus. The markup names are
#: valid input and have their own tests below.
NAMED = {
    "data rows": ["surrogate-question", "metadata-100000-deep"],
    "paths": [
        "data-is-a-folder",
        "cache-garbage-run",
        "cache-garbage-info",
        "out-not-writable",
        "out-under-a-file",
    ],
    "model specs": ["same-model-twice", "timeout-inf"],
    "run folders": ["results-changed-after-manifest", "compare-missing-runs"],
    "parquet": ["truncated", "csv-text"],
    "yaml": [
        "alias-bomb-merge-keys",
        "duplicate-condition-names",
        "template-syntax-error",
        "unknown-shot-pool",
    ],
}


def test_every_input_the_issue_names_is_in_the_corpus() -> None:
    have = {(c.category, c.name) for c in CASES}
    missing = [(cat, n) for cat, names in NAMED.items() for n in names if (cat, n) not in have]
    assert not missing


def test_a_config_using_aliases_within_the_limit_loads(tmp_path: Path) -> None:
    """The limit counts values, not bytes: 300 conditions sharing a merged base load."""
    from steadyeval.run import load_run_config

    path = tmp_path / "ok.yaml"
    path.write_text(
        "data: items.jsonl\nmodels: [scripted:m]\nconditions:\n  - &first {name: c0, scoring: "
        "generate, generation: {stop: [a, b, c]}}\n"
        + "".join(f"  - {{<<: *first, name: c{i}}}\n" for i in range(1, 300))
    )
    (tmp_path / "items.jsonl").write_text(GOOD_JSONL)
    scripted_backend.register()
    cfg = load_run_config(path)
    assert [c.name for c in cfg.conditions][-1] == "c299"
    assert cfg.conditions[-1].generation.stop == ["a", "b", "c"]


MARKUP = ["mc[/]", "[link=https://example.com]click[/link]", "<b>x</b>|y", "[bold]z"]


def test_names_that_look_like_markup_print_as_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rich markup in condition and model names (a MarkupError before) prints literally;
    summary.md escapes them with backslashes, never HTML entities."""
    scripted_backend.register()
    conditions = "".join(
        f"  - {{name: {json.dumps(n)}, scoring: option-logprob}}\n" for n in MARKUP
    )
    (tmp_path / "items.jsonl").write_text(GOOD_JSONL)
    (tmp_path / "c.yaml").write_text(
        "data: items.jsonl\nmodels: [scripted:m]\nconditions:\n" + conditions
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run", "c.yaml", "--out", "run"])
    assert result.exit_code == 0, result.output
    for name in MARKUP:
        assert name in result.output
    md = (tmp_path / "run" / "summary.md").read_text()
    assert "| mc\\[/\\] |" in md
    assert "\\[link=https://example.com\\]click\\[/link\\]" in md
    assert "\\<b>x\\</b>\\|y" in md
    assert "&lt;" not in md and "&#" not in md


def test_imported_model_named_like_markup_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, good_run: Path
) -> None:
    from tests.reliability._corpus import _lm_eval

    _lm_eval(tmp_path, good_run)
    monkeypatch.chdir(tmp_path)
    argv = ["import", "lm-eval", "lm", "--out", "imp", "--model", "m[/]"]
    result = CliRunner().invoke(main, [*argv, "--condition-map", "arc=[link=x]c[/link]"])
    assert result.exit_code == 0, result.output
    assert "m[/]" in result.output and "[link=x]c[/link]" in result.output
    # nothing pairs (other items and conditions): the error names both, markup as it is
    result = CliRunner().invoke(main, ["compare", "imp", str(good_run)])
    assert result.exit_code == 2, result.output
    assert "m[/]" in result.output and "[link=x]c[/link]" in result.output


def test_lone_surrogates_from_python_are_data_errors() -> None:
    """Not only files: an Item or a request built in Python with a lone surrogate gets a
    DataError naming the field (a UnicodeEncodeError in request_key before)."""
    from steadyeval import Item
    from steadyeval.requests import GenerateRequest, request_key

    with pytest.raises(DataError, match=r"item 'q', field 'question': lone surrogate"):
        _ = Item(id="q", question="a \ud800 b", answer="x").hash
    with pytest.raises(DataError, match=r"field 'request.prompt': lone surrogate '\\udcff'"):
        request_key("m", GenerateRequest(prompt="x\udcff"))
    pair = Item(id="q", question="smile \U0001f600", answer="x")
    assert len(pair.hash) == 16  # a surrogate pair in a file is one character: fine


def test_a_surrogate_pair_in_jsonl_is_read(tmp_path: Path) -> None:
    from steadyeval.items import load_jsonl

    path = tmp_path / "ok.jsonl"
    path.write_text('{"id": "q", "question": "smile \\ud83d\\ude00", "answer": "x"}\n')
    assert load_jsonl(path)[0].question == "smile \U0001f600"


def test_check_writable(tmp_path: Path) -> None:
    from steadyeval import ConfigError
    from steadyeval.cli._options import check_writable

    (tmp_path / "afile").write_text("x")
    check_writable(tmp_path / "new" / "run")  # creatable: fine, and nothing is left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    check_writable(None)
    with pytest.raises(ConfigError, match="afile is a file, not a folder"):
        check_writable(tmp_path / "afile" / "run")
    with pytest.raises(ConfigError, match="is a file; expected a folder"):
        check_writable(tmp_path / "afile")
    with pytest.raises(ConfigError, match="is a folder; expected a file"):
        check_writable(tmp_path, "--json", folder=False)
    with pytest.raises(ConfigError, match="cannot write in /proc"):
        check_writable(Path("/proc/run"))


def test_every_built_in_template_passes_the_config_check() -> None:
    from steadyeval.conditions import TEMPLATES, template_problem

    for template in TEMPLATES.values():
        assert template_problem(template.body) is None
        assert template_problem(template.header) is None
        assert template_problem(template.answer, answer=True) is None
