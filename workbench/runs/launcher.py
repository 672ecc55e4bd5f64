"""Start a run as a detached `workbench run` process with a run id chosen here.

`launch(config, results_dir)` refuses first whatever `workbench run` refuses before writing
(the run's own `Simulation.preflight`: an unreachable endpoint naming its URL, a prompt too long
for the context) and a launch over the limits, before any process starts; then writes the config
into `results_dir/.launches/<run_id>/config.yaml` beside `launch.json` (pid, start time,
command) and starts `python -m workbench.cli run config.yaml --out results_dir --run-id <run_id>
--no-progress` in its own session, output to `run.log`. The run outlives the page and the
dashboard; its bundle is `results_dir/<run_id>`, known before it starts (no searching), and is
exactly the CLI's for the same config and seed.

Limits: at most `max_live` launches running at once in one results folder and at most
`max_agent_rounds` agent-rounds (n_agents x rounds) per launch, unless the owner raises them
(keyword arguments; the module constants are the defaults).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from workbench._files import atomic_write_text
from workbench.config import LLMPolicySpec, RunConfig, save_yaml, validate
from workbench.errors import ConfigError
from workbench.results import new_run_id
from workbench.runs.limits import MAX_AGENT_ROUNDS, MAX_LIVE_LAUNCHES
from workbench.runs.records import CONFIG_FILE, EXIT_FILE, LAUNCHES_DIR, LOG_FILE, Launch
from workbench.runtime.blocking import run_blocking
from workbench.runtime.estimate import RunEstimate
from workbench.runtime.simulation import Simulation

__all__ = [
    "MAX_AGENT_ROUNDS",
    "MAX_LIVE_LAUNCHES",
    "check_limits",
    "check_model",
    "estimate_launch",
    "launch",
    "run_coroutine",
    "validate_launch",
]


run_coroutine = run_blocking
"""Run a coroutine to its end from sync code (`runtime.blocking.run_blocking`)."""


def check_model(config: RunConfig) -> str:
    """Check a launch of `config` as the run checks itself before writing anything: its own
    `Simulation.preflight` with the model (it answers and serves the name, a replay bundle
    reads, the longest prompt fits the context, an exact distribution's model, the estimate
    under max_estimated_seconds). Returns what was checked; raises its WorkbenchError
    (ModelError naming the URL for an unreachable endpoint, ConfigError naming the key)."""
    _preflight(config, model=True)
    if not isinstance(config.policy, LLMPolicySpec):
        return f"policy {config.policy.kind}: no model needed"
    spec = config.model
    if config.models:
        return f"{len(config.models)} models answer: {', '.join(sorted(config.models))}"
    if spec.kind == "openai":
        return f"reachable: {', '.join(spec.base_urls)} serve {spec.name}"
    if spec.kind == "replay":
        return f"replay of {spec.bundle} reads"
    if spec.kind == "vllm":
        return f"vLLM engine {spec.name} (loaded in the run's process)"
    return f"embedded model {spec.path or 'SmolLM2-135M (shipped)'} found"


def estimate_launch(config: RunConfig) -> RunEstimate:
    """What a launch of `config` would cost (`workbench run CONFIG --estimate`): its model
    checked and loaded in this process, round 1's distinct prompts walked on it; blocking.
    The model is closed after (a page must not keep an engine it does not run)."""
    with _simulation(config) as sim:
        return sim.estimate()


def check_limits(
    config: RunConfig,
    results_dir: str | Path,
    *,
    max_live: int = MAX_LIVE_LAUNCHES,
    max_agent_rounds: int = MAX_AGENT_ROUNDS,
) -> None:
    """Refuse a launch over the limits (ConfigError naming the limit and how to raise it):
    more than `max_live` launches running in `results_dir`, or n_agents x game.rounds over
    `max_agent_rounds`."""
    from workbench.runs.launch_states import live_launches

    size = config.n_agents * config.game.rounds
    if size > max_agent_rounds:
        raise ConfigError(
            f"n_agents x game.rounds: {config.n_agents:,} x {config.game.rounds:,} = {size:,} "
            f"agent-rounds is over this launcher's limit of {max_agent_rounds:,}; lower "
            "n_agents or game.rounds, or have the owner raise the limit (`workbench dashboard "
            "--max-agent-rounds N`, `launch(..., max_agent_rounds=N)`), or run it from a "
            "shell with `workbench run`"
        )
    live = live_launches(results_dir)
    if len(live) >= max_live:
        names = ", ".join(str(s.launch_id) for s in live)
        raise ConfigError(
            f"launches: {len(live)} runs are already running in {results_dir} ({names}), the "
            f"limit is {max_live}; wait for one to end or cancel it, or have the owner raise "
            "the limit (`workbench dashboard --max-live-runs N`, `launch(..., max_live=N)`)"
        )


def validate_launch(config: RunConfig, results_dir: str | Path, *, model: bool = True) -> Path:
    """Everything `workbench run` would refuse before writing, refused here first: the config
    (re-validated), the results folder and the run's own `Simulation.preflight` (with
    `model`: the model answers, the prompts fit its context, the estimate is under
    max_estimated_seconds). Returns the results folder (absolute)."""
    config = validate(RunConfig, config.model_dump(mode="json"), "run config")
    results = Path(results_dir).expanduser().absolute()
    for parent in (results, *results.parents):
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"results_dir: {parent} is a file, not a folder; name a folder")
            if not os.access(parent, os.W_OK):
                raise ConfigError(f"results_dir: {parent} is not writable; name another folder")
            break
    _preflight(config, model=model)
    return results


def _preflight(config: RunConfig, *, model: bool) -> None:
    """The run's own refusals (`Simulation.preflight`), here, before any process starts."""
    with _simulation(config, model=model) as sim:
        sim.preflight(model=model)


@contextlib.contextmanager
def _simulation(config: RunConfig, *, model: bool = True) -> Iterator[Simulation]:
    """A Simulation of `config` for checking or estimating in this process; with `model`, its
    model is closed after (a page must not keep an engine it does not run)."""
    sim = Simulation(config)
    try:
        yield sim
    finally:
        if model and sim.model is not None:
            sim.model.close()


_REAPERS: dict[int, subprocess.Popen[bytes]] = {}
"""Runs this process started, by pid, until reaped (a zombie must not pass for a live run)."""


def _reap(process: subprocess.Popen[bytes], folder: Path) -> None:
    """Wait for a run this process started and record its exit code in exit.json."""
    code = process.wait()
    _REAPERS.pop(process.pid, None)
    with contextlib.suppress(OSError):
        atomic_write_text(
            folder / EXIT_FILE,
            json.dumps({"returncode": code, "at": datetime.now(UTC).isoformat()}),
        )


def _child_sigint_default() -> None:  # runs in the child between fork and exec
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _new_launch_id(results: Path, name: str) -> str:
    """A run id no bundle and no launch under `results` has yet."""
    while True:
        run_id = new_run_id(name)
        if not (results / run_id).exists() and not (results / LAUNCHES_DIR / run_id).exists():
            return run_id


def launch(
    config: RunConfig,
    results_dir: str | Path,
    *,
    check: bool = True,
    max_live: int = MAX_LIVE_LAUNCHES,
    max_agent_rounds: int = MAX_AGENT_ROUNDS,
) -> Launch:
    """Start `config` as a detached `workbench run` into `results_dir`; returns its record.

    Validates first (`validate_launch`; `check=False` skips only the model check) and checks
    the limits (`check_limits`): then an invalid config, an unreachable model or a launch over
    a limit raises its WorkbenchError, nothing is written and no process starts. The process
    runs in its own session, so it lives on when the page or the dashboard goes away;
    `runs.cancel` interrupts it.
    """
    results = validate_launch(config, results_dir, model=check)
    check_limits(config, results, max_live=max_live, max_agent_rounds=max_agent_rounds)
    launch_id = _new_launch_id(results, config.name)
    folder = results / LAUNCHES_DIR / launch_id
    folder.mkdir(parents=True)
    config_path = save_yaml(config, folder / CONFIG_FILE)
    log_path = folder / LOG_FILE
    command = (sys.executable, "-m", "workbench.cli", "run", str(config_path))
    command += ("--out", str(results), "--run-id", launch_id, "--no-progress")
    # A child inherits an ignored SIGINT (a dashboard under nohup) and then cancel could not
    # reach it: only then is the default restored in the child.
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    stamp = datetime.now(UTC)  # the record's time: its process starts just after
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=_child_sigint_default if ignored else None,
        )
    record = Launch(
        launch_id=launch_id,
        folder=folder,
        pid=process.pid,
        host=socket.gethostname(),
        started_at=stamp.isoformat(timespec="milliseconds"),
        config_path=config_path,
        log_path=log_path,
        command=command,
        name=config.name,
        rounds=config.game.rounds,
    )
    record.save()
    _REAPERS[process.pid] = process
    threading.Thread(target=_reap, args=(process, folder), daemon=True).start()
    return record
