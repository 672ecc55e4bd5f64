"""`workbench bench scale`'s report: the tables, the slope, the baseline, the exactness verdict and
the issue's targets, as text and as plain data (`--json`), from a `ScaleReport`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from workbench.bench.scale import RoundScale, ScaleReport, ScaleRun, loglog_slope

GIB = 1024.0


def _ok(runs: list[ScaleRun]) -> list[ScaleRun]:
    return [r for r in runs if r.error is None and r.rounds]


def _round1(runs: list[ScaleRun], n: int) -> float | None:
    """Round 1's seconds at N (None if not measured)."""
    return next((r.rounds[0].seconds for r in _ok(runs) if r.n == n), None)


def _peak(runs: list[ScaleRun], n: int) -> float | None:
    return next((r.peak_mib for r in _ok(runs) if r.n == n), None)


def targets(report: ScaleReport) -> list[dict[str, Any]]:
    """The issue's targets, each with its measured value and verdict (met, missed, not
    measured)."""
    runs = report.runs
    small, mid, big = _round1(runs, 100), _round1(runs, 10_000), _round1(runs, 1_000_000)
    peak = _peak(runs, 1_000_000)

    def target(name: str, value: float | None, limit: float, unit: str) -> dict[str, Any]:
        verdict = "not measured" if value is None else "met" if value <= limit else "missed"
        return {"target": name, "value": value, "limit": limit, "unit": unit, "verdict": verdict}

    def ratio(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a / b

    return [
        target("round 1 at N=10,000 within 2x of N=100", ratio(mid, small), 2.0, "x"),
        target("round 1 at N=1,000,000 within 60 s", big, 60.0, "s"),
        target("round 1 at N=1,000,000 within 10x of N=100", ratio(big, small), 10.0, "x"),
        target(
            "peak RSS at N=1,000,000 within 4 GiB",
            None if peak is None else peak / GIB,
            4.0,
            "GiB",
        ),
    ]


def _per_node(r: RoundScale) -> tuple[float | None, float | None]:
    """(round seconds, scoring seconds) per trie node evaluated."""
    if not r.nodes:
        return None, None
    return r.seconds / r.nodes, None if r.score_s is None else r.score_s / r.nodes


def summary(report: ScaleReport) -> dict[str, Any]:
    """The derived figures: slopes, seconds per node, the baseline comparison, exactness and
    targets."""
    ok = _ok(report.runs)
    slopes = {
        "round 1": loglog_slope([r.n for r in ok], [r.rounds[0].seconds for r in ok]),
        "rounds together": loglog_slope([r.n for r in ok], [r.seconds for r in ok]),
    }
    per_node = {
        r.n: {"s_per_node": a, "score_s_per_node": b}
        for r in ok
        for a, b in [_per_node(r.rounds[0])]
    }
    checked = sum(r.exact_checked for r in report.runs)
    mismatches = sum(r.exact_mismatches for r in report.runs)
    exact = "not checked" if checked == 0 else "yes" if mismatches == 0 else "no"
    return {
        "slope": slopes,
        "per_node_round_1": per_node,
        "baseline_comparison": _baseline_comparison(report),
        "exact": {"verdict": exact, "checked": checked, "mismatches": mismatches},
        "targets": targets(report),
    }


def _baseline_comparison(report: ScaleReport) -> dict[str, Any] | None:
    """The per-agent path at its largest finished N against distribution mode at that N, and
    its rate scaled to the largest N distribution mode finished."""
    done = _ok(report.baseline)
    ok = _ok(report.runs)
    if not done or not ok:
        return None
    base = done[-1]
    same = next((r for r in ok if r.n == base.n), None)
    largest = ok[-1]
    return {
        "n": base.n,
        "per_agent_s": base.seconds,
        "distribution_s": None if same is None else same.seconds,
        "speedup": None if same is None or not same.seconds else base.seconds / same.seconds,
        "largest_n": largest.n,
        "per_agent_s_scaled": base.seconds / base.n * largest.n,
        "distribution_s_at_largest": largest.seconds,
    }


def _cell(value: float | int | None, fmt: str = "d") -> str:
    if value is None:
        return "-"
    return format(value, fmt)


def _table(runs: list[ScaleRun], columns: list[tuple[str, int, Callable[..., str]]]) -> list[str]:
    """One line per (N, round); a failed N says why."""
    lines = [" ".join(name.rjust(width) for name, width, _ in columns)]
    for run in runs:
        if run.error is not None:
            lines.append(f"{run.n:>9,} error: {run.error}")
            continue
        for r in run.rounds:
            lines.append(" ".join(show(run, r).rjust(width) for _, width, show in columns))
    return lines


DISTRIBUTION_COLUMNS: list[tuple[str, int, Callable[..., str]]] = [
    ("N", 9, lambda run, r: f"{run.n:,}"),
    ("round", 5, lambda run, r: str(r.round)),
    ("seconds", 8, lambda run, r: f"{r.seconds:.2f}"),
    ("prompts", 7, lambda run, r: _cell(r.prompts)),
    ("nodes", 6, lambda run, r: _cell(r.nodes)),
    ("asked", 6, lambda run, r: _cell(r.nodes_asked)),
    ("evaluated", 9, lambda run, r: _cell(r.evaluated)),
    ("decodes", 7, lambda run, r: _cell(r.decoded)),
    ("rows/call", 9, lambda run, r: _cell(_rows_per_call(r), ".1f")),
    ("draws", 9, lambda run, r: _cell(r.draws)),
    ("score_s", 7, lambda run, r: _cell(r.score_s, ".2f")),
    ("s/node", 7, lambda run, r: _cell(_per_node(r)[0], ".4f")),
    ("score/node", 10, lambda run, r: _cell(_per_node(r)[1], ".4f")),
    ("ms/token", 8, lambda run, r: _cell(_per_token_ms(r), ".2f")),
    ("peak_MiB", 8, lambda run, r: f"{run.peak_mib:.0f}"),
]
BASELINE_COLUMNS: list[tuple[str, int, Callable[..., str]]] = [
    ("N", 9, lambda run, r: f"{run.n:,}"),
    ("round", 5, lambda run, r: str(r.round)),
    ("seconds", 8, lambda run, r: f"{r.seconds:.2f}"),
    ("requests", 8, lambda run, r: _cell(r.prompts)),
    ("evaluated", 9, lambda run, r: _cell(r.evaluated)),
    ("decodes", 7, lambda run, r: _cell(r.decoded)),
    ("s/agent", 8, lambda run, r: f"{r.seconds / run.n:.4f}"),
    ("peak_MiB", 8, lambda run, r: f"{run.peak_mib:.0f}"),
]


def _per_token_ms(r: RoundScale) -> float | None:
    """Milliseconds of scoring per token the engine evaluated (prompt tails and answer rows):
    in a late round, what a distinct prompt's own tokens cost."""
    tokens = (r.evaluated or 0) + (r.decoded or 0)
    return 1000 * r.score_s / tokens if r.score_s is not None and tokens else None


def _rows_per_call(r: RoundScale) -> float | None:
    """Answer rows per llama_decode call that carried any (1: every row decoded alone)."""
    return r.decoded / r.row_calls if r.decoded is not None and r.row_calls else None


def report_dict(report: ScaleReport) -> dict[str, Any]:
    """Plain data for `--json`: the settings, the runs, the slope, the exactness and the
    targets."""
    return {
        "config": report.config,
        "rounds": report.rounds,
        "seed": report.seed,
        "backend": report.backend,
        "runs": [asdict(r) for r in report.runs],
        "baseline": [asdict(r) for r in report.baseline],
        **summary(report),
    }


def report_text(report: ScaleReport) -> str:
    """The report as aligned text."""
    data = summary(report)
    lines = [
        f"bench scale: config {report.config}, {report.rounds} round(s), seed {report.seed}, "
        f"backend {report.backend}; each N in its own process",
        "distribution mode (sampling: workbench):",
        *_table(report.runs, DISTRIBUTION_COLUMNS),
        "nodes: trie nodes evaluated on the engine (asked: by the walks, memo hits included); "
        "evaluated: prompt tokens; decodes: answer tokens decoded (rows/call: to one "
        "llama_decode); draws: agent-steps; score_s: seconds scoring nodes; ms/token: "
        "of it per token evaluated or decoded",
    ]
    slope = data["slope"]
    lines.append(
        f"log-log slope of seconds against N: round 1 {slope['round 1']:.2f}, rounds together "
        f"{slope['rounds together']:.2f} (0: flat, 1: linear in N)"
    )
    per = [v["s_per_node"] for v in data["per_node_round_1"].values() if v["s_per_node"]]
    score = [
        v["score_s_per_node"] for v in data["per_node_round_1"].values() if v["score_s_per_node"]
    ]
    if per:
        lines.append(
            f"seconds per trie node evaluated (round 1): {min(per):.4f} to {max(per):.4f} "
            f"({max(per) / min(per):.1f}x across N); scoring alone {min(score):.4f} to "
            f"{max(score):.4f} ({max(score) / min(score):.1f}x)"
            if score
            else f"seconds per trie node evaluated (round 1): {min(per):.4f} to {max(per):.4f}"
        )
    lines += [
        f"per-agent path (sampling: server) as the baseline, up to the N it finishes in "
        f"~{report.baseline_seconds:g} s:",
        *_table(report.baseline, BASELINE_COLUMNS),
    ]
    lines += _baseline_lines(data["baseline_comparison"])
    exact = data["exact"]
    smallest = next((r.n for r in report.runs if r.exact_checked), None)
    where = f"first {report.exact_agents} agents at N={smallest:,}" if smallest else "none"
    lines.append(
        f"exact: {exact['verdict']} (each agent alone, {where}, every round: {exact['checked']} "
        f"answers recomputed alone, {exact['mismatches']} differ)"
    )
    lines.append("targets:")
    for t in data["targets"]:
        value = "-" if t["value"] is None else f"{t['value']:.2f} {t['unit']}"
        lines.append(f"  {t['target']}: {value} (limit {t['limit']:g} {t['unit']}): {t['verdict']}")
    return "\n".join(lines)


def _baseline_lines(comparison: dict[str, Any] | None) -> list[str]:
    """The per-agent path against distribution mode, measured and scaled."""
    if comparison is None:
        return ["baseline: not measured (no N finished)"]
    lines = []
    if comparison["speedup"] is not None:
        lines.append(
            f"baseline at N={comparison['n']:,}: per-agent {comparison['per_agent_s']:.2f} s, "
            f"distribution mode {comparison['distribution_s']:.2f} s "
            f"(per-agent / distribution {comparison['speedup']:.2f}x)"
        )
    if comparison["largest_n"] > comparison["n"]:
        lines.append(
            f"at N={comparison['largest_n']:,} the per-agent path would take "
            f"~{comparison['per_agent_s_scaled']:.0f} s at its N={comparison['n']:,} rate "
            "(scaled linearly); distribution mode took "
            f"{comparison['distribution_s_at_largest']:.2f} s"
        )
    return lines
