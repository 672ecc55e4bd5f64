"""`workbench bench cluster` (issue 38): one real run, its rounds' prompts rebuilt and counted per
engine under the division by shard and under the plan, and (`--ray`) the plan as a Ray cluster
executes it. Numbers are reported, not asserted; the counts' invariants are."""

from __future__ import annotations

import json

import pytest

from workbench.errors import ConfigError


def test_cluster_bench_counts_every_distinct_prompt_once_under_the_plan(
    embedded_model, tmp_path
) -> None:
    from workbench.agents.prompts import Prompts
    from workbench.agents.shard import RoundContext, split_into_shards
    from workbench.bench.cluster import cluster_bench, report_dict, report_text, round_prompts
    from workbench.llm.routes import prompt_key
    from workbench.results import Bundle

    report = cluster_bench(n=200, rounds=2, nodes=["2", "4"], out=tmp_path, model=embedded_model)
    data = json.loads(json.dumps(report_dict(report)))  # plain JSON all through
    assert [r["round"] for r in data["rounds"]] == [1, 2]
    bundle = Bundle.open(data["bundle"])
    for row in data["rounds"]:
        assert [c["nodes"] for c in row["clusters"]] == [2, 4, 32]
        distinct = row["distinct_prompts"]
        assert distinct >= 1
        for cluster in row["clusters"]:
            k = cluster["nodes"]
            size = -(-200 // (2 * k))  # two shards a node, as on Ray (32 nodes: 50 of 4 agents)
            assert cluster["shards"] == -(-200 // size)
            for how in ("by_shard", "plan"):
                engines = cluster[how]["engines"]
                assert len(engines) == k
                for engine in engines:
                    assert set(engine) == {"prompts", "nodes", "tokens", "prefix_tokens", "agents"}
                    assert engine["nodes"] is None  # not measured per engine
                    assert 0 <= engine["prefix_tokens"] <= engine["tokens"]
                assert sum(e["agents"] for e in engines) >= 200
            walked_plan = sum(e["prompts"] for e in cluster["plan"]["engines"])
            walked_today = sum(e["prompts"] for e in cluster["by_shard"]["engines"])
            assert walked_plan == cluster["plan"]["walked"] == distinct
            assert walked_today == cluster["by_shard"]["walked"] >= distinct
            assert sum(e["agents"] for e in cluster["plan"]["engines"]) == 200
            assert sum(e["agents"] for e in cluster["by_shard"]["engines"]) == 200
    # round 1's distinct prompts are the personas; every shard holds several, so with one
    # engine per two shards today's division walks most of them on every engine
    personas = bundle.personas()
    first = data["rounds"][0]
    assert first["distinct_prompts"] == personas["persona"].nunique()
    assert first["clusters"][0]["by_shard"]["walked"] > first["distinct_prompts"]

    # what the bench counts as shard rows is what each shard's own grouping reports
    cfg = bundle.config
    responses = bundle.responses()
    targets = (float(bundle.rounds()["target"].iloc[0]),)
    ctx = RoundContext.of(cfg, 2, targets, game=bundle.game_of(2))
    whole = split_into_shards(personas, len(personas), cfg.game.rounds)[0]
    whole.restore(responses[responses["round"] < 2])
    rows = round_prompts(Prompts.of(cfg), whole, ctx, embedded_model).report(50)
    for shard in split_into_shards(personas, 50, cfg.game.rounds):
        shard.restore(responses[responses["round"] < 2])
        grouped = Prompts.of(cfg).grouped(shard, ctx)
        own = {
            prompt_key(c.messages, c.model): int(s)
            for c, s in zip(grouped.chats, grouped.sizes, strict=True)
        }
        mine = rows[rows["shard"] == shard.index]
        assert dict(zip(mine["key"], mine["agents"].tolist(), strict=True)) == own

    text = report_text(report)
    assert "round 2:" in text and "every K is counted, not run" in text
    assert "projection" in text


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"nodes": ["2,x"]}, "--nodes: give engine counts of 1 or more"),
        ({"nodes": ["0"]}, "--nodes: give engine counts of 1 or more"),
        ({"rounds": 0}, "--rounds: play at least one round, got 0"),
        ({"n": 30}, "-n: 30 agents cannot fill the shards of 32 nodes"),
    ],
)
def test_cluster_bench_names_a_bad_option_before_loading_a_model(kwargs, needle: str) -> None:
    from workbench.bench.cluster import cluster_bench

    with pytest.raises(ConfigError, match=needle.replace("(", r"\(")):
        cluster_bench(**kwargs)


def test_nodes_are_repeatable_or_comma_separated_and_always_include_32() -> None:
    from workbench.bench.cluster import parse_nodes

    assert parse_nodes(None) == [2, 4, 8, 32]
    assert parse_nodes(["4", "2,8"]) == [2, 4, 8, 32]
    assert parse_nodes(["32"]) == [32]


def test_bench_cluster_command_names_a_bad_option(tmp_path) -> None:
    from cli_helpers import assert_user_error, in_process

    result = in_process(["bench", "cluster", "--nodes", "two"], cwd=tmp_path)
    assert_user_error(result, "--nodes: give engine counts of 1 or more")


@pytest.mark.ray
@pytest.mark.slow
def test_a_ray_run_walks_what_the_bench_planned_with_the_local_answers(
    ray_cluster, embedded_model, tmp_path
) -> None:
    from workbench.bench.cluster import _ray_count, cluster_bench, report_text
    from workbench.bench.cluster_ray import ray_run
    from workbench.results import Bundle

    report = cluster_bench(n=64, rounds=2, nodes=["2"], out=tmp_path, model=embedded_model)
    local = Bundle.open(report.bundle)
    run = ray_run(local.config, ray_cluster.address, local, tmp_path / "ray")  # two nodes
    assert run.nodes == 2 and run.identical
    for counted in report.rounds:
        cluster = next(c for c in counted.clusters if c.nodes == 2)
        assert cluster.shards == run.shards  # the bench cut the shards as Ray did
        cluster.ray = _ray_count(run, counted, cluster)
        assert cluster.ray.matches_plan  # each engine walked exactly the prompts planned for it
        assert cluster.ray.walked == counted.distinct_prompts
        assert sum(e["agents"] for e in cluster.ray.engines) == 64
        assert all(0 < e["nodes"] <= e["visits"] for e in cluster.ray.engines)
    ray = Bundle.open(run.bundle)  # the Ray run's own record: manifest and events
    assert "plan" in ray.manifest["backend"]["division"]
    assert ray.manifest["backend"]["model_actors"] == 2
    events = [e for e in ray.events() if e["kind"] == "engine_work"]
    assert [e["round"] for e in events] == [1, 2]
    work = ray.engine_work()
    assert sum(r["seconds"] for e in events for r in e["engines"]) == pytest.approx(
        work["seconds"].sum()
    )
    text = report_text(report)
    assert "K = 2 also run on a local Ray cluster" in text
    assert "as planned: yes" in text and "answers identical to the local run's: yes" in text
