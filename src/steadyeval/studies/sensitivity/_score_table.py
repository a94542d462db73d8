"""Published score tables (per model and unit, optionally per prompt) as the study's inputs:
unit scores for :func:`steadyeval.stats.rank_consistency` and a correctness tensor for the
backdoor adjustment and the rank-consistency regimes, without a fact tensor built by hand."""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..._errors import DataError
from ..._files import read_text_file
from ...items import shorten
from ._design import template_names
from ._reference import authors_mean, authors_std
from ._tensor import Correctness

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ScoreTable"]

FloatArray = NDArray[np.float64]

#: Cells echoed in an error are cut to this many characters.
_ECHO = 80


def _short(value: Any) -> str:
    return shorten(repr(value), _ECHO)


@dataclass(frozen=True)
class _Row:
    where: str  # "line 7" (CSV), "row 3" (DataFrame or records)
    line: int | None
    model: str
    unit: str
    prompt: str | None
    score: float


def _records(source: Any) -> tuple[str | None, Iterator[tuple[str, int | None, Mapping[Any, Any]]]]:
    """``(file, rows)``: each row as ``(where, line, mapping)``."""
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        # a byte order mark (Excel's "CSV UTF-8") would stick to the first column's name
        text = read_text_file(path, "a score table (CSV)").removeprefix("\ufeff")
        reader = csv.DictReader(io.StringIO(text, newline=""))

        def from_csv() -> Iterator[tuple[str, int | None, Mapping[Any, Any]]]:
            try:
                _unique_columns(reader.fieldnames or [], path, 1)
                for rec in reader:
                    if None in rec:
                        raise DataError(
                            "more cells than header columns",
                            file=path,
                            line=reader.line_num,
                            expected=f"{len(reader.fieldnames or [])} cells",
                        )
                    yield f"line {reader.line_num}", reader.line_num, rec
            except csv.Error as exc:
                raise DataError(
                    f"malformed CSV: {exc}", file=path, line=reader.line_num, expected="CSV"
                ) from None

        return path, from_csv()
    if hasattr(source, "to_dict") and hasattr(source, "columns"):  # a pandas DataFrame
        frame: pd.DataFrame = source
        _unique_columns(list(frame.columns), None, None)
        records = frame.to_dict(orient="records")
        labels = list(frame.index)
        return None, ((f"row {labels[i]!r} (position {i})", None, r) for i, r in enumerate(records))
    if isinstance(source, Iterable) and not isinstance(source, str | bytes | Mapping):
        return None, ((f"rows[{i}]", None, r) for i, r in enumerate(source))
    raise DataError(
        f"a score table must be a CSV path, a pandas DataFrame or an iterable of row "
        f"mappings; got {type(source).__name__}"
    )


def _unique_columns(columns: Sequence[Any], file: str | None, line: int | None) -> None:
    """No column name twice (a CSV reader or ``to_dict`` would keep the last one's cells)."""
    seen: set[str] = set()
    for name in map(str, columns):
        if name in seen:
            raise DataError(
                f"the column {name!r} appears twice in the table's header",
                file=file,
                line=line,
                field=name,
                expected="distinct column names",
            )
        seen.add(name)


def _columns_present(file: str | None, first: Mapping[Any, Any], need: dict[str, str]) -> None:
    """Every named column is a key of the first row (a CSV header, a DataFrame's columns)."""
    have = [str(k) for k in first]
    for role, column in need.items():
        if column not in first:
            raise DataError(
                f"the table has no {column!r} column (the {role}); its columns are "
                f"{', '.join(map(repr, have)) or 'none'}",
                file=file,
                line=1 if file else None,
                field=column,
                expected=f"a column {column!r}, or name the {role} column with {role}=...",
            )


def _cell_error(
    message: str, where: str, file: str | None, line: int | None, column: str, expected: str
) -> DataError:
    """A bad cell: ``file, line N, field 'x': ...`` for a CSV; ``row 3 (position 3),
    field 'x': ...`` for a DataFrame or records."""
    if line is not None:
        return DataError(message, file=file, line=line, field=column, expected=expected)
    return DataError(f"{where}, field {column!r}: {message}", expected=expected)


def _text(value: Any, where: str, file: str | None, line: int | None, column: str) -> str:
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    if not text.strip():
        raise _cell_error("empty cell", where, file, line, column, "a name")
    return text.strip()


def _number(value: Any, where: str, file: str | None, line: int | None, column: str) -> float:
    try:
        x = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(value, bool | np.bool_) or not math.isfinite(x):
        raise _cell_error(
            f"score {_short(value)} is not a finite number",
            where,
            file,
            line,
            column,
            "a finite number (e.g. 25.64 for a percentage, 0.2564 for a share)",
        )
    return x


def _read_rows(
    source: Any, model: str, unit: str, prompt: str | None, score: str
) -> tuple[str | None, list[_Row]]:
    file, rows = _records(source)
    out: list[_Row] = []
    per_prompt = prompt is not None
    for where, line, rec in rows:
        if not isinstance(rec, Mapping):
            raise DataError(
                f"{where}: a row must be a mapping of column to value; got {type(rec).__name__}",
                file=file,
            )
        if not out:
            need = {"model": model, "unit": unit, "score": score}
            if prompt is not None and (prompt != "prompt" or prompt in rec):
                need["prompt"] = prompt
            else:
                per_prompt = False
            _columns_present(file, rec, need)
        for role, column in (("model", model), ("unit", unit), ("score", score)):
            if column not in rec:
                raise _cell_error(
                    f"no {column!r} cell (the {role})", where, file, line, column, "a value"
                )
        out.append(
            _Row(
                where=where,
                line=line,
                model=_text(rec[model], where, file, line, model),
                unit=_text(rec[unit], where, file, line, unit),
                prompt=_text(rec.get(prompt), where, file, line, str(prompt))
                if per_prompt
                else None,
                score=_number(rec[score], where, file, line, score),
            )
        )
    if not out:
        raise DataError("the score table has no rows", file=file, expected="one row per score")
    return file, out


@dataclass(frozen=True, eq=False)
class ScoreTable:
    """Scores of several models per unit (relation) and, optionally, per prompt.

    Build one with :meth:`read` from a published table; :meth:`original` and
    :meth:`adjusted` give the ``units × models`` arrays
    :func:`steadyeval.stats.rank_consistency` ranks, and :meth:`correctness` the tensor
    :func:`adjusted_scores` and :func:`rank_consistency_regimes` take. Scores stay on the
    table's scale (the causal-probing authors publish percentages).

    Attributes
    ----------
    models, units : tuple of str
        In order of first appearance in the table.
    templates : tuple of str
        The template axis, ``t00``, ``t01``, ...: position ``k`` is each unit's ``k``-th
        prompt (its order of first appearance); ``t00`` is the unit's original prompt.
    prompts : tuple of tuple of str
        Each unit's prompt texts in axis order (``("",)`` for a per-unit table).
    scores : ndarray of float, shape (n_models, n_units, n_templates)
        NaN where the unit has fewer prompts than the axis.
    """

    models: tuple[str, ...]
    units: tuple[str, ...]
    templates: tuple[str, ...]
    prompts: tuple[tuple[str, ...], ...]
    scores: FloatArray

    @classmethod
    def read(
        cls,
        source: str | os.PathLike[str] | pd.DataFrame | Iterable[Mapping[str, Any]],
        *,
        model: str = "model",
        unit: str = "relation",
        prompt: str | None = "prompt",
        score: str = "score",
    ) -> ScoreTable:
        """A score table from a long table: one row per (model, unit[, prompt]).

        Parameters
        ----------
        source : path, DataFrame or iterable of mappings
            A CSV file with a header, a :class:`pandas.DataFrame`, or rows as dicts.
        model, unit, prompt, score : str
            The columns holding each. Without a ``prompt`` column (and ``prompt`` left at
            its default), or with ``prompt=None``, the table has one score per (model, unit).

        Raises
        ------
        DataError
            A missing column (named, with the columns present), an empty name, a score
            that is not a finite number (the row and cell), a (model, unit, prompt) given
            twice (both rows), or a model lacking a (unit, prompt) another model has.
        """
        file, rows = _read_rows(source, model, unit, prompt, score)
        return _build(file, rows, prompt if rows[0].prompt is not None else None)

    def original(self) -> FloatArray:
        """Scores under each unit's original prompt, shape (n_units, n_models)."""
        out: FloatArray = np.ascontiguousarray(self.scores[:, :, 0].T)
        return out

    def adjusted(self) -> FloatArray:
        """The backdoor adjustment with uniform P(prompt) and one name per subject: each
        unit's mean over its own prompts, shape (n_units, n_models).

        Each mean is ``np.mean`` of the unit's prompt scores in their order, as the
        authors' ``cal_rank_consis.py`` computes it (line 148), so the reference mode of
        :func:`steadyeval.stats.rank_consistency` rounds the same numbers they rounded.
        """
        n_models, n_units, _ = self.scores.shape
        out = np.empty((n_units, n_models))
        for u in range(n_units):
            k = len(self.prompts[u])
            for m in range(n_models):
                out[u, m] = np.mean(np.ascontiguousarray(self.scores[m, u, :k]))
        return out

    def std(self, *, reference: bool = False, ddof: int = 0) -> FloatArray:
        """Each unit's std across its prompts, shape (n_units, n_models) (NaN for a unit
        with no more than ``ddof`` prompts).

        ``reference=True`` rounds it to 2 decimals as the authors' ``prompt_variance.py``
        does (line 87; their table's scores are percentages already rounded to 2 decimals,
        line 50), so a published per-prompt table gives their per-relation std column.
        """
        n_models, n_units, _ = self.scores.shape
        out = np.full((n_units, n_models), np.nan)
        for u in range(n_units):
            k = len(self.prompts[u])
            if k <= ddof:
                continue
            for m in range(n_models):
                values = self.scores[m, u, :k]
                out[u, m] = (
                    authors_std(values, ddof) if reference else float(np.std(values, ddof=ddof))
                )
        return out

    def mean_std(self, *, reference: bool = False, ddof: int = 0) -> FloatArray:
        """Each model's mean over units of :meth:`std` (Table 1's std column), shape
        (n_models,); ``reference=True``: the mean of the rounded stds rounded to 2
        decimals, as the authors' ``get_table_stat`` (``utils/utils.py`` line 280)."""
        stds = self.std(reference=reference, ddof=ddof)
        if reference:
            return np.array([authors_mean(col) for col in stds.T])
        out: FloatArray = np.nanmean(stds, axis=0)
        return out

    def correctness(self) -> Correctness:
        """The table as a correctness tensor: each unit one pseudo-fact (``unit``) whose
        cell under template ``k`` is the unit's score under its ``k``-th prompt, one name.

        Computations linear in the cells (:func:`template_scores`,
        :func:`adjusted_scores`, :func:`rank_consistency_regimes`) are exact on it; those
        that need facts (verbalization stability, bootstrap intervals over facts) are not
        meaningful.
        """
        cells = tuple(
            np.ascontiguousarray(self.scores[:, u, :])[:, :, None, None]
            for u in range(len(self.units))
        )
        return Correctness(
            models=self.models,
            units=self.units,
            templates=self.templates,
            n_names=1,
            cells=cells,
            facts=tuple((u,) for u in self.units),
        )


def _build(file: str | None, rows: list[_Row], prompt_column: str | None) -> ScoreTable:
    models = list(dict.fromkeys(r.model for r in rows))
    units = list(dict.fromkeys(r.unit for r in rows))
    prompts: dict[str, list[str]] = {u: [] for u in units}
    seen: dict[tuple[str, str, str | None], _Row] = {}
    for r in rows:
        key = (r.model, r.unit, r.prompt)
        if key in seen:
            first = seen[key]
            what = f"model {r.model!r}, unit {r.unit!r}" + (
                f", prompt {r.prompt!r}" if r.prompt is not None else ""
            )
            hint = (
                ""
                if prompt_column is not None
                else "; if the table has one row per prompt, name its prompt column with prompt="
            )
            prefix = "" if r.line is not None else f"{r.where}: "
            raise DataError(
                f"{prefix}{what} is given twice (first at {first.where}){hint}",
                file=file,
                line=r.line,
            )
        seen[key] = r
        if r.prompt is not None and r.prompt not in prompts[r.unit]:
            prompts[r.unit].append(r.prompt)
    width = max((len(p) for p in prompts.values()), default=0) or 1
    scores = np.full((len(models), len(units), width), np.nan)
    for u, unit in enumerate(units):
        texts: list[str | None] = [*prompts[unit]] or [None]
        for k, text in enumerate(texts):
            for m, model in enumerate(models):
                got = seen.get((model, unit, text))
                if got is None:
                    what = f"unit {unit!r}" + (f", prompt {text!r}" if text is not None else "")
                    raise DataError(
                        f"model {model!r} has no score for {what}, which another model has",
                        file=file,
                        expected="every model scored on every (unit, prompt) of the table",
                    )
                scores[m, u, k] = got.score
    return ScoreTable(
        models=tuple(models),
        units=tuple(units),
        templates=tuple(template_names(width)),
        prompts=tuple(tuple(prompts[u]) or ("",) for u in units),
        scores=scores,
    )
