"""The CLI's text tables: a frame as aligned text, the round table (live and in `bundles
show`), the work per model engine (`bundles show`'s tables, `runs follow`'s line per round),
and the line a run on a server that is not batch invariant ends with."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workbench.results.round_table import COUNTS, ROUND_TABLE

if TYPE_CHECKING:
    import pandas as pd

    from workbench.runtime.events import Event

PLAIN = {"rich_markup_mode": None}
"""Plain help text: rendering it through rich costs a quarter of a second at every start."""


DECIMALS = 2
"""Decimals of every statistic a CLI table prints (counts are whole numbers)."""


def number(value: float) -> str:
    """A statistic as the CLI's tables print it: DECIMALS decimals."""
    return f"{value:.{DECIMALS}f}"


def as_written(value: Any) -> str:
    """A config number as a person writes it: 2/3 stays 2/3, 100.0 reads 100, 0.5 stays."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def text_table(frame: pd.DataFrame) -> str:
    """A frame as aligned text, statistics with DECIMALS decimals."""
    return frame.to_string(index=False, float_format=number)


def _cell(value: Any, column: str) -> str:
    """One round-table cell: counts as whole numbers, the rest with two decimals, "-" for a
    null or nan (a round with no valid answer: its note says so)."""
    try:
        figure = float(value)
    except (TypeError, ValueError):  # None, pandas' NA
        return "-"
    if figure != figure:
        return "-"
    return str(int(figure)) if column in COUNTS else number(figure)


class RoundTable:
    """A table of rounds, one text line each, with a note a round must not hide: the CLI's
    live table is a subscriber of the run's events, `bundles show` prints a bundle's rows."""

    def __init__(self, columns: Mapping[str, str] = ROUND_TABLE) -> None:
        self.columns = dict(columns)
        self.widths = [max(len(header), 8) for header in self.columns]
        self.bundle: str | None = None
        self.header_done = False

    def _line(self, cells: list[str], note: str) -> str:
        line = " ".join(c.rjust(w) for c, w in zip(cells, self.widths, strict=True))
        return f"{line}  {note}".rstrip()

    def header(self) -> str:
        """The header line."""
        return self._line(list(self.columns), "note")

    def row(self, stats: Mapping[str, Any]) -> str:
        """One round's line from its statistics (a RoundFinished's or a rounds.parquet row)."""
        from workbench.runtime.events import round_note

        cells = [_cell(stats.get(name), name) for name in self.columns.values()]
        return self._line(cells, round_note(stats))

    def __call__(self, event: Event) -> None:
        from tqdm.auto import tqdm

        from workbench.runtime.events import RoundFinished, RunStarted

        if isinstance(event, RunStarted):
            self.bundle = event.bundle
        elif isinstance(event, RoundFinished):
            if not self.header_done:
                tqdm.write(self.header(), file=sys.stdout)
                self.header_done = True
            tqdm.write(self.row({"round": event.round, **event.stats}), file=sys.stdout)
            sys.stdout.flush()  # a pipe's reader (tee, a log) sees each round as it ends


def bar_wanted(progress: bool) -> bool:
    """Whether a command draws its progress bar: when asked, and only on a terminal. A bar
    redraws its line in place; where stdout is a pipe or a file (`| tee`, `> log`), the table's
    rows would land on the bar's line, so the rows alone say how the run goes."""
    return progress and sys.stdout.isatty() and sys.stderr.isatty()


def invariance_note(model: dict[str, Any]) -> str | None:
    """The one line a run on a server that is not batch invariant ends with (None otherwise)."""
    sampling = model.get("sampling")
    if not isinstance(sampling, dict) or sampling.get("batch_invariant") != "no":
        return None
    return f"note: the server's node probabilities are not batch invariant: {sampling.get('note')}"


def fork_note(fork: Mapping[str, Any] | None) -> str | None:
    """What a fork's bundle says about its parent (`Bundle.forked_from`): "a fork of RUN_ID
    from round K (PATH)"; None for a bundle that is no fork."""
    from workbench.results.bundle import fork_label

    label = fork_label(dict(fork) if fork else None)
    if label is None:
        return None
    return f"a fork of {label}" + (f" ({fork['path']})" if fork and fork.get("path") else "")


NODE_SHOWN = 8
"""How many characters of an engine's node id the CLI shows (a Ray node id has 56; its first 8
tell a cluster's nodes apart, the Cluster tab shows them whole)."""


def engine_work_text(work: pd.DataFrame) -> str | None:
    """`bundles show`'s work per model engine (a `Bundle.engine_work()` frame): per engine its
    sums over the rounds and a total line, then per round the sums over the engines and the
    largest engine's share of the round's prompts. None when the run recorded none (a local
    run)."""
    from workbench.results.engine_table import engine_totals, round_sums

    if not len(work):
        return None
    engines = engine_totals(work).astype({"engine": str})
    engines["node"] = engines["node"].map(
        lambda nodes: ", ".join(n[:NODE_SHOWN] for n in str(nodes).split(", "))
    )
    rounds = round_sums(work)
    total = {"engine": "total", "node": "", "rounds": len(rounds)}
    total |= {name: engines[name].sum() for name in engines.columns if name not in total}
    engines.loc[len(engines)] = total
    rounds["largest_share"] = rounds["largest_share"].map(_share)
    return "\n".join(
        [
            f"work per model engine over {len(rounds)} round(s):",
            text_table(engines),
            "per round, summed over the engines (largest share: the busiest engine's part of "
            "the round's prompts):",
            text_table(rounds),
        ]
    )


def _share(value: float) -> str:
    """A share with DECIMALS decimals, "-" when there is none (no prompts walked)."""
    return "-" if value != value else number(value)


def engine_line(round_number: int, engines: Sequence[Mapping[str, Any]]) -> str:
    """`runs follow`'s line for an `engine_work` event: each engine's prompts, prompt tokens,
    nodes scored and seconds, and the largest engine's share of the round's prompts."""
    from workbench.results.engine_table import count, largest_share, seconds

    parts = [
        f"{count(e.get('engine'))}: {count(e.get('prompts')):,} prompts "
        f"{count(e.get('prompt_tokens')):,} tok {count(e.get('nodes')):,} nodes "
        f"{seconds(e.get('seconds')):.1f} s"
        for e in engines
    ]
    share = _share(largest_share([e.get("prompts") for e in engines]))
    return f"round {round_number} engines: {' | '.join([*parts, f'largest share {share}'])}"
