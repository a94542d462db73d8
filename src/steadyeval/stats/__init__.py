"""Statistics for paired evaluations: tests, intervals, rankings, calibration, resamplers.

Pure functions over arrays that know nothing about language models. Every function
validates its input (raising :class:`StatsInputError` with what to do instead) and returns
a typed, frozen result. Degenerate input that is valid but uninformative gives NaN with a
:class:`StatsWarning`, never a silent number. See ``docs/stats.md``.
"""

from __future__ import annotations

from ._agreement import RaterAgreement, cohen_kappa, krippendorff_alpha
from ._bootstrap import BootstrapResult, paired_bootstrap
from ._calibration import (
    BrierScore,
    CalibrationError,
    ReliabilityBins,
    brier_score,
    expected_calibration_error,
    reliability_bins,
    rms_calibration_error,
)
from ._compare_formats import FormatComparison, PairOverFormats, compare_formats
from ._errors import StatsInputError, StatsWarning, quietly
from ._estimate_spread import PosteriorEstimate, SpreadEstimate, estimate_spread
from ._intervals import (
    Interval,
    MeanSE,
    PairedDifference,
    clopper_pearson_interval,
    clt_se,
    clustered_se,
    paired_difference,
    wilson_interval,
)
from ._irt import (
    MAX_EFFECTS,
    MAX_GRID,
    MAX_ROW_EFFECTS,
    IrtCells,
    IrtDistribution,
    IrtFit,
    fit_irt,
    irt_distribution,
    max_columns,
)
from ._irt_check import SpreadDiagnostic
from ._irt_posterior import MAX_DRAW_VALUES
from ._multiple import MultipleTestResult, benjamini_hochberg, holm
from ._paired import (
    AgreementTable,
    CochranQResult,
    McNemarResult,
    agreement_table,
    cochran_q,
    mcnemar,
)
from ._power import (
    MinimumDetectableDifference,
    PowerResult,
    minimum_detectable_difference,
    paired_power,
)
from ._rank_consistency import (
    REFERENCE_DECIMALS,
    REFERENCE_MAX_MODELS,
    TIE_TOLERANCE,
    RankConsistencyResult,
    rank_consistency,
)
from ._rankings import CorrelationResult, KendallWResult, kendall_tau, kendall_w, spearman
from ._samples import (
    BestOfK,
    GroupMeans,
    MajorityVote,
    best_of_k,
    majority_vote,
    mean_over_samples,
    pass_at_k,
)
from ._sequential import (
    Allocation,
    ConfidenceSequence,
    SignDecision,
    confidence_sequence,
    importance_allocation,
    sequential_sign,
    sign_interval,
)
from ._splitters import KFold, MDLSplits, MultiSplits
from ._spread import SpreadResult, spread
from ._variance import VarianceComponent, VarianceComponents, variance_components
from ._variance_plan import ProjectedSE, SamplesNeeded, projected_se, samples_needed

__all__ = [
    "MAX_DRAW_VALUES",
    "MAX_EFFECTS",
    "MAX_GRID",
    "MAX_ROW_EFFECTS",
    "REFERENCE_DECIMALS",
    "REFERENCE_MAX_MODELS",
    "TIE_TOLERANCE",
    "AgreementTable",
    "Allocation",
    "BestOfK",
    "BootstrapResult",
    "BrierScore",
    "CalibrationError",
    "CochranQResult",
    "ConfidenceSequence",
    "CorrelationResult",
    "FormatComparison",
    "GroupMeans",
    "Interval",
    "IrtCells",
    "IrtDistribution",
    "IrtFit",
    "KFold",
    "KendallWResult",
    "MDLSplits",
    "MajorityVote",
    "McNemarResult",
    "MeanSE",
    "MinimumDetectableDifference",
    "MultiSplits",
    "MultipleTestResult",
    "PairOverFormats",
    "PairedDifference",
    "PosteriorEstimate",
    "PowerResult",
    "ProjectedSE",
    "RankConsistencyResult",
    "RaterAgreement",
    "ReliabilityBins",
    "SamplesNeeded",
    "SignDecision",
    "SpreadDiagnostic",
    "SpreadEstimate",
    "SpreadResult",
    "StatsInputError",
    "StatsWarning",
    "VarianceComponent",
    "VarianceComponents",
    "agreement_table",
    "benjamini_hochberg",
    "best_of_k",
    "brier_score",
    "clopper_pearson_interval",
    "clt_se",
    "clustered_se",
    "cochran_q",
    "cohen_kappa",
    "compare_formats",
    "confidence_sequence",
    "estimate_spread",
    "expected_calibration_error",
    "fit_irt",
    "holm",
    "importance_allocation",
    "irt_distribution",
    "kendall_tau",
    "kendall_w",
    "krippendorff_alpha",
    "majority_vote",
    "max_columns",
    "mcnemar",
    "mean_over_samples",
    "minimum_detectable_difference",
    "paired_bootstrap",
    "paired_difference",
    "paired_power",
    "pass_at_k",
    "projected_se",
    "quietly",
    "rank_consistency",
    "reliability_bins",
    "rms_calibration_error",
    "samples_needed",
    "sequential_sign",
    "sign_interval",
    "spearman",
    "spread",
    "variance_components",
    "wilson_interval",
]
