"""Agent Simulation Workbench: very large LLM multi-agent "guess p of the average" simulations.

import workbench as wb
sim = wb.Simulation(wb.load_run_config("workbench/examples/quickstart.yaml"))
bundle = sim.run()            # plays every round, returns the finished result bundle
bundle.rounds()               # one row per round: mean, target, winners, seconds
exp = wb.sweep(sim.config, {"grid": {"seed": [1, 2]}}, "results/seeds")  # a bundle per cell
exp.index()                   # one row per cell: its overrides, bundle, status, last round

The package face is lazy (PEP 562): `import workbench` loads no pandas, pyarrow, Ray or
llama.cpp; each name is imported from its module the first time it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_face

_EXPORTS: dict[str, str] = {
    "__version__": "workbench._version",
    "BackendSpec": "workbench.config",
    "GameSpec": "workbench.config",
    "ModelSpec": "workbench.config",
    "PopulationSpec": "workbench.config",
    "PromptSpec": "workbench.config",
    "RunConfig": "workbench.config",
    "load_population_spec": "workbench.config",
    "load_run_config": "workbench.config",
    "save_yaml": "workbench.config",
    "BundleError": "workbench.errors",
    "ConfigError": "workbench.errors",
    "ModelError": "workbench.errors",
    "RoundFailedError": "workbench.errors",
    "WorkbenchError": "workbench.errors",
    "counts_table": "workbench.population",
    "sample_population": "workbench.population",
    "generate_personas": "workbench.agents.persona_writer",
    "Bundle": "workbench.results",
    "latest_bundle": "workbench.results",
    "list_bundles": "workbench.results",
    "verify_bundle": "workbench.results",
    "export_tidy": "workbench.results.export",
    "Simulation": "workbench.runtime",
    "run": "workbench.runtime",
    "follow": "workbench.runs",
    "run_state": "workbench.runs",
    "Experiment": "workbench.experiment",
    "sweep": "workbench.experiment",
    "configure": "workbench.experiment",
    "model_overrides": "workbench.experiment",
    "reproduce": "workbench.experiment",
    "results_dir": "workbench._files",
    "notebook_setup": "workbench.ui.jupyter",
    # IPython: `%load_ext workbench` (not in __all__)
    "load_ipython_extension": "workbench.ui.jupyter",
    "unload_ipython_extension": "workbench.ui.jupyter",
}
"""Public name -> the module that defines it."""

__all__ = [
    "BackendSpec",
    "Bundle",
    "BundleError",
    "ConfigError",
    "Experiment",
    "GameSpec",
    "ModelError",
    "ModelSpec",
    "PopulationSpec",
    "PromptSpec",
    "RoundFailedError",
    "RunConfig",
    "Simulation",
    "WorkbenchError",
    "__version__",
    "configure",
    "counts_table",
    "export_tidy",
    "follow",
    "generate_personas",
    "latest_bundle",
    "list_bundles",
    "load_population_spec",
    "load_run_config",
    "model_overrides",
    "notebook_setup",
    "reproduce",
    "results_dir",
    "run",
    "run_state",
    "sample_population",
    "save_yaml",
    "sweep",
    "verify_bundle",
]


__getattr__, __dir__ = lazy_face(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from workbench._files import results_dir
    from workbench.agents.persona_writer import generate_personas
    from workbench.config import (
        BackendSpec,
        GameSpec,
        ModelSpec,
        PopulationSpec,
        PromptSpec,
        RunConfig,
        load_population_spec,
        load_run_config,
        save_yaml,
    )
    from workbench.errors import (
        BundleError,
        ConfigError,
        ModelError,
        RoundFailedError,
        WorkbenchError,
    )
    from workbench.experiment import Experiment, configure, model_overrides, reproduce, sweep
    from workbench.population import counts_table, sample_population
    from workbench.results import Bundle, latest_bundle, list_bundles, verify_bundle
    from workbench.results.export import export_tidy
    from workbench.runs import follow, run_state
    from workbench.runtime import Simulation, run
    from workbench.ui.jupyter import notebook_setup
