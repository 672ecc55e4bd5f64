"""What-if forks: a new bundle whose rounds before K are its parent's, byte for byte.

A fork answers "the same first rounds, then something else": it keeps the parent's agents (its
personas, its seed, the rounds it played before K) and plays rounds K onwards under a changed
config (another game ratio, an announcement in the prompt, another model). What a fork may not
change is what the shared rounds were made of (`KEPT`). The parent must verify (hashes and
statistics recomputed) before anything is copied, and the fork's manifest names it
(`forked_from`: run id, path, the round the fork starts at, the parent's manifest hash and the
overrides), so `bundles verify` and `bundles compare` see where its first rounds came from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench import _files
from workbench.config import RunConfig
from workbench.errors import BundleError, ConfigError
from workbench.results.bundle import Bundle
from workbench.results.layout import MANIFEST, PERSONAS_FILE, exact_paths, read_parquet, relative
from workbench.results.verify import verify_bundle
from workbench.results.writer import BundleWriter

KEPT: tuple[str, ...] = ("n_agents", "seed", "population", "model_shares", "game.group_by")
"""Config keys a fork keeps from its parent: its agents, their streams and their groups."""


def _value(config: RunConfig, key: str) -> Any:
    """A dotted key's value in a config's data."""
    data: Any = config.model_dump(mode="json")
    for part in key.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def check_fork(parent: Bundle, at_round: int, config: RunConfig, where: str = "fork") -> None:
    """ConfigError (naming the field and the fix) unless `config` can play rounds `at_round`
    onwards of `parent`: K from 2 to the parent's rounds done + 1, within the fork's rounds,
    the `KEPT` keys unchanged, and the parent finished and verified."""
    done = parent.rounds_count
    if at_round < 2 or at_round > done + 1:
        span = f"2 to {done + 1}" if done else "none: it finished no round"
        raise ConfigError(
            f"{where}: at_round {at_round}: a fork shares the parent's rounds before it, so it "
            f"starts at a round from 2 to the parent's rounds done + 1 ({parent.run_id}: {span})"
        )
    if config.game.rounds < at_round:
        raise ConfigError(
            f"{where}: game.rounds {config.game.rounds}: the fork starts at round {at_round}, so "
            f"it needs at least {at_round} rounds (set game.rounds)"
        )
    base = parent.config
    for key in KEPT:
        if _value(config, key) != _value(base, key):
            raise ConfigError(
                f"{where}: {key}: a fork keeps its parent's agents and their streams "
                f"({', '.join(KEPT)}); drop this override, or start a new run to change it"
            )
    if not parent.is_finished:
        raise BundleError(
            f"{parent.path}: still running; fork it once it has finished or been cancelled"
        )
    report = verify_bundle(parent.path, require_complete=False)
    if not report.ok:
        raise BundleError(
            f"{parent.path}: does not verify ({'; '.join(report.problems[:3])}); a fork shares "
            "its rounds, so restore the bundle (or fork another) first"
        )


def forked_from(parent: Bundle, at_round: int, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The fork's manifest entry naming its parent."""
    digest = hashlib.sha256((parent.path / MANIFEST).read_bytes()).hexdigest()
    return {
        "run_id": parent.run_id,
        "path": str(parent.path),
        "at_round": at_round,
        "parent_manifest_sha256": digest,
        "overrides": dict(overrides),
        "round_games": [
            parent.game_of(number).model_dump(mode="json") for number in range(1, at_round)
        ],
    }


def copy_shared_rounds(writer: BundleWriter, parent: Bundle, at_round: int) -> list[dict]:
    """Copy the parent's personas and its rounds before `at_round` into a new bundle, byte for
    byte (the response part files) or row for row (round and group statistics, exact
    distributions where the parent kept them); returns the copied rounds' statistics."""
    copy_file(parent.path / PERSONAS_FILE, writer.path / PERSONAS_FILE)
    shared = [r for r in parent.rounds_done if int(r["round"]) < at_round]
    groups = parent.groups(as_written=True)
    for stats in shared:
        number = int(stats["round"])
        for part in parent.response_files(number):
            copy_file(part, writer.path / relative(parent.path, part))
        if not groups.empty:
            rows = groups[groups["round"] == number].drop(columns="round")
            writer.write_group_stats(number, rows.to_dict("records"))
        writer.end_round(stats)
        if number in parent.exact_rounds:  # what the shared round's agents drew from
            prompts, agents = (read_parquet(path) for path in exact_paths(parent.path, number))
            scheme = {k: v for k, v in parent.manifest["exact"].items() if k != "rounds"}
            writer.write_exact(number, prompts, agents, scheme)
    return shared


def copy_file(source: Path, target: Path) -> None:
    """One file's bytes, written atomically (its folder made)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _files.atomic_write_bytes(target, source.read_bytes())
