"""Agreement between conditions: per-pair 2×2 tables, McNemar with Holm, the noise floor,
and examples of items that flip."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from .. import stats
from ..document import Block, Column, Heatmap, Note, Paragraph, Section, Table, format_cell
from ..results import Analysis
from ._context import ReportContext

__all__ = ["NoiseFloor", "PairAgreement", "agreement_section", "noise_floor", "outcome_matrix"]


@dataclass(frozen=True)
class PairAgreement:
    """Two conditions of one model compared on one binary outcome over their shared units."""

    model: str
    outcome: str
    a: str
    b: str
    n: int
    both: int
    only_a: int
    only_b: int
    neither: int
    pvalue: float
    pvalue_holm: float

    @property
    def flips(self) -> int:
        """Units on which the two conditions disagree."""
        return self.only_a + self.only_b


@dataclass(frozen=True)
class NoiseFloor:
    """Flips that two nearly identical conditions already show; more is a real difference."""

    flips: float
    label: str
    pair: tuple[str, str] | None = None


def outcome_matrix(
    frame: pd.DataFrame, model: str, outcome: str, conditions: Sequence[str]
) -> tuple[pd.Index, NDArray[np.float64]]:  # type: ignore[type-arg]
    """Units (item, sample) × conditions matrix of ``outcome`` (1, 0, NaN) for one model."""
    sub = frame.loc[frame["model"] == model, ["item_id", "sample_index", "condition", outcome]]
    wide = (
        sub.groupby(["item_id", "sample_index", "condition"], sort=False, dropna=False)[outcome]
        .first()
        .unstack("condition")
    )
    wide = wide.reindex(columns=list(conditions))
    return wide.index, wide.to_numpy(dtype=np.float64, na_value=np.nan)


def _quiet_mcnemar(table: stats.AgreementTable) -> float:
    return float(stats.quietly(table.mcnemar).pvalue)


def pair_agreements(
    matrix: NDArray[np.float64], conditions: Sequence[str], model: str, outcome: str
) -> list[PairAgreement]:
    """Every pair of conditions (columns of ``matrix``) on their shared units, Holm-adjusted
    across the pairs (the family is this model and outcome)."""
    raw: list[tuple[str, str, stats.AgreementTable, float]] = []
    for i, j in itertools.combinations(range(len(conditions)), 2):
        mask = ~np.isnan(matrix[:, i]) & ~np.isnan(matrix[:, j])
        if not mask.any():
            continue
        t = stats.agreement_table(matrix[mask, i] > 0.5, matrix[mask, j] > 0.5)
        raw.append((conditions[i], conditions[j], t, _quiet_mcnemar(t)))
    finite = [k for k, r in enumerate(raw) if not math.isnan(r[3])]
    holm = np.full(len(raw), np.nan)
    if finite:
        holm[finite] = stats.holm([raw[k][3] for k in finite]).pvalues
    return [
        PairAgreement(model, outcome, a, b, t.n, t.both, t.only_a, t.only_b, t.neither, p, float(h))
        for (a, b, t, p), h in zip(raw, holm, strict=True)
    ]


def _int(x: Any) -> int | None:
    if isinstance(x, bool) or not isinstance(x, int | float) or math.isnan(float(x)):
        return None
    return int(x)


def noise_floor(
    analysis: Analysis | Mapping[str, Any],
    model: str,
    outcome: str,
    label: Callable[[str], str] = str,
) -> NoiseFloor | None:
    """The noise floor a study's analysis defines for ``model`` and ``outcome``, if any
    (its text names the pair by ``label``, the report's label of a condition).

    A typed analysis gives its :meth:`~steadyeval.results.Analysis.noise_floors`; a model's
    facts (one per subset) are summed. For a study the registry does not know, the floor is
    read from ``summary.json``'s ``analysis["noise_floor"]``: a number (flips, for every
    model and outcome), a dict, or a list of dicts, each naming ``model``, ``outcome``
    (default ``refused`` for entries holding ``phrase``), ``flips`` and the pair ``a``/``b``
    (or those under ``phrase``).
    """
    if isinstance(analysis, Analysis):
        facts = analysis.noise_floors()
        if facts is None:
            return None
        mine = [f for f in facts if f.model in (None, model) and f.outcome == outcome]
        return _summed([(f.flips, f.a, f.b) for f in mine], label)
    raw = analysis.get("noise_floor")
    if raw is None:
        return None
    if _int(raw) is not None:
        return NoiseFloor(float(raw), "noise floor defined by the run's analysis")
    entries = [raw] if isinstance(raw, Mapping) else raw if isinstance(raw, list) else []
    parts = []
    for e in entries:
        if not isinstance(e, Mapping) or e.get("model", model) != model:
            continue
        src = e.get("phrase") if isinstance(e.get("phrase"), Mapping) else e
        assert isinstance(src, Mapping)
        if e.get("outcome", "refused" if "phrase" in e else outcome) != outcome:
            continue
        parts.append((_int(src.get("flips")), src.get("a"), src.get("b")))
    return _summed(parts, label)


def _summed(
    parts: list[tuple[int | None, Any, Any]], label: Callable[[str], str]
) -> NoiseFloor | None:
    """The floor of a model's parts (flips, a, b): their flips summed, the last named pair;
    None when there is no part or one was not measured (the sum would be wrong)."""
    if not parts or any(flips is None for flips, _, _ in parts):
        return None
    total, pair = 0, None
    for flips, a, b in parts:
        if isinstance(a, str) and isinstance(b, str):
            pair = (a, b)
        total += flips or 0
    text = f"noise floor: {total} flips"
    if pair is not None:
        text += f" between {label(pair[0])} and {label(pair[1])}"
    return NoiseFloor(float(total), text + " (from the run's analysis)", pair)


def _heatmap(
    pairs: Sequence[PairAgreement],
    conditions: Sequence[str],
    floor: NoiseFloor | None,
    label: Callable[[str], str],
) -> Heatmap:
    index = {c: i for i, c in enumerate(conditions)}
    k = len(conditions)
    values = [[math.nan] * k for _ in range(k)]
    text = [[""] * k for _ in range(k)]
    marked = [[False] * k for _ in range(k)]
    threshold = floor.flips if floor is not None else None
    if floor is not None and floor.pair is not None:
        own = [p for p in pairs if {p.a, p.b} == set(floor.pair)]
        if own:  # the floor pair measured exactly like every other cell
            threshold = own[0].flips
    for p in pairs:
        i, j = index[p.a], index[p.b]
        share = p.flips / p.n if p.n else math.nan
        ptext = format_cell(p.pvalue, "pvalue")
        cell = f"{p.flips}/{p.n}\n" + (
            "no flips" if not p.flips else f"p{ptext if ptext.startswith('<') else '=' + ptext}"
        )
        above = threshold is not None and p.flips > threshold
        for r, c in ((i, j), (j, i)):
            values[r][c] = share
            text[r][c] = cell
            marked[r][c] = above
    for i in range(k):
        text[i][i] = "—"
    shares = [p.flips / p.n for p in pairs if p.n]
    top = max(shares) if shares else 0.0
    legend = (
        "cell: flips / shared units and McNemar's exact p (no test where nothing flips); "
        f"colour: share of units that flip (white 0% to darkest {100 * top:.1f}%)"
    )
    if floor is not None:
        legend += f"; outlined: more flips than the {floor.label}"
        if threshold is not None and threshold != floor.flips:
            legend += f", {int(threshold)} on the units shown here"
    return Heatmap(
        title="",
        row_labels=tuple(label(c) for c in conditions),
        col_labels=tuple(label(c) for c in conditions),
        values=tuple(tuple(r) for r in values),
        text=tuple(tuple(r) for r in text),
        marked=tuple(tuple(r) for r in marked) if floor is not None else (),
        value_label="share of units that flip",
        legend=legend,
    )


_PAIR_COLUMNS = (
    Column("model"),
    Column("A"),
    Column("B"),
    Column("n", "int", "units (item, sample) both conditions have"),
    Column("both", "int"),
    Column("only A", "int"),
    Column("only B", "int"),
    Column("neither", "int"),
    Column("flips", "int", "only A + only B"),
    Column("McNemar p", "pvalue", "exact, two-sided"),
    Column("Holm p", "pvalue", "Holm-adjusted across the pairs of this model and outcome"),
)


def _examples(
    ctx: ReportContext,
    model: str,
    outcome: str,
    pair: PairAgreement,
) -> Table | None:
    """Up to 8 seeded examples of units that flip between the pair with the most flips."""
    df = ctx.frame
    sel = df.loc[(df["model"] == model) & df["condition"].isin([pair.a, pair.b])]
    wide = (
        sel.groupby(["item_id", "sample_index", "condition"], sort=False)[outcome]
        .first()
        .unstack("condition")
    )
    if pair.a not in wide.columns or pair.b not in wide.columns:
        return None
    both = wide[[pair.a, pair.b]].dropna()
    flipping = both.index[(both[pair.a] > 0.5) != (both[pair.b] > 0.5)]
    if len(flipping) == 0:
        return None
    rng = np.random.default_rng(ctx.options.seed)
    chosen = sorted(rng.choice(len(flipping), size=min(8, len(flipping)), replace=False).tolist())
    keys = [flipping[i] for i in chosen]
    outputs = _outputs(ctx.table, model, [pair.a, pair.b], [k[0] for k in keys])
    cut = ctx.options.max_chars
    rows = []
    for item, sample in keys:
        oa = outputs.get((item, sample, pair.a), "")
        ob = outputs.get((item, sample, pair.b), "")
        rows.append(
            (
                item,
                int(sample) if not math.isnan(sample) else None,
                _cut(oa, cut),
                bool(both.loc[(item, sample), pair.a] > 0.5),
                _cut(ob, cut),
                bool(both.loc[(item, sample), pair.b] > 0.5),
            )
        )
    a, b = ctx.label(pair.a), ctx.label(pair.b)
    return Table(
        title=f"{model}: examples of {outcome} flips between {a} and {b}",
        columns=(
            Column("item"),
            Column("sample", "int"),
            Column(f"output ({a})", wide=True),
            Column(f"{outcome} ({a})", "bool"),
            Column(f"output ({b})", wide=True),
            Column(f"{outcome} ({b})", "bool"),
        ),
        rows=tuple(rows),
        note=f"{len(rows)} of {len(flipping)} flipping units, drawn at random "
        f"(seed {ctx.options.seed}); outputs cut at {cut} characters. The per-item table's "
        "'flipped between' filter lists every flip, and a row there opens the prompt, the "
        "options and the other conditions.",
    )


def _cut(text: Any, n: int) -> str:
    s = "" if text is None else str(text)
    return s if len(s) <= n else s[: n - 1] + "…"


def _outputs(
    table: pa.Table, model: str, conditions: Sequence[str], items: Sequence[str]
) -> dict[tuple[str, float, str], str]:
    mask = pc.and_(
        pc.and_(
            pc.equal(table["model"], model), pc.is_in(table["condition"], pa.array(conditions))
        ),
        pc.is_in(table["item_id"], pa.array(list(items), pa.string())),
    )
    rows = table.filter(mask).select(["item_id", "sample_index", "condition", "output"]).to_pylist()
    out: dict[tuple[str, float, str], str] = {}
    for r in rows:
        s = r["sample_index"]
        out[(r["item_id"], float(s) if s is not None else math.nan, r["condition"])] = (
            r["output"] or ""
        )
    return out


#: What the pairs table shows in place of McNemar's p when no unit flips.
NO_DISCORDANT = "no discordant pairs"


def _pairs_table(
    ctx: ReportContext, model: str, outcome: str, pairs: Sequence[PairAgreement]
) -> Table:
    return Table(
        title=f"{model}: pairs of conditions on {outcome}",
        columns=_PAIR_COLUMNS,
        rows=tuple(
            (
                p.model,
                ctx.label(p.a),
                ctx.label(p.b),
                p.n,
                p.both,
                p.only_a,
                p.only_b,
                p.neither,
                p.flips,
                p.pvalue if p.flips else NO_DISCORDANT,
                p.pvalue_holm,
            )
            for p in pairs
        ),
    )


def _model_blocks(
    ctx: ReportContext, model: str, outcome: str, shown: Sequence[str]
) -> list[Block]:
    """One model's heatmap, pairs table and flip examples on ``outcome``."""
    _, matrix = outcome_matrix(ctx.frame, model, outcome, shown)
    present = [c for k, c in enumerate(shown) if not np.all(np.isnan(matrix[:, k]))]
    if len(present) < 2:
        return []
    keep = [shown.index(c) for c in present]
    pairs = pair_agreements(matrix[:, keep], present, model, outcome)
    if not pairs:
        return []
    typed = ctx.study_analysis
    floor = noise_floor(typed if typed is not None else ctx.analysis, model, outcome, ctx.label)
    hm = _heatmap(pairs, present, floor, ctx.label)
    blocks: list[Block] = [
        dataclasses.replace(hm, title=f"{model}: agreement on {outcome}"),
        _pairs_table(ctx, model, outcome, pairs),
    ]
    top = max(pairs, key=lambda p: p.flips)
    if top.flips:
        ex = _examples(ctx, model, outcome, top)
        if ex is not None:
            blocks.append(ex)
    return blocks


def agreement_section(ctx: ReportContext) -> Section | None:
    """Agreement matrices (``correct``, and ``refused`` when anything was refused) per model,
    with the pairs table, the noise floor when the analysis defines one, and examples."""
    conditions = ctx.conditions
    if len(conditions) < 2:
        return None
    shown = conditions[: ctx.options.max_conditions]
    outcomes = ["correct"]
    if bool((ctx.frame["refused"] > 0.5).any()):
        outcomes.append("refused")
    blocks: list[Block] = [
        Paragraph(
            "Two conditions can have the same accuracy while many items flip between them. "
            "Each cell counts the units (item, sample) on which two conditions of one model "
            "disagree, out of the units both have; the p-value is McNemar's exact test on "
            "those flips (where nothing flips there is no test: no discordant pairs). "
            "Holm-adjusted p-values are in the table below each matrix."
        )
    ]
    if len(shown) < len(conditions):
        blocks.append(
            Note(
                f"Showing the first {len(shown)} of {len(conditions)} conditions "
                "(ReportOptions.max_conditions).",
                "warning",
            )
        )
    for outcome in outcomes:
        for model in ctx.models:
            blocks += _model_blocks(ctx, model, outcome, shown)
    if len(blocks) == 1 + (len(shown) < len(conditions)):
        return None
    return Section.of("agreement", "Agreement between conditions", blocks)
