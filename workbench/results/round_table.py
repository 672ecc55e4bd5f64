"""The round table: which round statistics a table of rounds shows, under which headers.

The CLI's live table and `bundles show`, the dashboard's Run tab and a bundle's notebook view
all show these columns in this order (header -> the round statistic in rounds.parquet, see
`game.ROUND_STAT_FIELDS`). Light on purpose (no imports): the CLI loads it at start.
"""

from __future__ import annotations

__all__ = ["COUNTS", "MORE_STATISTICS", "ROUND_TABLE"]

ROUND_TABLE: dict[str, str] = {
    "round": "round",
    "n": "n",
    "n_valid": "n_valid",
    "failed": "n_failed",
    "mean": "mean",
    "median": "median",
    "target": "target",
    "winning": "winning_guess",
    "n_winners": "n_winners",
    "seconds": "seconds",
}
"""The round table's columns, header -> round statistic (a view may add a note after them)."""

MORE_STATISTICS: dict[str, str] = {
    "std": "std",
    "within_0.5": "share_within_half",
    "extracted": "n_extracted",
}
"""The other round statistics, for a view with room for all (`workbench bundles show`)."""

COUNTS = frozenset({"round", "n", "n_valid", "n_failed", "n_winners", "n_extracted"})
"""Round statistics that are whole numbers (shown without decimals)."""
