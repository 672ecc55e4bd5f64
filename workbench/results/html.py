"""A bundle's small HTML view for notebooks (`Bundle._repr_html_`): from the manifest only.

Run id, status (and error), agents, rounds done, model, path and the head of the round table
come from manifest.json, which the reader already holds and hands over as plain values: no
response part is read, so a million-agent bundle shows as fast as a ten-agent one. A damaged
manifest shows its one-line error instead (`damaged_html`: a repr never fails).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.config.html import fields, more, spec_summary, table, text, title
from workbench.errors import WorkbenchError, one_line
from workbench.results.round_table import ROUND_TABLE

ROUND_HEAD = 10
"""Most rounds the view lists (the rest are counted in a note)."""


def cell(value: Any) -> str:
    """A round statistic as text: whole numbers plain, others with four significant digits."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.0f}" if value.is_integer() and abs(value) < 1e15 else f"{value:.4g}"
    return str(value)


def bundle_html(
    *,
    path: Path,
    run_id: str,
    status: str,
    error: str | None,
    created_at: str | None,
    model: dict[str, Any],
    rounds: list[dict[str, Any]],
    config: Any,
) -> str:
    """The bundle in a few lines and the head of its round table (`rounds`: the manifest's
    finished rounds; `config`: its config as written)."""
    config = config if isinstance(config, dict) else {}
    game = config.get("game") if isinstance(config.get("game"), dict) else {}
    n_agents = config.get("n_agents")
    lines: list[tuple[str, Any]] = [
        ("status", status),
        ("agents", f"{n_agents:,}" if isinstance(n_agents, int) else "?"),
        ("rounds", f"{len(rounds)} of {game.get('rounds', '?')}"),
        ("model", spec_summary(model, skip=()) or "unrecorded"),
        ("created", created_at or "?"),
        ("path", str(path)),
    ]
    if error:
        lines.insert(1, ("error", error))
    head = [[cell(r.get(c)) for c in ROUND_TABLE.values()] for r in rounds[:ROUND_HEAD]]
    parts = [title("Bundle", run_id, status), fields(lines)]
    if rounds:
        parts.append(table(tuple(ROUND_TABLE), head, more(len(rounds) - ROUND_HEAD, "rounds")))
    return "<div>" + "".join(parts) + "</div>"


def damaged_html(path: Path, exc: WorkbenchError) -> str:
    """A bundle whose manifest is damaged: its path and the one-line error."""
    return f"<div>{title('Bundle', str(path))}<div>{text(one_line(exc), 400)}</div></div>"
