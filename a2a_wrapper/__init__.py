"""a2a-wrapper: coding agents (OpenCode, Copilot, Claude Code, Gemini CLI, any ACP agent) as A2A agents."""

__version__ = "0.1.0"
