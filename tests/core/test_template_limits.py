"""Prompt templates cannot ask for unbounded memory or time (issue 37 class 2): a short
template that would allocate gigabytes or run for hours is refused, at once, with the limit
named; what real templates do still renders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval import ConfigError
from steadyeval.cli import main
from steadyeval.conditions import render_template, template_problem
from tests.scripted_backend import register

VARS = {
    "question": "What is two plus two?",
    "context": None,
    "options": [{"label": "A", "text": "4"}],
    "options_block": "A. 4",
    "entity": None,
    "subject": None,
    "metadata": {"n": 3},
    "item_id": "q1",
}

BOMBS = [
    ("{{ 'x' * 2000000000 }}", "'*': the number 2000000000 is over the limit"),
    ("{{ [0] * 10000000 }}", "'*': the number 10000000 is over the limit"),
    ("{{ (question ~ question ~ question ~ question) * 999999 }}", "would make 83,999,916 char"),
    ("{{ 7 ** 100000 }}", r"'\*\*' would make a number of over 4096 bits"),
    ("{{ 'x'|center(10000000000) }}", "filter center: the number 10000000000"),
    ("{{ question|indent(100000000) }}", "filter indent: the number 100000000"),
    ("{{ 'x'.ljust(10000000000) }}", "a call of ljust: the number 10000000000"),
    ("{{ '{:>9999999999}'.format(1) }}", "str.format: a format width over"),
    ("{{ '%9999999999s'|format(1) }}", "filter format: a format width over"),
    ("{{ '%9999999999s' % 1 }}", "'%': a format width over"),
    (
        "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
        "more than 200,000 steps",
    ),
    (
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}",
        "more than 200,000 steps",
    ),
    (
        "{% set ns = namespace(s='xy') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}{{ ns.s|length }}",
        "a namespace value of .* characters or items, over the limit",
    ),
    (
        "{% for i in range(99999) %}{{ 'y' * 999999 }}{% endfor %}",
        "the template writes more than 67,108,864 characters",
    ),
]


@pytest.mark.parametrize(("body", "match"), BOMBS)
def test_a_template_bomb_is_refused_quickly(body: str, match: str) -> None:
    assert template_problem(body) is None  # compiling folds no constant: nothing allocated
    with pytest.raises(ConfigError, match=f"template t: TemplateLimitError: .*({match})"):
        render_template(body, VARS, where="t")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("{{ question|upper }} {{ options_block }}", "WHAT IS TWO PLUS TWO? A. 4"),
        ("{{ '%-6s|' % 'ab' }}{{ '{:>4}'.format(7) }}", "ab    |   7"),
        ("{{ '%d items'|format(metadata.n) }}", "3 items"),
        ("{% for i in range(3) %}{{ i }}{% endfor %}{{ range(4)|sum }}", "0126"),
        ("{{ 'ab' * 3 }}{{ 2 ** 10 }}{{ [1, 2]|join(',') }}", "ababab10241,2"),
        (
            "{% set ns = namespace(k=0) %}{% for o in options %}{% set ns.k = ns.k + 1 %}"
            "{% endfor %}{{ ns.k }}",
            "1",
        ),
        ("{{ question|truncate(9, true, '') }}|{{ 'x'|center(5) }}|", "What is t|  x  |"),
    ],
)
def test_what_real_templates_do_still_renders(body: str, expected: str) -> None:
    assert render_template(body, VARS, where="t") == expected


def test_the_dry_run_refuses_a_bomb_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register()
    monkeypatch.chdir(tmp_path)
    row = {"id": "q1", "question": "Q?", "answer": "a"}
    (tmp_path / "items.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "c.yaml").write_text(
        "data: items.jsonl\nmodels: [scripted:m]\nconditions:\n"
        "  - {name: a, format: free, template: {name: t, body: \"{{ 'x' * 2000000000 }}\"}}\n"
    )
    for extra in (["--dry-run"], ["--out", "out"]):
        result = CliRunner().invoke(main, ["run", "c.yaml", *extra])
        assert result.exit_code == 2, result.output
        assert "TemplateLimitError: '*': the number 2000000000 is over the limit" in result.output
