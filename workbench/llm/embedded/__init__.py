"""The embedded engine's pieces: llama.cpp in this process, running the shipped SmolLM2 GGUF by
default, below the two that use them, the model (`llm.llamacpp`) and distribution mode's scorer
(`llm.distribution.embedded_scorer`).

`engine` loads the engine and holds the steps on its context; `node_slots` holds many
answer-trie nodes on one context for the scorer; `prefix_pieces` cuts prompts canonically,
`request_pool` orders the batches waiting for the engine, `cpu_share` picks its thread count,
`build` says which llama.cpp build answers, `llamacpp_sampling` is its sampler chain for
`sampling: server`, and `serve` puts it behind an OpenAI-compatible server.
Nothing is imported here, so `import workbench.llm.embedded.cpu_share` stays light.
"""
