"""Every command block of README.md and docs/*.md runs as written (issue 38, point 4).

Each page's command blocks (```bash / ```sh / ```shell / ```console, and unlabelled blocks
that start with a command) run in order in one temporary working directory holding a copy of
``examples/`` (as in a clone) and ``../shared`` (the shared data, when present): a ``run``
then a ``report`` of its folder. ``# NAME.yaml`` blocks of the page are written there first.
A command that fails fails the page's test.

Nothing here reaches a network. Where a block needs one, or a file only its reader has, the
tables below say what stands in and why; the docs themselves are never changed for the test:

* ``HUB``: hub names resolved from a local hub cache (``HF_HOME``, laid out as
  ``huggingface_hub`` and ``datasets`` lay theirs out, with ``HF_HUB_OFFLINE=1``) that holds
  a tiny model, or rows of the shared data, under that name. A command naming one runs with
  that cache (``HF_HOME``, and the constants ``huggingface_hub`` and ``datasets`` read from
  it); the command text is unchanged.
* ``PROVIDED``: files a page assumes the reader has (their own items, the official SQuAD
  file, Inspect logs, the quickstart's tiny model).
* ``SUBSTITUTIONS``: text replaced in a block before it runs: smaller ``--limit``s, steps
  and grids (time), names of the test logs' tasks.
* ``EXEMPT``: blocks that do not run, each an install block, a GPU-only block or a synopsis.
* ``XFAIL``: blocks that fail because of a known bug outside the docs (strict: the test fails
  once the bug is fixed, so the entry must go).

Tests at the end keep the tables honest: no entry names a block, text or file that is gone.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ._doc_blocks import PAGES, ROOT, Fence, argv_and_redirect, command_blocks, commands, fences
from ._doc_shell import Shell, cb_rows, hub_dataset, hub_model, mmlu_rows

SHARED = ROOT.parent / "shared"


@dataclass(frozen=True)
class Resources:
    """What stand-ins are made of: tiny models (by architecture) and the shared data."""

    tiny: dict[str, Path]
    shared: Path | None  # ../shared/data, or None where this checkout has none
    importer_logs: Path = ROOT / "tests" / "importers" / "fixtures" / "inspect"

    def data(self) -> Path:
        if self.shared is None:
            pytest.skip("../shared/data is not present")
        return self.shared


Make = Callable[[Path, Resources], object]


@dataclass(frozen=True)
class HubStandIn:
    name: str
    stand_in: str
    why: str
    make: Make  # (HF_HOME, resources)


@dataclass(frozen=True)
class Provided:
    page: str
    path: str
    source: str
    why: str
    make: Make  # (the page's working directory, resources)


@dataclass(frozen=True)
class Substitution:
    page: str
    block: str  # the block's first line (Fence.key)
    old: str
    new: str
    why: str


def _model(name: str, arch: str) -> Make:
    return lambda home, res: hub_model(home, name, res.tiny[arch])


def _copy(source: Callable[[Resources], Path], target: str) -> Make:
    def make(work: Path, res: Resources) -> None:
        src, dst = source(res), work / target
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst)

    return make


def _mmlu_jsonl(work: Path, res: Resources) -> None:
    """The shared MMLU abstract_algebra test questions as an items file."""
    import json

    rows = mmlu_rows(res.data(), "abstract_algebra", "test")
    lines = [
        json.dumps({"id": f"aa-{i}", "question": r["question"], "options": r["choices"],
                    "answer": r["answer"]})
        for i, r in enumerate(rows)
    ]  # fmt: skip
    (work / "mmlu.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _mmlu_split_files(work: Path, res: Resources) -> None:
    """The shared MMLU abstract_algebra splits as lm-eval's ``cais/mmlu`` rows, one file per
    split, for ``--task-data`` (the shared data has no validation split: the dev rows stand
    in, and lm-eval only checks it is there, evaluating test)."""
    import json

    folder = work / "mmlu-local"
    folder.mkdir()
    for split, theirs in {"test": "test", "validation": "dev", "dev": "dev"}.items():
        rows = mmlu_rows(res.data(), "abstract_algebra", theirs)
        text = "".join(json.dumps(r) + "\n" for r in rows)
        (folder / f"{split}.jsonl").write_text(text, encoding="utf-8")


_TINY = "a tiny random model (steadyeval.models.build_tiny_model) in its place"
HUB: tuple[HubStandIn, ...] = (
    HubStandIn("Qwen/Qwen2.5-0.5B", "tiny GPT-2", _TINY, _model("Qwen/Qwen2.5-0.5B", "gpt2")),
    HubStandIn(
        "allenai/unifiedqa-t5-large",
        "tiny T5",
        _TINY,
        _model("allenai/unifiedqa-t5-large", "t5"),
    ),
    HubStandIn("bert-base-cased", "tiny BERT", _TINY, _model("bert-base-cased", "bert")),
    HubStandIn("roberta-large", "tiny RoBERTa", _TINY, _model("roberta-large", "roberta")),
    HubStandIn(
        "cais/mmlu",
        "the shared MMLU CSVs' abstract_algebra test rows (the same 100 questions)",
        "the data set's hub copy is not in the shared data",
        lambda home, res: hub_dataset(
            home,
            "cais/mmlu",
            "abstract_algebra",
            "test",
            mmlu_rows(res.data(), "abstract_algebra", "test"),
        ),
    ),
    HubStandIn(
        "superglue:validation",
        "FewGLUE's 32 CB examples as super_glue/cb's validation rows (class ids)",
        "SuperGLUE's validation set is not in the shared data; the command's point is the "
        "hub loader, whose rows these have the form of",
        lambda home, res: hub_dataset(home, "super_glue", "cb", "validation", cb_rows(res.data())),
    ),
)

_QUICKSTART_MODEL = "the quickstart's model (steadyeval tiny-model tiny-gpt2 --arch gpt2)"
PROVIDED: tuple[Provided, ...] = (
    Provided(
        "README.md",
        "my_items.jsonl",
        "a copy of examples/items.jsonl",
        "the reader's own items",
        _copy(lambda res: ROOT / "examples" / "items.jsonl", "my_items.jsonl"),
    ),
    Provided(
        "README.md",
        "dev-v2.0.json",
        "the shared SQuAD 2.0 dev subset (the official file's first two articles)",
        "the official file is downloaded by the reader",
        _copy(
            lambda res: res.data() / "squad2" / "dev-v2.0.controlled_subset.json", "dev-v2.0.json"
        ),
    ),
    Provided(
        "docs/study-formats.md",
        "dev-v2.0.json",
        "the shared SQuAD 2.0 dev subset (the official file's first two articles)",
        "the official file is downloaded by the reader",
        _copy(
            lambda res: res.data() / "squad2" / "dev-v2.0.controlled_subset.json", "dev-v2.0.json"
        ),
    ),
    Provided(
        "docs/study-spread.md",
        "mmlu.jsonl",
        "the shared MMLU abstract_algebra test questions as an items file",
        "the reader's own MMLU export",
        _mmlu_jsonl,
    ),
    Provided(
        "docs/study-spread.md",
        "tiny-gpt2",
        _QUICKSTART_MODEL,
        "the page uses the quickstart's model",
        _copy(lambda res: res.tiny["gpt2"], "tiny-gpt2"),
    ),
    Provided(
        "docs/cli.md",
        "tiny-gpt2",
        _QUICKSTART_MODEL,
        "examples/run.yaml names it; the page follows the quickstart",
        _copy(lambda res: res.tiny["gpt2"], "tiny-gpt2"),
    ),
    Provided(
        "docs/reports.md",
        "tiny-gpt2",
        _QUICKSTART_MODEL,
        "examples/run.yaml names it; the page follows the quickstart",
        _copy(lambda res: res.tiny["gpt2"], "tiny-gpt2"),
    ),
    Provided(
        "docs/scale.md",
        "tiny-gpt2",
        _QUICKSTART_MODEL,
        "examples/run.yaml names it; the page follows the quickstart",
        _copy(lambda res: res.tiny["gpt2"], "tiny-gpt2"),
    ),
    Provided(
        "docs/study-knowledge.md",
        "tiny-gpt2",
        _QUICKSTART_MODEL,
        "the example names it",
        _copy(lambda res: res.tiny["gpt2"], "tiny-gpt2"),
    ),
    Provided(
        "docs/study-knowledge.md",
        "mmlu",
        "the shared MMLU folder (the original CSV layout)",
        "the reader's copy of MMLU",
        _copy(lambda res: res.data() / "mmlu", "mmlu"),
    ),
    Provided(
        "docs/import.md",
        "logs",
        "logs Inspect AI wrote (tests/importers/fixtures/inspect/tasks: tasks arith, multi, "
        "science, science-cot)",
        "the reader's Inspect logs",
        _copy(lambda res: res.importer_logs / "tasks", "logs"),
    ),
    Provided(
        "docs/import.md",
        "cancelled.eval",
        "a log of an eval Inspect AI never finished (tests/importers/fixtures/inspect/killed)",
        "the reader's unfinished log",
        _copy(lambda res: next((res.importer_logs / "killed").glob("*.eval")), "cancelled.eval"),
    ),
    Provided(
        "docs/from-lm-eval.md",
        "mmlu-local",
        "the shared MMLU abstract_algebra CSVs as cais/mmlu's test and dev rows",
        "the hub's cais/mmlu, which the reader's lm-eval downloads (not in the shared data)",
        _mmlu_split_files,
    ),
    Provided(
        "docs/study-fewshot.md",
        "FewGLUE",
        "the shared FewGLUE folder",
        "the reader's copy of FewGLUE",
        _copy(lambda res: res.data() / "fewglue" / "FewGLUE", "FewGLUE"),
    ),
)

_README_REAL = "# any local or hub causal LM on your own items"
_README_STUDY = "# offline, on the tiny model and the example SQuAD-format file"
_TIME = "time: the suite stays fast"
_FROM_LM_EVAL = "pip install 'steadyeval[lm-eval]'"
SUBSTITUTIONS: tuple[Substitution, ...] = (
    Substitution(
        "docs/from-lm-eval.md",
        _FROM_LM_EVAL,
        _FROM_LM_EVAL + "\n",
        "",
        "install: an install line (lm-eval is installed with [dev]; the suite reaches no index)",
    ),
    Substitution(
        "docs/from-lm-eval.md",
        _FROM_LM_EVAL,
        "--model hf:Qwen/Qwen2.5-0.5B --out runs/algebra",
        "--model hf:Qwen/Qwen2.5-0.5B --task-data mmlu_abstract_algebra=mmlu-local "
        "--limit 8 --out runs/algebra",
        "the hub's cais/mmlu is not here: the same rows from local files; "
        + _TIME
        + " (100 questions × 6 conditions on the tiny model)",
    ),
    Substitution(
        "docs/scale.md",
        "pip install 'steadyeval[ray]'          # included in [dev]",
        "pip install 'steadyeval[ray]'          # included in [dev]\n",
        "",
        "install: an install line (ray is installed with [dev]; the suite reaches no index)",
    ),
    Substitution(
        "docs/import.md",
        "steadyeval import inspect logs/ --out runs/inspect",
        "--item-scope arc=arc --item-scope arc_cot=arc",
        "--item-scope science=science --item-scope science_cot=science",
        "the test logs' tasks: science and science_cot ask the same samples",
    ),
    Substitution(
        "README.md",
        _README_REAL,
        "examples/mmlu-hub.yaml --out runs/mmlu-algebra",
        "examples/mmlu-hub.yaml --out runs/mmlu-algebra --limit 5",
        _TIME + " (100 questions × 3 conditions on the tiny model)",
    ),
    Substitution(
        "README.md",
        _README_STUDY,
        "--data dev-v2.0.json --out runs/formats-uqa",
        "--data dev-v2.0.json --out runs/formats-uqa --answerable 4 --unanswerable 4",
        _TIME + " (600 questions by default)",
    ),
)

# The study pages (their blocks are named by their first lines).
_DISPARITY = "steadyeval tiny-model tiny-bert --arch bert"
_SENSITIVITY = "steadyeval tiny-model tiny-gpt2 --arch gpt2"
_KNOWLEDGE = "steadyeval study knowledge --model hf:./tiny-gpt2 --data mmlu/hendrycks_format \\"
_SPREAD = (
    "steadyeval study spread --model hf:Qwen/Qwen2.5-0.5B --data mmlu.jsonl --sample 2000 "
    "--out runs/spread"
)
_FORMATS = (
    'steadyeval study formats --model "hf-seq2seq:allenai/unifiedqa-t5-large?max_length=512" \\'
)
_FEWSHOT = (
    "# Offline: FewGLUE ships only 32 labelled examples per task, so hold 16 out as the test set."
)
SUBSTITUTIONS += (
    Substitution(
        "docs/study-disparity.md",
        _DISPARITY,
        "--limit-per-relation 5",
        "--limit-per-relation 1",
        _TIME + " (41 relations)",
    ),
    Substitution(
        "docs/study-disparity.md",
        _DISPARITY,
        "--corpus-size 2000 --steps 200 --batch-size 32",
        "--corpus-size 100 --steps 2 --batch-size 8 --gammas 0,100",
        _TIME + " (6 γ × 2 models × 200 steps train for many minutes on a CPU)",
    ),
    Substitution(
        "docs/study-sensitivity.md",
        _SENSITIVITY,
        "--limit-per-relation 5 --out runs/lpaqa",
        "--limit-per-relation 2 --out runs/lpaqa",
        _TIME + " (41 relations, each with its paraphrased templates)",
    ),
    Substitution(
        "docs/study-knowledge.md",
        _KNOWLEDGE,
        "--limit-per-subject 5",
        "--limit-per-subject 1",
        _TIME + " (57 subjects)",
    ),
    Substitution(
        "docs/study-spread.md",
        _SPREAD,
        "--data mmlu.jsonl --sample 2000 --out runs/spread",
        "--data mmlu.jsonl --sample 50 --draws 100 --out runs/spread",
        _TIME + " (100 questions; a sample of 50 gives the default budget of 100 cells, one "
        "per format; 100 posterior draws, not 400)",
    ),
    Substitution(
        "docs/study-spread.md",
        _SPREAD,
        "--sampler adaptive --out runs/spread-adaptive",
        "--sampler adaptive --draws 100 --out runs/spread-adaptive",
        _TIME + " (100 posterior draws, not 400)",
    ),
    Substitution(
        "docs/study-spread.md",
        _SPREAD,
        "--budget 120 --out runs/spread-pe",
        "--budget 120 --draws 100 --out runs/spread-pe",
        _TIME + " (100 posterior draws, not 400)",
    ),
    Substitution(
        "docs/study-formats.md",
        _FORMATS,
        "--data dev-v2.0.json --out runs/formats\n",
        "--data dev-v2.0.json --out runs/formats --answerable 4 --unanswerable 4\n",
        _TIME + " (600 questions by default)",
    ),
    Substitution(
        "docs/study-formats.md",
        _FORMATS,
        "--determinism 8 --out runs/formats-qwen",
        "--determinism 2 --out runs/formats-qwen --answerable 2 --unanswerable 2",
        _TIME + " (600 questions by default)",
    ),
)

# The few-shot page: its commands and its two space files.
_FEWNLU_SPACE = (
    "# fewnlu-space.yaml: one space for every method compared (patterns: each task's first two,"
)
_PET_SPACE = "# pet-space.yaml: the grid of the hub command above (CB's patterns named)"
_FEWSHOT_TIME = (
    _TIME + ": each setting × split × K trains a model (minutes each at the page's sizes)"
)
SUBSTITUTIONS += (
    Substitution(
        "docs/study-fewshot.md",
        _FEWSHOT,
        "--strategy mdl --k 4 --out runs/rte-icl",
        "--strategy mdl --k 2 --k-values 2 --out runs/rte-icl",
        _TIME + " (K = 2 only: 12 ICL settings × 3 strategies)",
    ),
    Substitution(
        "docs/study-fewshot.md",
        _FEWSHOT,
        "--method pet --k 4 --threads 1 --out runs/rte-pet",
        "--method pet --k 2 --k-values 2 --strategy multisplit --space pet-space.yaml "
        "--threads 1 --out runs/rte-pet",
        _FEWSHOT_TIME + " (pet-space.yaml as substituted below: one setting of 2 steps)",
    ),
    Substitution(
        "docs/study-fewshot.md",
        _FEWSHOT,
        "--task RTE --task CB --task COPA --task WiC",
        "--task RTE",
        _FEWSHOT_TIME + " (one of the four tasks: every method still runs; the other tasks "
        "run in tests/studies/fewshot)",
    ),
    Substitution(
        "docs/study-fewshot.md",
        _FEWSHOT,
        "--strategy multisplit --k 4 --k-values 4 --space fewnlu-space.yaml",
        "--strategy multisplit --k 2 --k-values 2 --space fewnlu-space.yaml",
        _FEWSHOT_TIME,
    ),
    Substitution(
        "docs/study-fewshot.md",
        _FEWSHOT,
        "--method pet --space pet-space.yaml --final-seeds 3 --out runs/cb-pet",
        "--method pet --space pet-space.yaml --final-seeds 3 --out runs/cb-pet "
        "--k 2 --k-values 2 --strategy multisplit",
        _FEWSHOT_TIME,
    ),
    Substitution(
        "docs/study-fewshot.md",
        _FEWNLU_SPACE,
        "learning_rate: [1e-5, 2e-5]     # unquoted numbers are numbers, 1e-5 included\n"
        "steps: [250]\nbatch_size: [16]\neval_every: [50]",
        "learning_rate: [1e-4]\nsteps: [2]\nbatch_size: [4]\neval_every: [1]\n"
        "unlabelled_size: [8]\npattern: {RTE: [question]}",
        _FEWSHOT_TIME + " (one setting of 2 steps, 8 unlabelled examples, one pattern)",
    ),
    Substitution(
        "docs/study-fewshot.md",
        _FEWNLU_SPACE,
        "max_length: [256]",
        "max_length: [64]",
        _TIME,
    ),
    Substitution(
        "docs/study-fewshot.md",
        _FEWNLU_SPACE,
        "ipet:\n  generations: 3",
        "ipet:\n  generations: 1\nnoisy:\n  rounds: 1",
        _FEWSHOT_TIME + " (one iPET generation, one Noisy Student round)",
    ),
    Substitution(
        "docs/study-fewshot.md",
        _FEWNLU_SPACE,
        "pet-full:\n  ensemble_seeds: 3             # PET models per pattern (timoschick/pet: 3)",
        "pet-full:\n  ensemble_seeds: 1",
        _FEWSHOT_TIME + " (one PET model per pattern in full PET's ensemble)",
    ),
    Substitution(
        "docs/study-fewshot.md",
        _PET_SPACE,
        "learning_rate: [1e-5, 2e-5]\nsteps: [250]\neval_every: [50]",
        "learning_rate: [1e-4]\nsteps: [2]\neval_every: [1]\nbatch_size: [4]",
        _FEWSHOT_TIME + " (one setting of 2 steps)",
    ),
)

_SYNOPSIS = "synopsis: placeholders (SPEC, RUN_DIR, [options]) stand for the reader's values"
EXEMPT: dict[tuple[str, str], str] = {
    ("README.md", "pip install torch==2.13.0 && pip install -e '.[dev]'"): (
        "install: installs packages, then runs this very test suite"
    ),
    ("docs/install.md", "pip install steadyeval"): "install: from the package index",
    (
        "docs/install.md",
        "pip install torch==2.13.0            # or the torch build you want, CPU or CUDA",
    ): "install: from the package index",
    ("docs/install.md", "pip install torch==2.13.0 && pip install -e '.[dev]'"): (
        "install: installs packages, then runs this very test suite"
    ),
    (
        "docs/backends-api.md",
        "# a local vLLM server (it returns prompt log-probabilities, so every scoring works)",
    ): (
        "GPU-only: `vllm serve` needs a CUDA GPU (and the OpenAI part a paid API key); "
        "tests/models/test_openai*.py run the openai: backend against a local server"
    ),
    (
        "docs/backends-api.md",
        "pip install 'steadyeval[vllm]'   # on a machine with a CUDA GPU; brings its own CUDA torch",
    ): "install: vLLM, then a GPU-only run (tensor_parallel_size=2 needs two GPUs)",
}
for _page, _key in [
    (
        "docs/cli.md",
        "steadyeval run [CONFIG.yaml] --model SPEC... (--data PATH | --task TOOL:TASK...) "
        "[--task-data NAME=FOLDER...]",
    ),
    ("docs/cli.md", "steadyeval study formats [CONFIG.yaml] --model SPEC... --data SQUAD.json"),
    ("docs/cli.md", "steadyeval study sensitivity --model SPEC --model SPEC... --data DIR"),
    ("docs/cli.md", "steadyeval study knowledge --model SPEC... --data MMLU_DIR|cais/mmlu"),
    ("docs/cli.md", "steadyeval study fewshot --model SPEC --task TASK [--task TASK ...]"),
    ("docs/cli.md", "steadyeval study spread [CONFIG.yaml] --model SPEC... --data ITEMS"),
    ("docs/cli.md", "steadyeval study decide [CONFIG.yaml] --model A --model B [--model C"),
    ("docs/cli.md", "steadyeval study disparity --model SPEC --model SPEC... --data DIR"),
    ("docs/cli.md", "steadyeval report RUN_DIR [--format html|md|json] [--output PATH|-]"),
    ("docs/cli.md", "steadyeval reanalyze RUN_DIR"),
    ("docs/cli.md", "steadyeval compare RUN_A RUN_B [...] [--over conditions] [--model M]"),
    ("docs/cli.md", "steadyeval judge RUN_DIR --judge MODEL [--judge MODEL...] --out DIR"),
    ("docs/cli.md", "steadyeval import lm-eval PATH... --out RUN_DIR"),
    ("docs/cli.md", "steadyeval import inspect PATH... --out RUN_DIR"),
    ("docs/cli.md", "steadyeval tiny-model DIR [--arch gpt2|t5|bert"),
    ("docs/cli.md", "steadyeval cache info [--cache FILE]"),
    ("docs/cli.md", "steadyeval cache clear [--cache FILE]"),
    ("docs/cli.md", "steadyeval [--log-level debug|info|warning|error]"),
    ("docs/import.md", "steadyeval import lm-eval PATH... --out RUN_DIR"),
    ("docs/reports.md", "steadyeval report RUN_DIR [--format html|md|json]"),
    ("docs/reports.md", "steadyeval compare RUN_A RUN_B [RUN_C ...]"),
    ("docs/study-knowledge.md", "steadyeval study knowledge --model SPEC... --data SOURCE"),
    (
        "docs/study-disparity.md",
        "steadyeval study disparity --model hf-masked:bert-base-cased --model hf-causal:gpt2 \\",
    ),
]:
    EXEMPT[(_page, _key)] = _SYNOPSIS

XFAIL: dict[tuple[str, str], str] = {}


class KnownBug(AssertionError):
    """A block listed in ``XFAIL`` failed, as the bug it names makes it."""


def _exempt(page: str, block: Fence) -> str | None:
    """The reason a block does not run (EXEMPT keys may be a prefix of the first line)."""
    for (p, key), why in EXEMPT.items():
        if p == page and block.key.startswith(key):
            return why
    return None


def runnable(page: str) -> list[Fence]:
    return [b for b in command_blocks(page) if _exempt(page, b) is None]


def substituted(block: Fence) -> str:
    text = block.text
    for s in SUBSTITUTIONS:
        if (s.page, s.block) == (block.page, block.key):
            text = text.replace(s.old, s.new)
    return text


def _named_files(page: str) -> Iterator[tuple[str, str]]:
    """``(name, text)`` of the page's blocks that start ``# NAME.yaml``."""
    for f in fences(page):
        m = re.match(r"# ([\w.-]+\.ya?ml)\b", f.key)
        if f.lang in ("yaml", "yml") and m:
            yield m.group(1), substituted(f)


@pytest.fixture(scope="session")
def doc_resources(
    tiny_gpt2: Path, tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory
) -> Resources:
    from steadyeval.models import build_tiny_model

    root = tmp_path_factory.mktemp("doc-models")
    tiny = {
        "gpt2": tiny_gpt2,
        "bert": tiny_bert,
        "t5": build_tiny_model(root / "t5", "t5", seed=0),
        "roberta": build_tiny_model(root / "roberta", "roberta", seed=0),
    }
    data = SHARED / "data"
    return Resources(tiny, data if data.is_dir() else None)


@pytest.fixture(scope="session")
def doc_hub(doc_resources: Resources, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``HF_HOME`` of the stand-ins in ``HUB`` (those of the shared data only when present)."""
    home = tmp_path_factory.mktemp("hf-home")
    for entry in HUB:
        try:
            entry.make(home, doc_resources)
        except pytest.skip.Exception:
            continue  # needs the shared data: a page that uses it skips
    return home


def _page_param(page: str) -> object:
    reasons = [why for (p, _), why in XFAIL.items() if p == page]
    if not reasons:
        return page
    return pytest.param(
        page, marks=pytest.mark.xfail(strict=True, raises=KnownBug, reason="; ".join(reasons))
    )


RUNNABLE = [p for p in PAGES if runnable(p)]


@pytest.mark.parametrize("page", [_page_param(p) for p in RUNNABLE])
def test_documented_commands_run(
    page: str, doc_resources: Resources, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    blocks = runnable(page)
    texts = [substituted(b) for b in blocks]
    if any("../shared" in t for t in texts):
        doc_resources.data()
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples", work / "examples")
    if doc_resources.shared is not None:
        (tmp_path / "shared").symlink_to(doc_resources.shared.parent)
    for name, text in _named_files(page):
        (work / name).write_text(text, encoding="utf-8")
    for p in PROVIDED:
        if p.page == page:
            p.make(work, doc_resources)
    shell = Shell(work, tuple(h.name for h in HUB), lambda: request.getfixturevalue("doc_hub"))
    for block, text in zip(blocks, texts, strict=True):
        for command in commands(text, console=block.lang == "console"):
            rc, output = shell.run(command)
            if rc != 0:
                message = (
                    f"{page}, the block at line {block.line} ({block.key!r}): `{command}` "
                    f"exited with {rc}:\n{output[-6000:]}"
                )
                if (page, block.key) in XFAIL:
                    raise KnownBug(message)
                pytest.fail(message)
    print("\n".join(shell.log))  # each command's time (shown with -rP or -s)


# --- the tables stay honest -------------------------------------------------------------


def _blocks_named(page: str, key: str, *, prefix: bool = False) -> list[Fence]:
    return [f for f in fences(page) if (f.key.startswith(key) if prefix else f.key == key)]


def test_block_names_are_unique_within_a_page() -> None:
    for page in PAGES:
        keys = [f.key for f in fences(page) if f.is_command or f.lang in ("yaml", "yml")]
        assert len(keys) == len(set(keys)), page


def test_exemptions_name_one_block_each_for_an_allowed_reason() -> None:
    for (page, key), why in EXEMPT.items():
        blocks = [b for b in command_blocks(page) if b.key.startswith(key)]
        assert len(blocks) == 1, f"EXEMPT {page}: {key!r} names {len(blocks)} command blocks"
        kind = why.split(":", 1)[0]
        assert kind in ("install", "GPU-only", "synopsis"), f"{page}: {key!r}: {why!r}"
        if kind == "synopsis":  # placeholders: an upper-case name or an [optional] part
            assert re.search(r"\b[A-Z][A-Z_]{2,}\b|\[", blocks[0].text), (page, key)
        if kind == "install":
            assert "pip install" in blocks[0].text, (page, key)


def test_substitutions_name_text_the_block_holds() -> None:
    for s in SUBSTITUTIONS:
        (block,) = _blocks_named(s.page, s.block)
        assert s.old and s.old in block.text, f"{s.page}: {s.block!r} no longer holds {s.old!r}"
        assert s.why, s


def _texts(pages: list[str]) -> list[str]:
    """What the pages' runnable blocks run: their text after substitution, the page's
    named files, and the example configs they name."""
    texts = [substituted(b) for page in pages for b in runnable(page)]
    texts += [text for page in pages for _, text in _named_files(page)]
    return texts + [
        f.read_text(encoding="utf-8")
        for f in (ROOT / "examples").glob("*.yaml")
        if any(f"examples/{f.name}" in t for t in texts)
    ]


def test_provided_files_are_named_by_the_page() -> None:
    for p in PROVIDED:
        assert any(p.path in t for t in _texts([p.page])), f"{p.page} never names {p.path}"


def test_hub_stand_ins_are_named_by_a_runnable_block() -> None:
    texts = _texts(RUNNABLE)
    for h in HUB:
        assert any(h.name in t for t in texts), f"no runnable block needs {h.name}"


def test_xfail_entries_name_runnable_blocks() -> None:
    for page, key in XFAIL:
        assert [b for b in runnable(page) if b.key == key], (page, key)


def test_every_command_block_parses() -> None:
    for page in PAGES:
        for block in command_blocks(page):
            cmds = commands(substituted(block), console=block.lang == "console")
            assert cmds or _exempt(page, block), f"{page}: {block.key!r} holds no command"


def test_commands_are_split_as_a_shell_would() -> None:
    text = (
        "# a comment\n"
        "steadyeval run a.yaml \\\n    --out runs/x   # trailing\n"
        "\n"
        'python -c "import json\nprint(1)" > out.txt\n'
        "cat out.txt\n"
    )
    assert commands(text) == [
        "steadyeval run a.yaml --out runs/x   # trailing",
        'python -c "import json\nprint(1)" > out.txt',
        "cat out.txt",
    ]
    assert commands("$ steadyeval --help\nUsage: ...\n$ cat x\n", console=True) == [
        "steadyeval --help",
        "cat x",
    ]
    assert argv_and_redirect("steadyeval run a.yaml > out.txt  # log") == (
        ["steadyeval", "run", "a.yaml"],
        "out.txt",
    )
    assert argv_and_redirect("steadyeval run 'hf:x?a=1&b=2' --out r") == (
        ["steadyeval", "run", "hf:x?a=1&b=2", "--out", "r"],
        None,
    )
    assert argv_and_redirect("steadyeval run a | tee log") is None
