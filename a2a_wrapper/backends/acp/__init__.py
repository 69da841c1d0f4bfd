"""Any Agent Client Protocol agent over stdio as a backend (`copilot --acp`, `opencode acp`, ...): backend
(lifecycle, sessions), turn, launch (argv, env, MCP servers), translate (session updates), connection (the agent
process and its JSON-RPC) and client (what the agent may call back: permission requests)."""
