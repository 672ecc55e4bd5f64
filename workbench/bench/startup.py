"""Start-up cost: `workbench --help` against a bare `python -c "import typer"`, side by side.

Both run as fresh processes, alternating, so the machine's noise hits both alike; the best run
of each counts (the least disturbed one) and the ratio is printed with the medians.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_RATIO = 3.0
"""The issue's goal: the CLI's help within 3x of importing typer alone."""

HEAVY = ("pandas", "pyarrow", "ray", "llama_cpp", "numpy")
"""Modules `import workbench` and `workbench --help` must not load."""


def _time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def heavy_modules_loaded(code: str) -> list[str]:
    """Heavy modules a fresh interpreter has loaded after running `code`."""
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    return out.split()


def startup_bench(repeats: int = 7) -> str:
    """The timing table and the ratio of `workbench --help` to `import typer`."""
    script = Path(sys.executable).with_name("workbench")  # the installed console script
    cli = [str(script), "--help"] if script.is_file() else [sys.executable, "-m", "workbench.cli"]
    cli += [] if script.is_file() else ["--help"]
    bare = [sys.executable, "-c", "import typer"]
    _time(cli), _time(bare)  # warm the file cache for both
    times: dict[str, list[float]] = {"cli": [], "typer": []}
    for _ in range(max(1, repeats)):
        times["cli"].append(_time(cli))
        times["typer"].append(_time(bare))
    best = {k: min(v) for k, v in times.items()}
    median = {k: statistics.median(v) for k, v in times.items()}
    ratio = best["cli"] / best["typer"]
    loaded = heavy_modules_loaded("import workbench, workbench.config, workbench.cli")
    labels = {"typer": 'python -c "import typer"', "cli": "workbench --help"}
    lines = [f"{'command':<34} {'best s':>8} {'median s':>9}"]
    lines += [f"{labels[k]:<34} {best[k]:>8.3f} {median[k]:>9.3f}" for k in ("typer", "cli")]
    lines += [
        f"ratio workbench --help / import typer  {ratio:.2f}x   (target <= {TARGET_RATIO:g}x, "
        f"best of {repeats} alternating runs)",
        "heavy modules after `import workbench, workbench.config, workbench.cli`: "
        + (", ".join(loaded) if loaded else "none"),
    ]
    return "\n".join(lines)
