"""Runs started from the page: each a detached `workbench run` process, found again from disk.

`launch(config, results_dir)` validates the config (the CLI's ConfigErrors; an LLM model's
`check()`, so an unreachable endpoint fails here, naming its URL, before any process starts),
writes it into `results_dir/.launches/<launch_id>/config.yaml` beside `launch.json` (pid, start
time, command, log) and starts `python -m workbench.cli run config.yaml --out results_dir
--no-progress` in its own session, output to `run.log`. The run then outlives the browser tab
and the dashboard, and its bundle is exactly the CLI's for the same config and seed.

`launches(results_dir)` reads every launch's true state back: its bundle is the one whose
`RunStarted` event carries the launch's pid and host, its status is the bundle's events'
(`RunState.true_status`: a run whose writer died reads failed, never running), and a process
that exited before writing a bundle reads failed with its log's last line. `cancel(...)` sends
SIGINT to a live run's writer (after checking the process really writes that bundle); the CLI
then marks the bundle cancelled. Nothing here holds state in memory that matters: a restarted
dashboard calls `launches()` again. No Panel here; `run_launcher` is the page.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from workbench._files import atomic_write_text
from workbench.config import LLMPolicySpec, RunConfig, save_yaml, validate
from workbench.errors import BundleError, ConfigError, WorkbenchError
from workbench.llm import model_for
from workbench.results import Bundle
from workbench.results.layout import LOCK_FILE
from workbench.runtime.events import RunState, run_state
from workbench.runtime.simulation import Simulation
from workbench.ui.processes import (
    START_SLACK_S,
    is_workbench_run,
    iso_epoch,
    process_alive,
    process_command,
    started_before,
)

__all__ = [
    "LAUNCHES_DIR",
    "Launch",
    "LaunchState",
    "cancel",
    "bundle_state",
    "check_model",
    "error_text",
    "launch",
    "launch_records",
    "launch_state",
    "launches",
    "log_error",
    "run_state_status",
    "running_bundles",
    "validate_launch",
    "wait_for",
]

LAUNCHES_DIR = ".launches"
"""The folder under a results directory that holds one folder per launch (not a bundle)."""
LAUNCH_FILE = "launch.json"
CONFIG_FILE = "config.yaml"
LOG_FILE = "run.log"
EXIT_FILE = "exit.json"
"""Written by the launching process when it reaps the run (its exit code)."""
CANCEL_FILE = "cancel.json"
"""Written by `cancel`: a run interrupted before it wrote a bundle reads cancelled, not failed."""

FINAL = ("complete", "failed", "cancelled")
"""The statuses of a run that is over."""
RESUME = "workbench run --resume"
"""The command that finishes a failed or cancelled bundle (said with every such error)."""
LOG_TAIL_BYTES = 16_384
"""How much of a run's log is read for its last error line."""

# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Launch:
    """One started run, as `launch.json` records it (JSON, never pickle)."""

    launch_id: str
    folder: Path
    pid: int
    host: str
    started_at: str
    config_path: Path
    log_path: Path
    command: tuple[str, ...]
    name: str
    rounds: int
    bundle: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON data."""
        return {
            "launch_id": self.launch_id,
            "pid": self.pid,
            "host": self.host,
            "started_at": self.started_at,
            "config": str(self.config_path),
            "log": str(self.log_path),
            "command": list(self.command),
            "name": self.name,
            "rounds": self.rounds,
            "bundle": None if self.bundle is None else str(self.bundle),
        }

    @classmethod
    def read(cls, folder: str | Path) -> Launch:
        """The launch recorded in `folder`; BundleError when its launch.json is unreadable."""
        folder = Path(folder)
        try:
            data = json.loads((folder / LAUNCH_FILE).read_text(encoding="utf-8"))
            return cls(
                launch_id=str(data["launch_id"]),
                folder=folder,
                pid=int(data["pid"]),
                host=str(data["host"]),
                started_at=str(data["started_at"]),
                config_path=Path(data["config"]),
                log_path=Path(data["log"]),
                command=tuple(str(a) for a in data["command"]),
                name=str(data["name"]),
                rounds=int(data["rounds"]),
                bundle=None if data.get("bundle") is None else Path(data["bundle"]),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BundleError(
                f"{folder / LAUNCH_FILE}: not a readable launch record ({type(exc).__name__}: "
                f"{exc}); delete the folder if the launch is of no use"
            ) from None

    def save(self) -> None:
        """Write launch.json atomically."""
        atomic_write_text(self.folder / LAUNCH_FILE, json.dumps(self.to_dict(), indent=2))


@dataclass
class LaunchState:
    """A launch's true state now: starting (no bundle yet), running, complete, failed or
    cancelled; the bundle's events (`run`) once it has one; the error of a run that did not
    complete."""

    launch: Launch | None
    status: str
    bundle: Path | None = None
    run: RunState | None = None
    error: str | None = None
    rounds_done: int = 0
    rounds: int = 0

    @property
    def returncode(self) -> int | None:
        """The launch's process exit code once it exited and was reaped here (exit.json)."""
        if self.launch is None:
            return None
        try:
            data = json.loads((self.launch.folder / EXIT_FILE).read_text(encoding="utf-8"))
            return int(data["returncode"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @property
    def finished(self) -> bool:
        """Whether the run is over (complete, failed or cancelled)."""
        return self.status in FINAL

    @property
    def launch_id(self) -> str | None:
        """The launch's id (None for a bundle started elsewhere)."""
        return None if self.launch is None else self.launch.launch_id


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


T = TypeVar("T")


# --------------------------------------------------------------------------- launching


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end from sync code, on a helper thread inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def check_model(config: RunConfig) -> str:
    """Check the model an LLM run would ask, as the run does before writing anything: an
    OpenAI-compatible endpoint answers and serves the name, a replay bundle reads, the
    embedded model file exists. Returns what was checked; raises its WorkbenchError
    (ModelError naming the URL for an unreachable endpoint)."""
    if not isinstance(config.policy, LLMPolicySpec):
        return f"policy {config.policy.kind}: no model needed"
    model = model_for(config)
    try:
        run_coroutine(model.check())
    finally:
        model.close()
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


def validate_launch(config: RunConfig, results_dir: str | Path, *, model: bool = True) -> Path:
    """Everything `workbench run` would refuse before writing, refused here first: the config
    (re-validated), the population's columns, the shard size, the results folder and, with
    `model`, the model's `check()`. Returns the results folder (absolute)."""
    config = validate(RunConfig, config.model_dump(mode="json"), "run config")
    results = Path(results_dir).expanduser().absolute()
    for parent in (results, *results.parents):
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"results_dir: {parent} is a file, not a folder; name a folder")
            if not os.access(parent, os.W_OK):
                raise ConfigError(f"results_dir: {parent} is not writable; name another folder")
            break
    Simulation(config).check()
    config.backend.shard_size(config.n_agents)
    if model:
        check_model(config)
    return results


def _child_sigint_default() -> None:  # runs in the child between fork and exec
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def launch(config: RunConfig, results_dir: str | Path, *, check: bool = True) -> Launch:
    """Start `config` as a detached `workbench run` into `results_dir`; returns its record.

    Validates first (`validate_launch`; `check=False` skips only the model check): an invalid
    config or an unreachable model raises its WorkbenchError, and then nothing is written and
    no process starts. The process runs in its own session, so it lives on when the page or
    the dashboard goes away; `cancel` interrupts it.
    """
    results = validate_launch(config, results_dir, model=check)
    stamp = datetime.now(UTC)
    launch_id = f"{config.name}-{stamp:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
    folder = results / LAUNCHES_DIR / launch_id
    folder.mkdir(parents=True)
    config_path = save_yaml(config, folder / CONFIG_FILE)
    log_path = folder / LOG_FILE
    command = (sys.executable, "-m", "workbench.cli", "run", str(config_path))
    command += ("--out", str(results), "--no-progress")
    # A child inherits an ignored SIGINT (a dashboard under nohup) and then cancel could not
    # reach it: only then is the default restored in the child.
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
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


# --------------------------------------------------------------------------- reading back


def log_error(path: str | Path) -> str | None:
    """The last non-empty line of a run's log (its error: the CLI's `error: ...` line or a
    traceback's last line), without the `error: ` prefix; None for an empty or missing log."""
    try:
        with Path(path).open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - LOG_TAIL_BYTES))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1].removeprefix("error: ") if lines else None


def _first_event(bundle: Path) -> dict[str, Any] | None:
    """The first event line of a bundle's events.jsonl (the run's RunStarted), cheaply."""
    try:
        with (bundle / "events.jsonl").open("rb") as handle:
            line = handle.readline(1 << 20)
    except OSError:
        return None
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _find_bundle(record: Launch, results: Path) -> Path | None:
    """The bundle under `results` that this launch's process writes: named after its config,
    begun after it, with a RunStarted carrying its pid and host."""
    since = iso_epoch(record.started_at) or 0.0
    for path in sorted(results.glob(f"{record.name}-*"), reverse=True):
        try:
            if not path.is_dir() or path.stat().st_mtime < since - START_SLACK_S:
                continue
        except OSError:
            continue
        first = _first_event(path)
        if (
            first is not None
            and first.get("kind") == "run_started"
            and first.get("pid") == record.pid
            and first.get("host") == record.host
            and (iso_epoch(first.get("at")) or 0.0) >= since - START_SLACK_S
        ):
            return path
    return None


def _dead_error(state: RunState, bundle: Path) -> str:
    return (
        f"the run's process (pid {state.pid}) died without finishing after "
        f"{state.rounds_done} of {state.rounds} rounds; resume it with {RESUME} {bundle}"
    )


def _manifest_finished(bundle: Path) -> bool:
    """Whether the bundle's manifest holds its final status and file hashes (written after
    the run's last event)."""
    try:
        return Bundle.open(bundle).is_finished
    except BundleError:
        return False


def run_state_status(
    state: RunState, bundle: str | Path, launch: Launch | None = None
) -> LaunchState:
    """A LaunchState from a bundle's RunState: a dead writer reads failed (with the resume
    command), a bundle without events yet reads starting."""
    bundle = Path(bundle)
    status, error = state.true_status, state.error
    if status == "dead":
        status, error = "failed", _dead_error(state, bundle)
    elif status == "unknown":
        status = "starting"
    elif status in FINAL and not _manifest_finished(bundle):
        # the last event is written before the manifest's hashes: the run is finishing
        if state.writer_alive is False:
            status, error = "failed", _dead_error(state, bundle)
        else:
            status = "running"
    if status in ("failed", "cancelled") and RESUME not in (error or ""):
        error = (
            f"{error or status} after {state.rounds_done} of {state.rounds} rounds; "
            f"resume it with {RESUME} {bundle}"
        )
    return LaunchState(
        launch=launch,
        status=status,
        bundle=bundle,
        run=state,
        error=error,
        rounds_done=state.rounds_done,
        rounds=state.rounds or (launch.rounds if launch else 0),
    )


def bundle_state(bundle: str | Path, launch: Launch | None = None) -> LaunchState:
    """The true state of a bundle's run from its events (a dead writer reads failed)."""
    return run_state_status(run_state(bundle), bundle, launch)


def launch_state(record: Launch) -> LaunchState:
    """A launch's true state now (its bundle found and remembered in launch.json)."""
    bundle = record.bundle
    if bundle is None:
        bundle = _find_bundle(record, record.folder.parent.parent)
        if bundle is not None:
            with contextlib.suppress(OSError):
                replace(record, bundle=bundle).save()
    alive = _launch_alive(record)
    if bundle is not None:
        state = bundle_state(bundle, record)
        if state.status == "starting" and not alive:
            state.status, state.error = "failed", log_error(record.log_path)
        return state
    if alive:
        return LaunchState(launch=record, status="starting", rounds=record.rounds)
    if (record.folder / CANCEL_FILE).exists():
        error = log_error(record.log_path) or "cancelled before the run started"
        return LaunchState(launch=record, status="cancelled", error=error, rounds=record.rounds)
    error = log_error(record.log_path) or "the run's process exited before writing a bundle"
    return LaunchState(launch=record, status="failed", error=error, rounds=record.rounds)


def _launch_alive(record: Launch) -> bool:
    """Whether the launch's own process is still running: its pid, alive, with the launch's
    exact command line (which names the launch's own config file, so no reused pid has it)."""
    process = _REAPERS.get(record.pid)
    if process is not None:
        return process.poll() is None
    if record.host != socket.gethostname() or not process_alive(record.pid):
        return False
    command = process_command(record.pid)
    return command is None or command == record.command


def launch_records(results_dir: str | Path) -> list[Launch]:
    """The launch records under `results_dir`, newest first (unreadable ones skipped)."""
    root = Path(results_dir).absolute() / LAUNCHES_DIR
    records = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if folder.is_dir():
            try:
                records.append(Launch.read(folder))
            except BundleError:
                continue
    return sorted(records, key=lambda r: (r.started_at, r.launch_id), reverse=True)


def launches(results_dir: str | Path, limit: int | None = None) -> list[LaunchState]:
    """Every launch under `results_dir` with its true state, newest first (at most `limit`).

    Unreadable launch records are skipped; a missing folder gives none.
    """
    return [launch_state(record) for record in launch_records(results_dir)[:limit]]


def running_bundles(results_dir: str | Path) -> list[Path]:
    """Bundles under `results_dir` whose run is live now (started anywhere on this host),
    newest first: a writer lock held by a live process."""
    root = Path(results_dir)
    found = []
    for path in sorted(root.iterdir(), reverse=True) if root.is_dir() else []:
        if path.name.startswith(".") or not (path / LOCK_FILE).is_file():
            continue
        if bundle_state(path).status == "running":
            found.append(path)
    return found


# --------------------------------------------------------------------------- cancelling


def _lock_holder(bundle: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((bundle / LOCK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _writer_pid(bundle: Path) -> int:
    """The pid of the live process writing `bundle`; BundleError unless its run is running,
    on this host, and the process holding the writer lock is the run's own."""
    state = run_state(bundle)
    if state.status != "running":
        raise BundleError(f"{bundle}: the run is {state.status}; nothing to cancel")
    if state.pid is None or state.host != socket.gethostname():
        raise BundleError(
            f"{bundle}: written by pid {state.pid} on host {state.host}; cancel it there"
        )
    holder = _lock_holder(bundle)
    if (
        not process_alive(state.pid)
        or holder is None
        or holder.get("pid") != state.pid
        or not started_before(state.pid, holder.get("started_at"))
        or not is_workbench_run(process_command(state.pid))
    ):
        raise BundleError(
            f"{bundle}: its writer (pid {state.pid}) is no longer running; nothing to cancel "
            f"(resume it with workbench run --resume {bundle})"
        )
    return state.pid


def cancel(target: Launch | LaunchState | str | Path) -> int:
    """Interrupt a live run (SIGINT, as Ctrl-C): the CLI marks its bundle cancelled (a run
    interrupted before its bundle exists writes none). `target` is a launch, its state, a
    launch folder or a bundle folder. Returns the pid signalled; BundleError when the run is
    not live on this host or the process is not the run's."""
    if isinstance(target, LaunchState):
        target = target.launch if target.launch is not None else target.bundle or Path()
    if isinstance(target, str | Path):
        path = Path(target)
        if (path / LAUNCH_FILE).is_file():
            target = Launch.read(path)
        elif (path / "events.jsonl").is_file() or (path / "manifest.json").is_file():
            return _interrupt(_writer_pid(path), str(path))
        else:
            raise ConfigError(f"cancel: {path} is neither a launch folder nor a result bundle")
    record = target
    state = launch_state(record)
    if state.finished:
        raise BundleError(
            f"launch {record.launch_id}: the run is {state.status}; nothing to cancel"
        )
    if state.bundle is not None and state.status == "running":
        pid = _writer_pid(state.bundle)
    else:  # no bundle yet: the launch's own process, if it still is that process
        pid = record.pid
        if not _launch_alive(record):
            raise BundleError(f"launch {record.launch_id}: its process is no longer running")
    atomic_write_text(
        record.folder / CANCEL_FILE,
        json.dumps({"pid": pid, "at": datetime.now(UTC).isoformat()}),
    )
    return _interrupt(pid, f"launch {record.launch_id}")


def _interrupt(pid: int, what: str) -> int:
    """SIGINT to `pid`; BundleError when it is gone or not ours to signal."""
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        raise BundleError(f"{what}: its process (pid {pid}) ended meanwhile") from None
    except PermissionError:
        raise BundleError(
            f"{what}: its process (pid {pid}) belongs to another user; cancel it as that user"
        ) from None
    return pid


def wait_for(
    results_dir: str | Path, launch_id: str, *, timeout_s: float = 120.0, poll_s: float = 0.2
) -> LaunchState:
    """Poll `launches()` until the launch is finished; its state (TimeoutError after
    `timeout_s`). For scripts and tests; the page polls on its own."""
    deadline = time.monotonic() + timeout_s
    while True:
        for state in launches(results_dir):
            if state.launch_id == launch_id and state.finished:
                return state
        if time.monotonic() > deadline:
            raise TimeoutError(f"launch {launch_id} not finished within {timeout_s} s")
        time.sleep(poll_s)


def error_text(exc: BaseException) -> str:
    """A WorkbenchError's own message (what the CLI prints after `error: `)."""
    return str(exc) if isinstance(exc, WorkbenchError) else f"{type(exc).__name__}: {exc}"
