"""Agent Simulation Workbench: very large LLM multi-agent "guess p of the average" simulations."""

__version__ = "0.1.0"
