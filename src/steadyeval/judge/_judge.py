"""LLM-as-judge: a model grades the answers of a finished run, through the ordinary runner.

A judge pass is a run of its own: one judge item per graded row (the question, the answer to
grade, the reference answers), one condition (the rubric template, generation, an extractor
for the verdict), the judge model. So the judge's calls are planned, deduplicated, cached
and resumed like any request, and its prompts and raw replies are a results table. The
verdicts are then joined back to the graded rows as columns (``judge_*``), and agreement is
measured: with the run's own automatic scoring, with human labels when given, and between
judges when there are several.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .. import stats
from .._errors import ConfigError, DataError
from ..conditions import FORMATS, Condition, Generation, Template
from ..items import Item
from ..results import StudyColumn, read_results, with_study_columns, write_results
from ..run import RunOptions, run
from ._common import check_out, check_rubric, matched_items

__all__ = [
    "DEFAULT_RUBRIC",
    "JUDGE_COLUMNS",
    "VERDICT_PATTERN",
    "JudgeAgreement",
    "JudgeResult",
    "Labels",
    "judge_condition",
    "judge_results",
    "read_labels",
]

#: The default rubric (a Jinja template; ``question`` and ``context`` are the graded item's,
#: the graded row is in ``metadata``: ``answer`` (the parsed answer, else the output),
#: ``output``, ``gold`` (reference answers), ``options``, ``model``, ``condition``, and
#: ``from_prompt``: true when ``question`` is the whole prompt the graded model saw).
DEFAULT_RUBRIC = (
    "You are grading an answer to a question. Judge only whether the answer is correct.\n\n"
    "{% if context %}Context: {{ context }}\n\n{% endif %}"
    "{% if metadata.from_prompt %}The model was given this prompt:\n{{ question }}\n\n"
    "{% else %}Question: {{ question }}\n{% endif %}"
    "{% if metadata.options %}Options: {{ metadata.options | join(' | ') }}\n{% endif %}"
    "{% if metadata.gold %}Reference answer: {{ metadata.gold | join(' / ') }}\n{% endif %}"
    "Answer to grade: {{ metadata.answer }}\n\n"
    "Explain briefly, then end with one line: VERDICT: CORRECT or VERDICT: INCORRECT"
)
#: The verdict the judge's reply is read for (the last one wins: a judge may quote the
#: instruction before giving its own).
VERDICT_PATTERN = r"regex:(?is).*VERDICT:\s*\**\s*(CORRECT|INCORRECT)"

#: The columns a judge pass adds to the graded rows.
JUDGE_COLUMNS = (
    StudyColumn("judge_model", "string", "the judge model's identity"),
    StudyColumn("judge_prompt", "string", "the prompt the judge was asked"),
    StudyColumn("judge_output", "string", "the judge's raw reply"),
    StudyColumn("judge_verdict", "string", "correct, incorrect, or null when no verdict"),
    StudyColumn("judge_correct", "bool", "the judge's verdict as a boolean"),
)
_KEY = ("model", "item_id", "condition", "sample_index")
_log = logging.getLogger("steadyeval")


def judge_condition(
    rubric: str = DEFAULT_RUBRIC, *, chat: bool = True, max_new_tokens: int = 512
) -> Condition:
    """The judge pass's one condition: ``rubric`` as a free-form template, greedy
    generation, the verdict read with :data:`VERDICT_PATTERN`."""
    return Condition(
        name="judge",
        template=Template(name="judge-rubric", body=rubric, answer=""),
        format=FORMATS["free"],
        chat=chat,
        extract=VERDICT_PATTERN,
        generation=Generation(max_new_tokens=max_new_tokens, stop=()),
    )


def _judge_id(row: Mapping[str, Any]) -> str:
    parts = [str(row[k]) for k in _KEY]
    return json.dumps(parts, ensure_ascii=False)


def _items(rows: Sequence[Mapping[str, Any]], questions: Mapping[str, Item]) -> list[Item]:
    """One judge item per graded row: the question (the original item's where given, else
    the prompt the graded model saw), the answer to grade and the references."""
    items = []
    for r in rows:
        original = questions.get(r["item_id"])
        answer = r["parsed"] if r["parsed"] is not None else (r["output"] or "")
        items.append(
            Item(
                id=_judge_id(r),
                question=original.question if original else (r["prompt"] or ""),
                context=original.context if original else None,
                metadata={
                    "from_prompt": original is None,
                    "answer": answer,
                    "output": r["output"] or "",
                    "gold": list(r["gold"] or ()),
                    "options": list(original.options or ()) if original else [],
                    "model": r["model"],
                    "condition": r["condition"],
                },
            )
        )
    return items


@dataclass(frozen=True)
class JudgeAgreement:
    """Agreement of one judge's verdicts with another source over the rows both rated."""

    judge: str
    other: str
    n: int
    kappa: float
    low: float
    high: float
    agreement: float


@dataclass(frozen=True)
class JudgeResult:
    """A judge pass: the graded table with ``judge_*`` columns, the judge runs' folders,
    how often a verdict was found, and agreement figures."""

    table: pa.Table
    judges: tuple[str, ...]
    verdict_rate: Mapping[str, float]
    agreements: tuple[JudgeAgreement, ...]
    alpha: stats.RaterAgreement | None
    runs: tuple[Path | None, ...] = field(default_factory=tuple)
    #: Label lines that matched no graded row.
    unused_labels: int = 0

    def to_dict(self) -> dict[str, Any]:
        def clean(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "judges": list(self.judges),
            "verdict_rate": dict(self.verdict_rate),
            "agreements": [
                {k: clean(v) if isinstance(v, float) else v for k, v in a.__dict__.items()}
                for a in self.agreements
            ],
            "krippendorff_alpha": None
            if self.alpha is None
            else {
                "estimate": clean(self.alpha.estimate),
                "low": clean(self.alpha.low),
                "high": clean(self.alpha.high),
            },
            "runs": [None if p is None else str(p) for p in self.runs],
            "unused_labels": self.unused_labels,
        }


#: Human labels: the row fields a label line names (``item_id`` and optionally ``model``,
#: ``condition``, ``sample_index``) as sorted (field, value) pairs -> the label.
Labels = Mapping[tuple[tuple[str, str], ...], bool]


def read_labels(path: str | Path) -> dict[tuple[tuple[str, str], ...], bool]:
    """Human labels from a JSONL file (UTF-8, a BOM allowed): each line
    ``{"item_id": ..., "label": true}`` (or ``"correct"``/``"incorrect"``), optionally
    narrowed by any of ``model``, ``condition`` and ``sample_index``. A row takes the label
    of the most specific line that matches it. Two lines for the same rows with different
    labels are an error naming both lines."""
    path = Path(path)
    out: dict[tuple[tuple[str, str], ...], bool] = {}
    where: dict[tuple[tuple[str, str], ...], int] = {}
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the labels file ({exc})") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}, line {n}: not JSON ({exc.msg})") from None
        if not isinstance(d, dict) or not isinstance(d.get("item_id"), str):
            raise DataError(f"{path}, line {n}: expected an object with a text 'item_id'")
        label = d.get("label")
        if isinstance(label, str) and label.lower() in ("correct", "incorrect"):
            label = label.lower() == "correct"
        if not isinstance(label, bool):
            raise DataError(
                f"{path}, line {n}: field 'label' must be true/false or 'correct'/'incorrect'; "
                f"got {label!r:.40}"
            )
        unknown = set(d) - {"label", *_KEY}
        if unknown:
            raise DataError(
                f"{path}, line {n}: unknown field(s) {', '.join(sorted(unknown))}; a label "
                "line has item_id, label and optionally model, condition, sample_index"
            )
        key = tuple(sorted((k, str(d[k])) for k in _KEY if k in d))
        if key in out and out[key] != label:
            raise DataError(
                f"{path}, line {n}: labels the same rows as line {where[key]} with the "
                f"opposite label ({label} vs {out[key]})"
            )
        out[key], where[key] = label, n
    if not out:
        raise DataError(f"{path}: no labels (expected JSON lines with item_id and label)")
    return out


def _match_labels(
    rows: Sequence[Mapping[str, Any]], labels: Labels
) -> tuple[list[bool | None], int]:
    """Each row's label (the most specific matching line's) and how many label lines
    matched no row. Every line names an item, so only that item's lines are tried. Two
    lines equally specific for a row with opposite labels are an error."""
    by_item: dict[str, list[tuple[tuple[str, str], ...]]] = {}
    for key in labels:
        by_item.setdefault(dict(key)["item_id"], []).append(key)
    used: set[tuple[tuple[str, str], ...]] = set()
    out: list[bool | None] = []
    for row in rows:
        fits = [
            key
            for key in by_item.get(str(row["item_id"]), ())
            if all(str(row[k]) == v for k, v in key)
        ]
        best = max(fits, key=len, default=None)
        if best is not None:
            rivals = [k for k in fits if len(k) == len(best) and labels[k] != labels[best]]
            if rivals:
                raise DataError(
                    f"labels: {dict(best)} and {dict(rivals[0])} both label the row "
                    f"{dict((k, row[k]) for k in _KEY)} with opposite labels; make one more "
                    "specific or remove one"
                )
        out.append(None if best is None else labels[best])
        used.update(fits)
    return out, len(labels) - len(used)


def _kappa(judge: str, other: str, a: list[bool | None], b: list[bool | None]) -> JudgeAgreement:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if len(pairs) < 2:
        return JudgeAgreement(judge, other, len(pairs), math.nan, math.nan, math.nan, math.nan)
    x = np.array([p[0] for p in pairs], dtype=int)
    y = np.array([p[1] for p in pairs], dtype=int)
    k = stats.quietly(stats.cohen_kappa, x, y, n_resamples=1000, seed=0)
    return JudgeAgreement(
        judge, other, len(pairs), k.estimate, k.low, k.high, float(np.mean(x == y))
    )


@dataclass(frozen=True)
class _Verdict:
    """One judge's reading of one row: the verdict (None: none found), prompt and reply."""

    correct: bool | None
    prompt: str
    output: str


_JUDGES = StudyColumn("judges", "json", "every judge's verdict by model")


def _columns(
    table: pa.Table, verdicts: Mapping[str, Mapping[str, _Verdict]], names: Sequence[str]
) -> dict[str, list[Any]]:
    """The judge columns' values for every row of ``table`` (null where not judged)."""
    out: dict[str, list[Any]] = {c.name: [] for c in (*JUDGE_COLUMNS, _JUDGES)}
    first = verdicts[names[0]]
    for r in table.select(["scoring", *_KEY]).to_pylist():
        jid = _judge_id(r) if r["scoring"] == "generate" else None
        v = None if jid is None else first.get(jid)
        verdict = None if v is None else v.correct
        out["judge_model"].append(None if v is None else names[0])
        out["judge_prompt"].append(None if v is None else v.prompt)
        out["judge_output"].append(None if v is None else v.output)
        out["judge_verdict"].append(
            None if verdict is None else ("correct" if verdict else "incorrect")
        )
        out["judge_correct"].append(verdict)
        out["judges"].append(
            None if v is None or jid is None else {m: verdicts[m][jid].correct for m in names}
        )
    return out


def judge_results(
    results: str | Path | pa.Table,
    judges: Sequence[str],
    *,
    rubric: str = DEFAULT_RUBRIC,
    chat: bool = True,
    max_new_tokens: int = 512,
    labels: Labels | None = None,
    items: Sequence[Item] | None = None,
    out: str | Path | None = None,
    options: RunOptions | None = None,
) -> JudgeResult:
    """Grade every generated row of ``results`` with each judge model.

    Each judge runs as an ordinary run (``out/judge-N`` when ``out`` is given: its own
    results table holds the judge prompts and replies; calls are cached and a rerun
    resumes). The graded table gains :data:`JUDGE_COLUMNS` from the first judge and a
    ``judges`` column (every judge's verdict by model). Agreement (Cohen's κ with a
    bootstrap interval over rows): each judge with the run's automatic ``correct``, with
    ``labels`` when given, with each other judge; Krippendorff's α over all judges (and
    the labels) when there are two or more raters. ``items``: the graded run's items, so
    the judge sees each item's question (without them it sees the prompt the graded model
    saw, shots included).
    """
    if not judges:
        raise ConfigError("judge: name at least one judge model")
    check_rubric(rubric)
    check_out(out, [] if isinstance(results, pa.Table) else [results])
    table = results if isinstance(results, pa.Table) else read_results(results)
    if "judge_verdict" in table.column_names:
        raise DataError("the results table was judged already (it has judge_* columns)")
    rows = [
        r
        for r in table.to_pylist()
        if r["scoring"] == "generate" and r["parsed_kind"] not in ("error",)
    ]
    if not rows:
        raise DataError("no generated answers to judge (scoring 'generate' rows)")
    human, unused = _match_labels(rows, labels) if labels else (None, 0)
    if unused:
        _log.warning("%d label line(s) match no graded row (check item ids and names)", unused)
    judge_items = _items(rows, matched_items(rows, items or ()))
    condition = judge_condition(rubric, chat=chat, max_new_tokens=max_new_tokens)
    verdicts: dict[str, dict[str, _Verdict]] = {}
    run_dirs: list[Path | None] = []
    base = options or RunOptions()
    for n, judge in enumerate(judges):
        folder = None if out is None else Path(out) / f"judge-{n + 1}"
        opts = dataclasses.replace(base, out=folder)
        judged_run = run(judge_items, [condition], judge, options=opts)
        run_dirs.append(judged_run.run_dir)
        name = judged_run.table.column("model")[0].as_py()
        verdicts[name] = {
            r["item_id"]: _Verdict(
                None if r["parsed"] is None else r["parsed"].upper() == "CORRECT",
                r["prompt"] or "",
                r["output"] or "",
            )
            for r in judged_run.table.select(["item_id", "parsed", "prompt", "output"]).to_pylist()
        }
    names = tuple(verdicts)
    judged = with_study_columns(table, (*JUDGE_COLUMNS, _JUDGES), _columns(table, verdicts, names))
    agreements, alpha = _agreements(rows, verdicts, names, human)
    rates = {
        m: float(np.mean([v.correct is not None for v in verdicts[m].values()])) for m in names
    }
    result = JudgeResult(
        judged, names, rates, tuple(agreements), alpha, tuple(run_dirs), unused_labels=unused
    )
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        write_results(judged, folder / "results.parquet")
        (folder / "judge.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    return result


def _agreements(
    rows: Sequence[Mapping[str, Any]],
    verdicts: Mapping[str, Mapping[str, _Verdict]],
    names: Sequence[str],
    human: list[bool | None] | None,
) -> tuple[list[JudgeAgreement], stats.RaterAgreement | None]:
    ids = [_judge_id(r) for r in rows]
    series = {m: [verdicts[m][i].correct for i in ids] for m in names}
    automatic = [r["correct"] for r in rows]
    out = []
    for i, m in enumerate(names):
        out.append(_kappa(m, "automatic scoring", series[m], automatic))
        if human is not None:
            out.append(_kappa(m, "human labels", series[m], human))
        for other in names[i + 1 :]:
            out.append(_kappa(m, other, series[m], series[other]))
    raters = [series[m] for m in names] + ([human] if human is not None else [])
    alpha = None
    if len(raters) >= 2:
        matrix = np.array(
            [[math.nan if v is None else float(v) for v in r] for r in raters], dtype=float
        )
        try:
            alpha = stats.quietly(stats.krippendorff_alpha, matrix, n_resamples=1000, seed=0)
        except stats.StatsInputError:
            alpha = None
    return out, alpha
