"""The Run tab's live pane (issue 27, item 4): a followed run's round in play is drawn from the
part files its shards have written so far, then the finished round. The run here is a live
bundle written step by step by the real writer (this process holds its lock, so it reads
running), so each step is seen by one `refresh()` and nothing depends on timing."""

from __future__ import annotations

from pathlib import Path

import holoviews as hv
import panel as pn
import pyarrow.parquet as pq
import pytest
from pane_text import shown_text
from run_configs import run_config

from workbench.config import PopulationSpec, RunConfig
from workbench.results import BundleWriter
from workbench.runtime import RoundFinished, RunStarted, ShardProgress, Simulation
from workbench.runtime.events import shard_done
from workbench.ui.run_launcher import CSS, RunLauncher


@pytest.fixture
def config(education_spec: PopulationSpec) -> RunConfig:
    return run_config(
        education_spec,
        agents_per_shard=10,
        name="live",
        n_agents=40,
        policy={"kind": "random", "integer": False},
    )


def live_pane(view: pn.viewable.Viewable) -> tuple[list[str], list[hv.Histogram]]:
    """The live pane's texts and histogram bars as drawn now."""
    (pane,) = [c for c in view.select(pn.Column) if CSS["live"] in (c.css_classes or [])]
    texts = [shown_text(m) for m in pane.select(pn.pane.Markdown)]
    plots = [p.object for p in pane.select(pn.pane.HoloViews)]
    bars = [b for plot in plots for b in plot.traverse(lambda e: e, [hv.Histogram])]
    return texts, bars


def test_the_live_pane_draws_the_round_in_play_shard_by_shard(
    config: RunConfig, tmp_path: Path
) -> None:
    source = Simulation(config).run(out_dir=tmp_path / "source", progress=False)
    writer = BundleWriter(tmp_path / "results", config, run_id="live-run")
    writer.write_personas(source.personas())

    def emit(event) -> None:
        writer.append_event(event.to_dict())

    emit(RunStarted(bundle=str(writer.path), config={}, rounds=2, n_agents=40, backend="local"))
    for shard in range(4):
        emit(ShardProgress(round=1, shard=shard, agents=10))
    launcher = RunLauncher(results_dir=str(tmp_path / "results"))  # re-attaches to the live run
    assert launcher.status == "running" and launcher.bundle == str(writer.path)
    view = launcher.__panel__()
    view.get_root()
    assert not [c for c in view.select(pn.Column) if CSS["live"] in (c.css_classes or [])]

    parts = [pq.read_table(part) for part in source.response_files(1)]  # a shard's answers each
    for shard, table in enumerate(parts[:3]):
        writer.write_responses(1, shard, table)
        emit(shard_done(table, 1, shard, 0.1))
        launcher.refresh()
        texts, (bars,) = live_pane(view)
        answers = 10 * (shard + 1)
        assert texts[0] == f"Round 1 of 2: {shard + 1} of 4 shards in, {answers} answers"
        assert bars.dimension_values("count").sum() == answers
        assert "target so far" in texts[1] and texts[2] == "Round means so far: none finished yet"

    # the round ends: the finished round as it was played, its mean among the means
    writer.write_responses(1, 3, parts[3])
    stats = source.rounds().iloc[0].to_dict()
    writer.end_round(stats)
    emit(RoundFinished(round=1, stats=stats))
    launcher.refresh()
    texts, (bars,) = live_pane(view)
    assert texts[0] == "Round 1 of 2, as it was played"
    assert bars.dimension_values("count").sum() == 40
    assert texts[-1] == f"Round means so far: {stats['mean']:.2f}"
    writer.close()
