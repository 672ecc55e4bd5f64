"""The docs site's own Sphinx extension: pages generated from the code at build time.

Each generator writes a MyST page under `docs/reference/generated/` (not in git) before Sphinx
reads the sources, and rewrites it only when its text changed. A gap in the code that a page
would hide (a config field without a description, an environment variable the code reads that
no one described) is a Sphinx warning, so `.ci/docs` (warnings as errors) fails on it.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from workbench_docs import (
    api_reference,
    bundle_reference,
    cli_reference,
    config_reference,
    distribution_reference,
    env_reference,
    errors_reference,
    module_reference,
    notebooks,
)

LOG = logging.getLogger("workbench_docs")

GENERATORS = {
    "config.md": config_reference.page,
    "cli.md": cli_reference.page,
    "environment.md": env_reference.page,
    "bundle-format.md": bundle_reference.page,
    "parts/bundle-layout.md": bundle_reference.layout_table,
    "errors.md": errors_reference.page,
    "api-face.md": api_reference.page,
    "parts/api-distribution.md": distribution_reference.page,
    "parts/floors.md": module_reference.floors_diagram,
    "parts/modules.md": module_reference.page,
}
"""Generated page -> the function that writes its text (given a warning callback). Those under
`parts/` (which Sphinx does not read as pages: `exclude_patterns`) are parts of other pages, put
in with `{include}`: `bundle-layout.md` by the bundles design page and the bundle format,
`api-distribution.md` by the `workbench.llm` API page, `floors.md` and `modules.md` by the
architecture page."""


def write_if_changed(path: Path, text: str) -> None:
    """Write `text` to `path` unless it already holds it (keeps incremental builds incremental)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def generate(app: Sphinx) -> None:
    """Write every generated page, execute the notebooks that have no executed copy with their
    cells, and copy the notebooks in, before the sources are read."""
    srcdir = Path(app.srcdir)
    out = srcdir / "reference" / "generated"
    for name, make in GENERATORS.items():
        write_if_changed(
            out / name,
            make(
                lambda message, name=name: LOG.warning(
                    "%s: %s", name, message, type="workbench_docs"
                )
            ),
        )
    root = srcdir.parent
    stored, executed = root / "notebooks", root / notebooks.EXECUTED
    if app.config.workbench_execute_notebooks:
        notebooks.execute_missing(
            sorted(stored.glob("*.ipynb")), executed, LOG.info,
            lambda message: LOG.warning("tutorials: %s", message, type="workbench_docs"),
        )  # fmt: skip
    tutorials = srcdir / "tutorials" / "notebooks"
    rendered = notebooks.copy_notebooks(stored, tutorials, executed)
    bare = sorted(name for name, outputs in rendered.items() if not outputs)
    LOG.info("tutorials without outputs: %s", ", ".join(bare) or "none")


def setup(app: Sphinx) -> dict[str, object]:
    # `-D workbench_execute_notebooks=0`: render notebooks with no executed copy as stored
    app.add_config_value("workbench_execute_notebooks", True, "env", bool)
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
