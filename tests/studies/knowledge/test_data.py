"""Loading MMLU: the original CSV layout, located errors, the hub, the shared copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steadyeval import DataError
from steadyeval.studies.knowledge import CATEGORIES, SUBCATEGORIES, SUBJECTS, load_mmlu

from .conftest import DEV, TEST, write_mmlu


def test_mini_benchmark_loads_items_in_file_order(mini_mmlu: Path) -> None:
    data = load_mmlu(mini_mmlu)
    assert data.subjects == ("abstract_algebra", "high_school_us_history")
    assert len(data.dev) == 5 and len(data.evaluated) == 7
    first = data.evaluated[1]
    assert first.id == "abstract_algebra/test/1"
    assert first.question == 'Which set, "N" or "Z", has\nnegatives?'  # quoted newline kept
    assert first.options == ("N", "Z", "both", "neither")
    assert first.gold_options == (1,)
    assert dict(first.metadata) == {
        "subject": "abstract_algebra",
        "category": "STEM",
        "subcategory": "math",
        "split": "test",
    }
    hist = data.evaluated[-1]
    assert hist.id == "high_school_us_history/test/2"
    assert hist.metadata["category"] == "humanities"
    assert [d.id for d in data.dev[:3]] == [f"abstract_algebra/dev/{i}" for i in range(3)]
    assert data.available == {"abstract_algebra": 4, "high_school_us_history": 3}


def test_subjects_and_limit(mini_mmlu: Path) -> None:
    data = load_mmlu(mini_mmlu, subjects=["high_school_us_history"], limit_per_subject=2)
    assert [i.id for i in data.evaluated] == [
        "high_school_us_history/test/0",
        "high_school_us_history/test/1",
    ]
    assert len(data.dev) == 2
    with pytest.raises(DataError, match=r"unknown subject.*'anatomy'.*abstract_algebra"):
        load_mmlu(mini_mmlu, subjects=["anatomy"])


def _broken(tmp_path: Path, row: tuple[str, ...]) -> Path:
    test = {"abstract_algebra": [TEST["abstract_algebra"][1], row]}  # type: ignore[list-item]
    return write_mmlu(tmp_path, {"abstract_algebra": DEV["abstract_algebra"]}, test)


def test_wrong_cell_count_names_file_line_and_field(tmp_path: Path) -> None:
    root = _broken(tmp_path, ("Q?", "a", "b", "c", "A"))
    with pytest.raises(DataError) as err:
        load_mmlu(root)
    e = err.value
    assert e.file == str(root / "test" / "abstract_algebra_test.csv")
    assert e.line == 3  # the first row spans lines 1-2 (quoted newline)
    assert e.field == "answer"
    assert "6 cells" in str(e)


def test_bad_answer_letter(tmp_path: Path) -> None:
    root = _broken(tmp_path, ("Q?", "a", "b", "c", "d", "E"))
    with pytest.raises(DataError, match=r"line 3, field 'answer'.*one of the letters A, B, C, D"):
        load_mmlu(root)


def test_missing_dev_file_and_folders(tmp_path: Path) -> None:
    root = write_mmlu(tmp_path / "a", {}, {"anatomy": TEST["abstract_algebra"]})
    with pytest.raises(DataError, match=r"anatomy_dev\.csv.*missing few-shot file"):
        load_mmlu(root)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no test/ folder"):
        load_mmlu(tmp_path / "empty")
    with pytest.raises(DataError, match="not a directory"):
        load_mmlu(tmp_path / "nowhere.csv")


def test_unknown_subject_is_uncategorised(tmp_path: Path) -> None:
    rows = DEV["abstract_algebra"]
    root = write_mmlu(tmp_path, {"knots": rows}, {"knots": rows})
    data = load_mmlu(root)
    assert data.uncategorised == ("knots",)
    assert data.evaluated[0].metadata["category"] == "uncategorised"


def test_hub_offline_error_is_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.models._hub_cache import HubCache, use_hub_cache

    use_hub_cache(HubCache(tmp_path / "empty-hf"), monkeypatch)  # offline, nothing cached
    with pytest.raises(DataError) as err:
        load_mmlu("cais/mmlu", subjects=["abstract_algebra"])
    text = str(err.value)
    assert text.startswith("cais/mmlu: could not load subject 'abstract_algebra'")
    assert "HF_HUB_OFFLINE=1" in text and "original MMLU layout" in text


def test_subject_table_shape() -> None:
    assert len(SUBJECTS) == 57
    assert len(SUBCATEGORIES) == 17
    assert set(CATEGORIES) == {
        "STEM",
        "humanities",
        "social sciences",
        "other (business, health, misc.)",
    }
    assert {info.subcategory for info in SUBJECTS.values()} == set(SUBCATEGORIES)


@pytest.mark.shared
def test_shared_copy_loads_and_matches_categories(shared_data: Path) -> None:
    mmlu = shared_data / "mmlu"
    data = load_mmlu(mmlu / "hendrycks_format")
    assert len(data.subjects) == 57
    assert len(data.dev) == 285
    assert len(data.evaluated) == 14_042
    assert len({i.id for i in data.evaluated}) == 14_042
    assert all(len(i.options or ()) == 4 for i in data.evaluated)
    reference = json.loads((mmlu / "categories.json").read_text())
    ours = {s: {"category": i.category, "subcategory": i.subcategory} for s, i in SUBJECTS.items()}
    assert ours == reference
    assert set(data.subjects) == set(SUBJECTS)


def test_hub_rows_become_the_same_items(monkeypatch: pytest.MonkeyPatch) -> None:
    """The conversion of hub rows (cais/mmlu's columns), on an in-memory DatasetDict."""
    import datasets

    def split(rows: list[tuple[str, ...]], subject: str) -> datasets.Dataset:
        return datasets.Dataset.from_dict(
            {
                "question": [r[0] for r in rows],
                "subject": [subject] * len(rows),
                "choices": [list(r[1:5]) for r in rows],
                "answer": ["ABCD".index(r[5]) for r in rows],
            }
        )

    calls: list[tuple[str, str]] = []

    def fake_load(name: str, config: str) -> datasets.DatasetDict:
        calls.append((name, config))
        return datasets.DatasetDict(
            {"dev": split(DEV[config], config), "test": split(TEST[config], config)}
        )

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    hub = load_mmlu("cais/mmlu", subjects=["high_school_us_history", "abstract_algebra"])
    assert calls == [("cais/mmlu", "abstract_algebra"), ("cais/mmlu", "high_school_us_history")]
    assert [i.id for i in hub.evaluated][:2] == [
        "abstract_algebra/test/0",
        "abstract_algebra/test/1",
    ]
    assert hub.evaluated[1].question == TEST["abstract_algebra"][1][0]
    assert hub.evaluated[1].gold_options == (1,)
    with pytest.raises(DataError, match=r"has no 'validation' split"):
        load_mmlu("cais/mmlu", subjects=["abstract_algebra"], split="val")


def test_hub_and_folder_give_identical_items(
    mini_mmlu: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets

    folder = load_mmlu(mini_mmlu)

    def fake_load(name: str, config: str) -> datasets.DatasetDict:
        def rows(table: dict[str, list[tuple[str, ...]]]) -> datasets.Dataset:
            r = table[config]
            return datasets.Dataset.from_dict(
                {
                    "question": [x[0] for x in r],
                    "choices": [list(x[1:5]) for x in r],
                    "answer": ["ABCD".index(x[5]) for x in r],
                }
            )

        return datasets.DatasetDict({"dev": rows(DEV), "test": rows(TEST)})

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    hub = load_mmlu("cais/mmlu", subjects=list(folder.subjects))
    assert hub.evaluated == folder.evaluated and hub.dev == folder.dev
