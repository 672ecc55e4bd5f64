"""PersonaPreview: the sample and its counts follow the spec, N and seed; regenerating moves the
seed deterministically; the browser gets one page of a million agents; LLM backgrounds arrive
one by one off the event loop, and a failing model shows its error. No browser."""

from __future__ import annotations

import asyncio
import time

import pandas as pd
import pytest
from pane_text import shown_text
from panel.widgets import Tabulator
from ports import free_port

from workbench.config import ModelSpec
from workbench.population import counts_table, sample_population
from workbench.ui import PersonaPreview, PopulationEditor, persona_model_spec


def test_the_sample_and_counts_follow_spec_n_and_seed(education_spec) -> None:
    preview = PersonaPreview(spec=education_spec, n=250, seed=3)
    expected = sample_population(education_spec, 250, 3)
    pd.testing.assert_frame_equal(preview.personas, expected)
    pd.testing.assert_frame_equal(preview.counts, counts_table(expected, education_spec))
    assert preview.message == ""
    preview.n = 40
    assert len(preview.personas) == 40 and preview.counts["count"].sum() == 2 * 40


def test_no_spec_shows_the_problem_and_no_table() -> None:
    preview = PersonaPreview(problem="population spec: dimensions: required field is missing")
    assert preview.personas is None and preview.counts is None
    assert preview.message == "population spec: dimensions: required field is missing"
    view = preview.__panel__()
    view.get_root()
    assert not list(view.select(Tabulator))


def test_regenerate_changes_the_sample_deterministically(education_spec) -> None:
    editor = PopulationEditor(spec=education_spec, n=300, seed=5)
    preview = PersonaPreview.for_editor(editor)
    first = preview.personas
    preview.regenerate()
    assert preview.seed == 6 and editor.seed == 6  # the editor's seed moves with it
    assert not preview.personas["education"].equals(first["education"])
    pd.testing.assert_frame_equal(preview.personas, sample_population(education_spec, 300, 6))
    again = PersonaPreview(spec=education_spec, n=300, seed=5)
    again.regenerate()
    pd.testing.assert_frame_equal(again.personas, preview.personas)  # same seed, same sample
    editor.seed = 5  # and the editor's seed drives the preview again
    pd.testing.assert_frame_equal(preview.personas, first)


def test_a_million_agents_send_one_page_to_the_browser(education_spec) -> None:
    preview = PersonaPreview(spec=education_spec, n=1_000_000, seed=0, page_size=25)
    assert len(preview.personas) == 1_000_000
    view = preview.__panel__()
    root = view.get_root()
    tables = [t for t in view.select(Tabulator) if len(t.value) == 1_000_000]
    assert len(tables) == 1
    table = tables[0]
    assert table.pagination == "remote" and table.page_size == 25
    model = table._models[root.ref["id"]][0]
    sizes = {len(column) for column in model.source.data.values()}
    assert sizes == {25}  # the browser's data: one page, not the million rows
    assert model.page_size == 25


def test_persona_cards_show_the_first_agents(education_spec) -> None:
    preview = PersonaPreview(spec=education_spec, n=50, seed=1, n_cards=3)
    view = preview.__panel__()
    view.get_root()
    texts = [shown_text(p) for p in view.select(lambda o: type(o).__name__ == "Str")]
    assert texts[:3] == [" ".join(str(t).split()) for t in preview.personas["persona"].head(3)]


def test_a_failing_model_shows_its_error(education_spec) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    preview = PersonaPreview(
        spec=education_spec,
        n=10,
        n_backgrounds=2,
        model_spec=ModelSpec(kind="openai", base_urls=[url], name="nobody", max_retries=0),
    )
    asyncio.run(preview.write_backgrounds())
    assert preview.writer_failed and not preview.writing
    assert preview.writer_message.startswith("the model failed: ")
    assert url in preview.writer_message
    assert [b["source"] for b in preview.backgrounds] == ["template", "template"]
    assert all(b["error"] for b in preview.backgrounds)

    preview.model_spec, preview.model = None, "gpt-4"  # not a model the writer can reach
    asyncio.run(preview.write_backgrounds())
    assert preview.writer_failed
    assert preview.writer_message == "model: use 'embedded' or an http(s):// URL, got 'gpt-4'"
    said = "model name: name the model the server at http://127.0.0.1:1/v1 serves"
    with pytest.raises(ValueError, match=said):
        persona_model_spec("http://127.0.0.1:1/v1")


@pytest.mark.slow
def test_embedded_backgrounds_arrive_one_by_one_off_the_event_loop(education_spec) -> None:
    preview = PersonaPreview(spec=education_spec, n=20, seed=0, n_backgrounds=2, model="embedded")
    seen: list[int] = []
    preview.param.watch(lambda e: seen.append(len(e.new)), "backgrounds")

    async def write_and_tick() -> int:
        ticks = 0
        task = asyncio.ensure_future(preview.write_backgrounds())
        while not task.done():
            await asyncio.sleep(0.05)  # would stall for the whole write if the loop blocked
            ticks += 1
        await task
        return ticks

    start = time.monotonic()
    ticks = asyncio.run(write_and_tick())
    elapsed = time.monotonic() - start
    assert not preview.writer_failed, preview.writer_message
    assert [n for n in seen if n] == [1, 2]  # shown as each arrives
    assert ticks >= 0.5 * elapsed / 0.05  # the loop kept running while the model wrote
    assert {b["agent_id"] for b in preview.backgrounds} == {0, 1}
    assert sum(b["source"] == "llm" for b in preview.backgrounds) >= 1
    for item in preview.backgrounds:
        assert item["persona"].strip() and "<persona>" not in item["persona"]
    assert preview.writer_message.endswith("of 2 backgrounds from the model")
