"""Items and the loaders that read them."""

from ._item import Item, canonical_json, plain_json
from ._loaders import items_from_records, load_csv, load_hf, load_items, load_jsonl

__all__ = [
    "Item",
    "canonical_json",
    "items_from_records",
    "load_csv",
    "load_hf",
    "load_items",
    "load_jsonl",
    "plain_json",
]
