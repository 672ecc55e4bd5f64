"""The owner's limits on runs launched from a page, as defaults (no imports: the CLI's options
show them without loading the launcher)."""

MAX_LIVE_LAUNCHES = 2
"""Default cap on launches running at once in one results folder (`launch(max_live=...)`,
`workbench dashboard --max-live-runs`)."""
MAX_AGENT_ROUNDS = 10_000_000
"""Default cap on n_agents x game.rounds of one launch (`launch(max_agent_rounds=...)`,
`workbench dashboard --max-agent-rounds`)."""
