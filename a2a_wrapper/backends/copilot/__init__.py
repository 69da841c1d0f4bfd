"""GitHub Copilot CLI as a backend, through github-copilot-sdk: the pinned CLI always passed by path, its HOME
and COPILOT_HOME under the agent's state, permission requests and the pre-tool hook through the shield. backend
(lifecycle, sessions), turn, launch (env, provider, session config), translate (events), sdk (the SDK's edges)."""
