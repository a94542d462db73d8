"""``steadyeval compare --over formats``: printing the comparison over formats."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .._errors import printable

if TYPE_CHECKING:
    from rich.console import Console

    from ..compare import FormatsPair, OverFormats

#: Formats listed per pair (those both models answered first, then the most extreme).
SHOWN_FORMATS = 12


def _pp(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:+.1f}"


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.0f}%"


def pair_sentence(pair: FormatsPair, conf: str) -> str:
    """One sentence a paper could quote: B's share of formats, the expected difference."""
    share, diff, flips = pair.p_better, pair.difference, pair.flip_share
    return (
        f"{pair.b} is better than {pair.a} on {_pct(share[0])} of formats "
        f"[{_pct(share[1])}, {_pct(share[2])}] (a tie counts half); expected difference "
        f"{_pp(diff[0])} points [{_pp(diff[1])}, {_pp(diff[2])}] ({conf} intervals); "
        f"P({pair.b} − {pair.a} > 0) = {pair.prob_positive:.2f}; the other model wins on "
        f"{_pct(flips[0])} [{_pct(flips[1])}, {_pct(flips[2])}] of formats"
    )


def print_over_formats(console: Console, result: OverFormats, *, rank: bool) -> None:
    """The arms with their mean accuracy over the formats, then per pair its sentence and
    the formats both answered (their estimated and observed differences); with ``rank``,
    the probability of each ranking."""
    from rich.table import Table
    from rich.text import Text

    conf = f"{100 * result.confidence:g}%"
    arms = Table(title=f"accuracy over {result.n_formats} formats × {result.n_items} items")
    for col in ("arm", "run", "model", "cells", f"mean over formats [{conf}]"):
        arms.add_column(col)
    for arm in result.arms:
        arms.add_row(
            Text(arm.label),
            Text(printable(arm.run)),
            Text(arm.model),
            str(arm.cells),
            f"{_pct(arm.accuracy)} [{_pct(arm.low)}, {_pct(arm.high)}]",
        )
    console.print(arms)
    for pair in result.pairs:
        console.print(Text(pair_sentence(pair, conf)))
        shown = sorted(pair.formats, key=lambda f: (-f.shared, f.estimate))[:SHOWN_FORMATS]
        t = Table(title=Text(f"{pair.b} − {pair.a} per format (points)"))
        for col in ("format", f"estimate [{conf}]", "cells both answered", "observed there"):
            t.add_column(col)
        for f in sorted(shown, key=lambda f: f.estimate):
            t.add_row(
                Text(f.format),
                f"{_pp(f.estimate)} [{_pp(f.low)}, {_pp(f.high)}]",
                str(f.shared),
                _pp(f.observed),
            )
        console.print(t)
        rest = len(pair.formats) - len(shown)
        if rest > 0:
            console.print(f"({rest} more formats in --json)")
    sd_f, sd_i = result.interaction_sd
    console.print(
        f"model × format interaction s.d. {sd_f[0]:.2f} logits [{sd_f[1]:.2f}, {sd_f[2]:.2f}]; "
        f"model × item {sd_i[0]:.2f} [{sd_i[1]:.2f}, {sd_i[2]:.2f}]"
    )
    if rank:
        t = Table(title="rankings by mean accuracy over formats (best first)")
        t.add_column("ranking")
        t.add_column("probability", justify="right")
        for order, p in result.rankings:
            t.add_row(Text(" > ".join(order)), f"{p:.3f}")
        console.print(t)
    for note in result.notes:
        console.print(Text.assemble(("note:", "yellow"), " ", note), highlight=False)
