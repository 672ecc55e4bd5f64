"""The embedded engine: llama.cpp in this process, running the shipped SmolLM2 GGUF by default.

`llamacpp` is the `ChatModel`; `node_slots` holds many answer-trie nodes on one context for
distribution mode's scorer (`llm.distribution.embedded`); `prefix_pieces` cuts prompts canonically,
`request_pool` orders the batches waiting for the engine, `cpu_share` picks its thread count,
`llamacpp_sampling` is its sampler chain for `sampling: server`, and `serve` puts it behind an
OpenAI-compatible server.
Nothing is imported here, so `import workbench.llm.embedded.cpu_share` stays light.
"""
