"""What else than the instruction set could move a number, each pinned or ruled out here.

- Threads: llama.cpp's CPU flash attention splits a single query row's cells (512 and more,
  i.e. a context past 256 tokens) among the threads and merges their partial sums, so a decode
  of one token follows the thread count (shown below on the raw library). The engine decodes
  every single token on `ONE_ROW_THREADS` (`use_threads`); decodes of several tokens give each
  row to one thread whole, so their logits are the same at any count. OpenMP only runs that
  thread pool (no OpenMP reduction in ggml), so it is covered by the same tests.
- Repacking and llamafile's tinyBLAS: chosen when the library is compiled (`REPACK = 1` and
  `LLAMAFILE = 1` in `built_for`, the same on every machine of a build), and on x86 no weight
  of the shipped file's type is repacked (checked on the loader's own report below).
- The instruction set itself: the golden record (tests/test_golden.py).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from workbench.experiment import configure
from workbench.llm.embedded.engine import (
    ONE_ROW_THREADS,
    decode,
    last_logits,
    private_engine,
    shipped_model_path,
    use_threads,
)
from workbench.llm.llamacpp import LlamaCppModel
from workbench.runtime import Simulation

pytestmark = pytest.mark.slow  # loads the embedded model

THREADS = (1, 2, 4)


@pytest.fixture(scope="module")
def llm():
    """A private engine's llama.cpp context (2,048 cells, flash attention as the runs use)."""
    return private_engine(str(shipped_model_path()), 2048, 2).llm


@pytest.fixture(scope="module")
def long_prompt(llm) -> list[int]:
    """300 tokens: past 256 cells, where llama.cpp attends over 512 (its padding)."""
    text = " ".join(f"word{i}" for i in range(200)).encode()
    return llm.tokenize(text, add_bos=True, special=False)[:300]


def _logits_after(llm, prompt: list[int], tail: list[int], one_row: int, batch: int) -> np.ndarray:
    import llama_cpp

    llm.reset()
    llama_cpp.llama_set_n_threads(llm.ctx, one_row, batch)
    decode(llm, prompt, logits=False)
    decode(llm, tail, logits=True)
    return last_logits(llm).copy()


def test_llama_cpp_one_row_over_512_cells_follows_its_thread_count(llm, long_prompt) -> None:
    """The hazard the engine pins: the same token after the same 300, at 1, 2 and 4 threads.
    If a later llama.cpp merges the split-KV parts thread-invariantly this fails, and
    `ONE_ROW_THREADS` can follow the cores again."""
    rows = [_logits_after(llm, long_prompt, long_prompt[5:6], n, 2) for n in THREADS]
    assert not all(np.array_equal(rows[0], other) for other in rows[1:])


def test_the_engine_decodes_one_row_on_its_fixed_threads(llm, long_prompt) -> None:
    import llama_cpp

    seen = []
    for threads in THREADS:
        llm.reset()
        use_threads(llm.ctx, threads)
        decode(llm, long_prompt, logits=False)
        decode(llm, long_prompt[5:6], logits=True)
        seen.append(last_logits(llm).copy())
    assert all(np.array_equal(seen[0], other) for other in seen[1:])
    assert llama_cpp.llama_n_threads(llm.ctx) == ONE_ROW_THREADS


def test_several_rows_give_the_same_logits_at_any_thread_count(llm, long_prompt) -> None:
    rows = [_logits_after(llm, long_prompt, long_prompt[5:9], 1, n) for n in THREADS]
    assert all(np.array_equal(rows[0], other) for other in rows[1:])


def test_no_weight_of_the_shipped_file_is_repacked_or_on_amx() -> None:
    """The loader's own report of its weight buffers: plain CPU memory, no repacked copy."""
    script = (
        "from llama_cpp import Llama\n"
        f"Llama(model_path={str(shipped_model_path())!r}, n_ctx=256, verbose=True)\n"
    )
    report = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    ).stderr
    assert "model buffer size" in report  # the report is there to read
    assert "REPACK model buffer" not in report and "AMX" not in report.split("system_info")[0]


def test_a_runs_answers_are_the_same_at_1_2_and_4_threads(tmp_path) -> None:
    """Two quickstart rounds (the second's prompts pass 256 tokens) on engines of 1, 2 and 4
    threads: every answer identical."""
    config = configure("quickstart", {"name": "threads", "n_agents": 30, "game.rounds": 2})
    answers = []
    for threads in THREADS:
        model = LlamaCppModel(n_threads=threads).load()
        bundle = Simulation(config, model=model).run(out_dir=tmp_path / f"t{threads}",
                                                     progress=False)  # fmt: skip
        answers.append(bundle.responses()[["agent_id", "round", "guess", "status"]])
    assert answers[0]["guess"].nunique() > 2  # the model really answers, differently per agent
    for other in answers[1:]:
        pd.testing.assert_frame_equal(answers[0], other)
