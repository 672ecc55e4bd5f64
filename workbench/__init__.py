"""Agent Simulation Workbench: very large LLM multi-agent "guess p of the average" simulations.

import workbench as wb
sim = wb.Simulation(wb.load_run_config("workbench/examples/quickstart.yaml"))
bundle = sim.run()            # plays every round, returns the finished result bundle
bundle.rounds()               # one row per round: mean, target, winners, seconds
"""

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
from workbench.errors import BundleError, ConfigError, ModelError, WorkbenchError
from workbench.population import counts_table, sample_population
from workbench.results import Bundle, list_bundles, verify_bundle
from workbench.runtime import Simulation, run

__version__ = "0.1.0"

__all__ = [
    "BackendSpec",
    "Bundle",
    "BundleError",
    "ConfigError",
    "GameSpec",
    "ModelError",
    "ModelSpec",
    "PopulationSpec",
    "PromptSpec",
    "RunConfig",
    "Simulation",
    "WorkbenchError",
    "__version__",
    "counts_table",
    "list_bundles",
    "load_population_spec",
    "load_run_config",
    "run",
    "sample_population",
    "save_yaml",
    "verify_bundle",
]
