"""Make a bundle again: run its stored config with its seed into a new bundle, then compare.

`reproduce(bundle)` is what `workbench bundles reproduce BUNDLE` runs. `verify` checks that a
bundle agrees with itself (hashes, statistics); `reproduce` checks that it can be made again
here: the same config, seed and personas through this machine's model, answer by answer
(`results.reproduction`). A difference comes with its cause read from both manifests: another
model file, engine version, llama.cpp build or CPU features, sampler, backend or server.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.results import Bundle
from workbench.results.reproduction import Reproduction, compare_answers
from workbench.runtime import Simulation


def rerun(
    bundle: Bundle,
    *,
    rounds: int | None = None,
    out_dir: str | Path | None = None,
    progress: bool = False,
    events: Callable[[Any], None] | None = None,
) -> Bundle:
    """A new bundle from `bundle`'s stored config and seed, played for the rounds it finished
    (or its first `rounds` only; the config keeps its number of rounds, which the prompts
    name, and the run stops after them), written beside it unless `out_dir` says where."""
    played = len(bundle.rounds_done)
    if played == 0:
        raise ConfigError(f"{bundle.path}: no finished round to reproduce")
    if rounds is not None and not 1 <= rounds <= played:
        raise ConfigError(
            f"--rounds: {rounds} is not between 1 and the {played} round(s) "
            f"{bundle.run_id} finished; pick one in that range"
        )
    if bundle.forked_from is not None:
        raise ConfigError(
            f"{bundle.path}: a fork shares its first rounds with its parent "
            f"{bundle.forked_from.get('run_id')}; reproduce the parent, then fork it again"
        )
    config, target = bundle.config, rounds or played
    sim = Simulation(config)  # the config as stored: its prompts name its number of rounds
    if events is not None:
        sim.events.subscribe(events)

    def stop_after_target(number: int, *_: Any) -> None:
        if number >= target and number < config.game.rounds:
            sim.cancel()  # the rest is not asked for: the new bundle reads cancelled

    where = Path(out_dir) if out_dir is not None else bundle.path.parent
    return sim.run(out_dir=where, progress=progress, on_round=stop_after_target)


def reproduce(
    bundle: str | Path | Bundle,
    *,
    rounds: int | None = None,
    out_dir: str | Path | None = None,
    progress: bool = False,
    events: Callable[[Any], None] | None = None,
) -> Reproduction:
    """Run `bundle`'s config again (`rerun`) and compare the two answer by answer: print the
    result, or ask `.identical` and `.verdict()`."""
    original = bundle if isinstance(bundle, Bundle) else Bundle.open(bundle)
    again = rerun(original, rounds=rounds, out_dir=out_dir, progress=progress, events=events)
    asked = rounds if rounds is not None else len(original.rounds_done)
    return compare_answers(original, again, asked)
