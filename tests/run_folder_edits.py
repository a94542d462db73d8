"""Editing a finished run folder as the run itself would have written it: the file changed
and its hash recorded in the manifest, so readers take it as the run's (another version's
analysis, a folder mixed by hand or by an old race). Test helper only."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def write_as_the_run(run_dir: Path, name: str, data: Any) -> None:
    """Write ``data`` as JSON to ``run_dir / name`` and record its hash in the manifest."""
    (run_dir / name).write_text(json.dumps(data), encoding="utf-8")
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"][name] = hashlib.sha256((run_dir / name).read_bytes()).hexdigest()
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
