"""The answer-format study's report sections, built from its analysis alone.

One builder serves ``summary.md`` (tables and text) and ``steadyeval report`` (the same
tables plus figures: outcome bars with Wilson intervals and refusal agreement heatmaps
with the noise floor), so a number never differs between the two. Each model's section is
made of its outcome tables (:mod:`._report_outcomes`), paired tables and noise floor
(:mod:`._report_pairs`) and the tables beyond the seed's (:mod:`._report_extras`); the
determinism check has a section of its own.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...document import Block, Column, Paragraph, Section, Table, format_cell
from ._report_extras import _examples, _extra_blocks
from ._report_labels import condition_labels
from ._report_outcomes import _outcome_blocks
from ._report_pairs import _pair_blocks
from ._types import DeterminismCheck, FormatsAnalysis

__all__ = ["formats_report_sections"]

SOURCE = "formats study"


def _determinism(det: DeterminismCheck, names: Mapping[str, str]) -> Section:
    blocks: list[Block] = [
        Paragraph(
            f"{format_cell(det.questions, 'int')} questions rerun under the greedy formats "
            "with an empty response cache, so every request reached the model again."
        ),
        Table(
            "",
            (
                Column("questions", "int"),
                Column("model calls", "int"),
                Column("answers compared", "int"),
                Column("identical", "int"),
                Column("largest option log-probability difference", "float"),
            ),
            (
                (
                    det.questions,
                    det.model_calls,
                    det.compared,
                    det.identical,
                    det.max_logprob_diff,
                ),
            ),
        ),
    ]
    if det.mismatches:
        blocks.append(
            Table(
                "Answers that differ (first 10)",
                (
                    Column("item"),
                    Column("condition"),
                    Column("model"),
                    Column("rerun output", wide=True),
                    Column("main output", wide=True),
                ),
                tuple(
                    (
                        m.item_id,
                        names.get(m.condition, m.condition),
                        m.model,
                        m.output,
                        m.main_output,
                    )
                    for m in det.mismatches
                ),
            )
        )
    return Section.of(
        "formats-determinism", "Determinism check", blocks, source=SOURCE, labels=names
    )


def formats_report_sections(analysis: FormatsAnalysis, *, figures: bool = True) -> list[Section]:
    """The study's report sections from :func:`analyze_formats`' result (as stored in
    ``summary.json``): per model the seed's outcome tables, every rate with its Wilson
    interval and clustered SE, the paired tables with McNemar and Holm, the noise floor,
    option orders, decoy removal, sampling and seeded examples; then the determinism check.

    Parameters
    ----------
    analysis : FormatsAnalysis
        The analysis of a formats run (``FORMATS_STUDY.read_analysis`` reads it back from
        ``summary.json``).
    figures : bool
        Add figures (outcome bars, refusal agreement heatmaps). ``summary.md`` leaves them
        out: their numbers are in the tables.

    Returns
    -------
    list of Section
    """
    names = condition_labels(analysis)
    out = []
    for i, model in enumerate(analysis.models):
        recs = [r for r in analysis.outcomes if r.model == model]
        blocks = [
            *_outcome_blocks(recs, names, figures),
            *_pair_blocks(analysis, names, model, figures),
            *_extra_blocks(analysis, names, model),
            *_examples(analysis, names, model),
        ]
        title = f"Answer format and abstention: {model}"
        # the report shows every condition by these labels, in its generic sections too
        sid = f"formats-model-{i + 1}"
        out.append(Section.of(sid, title, blocks, source=SOURCE, labels=names))
    if analysis.determinism is not None:
        out.append(_determinism(analysis.determinism, names))
    return out
