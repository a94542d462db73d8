"""The caps on a run config's lists are documented (docs/config.md) as the config enforces
them: the numbers, and the message a longer list gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from steadyeval import ConfigError
from steadyeval.run import load_run_config
from steadyeval.run._config import MAX_CONDITIONS, MAX_LIST

DOC = Path(__file__).resolve().parents[2] / "docs" / "config.md"


def _paragraph(text: str, start: str) -> str:
    at = text.index(start)
    return " ".join(text[at : text.index("\n\n", at)].split())


def test_the_list_caps_are_documented_as_enforced(tmp_path: Path) -> None:
    page = DOC.read_text(encoding="utf-8")
    said = _paragraph(page, "**Limits on lists.**")
    assert f"at most {MAX_LIST:,} `models`" in said
    assert f"{MAX_CONDITIONS:,} `conditions`" in said
    assert f"`refusal_phrases` hold at most {MAX_LIST:,} strings each" in said
    assert f"`stop`: at most {MAX_LIST:,} strings" in page
    assert f"| list of strings (at most {MAX_LIST:,}) |" in page  # refusal_phrases' row
    models = ", ".join(f'"hf:m{i}"' for i in range(MAX_LIST + 1))
    (tmp_path / "c.yaml").write_text(f"data: x.jsonl\nmodels: [{models}]\n")
    with pytest.raises(ConfigError) as err:
        load_run_config(tmp_path / "c.yaml")
    shown = str(err.value).splitlines()[-1].split(": ", 1)[1]  # after "c.yaml, line 2"
    assert f"({shown})" in said.replace("`", "")
