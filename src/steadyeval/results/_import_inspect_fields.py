"""The fields of an Inspect log that an import reads, type-checked as they are read.

Inspect's own reader validates a log against its pydantic models; this is the part of that
schema the import uses (``EvalLog.eval``/``status``/``error``/``results``, and of each
``EvalSample`` the fields that become a row). A field of the wrong type is a
:class:`~steadyeval.DataError` naming the file, the archive member, the field and what was
expected. Fields the import does not use are dropped from each sample as it is read
(``events`` and ``attachments`` hold most of a log's bytes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._import_fields import (
    INT,
    LIST,
    NAME,
    OBJECT,
    TEXT,
    Place,
    describe,
    get,
    int_in,
    list_of,
    valid_text,
)

__all__ = ["MAX_EPOCHS", "check_header", "check_sample"]

#: The largest epoch number: ``sample_index`` (epoch - 1) is a 32-bit column.
MAX_EPOCHS = 2**31 - 1
#: The sample fields an import reads; the rest is dropped.
#: The strings of ``eval`` (Inspect's EvalSpec) an import reads; none may be null.
_SPEC_TEXTS = ("task", "model", "task_id", "eval_id", "run_id", "created")
_KEPT = ("id", "input", "choices", "target", "messages", "output", "scores", "metadata", "error")


def _texts(
    obj: Mapping[str, Any], keys: tuple[str, ...], place: Place, *, nullable: bool = True
) -> None:
    for key in keys:
        get(obj, key, place, TEXT, nullable=nullable)


def _message_error(obj: Mapping[str, Any], key: str, place: Place) -> None:
    """``obj[key]``: null, or an object whose ``message`` is a string."""
    err = get(obj, key, place, OBJECT)
    if err is not None:
        get(err, "message", place.at(key), TEXT)


def check_header(header: Mapping[str, Any], place: Place) -> None:
    """Check the header fields an import reads (``eval`` itself may be missing: the caller
    says the file is not an Inspect log)."""
    valid_text({k: header.get(k) for k in ("eval", "status", "error", "results")}, place)
    get(header, "status", place, TEXT, nullable=False)
    _message_error(header, "error", place)
    spec = get(header, "eval", place, OBJECT)
    if spec is not None:
        at = place.at("eval")
        # Inspect's EvalSpec declares these strings (older logs may lack some): null, as
        # from an edited or damaged log, would become a condition or model named 'None'.
        _texts(spec, _SPEC_TEXTS, at, nullable=False)
        for key in ("task", "model"):  # names of a condition and a model: never empty
            get(spec, key, at, NAME, nullable=False)
        config = get(spec, "config", at, OBJECT)
        if config is not None:
            cat = at.at("config")
            if get(config, "epochs", cat, INT) is not None:
                int_in(config["epochs"], cat.at("epochs"), 1, MAX_EPOCHS)
            if isinstance(get(config, "epochs_reducer", cat, TEXT, LIST), list):
                list_of(config["epochs_reducer"], cat.at("epochs_reducer"), TEXT)
        dataset = get(spec, "dataset", at, OBJECT)
        if dataset is not None and get(dataset, "samples", at.at("dataset"), INT) is not None:
            int_in(dataset["samples"], at.at("dataset").at("samples"), 0, 2**63 - 1)
    results = get(header, "results", place, OBJECT)
    if results is not None:
        at = place.at("results").at("scores")
        scores = get(results, "scores", place.at("results"), LIST)
        for i, score in enumerate(list_of(scores, at, OBJECT)):
            get(score, "name", at.at(i), TEXT)
            for name, metric in (get(score, "metrics", at.at(i), OBJECT) or {}).items():
                if not isinstance(metric, Mapping):
                    raise (
                        at.at(i)
                        .at("metrics")
                        .at(str(name))
                        .error(f"is {describe(metric)}", "an object (an EvalMetric)")
                    )


def _content(value: Any, place: Place) -> None:
    """A message's ``content``: a string, or a list of content parts (objects or strings)."""
    if isinstance(value, list):
        for i, part in enumerate(value):
            if isinstance(part, Mapping):
                _texts(part, ("type", "text"), place.at(i))
            elif not isinstance(part, str):
                raise place.at(i).error(f"is {describe(part)}", "a content object or a string")


def _messages(obj: Mapping[str, Any], key: str, place: Place) -> None:
    """``obj[key]``: null, or a list of chat messages (``role``, ``content``)."""
    at = place.at(key)
    for i, message in enumerate(list_of(get(obj, key, place, LIST), at, OBJECT)):
        get(message, "role", at.at(i), TEXT)
        _content(get(message, "content", at.at(i), TEXT, LIST), at.at(i).at("content"))


def _output(sample: Mapping[str, Any], place: Place) -> None:
    output = get(sample, "output", place, OBJECT)
    if output is None:
        return
    at = place.at("output")
    get(output, "completion", at, TEXT)
    choices = at.at("choices")
    for i, choice in enumerate(list_of(get(output, "choices", at, LIST), choices, OBJECT)):
        get(choice, "stop_reason", choices.at(i), TEXT)
        message = get(choice, "message", choices.at(i), OBJECT)
        if message is not None:
            _content(
                get(message, "content", choices.at(i).at("message"), TEXT, LIST),
                choices.at(i).at("message").at("content"),
            )


def _scores(sample: Mapping[str, Any], place: Place) -> None:
    at = place.at("scores")
    for name, score in (get(sample, "scores", place, OBJECT) or {}).items():
        if not isinstance(score, Mapping):
            raise at.at(str(name)).error(f"is {describe(score)}", "an object (an Inspect Score)")
        get(score, "answer", at.at(str(name)), TEXT)


def check_sample(raw: Any, place: Place) -> dict[str, Any]:
    """The fields of one ``EvalSample`` an import reads, their types checked; ``epoch`` is
    always set (default 1)."""
    if not isinstance(raw, Mapping):
        raise place.error(f"is {describe(raw)}", "an Inspect EvalSample (an object)")
    get(raw, "id", place, INT, TEXT, required=True)
    epoch = raw.get("epoch")
    epoch = 1 if epoch is None else int_in(epoch, place.at("epoch"), 1, MAX_EPOCHS)
    if isinstance(get(raw, "input", place, TEXT, LIST), list):
        _messages(raw, "input", place)
    list_of(get(raw, "choices", place, LIST), place.at("choices"), TEXT)
    if isinstance(get(raw, "target", place, TEXT, LIST), list):
        list_of(raw["target"], place.at("target"), TEXT)
    _messages(raw, "messages", place)
    _output(raw, place)
    _scores(raw, place)
    get(raw, "metadata", place, OBJECT)
    _message_error(raw, "error", place)
    kept = {**{k: raw[k] for k in _KEPT if k in raw}, "epoch": epoch}
    valid_text(kept, place)
    return kept
