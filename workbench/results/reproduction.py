"""Two runs of one config side by side, answer by answer, and what answered differently.

`compare_answers(original, again)` lines up the two bundles' answers per round (identical
answers, the first agent whose answer differs, the shift of the mean and of each group's mean)
and reads from their manifests what could explain a difference (`answer_causes`: the model
file, engine and version, the llama.cpp build and the CPU features it uses, the sampling law and
sampler, the prompt pieces, the backend, a served model's server and its batch invariance).
`answers_digest` is one round's answers as a hash, what the golden record keeps.
`workbench.experiment.reproduce` runs a bundle's config again and hands both here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from workbench._cpu_features import BEYOND_PORTABLE, enabled_features
from workbench.game import Status
from workbench.results.bundle import Bundle

DIGEST_COLUMNS: tuple[str, ...] = ("agent_id", "guess", "status")
"""What an answer is, for comparing runs: who answered, the number, and whether it counted
(latency, token counts and raw text of free-text answers are not compared)."""


def _answers(bundle: Bundle, round_number: int) -> pd.DataFrame:
    frame = bundle.responses_table(round_number).select(list(DIGEST_COLUMNS)).to_pandas()
    return frame.sort_values("agent_id", kind="stable").reset_index(drop=True)


def answers_digest(bundle: Bundle, round_number: int) -> str:
    """sha256 of one round's answers: agent ids (int64), numbers (float64, a missing number
    as NaN) and statuses, in agent order; the same answers give the same digest anywhere."""
    frame = _answers(bundle, round_number)
    digest = hashlib.sha256()
    digest.update(frame["agent_id"].to_numpy(dtype="<i8").tobytes())
    guesses = frame["guess"].to_numpy(dtype="<f8", na_value=np.nan)
    digest.update(np.where(np.isnan(guesses), np.nan, guesses).astype("<f8").tobytes())
    digest.update("\n".join(frame["status"].astype(str)).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class RoundMatch:
    """One round of both runs: how many answers, how many identical, the first agent whose
    answer differs (with both answers), both means and each group's mean shift (again - then)."""

    round: int
    n: int
    identical: int
    first_agent: int | None = None
    first_answers: tuple[Any, Any] | None = None
    mean: tuple[float, float] = (float("nan"), float("nan"))
    group_shift: dict[str, float] = field(default_factory=dict)

    @property
    def same(self) -> bool:
        """Every answer of the round identical."""
        return self.identical == self.n


def _mean(guesses: pd.Series, valid: pd.Series) -> float:
    chosen = guesses[valid]
    return float(chosen.mean()) if len(chosen) else float("nan")


def _match_round(
    original: Bundle, again: Bundle, number: int, groups: pd.Series | None
) -> RoundMatch:
    """One round compared; `groups` is each agent's group (indexed by agent id), if any."""
    then, now = _answers(original, number), _answers(again, number)
    joined = then.merge(now, on="agent_id", how="outer", suffixes=("_then", "_now"))
    same_guess = (joined["guess_then"] == joined["guess_now"]) | (
        joined["guess_then"].isna() & joined["guess_now"].isna()
    )
    same = same_guess & (joined["status_then"] == joined["status_now"])
    differing = joined.loc[~same]
    first = None if differing.empty else differing.iloc[0]
    shift: dict[str, float] = {}
    valid_then = joined["status_then"] == Status.OK
    valid_now = joined["status_now"] == Status.OK
    if groups is not None and not differing.empty:
        of_agent = joined["agent_id"].map(groups).astype(str)
        for name, rows in joined.groupby(of_agent, sort=True).groups.items():
            part = joined.loc[rows]
            then_mean = _mean(part["guess_then"], valid_then.loc[rows])
            now_mean = _mean(part["guess_now"], valid_now.loc[rows])
            shift[str(name)] = now_mean - then_mean
    return RoundMatch(
        round=number,
        n=len(joined),
        identical=int(same.sum()),
        first_agent=None if first is None else int(first["agent_id"]),
        first_answers=None if first is None else (_shown(first, "then"), _shown(first, "now")),
        mean=(
            _mean(joined["guess_then"], valid_then),
            _mean(joined["guess_now"], valid_now),
        ),
        group_shift=shift,
    )


def _shown(row: pd.Series, side: str) -> Any:
    """An answer as the verdict shows it: its number, or its status when it has none."""
    guess = row[f"guess_{side}"]
    if pd.isna(guess):
        status = row[f"status_{side}"]
        return "no answer" if pd.isna(status) else str(status)
    return int(guess) if float(guess).is_integer() else float(guess)


# ------------------------------------------------------------------ causes


def build_label(model: dict[str, Any]) -> str:
    """Which llama.cpp build answered, in words: "portable (x86-64-v3)", "native (AVX512F,
    ...)", or for a bundle made before builds were recorded, native with its features (every
    build of the set-up was native then). Empty for a model that is not llama.cpp."""
    if model.get("engine") != "llama.cpp":
        return ""
    build = model.get("build")
    if isinstance(build, dict):
        kind = str(build.get("build", "unknown"))
        if kind == "portable":
            return f"portable ({build.get('baseline', 'unknown baseline')})"
        features = _wide_features(str(build.get("built_for", "")))
        return f"{kind} ({features})" if features else kind
    reported = model.get("built_for")
    if isinstance(reported, str):
        return f"native, made before builds were recorded ({_wide_features(reported)})"
    return "unknown (the manifest records no build)"


def build_reach(model: dict[str, Any]) -> str:
    """Where a llama.cpp bundle's answers can be made again, in one phrase (empty for other
    engines): `bundles show` prints it under the model."""
    label = build_label(model)
    if not label:
        return ""
    if label.startswith("portable"):
        return f"{label}: the same answers on any machine of that baseline"
    if label.startswith("native"):
        return f"{label}: the same answers only on a CPU with these features and this build"
    return f"{label}: where its answers can be made again is not known"


WIDE = (*BEYOND_PORTABLE, "AVX2", "NEON", "DOTPROD")
"""Feature names worth showing in a build's label: the widest instruction sets it uses."""


def _wide_features(reported: str) -> str:
    wide = sorted(f for f in enabled_features(reported) if f.startswith(WIDE))
    return ", ".join(wide) if wide else "no AVX2 or wider"


def _build_of(model: dict[str, Any]) -> dict[str, Any]:
    build = model.get("build")
    if isinstance(build, dict):
        return build
    return {"build": "native", "built_for": model.get("built_for", "")} if model else {}


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 72 else text[:69] + "..."


def answer_causes(
    then: dict[str, Any],
    now: dict[str, Any],
    then_backend: str | None = None,
    now_backend: str | None = None,
) -> list[str]:
    """What differs between two manifests' records of what answered (`model`), each a short
    phrase, the likeliest causes first: what can change answers of one config and seed."""
    causes: list[str] = []

    def differs(key: str, label: str) -> None:
        a, b = then.get(key), now.get(key)
        if a != b:
            causes.append(f"{label}: {_short(a)} -> {_short(b)}")

    differs("file_sha256", "model file sha256")
    differs("name", "model")
    differs("engine", "engine")
    differs("engine_version", "engine version")
    if then.get("engine") == now.get("engine") == "llama.cpp":
        a, b = _build_of(then), _build_of(now)
        if build_label(then) != build_label(now):
            causes.append(f"llama.cpp build: {build_label(then)} -> {build_label(now)}")
        elif a.get("baseline") != b.get("baseline") or a.get("cmake_args") != b.get("cmake_args"):
            causes.append("llama.cpp build flags: " f"{_short(a.get('cmake_args'))} -> "
                          f"{_short(b.get('cmake_args'))}")  # fmt: skip
        elif a.get("compiler") != b.get("compiler"):
            causes.append(f"compiler: {a.get('compiler')} -> {b.get('compiler')}")
        fa, fb = (
            enabled_features(str(a.get("built_for", ""))),
            enabled_features(str(b.get("built_for", ""))),
        )
        if fa != fb:
            lost, gained = sorted(fa - fb), sorted(fb - fa)
            causes.append(
                "CPU features the build uses: "
                + "; ".join(
                    part
                    for part in (
                        f"only then {', '.join(lost)}" if lost else "",
                        f"only now {', '.join(gained)}" if gained else "",
                    )
                    if part
                )
            )
    differs("sampling", "sampler")
    differs("sampling_law", "sampling law")
    differs("answers", "how answers are drawn")
    differs("prompt_pieces", "prompt pieces")
    differs("attention", "attention")
    if then_backend != now_backend:
        causes.append(f"backend: {then_backend} -> {now_backend}")
    causes.extend(_server_causes(then, now))
    return causes


SERVER_KEYS = ("kind", "version", "owned_by", "constraint", "sampling_law")
"""What a server is, for comparing runs (not where it answered, nor its probes' timings)."""


def _servers(model: dict[str, Any]) -> dict[str, Any]:
    """A served model's servers by what they are (kind, version, model), not where they were."""
    servers = model.get("servers")
    if not isinstance(servers, dict):
        return {}
    described = [
        {k: v for k, v in (s or {}).items() if k in SERVER_KEYS}
        for s in servers.values()
        if isinstance(s, dict)
    ]
    return {"servers": sorted(described, key=lambda d: json.dumps(d, sort_keys=True))}


def _server_causes(then: dict[str, Any], now: dict[str, Any]) -> list[str]:
    causes = []
    a, b = _servers(then), _servers(now)
    if a != b:
        causes.append(f"server: {_short(a.get('servers'))} -> {_short(b.get('servers'))}")
    for model, side in ((then, "then"), (now, "now")):
        sampling = model.get("sampling")
        if isinstance(sampling, dict) and sampling.get("batch_invariant") == "no":
            causes.append(f"the server {side} promised no batch invariance")
    if then.get("seed") != now.get("seed"):
        causes.append(f"server seed: {then.get('seed')} -> {now.get('seed')}")
    return causes


# ------------------------------------------------------------------ the whole comparison


@dataclass(frozen=True)
class Reproduction:
    """A bundle and its run again: the rounds compared, the causes the manifests name, and
    whether the personas drawn are the same."""

    original: Bundle
    again: Bundle
    rounds: list[RoundMatch]
    causes: list[str]
    personas_same: bool
    rounds_asked: int

    @property
    def identical(self) -> bool:
        """Every answer of every round asked for identical (and as many rounds played)."""
        return (
            self.personas_same
            and len(self.rounds) == self.rounds_asked
            and all(r.same for r in self.rounds)
        )

    def verdict(self) -> str:
        """One line: identical, or where the runs part and what the manifests name as cause."""
        n = sum(r.n for r in self.rounds)
        if self.identical:
            return (
                f"identical: all {n:,} answers of {len(self.rounds)} round(s) are the same "
                f"as {self.original.run_id}'s"
            )
        parts = []
        if not self.personas_same:
            parts.append("the personas drawn differ")
        if len(self.rounds) != self.rounds_asked:
            parts.append(f"{len(self.rounds)} of {self.rounds_asked} rounds played")
        first = next((r for r in self.rounds if not r.same), None)
        if first is not None:
            then, now = first.first_answers or ("?", "?")
            parts.append(
                f"round {first.round}: {first.identical:,} of {first.n:,} answers identical, "
                f"first at agent {first.first_agent} ({then} -> {now}), mean "
                f"{first.mean[0]:.2f} -> {first.mean[1]:.2f}"
            )
        cause = (
            "; ".join(self.causes)
            if self.causes
            else "the manifests record nothing that differs (a nondeterministic engine or server?)"
        )
        return f"differs: {', '.join(parts)}; cause: {cause}"

    def table(self) -> pd.DataFrame:
        """One row per round: answers, identical, first differing agent, both means, the shift
        of the mean and the largest group shift."""
        rows = []
        for r in self.rounds:
            worst = max(r.group_shift.items(), key=lambda kv: abs(kv[1]), default=(None, 0.0))
            rows.append(
                {
                    "round": r.round,
                    "answers": r.n,
                    "identical": r.identical,
                    "first_differing_agent": r.first_agent,
                    "mean_then": r.mean[0],
                    "mean_now": r.mean[1],
                    "mean_shift": r.mean[1] - r.mean[0],
                    "largest_group_shift": f"{worst[0]}: {worst[1]:+.2f}" if worst[0] else "",
                }
            )
        frame = pd.DataFrame(rows)
        if len(frame):
            frame["first_differing_agent"] = frame["first_differing_agent"].astype("Int64")
        return frame

    def __str__(self) -> str:
        lines = [
            f"original: {self.original.path}",
            f"again:    {self.again.path}",
            self.table().to_string(index=False, float_format=lambda x: f"{x:.2f}"),
        ]
        shifts = [r for r in self.rounds if r.group_shift]
        for r in shifts:
            moved = ", ".join(f"{g} {s:+.2f}" for g, s in r.group_shift.items())
            lines.append(f"round {r.round} group mean shifts: {moved}")
        lines.append(self.verdict())
        return "\n".join(lines)


def _first_column(personas: pd.DataFrame) -> str | None:
    """The persona column groups are shown by when the run had no `game.group_by`."""
    columns = [c for c in personas.columns if c not in ("agent_id", "persona")]
    return columns[0] if columns else None


def compare_answers(original: Bundle, again: Bundle, rounds: int | None = None) -> Reproduction:
    """`again` (the same config run again) against `original`, round by round up to `rounds`
    (default: every round `original` finished)."""
    asked = rounds if rounds is not None else len(original.rounds_done)
    played = min(asked, len(again.rounds_done), len(original.rounds_done))
    personas = original.personas()  # read once: a million rows
    group_by = original.config.game.group_by or _first_column(personas)
    groups = None if group_by is None else personas.set_index("agent_id")[group_by]
    matches = [_match_round(original, again, n, groups) for n in range(1, played + 1)]
    personas_same = personas.equals(again.personas())
    causes = answer_causes(
        original.model,
        again.model,
        original.config.backend.kind,
        again.config.backend.kind,
    )
    return Reproduction(original, again, matches, causes, personas_same, asked)
