"""The benchmarks run end to end (small sizes); their numbers are for the README, not asserted."""

from __future__ import annotations

import os
import re

import pytest

from workbench.bench.dummy import dummy_bench, measure, peak_rss_mib
from workbench.errors import ConfigError


def test_dummy_bench_reports_each_configuration_against_the_asyncio_baseline() -> None:
    report = dummy_bench(n=2_000, latency=0.05, configurations=("asyncio", "local"), timeout=120)
    rows = {line.split()[0]: line.split() for line in report.splitlines()[2:4]}
    assert set(rows) == {"asyncio", "local"}
    assert rows["asyncio"][3] == "1.0x"
    assert re.fullmatch(r"\d+\.\dx", rows["local"][3])
    assert float(rows["local"][1]) >= 0.05  # the latency is really awaited


def test_per_agent_mode_gives_the_same_answers_as_the_columnar_mode(make_config, tmp_path) -> None:
    from workbench.runtime import Simulation

    def responses(per_agent: bool):
        config = make_config(
            n_agents=300,
            rounds=2,
            policy={"kind": "random", "latency_s": 0.01, "per_agent": per_agent},
        )
        bundle = Simulation(config).run(out_dir=tmp_path / str(per_agent), progress=False)
        return bundle.responses().drop(columns="latency_s")

    assert responses(True).equals(responses(False))
    assert measure("local-per-agent", 500, 1, 0.0, 3, 2).note.endswith("one coroutine per agent")
    assert peak_rss_mib() > 0


def test_unknown_configuration_is_rejected() -> None:
    with pytest.raises(ConfigError, match="unknown \\['gpu'\\]"):
        dummy_bench(n=10, configurations=("gpu",))


def _rows(report: str, header: str) -> list[dict[str, str]]:
    """The rows of the report's table whose header line starts with `header`, by column."""
    lines = report.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == header.split())
    columns = lines[at].split()
    rows = []
    for line in lines[at + 1 :]:
        if not line.split() or not line.split()[0].isdigit():
            break
        rows.append(dict(zip(columns, line.split(), strict=True)))
    return rows


@pytest.mark.slow
def test_embedded_bench_reports_each_round_against_its_floor_and_under_load(tmp_path) -> None:
    from cli_helpers import in_process

    args = ["bench", "embedded", "-n", "6", "--rounds", "2", "--under-load", "--baseline-n", "2"]
    result = in_process(args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = result.stdout
    assert "config quickstart: 6 agents, 2 rounds, seed 42" in report
    assert re.search(r"rates before the rounds: prompt \d+ tok/s, decode \d+ tok/s", report)
    assert re.search(r"rates after the rounds: +prompt \d+ tok/s", report)
    rows = _rows(report, "round seconds")
    assert list(rows[0]) == [
        "round", "seconds", "agents", "given", "evaluated", "generated", "decoded", "floor_s",
        "x_floor", "threads",
    ]  # fmt: skip
    assert [row["round"] for row in rows] == ["1", "2"]
    for row in rows:
        assert row["agents"] == "6"
        assert 0 < int(row["evaluated"]) <= int(row["given"])
        assert int(row["generated"]) >= 6  # at least one token per answer
        # an answer's last token needs no decode; each earlier one does
        assert int(row["generated"]) - 6 <= int(row["decoded"]) <= int(row["generated"])
        floor, seconds = float(row["floor_s"]), float(row["seconds"])
        assert floor > 0
        # the ratio of the unrounded numbers, within what rounding both to 0.01 allows
        ratio, half = float(row["x_floor"].rstrip("x")), 0.005
        assert (seconds - half) / (floor + half) - half <= ratio
        assert ratio <= (seconds + half) / (floor - half) + half
        # one thread count, or threads:requests when the free cores changed during the round
        threads = row["threads"]
        if ":" in threads:
            pairs = [pair.split(":") for pair in threads.split(",")]
            assert all(int(t) >= 1 for t, _ in pairs) and sum(int(k) for _, k in pairs) == 6
        else:
            assert int(threads) >= 1
    assert int(rows[1]["given"]) > int(rows[0]["given"])  # round 2 also recalls round 1
    together = float(re.search(r"rounds together: ([\d.]+) s \(2 rounds", report).group(1))
    assert together == pytest.approx(sum(float(row["seconds"]) for row in rows), abs=0.02)

    loaded = _rows(report, "round quiet_s")
    assert [row["quiet_s"] for row in loaded] == [row["seconds"] for row in rows]
    for row in loaded:
        ratio = float(row["loaded_s"]) / float(row["quiet_s"])
        assert float(row["x_quiet"].rstrip("x")) == pytest.approx(ratio, abs=0.02)
    pid = int(re.search(r"one busy process beside it, pid (\d+), killed", report).group(1))
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
    assert "baseline (no prefix reuse, 2 agents of round 1" in report


@pytest.mark.slow
def test_embedded_bench_counts_what_the_bundle_records(tmp_path) -> None:
    from workbench.bench.embedded import bench_config, embedded_model, play

    config = bench_config(n=6, rounds=2, seed=3)
    model = embedded_model(config)
    played = play(config, model, tmp_path)
    sums = played.responses.groupby("round")[["prompt_tokens", "completion_tokens"]].sum()
    assert [r.round for r in played.rounds] == [1, 2]
    assert played.seconds == [r.seconds for r in played.rounds]  # the bundle's round seconds
    for cost in played.rounds:
        assert cost.given == sums.loc[cost.round, "prompt_tokens"]
        assert cost.generated == sums.loc[cost.round, "completion_tokens"]
        assert cost.evaluated <= cost.given
        assert cost.generated - cost.agents <= cost.decoded <= cost.generated
        assert sum(cost.threads.values()) == cost.agents == 6
    assert played.total_s >= played.rounds_s > 0
    assert model.counters.requests == 0  # reset after the last round


def test_busy_neighbour_is_killed_on_an_error() -> None:
    from workbench.bench.embedded import busy_neighbour

    with pytest.raises(KeyboardInterrupt), busy_neighbour() as process:
        assert process.poll() is None  # spinning
        raise KeyboardInterrupt
    assert process.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.kill(process.pid, 0)


def test_differing_rows_counts_answers_that_changed_in_any_compared_column() -> None:
    import pandas as pd

    from workbench.bench.embedded import differing_rows

    local = pd.DataFrame(
        {"agent_id": [0, 1, 2], "round": [1, 1, 1], "raw": ["33", "40", None],
         "guess": [33.0, 40.0, float("nan")], "latency_s": [0.1, 0.2, 0.3]}
    )  # fmt: skip
    shuffled = local.iloc[::-1].assign(latency_s=[9.0, 9.0, 9.0])  # order and timing differ
    assert differing_rows(local, shuffled) == 0  # failed answers (None, nan) agree too
    assert differing_rows(local, local.assign(raw=["33", "41", None])) == 1
    assert differing_rows(local, local.head(2)) == 3


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"model": {"kind": "openai", "base_urls": ["http://127.0.0.1:9/v1"], "name": "m"}},
         "model.kind is 'openai'; the embedded bench needs model.kind: embedded"),
        ({"policy": {"kind": "level_k"}}, "policy.kind is 'level_k'"),
    ],
)  # fmt: skip
def test_embedded_bench_refuses_a_config_without_the_embedded_model(
    tmp_path, change: dict, needle: str
) -> None:
    import yaml
    from cli_helpers import assert_user_error, in_process

    from workbench._examples import example_path

    data = yaml.safe_load(example_path("quickstart").read_text())
    data["population"] = str(example_path("quickstart").parent / data["population"])
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump(data | change))
    result = in_process(["bench", "embedded", "--config", path], cwd=tmp_path)
    assert_user_error(result, str(path), needle)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--backend", "dask"], "--backend: use local or ray, got 'dask'"),
        (["--ray-address", "127.0.0.1:1"], "--ray-address: a Ray cluster is for --backend ray"),
    ],
)
def test_embedded_bench_names_a_bad_backend_option(tmp_path, args: list[str], needle: str) -> None:
    from cli_helpers import assert_user_error, in_process

    assert_user_error(in_process(["bench", "embedded", *args], cwd=tmp_path), needle)


@pytest.mark.slow
@pytest.mark.ray
def test_embedded_bench_on_ray_compares_seconds_and_answers(ray_cluster) -> None:
    from workbench.bench.embedded import embedded_bench

    report = embedded_bench(
        n=6, rounds=1, backend="ray", ray_address=ray_cluster.address, baseline_n=1
    )
    rows = _rows(report, "round local_s")
    assert [row["round"] for row in rows] == ["1"]
    ratio = float(rows[0]["ray_s"]) / float(rows[0]["local_s"])
    assert float(rows[0]["x_local"].rstrip("x")) == pytest.approx(ratio, abs=0.02)
    assert re.search(r"responses identical \(agent_id, round, raw, guess\): (yes|no \()", report)


@pytest.mark.slow
def test_served_bench_compares_the_workbench_with_the_openai_client(llm_server: str) -> None:
    from workbench.bench.served import served_bench

    report = served_bench(n=6, url=llm_server, concurrency=2, repeats=1)
    assert "(6/6 valid answers)" in report
    assert "(llama-cpp-python 0.3.36)" in report and "constraint grammar" in report
    ratio = float(re.search(r"ratio workbench local / direct\s+([\d.]+)", report).group(1))
    assert ratio > 0


@pytest.mark.slow
@pytest.mark.ray
def test_served_bench_on_ray_goes_through_shard_actors_and_a_model_actor(
    ray_cluster, llm_server: str
) -> None:
    from workbench.bench.served import served_bench

    report = served_bench(n=6, url=llm_server, concurrency=2, repeats=1, backends=("ray",))
    assert "workbench round, ray" in report and "(6/6 valid answers)" in report
    assert float(re.search(r"ratio workbench ray / direct\s+([\d.]+)", report).group(1)) > 0


@pytest.mark.slow
def test_served_bench_times_the_runs_own_mode_and_tokens(llm_server: str) -> None:
    from workbench.bench.served import served_bench

    report = served_bench(
        n=4, url=llm_server, concurrency=2, repeats=1, structured_output="none", max_tokens=3
    )
    assert "constraint none, max_tokens 3" in report


def test_served_bench_names_an_unknown_backend() -> None:
    from workbench.bench.served import served_bench
    from workbench.errors import ConfigError

    with pytest.raises(ConfigError, match=r"--backends: unknown \['dask'\]"):
        served_bench(n=2, url="http://127.0.0.1:9/v1", backends=("local", "dask"))


def test_startup_bench_prints_the_ratio_against_bare_typer() -> None:
    from workbench.bench.startup import startup_bench

    text = startup_bench(repeats=1)
    ratio_line = next(line for line in text.splitlines() if line.startswith("ratio "))
    ratio = float(re.search(r"(\d+\.\d+)x", ratio_line).group(1))
    assert 0 < ratio < 100
    assert text.splitlines()[-1].endswith(": none")  # no pandas, pyarrow, Ray or llama.cpp


def _scored_prefixes(answer: str, max_tokens: int, low: int, high: int) -> set[str]:
    """The trie nodes an answer's path scored (one digit per token): the root, then each prefix
    after which another digit may follow, below max_tokens."""
    from workbench.llm.grammar import integer_can_continue

    return {
        answer[:k]
        for k in range(len(answer) + 1)
        if k < max_tokens and (k == 0 or integer_can_continue(answer[:k], low, high))
    }


@pytest.mark.slow
def test_scale_bench_counts_what_the_bundles_record(tmp_path) -> None:
    from workbench.bench.embedded import bench_config, embedded_model
    from workbench.bench.scale import scale_bench
    from workbench.bench.scale_report import report_dict, report_text
    from workbench.llm.distribution.embedded_scorer import EmbeddedNodeScorer
    from workbench.results import Bundle

    config = bench_config(n=20, rounds=1)
    low, high, max_tokens = int(config.game.low), int(config.game.high), config.model.max_tokens
    vocab = EmbeddedNodeScorer(embedded_model(config))._vocabulary(low, high)
    # one digit a token (the other pieces are dashes, which a range from 0 never allows)
    assert low >= 0 and all(len(p) == 1 for _, p in vocab.pieces if p.strip("-"))
    report = scale_bench(
        ns="60,20", rounds=1, baseline_max_n=20, exact_agents=3, out=tmp_path, timeout=300
    )
    data = report_dict(report)
    assert [run["n"] for run in data["runs"]] == [20, 60]
    assert data["exact"] == {"verdict": "yes", "checked": 3, "mismatches": 0}
    text = report_text(report)
    assert "exact: yes (each agent alone, first 3 agents at N=20, every round: 3 answers" in text
    rows = _rows(text, "N round")
    for run, row in zip(data["runs"], rows, strict=True):
        assert run["error"] is None and run["sampling"] == "workbench"
        (cost,) = run["rounds"]
        bundle = Bundle.open(run["bundle"])
        frame = bundle.responses().merge(bundle.personas()[["agent_id", "persona"]])
        assert len(frame) == cost["answers"] == run["n"] == int(row["N"].replace(",", ""))
        assert cost["prompts"] == frame["persona"].nunique() == int(row["prompts"])
        assert cost["leaves"] == frame.groupby(["persona", "raw"], observed=True).ngroups
        scored = {
            persona: set().union(*(_scored_prefixes(a, max_tokens, low, high) for a in answers))
            for persona, answers in frame.groupby("persona", observed=True)["raw"]
        }
        assert cost["nodes_asked"] == sum(map(len, scored.values())) == int(row["asked"])
        paths = [len(_scored_prefixes(a, max_tokens, low, high)) for a in frame["raw"]]
        assert cost["draws"] == sum(paths) == int(row["draws"])
        # a fresh process: every node asked is evaluated once (the memo serves repeats only)
        assert cost["prompts"] <= cost["nodes"] <= cost["nodes_asked"]
        assert cost["nodes"] == int(row["nodes"])
        assert cost["decoded"] >= cost["nodes"] - cost["prompts"]  # a decode per child node
        assert 0 < cost["evaluated"] <= frame["prompt_tokens"].sum()
        assert 0 < cost["score_s"] <= cost["seconds"]
        assert cost["seconds"] == pytest.approx(float(bundle.rounds()["seconds"].iloc[0]))
        assert run["peak_mib"] > 100  # the model is loaded in the child
    (base,) = data["baseline"]
    assert base["n"] == 20 and base["sampling"] == "server" and base["error"] is None
    assert base["rounds"][0]["prompts"] == 20  # one request per agent
    assert Bundle.open(base["bundle"]).model["sampling"]["mode"] == "server"
    assert data["baseline_comparison"]["n"] == 20
    assert re.search(r"baseline at N=20: per-agent [\d.]+ s, distribution mode [\d.]+ s", text)
    assert {t["verdict"] for t in data["targets"]} == {"not measured"}  # no N=100


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-n", "abc"], "-n: give agent counts separated by commas, e.g. 100,10000; got 'abc'"),
        (["-n", "100,0"], "-n: each agent count must be 1 to 10,000,000; got '100,0'"),
        (["-n", "100", "--backend", "dask"], "--backend: use local or ray, got 'dask'"),
        (["-n", "100", "--rounds", "0"], "--rounds: play at least one round, got 0"),
    ],
)
def test_scale_bench_names_a_bad_option(tmp_path, args: list[str], needle: str) -> None:
    from cli_helpers import assert_user_error, in_process

    assert_user_error(in_process(["bench", "scale", *args], cwd=tmp_path), needle)


def test_loglog_slope_is_the_power_of_n() -> None:
    from workbench.bench.scale import loglog_slope

    assert loglog_slope([100, 1000, 10000], [1.0, 10.0, 100.0]) == pytest.approx(1.0)
    assert loglog_slope([100, 10000], [3.0, 3.0]) == pytest.approx(0.0)
    assert loglog_slope([100], [3.0]) != loglog_slope([100], [3.0])  # nan: one N
