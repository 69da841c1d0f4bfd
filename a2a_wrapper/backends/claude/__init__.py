"""Claude Code as a backend: the ACP backend driving `claude-agent-acp`, with the wrapper's PreToolUse hook (every
tool call, before it runs, decided by the shield) and a settings file of the wrapper's. backend (lifecycle), launch
(command, env, settings.json), turn (hook calls on the turn's stream), tools (a hook call as the shield reads it)."""
