"""Items and the loaders that read them: the generic JSONL/CSV/hub formats and named loaders
for SQuAD 2.0, MMLU, FewGLUE/SuperGLUE, LAMA-style probes and Inspect tasks (one registry,
one JSONL reader, errors that name the file, line and field), and a seeded, stratified
sample of them."""

from ._fewglue import FEWGLUE, FewGlueTask, fewglue_task, load_fewglue_items
from ._inspect_task import load_inspect_items
from ._item import Item, canonical_json, plain_json
from ._jsonl import bad_utf8, read_jsonl, read_lines
from ._loaders import (
    get_loader,
    items_from_records,
    load_csv,
    load_hf,
    load_items,
    load_jsonl,
    loader_names,
    register_loader,
)
from ._mmlu import LETTERS, MMLUData, load_mmlu, load_mmlu_items
from ._mmlu_subjects import CATEGORIES, SUBCATEGORIES, SUBJECTS, SubjectInfo, subject_info
from ._probe_files import PROMPT_SETS, Fact, ProbeData, Relation
from ._probes import (
    fact_metadata,
    load_aliases,
    load_probe_items,
    load_probes,
    load_vocab,
    wikidata_aliases,
)
from ._sample import sample_items
from ._squad import (
    SquadArticle,
    SquadData,
    SquadParagraph,
    SquadQuestion,
    load_squad,
    load_squad2_items,
    squad_from_rows,
)
from ._text import MAX_DEPTH, encode_utf8, lone_surrogate, shorten, value_problem

__all__ = [
    "CATEGORIES",
    "FEWGLUE",
    "LETTERS",
    "MAX_DEPTH",
    "PROMPT_SETS",
    "SUBCATEGORIES",
    "SUBJECTS",
    "Fact",
    "FewGlueTask",
    "Item",
    "MMLUData",
    "ProbeData",
    "Relation",
    "SquadArticle",
    "SquadData",
    "SquadParagraph",
    "SquadQuestion",
    "SubjectInfo",
    "bad_utf8",
    "canonical_json",
    "encode_utf8",
    "fact_metadata",
    "fewglue_task",
    "get_loader",
    "items_from_records",
    "load_aliases",
    "load_csv",
    "load_fewglue_items",
    "load_hf",
    "load_inspect_items",
    "load_items",
    "load_jsonl",
    "load_mmlu",
    "load_mmlu_items",
    "load_probe_items",
    "load_probes",
    "load_squad",
    "load_squad2_items",
    "load_vocab",
    "loader_names",
    "lone_surrogate",
    "plain_json",
    "read_jsonl",
    "read_lines",
    "register_loader",
    "sample_items",
    "shorten",
    "squad_from_rows",
    "subject_info",
    "value_problem",
    "wikidata_aliases",
]
