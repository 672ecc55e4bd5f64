"""Panel components of the workbench: each a `pn.viewable.Viewer` with documented params,
shown inline in a notebook, as an ipywidget (`pn.ipywidget(...)`) or served by the dashboard.

`population_editor` edits a population spec (dimensions, shares, conditioning, N, seed, YAML),
`persona_preview` samples it (a paged table, counts against the shares, persona cards and
LLM-written backgrounds), `results_explorer` browses a results folder (plots by any persona
column, comparisons, provenance, tables, verify) with `results_data` its Panel-free reads,
`run_launcher` starts and follows runs and `cluster_monitor` shows Ray nodes, shard actors and
model endpoints (both read through `workbench.runs`, the Panel-free library of detached runs:
ui/ holds components only), `app` puts them together as tabs and `jupyter` is the IPython
extension (`%load_ext workbench`, `%%workbench_run`). The web server is its own room,
`ui.server`: `workbench dashboard` (its token, Host and Origin checks, the table downloads)
and the JupyterLab Launcher tile; it imports the components, which import neither it nor
Tornado. The names below load on first use (PEP 562), so importing the package does not
import Panel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_face

if TYPE_CHECKING:
    from workbench.ui.app import WorkbenchApp
    from workbench.ui.cluster_monitor import ClusterMonitor
    from workbench.ui.persona_preview import PersonaPreview, persona_model_spec
    from workbench.ui.population_editor import PopulationEditor
    from workbench.ui.results_explorer import ResultsExplorer
    from workbench.ui.run_launcher import RunLauncher

_HOMES: dict[str, str] = {
    "ClusterMonitor": "workbench.ui.cluster_monitor",
    "PersonaPreview": "workbench.ui.persona_preview",
    "persona_model_spec": "workbench.ui.persona_preview",
    "PopulationEditor": "workbench.ui.population_editor",
    "ResultsExplorer": "workbench.ui.results_explorer",
    "RunLauncher": "workbench.ui.run_launcher",
    "WorkbenchApp": "workbench.ui.app",
}

__all__ = [
    "ClusterMonitor",
    "PersonaPreview",
    "PopulationEditor",
    "ResultsExplorer",
    "RunLauncher",
    "WorkbenchApp",
    "persona_model_spec",
]


__getattr__, __dir__ = lazy_face(__name__, _HOMES, globals())
