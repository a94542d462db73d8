"""ScoreTable (published per-relation / per-prompt tables) and the study's std with the
authors' rounding (``std_rounding="reference"``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from steadyeval import DataError, stats
from steadyeval._errors import ConfigError
from steadyeval.studies.sensitivity import (
    AnalysisOptions,
    Correctness,
    PromptPreference,
    ScoreTable,
    adjusted_scores,
    analyze_tensor,
    template_scores,
)

ROWS = [
    # relation r1 has three prompts, r2 two, r3 (every model 0) two
    ("r1", "[X] was born in [Y] .", "A", 25.64),
    ("r1", "[X] was born in [Y] .", "B", 15.0),
    ("r1", "[X] is from [Y] .", "A", 8.08),
    ("r1", "[X] is from [Y] .", "B", 7.31),
    ("r1", "[X] comes from [Y] .", "A", 2.05),
    ("r1", "[X] comes from [Y] .", "B", 2.69),
    ("r2", "[X] died in [Y] .", "A", 35.86),
    ("r2", "[X] died in [Y] .", "B", 2.45),
    ("r2", "[X] died at [Y] .", "A", 30.97),
    ("r2", "[X] died at [Y] .", "B", 2.45),
    ("r3", "[X] is represented by [Y] .", "A", 0.0),
    ("r3", "[X] is represented by [Y] .", "B", 0.0),
    ("r3", "[X] label : [Y] .", "A", 0.0),
    ("r3", "[X] label : [Y] .", "B", 0.0),
]


def _frame() -> pd.DataFrame:
    return pd.DataFrame(ROWS, columns=["relation", "prompt", "model", "score"])


def test_read_a_per_prompt_table() -> None:
    t = ScoreTable.read(_frame())
    assert t.models == ("A", "B") and t.units == ("r1", "r2", "r3")
    assert t.templates == ("t00", "t01", "t02")
    assert t.prompts[1] == ("[X] died in [Y] .", "[X] died at [Y] .")
    assert t.scores.shape == (2, 3, 3) and np.isnan(t.scores[:, 1:, 2]).all()
    assert t.original().tolist() == [[25.64, 15.0], [35.86, 2.45], [0.0, 0.0]]
    adjusted = t.adjusted()
    assert adjusted[0].tolist() == [np.mean([25.64, 8.08, 2.05]), np.mean([15.0, 7.31, 2.69])]
    assert adjusted[1].tolist() == [np.mean([35.86, 30.97]), 2.45]
    assert adjusted[2].tolist() == [0.0, 0.0]  # the all-zero relation is kept, scored 0


def test_the_same_table_from_csv_and_records(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    _frame().to_csv(path, index=False)
    from_csv = ScoreTable.read(path)
    records = [dict(zip(("relation", "prompt", "model", "score"), r, strict=True)) for r in ROWS]
    from_records = ScoreTable.read(records)
    base = ScoreTable.read(_frame())
    for t in (from_csv, from_records):
        assert (t.models, t.units, t.prompts) == (base.models, base.units, base.prompts)
        assert np.array_equal(t.scores, base.scores, equal_nan=True)


def test_per_relation_table_and_column_names() -> None:
    frame = pd.DataFrame(
        {"lm": ["A", "B", "A", "B"], "rel": ["r1", "r1", "r2", "r2"], "p1": [1.0, 2.0, 3.0, 5.0]}
    )
    t = ScoreTable.read(frame, model="lm", unit="rel", score="p1")
    assert t.templates == ("t00",) and t.prompts == (("",), ("",))
    assert np.array_equal(t.original(), t.adjusted())
    assert t.original().tolist() == [[1.0, 2.0], [3.0, 5.0]]
    r = stats.rank_consistency(t.original(), subsets=[[0], [1], [0, 1]])
    assert r.ranks.tolist() == [[2, 1], [2, 1], [2, 1]]


def test_correctness_feeds_the_backdoor_adjustment() -> None:
    t = ScoreTable.read(_frame())
    c = t.correctness()
    assert isinstance(c, Correctness) and c.n_names == 1 and not c.rectangular
    assert c.templates_available(1).tolist() == [0, 1]
    assert np.allclose(adjusted_scores(c).T, t.adjusted(), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(template_scores(c)[:, :, 0].T, t.original())


def test_std_exact_and_reference() -> None:
    t = ScoreTable.read(_frame())
    exact = t.std()
    assert exact[0, 0] == pytest.approx(np.std([25.64, 8.08, 2.05]))
    ref = t.std(reference=True)
    assert ref[0, 0] == round(float(np.std([25.64, 8.08, 2.05])), 2) == 10.01
    # np.std([35.86, 30.97]) is 2.4450000000000003: Python's round gives 2.45
    assert ref[1, 0] == 2.45
    assert ref[2].tolist() == [0.0, 0.0]  # the all-zero relation: std 0, counted in means
    assert t.mean_std(reference=True).tolist() == [
        round((10.01 + 2.45 + 0.0) / 3, 2),
        round((ref[0, 1] + 0.0 + 0.0) / 3, 2),
    ]
    assert t.mean_std(reference=True)[0] == 4.15
    assert np.isnan(t.std(ddof=1)[2]).tolist() == [False, False]


@pytest.mark.parametrize(
    ("frame", "match"),
    [
        (pd.DataFrame({"model": ["A"], "score": [1.0]}), "no 'relation' column .*'model', 'score'"),
        (pd.DataFrame({"model": ["A"], "relation": ["r"]}), "no 'score' column"),
        (
            pd.DataFrame({"model": ["A", None], "relation": ["r", "r"], "score": [1.0, 2.0]}),
            "row 1 \\(position 1\\), field 'model': empty cell",
        ),
        (
            pd.DataFrame({"model": ["A"], "relation": ["r"], "score": ["n/a"]}),
            "row 0 \\(position 0\\), field 'score': score 'n/a' is not a finite number",
        ),
        (
            pd.DataFrame({"model": ["A", "A"], "relation": ["r", "r"], "score": [1.0, 2.0]}),
            "row 1 \\(position 1\\): model 'A', unit 'r' is given twice \\(first at row 0.*name its "
            "prompt column",
        ),
        (
            pd.DataFrame(
                {"model": ["A", "B", "A"], "relation": ["r", "r", "s"], "score": [1.0, 2.0, 3]}
            ),
            "model 'B' has no score for unit 's'",
        ),
        (pd.DataFrame({"model": [], "relation": [], "score": []}), "has no rows"),
    ],
)
def test_errors_name_the_column_and_row(frame: pd.DataFrame, match: str) -> None:
    with pytest.raises(DataError, match=match):
        ScoreTable.read(frame)


def test_csv_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("model,relation,prompt,score\nA,r,p,1.5\nB,r,p,oops\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"t\.csv, line 3, field 'score'.*'oops'"):
        ScoreTable.read(path)
    path.write_text("model,relation,prompt,score\nA,r,p,1\nA,r,p,2\n", encoding="utf-8")
    with pytest.raises(
        DataError,
        match=r"t\.csv, line 3: model 'A', unit 'r', prompt 'p' is given twice \(first at line 2",
    ):
        ScoreTable.read(path)
    path.write_text("model,relation,prompt,score\nA,r,p,1,9\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2.*more cells than header"):
        ScoreTable.read(path)
    path.write_text("model,relation,prompt,score\nA,r,p,1\nA,r,q,2\nB,r,p,3\n", encoding="utf-8")
    with pytest.raises(DataError, match="model 'B' has no score for unit 'r', prompt 'q'"):
        ScoreTable.read(path)
    with pytest.raises(DataError, match="no 'template' column"):
        ScoreTable.read(_frame(), prompt="template")
    with pytest.raises(DataError, match="must be a CSV path"):
        ScoreTable.read(42)  # type: ignore[arg-type]


def test_csv_with_a_byte_order_mark(tmp_path: Path) -> None:
    """Excel's "CSV UTF-8" starts with a byte order mark: the first column keeps its name."""
    path = tmp_path / "excel.csv"
    path.write_bytes("model,relation,score\nA,r,1.5\nB,r,2.5\n".encode("utf-8-sig"))
    table = ScoreTable.read(path)
    assert table.models == ("A", "B") and table.original().tolist() == [[1.5, 2.5]]


def test_a_column_named_twice_is_refused(tmp_path: Path) -> None:
    """Two 'score' columns: the CSV reader (and ``DataFrame.to_dict``) would keep the last."""
    path = tmp_path / "two.csv"
    path.write_text("model,relation,score,score\nA,r,1,9\nB,r,2,8\n", encoding="utf-8")
    with pytest.raises(
        DataError, match=r"two\.csv, line 1, field 'score': the column 'score' appears twice"
    ):
        ScoreTable.read(path)
    frame = pd.DataFrame([["A", "r", 1, 9]], columns=["model", "relation", "score", "score"])
    with pytest.raises(DataError, match="the column 'score' appears twice"):
        ScoreTable.read(frame)


def test_a_numpy_bool_is_not_a_score() -> None:
    """``np.True_`` is refused as Python's ``True`` is (it is not a score of 1)."""
    rows = [
        {"model": "A", "relation": "r", "score": np.True_},
        {"model": "B", "relation": "r", "score": 1},
    ]
    with pytest.raises(DataError, match=r"rows\[0\], field 'score'.*not a finite number"):
        ScoreTable.read(rows)


# -- the study's std with the authors' rounding ----------------------------------------------


def _counts_tensor() -> Correctness:
    """Two models, three templates, 3 facts per unit; unit u1 all wrong."""
    a = np.zeros((2, 3, 1, 3))
    a[0, 0, 0, :1] = 1  # model A: 1/3, 2/3, 3/3 correct
    a[0, 1, 0, :2] = 1
    a[0, 2, 0, :] = 1
    a[1, :, 0, :1] = 1  # model B: 1/3 under every template
    return Correctness(
        models=("A", "B"),
        units=("u0", "u1"),
        templates=("t0", "t1", "t2"),
        n_names=1,
        cells=(a, np.zeros((2, 3, 1, 3))),
        facts=(("f0", "f1", "f2"), ("g0", "g1", "g2")),
    )


OPTS = {
    "n_subsets": 20,
    "subset_size": 1,
    "seed": 0,
    "k_templates": None,
    "k_names": None,
    "weights": "uniform",
    "gap": 0.10,
    "n_resamples": 50,
}


def test_study_std_reference_rounding_by_hand() -> None:
    c = _counts_tensor()
    exact = analyze_tensor(c, OPTS).prompt_preference
    ref = analyze_tensor(c, {**OPTS, "std_rounding": "reference"}).prompt_preference
    assert isinstance(exact, PromptPreference) and isinstance(ref, PromptPreference)
    # exact: std of 1/3, 2/3, 1 = sqrt(2/27); the authors: std of 33.33, 66.67, 100.0
    # = 27.218..., rounded 27.22 (percent)
    a_exact = exact.per_unit["A"]["u0"].std
    assert a_exact == pytest.approx(np.sqrt(2 / 27))
    their = round(float(np.std([33.33, 66.67, 100.0])), 2)
    assert their == 27.22 and ref.per_unit["A"]["u0"].std == their / 100
    assert ref.per_unit["A"]["u1"].std == 0.0  # the all-zero unit: std 0, in the mean
    assert ref.per_model["A"].mean_std == round((27.22 + 0.0) / 2, 2) / 100
    assert exact.per_model["A"].mean_std == pytest.approx(a_exact / 2)
    assert ref.std_rounding == "reference" and exact.std_rounding == "exact"
    assert "std_rounding" not in exact.model_dump(mode="json")
    assert ref.model_dump(mode="json")["std_rounding"] == "reference"


def test_analysis_options_std_rounding() -> None:
    assert "std_rounding" not in AnalysisOptions().to_dict()
    assert AnalysisOptions(std_rounding="reference").to_dict()["std_rounding"] == "reference"
    with pytest.raises(ConfigError, match="std_rounding must be"):
        AnalysisOptions(std_rounding="rounded")  # type: ignore[arg-type]
