"""The benchmarks run end to end (small sizes); their numbers are for the README, not asserted."""

from __future__ import annotations

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


@pytest.mark.slow
def test_embedded_bench_prints_rates_and_the_baseline() -> None:
    from workbench.bench.embedded import embedded_round_bench

    report = embedded_round_bench(n=4, baseline_n=2)
    assert "agents/s" in report and "tokens/s" in report
    assert re.search(r"^\s+1\s+\d+\.\d+\s+\d+\.\d+", report, re.MULTILINE)
    assert "baseline (no prefix reuse, 2 agents of round 1)" in report


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
