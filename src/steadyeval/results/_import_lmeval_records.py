"""One lm-evaluation-harness ``--log_samples`` record → the row columns it determines: its
``arguments``, request type and 0/1 metric, and the fields of a multiple-choice, generation or
log-likelihood row (used by :func:`steadyeval.results._import_lmeval.import_lmeval`)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import DataError
from ..items import shorten
from ..scoring import GENERATE, OPTION_LOGPROB, best_index

__all__ = ["output_type", "pick_metric", "record_arguments", "row_fields"]

_MC = "multiple_choice"
_GEN = "generate_until"
_LL = "loglikelihood"
_ROLLING = "loglikelihood_rolling"
_DEFAULT_METRIC = {_MC: ("acc",), _GEN: ("exact_match", "acc"), _LL: ("acc",), _ROLLING: ()}
_INDEX = re.compile(r"_([0-9]{1,9})$")
_SMALL_INT = re.compile(r"-?[0-9]{1,9}")


def _checked_args(args: list[list[Any]], where: str) -> list[list[Any]]:
    """Each request's arguments: a string context first, then (if any) a continuation
    string or generation settings object."""
    for i, a in enumerate(args):
        if not a or not isinstance(a[0], str):
            got = "nothing" if not a else f"{type(a[0]).__name__} {shorten(repr(a[0]))}"
            raise DataError(
                f"{where}: arguments[{i}] starts with {got}; expected the request's context "
                "(a string) first"
            )
        if len(a) > 1 and not isinstance(a[1], str | Mapping):
            raise DataError(
                f"{where}: arguments[{i}][1] is {type(a[1]).__name__} {shorten(repr(a[1]))}; "
                "expected a continuation (a string) or generation settings (an object)"
            )
    return args


def record_arguments(rec: Mapping[str, Any], where: str) -> list[list[Any]]:
    """``arguments`` as a list of argument lists (the CLI's dict form or the API's list)."""
    args = rec["arguments"]
    if isinstance(args, Mapping):

        def index(key: str) -> int:
            m = _INDEX.search(str(key))
            if m is None:
                raise DataError(
                    f"{where}: arguments key {shorten(repr(key))} does not end in a number; "
                    "expected gen_args_0, gen_args_1, ... holding arg_0, arg_1, ..."
                )
            return int(m.group(1))

        out = []
        for k in sorted(args, key=index):
            inner = args[k]
            if not isinstance(inner, Mapping):
                raise DataError(
                    f"{where}: arguments.{shorten(str(k))} must be an object of arg_0, arg_1, ..."
                )
            out.append([inner[a] for a in sorted(inner, key=index)])
        return _checked_args(out, where)
    if isinstance(args, list):
        return _checked_args([list(a) if isinstance(a, list) else [a] for a in args], where)
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
    """``[loglikelihood, is_greedy]`` as lm-eval writes it (strings after sanitising). A
    log-likelihood that is NaN or +inf (no probability is above 1) is an error; -inf (a
    probability of 0) is read."""
    first = value[0] if isinstance(value, list) and value else value
    try:
        if isinstance(first, bool) or not isinstance(first, int | float | str):
            raise TypeError
        ll = float(first)
    except (TypeError, ValueError, OverflowError):
        raise DataError(
            f"{where}: expected a [loglikelihood, is_greedy] response; got {shorten(repr(value))}"
        ) from None
    if math.isnan(ll) or ll == math.inf:
        raise DataError(
            f"{where}: log-likelihood {shorten(repr(first))} is not a number a model can give; "
            "expected a finite number or -inf (the model's output was damaged)"
        )
    greedy = None
    if isinstance(value, list) and len(value) > 1:
        greedy = str(value[1]) == "True" if not isinstance(value[1], bool) else value[1]
    return ll, greedy


def _binary(rec: Mapping[str, Any], metric: str | None, where: str) -> bool | None:
    if metric is None or metric not in rec:
        return None
    v = rec[metric]
    if isinstance(v, bool):
        return v
    if isinstance(v, int | float) and v in (0, 1):  # no float(): an int may be huge
        return bool(v == 1)
    raise DataError(
        f"{where}: metric {shorten(repr(metric))} is {shorten(repr(v))}, not 0/1, so it "
        "cannot fill 'correct'; pass a 0/1 metric with --metric (this record has: "
        f"{shorten(', '.join(rec.get('metrics') or []), 200)})"
    )


def pick_metric(rec: Mapping[str, Any], kind: str, chosen: str | None, where: str) -> str | None:
    names = list(rec.get("metrics") or [])
    if chosen is not None:
        if chosen not in rec:
            raise DataError(
                f"{where}: metric {shorten(repr(chosen))} is not in this record; it has: "
                f"{shorten(', '.join(names), 200)}"
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
            except (ValueError, RecursionError):  # not JSON: the text itself
                values = [target]
    out: list[int] = []
    for v in values:
        if isinstance(v, int) and 0 <= v < len(options):
            out.append(v)
        elif isinstance(v, str) and _SMALL_INT.fullmatch(v.strip()) and 0 <= int(v) < len(options):
            out.append(int(v))
        elif isinstance(v, str) and v in options:
            out.append(options.index(v))
        elif isinstance(v, str) and v.strip() in [o.strip() for o in options]:
            out.append([o.strip() for o in options].index(v.strip()))
    return out


def _softmax_at(lls: Sequence[float], k: int) -> float:
    top = max(lls)
    if top == -math.inf:
        return math.nan
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
    doc = rec["doc"]  # an object: checked on reading
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
        row.update(_gen_fields(rec, fr, target, metrics, where))
    else:
        row.update(_ll_fields(fr, target, row["correct"], kind=kind, args=args, where=where))
    row["_metrics"] = metrics
    row["_doc"] = doc
    return row


def _mc_options(args: list[list[Any]], config: Mapping[str, Any], where: str) -> list[str]:
    """The choices: the continuations without the task's target delimiter (when all have it)."""
    delim = config.get("target_delimiter", " ")
    for i, a in enumerate(args):
        if len(a) < 2 or not isinstance(a[1], str):
            raise DataError(
                f"{where}: arguments[{i}] holds no continuation (a string after the context); "
                "expected one (context, choice) pair per choice of a multiple-choice request"
            )
    conts = [a[1] for a in args]
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
    options = _mc_options(args, config, where)
    if not isinstance(fr, list) or len(fr) != len(options):
        raise DataError(
            f"{where}: {len(options)} choices but {len(fr) if isinstance(fr, list) else '?'} "
            "filtered responses; expected one [loglikelihood, is_greedy] per choice"
        )
    lls = [_ll_pair(x, where)[0] for x in fr]  # never NaN: refused on reading
    # No option with any probability (all -inf): no choice, rather than the first by the
    # tie rule (as the scoring modes do).
    pick = best_index(lls) if any(ll > -math.inf for ll in lls) else None
    gold = _gold_index(target, options)
    fields: dict[str, Any] = dict(
        options=tuple(options),
        option_source=tuple(range(len(options))),
        parsed=None if pick is None else options[pick],
        output=None if pick is None else options[pick],
        parsed_kind="unmatched" if pick is None else "option",
        parsed_option=pick,
        option_logprobs=tuple(lls),
        option_logprobs_per_char=tuple(
            ll / len(o) if len(o) else math.nan for ll, o in zip(lls, options, strict=True)
        ),
        confidence=None if pick is None else _softmax_at(lls, pick),
        gold=tuple(options[i] for i in gold),
        gold_options=tuple(gold),
        scoring=OPTION_LOGPROB,
        format="mc",
    )
    if pick is None:
        # No answer is never correct, whatever lm-eval's acc says (its arg-max took the
        # first option): as the scoring modes score an all -inf response, correct is
        # False; lm-eval's own metrics stay in metadata.lm_eval.metrics.
        fields["correct"] = False
    elif correct is None and gold:
        fields["correct"] = pick in gold
    return fields


def _gen_fields(
    rec: Mapping[str, Any], fr: Any, target: Any, metrics: Mapping[str, Any], where: str
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
        em=_float(metrics.get("exact_match"), "exact_match", where),
        f1=_float(metrics.get("f1"), "f1", where),
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


def _float(v: Any, name: str, where: str) -> float | None:
    """A metric's value as a float (None when it is not a number)."""
    if not isinstance(v, int | float) or isinstance(v, bool):
        return None
    try:
        return float(v)
    except OverflowError:
        raise DataError(
            f"{where}: metric {name!r} is {shorten(str(v), 30)}, too large for a number; "
            "expected a score from 0 to 1"
        ) from None
