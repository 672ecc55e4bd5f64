"""Sphinx configuration of the workbench's docs site (`.ci/docs` builds it, warnings as errors).

Sphinx with the PyData theme and MyST, as HoloViz and Jupyter do. The reference pages under
`reference/` are generated at build time from the code (`_ext/`): the config reference from the
pydantic specs, the CLI from its own help, the environment variables from the code that reads
them, the bundle format from `workbench/results/layout.py`. The notebooks are rendered with
their outputs from `build/executed-notebooks/`: the test suite's run of them (written by
notebooks/conftest.py), or, where there is none with their cells, the build's own run of them
(`-D workbench_execute_notebooks=0` renders those as stored instead).
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "Agent Simulation Workbench"
author = "the workbench's authors"
copyright = "2026, the workbench's authors"  # noqa: A001 (Sphinx's name)

extensions = [
    "myst_nb",  # MyST pages and .ipynb notebooks (myst_parser comes with it)
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
    "workbench_docs",  # the generated reference pages and the tutorials' notebooks
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}
# reference/generated/parts: generated parts of pages, read only through their `{include}`
exclude_patterns = [
    "_build",
    "_ext",
    "Thumbs.db",
    ".DS_Store",
    "README.md",
    "reference/generated/parts",
]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
# no smart quotes: docutils would print `--estimate` outside code as an en dash and quotes as
# curly ones, which a reader cannot paste into a shell
smartquotes = False

# notebooks: myst-nb never executes them; the extension (_ext/workbench_docs/notebooks.py)
# copies in each one's executed copy, running the notebook first when it has none
nb_execution_mode = "off"
nb_merge_streams = True
# HoloViews' and Panel's own output types (vnd.holoviews_load/exec) need their JupyterLab
# extension: myst-nb renders the same output's HTML and JavaScript instead, and would warn once
# per such output that it skipped the type
suppress_warnings = ["mystnb.unknown_mime_type"]

# docstrings are written with `code` in single backticks
default_role = "code"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_preserve_defaults = True

html_theme = "pydata_sphinx_theme"
html_title = "Agent Simulation Workbench"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": [],
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": []}
html_show_sourcelink = False
