"""The knowledge study's analysis. Reads only the results (and the seed).

Built to scale to millions of rows: the analysis frame (:mod:`._frame`, a view of the
:class:`~steadyeval.results.ResultsFrame`) keeps item ids as integer codes and labels as
categories, the per-condition summaries (:mod:`._per_condition`) aggregate every
condition's subjects and categories in one group-by, the comparisons across axes
(:mod:`._comparisons`) pivot on numpy, and option scoring (:mod:`._option_scoring`) reads
option scores straight from the frame's list columns. Results are those of the row-by-row
rules (:func:`._frame._rotation`, :func:`._option_scoring._argmax`), which rows with missing
or non-finite values still take. The helpers build rows as dicts; :func:`analyze_knowledge`
returns them as the typed :class:`~._types.KnowledgeAnalysis`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ...results import ResultsFrame
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
from ._frame import _SETTING, analysis_frame
from ._option_scoring import _option_scoring
from ._per_condition import _per_condition
from ._seed_analyses import _confidence_gaps, _end_marker, _length
from ._types import KnowledgeAnalysis, KnowledgeDesign

__all__ = ["analyze_knowledge"]

#: The scorings that answer the question (``prompt-logprob`` rows feed the memorisation check).
_ANSWERED = (LETTER_LOGPROB, OPTION_LOGPROB)


def analyze_knowledge(
    results: ResultsFrame | pa.Table, design: KnowledgeDesign | Mapping[str, Any] | None = None
) -> KnowledgeAnalysis:
    """Every number of the knowledge study, from the results table alone.

    Parameters
    ----------
    results : ResultsFrame or pyarrow.Table
        The results (letter/option-scored MMLU rows, optionally question-only
        ``prompt-logprob`` rows); a table is read as ``ResultsFrame(table)``.
    design : KnowledgeDesign or mapping, optional
        The design facts (a :class:`KnowledgeDesign`, or ``summary.json["design"]``); only
        ``seed`` (for the template-spread bootstrap) is read.

    Returns
    -------
    KnowledgeAnalysis
        ``accuracy`` (per model × condition: micro with Wilson interval, macro over subjects,
        clustered-by-subject SE), ``per_category``, ``per_subcategory``, ``per_subject``,
        ``shots`` (accuracy vs shots, McNemar against the fewest), ``calibration`` (RMS
        calibration error with bins of ~100 items, ECE with 10 bins, Brier, reliability
        bins, Pearson r of confidence and accuracy across subjects), ``rotations``
        (CircularEval), ``templates`` (spread, McNemar), ``option_scoring`` (accuracy under
        each normalisation), ``letter_vs_option``, ``memorisation``, ``notes``,
        ``confidence_gaps`` (per subject: mean confidence − accuracy, paired bootstrap
        interval), ``length`` (accuracy per question-length bin, logistic slope on
        log2(characters)) and ``end_marker`` (UnifiedQA's input with vs without ``</s>``).

    Raises
    ------
    DataError
        If the table lacks a column the analysis reads, or a row's ``metadata`` is not a
        JSON object.

    Notes
    -----
    Axes come from the table's columns: ``scoring``, ``template``, ``n_shots`` and, for
    rotations, the option shown first (``option_source[0]``). Comparisons across an axis
    pair items by ``item_id`` and keep the items present in every condition compared.
    """
    results = ResultsFrame.of(results)
    seed = KnowledgeDesign.from_json(design or {}, source="design").seed
    df = analysis_frame(results)
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
        result["option_scoring"] = _option_scoring(answered, results)
        result["confidence_gaps"] = _confidence_gaps(answered, seed)
        result["length"] = _length(answered, results)
        result["end_marker"] = [] if ambiguous else _end_marker(orig, seed)
    return KnowledgeAnalysis(**result, notes=notes)
