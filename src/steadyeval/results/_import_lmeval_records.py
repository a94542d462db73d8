"""One lm-evaluation-harness ``--log_samples`` record → the row columns it determines: its
``arguments``, request type and 0/1 metric, and the fields of a multiple-choice, generation or
log-likelihood row (used by :func:`steadyeval.results._import_lmeval.import_lmeval`)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import DataError
from ..items import shorten
from ..scoring import GENERATE, OPTION_LOGPROB

__all__ = ["output_type", "pick_metric", "record_arguments", "row_fields"]

_MC = "multiple_choice"
_GEN = "generate_until"
_LL = "loglikelihood"
_ROLLING = "loglikelihood_rolling"
_DEFAULT_METRIC = {_MC: ("acc",), _GEN: ("exact_match", "acc"), _LL: ("acc",), _ROLLING: ()}


def record_arguments(rec: Mapping[str, Any], where: str) -> list[list[Any]]:
    """``arguments`` as a list of argument lists (the CLI's dict form or the API's list)."""
    args = rec["arguments"]
    if isinstance(args, Mapping):

        def index(key: str) -> int:
            tail = str(key).rsplit("_", 1)[-1]
            if not tail.isdigit():
                raise DataError(
                    f"{where}: arguments key {shorten(repr(key))} does not end in a number; "
                    "expected gen_args_0, gen_args_1, ... holding arg_0, arg_1, ..."
                )
            return int(tail)

        out = []
        for k in sorted(args, key=index):
            inner = args[k]
            if not isinstance(inner, Mapping):
                raise DataError(f"{where}: arguments.{k} must be an object of arg_0, arg_1, ...")
            out.append([inner[a] for a in sorted(inner, key=index)])
        return out
    if isinstance(args, list):
        return [list(a) if isinstance(a, list | tuple) else [a] for a in args]
    raise DataError(f"{where}: arguments must be an object or a list; got {type(args).__name__}")


def output_type(config: Mapping[str, Any], args: list[list[Any]], where: str) -> str:
    declared = config.get("output_type")
    if isinstance(declared, str) and declared in _DEFAULT_METRIC:
        return declared
    if not args:
        raise DataError(f"{where}: arguments are empty; cannot tell the request type")
    if len(args[0]) >= 2 and isinstance(args[0][1], Mapping):
        return _GEN
    if len(args[0]) == 1:
        return _ROLLING
    return _MC if len(args) > 1 else _LL


def _ll_pair(value: Any, where: str) -> tuple[float, bool | None]:
    """``[loglikelihood, is_greedy]`` as lm-eval writes it (strings after sanitising)."""
    first = value[0] if isinstance(value, list | tuple) and value else value
    try:
        ll = float(first)
    except (TypeError, ValueError):
        raise DataError(
            f"{where}: expected a [loglikelihood, is_greedy] response; got {shorten(repr(value))}"
        ) from None
    greedy = None
    if isinstance(value, list | tuple) and len(value) > 1:
        greedy = str(value[1]) == "True" if not isinstance(value[1], bool) else value[1]
    return ll, greedy


def _binary(rec: Mapping[str, Any], metric: str | None, where: str) -> bool | None:
    if metric is None or metric not in rec:
        return None
    v = rec[metric]
    if isinstance(v, bool):
        return v
    if isinstance(v, int | float) and float(v) in (0.0, 1.0):
        return float(v) == 1.0
    raise DataError(
        f"{where}: metric {metric!r} is {v!r}, not 0/1, so it cannot fill 'correct'; pass a 0/1 "
        f"metric with --metric (this record has: {', '.join(rec.get('metrics', []))})"
    )


def pick_metric(rec: Mapping[str, Any], kind: str, chosen: str | None, where: str) -> str | None:
    names = list(rec.get("metrics") or [])
    if chosen is not None:
        if chosen not in rec:
            raise DataError(
                f"{where}: metric {chosen!r} is not in this record; it has: {', '.join(names)}"
            )
        return chosen
    for m in _DEFAULT_METRIC[kind]:
        if m in rec:
            return m
    return None


def _gold_index(target: Any, options: Sequence[str]) -> list[int]:
    values: list[Any] = target if isinstance(target, list) else [target]
    if isinstance(target, str):
        text = target.strip()
        if text.startswith("["):
            try:
                loaded = json.loads(text)
                values = loaded if isinstance(loaded, list) else [target]
            except json.JSONDecodeError:
                values = [target]
    out: list[int] = []
    for v in values:
        if isinstance(v, int) and 0 <= v < len(options):
            out.append(v)
        elif isinstance(v, str) and v.strip().lstrip("-").isdigit() and 0 <= int(v) < len(options):
            out.append(int(v))
        elif isinstance(v, str) and v in options:
            out.append(options.index(v))
        elif isinstance(v, str) and v.strip() in [o.strip() for o in options]:
            out.append([o.strip() for o in options].index(v.strip()))
    return out


def _softmax_at(lls: Sequence[float], k: int) -> float:
    top = max(lls)
    exps = [math.exp(x - top) for x in lls]
    return exps[k] / sum(exps)


def row_fields(
    rec: dict[str, Any],
    *,
    where: str,
    kind: str,
    args: list[list[Any]],
    config: Mapping[str, Any],
    metric: str | None,
) -> dict[str, Any]:
    """The row's columns the record determines, plus ``_doc`` (the document's fields) and
    ``_metrics`` (lm-eval's metric values) for the caller to pop."""
    doc = rec["doc"] if isinstance(rec["doc"], Mapping) else {"doc": rec["doc"]}
    prompt = str(args[0][0]) if args and args[0] else ""
    target = rec.get("target")
    metrics = {m: rec.get(m) for m in rec.get("metrics") or [] if m in rec}
    row: dict[str, Any] = {
        "prompt": prompt,
        "gold": None,
        "correct": _binary(rec, metric, where),
    }
    fr = rec["filtered_resps"]
    if kind == _MC:
        row.update(_mc_fields(fr, target, row["correct"], args=args, config=config, where=where))
    elif kind == _GEN:
        row.update(_gen_fields(rec, fr, target, metrics))
    else:
        row.update(_ll_fields(fr, target, row["correct"], kind=kind, args=args, where=where))
    row["_metrics"] = metrics
    row["_doc"] = doc
    return row


def _mc_options(args: list[list[Any]], config: Mapping[str, Any]) -> list[str]:
    """The choices: the continuations without the task's target delimiter (when all have it)."""
    delim = config.get("target_delimiter", " ")
    conts = [str(a[1]) for a in args]
    if isinstance(delim, str) and delim and all(c.startswith(delim) for c in conts):
        return [c[len(delim) :] for c in conts]
    return conts


def _mc_fields(
    fr: Any,
    target: Any,
    correct: bool | None,
    *,
    args: list[list[Any]],
    config: Mapping[str, Any],
    where: str,
) -> dict[str, Any]:
    """A multiple-choice row: the arg-max option of the filtered log-likelihoods; without a
    0/1 metric, ``correct`` is whether it is a gold option."""
    options = _mc_options(args, config)
    if not isinstance(fr, list) or len(fr) != len(options):
        raise DataError(
            f"{where}: {len(options)} choices but {len(fr) if isinstance(fr, list) else '?'} "
            "filtered responses; expected one [loglikelihood, is_greedy] per choice"
        )
    lls = [_ll_pair(x, where)[0] for x in fr]
    pick = max(range(len(lls)), key=lambda i: (lls[i], -i))
    gold = _gold_index(target, options)
    fields: dict[str, Any] = dict(
        options=tuple(options),
        option_source=tuple(range(len(options))),
        parsed=options[pick],
        output=options[pick],
        parsed_kind="option",
        parsed_option=pick,
        option_logprobs=tuple(lls),
        option_logprobs_per_char=tuple(
            ll / len(o) if len(o) else math.nan for ll, o in zip(lls, options, strict=True)
        ),
        confidence=_softmax_at(lls, pick),
        gold=tuple(options[i] for i in gold),
        gold_options=tuple(gold),
        scoring=OPTION_LOGPROB,
        format="mc",
    )
    if correct is None and gold:
        fields["correct"] = pick in gold
    return fields


def _gen_fields(
    rec: Mapping[str, Any], fr: Any, target: Any, metrics: Mapping[str, Any]
) -> dict[str, Any]:
    """A generation row: the raw generation, the filtered answer, EM and F1."""
    resps = rec.get("resps") or []
    raw = resps[0][0] if resps and isinstance(resps[0], list) and resps[0] else None
    parsed = fr[0] if isinstance(fr, list) and fr else fr
    if isinstance(parsed, list):
        parsed = parsed[0] if parsed else None
    return dict(
        output=None if raw is None else str(raw),
        parsed=None if parsed is None else str(parsed),
        parsed_kind="free",
        gold=(str(target),) if target is not None else None,
        scoring=GENERATE,
        format="free",
        em=_float(metrics.get("exact_match")),
        f1=_float(metrics.get("f1")),
    )


def _ll_fields(
    fr: Any,
    target: Any,
    correct: bool | None,
    *,
    kind: str,
    args: list[list[Any]],
    where: str,
) -> dict[str, Any]:
    """A log-likelihood (or rolling) row: the sequence log-probability; without a 0/1
    metric, a log-likelihood row's ``correct`` is lm-eval's is_greedy."""
    ll, greedy = _ll_pair(fr[0] if isinstance(fr, list) and fr else fr, where)
    fields: dict[str, Any] = dict(
        sequence_logprob=ll,
        output=str(args[0][1]) if kind == _LL and len(args[0]) > 1 else None,
        scoring=kind,
        format="free",
        gold=(str(target),) if kind == _LL and target is not None else None,
    )
    if kind == _LL and correct is None and greedy is not None:
        fields["correct"] = greedy
    return fields


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
