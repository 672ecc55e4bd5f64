"""A bundle's small HTML view for notebooks (`Bundle._repr_html_`): read from the manifest only.

Run id, status (and error), agents, rounds done, model, path and the head of the round table
come from manifest.json, which the reader already holds: no response part is read, so a
million-agent bundle shows as fast as a ten-agent one. A damaged manifest shows its one-line
error instead of raising (a repr never fails).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.config.html import fields, more, spec_summary, table, text, title
from workbench.errors import WorkbenchError, one_line

if TYPE_CHECKING:
    from workbench.results.bundle import Bundle

ROUND_HEAD = 10
"""Most rounds the view lists (the rest are counted in a note)."""

ROUND_HTML_COLUMNS: tuple[str, ...] = (
    "round",
    "n",
    "n_valid",
    "n_failed",
    "mean",
    "target",
    "winning_guess",
    "n_winners",
    "seconds",
)
"""Round statistics the view shows, as the CLI's live round table does."""


def cell(value: Any) -> str:
    """A round statistic as text: whole numbers plain, others with four significant digits."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.0f}" if value.is_integer() and abs(value) < 1e15 else f"{value:.4g}"
    return str(value)


def bundle_html(bundle: Bundle) -> str:
    """The bundle in a few lines and the head of its round table; its error if it is damaged."""
    try:
        return _bundle_html(bundle)
    except WorkbenchError as exc:
        return (
            f"<div>{title('Bundle', str(bundle.path))}<div>{text(one_line(exc), 400)}</div></div>"
        )


def _bundle_html(bundle: Bundle) -> str:
    config = bundle.manifest.get("config")
    config = config if isinstance(config, dict) else {}
    game = config.get("game") if isinstance(config.get("game"), dict) else {}
    rounds = bundle.rounds_done
    n_agents = config.get("n_agents")
    lines: list[tuple[str, Any]] = [
        ("status", bundle.status),
        ("agents", f"{n_agents:,}" if isinstance(n_agents, int) else "?"),
        ("rounds", f"{len(rounds)} of {game.get('rounds', '?')}"),
        ("model", spec_summary(bundle.model, skip=()) or "unrecorded"),
        ("created", bundle.created_at or "?"),
        ("path", str(bundle.path)),
    ]
    if bundle.error:
        lines.insert(1, ("error", bundle.error))
    head = [[cell(r.get(c)) for c in ROUND_HTML_COLUMNS] for r in rounds[:ROUND_HEAD]]
    parts = [title("Bundle", bundle.run_id, bundle.status), fields(lines)]
    if rounds:
        parts.append(table(ROUND_HTML_COLUMNS, head, more(len(rounds) - ROUND_HEAD, "rounds")))
    return "<div>" + "".join(parts) + "</div>"
