"""The generic sections' numbers, checked against direct computations."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from steadyeval import DataError, stats
from steadyeval.reports import (
    Bar,
    BarChart,
    Column,
    Heatmap,
    ItemTable,
    LineChart,
    Note,
    Paragraph,
    Preformatted,
    Report,
    ReportOptions,
    Section,
    Table,
    build_report,
    context_from_table,
    render_html,
    render_markdown,
    sections_markdown,
)
from steadyeval.reports._agreement import noise_floor
from steadyeval.results import (
    Analysis,
    NoiseFloorFact,
    RankConsistencyFacts,
    RankConsistencySetting,
    write_results,
)
from steadyeval.studies import Study, StudyConfig, StudyDesign, register_study
from tests.results_table import table_of


def _rows(
    outcomes: dict[str, Sequence[int | None]], model: str = "m", **extra: Any
) -> list[dict[str, Any]]:
    out = []
    for cond, values in outcomes.items():
        for i, v in enumerate(values):
            out.append(
                {
                    "model": model,
                    "item_id": f"i{i}",
                    "condition": cond,
                    "sample_index": 0,
                    "correct": None if v is None else bool(v),
                    "metadata": "{}",
                    **extra,
                }
            )
    return out


def _blocks(report: Any, kind: type) -> list[Any]:
    return [b for s in report.sections for b in s.blocks if isinstance(b, kind)]


def _section(report: Any, sid: str) -> Section:
    return next(s for s in report.sections if s.id == sid)


A = [1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1]
B = [1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0]
C = [1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 0]


def test_agreement_pairs_match_stats_directly() -> None:
    table = table_of(_rows({"a": A, "b": B, "c": C}))
    report = build_report(context_from_table(table, {"conditions": ["a", "b", "c"]}))
    pairs = next(t for t in _blocks(report, Table) if "pairs of conditions on correct" in t.title)
    got = {(r[1], r[2]): r for r in pairs.rows}
    raw = []
    for x, y, xs, ys in (("a", "b", A, B), ("a", "c", A, C), ("b", "c", B, C)):
        t = stats.agreement_table(xs, ys)
        row = got[(x, y)]
        assert row[3:9] == (t.n, t.both, t.only_a, t.only_b, t.neither, t.discordant)
        assert row[9] == pytest.approx(t.mcnemar().pvalue)
        raw.append(t.mcnemar().pvalue)
    holm = stats.holm(raw).pvalues
    for (x, y), h in zip((("a", "b"), ("a", "c"), ("b", "c")), holm, strict=True):
        assert got[(x, y)][10] == pytest.approx(h)
    hm = _blocks(report, Heatmap)[0]
    assert hm.row_labels == ("a", "b", "c")
    ab = stats.agreement_table(A, B)
    assert hm.values[0][1] == pytest.approx(ab.discordant / ab.n) == hm.values[1][0]
    assert hm.text[0][1].startswith(f"{ab.discordant}/{ab.n}\n")
    assert not hm.marked  # no noise floor in this run


def test_units_missing_in_one_condition_are_left_out_of_that_pair() -> None:
    table = table_of(_rows({"a": [1, 0, 1, None], "b": [1, 1, None, 0]}))
    report = build_report(context_from_table(table))
    pairs = next(t for t in _blocks(report, Table) if "pairs of conditions" in t.title)
    assert pairs.rows[0][3:9] == (2, 1, 0, 1, 0, 1)


def test_refusal_matrix_and_noise_floor_marking() -> None:
    refused = {
        "free": [1, 1, 0, 0, 1, 0, 0, 0],
        "nota": [1, 0, 1, 0, 1, 1, 1, 0],
        "refusal": [1, 0, 1, 1, 1, 1, 1, 1],
    }
    rows = []
    for cond, vals in refused.items():
        for i, v in enumerate(vals):
            rows.append(
                {
                    "model": "m",
                    "item_id": f"i{i}",
                    "condition": cond,
                    "sample_index": 0,
                    "correct": bool(v),
                    "refused": bool(v),
                    "metadata": "{}",
                }
            )
    analysis = {
        "noise_floor": [
            {
                "model": "m",
                "subset": "unanswerable",
                "outcome": "refused",
                "phrase": {"a": "nota", "b": "refusal", "flips": 1},
            },
            {
                "model": "m",
                "subset": "answerable",
                "outcome": "refused",
                "phrase": {"a": "nota", "b": "refusal", "flips": 1},
            },
            {"model": "other", "subset": "answerable", "phrase": {"a": "x", "b": "y", "flips": 9}},
        ]
    }
    ctx = context_from_table(table_of(rows), {"study": "formats-test", "analysis": analysis})
    report = build_report(ctx)
    maps = {h.title: h for h in _blocks(report, Heatmap)}
    hm = maps["m: agreement on refused"]
    # the floor pair nota/refusal flips on 2 units here; free vs nota flips on 4, free vs
    # refusal on 5: only those exceed the floor
    idx = {c: i for i, c in enumerate(hm.row_labels)}
    assert hm.marked[idx["free"]][idx["nota"]] and hm.marked[idx["free"]][idx["refusal"]]
    assert not hm.marked[idx["nota"]][idx["refusal"]]
    assert "noise floor: 2 flips between nota and refusal" in (hm.legend or "")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),
        (7, 7.0),
        ({"flips": 5, "a": "x", "b": "y"}, 5.0),
        (
            [
                {"model": "m", "phrase": {"a": "x", "b": "y", "flips": 3}},
                {"model": "m", "phrase": {"a": "x", "b": "y", "flips": 4}},
            ],
            7.0,
        ),
        ([{"model": "m", "phrase": {"a": "x", "b": "y", "flips": None}}], None),
        ([{"model": "other", "flips": 3}], None),
        ([{"model": "m", "outcome": "correct", "flips": 2}], None),
    ],
)
def test_noise_floor_readers(raw: Any, expected: float | None) -> None:
    got = noise_floor({} if raw is None else {"noise_floor": raw}, "m", "refused")
    assert (got.flips if got else None) == expected


def test_spread_section_matches_stats_spread() -> None:
    table = table_of(_rows({"a": A, "b": B, "c": C}))
    opts = ReportOptions(n_resamples=300, seed=4)
    report = build_report(context_from_table(table, options=opts))
    row = next(t for t in _blocks(report, Table) if t.title.startswith("Worst and best")).rows[0]
    s = stats.spread(np.array([A, B, C], dtype=float).T, n_resamples=300, seed=4)
    assert row[1:4] == (20, 3, "b")
    assert row[4] == (s.min.estimate, s.min.low, s.min.high)
    assert row[7] == (s.best_minus_worst.estimate, s.best_minus_worst.low, s.best_minus_worst.high)
    assert row[10] == (s.cps.estimate, s.cps.low, s.cps.high)


def test_spread_resamples_are_bounded_on_large_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from steadyeval.reports import _sections

    monkeypatch.setattr(_sections, "BOOTSTRAP_CELL_BUDGET", 60 * 250)
    table = table_of(_rows({"a": A, "b": B, "c": C}))
    report = build_report(context_from_table(table, options=ReportOptions(n_resamples=1000)))
    text = " ".join(p.text for p in _blocks(report, Paragraph))
    assert "250 resamples: fewer than the 1000 asked for" in text


def test_calibration_and_shots() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for k, cond in ((0, "zero"), (5, "five")):
        for i in range(40):
            conf = float(rng.uniform(0.3, 1.0))
            rows.append(
                {
                    "model": "m",
                    "item_id": f"i{i}",
                    "condition": cond,
                    "sample_index": 0,
                    "n_shots": k,
                    "confidence": conf,
                    "correct": bool(rng.uniform() < conf),
                    "metadata": "{}",
                }
            )
    table = table_of(rows)
    report = build_report(context_from_table(table))
    cal = next(t for t in _blocks(report, Table) if t.title.startswith("Calibration"))
    zero = [r for r in rows if r["condition"] == "zero"]
    conf = np.array([r["confidence"] for r in zero])
    corr = np.array([r["correct"] for r in zero])
    ece = stats.expected_calibration_error(conf, corr, n_bins=10).statistic
    assert cal.rows[0][:3] == ("m", "zero", 40)
    assert cal.rows[0][5] == pytest.approx(ece)
    diagram = next(b for b in _blocks(report, LineChart) if "reliability" in b.title)
    bins = stats.reliability_bins(conf, corr, n_bins=10)
    assert [p.n for p in diagram.series[0].points] == [int(c) for c in bins.count if c]
    shots = next(t for t in _blocks(report, Table) if t.title == "Accuracy by number of shots")
    se = stats.clustered_se(corr.astype(float), [r["item_id"] for r in zero])
    iv = se.interval(0.95)
    assert shots.rows[0][:4] == ("m", 0, 1, 40)
    assert shots.rows[0][4] == pytest.approx((se.mean, iv.low, iv.high))


def test_rank_consistency_from_the_analysis() -> None:
    table = table_of(_rows({"a": A}))
    analysis = {
        "models": ["m1", "m2"],
        "rank_consistency": {
            "original": {"per_model": [0.5, 0.75], "overall": 0.255},
            "intervention": {"per_model": {"m1": 0.9, "m2": 0.8}, "overall": 0.685},
        },
    }
    report = build_report(context_from_table(table, {"analysis": analysis}))
    sec = _section(report, "rank-consistency")
    bars = [b for b in sec.blocks if isinstance(b, BarChart)]
    assert [(x.label, x.estimate) for x in bars[0].bars] == [
        ("m1", 0.5),
        ("m2", 0.75),
        ("overall", 0.255),
    ]
    assert bars[1].title == "Rank consistency: intervention"
    # the sensitivity study's layout: regimes under "regimes", with design facts
    sens = {
        "models": ["m1", "m2"],
        "rank_consistency": {
            "applicable": True,
            "n_subsets": 1000,
            "subset_size": 20,
            "n_units": 41,
            "regimes": {
                "original": {
                    "overall": 0.255,
                    "per_model": {"m1": 0.4, "m2": 0.6},
                    "modal_rank": {"m1": 2, "m2": 1},
                },
                "random": {
                    "overall": 0.055,
                    "per_model": {"m1": 0.3, "m2": 0.35},
                    "modal_rank": {"m1": 1, "m2": 2},
                },
            },
        },
    }
    sec = _section(build_report(context_from_table(table, {"analysis": sens})), "rank-consistency")
    table_rc = next(b for b in sec.blocks if isinstance(b, Table))
    assert table_rc.rows[:3] == (
        ("original", "m1", 0.4, 2),
        ("original", "m2", 0.6, 1),
        ("original", "overall", 0.255, None),
    )
    assert "1000 subsets of 20 of 41 units" in next(
        b.text for b in sec.blocks if isinstance(b, Paragraph)
    )
    off = {"rank_consistency": {"applicable": False, "reason": "one model"}}
    assert "rank-consistency" not in [
        s.id for s in build_report(context_from_table(table, {"analysis": off})).sections
    ]
    bad = {"rank_consistency": {"per_model": [0.1], "models": ["x", "y"]}}
    with pytest.raises(ValueError, match="per_model must map model"):
        build_report(context_from_table(table, {"analysis": bad}))


class _TypedFacts(Analysis):
    """Test analysis: a registered study's typed facts for the generic sections."""

    floor: int
    share: float

    def noise_floors(self) -> list[NoiseFloorFact]:
        return [NoiseFloorFact(model="m", outcome="refused", flips=self.floor, a="x", b="y")]

    def rank_consistency_facts(self) -> RankConsistencyFacts:
        setting = RankConsistencySetting(setting="typed", per_model={"m": self.share})
        return RankConsistencyFacts(n_subsets=10, subset_size=3, settings=[setting])


def test_the_generic_sections_read_a_registered_studys_typed_analysis() -> None:
    """The typed analysis wins over summary.json's dict (which a report may have recomputed
    because it disagreed with the table)."""
    import dataclasses

    stale = {"noise_floor": 99, "rank_consistency": {"per_model": {"m": 0.1}}}
    ctx = context_from_table(table_of(_rows({"a": A})), {"analysis": stale})
    typed = dataclasses.replace(ctx, study_analysis=_TypedFacts(floor=3, share=0.6))
    assert noise_floor(typed.study_analysis, "m", "refused").flips == 3  # type: ignore[arg-type,union-attr]
    assert noise_floor(typed.study_analysis, "m", "correct") is None  # type: ignore[arg-type]
    assert noise_floor(stale, "m", "refused").flips == 99  # type: ignore[union-attr]
    from steadyeval.reports._sections import rank_consistency_section

    sec = rank_consistency_section(typed)
    assert sec is not None
    table_rc = next(b for b in sec.blocks if isinstance(b, Table))
    assert table_rc.rows == (("typed", "m", 0.6, None),)
    assert "10 subsets of 3)" in next(b.text for b in sec.blocks if isinstance(b, Paragraph))
    old = rank_consistency_section(ctx)
    assert old is not None and next(b for b in old.blocks if isinstance(b, Table)).rows[0][2] == 0.1


def test_item_table_is_bounded_and_keeps_items_whole() -> None:
    rng = np.random.default_rng(1)
    rows = []
    for i in range(300):
        for c in ("a", "b", "c"):
            rows.append(
                {
                    "model": "m",
                    "item_id": f"i{i}",
                    "condition": c,
                    "sample_index": 0,
                    "correct": bool(rng.uniform() < 0.5),
                    "output": "x" * 500,
                    "metadata": "{}",
                }
            )
    table = table_of(rows)
    opts = ReportOptions(max_item_rows=100, max_chars=40, n_resamples=50)
    report = build_report(context_from_table(table, options=opts))
    items = _blocks(report, ItemTable)[0]
    assert items.total_rows == 900 and len(items.rows) == 99
    per_item: dict[str, int] = {}
    for r in items.rows:
        per_item[r[0]] = per_item.get(r[0], 0) + 1
        assert len(r[4]) == 40 and r[4].endswith("…")
    assert set(per_item.values()) == {3}  # every shown item has all its conditions
    assert (
        "99 of 900 rows (801 left out): every row of 33 of 300 items drawn at random (seed 0)"
        in items.note
    )
    assert "at most 100 rows" in items.note and "cut at 40 characters" in items.note
    again = _blocks(build_report(context_from_table(table, options=opts)), ItemTable)[0]
    assert again.rows == items.rows  # seeded
    small = _blocks(
        build_report(
            context_from_table(table, options=ReportOptions(max_item_rows=2000, n_resamples=50))
        ),
        ItemTable,
    )[0]
    assert len(small.rows) == 900 and small.note.startswith("All 900 rows.")


def test_html_size_is_bounded_by_the_item_limit() -> None:
    rows = [
        {
            "model": "m",
            "item_id": f"i{i}",
            "condition": c,
            "sample_index": 0,
            "correct": i % 2 == 0,
            "output": "y" * 1000,
            "metadata": "{}",
        }
        for i in range(2000)
        for c in ("a", "b")
    ]
    table = table_of(rows)
    opts = ReportOptions(max_item_rows=200, max_chars=100, n_resamples=50)
    page = render_html(build_report(context_from_table(table, options=opts)))
    assert len(page.encode()) < 200_000
    assert page.count("y" * 99) == 200


class _DemoAnalysis(Analysis):
    flips: int


def _demo(flips: int) -> dict[str, Any]:
    return _DemoAnalysis(flips=flips).to_json()


class _DemoStudy(Study[_DemoAnalysis]):
    """A study for this test only: its sections show one number of its analysis."""

    name = "demo_unit_study"
    question = "a demo"
    config = StudyConfig
    analysis_type = _DemoAnalysis

    def design(self, config: Any, backends: Any, options: Any) -> StudyDesign:
        return StudyDesign(blocks=())

    def analyze(self, results: Any, info: Any) -> _DemoAnalysis:
        return _DemoAnalysis(flips=48)

    def sections(
        self, analysis: _DemoAnalysis, info: Any, *, figures: bool = True
    ) -> list[Section]:
        flips = analysis.flips
        return [
            Section.of(
                "demo-study",
                "Demo study",
                [
                    Paragraph(f"{flips} items flip."),
                    Table("Flips", (Column("flips", "int"),), ((flips,),)),
                ],
                source="demo study",
            )
        ]


class _BrokenStudy(_DemoStudy):
    name = "demo_broken_study"
    error: Exception = ZeroDivisionError("a bug in the study's report code")

    def sections(
        self, analysis: _DemoAnalysis, info: Any, *, figures: bool = True
    ) -> list[Section]:
        raise self.error


class _ForeignAnalysisStudy(_BrokenStudy):
    """A study whose sections meet an analysis of another shape (a hand-edited or foreign
    run folder)."""

    name = "demo_foreign_analysis_study"
    error = KeyError("rates")


def test_registered_study_sections_appear_in_every_format() -> None:
    study = register_study(_DemoStudy(), replace=True)
    assert register_study(study) is study  # the same object again: no error
    with pytest.raises(ValueError, match="already registered"):
        register_study(_DemoStudy())
    table = table_of(_rows({"a": A, "b": B}))
    ctx = context_from_table(table, {"study": "demo_unit_study", "analysis": _demo(48)})
    report = build_report(ctx)
    ids = [s.id for s in report.sections]
    assert ids[:2] == ["headline", "demo-study"] and ids.count("demo-study") == 1
    assert "48 items flip." in render_html(report)
    assert "## Demo study" in render_markdown(report)
    register_study(_BrokenStudy(), replace=True)
    with pytest.raises(RuntimeError, match="sections of study 'demo_broken_study' failed"):
        build_report(
            context_from_table(table, {"study": "demo_broken_study", "analysis": _demo(1)})
        )
    register_study(_ForeignAnalysisStudy(), replace=True)
    with pytest.raises(
        DataError, match="analysis is not what study 'demo_foreign_analysis_study' writes"
    ):
        summary = {"study": "demo_foreign_analysis_study", "analysis": _demo(1)}
        build_report(context_from_table(table, summary))


class _LeadStudy(_DemoStudy):
    name = "demo_lead_study"

    def sections(
        self, analysis: _DemoAnalysis, info: Any, *, figures: bool = True
    ) -> list[Section]:
        (own,) = super().sections(analysis, info, figures=figures)
        answer = Section.of("demo-answer", "The answer", [Paragraph("A beats B.")], lead=True)
        return [own, answer]


def test_lead_sections_come_before_the_headline_and_long_facts_fold() -> None:
    register_study(_LeadStudy(), replace=True)
    models = [f"hf-masked:pet-{i:012x}?max_length=128" for i in range(40)]
    rows = [r for i, m in enumerate(models) for r in _rows({f"c{i}": A[:4]}, model=m)]
    ctx = context_from_table(table_of(rows), {"study": "demo_lead_study", "analysis": _demo(1)})
    report = build_report(ctx)
    assert [s.id for s in report.sections][:3] == ["demo-answer", "headline", "demo-study"]
    page = render_html(report).replace("<wbr>", "")  # (line-break opportunities in names)
    # 40 model names (1,600 characters) fold behind their first 200 characters.
    assert page.count('<details class="long-fact">') == 1
    folded = page.split('<details class="long-fact"><summary>', 1)[1].split("</summary>", 1)
    assert folded[0].startswith(models[0]) and "(show all)" in folded[0]
    assert all(m in folded[1].split("</details>", 1)[0] for m in models)
    assert "## The answer" in render_markdown(report).split("## Headline", 1)[0]


def test_study_without_sections_shows_its_summary_md(tmp_path: Path) -> None:
    from steadyeval.results import summary_markdown

    table = table_of(_rows({"a": A, "b": B}))
    write_results(table, tmp_path / "results.parquet")
    base = {
        "run_id": "r1",
        "n_rows": 40,
        "n_items": 20,
        "models": ["m"],
        "conditions": ["a", "b"],
        "n_skipped": 0,
        "skipped": [],
        "by_condition": [],
        "plan": {"requests": 0, "unique": 0, "cache_hits": 0, "model_calls": 0},
    }
    summary = {**base, "study": "no_such_study_here", "analysis": {}}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "summary.md").write_text(summary_markdown(base) + "\n# Study part\n\n<b>x</b>\n")
    report = build_report(tmp_path, ReportOptions(n_resamples=50))
    sec = _section(report, "study")
    assert isinstance(sec.blocks[0], Note)
    pre = sec.blocks[1]
    assert isinstance(pre, Preformatted) and pre.text == "# Study part\n\n<b>x</b>"
    assert "&lt;b&gt;x&lt;/b&gt;" in render_html(report)


def test_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no results\.parquet"):
        build_report(tmp_path)
    with pytest.raises(ValueError, match="max_item_rows must be a positive integer"):
        ReportOptions(max_item_rows=0)
    write_results(table_of(_rows({"a": A})), tmp_path / "results.parquet")
    (tmp_path / "summary.json").write_text("{\n  oops\n}")
    with pytest.raises(ValueError, match=r"summary.json, line 2: invalid JSON at column 3"):
        build_report(tmp_path)


def test_a_long_table_of_contents_folds() -> None:
    """Over 20 sections (a few-shot run: three per task x method), the contents show the
    first eight and the last three, and every section behind a fold."""

    def nav(n: int) -> str:
        secs = tuple(Section.of(f"s{i}", f"Section {i}", [Paragraph("x")]) for i in range(n))
        page = render_html(Report(title="t", sections=secs))
        return page.split('<nav class="toc">', 1)[1].split("</nav>", 1)[0]

    short, long = nav(20), nav(30)
    assert short.count("<a ") == 20 and "<details>" not in short
    shown, folded = long.split("<details>", 1)
    assert shown.count("<a ") == 11 and 'href="#s29"' in shown and 'href="#s8"' not in shown
    assert folded.count("<a ") == 30 and "all 30 sections" in folded


def test_long_tables_and_bar_charts_fold() -> None:
    """A table or bar chart of more than FOLD_ROWS rows (100 formats of a sparse spread
    design) sits behind a fold in the HTML report; shorter ones are shown as they are; the
    Markdown report keeps every row."""
    from steadyeval.reports._html import FOLD_ROWS

    def blocks(n: int) -> list[Any]:
        names = [f"format-{i}" for i in range(n)]
        table = Table(
            "Accuracy", (Column("format"), Column("n", "int")), tuple((m, 2) for m in names)
        )
        bars = BarChart("Bars", tuple(Bar(m, 0.5, 0.1, 0.9, n=2) for m in names))
        return [table, bars]

    def page(n: int) -> str:
        return render_html(Report(title="t", sections=(Section.of("s", "S", blocks(n)),)))

    short, long = page(FOLD_ROWS), page(FOLD_ROWS + 1).replace("<wbr>", "")
    assert '<details class="fold">' not in short
    assert long.count('<details class="fold">') == 2
    assert f"{FOLD_ROWS + 1} rows (show)" in long and f"{FOLD_ROWS + 1} bars (show)" in long
    folded = long.split('<details class="fold">', 1)[1].split("</details>", 1)[0]
    assert f"format-{FOLD_ROWS}" in folded  # every row is inside the fold
    md = sections_markdown([Section.of("s", "S", blocks(FOLD_ROWS + 1))])
    assert f"| format-{FOLD_ROWS} | 2 |" in md
