"""The knowledge study's analysis. Reads only the results table (and the seed).

Built to scale to millions of rows: the analysis frame (:mod:`._frame`) keeps item ids as
integer codes and labels as categories, the per-condition summaries (:mod:`._per_condition`)
aggregate every condition's subjects and categories in one group-by, the comparisons across
axes (:mod:`._comparisons`) pivot on numpy, and option scoring (:mod:`._option_scoring`)
reads option scores straight from the table's list columns. Results are those of the
row-by-row rules (:func:`._frame._rotation`, :func:`._option_scoring._argmax`), which rows
with missing or non-finite values still take.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import pandas as pd
import pyarrow as pa

from ...scoring import LETTER_LOGPROB, OPTION_LOGPROB
from ...stats import StatsWarning
from ._comparisons import (
    _letter_vs_option,
    _memorisation,
    _rotations,
    _shots,
    _templates,
    _unique_conditions,
)
from ._frame import _SETTING, _frame
from ._option_scoring import _option_scoring
from ._per_condition import _per_condition

__all__ = ["analyze_knowledge", "knowledge_frame"]

#: The scorings that answer the question (``prompt-logprob`` rows feed the memorisation check).
_ANSWERED = (LETTER_LOGPROB, OPTION_LOGPROB)


def knowledge_frame(table: pa.Table) -> pd.DataFrame:
    """The rows the analysis uses, with ``category``, ``subcategory`` and ``rotation``.

    Category and subcategory come from each row's ``metadata`` (as the loader set them),
    else from MMLU's subject table. ``rotation`` is the index of the original option shown
    first (0 for original order; NaN for other orders). The index is the row's position in
    ``table``.
    """
    return _frame(table, lists=True)


def analyze_knowledge(table: pa.Table, info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every number of the knowledge study, from the results table alone.

    Parameters
    ----------
    table : pyarrow.Table
        A results table (letter/option-scored MMLU rows, optionally question-only
        ``prompt-logprob`` rows).
    info : mapping, optional
        Design facts; only ``seed`` (for the template-spread bootstrap) is read.

    Returns
    -------
    dict
        ``accuracy`` (per model × condition: micro with Wilson interval, macro over subjects,
        clustered-by-subject SE), ``per_category``, ``per_subcategory``, ``per_subject``,
        ``shots`` (accuracy vs shots, McNemar against the fewest), ``calibration`` (RMS
        calibration error with bins of ~100 items, ECE with 10 bins, Brier, reliability
        bins, Pearson r of confidence and accuracy across subjects), ``rotations``
        (CircularEval), ``templates`` (spread, McNemar), ``option_scoring`` (accuracy under
        each normalisation), ``letter_vs_option``, ``memorisation`` and ``notes``.

    Notes
    -----
    Axes come from the table's columns: ``scoring``, ``template``, ``n_shots`` and, for
    rotations, the option shown first (``option_source[0]``). Comparisons across an axis
    pair items by ``item_id`` and keep the items present in every condition compared.
    """
    seed = int((info or {}).get("seed", 0))
    df = _frame(table, lists=False)
    answered = df[df["scoring"].isin(_ANSWERED) & df["correct"].notna()].copy()
    answered["correct"] = answered["correct"].astype(bool)
    notes: list[str] = []
    ambiguous = _unique_conditions(answered, [*_SETTING, "rotation"])
    if ambiguous:
        notes.append(
            "several conditions share scoring/template/shots/rotation, so comparisons across "
            f"those axes were skipped: {'; '.join(ambiguous)}"
        )
    orig = answered[answered["rotation"] == 0]
    result: dict[str, Any] = {"models": sorted(df["model"].unique().tolist())}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        result.update(_per_condition(answered))
        if not ambiguous:
            result.update(
                shots=_shots(orig),
                rotations=_rotations(answered),
                templates=_templates(orig, seed),
                letter_vs_option=_letter_vs_option(orig),
                memorisation=_memorisation(df, orig),
            )
        else:
            result.update(
                shots=[], rotations=[], templates=[], letter_vs_option=[], memorisation=[]
            )
        result["option_scoring"] = _option_scoring(answered, table)
    result["notes"] = notes
    return result
