"""MMLU's 57 subjects, their 17 subcategories and 4 categories (Hendrycks et al., 2021).

Written out here as data; ``tests/studies/knowledge`` checks it against the copy of the
reference grouping kept with the shared data.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

__all__ = ["CATEGORIES", "SUBCATEGORIES", "SUBJECTS", "SubjectInfo", "subject_info"]


class SubjectInfo(NamedTuple):
    """Where a subject sits in MMLU's grouping."""

    subcategory: str
    category: str


STEM = "STEM"
HUMANITIES = "humanities"
SOCIAL = "social sciences"
OTHER = "other (business, health, misc.)"

#: Category → its subcategories, in the reference order.
CATEGORIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        STEM: ("physics", "chemistry", "biology", "computer science", "math", "engineering"),
        HUMANITIES: ("history", "philosophy", "law"),
        SOCIAL: ("politics", "culture", "economics", "geography", "psychology"),
        OTHER: ("other", "business", "health"),
    }
)

#: Subcategory → category.
SUBCATEGORIES: Mapping[str, str] = MappingProxyType(
    {sub: cat for cat, subs in CATEGORIES.items() for sub in subs}
)

_SUBJECT_SUBCATEGORY: dict[str, str] = {
    "abstract_algebra": "math",
    "anatomy": "health",
    "astronomy": "physics",
    "business_ethics": "business",
    "clinical_knowledge": "health",
    "college_biology": "biology",
    "college_chemistry": "chemistry",
    "college_computer_science": "computer science",
    "college_mathematics": "math",
    "college_medicine": "health",
    "college_physics": "physics",
    "computer_security": "computer science",
    "conceptual_physics": "physics",
    "econometrics": "economics",
    "electrical_engineering": "engineering",
    "elementary_mathematics": "math",
    "formal_logic": "philosophy",
    "global_facts": "other",
    "high_school_biology": "biology",
    "high_school_chemistry": "chemistry",
    "high_school_computer_science": "computer science",
    "high_school_european_history": "history",
    "high_school_geography": "geography",
    "high_school_government_and_politics": "politics",
    "high_school_macroeconomics": "economics",
    "high_school_mathematics": "math",
    "high_school_microeconomics": "economics",
    "high_school_physics": "physics",
    "high_school_psychology": "psychology",
    "high_school_statistics": "math",
    "high_school_us_history": "history",
    "high_school_world_history": "history",
    "human_aging": "health",
    "human_sexuality": "culture",
    "international_law": "law",
    "jurisprudence": "law",
    "logical_fallacies": "philosophy",
    "machine_learning": "computer science",
    "management": "business",
    "marketing": "business",
    "medical_genetics": "health",
    "miscellaneous": "other",
    "moral_disputes": "philosophy",
    "moral_scenarios": "philosophy",
    "nutrition": "health",
    "philosophy": "philosophy",
    "prehistory": "history",
    "professional_accounting": "other",
    "professional_law": "law",
    "professional_medicine": "health",
    "professional_psychology": "psychology",
    "public_relations": "politics",
    "security_studies": "politics",
    "sociology": "culture",
    "us_foreign_policy": "politics",
    "virology": "health",
    "world_religions": "philosophy",
}

#: Subject (file-name form, e.g. ``"abstract_algebra"``) → subcategory and category.
SUBJECTS: Mapping[str, SubjectInfo] = MappingProxyType(
    {s: SubjectInfo(sub, SUBCATEGORIES[sub]) for s, sub in sorted(_SUBJECT_SUBCATEGORY.items())}
)


def subject_info(subject: str) -> SubjectInfo | None:
    """The subcategory and category of ``subject``, or None for a subject MMLU does not have."""
    return SUBJECTS.get(subject)
