"""Comma-separated list flags of every study (issue 37): an empty entry is an error naming the
flag, never dropped (``--shots 0,,1`` ran shots 0 and 1; ``--k-values 2,,4`` ran 2 and 4)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from steadyeval.cli import main
from steadyeval.studies import get_study, study_names


def _comma_flags() -> list[tuple[str, str]]:
    out = []
    for name in study_names():
        for field_name, field in get_study(name).config.model_fields.items():
            extra = dict(field.json_schema_extra or {})  # type: ignore[arg-type]
            if extra.get("comma") and extra.get("cli") is not False:
                out.append((name, "--" + str(extra.get("flag", field_name.replace("_", "-")))))
    return out


FLAGS = _comma_flags()


def test_the_studies_have_comma_flags() -> None:
    assert ("knowledge", "--shots") in FLAGS and ("fewshot", "--k-values") in FLAGS


@pytest.mark.parametrize(("study", "flag"), FLAGS)
@pytest.mark.parametrize(("values", "position"), [(["2,,4"], 2), (["2,4,"], 3), (["2", ",4"], 2)])
def test_an_empty_entry_names_the_flag(
    study: str, flag: str, values: list[str], position: int
) -> None:
    argv = ["study", study]
    for value in values:
        argv += [flag, value]
    result = CliRunner().invoke(main, [*argv, "--dry-run"])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: {flag} ") and f"value {position} is empty" in line, line
