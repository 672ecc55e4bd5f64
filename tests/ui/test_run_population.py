"""The Run tab names the population it will play and offers the saved ones."""

from __future__ import annotations

from pathlib import Path

from workbench.config import PopulationSpec, read_yaml, save_yaml
from workbench.ui.population_choice import EXAMPLE_PREFIX, saved_populations
from workbench.ui.population_editor import PopulationEditor
from workbench.ui.run_launcher import RunLauncher
from workbench.ui.run_population import KEEP, PopulationPicker, who_plays
from workbench.ui.safe_text import md


def test_saved_populations_are_the_workspaces_population_files_and_the_examples(
    tmp_path: Path,
) -> None:
    spec = PopulationSpec.model_validate(
        {"name": "mine", "dimensions": [{"name": "job", "shares": {"a": 0.5, "b": 0.5}}]}
    )
    save_yaml(spec, tmp_path / "mine.yaml")
    (tmp_path / "sub").mkdir()
    save_yaml(spec, tmp_path / "sub" / "other.yml")
    (tmp_path / "run.yaml").write_text("n_agents: 5\n", encoding="utf-8")  # a run config
    (tmp_path / "broken.yaml").write_text("dimensions: [\n", encoding="utf-8")
    (tmp_path / ".hidden").mkdir()
    save_yaml(spec, tmp_path / ".hidden" / "secret.yaml")
    found = saved_populations(tmp_path)
    own = [label for label in found if not label.startswith(EXAMPLE_PREFIX)]
    assert own == ["mine.yaml", "sub/other.yml"]
    assert EXAMPLE_PREFIX + "paper-education" in found
    assert all(p.is_file() for p in found.values())


def test_choosing_a_saved_population_puts_it_in_the_editor(tmp_path: Path) -> None:
    editor = PopulationEditor(n=30, seed=4, workspace=str(tmp_path))
    launcher = RunLauncher.for_editor(editor, results_dir=str(tmp_path / "results"))
    said: list[tuple[str, bool]] = []
    picker = PopulationPicker(launcher, str(tmp_path), lambda text, bad: said.append((text, bad)))
    label = EXAMPLE_PREFIX + "paper-profession"
    picker.select.value = label
    assert picker.select.value == KEEP and said == [(f"population from {label}", False)]
    expected = read_yaml(picker.found[label])["name"]
    assert editor.spec is not None and editor.spec.name == expected
    assert launcher.population == editor.spec  # the run plays what the editor shows
    line = who_plays(launcher.population, launcher.n_agents, launcher.seed, "")
    assert f"**{md(expected)}" in line and "**30** agents, seed **4**" in line
    assert who_plays(None, 1, 1, "shares <b>sum</b>").startswith("**No population to play**")
    assert "<b>" not in who_plays(None, 1, 1, "shares <b>sum</b>")  # escaped
