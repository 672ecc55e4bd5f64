"""Simulation: rounds of the game over sharded agents, streamed into a result bundle.

Each round the environment sends one small `RoundContext` to every shard, the backend returns one
decisions table per shard, the environment writes them to the bundle and reduces them to the
round's statistics (mean, target, winners), whose target the next round's context carries.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.metadata
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.agents.policies import LevelKPolicy, LLMPolicy, Policy, RandomPolicy
from workbench.agents.shard import RoundContext, split_into_shards
from workbench.config import (
    LevelKPolicySpec,
    LLMPolicySpec,
    PopulationSpec,
    RandomPolicySpec,
    RunConfig,
    load_run_config,
    resolve_population,
)
from workbench.errors import ConfigError
from workbench.game import RoundStats, round_stats
from workbench.llm import ChatModel, make_model, sampling_params
from workbench.population import population_note, sample_population
from workbench.results import Bundle, BundleWriter
from workbench.runtime.local import LocalBackend

TEXT_LIMIT = 1_000_000
"""Above this many agents, non-LLM runs skip persona text (it is never read by their policies)."""

RoundCallback = Callable[[int, RoundStats, float], None]


class Simulation:
    """One configured game: personas, a policy, a backend; `run()` plays it into a bundle."""

    def __init__(
        self,
        config: RunConfig,
        *,
        personas: pd.DataFrame | None = None,
        model: ChatModel | None = None,
        backend: LocalBackend | None = None,
    ) -> None:
        self.config = resolve_population(config)
        self._personas = personas
        self._model = model
        self.backend = backend or LocalBackend()

    @classmethod
    def from_yaml(cls, path: str | Path) -> Simulation:
        """A simulation from a run config file."""
        return cls(load_run_config(path))

    @property
    def population(self) -> PopulationSpec:
        """The resolved population spec."""
        assert isinstance(self.config.population, PopulationSpec)
        return self.config.population

    @property
    def personas(self) -> pd.DataFrame:
        """One row per agent (sampled once from the population spec and the run seed)."""
        if self._personas is None:
            cfg = self.config
            with_text = cfg.policy.kind == "llm" or cfg.n_agents <= TEXT_LIMIT
            self._personas = sample_population(
                self.population, cfg.n_agents, cfg.seed, with_text=with_text
            )
        return self._personas

    @property
    def model(self) -> ChatModel | None:
        """The chat model LLM agents use (None for random and level-k policies)."""
        if self._model is None and isinstance(self.config.policy, LLMPolicySpec):
            self._model = make_model(self.config.model)
        return self._model

    def make_policy(self) -> Policy:
        """The policy the config asks for; loads the model (errors here write nothing)."""
        spec = self.config.policy
        if isinstance(spec, RandomPolicySpec):
            return RandomPolicy(spec)
        if isinstance(spec, LevelKPolicySpec):
            if spec.attribute is not None and spec.attribute not in self.population_columns():
                raise ConfigError(
                    f"policy.attribute: {spec.attribute!r} is not a population dimension; "
                    f"known: {self.population_columns()}"
                )
            return LevelKPolicy(spec)
        model = self.model
        if hasattr(model, "load"):
            model.load()  # type: ignore[union-attr]
        return LLMPolicy(
            model,  # type: ignore[arg-type]
            sampling_params(self.config.model),
            constrained=self.config.model.constrained,
        )

    def population_columns(self) -> list[str]:
        """Names of the population's dimensions."""
        return [d.name for d in self.population.dimensions]

    def describe_model(self) -> dict[str, Any]:
        """What answered, for the manifest: the model identity, or the baseline policy."""
        if isinstance(self.config.policy, LLMPolicySpec) and self.model is not None:
            return dict(self.model.identity)
        return {"engine": "none", "policy": self.config.policy.kind}

    def versions(self) -> dict[str, str]:
        """Versions of what shaped the numbers."""
        out = {"python": platform.python_version()}
        for package in ("agent-sim-workbench", "pydantic", "llama-cpp-python"):
            try:
                out[package] = importlib.metadata.version(package)
            except importlib.metadata.PackageNotFoundError:
                continue
        return out

    async def arun(
        self,
        *,
        out_dir: str | Path | None = None,
        run_id: str | None = None,
        progress: bool = True,
        on_round: RoundCallback | None = None,
    ) -> Bundle:
        """Play every round; returns the finished bundle (also when awaited inside Jupyter)."""
        cfg = self.config
        policy = self.make_policy()
        personas = self.personas
        shards = split_into_shards(personas, cfg.backend.agents_per_shard, cfg.game.rounds)
        note = population_note(self.population) if cfg.game.prompt.population_note else None
        writer = BundleWriter(
            Path(out_dir if out_dir is not None else cfg.output.dir),
            cfg,
            run_id=run_id,
            versions=self.versions(),
            model=self.describe_model(),
            seeds={"run": cfg.seed, "population": cfg.seed, "agents": cfg.seed},
        )
        bar = _progress(cfg.game.rounds, writer.run_id, progress)
        try:
            with writer:
                writer.write_personas(personas)
                await self.backend.start(shards, policy)
                writer.record(backend=self.backend.describe())
                targets: list[float] = []
                for number in range(1, cfg.game.rounds + 1):
                    start = time.perf_counter()
                    ctx = RoundContext(
                        number, cfg.seed, cfg.game, cfg.n_agents, tuple(targets), note
                    )
                    tables = await self.backend.play_round(ctx)
                    for shard_index, table in enumerate(tables):
                        writer.write_responses(number, shard_index, table)
                    stats = _stats(tables, cfg)
                    seconds = time.perf_counter() - start
                    writer.end_round({"round": number, **stats.as_dict(), "seconds": seconds})
                    targets.append(stats.target)
                    if bar is not None:
                        bar.set_postfix(mean=f"{stats.mean:.2f}", target=f"{stats.target:.2f}")
                        bar.update(1)
                    if on_round is not None:
                        on_round(number, stats, seconds)
        finally:
            if bar is not None:
                bar.close()
            await self.backend.close()
        return Bundle.open(writer.path)

    def run(self, **kwargs: Any) -> Bundle:
        """Blocking `arun`; inside a running event loop (Jupyter) it runs on a helper thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(**kwargs))
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.arun(**kwargs)).result()


def _stats(tables: list[pa.Table], cfg: RunConfig) -> RoundStats:
    """The round's statistics over every shard's decisions (invalid answers excluded)."""
    guesses = np.concatenate([t.column("guess").to_numpy(zero_copy_only=False) for t in tables])
    valid = np.concatenate(
        [pc.equal(t.column("status"), "ok").to_numpy(zero_copy_only=False) for t in tables]
    )
    return round_stats(guesses, valid, cfg.game)


def _progress(total: int, label: str, enabled: bool) -> Any:
    """A tqdm bar over rounds (a widget in notebooks), or None when disabled."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, unit="round", leave=True)


def run(config: RunConfig | str | Path, **kwargs: Any) -> Bundle:
    """Run a config (object or YAML path) to a bundle: the one-line entry point."""
    if isinstance(config, RunConfig):
        return Simulation(config).run(**kwargs)
    return Simulation.from_yaml(config).run(**kwargs)
