"""Study 2: prompt and verbalization sensitivity of probing, and the backdoor adjustment.

Factual probes (LAMA / LPAQA style) or any task with several templates are asked under
every (template, subject name); the analysis reads only the results table: prompt
preference, model-ranking changes and Kendall's W across templates, verbalization
stability, backdoor-adjusted scores and rank consistency under three regimes. The study
(:data:`SENSITIVITY_STUDY`) is registered as ``sensitivity``; its report sections
(:func:`sensitivity_report_sections`) give ``steadyeval report`` and ``summary.md`` their
tables. See ``docs/study-sensitivity.md``.
"""

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports
from ...items import (
    PROMPT_SETS,
    Fact,
    ProbeData,
    Relation,
    load_aliases,
    load_probes,
    load_vocab,
    wikidata_aliases,
)

if TYPE_CHECKING:
    from ._analysis import analyze_sensitivity, analyze_tensor
    from ._config import SensitivityConfig
    from ._design import (
        AnalysisOptions,
        ProbeOptions,
        SensitivityWarning,
        probe_design,
        task_design,
        template_names,
    )
    from ._report import REGIMES, sensitivity_report_sections
    from ._score_table import ScoreTable
    from ._setup import load_templates, sensitivity_design
    from ._study import SENSITIVITY_STUDY, SensitivityStudy
    from ._tensor import (
        Correctness,
        adjusted_scores,
        draw_subsets,
        rank_consistency_regimes,
        sampled_adjusted_scores,
        template_scores,
    )
    from ._types import (
        Adjusted,
        IntervalEstimate,
        ModelAdjusted,
        ModelPreference,
        ModelStability,
        NotApplicable,
        PooledSpread,
        PooledStability,
        PromptPreference,
        RankConsistency,
        Rankings,
        Regime,
        RegimeConsistency,
        SensitivityAnalysis,
        SensitivityDesign,
        TemplateAlias,
        UnitAdjusted,
        UnitPreference,
        UnitRankings,
        UnitStability,
        Verbalization,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._analysis": ["analyze_sensitivity", "analyze_tensor"],
        "._design": [
            "AnalysisOptions",
            "ProbeOptions",
            "SensitivityWarning",
            "probe_design",
            "task_design",
            "template_names",
        ],
        "._report": ["REGIMES", "sensitivity_report_sections"],
        "._score_table": ["ScoreTable"],
        "._config": ["SensitivityConfig"],
        "._setup": ["load_templates", "sensitivity_design"],
        "._study": ["SENSITIVITY_STUDY", "SensitivityStudy"],
        "._tensor": [
            "Correctness",
            "adjusted_scores",
            "draw_subsets",
            "rank_consistency_regimes",
            "sampled_adjusted_scores",
            "template_scores",
        ],
        "._types": [
            "Adjusted",
            "IntervalEstimate",
            "ModelAdjusted",
            "ModelPreference",
            "ModelStability",
            "NotApplicable",
            "PooledSpread",
            "PooledStability",
            "PromptPreference",
            "RankConsistency",
            "Rankings",
            "Regime",
            "RegimeConsistency",
            "SensitivityAnalysis",
            "SensitivityDesign",
            "TemplateAlias",
            "UnitAdjusted",
            "UnitPreference",
            "UnitRankings",
            "UnitStability",
            "Verbalization",
        ],
    },
)

__all__ = [
    "PROMPT_SETS",
    "REGIMES",
    "SENSITIVITY_STUDY",
    "Adjusted",
    "AnalysisOptions",
    "Correctness",
    "Fact",
    "IntervalEstimate",
    "ModelAdjusted",
    "ModelPreference",
    "ModelStability",
    "NotApplicable",
    "PooledSpread",
    "PooledStability",
    "ProbeData",
    "ProbeOptions",
    "PromptPreference",
    "RankConsistency",
    "Rankings",
    "Regime",
    "RegimeConsistency",
    "Relation",
    "ScoreTable",
    "SensitivityAnalysis",
    "SensitivityConfig",
    "SensitivityDesign",
    "SensitivityStudy",
    "SensitivityWarning",
    "TemplateAlias",
    "UnitAdjusted",
    "UnitPreference",
    "UnitRankings",
    "UnitStability",
    "Verbalization",
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
    "sampled_adjusted_scores",
    "sensitivity_design",
    "sensitivity_report_sections",
    "task_design",
    "template_names",
    "template_scores",
    "wikidata_aliases",
]
