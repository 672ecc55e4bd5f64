"""A round in progress read shard by shard: `RoundReader` adds each new part file once.

A run writes each shard's part file the moment that shard is done (atomically: a part file
that is there is whole), so a live bundle's current round fills part by part. `RoundReader`
lists the round's folder on every `poll` and reads only the part files it has not read yet,
and of them only the guess and status columns; it keeps per whole number the count of valid
guesses, their sum, and the answers seen. A page that polls every second reads each part once,
never a whole round, and the tallies of a finished round are those of `viz.guess_counts`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.compute as pc

from workbench.game.parse import Status
from workbench.results.layout import RESPONSES_DIR, parse_part_path, read_parquet, round_dir

__all__ = ["RoundReader", "RoundSoFar"]

VALID = Status.OK.value
"""The status of a valid answer (with a finite guess), as every reader of guesses counts it."""


@dataclass(frozen=True, eq=False)
class RoundSoFar:
    """What the part files of one round read so far hold: the shards in, the answers, and the
    valid guesses per whole number (bin g holds guesses in [g, g + 1)). A poll that finds
    nothing new gives back the same object."""

    round: int
    shards: tuple[int, ...] = ()
    answers: int = 0
    valid: int = 0
    total: float = 0.0
    bins: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def mean(self) -> float:
        """The mean of the valid guesses so far (nan before any)."""
        return self.total / self.valid if self.valid else math.nan


class RoundReader:
    """Reads a live bundle's rounds as their part files land: `poll(k)` lists round k's folder
    and reads only the parts not read before, adding them to the tallies it keeps (a new round
    number starts new tallies)."""

    def __init__(self, bundle: str | Path) -> None:
        self.bundle = Path(bundle)
        self._so_far = RoundSoFar(0)

    def poll(self, round_number: int) -> RoundSoFar:
        """Round `round_number` so far, with the part files that landed since the last poll."""
        so_far = self._so_far if self._so_far.round == round_number else RoundSoFar(round_number)
        for shard, path in self._new_parts(round_number, set(so_far.shards)):
            so_far = _added(so_far, shard, path)
        self._so_far = so_far
        return so_far

    def _new_parts(self, round_number: int, read: set[int]) -> list[tuple[int, Path]]:
        """(shard, path) of the round's part files not read yet, in shard order."""
        folder = round_dir(self.bundle, round_number)
        try:
            names = [entry.name for entry in os.scandir(folder)]
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            key = parse_part_path(f"{RESPONSES_DIR}/{folder.name}/{name}")
            if key is not None and key[1] not in read:
                found.append((key[1], folder / name))
        return sorted(found)


def _added(so_far: RoundSoFar, shard: int, path: Path) -> RoundSoFar:
    """`so_far` with one more part file's answers (its guess and status columns only)."""
    table = read_parquet(path, columns=["guess", "status"])
    guesses = table.column("guess").to_numpy(zero_copy_only=False).astype(np.float64)
    ok = pc.fill_null(pc.equal(table.column("status"), VALID), False)
    valid = guesses[ok.to_numpy(zero_copy_only=False) & np.isfinite(guesses)]
    bins, counts = _merged(so_far, np.floor(valid).astype(np.int64))
    return RoundSoFar(
        so_far.round,
        (*so_far.shards, shard),
        so_far.answers + table.num_rows,
        so_far.valid + valid.size,
        so_far.total + float(valid.sum()),
        bins,
        counts,
    )


def _merged(so_far: RoundSoFar, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tallies of `so_far` plus the whole-number bins `new`."""
    bins, counts = np.unique(new, return_counts=True)
    every = np.union1d(so_far.bins, bins)
    total = np.zeros(every.size, np.int64)
    total[np.searchsorted(every, so_far.bins)] += so_far.counts
    total[np.searchsorted(every, bins)] += counts
    return every, total
