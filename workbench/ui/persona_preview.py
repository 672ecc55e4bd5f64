"""PersonaPreview: sample a population spec and look at the agents it gives.

The sample (`workbench.population.sample_population`) goes to a Tabulator with remote
pagination, so the browser only ever holds one page however many agents there are; counts per
category against the requested shares come from `counts_table`; a few persona texts show as
cards; and a handful of agents can have their backgrounds written by a language model
(`workbench.agents.persona_writer.generate_personas`), awaited off the event loop and shown one
by one as they arrive, with the model's error in the page when it fails.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pandas as pd
import panel as pn
import param

from workbench.agents.persona_writer import generate_personas
from workbench.agents.persona_writer import persona_model_spec as writer_model_spec
from workbench.config import MAX_AGENTS, ModelSpec, PopulationSpec
from workbench.errors import ConfigError, WorkbenchError, one_line
from workbench.llm import make_model, sampling_params
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams
from workbench.llm.chat_model import ChatModel
from workbench.population import counts_table, sample_population
from workbench.ui.controls import MIN_WIDTH, button, row
from workbench.ui.notices import notice
from workbench.ui.safe_text import TextTable, html_text, md

__all__ = ["PersonaPreview", "persona_model_spec"]


def persona_model_spec(model: str, model_name: str | None = None) -> ModelSpec:
    """The ModelSpec `workbench personas generate --model M --model-name N` writes with, its
    errors named by the page's fields."""
    return writer_model_spec(model, model_name, names=("model", "model name"))


class _ErrorsSeen:
    """A ChatModel wrapper that remembers each failed result's error (generate_personas falls
    back to the template text for those, so the page needs the reason)."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model
        self.errors: list[str] = []

    @property
    def identity(self) -> dict[str, Any]:
        return self.model.identity

    async def generate(
        self, requests: list[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        results = await self.model.generate(requests, params)
        self.errors += [r.error for r in results if r.error is not None]
        return results


class PersonaPreview(pn.viewable.Viewer):
    """The sampled agents of a spec: a paged table, counts vs shares, cards, LLM backgrounds."""

    spec = param.ClassSelector(
        class_=PopulationSpec,
        default=None,
        allow_None=True,
        allow_refs=True,
        doc="the population to sample (bind it to PopulationEditor.param.spec); None: nothing",
    )
    problem = param.String(
        "",
        allow_refs=True,
        doc="why there is no spec (bind it to PopulationEditor.param.message); shown instead",
    )
    n = param.Integer(
        100, bounds=(0, MAX_AGENTS), allow_refs=True, label="N", doc="agents to sample"
    )
    seed = param.Integer(0, bounds=(0, None), allow_refs=True, label="Seed", doc="sampling seed")
    own_inputs = param.Boolean(
        True,
        doc="show N and Seed inputs; False under an editor (`for_editor`), whose Agents and "
        "Seed set them: one pair of inputs on the page, and its problems shown there once",
    )
    page_size = param.Integer(
        20, bounds=(1, 500), doc="rows per page of the table: all the browser ever receives"
    )
    n_cards = param.Integer(4, bounds=(0, 50), doc="persona text cards shown (the first agents)")
    model = param.String(
        "embedded",
        label="Model",
        doc="who writes backgrounds: 'embedded' or an OpenAI-compatible URL (http://host/v1)",
    )
    model_name = param.String("", label="Model name", doc="the model a URL serves")
    model_spec = param.ClassSelector(
        class_=ModelSpec,
        default=None,
        allow_None=True,
        doc="a full ModelSpec for the backgrounds, used instead of model and model_name",
    )
    n_backgrounds = param.Integer(
        3,
        bounds=(1, 20),
        label="Backgrounds",
        doc="how many of the first agents get a background (not the run's Agents)",
    )
    personas = param.DataFrame(
        default=None, allow_None=True, doc="output: the sampled agents (None with a message)"
    )
    counts = param.DataFrame(
        default=None,
        allow_None=True,
        doc="output: counts per dimension and category with share and target share",
    )
    message = param.String("", doc="output: why there is no sample ('' when there is one)")
    backgrounds = param.List(
        default=[],
        item_type=dict,
        doc="output: written backgrounds so far, each {agent_id, persona, source, error}",
    )
    writing = param.Boolean(False, doc="output: backgrounds are being written now")
    writer_message = param.String(
        "", doc="output: the model's error or the writer's outcome ('' before any)"
    )
    writer_failed = param.Boolean(False, doc="output: writer_message is an error")

    @classmethod
    def for_editor(cls, editor: Any, **params: Any) -> PersonaPreview:
        """A preview following a PopulationEditor's spec, message, N and seed; regenerating
        here moves the editor's seed too."""
        preview = cls(
            spec=editor.param.spec,
            problem=editor.param.message,
            n=editor.param.n,
            seed=editor.param.seed,
            own_inputs=False,
            **params,
        )
        preview.param.watch(lambda e: setattr(editor, "seed", e.new), "seed")
        editor.param.watch(lambda e: setattr(preview, "seed", e.new), "seed")
        return preview

    def regenerate(self) -> None:
        """Sample again with the next seed (seed + 1): a new sample, the same for everyone."""
        self.seed = self.seed + 1

    @param.depends("spec", "problem", "n", "seed", watch=True, on_init=True)
    def _sample(self) -> None:
        """Sample the spec; on a problem, no sample and the problem's ConfigError text."""
        personas = counts = None
        if self.spec is None:
            message = self.problem or "no population spec yet"
        else:
            try:
                personas = sample_population(self.spec, self.n, self.seed)
                counts = counts_table(personas, self.spec)
                message = ""
            except ConfigError as exc:
                message = str(exc)
        with param.parameterized.batch_call_watchers(self):
            self.message = message
            self.personas = personas
            self.counts = counts
            self.backgrounds = []
            self.writer_message = ""
            self.writer_failed = False

    async def write_backgrounds(self) -> None:
        """Let the model write backgrounds for the first `n_backgrounds` agents, one request
        each, appended to `backgrounds` as each arrives; errors go to `writer_message`."""
        if self.writing:  # one writer at a time: the button is disabled meanwhile
            return
        if self.personas is None or self.spec is None:
            self.writer_message = f"nothing to write for: {self.message}"
            self.writer_failed = True
            return
        spec, seed = self.spec, self.seed
        agents = self.personas.head(self.n_backgrounds)
        self.backgrounds, self.writer_message, self.writing = [], "", True
        self.writer_failed = False
        try:
            model_spec = self.model_spec or persona_model_spec(self.model, self.model_name)
            model = make_model(model_spec)
            params = sampling_params(model_spec)
            seen = [_ErrorsSeen(model) for _ in range(len(agents))]  # one per agent: its errors
            tasks = [
                asyncio.ensure_future(
                    self._write_one(agents.iloc[[i]], spec, seen[i], seed, params)
                )
                for i in range(len(agents))
            ]
            for done in asyncio.as_completed(tasks):
                self.backgrounds = [*self.backgrounds, await done]
            written = sum(b["source"] == "llm" for b in self.backgrounds)
            errors = [error for one in seen for error in one.errors]
            if errors:
                self.writer_message = f"the model failed: {errors[0]}"
                self.writer_failed = True
            else:
                self.writer_message = f"{written} of {len(agents)} backgrounds from the model"
        except WorkbenchError as exc:
            self.writer_message, self.writer_failed = str(exc), True
        except Exception as exc:  # a model's own failure: shown in the page, never swallowed
            self.writer_message, self.writer_failed = one_line(exc), True
        finally:
            self.writing = False

    @staticmethod
    async def _write_one(
        agent: pd.DataFrame,
        spec: PopulationSpec,
        model: _ErrorsSeen,
        seed: int,
        params: SamplingParams,
    ) -> dict[str, Any]:
        """One agent's background: {agent_id, persona, source, error (the model's, or None)}."""
        frame = await generate_personas(agent, spec, model, seed=seed, params=params)
        row = frame.iloc[0]
        source = str(row["persona_source"])
        return {
            "agent_id": int(row["agent_id"]),
            "persona": str(row["persona"]),
            "source": source,
            "error": model.errors[-1] if source == "template" and model.errors else None,
        }

    # ---- the page ---------------------------------------------------------------------------

    def table(self) -> pn.widgets.Tabulator:
        """The sampled agents, paged on the server: the browser gets `page_size` rows."""
        return TextTable(
            self.personas if self.personas is not None else pd.DataFrame(),
            pagination="remote",
            page_size=self.page_size,
            disabled=True,
            show_index=False,
            sizing_mode="stretch_width",
        )

    def __panel__(self) -> pn.viewable.Viewable:
        """Sample controls, message, counts, the paged table, cards and the writer."""
        regenerate = button("Regenerate with a new seed", "wb-preview-regenerate")
        regenerate.on_click(lambda _: self.regenerate())
        write = button(
            "Write backgrounds", "wb-preview-write", primary=True, disabled=self.param.writing
        )
        write.on_click(self._on_write)  # async: awaited on the event loop, never blocking
        writer = pn.Column(
            pn.pane.Markdown("### LLM-written backgrounds"),
            row(
                pn.widgets.TextInput.from_param(self.param.model, width=200),
                pn.widgets.TextInput.from_param(self.param.model_name, width=200),
                pn.widgets.IntInput.from_param(self.param.n_backgrounds, width=120),
                write,
            ),
            pn.indicators.LoadingSpinner(value=self.param.writing, size=24),
            pn.bind(_note, self.param.writer_message, self.param.writer_failed),
            pn.bind(_background_cards, self.param.backgrounds),
            sizing_mode="stretch_width",
        )
        inputs = (
            [
                pn.widgets.IntInput.from_param(self.param.n, width=160),
                pn.widgets.IntInput.from_param(self.param.seed, width=120),
            ]
            if self.own_inputs
            else []
        )
        return pn.Column(
            row(*inputs, regenerate),
            pn.bind(self._sample_view, self.param.personas, self.param.message),
            writer,
            sizing_mode="stretch_width",
            min_width=MIN_WIDTH,  # not its tables' width: they scroll inside it
            css_classes=["wb-preview"],
        )

    async def _on_write(self, _: Any) -> None:
        await self.write_backgrounds()

    def _sample_view(self, personas: pd.DataFrame | None, message: str) -> pn.viewable.Viewable:
        if personas is None:
            if self.spec is None and not self.own_inputs:  # the editor shows why, once
                return notice("No agents to show until the population's problems are fixed.")
            return notice(md(message), "danger")
        counts = TextTable(
            self.counts,
            disabled=True,
            show_index=False,
            pagination="remote",
            page_size=50,
            sizing_mode="stretch_width",
        )
        cards = [
            pn.Card(
                _persona_text(row["persona"]),
                title=html_text(f"agent {row['agent_id']}"),
                width=300,
            )
            for _, row in personas.head(self.n_cards).iterrows()
        ]
        return pn.Column(
            pn.pane.Markdown(f"**{len(personas):,} agents**, seed {self.seed}"),
            pn.pane.Markdown("### Counts per category against the requested shares"),
            counts,
            pn.pane.Markdown("### Agents"),
            self.table(),
            pn.FlexBox(*cards),
            sizing_mode="stretch_width",
        )


def _persona_text(text: object) -> pn.viewable.Viewable:
    """A persona as it was written, wrapped to its card (a plain `Str` runs into the next card);
    escaped, since Panel's `Str` puts its text into the page as HTML."""
    return pn.pane.Str(
        html_text(text), sizing_mode="stretch_width", stylesheets=["pre { white-space: pre-wrap; }"]
    )


def _note(message: str, failed: bool) -> pn.viewable.Viewable:
    return notice(md(message), "danger" if failed else "info")


def _background_cards(backgrounds: list[dict[str, Any]]) -> pn.viewable.Viewable:
    cards = []
    for item in backgrounds:
        body = [_persona_text(item["persona"])]
        if item["error"]:
            body.append(notice(md(f"model error: {item['error']}"), "danger"))
        title = html_text(f"agent {item['agent_id']} ({item['source']})")
        cards.append(pn.Card(*body, title=title, width=360))
    return pn.FlexBox(*cards)
