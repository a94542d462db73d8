"""A local Hugging Face cache, laid out exactly as ``huggingface_hub`` and ``datasets`` lay
it out, for tests that walk the hub path with no network (issue 38, point 3).

* Models (``huggingface_hub``'s cache, ``HF_HUB_CACHE`` = ``HF_HOME/hub``):
  ``models--OWNER--NAME/blobs/<etag>`` (the git blob SHA-1 of a small file, the SHA-256 of
  a weights file, as the hub's etags are), ``snapshots/<40-hex commit>/<file>`` as relative
  symlinks to the blobs, and ``refs/<branch>`` holding the commit.
* Data sets (``datasets``' own cache, ``HF_DATASETS_CACHE`` = ``HF_HOME/datasets``, which
  ``load_dataset`` reads when the hub is offline):
  ``OWNER___NAME/<config>/0.0.0/<hash>/`` with ``dataset_info.json`` and one Arrow stream
  file per split, named as ``datasets`` names them.

:meth:`HubCache.env` gives the environment a subprocess needs (``HF_HUB_OFFLINE=1`` among
it); :func:`use_hub_cache` points this process at the cache (the environment, and the
libraries' constants, which they read from it once at import).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["HubCache", "use_hub_cache"]


def _etag(data: bytes, name: str) -> str:
    """The hub's etag of a file: SHA-256 for LFS files (weights), else the git blob SHA-1."""
    if name.endswith((".safetensors", ".bin")):
        return hashlib.sha256(data).hexdigest()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's blob id


@dataclass(frozen=True)
class HubCache:
    """A Hugging Face cache under ``home`` (``HF_HOME``)."""

    home: Path

    @property
    def hub(self) -> Path:
        """``HF_HUB_CACHE``: where ``huggingface_hub`` keeps models."""
        return self.home / "hub"

    @property
    def datasets(self) -> Path:
        """``HF_DATASETS_CACHE``: where ``datasets`` keeps prepared data sets."""
        return self.home / "datasets"

    def env(self) -> dict[str, str]:
        """The environment variables that point a process at this cache, offline."""
        return {
            "HF_HOME": str(self.home),
            "HF_HUB_CACHE": str(self.hub),
            "HF_DATASETS_CACHE": str(self.datasets),
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }

    def add_model(
        self, repo_id: str, folder: Path, *, branch: str | None = "main", commit: str | None = None
    ) -> str:
        """Put the files of model folder ``folder`` in the cache as a snapshot of
        ``repo_id`` and return its commit (40 hex digits: ``commit``, else derived from the
        files); ``branch`` (``refs/<branch>``) points at it unless it is None."""
        repo = self.hub / f"models--{repo_id.replace('/', '--')}"
        files = sorted(p for p in folder.iterdir() if p.is_file())
        if commit is None:
            digest = hashlib.sha1(repo_id.encode())  # a commit id's shape
            for p in files:
                digest.update(p.name.encode() + b"\0" + p.read_bytes())
            commit = digest.hexdigest()
        snapshot = repo / "snapshots" / commit
        snapshot.mkdir(parents=True)
        (repo / "blobs").mkdir(exist_ok=True)
        for p in files:
            data = p.read_bytes()
            blob = repo / "blobs" / _etag(data, p.name)
            if not blob.exists():
                blob.write_bytes(data)
            (snapshot / p.name).symlink_to(Path("..", "..", "blobs", blob.name))
        if branch is not None:
            (repo / "refs").mkdir(exist_ok=True)
            (repo / "refs" / branch).write_text(commit)  # no newline, as huggingface_hub writes
        return commit

    def add_dataset(
        self,
        repo_id: str,
        splits: Mapping[str, Sequence[Mapping[str, Any]]],
        *,
        config: str = "default",
    ) -> Path:
        """Put rows in ``datasets``' cache as the prepared data set ``repo_id`` (config
        ``config``; ``splits`` maps a split name to its rows, all with the same columns), as
        ``load_dataset`` leaves it after a download. Returns the prepared folder."""
        import datasets
        import pyarrow as pa
        from datasets.naming import camelcase_to_snakecase, filenames_for_dataset_split

        owner, _, name = repo_id.rpartition("/")
        name = camelcase_to_snakecase(name)
        root = "___".join([owner, name] if owner else [name])
        fingerprint = hashlib.sha1(repo_id.encode() + config.encode()).hexdigest()[:16]
        folder = self.datasets / root / config / "0.0.0" / fingerprint
        folder.mkdir(parents=True)
        first = next(iter(splits.values()))
        features = datasets.Features.from_arrow_schema(pa.Table.from_pylist(list(first)).schema)
        infos = {}
        for split, rows in splits.items():
            table = pa.Table.from_pylist(list(rows), schema=features.arrow_schema)
            (path,) = filenames_for_dataset_split(
                str(folder), dataset_name=name, split=split, filetype_suffix="arrow"
            )
            with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            infos[split] = datasets.SplitInfo(split, num_examples=len(rows), dataset_name=name)
        info = datasets.DatasetInfo(
            features=features,
            config_name=config,
            dataset_name=name,
            splits=datasets.SplitDict(infos),
        )
        info.write_to_directory(str(folder))
        return folder


def use_hub_cache(cache: HubCache, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point this process at ``cache``, offline: the environment variables of
    :meth:`HubCache.env`, and the constants ``huggingface_hub`` and ``datasets`` read from
    them at import, as a new process would see them.

    Both modules are imported before the variables change: a module first imported under
    the test's variables would keep the test's folders as its "original" constants, and
    every later test in the worker would read the cache of this one."""
    import datasets.config
    import huggingface_hub.constants as hub_constants

    for key, value in cache.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(hub_constants, "HF_HOME", str(cache.home))
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(cache.hub))
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache.datasets)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
