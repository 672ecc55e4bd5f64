"""Hostile texts planted where the dashboard reads: folder names, a manifest's run id, error,
name and model, population category and dimension names, a spec file. Each would set
`window.__pwned` if it reached the page as markup; each must show as the text it is.

`plant_results(root)` writes a real results folder (a level-k run played by `Simulation`, whose
population has hostile categories) and plants next to it: the same bundle in a folder named
like an `<img onerror>` tag, with a hostile run id, error, config name and model and a persona
column named like a tag, marked failed; a folder named like an `<svg onload>` tag with a
damaged manifest; and `SPEC_FILE`, a population spec whose dimension name is a tag (invalid:
the editor shows its message).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from run_configs import run_config

from workbench.runtime import Simulation

FOLDER = "<img src=x onerror=window.__pwned=1>"
RUN_ID = "<img src=x onerror=window.__pwned=2>"
ERROR = "<script>window.__pwned=3</script> [click](javascript:window.__pwned=4)"
NAME = "<img src=x onerror=window.__pwned=5>"
MODEL = "<svg onload=window.__pwned=6>"
DAMAGED = "<svg onload=window.__pwned=7>"
CATEGORY = "<img src=x onerror=window.__pwned=8>"
LINK_CATEGORY = "[c](javascript:window.__pwned=9)"
DIMENSION = "<img src=x onerror=window.__pwned=10>"
PERSONA_COLUMN = "<img src=x onerror=window.__pwned=11>"
SPEC_FILE = "hostile-spec.yaml"

ALL = (FOLDER, RUN_ID, ERROR, NAME, MODEL, DAMAGED, CATEGORY, LINK_CATEGORY, DIMENSION)
"""Every hostile text (each sets a different `window.__pwned` value if it ever runs)."""


def population() -> dict:
    """A valid population spec with hostile categories (category names are free text)."""
    return {
        "name": "hostile",
        "dimensions": [
            {"name": "origin", "shares": {CATEGORY: 0.5, LINK_CATEGORY: 0.5}},
            {
                "name": "group",
                "given": "origin",
                "shares": {CATEGORY: {"a": 0.5, "b": 0.5}, LINK_CATEGORY: {"a": 1.0}},
            },
        ],
    }


def plant_results(root: Path) -> dict[str, Path]:
    """A results folder holding a real bundle and the hostile ones (see the module); returns
    {"plain": ..., "hostile": ..., "damaged": ...} paths."""
    root.mkdir(parents=True, exist_ok=True)
    config = run_config(population(), name="plain", seed=3, n_agents=12, policy={"kind": "level_k"})
    plain = Simulation(config).run(out_dir=root, progress=False).path
    hostile = root / FOLDER
    shutil.copytree(plain, hostile)
    manifest = json.loads((hostile / "manifest.json").read_text())
    manifest.update(run_id=RUN_ID, status="failed", error=ERROR)
    manifest["config"]["name"] = NAME
    manifest["model"] = {"engine": MODEL, "name": MODEL}
    manifest["created_at"] = "2099-01-01T00:00:00+00:00"  # the newest: the one shown first
    (hostile / "manifest.json").write_text(json.dumps(manifest))
    personas = hostile / "personas.parquet"  # a column named like a tag: a table's title
    table = pq.read_table(personas)
    pq.write_table(table.append_column(PERSONA_COLUMN, pa.array(["x"] * table.num_rows)), personas)
    damaged = root / DAMAGED
    damaged.mkdir()
    (damaged / "manifest.json").write_text("{" + DAMAGED)
    (root / SPEC_FILE).write_text(
        yaml.safe_dump(
            {
                "name": "hostile spec",
                "dimensions": [{"name": DIMENSION, "shares": {CATEGORY: 1.0}}],
            }
        )
    )
    return {"plain": plain, "hostile": hostile, "damaged": damaged}
