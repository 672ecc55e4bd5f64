"""Simulation: rounds of the game over sharded agents, streamed into a result bundle.

Each round the environment sends one small `RoundContext` to every shard, the backend returns one
decisions table per shard, the environment writes them to the bundle and reduces them to the
round's statistics (mean, target, winners), whose target the next round's context carries.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.metadata
import inspect
import platform
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench.agents.context_probes import probe_requests
from workbench.agents.factory import make_policy
from workbench.agents.policies import Policy
from workbench.agents.shard import AgentShard, RoundContext, split_into_shards
from workbench.config import (
    BackendSpec,
    LevelKPolicySpec,
    LLMPolicySpec,
    PopulationSpec,
    RunConfig,
    apply_overrides,
    load_run_config,
    resolve_population,
    validate,
)
from workbench.errors import BundleError, ConfigError, one_line
from workbench.game import RoundStats
from workbench.llm import ChatModel, as_chat_model, model_for, sampling_params
from workbench.population import quota_assignment, sample_population
from workbench.results import Bundle, BundleWriter
from workbench.results.fork import check_fork, copy_shared_rounds, forked_from
from workbench.results.run_statuses import RunStatus
from workbench.results.writer import final_status
from workbench.runtime.backend import Backend, make_backend
from workbench.runtime.blocking import run_blocking
from workbench.runtime.estimate import RunEstimate, estimate_run
from workbench.runtime.estimate_cluster import cluster_shape
from workbench.runtime.events import (
    EngineWork,
    Event,
    EventBus,
    RoundFinished,
    RunFinished,
    RunStarted,
    ShardProgress,
    Subscriber,
    round_note,
)
from workbench.runtime.exact_rounds import require_exact_rounds, store_exact
from workbench.runtime.round_outcome import check_failures, round_outcome

MODEL_STREAM = 0x4D0DE1
"""Seed salt of the per-agent model assignment (independent of the population's streams)."""

TEXT_LIMIT = 1_000_000
"""Above this many agents, non-LLM runs skip persona text (it is never read by their policies)."""

RoundCallback = Callable[[int, RoundStats, float], Awaitable[None] | None]


class Simulation:
    """One configured game: personas, a policy, a backend; `run()` plays it into a bundle.

    `to_dist(...)` gives the same simulation on the Ray backend; `cancel()` stops it after
    marking its bundle cancelled; `Simulation.resume(bundle)` finishes a cancelled or failed run.
    A round in which more answers failed than `config.max_failed_share` allows is not stored:
    the run stops as failed with a RoundFailedError, and a resume replays that round.
    """

    def __init__(
        self,
        config: RunConfig,
        *,
        personas: pd.DataFrame | None = None,
        model: ChatModel | None = None,
        backend: Backend | None = None,
    ) -> None:
        self.config = resolve_population(config)
        self._personas = personas
        given = None if model is None else as_chat_model(model, "Simulation(model=...)")
        self._model = given
        self._given_model = given  # what the caller handed in (sent to Ray's model actors)
        self._backend = backend
        self.events = EventBus()
        """Subscribe here (`sim.events.subscribe(callback)`) to see this run's events live."""
        self._resume: _Resume | None = None
        self._cancel_requested = False
        self._task: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None

    @classmethod
    def from_yaml(cls, path: str | Path) -> Simulation:
        """A simulation from a run config file."""
        return cls(load_run_config(path))

    @classmethod
    def resume(
        cls, bundle: str | Path, *, base_urls: Sequence[str] | None = None, **kwargs: Any
    ) -> Simulation:
        """The unfinished run in `bundle`, ready to play its remaining rounds into it.

        `base_urls` reaches the run's (openai) model at new endpoints, e.g. a restarted server
        on another port; the bundle's config keeps the old ones, its manifest records the change.
        """
        opened = Bundle.open(bundle)
        if opened.status is RunStatus.COMPLETE:
            raise BundleError(f"{opened.path}: already complete; nothing to resume")
        # the manifest's rounds, as BundleWriter.reopen counts them: a run killed between
        # writing rounds.parquet and the manifest replays that round rather than skipping it
        done = opened.rounds_done
        config, changes = opened.config, {}
        if base_urls is not None:
            config = config.with_base_urls(base_urls, "base_urls")
            changes = {"model.base_urls": list(base_urls)}
        sim = cls(config, personas=opened.personas(), **kwargs)
        memory = None
        if done:
            memory = opened.responses()
            memory = memory[memory["round"] <= len(done)]
        sim._resume = _Resume(opened.path, _targets(done), memory, changes)
        return sim

    @classmethod
    def fork(
        cls,
        parent: str | Path | Bundle,
        at_round: int,
        overrides: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Simulation:
        """A what-if: a new run whose rounds before `at_round` are `parent`'s (copied byte for
        byte once the parent verifies) and which plays the rest under the parent's config with
        `overrides` (dotted keys, as `--set` takes them: another ratio, an announcement, another
        model, more rounds). Its manifest names the parent (`forked_from`); `run()` writes it as
        a new bundle, and a fork is resumed like any run."""
        opened = parent if isinstance(parent, Bundle) else Bundle.open(parent)
        where = f"fork of {opened.run_id}"
        overrides = dict(overrides or {})
        config = apply_overrides(opened.config, overrides, where)
        check_fork(opened, at_round, config, where)
        shared = [r for r in opened.rounds_done if int(r["round"]) < at_round]
        memory = opened.responses()
        memory = memory[memory["round"] < at_round]
        sim = cls(config, personas=opened.personas(), **kwargs)
        fork = forked_from(opened, at_round, overrides)
        sim._resume = _Resume(opened.path, _targets(shared), memory, fork=fork)
        return sim

    def to_dist(
        self,
        address: str | None = None,
        *,
        agents_per_actor: int | None = None,
        shards_per_node: int | None = None,
    ) -> Simulation:
        """The same simulation on the Ray backend (the paper's `to_dist`): one argument away."""
        spec = {
            "kind": "ray",
            "address": address,
            "agents_per_actor": agents_per_actor,
            "shards_per_node": shards_per_node,
            "max_restarts": self.config.backend.max_restarts,
        }
        backend = validate(BackendSpec, spec, "backend")  # ConfigError naming the bad argument
        config = self.config.model_copy(update={"backend": backend})
        return Simulation(config, personas=self._personas, model=self._given_model)

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
            personas = sample_population(
                self.population, cfg.n_agents, cfg.seed, with_text=with_text
            )
            if cfg.model_shares:
                personas["model"] = quota_assignment(
                    cfg.model_shares, cfg.n_agents, cfg.seed, MODEL_STREAM
                )
            self._personas = personas
        return self._personas

    @property
    def backend(self) -> Backend:
        """The backend the config names (built on first use), or the one given."""
        if self._backend is None:
            local = self.config.backend.kind == "local"
            self._backend = make_backend(self.config, self.model if local else self._given_model)
        return self._backend

    @property
    def model(self) -> ChatModel | None:
        """The chat model LLM agents use (None for random and level-k policies)."""
        if self._model is None and isinstance(self.config.policy, LLMPolicySpec):
            self._model = model_for(self.config)
        return self._model

    def make_policy(self) -> Policy:
        """The policy the config asks for, built in this process (loads an LLM's model)."""
        self.check()
        return make_policy(self.config, self.model)

    def check(self) -> None:
        """Config problems that need the resolved population; ConfigError before any writing."""
        spec = self.config.policy
        columns = [d.name for d in self.population.dimensions]
        if isinstance(spec, LevelKPolicySpec) and spec.attribute not in (None, *columns):
            raise ConfigError(
                f"policy.attribute: {spec.attribute!r} is not a population dimension; "
                f"known: {columns}"
            )
        group_by = self.config.game.group_by
        if group_by is not None and group_by not in (*columns, *self.personas.columns):
            raise ConfigError(
                f"game.group_by: {group_by!r} is not a persona column; known: {columns}"
            )
        if self.config.output.exact_distributions:
            require_exact_rounds(self.config)
            if self.config.backend.kind != "local":
                raise ConfigError(
                    "output.exact_distributions: kept on the local backend only (the walk runs "
                    "beside the driver's model); use backend.kind: local, or compute them "
                    "afterwards with exact_round(bundle, model, round)"
                )

    def describe_model(self) -> dict[str, Any]:
        """What answered, for the manifest: the model identity, or the baseline policy."""
        if isinstance(self.config.policy, LLMPolicySpec) and self.model is not None:
            return {
                **self.model.identity,
                "answers": self.answers_drawn(),
                "sampling_law": self.sampling_law(),
            }
        return {"engine": "none", "policy": self.config.policy.kind}

    def sampling_law(self) -> dict[str, Any]:
        """The one sampling law and its settings, per model of a mix: every path draws by it."""
        if not self.config.models:
            return sampling_params(self.config.model).describe()
        return {name: sampling_params(spec).describe() for name, spec in self.config.models.items()}

    def answers_drawn(self) -> str:
        """How the LLM agents' answers are produced: distribution mode, or one generation per
        agent (and why: free text, or the model's own sampler)."""
        if not self.config.model.constrained:
            return "one generation per agent: free-text answers have no answer trie"
        if self.model is not None and self.model.draws_answers():
            return "distribution mode: one answer trie per distinct prompt, each agent's own draw"
        sampling = self.model.identity.get("sampling") if self.model is not None else None
        why = sampling.get("why") if isinstance(sampling, dict) else None
        plain = "one generation per agent: the model's own sampler"
        return f"{plain} (model.sampling auto fell back: {why})" if why else plain

    def versions(self) -> dict[str, str]:
        """Versions of what shaped the numbers."""
        out = {"python": platform.python_version()}  # the writer adds the workbench's own
        for package in ("pydantic", "llama-cpp-python", "ray"):
            try:
                out[package] = importlib.metadata.version(package)
            except importlib.metadata.PackageNotFoundError:
                continue
        return out

    def _group_codes(self) -> tuple[np.ndarray, list[str]] | None:
        """Each agent's group (code by agent id) and the group names, when `game.group_by`."""
        column = self.config.game.group_by
        if column is None:
            return None
        groups = self.personas.set_index("agent_id")[column].astype("category")
        codes = np.full(int(groups.index.max()) + 1, -1, dtype=np.int64)
        codes[groups.index.to_numpy()] = groups.cat.codes.to_numpy()
        return codes, [str(c) for c in groups.cat.categories]

    def cancel(self) -> None:
        """Stop the run (from any thread): the bundle is marked cancelled and can be resumed.

        From the run's own thread (an `on_round` callback) the run stops before its next round;
        from another thread the round in flight is interrupted (it is replayed on resume).
        """
        self._cancel_requested = True
        if self._task is None:
            return
        loop, task = self._task
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            return  # checked before every round; a pending cancel could hit the clean-up
        with contextlib.suppress(RuntimeError):  # the run ended and its loop closed meanwhile
            loop.call_soon_threadsafe(task.cancel)

    async def _shards(self) -> list[AgentShard]:
        """The personas cut into shards sized for the backend's nodes, memory restored."""
        cfg = self.config
        size = cfg.backend.shard_size(cfg.n_agents, await self.backend.node_count())
        shards = split_into_shards(self.personas, size, cfg.game.rounds)
        memory = self._resume.memory if self._resume is not None else None
        if memory is not None:
            for shard in shards:
                shard.restore(memory)
        return shards

    def _writer(self, out_dir: str | Path | None, run_id: str | None) -> BundleWriter:
        resume = self._resume
        if resume is not None and resume.fork is None:
            return BundleWriter.reopen(resume.path, resume.changes)
        cfg = self.config
        writer = BundleWriter(
            cfg.output.folder(out_dir),
            cfg,
            run_id=run_id,
            versions=self.versions(),
            model=self.describe_model(),
            seeds={"run": cfg.seed, "population": cfg.seed, "agents": cfg.seed},
        )
        if resume is not None and resume.fork is not None:  # a fork: the parent's rounds first
            try:
                copy_shared_rounds(writer, Bundle.open(resume.path), resume.fork["at_round"])
                writer.record(forked_from=resume.fork)
            except BaseException as exc:  # the fork is marked failed, never left running
                writer.end(exc)
                raise
        return writer

    def preflight(self, *, model: bool = True) -> None:
        """Refuse now what the run would refuse before writing (blocking `apreflight`)."""
        run_blocking(self.apreflight(model=model))

    async def apreflight(self, *, model: bool = True) -> None:
        """Everything a run refuses before it writes a bundle, raised as its WorkbenchError.

        The config against the resolved population (`check`), the shard size and, with
        `model`: the model answers (`check()`), the longest prompt fits its context, an exact
        distribution's model, and a new run's estimate against `max_estimated_seconds`.
        `arun` (so `workbench run` and the Python API) and the dashboard's launcher before it
        starts a process all call it: what one refuses, every one refuses.
        """
        cfg = self.config
        self.check()
        cfg.backend.shard_size(cfg.n_agents)
        if not model:
            return
        chat = self.model
        if chat is not None:
            await chat.check()  # an unreachable server or a wrong model name
            params = sampling_params(cfg.model)  # a prompt too long for the context, too
            chat.check_fits(probe_requests(cfg, self.personas, params), params)
            if cfg.output.exact_distributions:
                require_exact_rounds(cfg, chat)
        limit = cfg.max_estimated_seconds
        if limit is not None and self._resume is None:
            cluster = cluster_shape(cfg, self._given_model is not None)
            estimate = await estimate_run(cfg, chat, self.personas, cluster)
            if estimate.seconds > limit:
                raise ConfigError(
                    f"max_estimated_seconds: this run is estimated at {estimate.seconds:.0f} s, "
                    f"more than {limit:g}; raise the limit, or play fewer agents or rounds "
                    "(workbench run CONFIG --estimate shows where the time goes)"
                )

    async def arun(
        self,
        *,
        out_dir: str | Path | None = None,
        run_id: str | None = None,
        progress: bool = True,
        on_round: RoundCallback | None = None,
        on_event: Subscriber | None = None,
    ) -> Bundle:
        """Play every round; returns the bundle (status cancelled after `cancel()`).

        Events go to `self.events` subscribers, `on_event`, the bundle's events.jsonl and the
        progress bar; `on_round(number, stats, seconds)` (may be async) runs after each round.
        """
        cfg = self.config
        await self.apreflight()
        model = self.model
        targets = list(self._resume.targets) if self._resume is not None else []
        shards = await self._shards()
        group_codes = self._group_codes()  # once per run, not per round
        backend = self.backend
        await backend.prepare()  # the policy's model (or model actors) load before any writing
        try:
            writer = self._writer(out_dir, run_id)
        except BaseException:
            await backend.close()
            raise
        backend.run_id = writer.run_id  # the Ray backend names its actors after the run
        written: set[tuple[int, int]] = set()  # (round, shard) parts written as shards finished

        async def write_shard(number: int, shard: int, table: pa.Table) -> None:
            await asyncio.to_thread(writer.write_responses, number, shard, table)
            written.add((number, shard))

        backend.shard_sink = write_shard  # a live reader sees each round fill shard by shard
        served = any(spec.kind == "openai" for spec in (cfg.model, *cfg.models.values()))
        bar = RoundBar(cfg.game.rounds, writer.run_id, initial=len(targets)) if progress else None
        listeners = EventBus([s for s in (self.events.emit, on_event, bar) if s is not None])

        def emit(event: Event) -> None:
            event = dataclasses.replace(event, run_id=writer.run_id)
            # the bundle's log first (the truth on disk); progress is flushed, not fsynced
            writer.append_event(event.to_dict(), durable=not isinstance(event, ShardProgress))
            listeners.emit(event)

        self._task = (asyncio.get_running_loop(), asyncio.current_task())  # type: ignore[assignment]
        error: BaseException | None = None
        try:
            if self._resume is None:
                writer.write_personas(self.personas)
            emit(
                RunStarted(
                    bundle=str(writer.path),
                    config=cfg.model_dump(mode="json"),
                    rounds=cfg.game.rounds,
                    n_agents=cfg.n_agents,
                    backend=backend.name,
                    resumed_after=len(targets),
                )
            )
            await backend.start(shards)
            described = backend.describe()
            writer.record(backend=described)
            if cfg.output.exact_distributions and model is not None:
                for number in writer.rounds_without_exact():  # stopped mid-walk, or a fork's
                    await store_exact(writer, model, number)
            for number in range(len(targets) + 1, cfg.game.rounds + 1):
                if self._cancel_requested:
                    raise asyncio.CancelledError
                start = time.perf_counter()
                ctx = RoundContext.of(cfg, number, targets)
                tables = await backend.play_round(ctx, emit)
                work = await backend.engine_work(number)
                if work:
                    writer.record_engine_work(number, work)
                    emit(EngineWork(round=number, engines=work))
                if backend.describe() != described:  # e.g. a respawned Ray actor
                    described = backend.describe()
                    writer.record(backend=described)
                check_failures(tables, number, cfg.max_failed_share, writer.path, served)
                stats, seconds = await self._store_round(
                    writer, number, tables, group_codes, start, written
                )
                if cfg.output.exact_distributions and model is not None:
                    await store_exact(writer, model, number)
                targets.append(stats.target)
                row = {**stats.as_dict(), "seconds": seconds}
                emit(RoundFinished(round=number, stats=row, failures=stats.n_failed))
                if on_round is not None:
                    called = on_round(number, stats, seconds)
                    if inspect.isawaitable(called):
                        await called
        except BaseException as exc:  # recorded in the bundle, then re-raised unless ours
            error = exc
        finally:
            self._task = None
            await backend.close()
        final = RunFinished(
            run_id=writer.run_id,
            status=final_status(error),
            rounds_done=len(targets),
            error=None if error is None else one_line(error),
            bundle=str(writer.path),
        )
        try:
            writer.end(error, event=final.to_dict())
        finally:
            listeners.emit(final)
            if bar is not None:
                bar.close()
        if error is not None and not (
            isinstance(error, asyncio.CancelledError) and self._cancel_requested
        ):
            raise error
        return Bundle.open(writer.path)

    async def _store_round(
        self,
        writer: BundleWriter,
        number: int,
        tables: list[pa.Table],
        group_codes: tuple[np.ndarray, list[str]] | None,
        start: float,
        written: set[tuple[int, int]],
    ) -> tuple[RoundStats, float]:
        """Write the shards' tables the backend did not hand over as they finished (`written`
        holds those it did) and reduce them at once (Arrow releases the GIL)."""
        writes = (
            asyncio.to_thread(writer.write_responses, number, shard_index, table)
            for shard_index, table in enumerate(tables)
            if (number, shard_index) not in written
        )
        reduced, *_ = await asyncio.gather(
            asyncio.to_thread(round_outcome, tables, self.config, group_codes), *writes
        )
        stats, groups = reduced
        if groups:
            writer.write_group_stats(number, groups)
        seconds = time.perf_counter() - start
        writer.end_round({"round": number, **stats.as_dict(), "seconds": seconds})
        return stats, seconds

    def run(self, **kwargs: Any) -> Bundle:
        """Blocking `arun`; inside a running event loop (Jupyter) it runs on a helper thread."""
        return run_blocking(self.arun(**kwargs))

    def estimate(self, nodes: int | None = None) -> RunEstimate:
        """What this run will cost before it runs (`runtime.estimate`): round 1's distinct
        prompts counted and walked on the model, later rounds estimated; blocking. On Ray,
        `nodes` is the cluster's (else the connected cluster's, else 1): with a model actor
        per node, each round is divided over them (`runtime.estimate_cluster`). A resume or a
        fork continues a bundle: ConfigError (estimate its config as a new run)."""
        if self._resume is not None:
            raise ConfigError(
                "--estimate: a resumed or forked run continues from a bundle's rounds; "
                "estimate its config as a new run (workbench run CONFIG --estimate)"
            )
        self.check()
        given = self._given_model is not None
        cluster = cluster_shape(self.config, given, nodes)
        return run_blocking(estimate_run(self.config, self.model, self.personas, cluster))


@dataclass(frozen=True)
class _Resume:
    """What a resumed run continues from: its bundle, the targets so far, earlier responses,
    and what the resume changed (recorded in the manifest); a fork's `path` is its parent's
    and `fork` its manifest entry (`results.fork.forked_from`)."""

    path: Path
    targets: list[float]
    memory: pd.DataFrame | None
    changes: dict[str, Any] = dataclasses.field(default_factory=dict)
    fork: dict[str, Any] | None = None


def _targets(rounds: list[dict[str, Any]]) -> list[float]:
    """The targets of finished rounds, as the next round's context carries them."""
    return [float("nan") if r.get("target") is None else float(r["target"]) for r in rounds]


class RoundBar:
    """A tqdm bar over rounds (a widget in notebooks), fed by the run's events."""

    def __init__(self, total: int, label: str, initial: int = 0) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, initial=initial, desc=label, unit="round", leave=True)

    def __call__(self, event: Event) -> None:
        if isinstance(event, RoundFinished):
            stats = event.stats
            parts = []
            if stats.get("n_valid"):  # with none, mean and target are nan: say so instead
                parts = [f"mean={stats['mean']:.2f}", f"target={stats['target']:.2f}"]
            note = round_note(stats)
            if note:
                parts.append(note)
            self.bar.set_postfix_str(", ".join(parts))
            self.bar.update(1)

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()


def run(config: RunConfig | str | Path, **kwargs: Any) -> Bundle:
    """Run a config (object or YAML path) to a bundle: the one-line entry point."""
    if isinstance(config, RunConfig):
        return Simulation(config).run(**kwargs)
    return Simulation.from_yaml(config).run(**kwargs)
