"""What an agent keeps across restarts: the context → session map, context rules, the audit log, the A2A task
store and recovery of tasks a crash left open. One SQLite file per agent by default."""
