"""``compare_runs`` and ``steadyeval compare``: paired differences, McNemar, Holm, warnings."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
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


def _scripted_run(out: Path, items: list, conds: list, models: list[str]) -> Path:
    run(
        items,
        conds,
        [scripted(m) for m in models],
        options=RunOptions(out=out, cache=out.parent / "c.sqlite", progress=False),
    )
    return out


def test_unrelated_runs_are_an_error_that_says_why(scripted_run: Path, tmp_path: Path) -> None:
    """Two runs that share no (item, condition, sample) unit: exit 2 and a message naming
    the keys that differ (was: exit 0 and an empty table)."""
    other_items = [dataclasses.replace(i, id=f"other-{i.id}") for i in ITEMS[:3]]
    renamed = [dataclasses.replace(c, name=f"{c.name}-v2") for c in conditions()[:2]]
    disjoint = _scripted_run(tmp_path / "disjoint", other_items, renamed, ["b"])
    with pytest.raises(ValueError, match="nothing to compare") as err:
        compare_runs([scripted_run, disjoint], models=["scripted:a", "scripted:b"])
    message = str(err.value)
    assert "item ids: none shared (A has 13: q0, q1, q2, q3, q4, …" in message
    assert "B has 3: other-q0, other-q1, other-q2)" in message
    assert "conditions: none shared" in message and "free-v2, mc-v2" in message
    assert "sample indices: the same 1 (0)" in message
    assert message.startswith("nothing to compare: A (scripted:a in ")
    assert " and B (scripted:b in " in message and "joined without them" in message
    result = CliRunner().invoke(main, ["compare", str(scripted_run), str(disjoint)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: nothing to compare: A (scripted:a in")
    assert "B has 3" in result.output and "Traceback" not in result.output
    lines = result.output.strip().splitlines()  # the arms, then one line per key
    assert len(lines) == 4 and lines[1].startswith("  item ids: none shared")
    # The same item ids and conditions, never the same (item, condition): each key alone
    # is shared, no unit is (two halves of one run's table, written as .parquet files).
    table = read_results(scripted_run)
    first = pc.is_in(table.column("item_id"), pa.array([f"q{i}" for i in range(6)]))
    free = pc.equal(table.column("condition"), "free")
    mc = pc.equal(table.column("condition"), "mc")
    halves = []
    for name, keep in (
        ("x", pc.or_(pc.and_(first, free), pc.and_(pc.invert(first), mc))),
        ("y", pc.or_(pc.and_(first, mc), pc.and_(pc.invert(first), free))),
    ):
        keep = pc.and_(keep, pc.equal(table.column("model"), "scripted:a"))
        halves.append(tmp_path / f"{name}.parquet")
        pq.write_table(table.filter(keep), halves[-1])
    with pytest.raises(ValueError, match="nothing to compare") as err:
        compare_runs(halves)
    message = str(err.value)
    assert "item ids: the same 13 (q0, q1, q2, q3, q4, …)" in message
    assert "conditions: the same 2 (free, mc)" in message
    assert "each key is shared on its own, but no (item, condition, sample) is" in message
    assert message.count("(scripted:a in ") == 2


def test_shared_units_without_an_outcome_are_an_error(scripted_run: Path, tmp_path: Path) -> None:
    """Units that pair, none with a value of the compared outcome on both sides."""
    table = read_results(scripted_run)
    table = table.filter(pc.equal(table.column("model"), "scripted:a"))
    pq.write_table(table, tmp_path / "a.parquet")
    empty = pa.nulls(table.num_rows, pa.bool_())
    pq.write_table(
        table.set_column(table.schema.get_field_index("correct"), "correct", empty),
        tmp_path / "b.parquet",
    )
    with pytest.raises(ValueError, match=r"share 65 .* none has a correct value on both sides"):
        compare_runs([tmp_path / "a.parquet", tmp_path / "b.parquet"])
