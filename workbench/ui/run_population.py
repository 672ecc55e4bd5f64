"""The Run tab's word on who plays: the population, N and seed the run will take from the
Population tab, and a choice of the saved populations to start from instead.

The run always plays the Population tab's spec, N and seed (`LaunchSettings.for_editor`); this
line says which, so a person never starts a run of a population they did not mean. Choosing a
saved population puts it in the editor (the Population tab shows it, the preview samples it),
where it can still be changed.
"""

from __future__ import annotations

from typing import Any

import panel as pn

from workbench.config import PopulationSpec, read_yaml, validate
from workbench.config.population import population_summary
from workbench.errors import WorkbenchError
from workbench.ui.population_choice import saved_populations
from workbench.ui.safe_text import md

__all__ = ["KEEP", "PopulationPicker", "who_plays"]

KEEP = "(the one above)"
"""The picker's resting choice: keep the population the editor holds."""


def who_plays(population: PopulationSpec | None, n: int, seed: int, problem: str) -> str:
    """The line naming what a run will play, as escaped Markdown."""
    if problem:
        return f"**No population to play**: {md(problem)} (fix it on the Population tab)"
    if population is None:
        return "Plays the quickstart's education population"
    return (
        f"Plays **{md(population_summary(population))}** with "
        f"**{n:,}** agents, seed **{seed}**: the Population tab's, where you change them"
    )


class PopulationPicker:
    """A select of the saved populations; choosing one loads it into the editor (or, with no
    editor, into the settings) and the select returns to `KEEP`. `message` receives what
    happened, `(text, failed)`."""

    def __init__(self, settings: Any, workspace: str | None, say: Any) -> None:
        self.settings, self.workspace, self.say = settings, workspace, say
        self.found = saved_populations(workspace)
        self.select = pn.widgets.Select(
            label="Start from a saved population",
            options=[KEEP, *self.found],
            value=KEEP,
            width=300,
            css_classes=["wb-launcher-saved-population"],
        )
        self.select.param.watch(self._chosen, "value")

    def refresh(self) -> None:
        """Look for saved populations again (a Save on the Population tab adds one)."""
        self.found = saved_populations(self.workspace)
        self.select.options = [KEEP, *self.found]

    def _chosen(self, event: Any) -> None:
        if event.new == KEEP or event.new not in self.found:
            return
        path = self.found[event.new]
        try:
            data = read_yaml(path)
            editor = getattr(self.settings, "_editor", None)
            if editor is not None:
                editor.set_data(data, event.new)
            else:
                self.settings.population = validate(PopulationSpec, data, event.new)
        except WorkbenchError as exc:
            self.say(str(exc), True)
        else:
            self.say(f"population from {event.new}", False)
        finally:
            self.select.value = KEEP
