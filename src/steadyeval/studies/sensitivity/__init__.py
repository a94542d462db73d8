"""Study 2: prompt and verbalization sensitivity of probing, and the backdoor adjustment.

Factual probes (LAMA / LPAQA style) or any task with several templates are asked under
every (template, subject name); the analysis reads only the results table: prompt
preference, model-ranking changes and Kendall's W across templates, verbalization
stability, backdoor-adjusted scores and rank consistency under three regimes. Its report
sections (:func:`sensitivity_report_sections`) are registered for ``steadyeval report`` at
import and give ``summary.md`` its tables. See ``docs/study-sensitivity.md``.
"""

from ...reports import register_section
from ._analysis import analyze_sensitivity, analyze_tensor
from ._data import PROMPT_SETS, Fact, ProbeData, Relation, load_aliases, load_probes, load_vocab
from ._design import (
    AnalysisOptions,
    ProbeOptions,
    SensitivityWarning,
    probe_design,
    task_design,
    template_names,
)
from ._render import render_sensitivity
from ._report import REGIMES, sensitivity_report, sensitivity_report_sections
from ._study import (
    STUDY,
    load_templates,
    reanalyze_sensitivity,
    run_sensitivity_study,
    sensitivity_design,
)
from ._tensor import (
    Correctness,
    adjusted_scores,
    draw_subsets,
    rank_consistency_regimes,
    sampled_adjusted_scores,
    template_scores,
)

__all__ = [
    "PROMPT_SETS",
    "REGIMES",
    "STUDY",
    "AnalysisOptions",
    "Correctness",
    "Fact",
    "ProbeData",
    "ProbeOptions",
    "Relation",
    "SensitivityWarning",
    "adjusted_scores",
    "analyze_sensitivity",
    "analyze_tensor",
    "draw_subsets",
    "load_aliases",
    "load_probes",
    "load_templates",
    "load_vocab",
    "probe_design",
    "rank_consistency_regimes",
    "reanalyze_sensitivity",
    "render_sensitivity",
    "run_sensitivity_study",
    "sampled_adjusted_scores",
    "sensitivity_design",
    "sensitivity_report",
    "sensitivity_report_sections",
    "task_design",
    "template_names",
    "template_scores",
]

register_section("sensitivity", sensitivity_report)
