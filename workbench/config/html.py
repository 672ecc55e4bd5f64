"""Small, bounded HTML views of specs for notebooks (`_repr_html_`): pure functions, escaped.

Every value goes through `html.escape`, every text is cut at `MAX_TEXT` characters and every
table at a row budget with a note saying how much was left out, so a spec with thousands of
categories still gives a few kilobytes. Nothing here prints or reads files.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.config.population import PopulationSpec
    from workbench.config.run import RunConfig

MAX_TEXT = 80
"""Most characters of one value shown in a cell (longer text ends in an ellipsis)."""

MAX_ROWS = 40
"""Most table rows one repr shows."""

MAX_PER_DIMENSION = 12
"""Most share rows shown for one dimension (the rest are counted in a note)."""

STYLE = "font-size:90%"
LEFT = ' style="text-align:left"'


def text(value: Any, limit: int = MAX_TEXT) -> str:
    """`value` as escaped HTML text, cut at `limit` characters with an ellipsis."""
    raw = str(value)
    if len(raw) > limit:
        raw = raw[: limit - 1] + "\u2026"
    return html.escape(raw)


def share(value: float) -> str:
    """A share as a percentage with up to two decimals (0.1234 -> 12.34%)."""
    return f"{100 * value:.4g}%"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], note: str = "") -> str:
    """An HTML table of escaped, shortened cells; `note` (plain text) goes under it."""
    head = "".join(f"<th>{text(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{text(c)}</td>" for c in row) + "</tr>" for row in rows)
    out = f'<table style="{STYLE}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    return out + (f"<div><i>{text(note, 200)}</i></div>" if note else "")


def fields(pairs: Iterable[tuple[str, Any]]) -> str:
    """A two-column table of `name: value` lines (a spec's summary)."""
    body = "".join(
        f"<tr><th{LEFT}>{text(k)}</th><td{LEFT}>{text(v, 160)}</td></tr>" for k, v in pairs
    )
    return f'<table style="{STYLE}"><tbody>{body}</tbody></table>'


def title(kind: str, name: str, detail: str = "") -> str:
    """The bold first line of a repr: `<b>Kind</b> name, detail`."""
    tail = f" <span>{text(detail, 200)}</span>" if detail else ""
    return f"<div><b>{text(kind)}</b> {text(name)}{tail}</div>"


def more(left: int, what: str) -> str:
    """The note under a cut table ("... 488 more categories not shown"), or ""."""
    return f"\u2026 {left:,} more {what} not shown" if left > 0 else ""


def share_rows(spec: PopulationSpec) -> tuple[list[tuple[str, str, str, str]], int]:
    """(dimension, condition, category, share) rows within the budgets, and how many were cut."""
    rows: list[tuple[str, str, str, str]] = []
    cut = 0
    for dim in spec.dimensions:
        if dim.given is None:
            entries = [("", c, s) for c, s in dim.shares.items()]  # type: ignore[misc]
        else:
            entries = [
                (f"{dim.given}={parent}", c, s)
                for parent, table_ in dim.shares.items()
                for c, s in table_.items()  # type: ignore[union-attr]
            ]
        room = max(0, min(MAX_PER_DIMENSION, MAX_ROWS - len(rows)))
        for i, (given, category, value) in enumerate(entries[:room]):
            rows.append((dim.name if i == 0 else "", given, category, share(value)))
        cut += len(entries) - min(room, len(entries))
    return rows, cut


def population_html(spec: PopulationSpec) -> str:
    """A population spec: name, sampling, its dimensions' categories and shares (with the
    conditioning), the persona template; bounded by MAX_ROWS and MAX_PER_DIMENSION."""
    dims = spec.dimensions
    detail = f"{len(dims)} dimension{'s' if len(dims) != 1 else ''}, sampling {spec.sampling}"
    rows, cut = share_rows(spec)
    parts = [title("PopulationSpec", spec.name, detail)]
    if spec.description:
        parts.append(f"<div>{text(spec.description, 200)}</div>")
    parts.append(table(("dimension", "given", "category", "share"), rows, more(cut, "shares")))
    if spec.persona_template is not None:
        parts.append(
            f"<div>persona template: <code>{text(spec.persona_template, 200)}</code></div>"
        )
    return "<div>" + "".join(parts) + "</div>"


def population_summary(spec: PopulationSpec | str) -> str:
    """One line: the spec's name and dimensions with their category counts (or its path)."""
    if isinstance(spec, str):
        return f"file {spec}"
    dims = ", ".join(f"{d.name} ({len(d.categories())})" for d in spec.dimensions[:8])
    extra = f", +{len(spec.dimensions) - 8} more" if len(spec.dimensions) > 8 else ""
    return f"{spec.name}: {dims}{extra}"


def spec_summary(data: dict[str, Any], skip: Sequence[str] = ("kind",)) -> str:
    """`key=value, ...` of a spec's dumped fields, without `skip`."""
    return ", ".join(f"{k}={v}" for k, v in data.items() if k not in skip)


def model_summary(config: RunConfig) -> str:
    """Which model answers: kind and name/path/endpoint count; "unused" for baseline policies."""
    if config.policy.kind != "llm":
        return f"unused (policy {config.policy.kind})"
    if config.models:
        return "mixed: " + ", ".join(f"{k} {share(v)}" for k, v in config.model_shares.items())
    model = config.model
    what = (
        model.name
        or model.path
        or model.bundle
        or ("shipped SmolLM2-135M" if model.kind == "embedded" else "")
    )
    where = f", {len(model.base_urls)} endpoint(s)" if model.base_urls else ""
    return f"{model.kind}: {what}{where}, temperature {model.temperature:g}"


def run_config_html(config: RunConfig) -> str:
    """A run config in a few lines: name, seed, N, population, game, policy, model, backend."""
    game = config.game
    prompt = game.prompt
    notes = [
        n for n in ("rational_note", "strategy_note", "famous_game_note") if getattr(prompt, n)
    ]
    game_line = (
        f"{game.offset:g} + {game.ratio:.4g} x mean, range [{game.low:g}, {game.high:g}], "
        f"{game.rounds} round{'s' if game.rounds != 1 else ''}, prompt {prompt.style}"
        + (f" + {', '.join(notes)}" if notes else "")
    )
    backend = config.backend.model_dump(mode="json", exclude_defaults=True)
    policy = config.policy.model_dump(mode="json", exclude_defaults=True)
    lines = [
        ("agents", f"{config.n_agents:,} (seed {config.seed})"),
        ("population", population_summary(config.population)),
        ("game", game_line),
        ("policy", " ".join(filter(None, (config.policy.kind, spec_summary(policy))))),
        ("model", model_summary(config)),
        ("backend", " ".join(filter(None, (config.backend.kind, spec_summary(backend))))),
        ("output", config.output.dir),
    ]
    return "<div>" + title("RunConfig", config.name) + fields(lines) + "</div>"
