"""What `bundles reproduce` reads from two manifests: the causes it names, the build's label,
and the answers' digest the golden record keeps."""

from __future__ import annotations

from workbench.results.reproduction import answer_causes, build_label, build_reach

PORTABLE = {
    "engine": "llama.cpp",
    "engine_version": "0.3.36",
    "file_sha256": "a" * 64,
    "build": {
        "build": "portable",
        "baseline": "x86-64-v3",
        "built_for": "CPU : AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | LLAMAFILE = 1",
    },
}
SERVED = {
    "engine": "openai-compatible",
    "name": "smollm2",
    "seed": "per_request",
    "servers": {"http://127.0.0.1:8001/v1": {"kind": "vllm", "version": "0.32.0"}},
    "sampling": {"mode": "workbench", "batch_invariant": "yes"},
}


def test_the_same_record_names_no_cause() -> None:
    assert answer_causes(PORTABLE, dict(PORTABLE), "local", "local") == []
    moved = {**SERVED, "servers": {"http://127.0.0.1:9999/v1": {"kind": "vllm",
                                                               "version": "0.32.0"}}}  # fmt: skip
    assert answer_causes(SERVED, moved, "local", "local") == []  # another port is no cause


def test_each_thing_that_moves_answers_is_named() -> None:
    other_file = {**PORTABLE, "file_sha256": "b" * 64, "engine_version": "0.3.37"}
    causes = answer_causes(PORTABLE, other_file, "local", "ray")
    assert causes[0].startswith("model file sha256: aaaa")
    assert "engine version: 0.3.36 -> 0.3.37" in causes
    assert "backend: local -> ray" in causes
    flags = {**PORTABLE, "build": {**PORTABLE["build"], "cmake_args": ["-DGGML_LLAMAFILE=OFF"]}}
    assert any(c.startswith("llama.cpp build flags:") for c in answer_causes(PORTABLE, flags))


def test_a_served_models_server_version_and_invariance_are_named() -> None:
    newer = {
        **SERVED,
        "servers": {"http://127.0.0.1:8001/v1": {"kind": "vllm", "version": "0.33.0"}},
        "sampling": {"mode": "workbench", "batch_invariant": "no"},
    }
    causes = answer_causes(SERVED, newer)
    assert any("0.32.0" in c and "0.33.0" in c for c in causes if c.startswith("server:"))
    assert "the server now promised no batch invariance" in causes


def test_build_labels_say_where_answers_hold() -> None:
    assert build_label(PORTABLE) == "portable (x86-64-v3)"
    assert "any machine of that baseline" in build_reach(PORTABLE)
    old = {"engine": "llama.cpp", "built_for": "CPU : AVX2 = 1 | AVX512 = 1 | FMA = 1"}
    assert build_label(old) == "native, made before builds were recorded (AVX2, AVX512)"
    assert "only on a CPU with these features" in build_reach(old)
    assert build_label(SERVED) == "" and build_reach(SERVED) == ""
