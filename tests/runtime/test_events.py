"""Run events: the bus, the typed records, and following a live run from another process.

The follower is a real second process that knows only the bundle's path: it reads
events.jsonl as the run appends to it, as a restarted dashboard would.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ray import cloudpickle

from workbench.llm.base import ChatResult, report_answered
from workbench.llm.chat_model import ChatModel
from workbench.results import verify_bundle
from workbench.runs import run_state
from workbench.runtime import (
    EventBus,
    LocalBackend,
    RoundFinished,
    RunFinished,
    RunStarted,
    ShardProgress,
    Simulation,
)
from workbench.runtime.events import ShardState, event_from_dict

FOLLOWER = """
import json, sys, time
from pathlib import Path
from workbench.runs import follow
from workbench.results import read_events  # loaded now: the run must not outpace the imports
path = Path(sys.argv[1])
print("ready", flush=True)
while not (path / "events.jsonl").is_file():
    time.sleep(0.02)
for event in follow(path, poll_s=0.02, timeout_s=120):
    print(json.dumps({"seen": time.time(), **event.to_dict()}), flush=True)
"""


def test_the_bus_delivers_in_order_and_survives_a_broken_subscriber() -> None:
    seen: list[str] = []
    bus = EventBus()
    bus.subscribe(lambda e: seen.append(f"a:{e.kind}"))
    bus.subscribe(lambda e: 1 / 0)
    bus.subscribe(lambda e: seen.append(f"b:{e.kind}"))
    with pytest.warns(RuntimeWarning, match="failed on round_finished: ZeroDivisionError"):
        bus.emit(RoundFinished(run_id="r", round=1, stats={"mean": 1.0}))
    bus.emit(RoundFinished(run_id="r", round=2, stats={"mean": 1.0}))  # warned once only
    assert seen == ["a:round_finished", "b:round_finished"] * 2
    assert bus.errors == ["ZeroDivisionError: division by zero"] * 2


def test_events_round_trip_through_json() -> None:
    events = [
        RunStarted(run_id="r", bundle="b", config={}, rounds=2, n_agents=3, backend="local"),
        ShardProgress(run_id="r", round=1, shard=0, agents=3, answered=3, state=ShardState.DONE),
        RoundFinished(run_id="r", round=1, stats={"mean": 2.5}),
        RunFinished(run_id="r", status="complete", rounds_done=2),
    ]
    for event in events:
        assert event_from_dict(json.loads(json.dumps(event.to_dict()))) == event
    assert event_from_dict({"kind": "from_the_future", "run_id": "r"}) is None


def test_a_shard_state_is_typed_and_stays_its_plain_word() -> None:
    """`ShardProgress.state` is a ShardState; events.jsonl holds the plain word, as before, and
    a stored event's word reads back as the member."""
    event = ShardProgress(run_id="r", round=1, shard=0, agents=3)
    assert event.state is ShardState.PLAYING
    assert '"state": "playing"' in json.dumps(event.to_dict())
    stored = {"kind": "shard_progress", "run_id": "r", "round": 1, "shard": 0, "agents": 3}
    read = event_from_dict({**stored, "state": "done"})
    assert isinstance(read, ShardProgress) and read.state is ShardState.DONE
    assert [s.value for s in ShardState] == ["playing", "done", "stopped"]


def _follow_a_run(sim: Simulation, out: Path, run_id: str) -> list[dict]:
    """Play `sim` here while a second process follows its bundle; what the follower printed."""
    bundle = out / run_id
    follower = subprocess.Popen(
        [sys.executable, "-c", FOLLOWER, str(bundle)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follower.stdout is not None
        assert follower.stdout.readline().strip() == "ready"  # imports done: it sees it all live
        sim.run(out_dir=out, run_id=run_id, progress=False)
        stdout, stderr = follower.communicate(timeout=120)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0, stderr
    return [json.loads(line) for line in stdout.splitlines()]


def _assert_live(seen: list[dict], rounds: int, shards: int, latency_s: float) -> None:
    """The follower saw the run live: running -> complete, shards playing before rounds ended."""
    kinds = [e["kind"] for e in seen]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert seen[-1]["status"] == "complete" and seen[-1]["rounds_done"] == rounds
    for number in range(1, rounds + 1):
        progress = [e for e in seen if e["kind"] == "shard_progress" and e["round"] == number]
        finished = next(e for e in seen if e["kind"] == "round_finished" and e["round"] == number)
        playing = [e for e in progress if e["state"] == "playing"]
        done = [e for e in progress if e["state"] == "done"]
        assert sorted(e["shard"] for e in playing) == list(range(shards))
        assert sorted(e["shard"] for e in done) == list(range(shards))
        assert all(e["answered"] == e["agents"] and e["errors"] == {} for e in done)
        assert all(e["pid"] is not None and e["rss_bytes"] for e in done)
        # seen while the round was still going: the agents' latency separates the two
        assert finished["seen"] - min(e["seen"] for e in playing) >= latency_s * 0.8
        assert seen.index(finished) > max(seen.index(e) for e in done)
    lags = [e["seen"] - _epoch(e["at"]) for e in seen]
    assert max(lags) < 5.0, lags  # each event reached the other process within seconds


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


@pytest.mark.slow
def test_another_process_follows_a_live_local_run(make_config, tmp_path: Path) -> None:
    latency = 0.6
    config = make_config(
        policy={"kind": "random", "latency_s": latency}, n_agents=8, rounds=3, agents_per_shard=4
    )
    seen = _follow_a_run(Simulation(config), tmp_path, "followed-local")
    _assert_live(seen, rounds=3, shards=2, latency_s=latency)
    bundle = tmp_path / "followed-local"
    state = run_state(bundle)
    assert (state.true_status, state.rounds_done, len(state.stats)) == ("complete", 3, 3)
    report = verify_bundle(bundle)
    assert report.ok, report.problems
    assert "events.jsonl" in json.loads((bundle / "manifest.json").read_text())["files"]


@pytest.mark.ray
def test_another_process_follows_a_live_ray_run(ray_cluster, make_config, tmp_path: Path) -> None:
    from workbench.config import BackendSpec

    latency = 0.6
    config = make_config(
        policy={"kind": "random", "latency_s": latency}, n_agents=8, rounds=2, agents_per_shard=4
    )
    backend = BackendSpec(kind="ray", address=ray_cluster.address, agents_per_shard=4)
    config = config.model_copy(update={"backend": backend})
    seen = _follow_a_run(Simulation(config), tmp_path, "followed-ray")
    _assert_live(seen, rounds=2, shards=2, latency_s=latency)
    done = [e for e in seen if e["kind"] == "shard_progress" and e["state"] == "done"]
    # the shard actors' own reports: their Ray nodes and processes, not the driver's
    assert {e["pid"] for e in done}.isdisjoint({os.getpid()})
    assert all(e["node"] and e["node"] != "local" for e in done)


def test_a_killed_writer_reads_dead_not_running(make_config, tmp_path: Path) -> None:
    """A run whose process died without finishing is not shown as running forever."""
    config = make_config(policy={"kind": "random", "latency_s": 30}, n_agents=4, rounds=1)
    script = (
        "import sys\n"
        "from workbench.config import RunConfig\n"
        "from workbench.runtime import Simulation\n"
        "config = RunConfig.model_validate_json(sys.argv[1])\n"
        "Simulation(config).run(out_dir=sys.argv[2], run_id='killed', progress=False)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, config.model_dump_json(), tmp_path])
    bundle = tmp_path / "killed"
    try:
        deadline = time.monotonic() + 60
        while not (bundle.is_dir() and run_state(bundle).status == "running"):
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.05)
        assert run_state(bundle).true_status == "running"
    finally:
        proc.kill()
        proc.wait()
    assert run_state(bundle).true_status == "dead"


# --------------------------------------------------------------------------- within a shard


class SlowCounting(ChatModel):
    """Answers one request at a time, reporting each as a real model does."""

    identity = {"engine": "fake", "name": "slow-counting"}

    async def generate(self, requests, params):
        results = []
        for request in requests:
            await asyncio.sleep(0.15)
            result = ChatResult("5", 3, 1)
            report_answered(request, result)
            results.append(result)
        return results


cloudpickle.register_pickle_by_value(sys.modules[__name__])  # SlowCounting goes to Ray actors


def _playing(seen: list, shard_size: int) -> list[ShardProgress]:
    """The "playing" reports caught mid-shard (some agents answered, not all)."""
    partial = [
        e
        for e in seen
        if isinstance(e, ShardProgress) and e.state == "playing" and 0 < e.answered < shard_size
    ]
    for shard in {e.shard for e in partial}:
        counts = [e.answered for e in partial if e.shard == shard]
        assert counts == sorted(counts)  # answers only accumulate
    return partial


@pytest.mark.slow
def test_progress_within_a_shard_as_the_embedded_model_answers(
    embedded_model, make_config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one walk at a time: each group's answers are reported as it finishes (with the default
    # window all six groups' walks go in step and finish within a step of each other)
    monkeypatch.setattr(embedded_model.node_scorer(), "window", 1)
    config = make_config(
        policy={"kind": "llm"}, n_agents=6, rounds=1, agents_per_shard=6, model={"max_tokens": 3}
    )
    backend = LocalBackend(config, embedded_model, progress_every_s=0.05)
    sim = Simulation(config, model=embedded_model, backend=backend)
    seen: list = []
    sim.events.subscribe(seen.append)
    bundle = sim.run(out_dir=tmp_path, progress=False)
    assert bundle.is_complete
    partial = _playing(seen, 6)
    assert partial, [e for e in seen if isinstance(e, ShardProgress)]
    assert all(e.prompt_tokens > 0 and e.node == "local" for e in partial)
    assert {e.pid for e in partial} == {os.getpid()}
    logged = [
        e for e in bundle.events() if e["kind"] == "shard_progress" and e["state"] == "playing"
    ]
    reported = [e for e in seen if isinstance(e, ShardProgress) and e.state == "playing"]
    assert len(logged) == len(reported) >= len(partial) + 1  # the shard's start, then reports


@pytest.mark.ray
def test_ray_shard_actors_report_progress_within_a_shard(
    ray_cluster, make_config, tmp_path: Path
) -> None:
    from workbench.config import BackendSpec
    from workbench.runtime.ray_backend import RayBackend

    config = make_config(policy={"kind": "llm"}, n_agents=8, rounds=1, agents_per_shard=4)
    spec = BackendSpec(
        kind="ray", address=ray_cluster.address, agents_per_shard=4, model_placement="shard"
    )
    config = config.model_copy(update={"backend": spec})
    model = SlowCounting()
    backend = RayBackend(config, model=model)
    backend.progress_every_s = 0.1
    sim = Simulation(config, model=model, backend=backend)
    seen: list = []
    sim.events.subscribe(seen.append)
    assert sim.run(out_dir=tmp_path, progress=False).is_complete
    partial = _playing(seen, 4)
    assert {e.shard for e in partial} == {0, 1}, [e for e in seen if isinstance(e, ShardProgress)]
    assert all(e.pid != os.getpid() and e.node and e.rss_bytes for e in partial)
    assert all(e.prompt_tokens == 3 * e.answered for e in partial)
