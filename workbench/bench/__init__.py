"""Benchmarks that print ratios against a baseline measured in the same run (never timed tests)."""

from pathlib import Path

DEFAULT_SPEC = Path(__file__).resolve().parents[2] / "personas" / "paper-education.yaml"
"""The population the benchmarks sample (the paper's education population, in this checkout)."""
