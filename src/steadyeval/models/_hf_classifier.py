"""``hf-classifier``: a ``transformers`` encoder with a classification head (sequence
classification, or multiple choice), answering ``classify`` requests.

A fine-tuned head (the few-shot study's CLS method, or any ``...ForSequenceClassification``
/ ``...ForMultipleChoice`` checkpoint) is an ordinary model: its answers are cached and its
rows join the results table like any other model's. Text pairs are encoded as the head was
trained (``tokenizer(a, b)``, truncation ``longest_first`` to ``max_length``); the answer is
the log-softmax over the labels (or over the choices).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import ConfigError
from ..requests import ClassifyRequest, ClassifyResponse, RequestKind
from ._hf_common import HFBackendBase

__all__ = ["HFClassifierBackend", "classifier_logits"]

_DEFAULT_MAX_LENGTH = 512


def classifier_logits(
    model: Any,
    tokenizer: Any,
    inputs: Sequence[Sequence[tuple[str, str | None]]],
    *,
    max_length: int,
    choices: bool,
) -> tuple[Any, list[int], list[bool]]:
    """The head's logits for a batch (one row per request), and per request the tokens fed
    and whether a pair was cut to ``max_length``. Every request of a multiple-choice batch
    must have the same number of choices."""
    pairs = [p for req in inputs for p in req]
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    second = None if all(x is None for x in b) else [x or "" for x in b]
    full = tokenizer(a, second, truncation=False)["input_ids"]
    enc = tokenizer(
        a,
        second,
        truncation="longest_first" if second is not None else True,
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )
    device = next(model.parameters()).device
    enc = {k: v.to(device) for k, v in enc.items()}
    if choices:
        n = len(inputs[0])
        enc = {k: v.view(len(inputs), n, -1) for k, v in enc.items()}
    fed, cut, i = [], [], 0
    for req in inputs:
        lengths = [len(x) for x in full[i : i + len(req)]]
        fed.append(sum(min(n, max_length) for n in lengths))
        cut.append(any(n > max_length for n in lengths))
        i += len(req)
    return model(**enc).logits, fed, cut


class HFClassifierBackend(HFBackendBase):
    """A classification or multiple-choice head (see the module docstring)."""

    kind = "hf-classifier"
    #: True for a multiple-choice head (one pair per choice), set from the config.
    choices: bool = False

    def _check_config(self) -> None:
        archs = list(getattr(self.config, "architectures", None) or [])
        if any(a.endswith("ForMultipleChoice") for a in archs):
            self.auto_class, self.choices = "AutoModelForMultipleChoice", True
        elif any(a.endswith("ForSequenceClassification") for a in archs):
            self.auto_class, self.choices = "AutoModelForSequenceClassification", False
        else:
            raise ConfigError(
                f"{self.spec}: not a classification head (architectures: "
                f"{', '.join(archs) or 'none'}); hf-classifier loads ...ForSequenceClassification "
                "or ...ForMultipleChoice checkpoints"
            )

    @property
    def supported_kinds(self) -> frozenset[RequestKind]:
        return frozenset({"classify"})

    @property
    def max_length(self) -> int:
        """Input tokens per pair: the ``max_length`` option, capped by the model's limits."""
        _ = self.tokenizer
        limits = [v for v in (self.options.max_length, self._tokenizer_limit) if v]
        positions = getattr(self.config, "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            limits.append(positions)
        return min(limits) if limits else _DEFAULT_MAX_LENGTH

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        return [len(self.tokenizer(t)["input_ids"]) for t in texts]

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResponse]:
        import torch

        for r in requests:
            if r.choices != self.choices:
                what = "one pair per choice" if self.choices else "one pair"
                raise ConfigError(f"{self.spec}: this head takes {what} per request")
        if self.choices and len({len(r.inputs) for r in requests}) > 1:
            groups: dict[int, list[int]] = {}
            for i, r in enumerate(requests):
                groups.setdefault(len(r.inputs), []).append(i)
            out: dict[int, ClassifyResponse] = {}
            for idx in groups.values():
                out.update(zip(idx, self.classify([requests[i] for i in idx]), strict=True))
            return [out[i] for i in range(len(requests))]
        responses: list[ClassifyResponse] = []
        step = max(1, self._batch_size // 2)
        for start in range(0, len(requests), step):
            batch = requests[start : start + step]
            with torch.inference_mode():
                logits, fed, cut = classifier_logits(
                    self.model,
                    self.tokenizer,
                    [r.inputs for r in batch],
                    max_length=self.max_length,
                    choices=self.choices,
                )
            logp = torch.log_softmax(logits.float(), dim=-1).cpu()
            responses.extend(
                ClassifyResponse(tuple(float(x) for x in row), n, c)
                for row, n, c in zip(logp, fed, cut, strict=True)
            )
        return responses
