"""Optional extras: which installed packages a feature needs, and one clear error when one
is missing.

Core steadyeval (``pip install steadyeval``) runs, reports, compares and imports without
torch: the ``openai:`` backend speaks HTTP through the standard library. Local models,
tiny models, fine-tuning and hub data sets need the ``hf`` extra. Each feature calls
:func:`require` before its first heavy import, so a missing package is one line naming the
command that installs it (the CLI prints it and exits with code 2), never a traceback.
"""

from __future__ import annotations

import importlib.util

from ._errors import SteadyevalError

__all__ = ["EXTRA_OF", "HF_MODEL_MODULES", "MissingExtraError", "missing_modules", "require"]

#: The extra that installs each optional module, and the extra's name in messages.
EXTRA_OF: dict[str, str] = {
    "torch": "hf",
    "transformers": "hf",
    "tokenizers": "hf",
    "safetensors": "hf",
    "huggingface_hub": "hf",
    "datasets": "hf",
}
_TITLE = {"hf": "the Hugging Face extra", "vllm": "the vLLM extra", "ray": "the Ray extra"}

#: What an ``hf`` model needs to load (hub downloads go through ``huggingface_hub``).
HF_MODEL_MODULES = ("torch", "transformers", "tokenizers", "safetensors", "huggingface_hub")


class MissingExtraError(SteadyevalError):
    """A feature needs a package of an optional extra that is not installed."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses the name, a broken parent
        return False


def missing_modules(*modules: str) -> list[str]:
    """The given top-level modules that cannot be imported here, in the given order."""
    return [m for m in modules if not _installed(m)]


def require(what: str, *modules: str, extra: str | None = None) -> None:
    """Raise :class:`MissingExtraError` when any of ``modules`` is not installed.

    ``what`` is the plural subject of the message, e.g. ``"hf: models"`` gives
    ``hf: models need the Hugging Face extra: pip install 'steadyeval[hf]' (missing:
    torch)``. The extra to name is ``extra`` when given (``vllm`` brings transformers
    itself), else the one :data:`EXTRA_OF` gives for each missing module. Finding a module
    does not import it, so this costs microseconds.
    """
    missing = missing_modules(*modules)
    if not missing:
        return
    extras = [extra] if extra is not None else sorted({EXTRA_OF[m] for m in missing})
    titles = " and ".join(_TITLE.get(e, f"the {e} extra") for e in extras)
    spec = ",".join(extras)
    raise MissingExtraError(
        f"{what} need {titles}: pip install 'steadyeval[{spec}]' (missing: {', '.join(missing)})"
    )
