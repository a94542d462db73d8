"""Study 2, section 6: sample disparity.

Models are pre-trained further (masked LM for encoders, causal LM for decoders) on corpora of
one fixed size in which a share γ of the sentences states the probed facts and the rest is
general text; each checkpoint is probed (P@1) through the runner. The analysis reads only the
results table: P@1 per model × γ, the gap between models per γ with McNemar's test on the
same facts, and each model's change across γ. Registered as ``disparity``; see
``docs/study-disparity.md``.
"""

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

if TYPE_CHECKING:
    from ._analysis import BASE, analyze_disparity, paired_gap
    from ._config import DisparityConfig
    from ._design import (
        COLUMNS,
        CorpusOptions,
        PretrainOptions,
        disparity_design,
        objective_of,
    )
    from ._evidence import OverlapCorpus, read_overlap
    from ._mixture import (
        Mixture,
        build_mixtures,
        mixture_counts,
        overlap_sentences,
        read_corpus,
        split_sentences,
    )
    from ._report import disparity_report_sections
    from ._study import DISPARITY_STUDY, DisparityStudy
    from ._types import (
        DisparityAnalysis,
        DisparityDesign,
        DisparityModel,
        GammaCell,
        GammaChange,
        ModelGap,
        PairedGap,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._analysis": ["BASE", "analyze_disparity", "paired_gap"],
        "._config": ["DisparityConfig"],
        "._design": [
            "COLUMNS",
            "CorpusOptions",
            "PretrainOptions",
            "disparity_design",
            "objective_of",
        ],
        "._evidence": ["OverlapCorpus", "read_overlap"],
        "._mixture": [
            "Mixture",
            "build_mixtures",
            "mixture_counts",
            "overlap_sentences",
            "read_corpus",
            "split_sentences",
        ],
        "._report": ["disparity_report_sections"],
        "._study": ["DISPARITY_STUDY", "DisparityStudy"],
        "._types": [
            "DisparityAnalysis",
            "DisparityDesign",
            "DisparityModel",
            "GammaCell",
            "GammaChange",
            "ModelGap",
            "PairedGap",
        ],
    },
)

__all__ = [
    "BASE",
    "COLUMNS",
    "DISPARITY_STUDY",
    "CorpusOptions",
    "DisparityAnalysis",
    "DisparityConfig",
    "DisparityDesign",
    "DisparityModel",
    "DisparityStudy",
    "GammaCell",
    "GammaChange",
    "Mixture",
    "ModelGap",
    "OverlapCorpus",
    "PairedGap",
    "PretrainOptions",
    "analyze_disparity",
    "build_mixtures",
    "disparity_design",
    "disparity_report_sections",
    "mixture_counts",
    "objective_of",
    "overlap_sentences",
    "paired_gap",
    "read_corpus",
    "read_overlap",
    "split_sentences",
]
