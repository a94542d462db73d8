"""``compare_runs`` and ``steadyeval compare``: paired differences, McNemar, Holm, warnings."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from steadyeval import RunOptions, read_results, run, stats
from steadyeval.cli import main
from steadyeval.compare import compare_runs

from .conftest import ITEMS, conditions, scripted


def _outcomes(run_dir: Path, model: str, condition: str) -> dict[str, float]:
    rows = read_results(run_dir).to_pylist()
    return {
        r["item_id"]: float(r["correct"])
        for r in rows
        if r["model"] == model and r["condition"] == condition and r["correct"] is not None
    }


def test_two_models_of_one_run_match_direct_statistics(scripted_run: Path) -> None:
    comp = compare_runs([scripted_run])
    assert [a.model for a in comp.arms] == ["scripted:a", "scripted:b"]
    pair = comp.pairs[0]
    assert [r.condition for r in pair.conditions] == [c.name for c in conditions()]
    raw_p = []
    for r in pair.conditions:
        a = _outcomes(scripted_run, "scripted:a", r.condition)
        b = _outcomes(scripted_run, "scripted:b", r.condition)
        ids = sorted(a)
        va, vb = np.array([a[i] for i in ids]), np.array([b[i] for i in ids])
        assert r.n == len(ids) and r.accuracy_a == pytest.approx(va.mean())
        with pytest.warns(stats.StatsWarning) if np.all(va == vb) else _nothing():
            d = stats.paired_difference(vb, va)
        assert r.difference == pytest.approx(d.estimate)
        assert r.se == pytest.approx(d.se, nan_ok=True)
        t = stats.agreement_table(va, vb)
        assert (r.only_a, r.only_b) == (t.only_a, t.only_b)
        if t.discordant:
            assert r.mcnemar_p == pytest.approx(t.mcnemar().pvalue)
            raw_p.append(r.mcnemar_p)
    adj = [r.holm_p for r in pair.conditions if r.only_a + r.only_b]
    assert adj == pytest.approx(list(stats.holm(raw_p).pvalues))
    assert pair.overall is not None and pair.overall.method == "clustered"
    assert pair.overall.n_clusters == len(ITEMS)
    assert pair.warnings == ()


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_cluster_key_from_a_column_or_metadata(scripted_run: Path) -> None:
    by_subject = compare_runs([scripted_run], cluster="subject").pairs[0].conditions[1]
    by_paragraph = compare_runs([scripted_run], cluster="paragraph").pairs[0].conditions[1]
    assert by_subject.n_clusters == 3 and by_paragraph.n_clusters == 7
    rows = [r for r in read_results(scripted_run).to_pylist() if r["condition"] == "mc"]
    a = {r["item_id"]: r for r in rows if r["model"] == "scripted:a"}
    b = {r["item_id"]: r for r in rows if r["model"] == "scripted:b"}
    ids = sorted(a)
    d = stats.paired_difference(
        [float(b[i]["correct"]) for i in ids],
        [float(a[i]["correct"]) for i in ids],
        [json.loads(a[i]["metadata"])["paragraph"] for i in ids],
    )
    assert by_paragraph.se == pytest.approx(d.se)
    with pytest.raises(ValueError, match="no value for cluster key 'nowhere'"):
        compare_runs([scripted_run], cluster="nowhere")


def test_changed_items_and_prompts_are_flagged(scripted_run: Path, tmp_path: Path) -> None:
    changed = [
        dataclasses.replace(ITEMS[0], question="Question number zero, reworded?"),
        *ITEMS[1:-1],
    ]
    out = tmp_path / "changed"
    run(
        changed,
        conditions(),
        [scripted("a")],
        options=RunOptions(out=out, cache=tmp_path / "c.sqlite", progress=False),
    )
    comp = compare_runs([scripted_run, out], models=["scripted:a"])
    warnings = " ".join(comp.pairs[0].warnings)
    assert "items differ: 1 of 12 shared item ids have a different item_hash" in warnings
    assert "q0" in warnings
    assert "prompts differ:" in warnings
    assert "only in A" in warnings  # the payload item is missing from the second run


def test_errors(scripted_run: Path) -> None:
    with pytest.raises(ValueError, match="a comparison needs two"):
        compare_runs([scripted_run], models=["scripted:a"])
    with pytest.raises(ValueError, match="outcome must be"):
        compare_runs([scripted_run], outcome="accuracy")


def test_two_tiny_models_and_the_cli(tiny_runs: tuple[Path, Path], tmp_path: Path) -> None:
    comp = compare_runs(list(tiny_runs), cluster="subject")
    pair = comp.pairs[0]
    assert pair.a.model != pair.b.model
    assert [r.condition for r in pair.conditions] == ["free", "mc", "mc-nota", "letters-2shot"]
    assert all(r.n == 7 for r in pair.conditions) and pair.warnings == ()
    out = tmp_path / "cmp.json"
    result = CliRunner().invoke(
        main,
        [
            "compare",
            str(tiny_runs[0]),
            str(tiny_runs[1]),
            "--cluster",
            "subject",
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "B − A on correct" in result.output and "letters-2shot" in result.output
    data = json.loads(out.read_text())
    assert data["cluster"] == "subject" and len(data["pairs"][0]["conditions"]) == 4
    assert data == json.loads(json.dumps(comp.to_dict()))
    bad = CliRunner().invoke(main, ["compare", str(tiny_runs[0])])
    assert bad.exit_code == 2 and "a comparison needs two" in bad.output
