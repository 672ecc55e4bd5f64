"""Model actors on Ray: one model per GPU, per node or per cluster, shared by the shard actors.

The session's two-node cluster declares three GPUs (two on the head), so `gpu` placement starts
three real model actors that Ray gives distinct devices. A model object handed to `Simulation`
runs in a model actor on Ray; one that Ray cannot send, or that fails to load, is an error
before anything is written; a model actor killed mid-round is restarted and its calls retried.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time

import pytest
from ray import cloudpickle

from workbench.agents.shard import RoundContext
from workbench.config import BackendSpec, ModelSpec, RunConfig, validate
from workbench.errors import ConfigError, ModelError
from workbench.llm.base import ChatResult
from workbench.llm.chat_model import ChatModel
from workbench.runtime import Simulation
from workbench.runtime.model_actors import (
    EngineSlot,
    engine_for,
    gpus_per_engine,
    plan_engines,
    resolve_placement,
)
from workbench.runtime.ray_backend import RayBackend

# the fake models below travel to Ray workers by value (workers cannot import test modules)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


class AgentIdModel(ChatModel):
    """Answers each agent's id; `delay_s` keeps every call in flight that long."""

    identity = {"engine": "fake", "name": "agent-id"}

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s

    async def generate(self, requests, params):
        await asyncio.sleep(self.delay_s)
        return [ChatResult(str(r.agent_id), 5, 1) for r in requests]


class LockedModel(AgentIdModel):
    """Holds a lock, which no pickler can send to another process."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()


class BrokenModel(AgentIdModel):
    """Fails to load, as a model whose weights are missing on a worker would."""

    def load(self) -> None:
        raise FileNotFoundError("weights.gguf is not on this node")


def on_ray(config: RunConfig, cluster, **backend) -> RunConfig:
    spec = validate(BackendSpec, {"kind": "ray", "address": cluster.address, **backend}, "backend")
    return config.model_copy(update={"backend": spec})


def llm_config(make_config, **kwargs) -> RunConfig:
    return make_config(policy={"kind": "llm"}, **kwargs)


class Probe(RayBackend):
    """A RayBackend that records where its model actors and shard actors run."""

    engines_at: list[dict]
    shards_at: list[dict]

    async def start(self, shards) -> None:
        await super().start(shards)
        self.engines_at = await self.engine_placement()
        self.shards_at = await self.placement()


# --------------------------------------------------------------------------- placement rules


def test_auto_placement_follows_the_model_kind(make_config) -> None:
    def placement(model=None, given=False, **backend):
        config = make_config(policy={"kind": "llm"}, model=model)
        spec = BackendSpec(kind="ray", **backend)
        return resolve_placement(config.model_copy(update={"backend": spec}), given)

    assert placement() == "node"  # embedded: the shards of a node share one engine
    assert placement({"kind": "vllm", "name": "m"}) == "gpu"
    assert placement({"kind": "openai", "base_urls": ["http://h/v1"], "name": "m"}) == "cluster"
    assert placement({"kind": "replay", "bundle": "b"}) == "node"
    assert placement(given=True) == "cluster"
    assert placement({"kind": "vllm", "name": "m"}, model_placement="node") == "node"


def test_one_model_actor_per_gpu_and_shards_ask_one_on_their_node() -> None:
    nodes = {"a": {"CPU": 8, "GPU": 2}, "b": {"CPU": 8, "GPU": 1}, "c": {"CPU": 8}}
    slots = plan_engines("gpu", nodes)
    assert slots == [EngineSlot("a", 1), EngineSlot("a", 1), EngineSlot("b", 1)]
    assert [engine_for("a", i, slots) for i in range(4)] == [0, 1, 0, 1]
    assert [engine_for("b", i, slots) for i in range(2)] == [2, 2]
    assert [engine_for("c", i, slots) for i in range(3)] == [0, 1, 2]  # no GPU: any engine
    assert engine_for("c", 0, slots, alive={"b", "c"}) == 2  # never one on a dead node
    assert plan_engines("node", nodes) == [EngineSlot("a"), EngineSlot("b"), EngineSlot("c")]
    assert plan_engines("cluster", nodes, driver_node="b") == [EngineSlot("b")]
    assert plan_engines("shard", nodes) == []


def test_gpu_placement_without_gpus_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"backend\.model_placement: gpu needs 1 GPU.*at most 0"):
        plan_engines("gpu", {"a": {"CPU": 2}})


def test_a_tensor_parallel_engine_holds_several_gpus(make_config) -> None:
    model = {"kind": "vllm", "name": "m", "engine_args": {"tensor_parallel_size": 2}}
    config = make_config(policy={"kind": "llm"}, model=model)
    assert gpus_per_engine(config) == 2
    nodes = {"a": {"GPU": 8}, "b": {"GPU": 3}}
    slots = plan_engines("gpu", nodes, gpus_per_engine=2)
    assert slots == [EngineSlot("a", 2)] * 4 + [EngineSlot("b", 2)]
    with pytest.raises(ConfigError, match=r"needs 4 GPU\(s\) on one node.*at most 3"):
        plan_engines("gpu", {"b": {"GPU": 3}}, gpus_per_engine=4)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ({"engine_args": {"max_model_len": 4096}}, "engine_args is for kind vllm"),
        (
            {"kind": "vllm", "name": "m", "engine_args": {"tensor_parallel_size": 0}},
            r"engine_args\.tensor_parallel_size must be a whole number >= 1",
        ),
    ],
)
def test_bad_engine_args_name_the_field(model, message) -> None:
    with pytest.raises(ConfigError, match=message):
        validate(ModelSpec, model, "model")


def test_model_placement_is_for_ray_only(make_config) -> None:
    data = make_config().model_dump(mode="json")
    data["backend"] = {"model_placement": "node"}
    with pytest.raises(ConfigError, match=r"model_placement is for kind: ray"):
        validate(RunConfig, data, "run.yaml")


# --------------------------------------------------------------------------- on a real cluster


@pytest.mark.ray
def test_a_given_model_object_answers_from_one_model_actor(ray_cluster, make_config, tmp_path):
    config = on_ray(llm_config(make_config, n_agents=8, rounds=2), ray_cluster, shards_per_node=1)
    backend = Probe(config, model=AgentIdModel())
    sim = Simulation(config, model=AgentIdModel(), backend=backend)
    bundle = sim.run(out_dir=tmp_path, progress=False)
    frame = bundle.responses()
    assert (frame["guess"] == frame["agent_id"]).all()  # the object answered, not SmolLM2
    drawn_by = ("answers", "sampling_law")
    assert {k: v for k, v in bundle.manifest["model"].items() if k not in drawn_by} == (
        AgentIdModel.identity
    )
    assert bundle.manifest["backend"]["model_placement"] == "cluster"
    assert bundle.manifest["backend"]["model_actors"] == 1
    assert {p["model"] for p in backend.shards_at} == {"RemoteModel"}
    assert len({p["node_id"] for p in backend.shards_at}) == 2  # shards on both nodes ask it


@pytest.mark.ray
def test_a_given_model_object_can_live_in_every_shard_actor(ray_cluster, make_config, tmp_path):
    config = on_ray(
        llm_config(make_config, n_agents=6, rounds=1),
        ray_cluster,
        shards_per_node=1,
        model_placement="shard",
    )
    backend = Probe(config, model=AgentIdModel())
    bundle = Simulation(config, model=AgentIdModel(), backend=backend).run(
        out_dir=tmp_path, progress=False
    )
    frame = bundle.responses()
    assert (frame["guess"] == frame["agent_id"]).all()
    assert [p["model"] for p in backend.shards_at] == ["AgentIdModel"] * 2  # a copy in each
    assert bundle.manifest["backend"]["model_actors"] == 0


@pytest.mark.ray
def test_to_dist_keeps_the_given_model(ray_cluster, make_config, tmp_path):
    sim = Simulation(llm_config(make_config, n_agents=4, rounds=1), model=AgentIdModel())
    dist = sim.to_dist(ray_cluster.address, shards_per_node=1)
    frame = dist.run(out_dir=tmp_path, progress=False).responses()
    assert (frame["guess"] == frame["agent_id"]).all()


@pytest.mark.ray
def test_a_model_ray_cannot_send_is_a_config_error_before_writing(
    ray_cluster, make_config, tmp_path
):
    config = on_ray(llm_config(make_config, n_agents=4), ray_cluster, shards_per_node=1)
    for placement in ("shard", "cluster"):
        spec = config.backend.model_copy(update={"model_placement": placement})
        sim = Simulation(config.model_copy(update={"backend": spec}), model=LockedModel())
        with pytest.raises(ConfigError, match=r"Simulation\(model=\.\.\.\): LockedModel cannot"):
            sim.run(out_dir=tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


@pytest.mark.ray
def test_a_model_that_fails_to_load_fails_before_writing(ray_cluster, make_config, tmp_path):
    config = on_ray(llm_config(make_config, n_agents=4), ray_cluster, shards_per_node=1)
    sim = Simulation(config, model=BrokenModel())
    with pytest.raises(ModelError, match=r"a model actor failed to start: .*weights\.gguf"):
        sim.run(out_dir=tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


@pytest.mark.ray
def test_gpus_held_by_another_job_are_a_config_error_not_a_hang(ray_cluster, make_config, tmp_path):
    import ray

    @ray.remote(num_gpus=1, num_cpus=0)
    class GpuHolder:
        def ready(self) -> bool:
            return True

    holder = GpuHolder.remote()
    try:
        ray.get(holder.ready.remote(), timeout=60)
        config = on_ray(
            llm_config(make_config, n_agents=4),
            ray_cluster,
            shards_per_node=1,
            model_placement="gpu",
        )
        with pytest.raises(ConfigError, match=r"need 3 GPU\(s\) and 2 are free"):
            Simulation(config).run(out_dir=tmp_path / "out", progress=False)
    finally:
        ray.kill(holder)
        deadline = time.monotonic() + 60  # Ray frees the GPU a moment after the kill
        while ray.available_resources().get("GPU", 0) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
    assert not (tmp_path / "out").exists()


@pytest.mark.ray
@pytest.mark.slow
def test_one_embedded_model_actor_per_gpu_serves_the_shards_on_its_node(
    ray_cluster, make_config, tmp_path
):
    model = {"max_tokens": 4, "n_threads": 1}
    config = llm_config(make_config, n_agents=8, rounds=2, model=model)
    ray_config = on_ray(config, ray_cluster, shards_per_node=2, model_placement="gpu")
    backend = Probe(ray_config)
    bundle = Simulation(ray_config, backend=backend).run(out_dir=tmp_path / "ray", progress=False)

    engines = backend.engines_at
    assert len(engines) == 3  # one per declared GPU: two on the head, one on the other node
    by_node: dict[str, list[str]] = {}
    for engine in engines:
        assert len(engine["gpu_ids"]) == 1
        by_node.setdefault(engine["node_id"], []).append(engine["gpu_ids"][0])
    assert sorted(len(ids) for ids in by_node.values()) == [1, 2]
    assert all(len(set(ids)) == len(ids) for ids in by_node.values())  # distinct devices
    assert len(ray_cluster.list_all_nodes()) == 2
    for shard in backend.shards_at:
        assert shard["model"] == "RemoteModel"
        assert engines[shard["engine"]]["node_id"] == shard["node_id"]  # asks its own node's
    frame = bundle.responses()
    assert len(frame) == 16 and (frame["status"] == "ok").all()
    assert bundle.manifest["backend"]["model_actors"] == 3
    assert bundle.manifest["model"]["engine"] == "llama.cpp"

    local = Simulation(config).run(out_dir=tmp_path / "local", progress=False).responses()
    columns = ["agent_id", "round", "guess", "status", "raw"]
    assert local[columns].equals(frame[columns])  # the same batches, so the same answers


class EngineKiller(Probe):
    """Kills the model actor's process half a second into round 2."""

    killed: dict | None = None
    after: list[dict] | None = None

    async def play_round(self, ctx: RoundContext, emit=None):
        if ctx.round != 2:
            return await super().play_round(ctx, emit)
        (engine,) = await self.engine_placement()

        async def kill() -> None:
            await asyncio.sleep(0.5)
            os.kill(engine["pid"], signal.SIGKILL)
            self.killed = engine

        killing = asyncio.create_task(kill())
        tables = await super().play_round(ctx, emit)
        await killing
        self.after = await self.engine_placement()
        return tables


@pytest.mark.ray
def test_a_model_actor_killed_mid_round_is_restarted_and_its_calls_retried(
    ray_cluster, make_config, tmp_path
):
    config = on_ray(llm_config(make_config, n_agents=6, rounds=2), ray_cluster, shards_per_node=1)
    model = AgentIdModel(delay_s=2.0)
    backend = EngineKiller(config, model=model)
    sim = Simulation(config, model=model, backend=backend)

    async def run() -> object:
        return await asyncio.wait_for(sim.arun(out_dir=tmp_path, progress=False), timeout=120)

    bundle = asyncio.run(run())
    assert backend.killed is not None and backend.after is not None
    assert backend.after[0]["pid"] != backend.killed["pid"]  # a new process took over
    frame = bundle.responses()
    assert len(frame) == 12 and (frame["status"] == "ok").all()
    assert (frame["guess"] == frame["agent_id"]).all()
