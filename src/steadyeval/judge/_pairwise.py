"""Pairwise judging with the order swapped: which of two models' answers is better, asked
twice per pair (A shown first, then B first), so the judge's preference for a position is
measured instead of mixed into the verdict."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from scipy import stats as sps

from .._errors import ConfigError, DataError
from .._json import replace_atomically
from ..conditions import FORMATS, Condition, Generation, Template
from ..items import Item
from ..results import read_results
from ..run import RunOptions, run
from ._common import check_out, check_rubric, matched_items

__all__ = ["PAIRWISE_PATTERN", "PAIRWISE_RUBRIC", "PairwiseResult", "judge_pairwise"]

#: The default pairwise rubric: the graded pair in ``metadata`` (``first``, ``second``,
#: ``gold``, ``options``, ``from_prompt``: true when ``question`` is the whole prompt the
#: graded model saw), the item's ``question`` and ``context``.
PAIRWISE_RUBRIC = (
    "Two answers to the same question follow. Judge which one is more correct.\n\n"
    "{% if context %}Context: {{ context }}\n\n{% endif %}"
    "{% if metadata.from_prompt %}The model was given this prompt:\n{{ question }}\n\n"
    "{% else %}Question: {{ question }}\n{% endif %}"
    "{% if metadata.options %}Options: {{ metadata.options | join(' | ') }}\n{% endif %}"
    "{% if metadata.gold %}Reference answer: {{ metadata.gold | join(' / ') }}\n{% endif %}"
    "Answer 1: {{ metadata.first }}\n"
    "Answer 2: {{ metadata.second }}\n\n"
    "Explain briefly, then end with one line: VERDICT: 1, VERDICT: 2 or VERDICT: TIE"
)
#: The verdict read from a pairwise reply (the last one).
PAIRWISE_PATTERN = r"regex:(?is).*VERDICT:\s*\**\s*(1|2|TIE)\b"
_UNIT = ("item_id", "condition", "sample_index")


@dataclass(frozen=True)
class PairwiseResult:
    """A pairwise judge pass over the units two models share.

    ``pairs`` has one row per unit: both answers, the verdict with A first
    (``verdict_ab``) and with B first (``verdict_ba``), each as the model it names (``A``,
    ``B``, ``tie``, or null without a verdict), and ``winner``: the verdict when both
    orders agree, ``inconsistent`` when they do not. ``first_share`` is the share of
    decided verdicts naming the answer shown first (0.5 without position bias) with a
    two-sided binomial test against 0.5; ``consistency`` the share of units whose two
    verdicts agree; ``b_win_rate`` B's wins plus half the ties and inconsistent units, over
    the units with both verdicts.
    """

    model_a: str
    model_b: str
    judge: str
    pairs: pa.Table
    n: int
    wins_a: int
    wins_b: int
    ties: int
    inconsistent: int
    no_verdict: int
    first_share: float
    first_pvalue: float
    consistency: float
    b_win_rate: float

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "pairs"}
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


def _condition(rubric: str, chat: bool, max_new_tokens: int) -> Condition:
    return Condition(
        name="pairwise",
        template=Template(name="pairwise-rubric", body=rubric, answer=""),
        format=FORMATS["free"],
        chat=chat,
        extract=PAIRWISE_PATTERN,
        generation=Generation(max_new_tokens=max_new_tokens, stop=()),
    )


def _answer(row: Mapping[str, Any]) -> str:
    return str(row["parsed"] if row["parsed"] is not None else (row["output"] or ""))


def _shared(
    table: pa.Table, model_a: str | None, model_b: str | None
) -> tuple[str, str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]]:
    """The two models (given, or the table's only two, in the order they appear) and the
    pairs of their rows on the units both answered."""
    rows = [r for r in table.to_pylist() if r["scoring"] == "generate"]
    models = list(dict.fromkeys(r["model"] for r in rows))
    if model_a is None or model_b is None:
        if len(models) != 2:
            raise ConfigError(
                f"pairwise judging needs exactly two models with generated answers; found "
                f"{len(models)}: {', '.join(models) or 'none'}"
            )
        model_a, model_b = models
    if model_a == model_b:
        raise ConfigError("pairwise judging needs two different models")
    for m in (model_a, model_b):
        if m not in models:
            raise DataError(
                f"model {m!r} has no generated answers in the table; its models: "
                f"{', '.join(models) or 'none'}"
            )
    a, b = _units(rows, model_a), _units(rows, model_b)
    shared = [(a[k], b[k]) for k in a if k in b]
    if not shared:
        raise DataError(f"{model_a!r} and {model_b!r} share no (item, condition, sample) unit")
    return model_a, model_b, shared


def _units(
    rows: Sequence[Mapping[str, Any]], model: str
) -> dict[tuple[Any, ...], Mapping[str, Any]]:
    """``model``'s rows by (item, condition, sample); a unit answered twice (runs given
    together that overlap) is an error, never one answer silently kept."""
    out: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    for r in rows:
        if r["model"] != model:
            continue
        unit = tuple(r[k] for k in _UNIT)
        if unit in out:
            raise DataError(
                f"model {model!r} answered item {unit[0]!r} under condition {unit[1]!r} "
                f"(sample {unit[2]}) more than once: the runs given overlap; give runs that "
                "each hold different models"
            )
        out[unit] = r
    return out


def _named(verdict: str | None, first: str) -> str | None:
    """A verdict (1, 2, TIE) as the model it names, given which model was shown first."""
    if verdict is None:
        return None
    v = verdict.upper()
    if v == "TIE":
        return "tie"
    second = "B" if first == "A" else "A"
    return first if v == "1" else second


def judge_pairwise(
    results: str | Path | pa.Table | Sequence[str | Path],
    model_a: str | None,
    model_b: str | None,
    judge: str,
    *,
    rubric: str = PAIRWISE_RUBRIC,
    chat: bool = True,
    max_new_tokens: int = 512,
    items: Sequence[Item] | None = None,
    out: str | Path | None = None,
    options: RunOptions | None = None,
) -> PairwiseResult:
    """Ask ``judge`` which of ``model_a``'s and ``model_b``'s answers is better, on every
    unit they share, once in each order (a run of its own: ``out/pairwise-run``, cached
    and resumable). ``results``: a table, a run (or results file), or several runs whose
    tables are stacked (e.g. one run per model). ``model_a`` and ``model_b`` None: the
    results' two models, in the order they appear (an error unless there are two)."""
    check_rubric(rubric)
    if isinstance(results, pa.Table):
        graded: list[str | Path] = []
    else:
        graded = [results] if isinstance(results, str | Path) else list(results)
    check_out(out, graded)
    model_a, model_b, shared = _shared(_table(results), model_a, model_b)
    questions = matched_items([r for pair in shared for r in pair], items or ())
    judge_items = []
    for ra, rb in shared:
        original = questions.get(ra["item_id"])
        for order, (first, second) in (("ab", (ra, rb)), ("ba", (rb, ra))):
            judge_items.append(
                Item(
                    id=json.dumps([ra["item_id"], ra["condition"], ra["sample_index"], order]),
                    question=original.question if original else (ra["prompt"] or ""),
                    context=original.context if original else None,
                    metadata={
                        "from_prompt": original is None,
                        "first": _answer(first),
                        "second": _answer(second),
                        "gold": list(ra["gold"] or ()),
                        "options": list(original.options or ()) if original else [],
                    },
                )
            )
    base = options or RunOptions()
    folder = None if out is None else Path(out) / "pairwise-run"
    judged = run(
        judge_items,
        [_condition(rubric, chat, max_new_tokens)],
        judge,
        options=dataclasses.replace(base, out=folder),
    )
    replies = {
        r["item_id"]: r for r in judged.table.select(["item_id", "parsed", "output"]).to_pylist()
    }
    result = _tally(shared, replies, model_a, model_b, judged.table.column("model")[0].as_py())
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        _write_pairs(result.pairs, Path(out) / "pairwise.parquet")
        (Path(out) / "pairwise.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    return result


def _table(results: str | Path | pa.Table | Sequence[str | Path]) -> pa.Table:
    if isinstance(results, pa.Table):
        return results
    if isinstance(results, str | Path):
        return read_results(results)
    tables = [read_results(r) for r in results]
    columns = ["model", *_UNIT, "scoring", "parsed", "output", "prompt", "gold", "item_hash"]
    return pa.concat_tables([t.select(columns) for t in tables])


def _tally(
    shared: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    replies: Mapping[str, Mapping[str, Any]],
    model_a: str,
    model_b: str,
    judge: str,
) -> PairwiseResult:
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            *_UNIT,
            "answer_a",
            "answer_b",
            "verdict_ab",
            "verdict_ba",
            "winner",
            "output_ab",
            "output_ba",
        )
    }
    first_named = decided = 0
    counts = {"A": 0, "B": 0, "tie": 0, "inconsistent": 0, "none": 0}
    for ra, rb in shared:
        unit = [ra["item_id"], ra["condition"], ra["sample_index"]]
        ab = replies[json.dumps([*unit, "ab"])]
        ba = replies[json.dumps([*unit, "ba"])]
        v_ab, v_ba = _named(ab["parsed"], "A"), _named(ba["parsed"], "B")
        for v, first in ((v_ab, "A"), (v_ba, "B")):
            if v in ("A", "B"):
                decided += 1
                first_named += v == first
        if v_ab is None or v_ba is None:
            winner = None
            counts["none"] += 1
        elif v_ab == v_ba:
            winner = v_ab
            counts[winner] += 1
        else:
            winner = "inconsistent"
            counts["inconsistent"] += 1
        for k, v in zip(_UNIT, unit, strict=True):
            cols[k].append(v)
        cols["answer_a"].append(_answer(ra))
        cols["answer_b"].append(_answer(rb))
        cols["verdict_ab"].append(v_ab)
        cols["verdict_ba"].append(v_ba)
        cols["winner"].append(winner)
        cols["output_ab"].append(ab["output"])
        cols["output_ba"].append(ba["output"])
    both = len(shared) - counts["none"]
    first_share = first_named / decided if decided else math.nan
    pvalue = float(sps.binomtest(first_named, decided, 0.5).pvalue) if decided else math.nan
    consistency = (counts["A"] + counts["B"] + counts["tie"]) / both if both else math.nan
    half = 0.5 * (counts["tie"] + counts["inconsistent"])
    b_rate = (counts["B"] + half) / both if both else math.nan
    return PairwiseResult(
        model_a=model_a,
        model_b=model_b,
        judge=judge,
        pairs=pa.table(cols),
        n=len(shared),
        wins_a=counts["A"],
        wins_b=counts["B"],
        ties=counts["tie"],
        inconsistent=counts["inconsistent"],
        no_verdict=counts["none"],
        first_share=first_share,
        first_pvalue=pvalue,
        consistency=consistency,
        b_win_rate=b_rate,
    )


def _write_pairs(table: pa.Table, path: Path) -> None:
    """The pairs table as Parquet (not a results table: it has its own columns)."""
    replace_atomically(path, lambda tmp: pq.write_table(table, tmp))
