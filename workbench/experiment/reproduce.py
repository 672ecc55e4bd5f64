"""Make a bundle again: run its stored config with its seed into a new bundle, then compare.

`reproduce(bundle)` is what `workbench bundles reproduce BUNDLE` runs. `verify` checks that a
bundle agrees with itself (hashes, statistics); `reproduce` checks that it can be made again
here: the same config, seed and personas through this machine's model, answer by answer
(`results.reproduction`). A difference comes with its cause read from both manifests: another
model file, engine version, llama.cpp build or CPU features, sampler, backend or server.

A bundle may come from anyone, so its config never chooses which secret is sent where: a served
model's `api_key_env` is sent only where `allow_key_env` (`--allow-key-env VAR=HOST`) grants it,
as the dashboard does (`llm.key_policy`), and the grant binds every process the run starts.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.llm.key_policy import OPTION, POLICY_ENV, KeyPolicy
from workbench.results import Bundle
from workbench.results.reproduction import Reproduction, compare_answers
from workbench.runtime import Simulation


def _refuse_ungranted_keys(config: RunConfig, policy: KeyPolicy) -> None:
    """ConfigError before anything runs when the config would send a key the user did not
    grant to those hosts."""
    for spec in [config.model, *config.models.values()]:
        variable = spec.api_key_env
        refused = None if variable is None else policy.refused_endpoint(variable, spec.base_urls)
        if refused is not None:
            raise ConfigError(
                f"model.api_key_env: the bundle's config would send the key in {variable!r} "
                f"to {refused}; a bundle never chooses where a secret goes, so nothing was "
                f"sent. If you trust that host: {OPTION} {variable}={refused}"
            )


@contextlib.contextmanager
def _bound_to(policy: KeyPolicy) -> Iterator[None]:
    """This process (and every process it starts) under `policy` while the rerun plays."""
    before = os.environ.get(POLICY_ENV)
    policy.install()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(POLICY_ENV, None)
        else:
            os.environ[POLICY_ENV] = before


def rerun(
    bundle: Bundle,
    *,
    rounds: int | None = None,
    allow_key_env: Sequence[str] = (),
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
    policy = KeyPolicy.parse(allow_key_env)
    _refuse_ungranted_keys(config, policy)
    sim = Simulation(config)  # the config as stored: its prompts name its number of rounds
    if events is not None:
        sim.events.subscribe(events)

    def stop_after_target(number: int, *_: Any) -> None:
        if number >= target and number < config.game.rounds:
            sim.cancel()  # the rest is not asked for: the new bundle reads cancelled

    where = Path(out_dir) if out_dir is not None else bundle.path.parent
    with _bound_to(policy):
        return sim.run(out_dir=where, progress=progress, on_round=stop_after_target)


def reproduce(
    bundle: str | Path | Bundle,
    *,
    rounds: int | None = None,
    allow_key_env: Sequence[str] = (),
    out_dir: str | Path | None = None,
    progress: bool = False,
    events: Callable[[Any], None] | None = None,
) -> Reproduction:
    """Run `bundle`'s config again (`rerun`) and compare the two answer by answer: print the
    result, or ask `.identical` and `.verdict()`. `allow_key_env` (`VAR=HOST[,HOST...]`)
    grants the API keys a served model's config may send, and to which hosts."""
    original = bundle if isinstance(bundle, Bundle) else Bundle.open(bundle)
    again = rerun(
        original,
        rounds=rounds,
        allow_key_env=allow_key_env,
        out_dir=out_dir,
        progress=progress,
        events=events,
    )
    asked = rounds if rounds is not None else len(original.rounds_done)
    return compare_answers(original, again, asked)
