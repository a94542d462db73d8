"""The YAML reader of run and study configs (issue 37 classes 2-4): only regular files, a size
limit, alias bombs by count and by characters, and values YAML builds that no config takes
(integers thousands of digits long, .inf/.nan, dates that do not exist, a key given twice)
refused with their line before any value is built."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from steadyeval import ConfigError
from steadyeval.run import check_nodes, load_run_config

HEAD = "data: items.jsonl\nmodels: [hf:tiny]\n"


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path


def test_a_fifo_or_a_device_is_refused_unopened(tmp_path: Path) -> None:
    fifo = tmp_path / "run.yaml"
    os.mkfifo(fifo)  # no writer: reading it would block forever
    with pytest.raises(ConfigError, match=r"run.yaml: is a FIFO \(named pipe\); expected a YAML"):
        load_run_config(fifo)
    with pytest.raises(ConfigError, match="/dev/zero: is a character device"):
        load_run_config("/dev/zero")
    with pytest.raises(ConfigError, match="no such file"):
        load_run_config(tmp_path / "missing.yaml")


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEADYEVAL_MAX_CONFIG_MB", "0.01")
    path = _config(tmp_path, HEAD + "# " + "x" * 20_000 + "\n")
    with pytest.raises(
        ConfigError,
        match=r"over the limit of .*set STEADYEVAL_MAX_CONFIG_MB \(in MiB\) to raise it",
    ):
        load_run_config(path)


def test_a_long_string_repeated_through_aliases_is_a_bomb(tmp_path: Path) -> None:
    big = "x" * 1_000_000
    text = (
        HEAD + f'a: &a "{big}"\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n'
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c]\n"
    )  # 500 values (under the value count) of 500 MB of text
    with pytest.raises(
        ConfigError, match=r"line 5: aliases here expand to more than .* characters"
    ):
        load_run_config(_config(tmp_path, text))


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("1" + "0" * 5000, r"line 3: an integer of 5,001 characters"),
        ("-" + "9" * 400, r"line 3: an integer of 401 characters"),
        (".inf", r"line 3: \.inf is not a finite number"),
        ("-.Inf", r"line 3: -\.Inf is not a finite number"),
        (".nan", r"line 3: \.nan is not a finite number"),
        ("1.0e+999", r"line 3: 1\.0e\+999 is not a finite number"),
        ("2024-02-30", r"line 3: '2024-02-30' is not a valid date or time"),
    ],
)
def test_values_no_config_takes_are_refused_with_their_line(
    tmp_path: Path, value: str, match: str
) -> None:
    with pytest.raises(ConfigError, match=match) as info:
        load_run_config(_config(tmp_path, HEAD + f"seed: {value}\n"))
    assert len(str(info.value)) < 300


def test_a_key_given_twice_is_an_error_not_the_last_value(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"line 4: the key 'seed' is given twice \(first on line 3"
    ):
        load_run_config(_config(tmp_path, HEAD + "seed: 1\nseed: 2\n"))
    # a merge key is not a repeated key: <<: *base then an override is YAML's own idiom
    text = HEAD + "conditions:\n  - &c {name: a, format: free}\n  - <<: *c\n    name: b\n"
    (tmp_path / "items.jsonl").write_text('{"id": "1", "question": "q", "answer": "a"}\n')
    cfg = load_run_config(_config(tmp_path, text))
    assert [c.name for c in cfg.conditions] == ["a", "b"]


def test_check_nodes_is_what_every_yaml_reader_calls() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n"
        for p, n in zip("abcdef", "bcdefg", strict=True)
    )
    with pytest.raises(ConfigError, match="expand to more than 100,000 values"):
        check_nodes(yaml.compose(bomb, Loader=yaml.SafeLoader), "space.yaml")
    with pytest.raises(ConfigError, match=r"space.yaml, line 1: an integer of 50 characters"):
        check_nodes(yaml.compose("lr: " + "9" * 50, Loader=yaml.SafeLoader), "space.yaml")


def test_millions_of_small_values_are_refused_while_composed(tmp_path: Path) -> None:
    """A 6 MB flat list (within the size limit) composed whole took gigabytes: the loader
    counts nodes as it composes them and stops at the limit."""
    text = HEAD + "x: [" + ",".join(["1"] * 3_000_000) + "]\n"
    with pytest.raises(ConfigError, match=r"line 3: more than 100,000 values; refused"):
        load_run_config(_config(tmp_path, text))
