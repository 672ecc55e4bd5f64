"""ui/ holds components only: process management lives in workbench.runs. The import-linter
contract (run by tests/test_layers.py) forbids `subprocess` and `signal` in workbench.ui; this
test checks the contract is there and that no ui module signals or inspects processes by hand."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_contract_forbids_process_modules_in_ui() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = data["tool"]["importlinter"]["contracts"]
    (ui,) = [c for c in contracts if c.get("source_modules") == ["workbench.ui"]]
    assert ui["type"] == "forbidden"
    assert {"subprocess", "signal", "workbench._processes"} <= set(ui["forbidden_modules"])
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    assert layers.index("runs") == layers.index("experiment | bench") + 1
    assert layers.index("runs") < layers.index("runtime")


def test_no_ui_module_signals_or_reads_processes() -> None:
    pattern = re.compile(r"os\.kill|killpg|pidfd|psutil|/proc/|Popen|os\.fork|os\.exec")
    found = {
        path.name: pattern.findall(path.read_text(encoding="utf-8"))
        for path in (ROOT / "workbench" / "ui").rglob("*.py")
    }
    assert {name: hits for name, hits in found.items() if hits} == {}
    gone = ("launches.py", "processes.py", "cluster_data.py")
    assert not any((ROOT / "workbench" / "ui" / name).exists() for name in gone)
