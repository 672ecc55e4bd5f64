"""Exact distributions kept in the bundle (issue 27, item 1): `output.exact_distributions`.

The round trip: what a run stores equals a fresh whole walk of the same round on the same
model (`exact_round`), prompt for prompt and probability for probability; `bundles verify`
checks what is stored (hashes, one prompt per agent, sums of 1, every drawn answer inside its
prompt's support); a resume keeps the finished rounds' and stores the rest like the
uninterrupted run; a fork shares its parent's; a run that cannot keep them is refused before
anything is written.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from resume_helpers import cancel_after

from workbench.errors import BundleError, ConfigError, ModelError
from workbench.results import verify_bundle
from workbench.results.exact_store import from_tables
from workbench.results.layout import exact_paths
from workbench.runtime import Simulation
from workbench.runtime.exact_rounds import exact_round

pytestmark = pytest.mark.slow


def _keeping(config):
    """`config` with output.exact_distributions on."""
    output = config.output.model_copy(update={"exact_distributions": True})
    return config.model_copy(update={"output": output})


def _config(make_config, **kwargs):
    return _keeping(make_config(policy={"kind": "llm"}, **kwargs))


def _same(a, b) -> None:
    assert np.array_equal(a.prompt_of, b.prompt_of)
    assert len(a.probs) == len(b.probs)
    for x, y, p, q in zip(a.answers, b.answers, a.probs, b.probs, strict=True):
        assert np.array_equal(x, y) and np.array_equal(p, q)


def test_stored_distributions_equal_a_fresh_walk(embedded_model, make_config, tmp_path) -> None:
    config = _config(make_config, n_agents=300, rounds=2, agents_per_shard=150)
    bundle = Simulation(config, model=embedded_model).run(out_dir=tmp_path, progress=False)
    assert bundle.exact_rounds == [1, 2]
    assert bundle.manifest["exact"]["walk"].startswith("exact/1")
    assert bundle.manifest["exact"]["evaluation"] == embedded_model.identity["prompt_pieces"]
    report = verify_bundle(bundle.path)
    assert report.ok, report.problems
    for number in (1, 2):
        stored = bundle.exact(number)
        _same(stored, exact_round(bundle, embedded_model, number))
        mean, sd = stored.expected()
        shares = stored.answer_shares()
        assert shares["exact_share"].sum() == pytest.approx(1.0)
        assert shares["sampled_share"].sum() == pytest.approx(1.0)
        answers = shares["answer"].to_numpy()
        assert mean == pytest.approx(float(answers @ shares["exact_share"]))
        assert sd > 0 and abs(bundle.rounds()["mean"].iat[number - 1] - mean) < 5 * sd / np.sqrt(
            300
        )
    groups = bundle.exact(1).groups("education")
    assert groups["n"].sum() == 300

    prompts_path, _ = exact_paths(bundle.path, 1)  # tampered: the hash no longer fits
    table = pq.read_table(prompts_path)
    probs = table.column("prob").to_numpy().copy()
    probs[0], probs[1] = probs[1], probs[0]
    pq.write_table(table.set_column(2, "prob", pa.array(probs)), prompts_path)
    report = verify_bundle(bundle.path)
    assert not report.ok and any("exact/round-1/prompts.parquet" in p for p in report.problems)


def test_damaged_tables_are_refused_with_their_reason(embedded_model, make_config, tmp_path):
    config = _config(make_config, n_agents=40, rounds=1, agents_per_shard=40)
    bundle = Simulation(config, model=embedded_model).run(out_dir=tmp_path, progress=False)
    found = bundle.exact(1)
    prompts, agents = found.tables()
    half = prompts.set_column(2, "prob", pa.compute.multiply(prompts.column("prob"), 0.5))
    with pytest.raises(BundleError, match="probabilities sum to"):
        from_tables(1, found.personas, found.drawn, half, agents)
    with pytest.raises(BundleError, match="each of the round's 40 agents once"):
        from_tables(1, found.personas, found.drawn, prompts, agents.slice(0, 39))
    with pytest.raises(BundleError, match="round 2 has no stored exact distributions"):
        bundle.exact(2)


def test_a_resumed_run_keeps_and_completes_them(embedded_model, make_config, tmp_path) -> None:
    config = _config(make_config, n_agents=60, rounds=2, agents_per_shard=30)
    whole = Simulation(config, model=embedded_model).run(out_dir=tmp_path / "whole", progress=False)
    sim = Simulation(config, model=embedded_model)
    cut = sim.run(out_dir=tmp_path / "cut", progress=False, on_round=cancel_after(sim, 1))
    assert cut.status == "cancelled" and cut.exact_rounds == [1]
    done = Simulation.resume(cut.path, model=embedded_model).run(progress=False)
    assert done.status == "complete" and done.exact_rounds == [1, 2]
    for number in (1, 2):
        _same(done.exact(number), whole.exact(number))
    assert verify_bundle(done.path).ok

    _resumed_after_a_death_mid_walk(config, embedded_model, whole, tmp_path)

    told = {"game.prompt.announcement": "The average was low."}
    fork = Simulation.fork(done, 2, told, model=embedded_model)
    fork = fork.run(out_dir=tmp_path / "fork", progress=False)
    assert fork.exact_rounds == [1, 2]
    _same(fork.exact(1), done.exact(1))
    assert verify_bundle(fork.path).ok


def _resumed_after_a_death_mid_walk(config, model, whole, tmp_path) -> None:
    """A run stopped while it wrote round 1's distributions (half a file on disk, the
    manifest not yet told): its resume walks round 1 again before round 2, and keeps both."""
    from workbench.runtime import simulation

    def dies_mid_walk(writer, model, number) -> None:
        prompts, _ = exact_paths(writer.path, number)
        prompts.parent.mkdir(parents=True, exist_ok=True)
        prompts.write_bytes(b"half a parquet file")
        raise ModelError("the walk's process was killed")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(simulation, "store_exact", dies_mid_walk)
        with pytest.raises(ModelError, match="killed"):
            Simulation(config, model=model).run(out_dir=tmp_path / "died", progress=False)
    (died,) = (tmp_path / "died").iterdir()
    done = Simulation.resume(died, model=model).run(progress=False)
    assert done.status == "complete" and done.exact_rounds == [1, 2]
    for number in (1, 2):
        _same(done.exact(number), whole.exact(number))
    assert verify_bundle(done.path).ok


def test_runs_that_cannot_keep_them_are_refused(embedded_model, make_config, tmp_path) -> None:
    config = _keeping(make_config(policy={"kind": "random"}))
    with pytest.raises(ConfigError, match="exact distributions are for a run of one LLM model"):
        Simulation(config).run(out_dir=tmp_path, progress=False)
    llm = _config(make_config)
    ray = llm.model_copy(update={"backend": llm.backend.model_copy(update={"kind": "ray"})})
    with pytest.raises(ConfigError, match="output.exact_distributions: kept on the local backend"):
        Simulation(ray, model=embedded_model).run(out_dir=tmp_path, progress=False)
    free = _config(make_config, model={"kind": "embedded", "constrained": False})
    with pytest.raises(ConfigError, match="model.sampling: exact distributions need distribution"):
        Simulation(free, model=embedded_model).run(out_dir=tmp_path, progress=False)
    assert not any(tmp_path.iterdir())


def test_plots_draw_the_exact_distribution_beside_the_draws(embedded_model, make_config, tmp_path):
    import holoviews as hv

    from workbench.viz import plots

    config = _config(make_config, n_agents=200, rounds=1, agents_per_shard=200)
    bundle = Simulation(config, model=embedded_model).run(out_dir=tmp_path, progress=False)
    histogram = plots.histogram(bundle, 1)
    curves = [e for e in histogram if isinstance(e, hv.Curve)]
    assert [c.label for c in curves] == ["exact distribution"]
    assert curves[0].dimension_values("expected").sum() == pytest.approx(200)
    groups = plots.exact_groups(bundle, "education")
    means = [e for e in groups if isinstance(e, hv.Scatter)]
    assert [m.label for m in means] == ["exact mean", "sampled mean"]
    table = bundle.exact(1).groups("education").sort_values("education")
    assert np.allclose(means[0].dimension_values("exact_mean"), table["exact_mean"])
    hv.render(histogram, backend="bokeh")
    hv.render(groups, backend="bokeh")


def test_bundles_show_prints_the_exact_group_means(embedded_model, make_config, tmp_path):
    from cli_helpers import workbench

    config = _config(make_config, n_agents=60, rounds=1, agents_per_shard=60)
    bundle = Simulation(config, model=embedded_model).run(out_dir=tmp_path, progress=False)
    shown = workbench("bundles", "show", bundle.path, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "exact distributions kept for rounds [1]; round 1 by " in shown.stdout
    groups = bundle.exact(1).groups(shown.stdout.split("round 1 by ")[1].split(":")[0])
    assert f"{groups['exact_mean'].iat[0]:.2f}" in shown.stdout
