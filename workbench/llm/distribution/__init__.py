"""Distribution mode's home: every agent's constrained answer an exact draw from its own
prompt's distribution, at the cost of what is distinct.

Below, what every model shares, importing no model, engine or server (import-linter checks it):
`vocabulary` (the tokens an integer answer is made of), `sampler` (the versioned sampler that
follows the one sampling law, `config.sampling`), `scorer` (the `NodeScorer` contract: a
model's vocabulary, prompt tokens and node logits, and how its walks are scheduled, by one of
two bases: `TurnTakingScorer` for an engine, `ConcurrentScorer` for a server), `walk` (one
group's answer trie and the one driver, `draw_answers`) and `whole_walk` (a prompt's whole
answer distribution, every node the law gives mass to).

Above, one scorer per kind of model: `embedded_scorer` (llama.cpp in this process),
`served_scorer` (vLLM behind HTTP, or `vllm.LLM` in this process through the same scorer),
`cached_scorer` (node logits from the response cache), and `probe` (a server's start-up check:
is the path exact, are its probabilities batch invariant). Nothing is imported here, so
importing one module stays light.
"""
