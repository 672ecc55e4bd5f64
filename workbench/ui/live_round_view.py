"""The Run tab's live pane: the game as it unfolds, round by round and shard by shard.

While a run plays, the round in progress is drawn from the part files its shards have written
so far (`results.live_round.RoundReader`: each part read once), titled with the shards in and
the answers so far, with the target of the mean so far and the equilibrium; between the last
shard of a round and the first of the next, the finished round as it was played. Below it,
the finished rounds' means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import panel as pn

from workbench.errors import WorkbenchError
from workbench.game import target
from workbench.results import Bundle
from workbench.results.live_round import RoundReader, RoundSoFar
from workbench.ui.notices import notice
from workbench.ui.safe_text import md
from workbench.viz import plots

__all__ = ["LiveRounds", "live_view", "so_far_title"]


class LiveRounds:
    """The followed run's round in progress, read as its part files land (one reader per
    bundle: following another run starts a new one)."""

    def __init__(self) -> None:
        self._reader: RoundReader | None = None

    def poll(self, bundle: str | Path, round_number: int) -> RoundSoFar:
        """Round `round_number` of `bundle` so far (only its new part files are read)."""
        if self._reader is None or self._reader.bundle != Path(bundle):
            self._reader = RoundReader(bundle)
        return self._reader.poll(round_number)


def so_far_title(so_far: RoundSoFar, rounds: int, shards: int) -> str:
    """The pane's title: "Round 3 of 5: 4 of 10 shards in, 40,000 answers"."""
    answers = "answer" if so_far.answers == 1 else "answers"
    return (
        f"Round {so_far.round} of {rounds}: {len(so_far.shards)} of {max(shards, 1)} shards in, "
        f"{so_far.answers:,} {answers}"
    )


def live_view(
    bundle: str,
    done: int,
    rounds: int,
    so_far: RoundSoFar | None,
    shards: int,
    means: Sequence[float],
    size: dict[str, int],
    css: str,
) -> pn.viewable.Viewable:
    """The round in progress when a shard of it is in (`so_far` of round `done + 1`), else the
    last finished round; the finished rounds' `means` below. Hidden before anything is in."""
    playing = so_far is not None and so_far.round == done + 1 and bool(so_far.shards)
    if not playing and done < 1:
        return pn.Column(visible=False)
    try:
        if playing:
            assert so_far is not None
            game = Bundle.open(bundle).config.game
            title = so_far_title(so_far, rounds, shards)
            plot = plots.round_so_far(so_far, game, title)
            caption = _so_far_caption(so_far, target(so_far.mean, game))
        else:
            title = f"Round {done} of {rounds}, as it was played"
            plot = plots.histogram(Bundle.open(bundle), done)
            caption = ""
    except WorkbenchError as exc:
        return notice(md(str(exc)), "danger", css)
    shown = ", ".join(f"{m:.2f}" for m in means if not math.isnan(m)) or "none finished yet"
    return pn.Column(
        pn.pane.Markdown(f"### {md(title)}"),
        pn.pane.HoloViews(plot.opts(title="", **size)),  # the heading above says it once
        pn.pane.Markdown(md(caption), width=size["width"]),  # wrapped beside the tables
        pn.pane.Markdown(f"Round means so far: {md(shown)}", width=size["width"]),
        css_classes=[css],
    )


def _so_far_caption(so_far: RoundSoFar, target_so_far: float) -> str:
    """What the in-progress lines mean: the round's own target comes with its last shard."""
    if not so_far.valid:
        return "no valid answer in yet"
    return (
        f"{so_far.valid:,} valid so far, mean so far {so_far.mean:.2f}; target so far "
        f"{target_so_far:.2f} (p times the mean so far: the round's target comes when every "
        "shard is in)"
    )
