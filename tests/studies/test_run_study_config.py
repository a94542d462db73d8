"""``run_study``'s config argument (issue 37): a value of another type (None, a list) is a
ConfigError saying which types are accepted, never a bare TypeError."""

from __future__ import annotations

import pytest

from steadyeval import ConfigError
from steadyeval.studies import run_study, study_names


@pytest.mark.parametrize("study", study_names())
@pytest.mark.parametrize("config", [None, [1, 2], 5, b"x", ("a", "b")])
def test_a_config_of_another_type_is_a_config_error(study: str, config: object) -> None:
    with pytest.raises(ConfigError, match=rf"study '{study}': config is \w+; expected a \w+Config"):
        run_study(study, config)  # type: ignore[call-overload]
